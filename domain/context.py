"""Per-call context: who calls, through which binding, and the workspace rules every tool shares.

Workspace visibility (seed 002; issue "Foundation" part 5):
* a membership row ``WS#<ws> / MEMBER#<user>`` is what makes a workspace visible;
* a workspace-pinned token sees only its pin — any other workspace is NOT_FOUND, exactly
  like a missing one, and ids of entities elsewhere are NOT_FOUND too;
* ``workspaceId: ""`` means the pinned (or connection-bound) workspace;
* a bound stdio connection refuses an explicit other ``workspaceId`` with FORBIDDEN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pynamodb.exceptions import DoesNotExist

from domain import errors
from domain.auth import ROLE_RANK, Principal
from domain.errors import ErrorCode, ToolError
from domain.ratelimit import Window
from domain.store.models import MemberRow


@dataclass(frozen=True)
class Binding:
    """A connection's fixed binding (stdio adapter): workspace, checkout, lifetime id, observe flag."""

    workspace_id: str | None
    lifetime_id: str
    checkout: str | None = None
    repository: str | None = None
    observe: bool = False
    observe_reason: str = ""
    client_info: dict[str, Any] | None = None


@dataclass
class CallContext:
    principal: Principal
    correlation_id: str
    tool: str
    binding: Binding | None = None
    source: str = "mcp"
    window: Window | None = None
    idempotency_key: str | None = None
    args_hash: str | None = None
    _members: dict[str, MemberRow] = field(default_factory=dict)

    # -- workspace resolution -------------------------------------------------------------
    def default_workspace(self) -> str | None:
        if self.binding and self.binding.workspace_id:
            return self.binding.workspace_id
        return self.principal.workspace_pin

    def workspace_argument(self, value: str, field_name: str = "workspaceId") -> str:
        """Resolve a ``workspaceId`` argument ("" = the bound/pinned workspace)."""
        if value == "":
            ws = self.default_workspace()
            if not ws:
                raise errors.invalid(
                    field_name,
                    "empty, but this credential is not bound to a workspace",
                    "Pass a workspace id from list_workspaces, or use a workspace-pinned token.",
                )
            return ws
        if self.binding and self.binding.workspace_id and value != self.binding.workspace_id:
            raise errors.forbidden(
                f"This connection is bound to workspace {self.binding.workspace_id}; it cannot act on {value}.",
                f"Pass workspaceId \"\" or {self.binding.workspace_id!r}; start another adapter with --workspace to use a different one.",
            )
        return value

    def visible(self, workspace_id: str) -> bool:
        pin = self.default_workspace() if self.binding else self.principal.workspace_pin
        return pin is None or pin == workspace_id

    def member(self, workspace_id: str, kind: str = "workspace", ident: str | None = None) -> MemberRow:
        """The caller's membership in ``workspace_id`` (one consistent GetItem, cached per call).

        Raises:
            ToolError: NOT_FOUND naming ``kind``/``ident`` when the workspace is invisible.
        """
        if not self.visible(workspace_id):
            raise errors.not_found(kind, ident or workspace_id)
        row = self._members.get(workspace_id)
        if row is None:
            try:
                row = MemberRow.get(f"WS#{workspace_id}", f"MEMBER#{self.principal.user_id}", consistent_read=True)
            except DoesNotExist:
                raise errors.not_found(kind, ident or workspace_id) from None
            self._members[workspace_id] = row
        return row

    def require_role(self, workspace_id: str, minimum: str, kind: str = "workspace", ident: str | None = None) -> MemberRow:
        row = self.member(workspace_id, kind, ident)
        if ROLE_RANK[row.role] < ROLE_RANK[minimum]:
            raise ToolError(
                ErrorCode.FORBIDDEN,
                f"{self.tool} needs the {minimum} role in this workspace; you are {row.role}.",
                "Ask a workspace owner or admin to run it, or to change your role.",
            )
        return row

    def ensure_writable(self) -> None:
        if self.binding and self.binding.observe:
            raise errors.forbidden(
                f"This connection is an observe session ({self.binding.observe_reason}); {self.tool} writes and is refused.",
                "Restart the adapter with --workspace ws_… (or --checkout DIR), or give the client exactly one git checkout root.",
            )
