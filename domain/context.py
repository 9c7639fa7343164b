"""Per-call context: who calls, through which binding, and the workspace rules every tool shares.

Workspace visibility (catalog: shared contract, bearer auth + scopes; docs/decisions.md):
* a member item (:func:`domain.store.keys.member`) is what makes a workspace visible;
* a workspace-pinned token sees only its pin — any other workspace is NOT_FOUND, exactly
  like a missing one, and ids of entities elsewhere are NOT_FOUND too;
* ``workspaceId: ""`` means the pinned (or connection-bound) workspace; for an unpinned token
  with no connection binding (HTTP) it means the user's only workspace, and is INVALID_INPUT
  listing them when there are several (:meth:`CallContext.only_workspace`);
* a bound connection (a stdio connection, in process or through the bridge's ``X-MCP-Binding``
  header) refuses an explicit other ``workspaceId`` with FORBIDDEN and sees nothing outside
  its workspace.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from domain import clock, errors
from domain.auth import Principal
from domain.errors import ErrorCode, ToolError
from domain.located import ItemAccess, Located
from domain.ratelimit import Admission, Window
from domain.store import activity as activity_store
from domain.store import governance as governance_store
from domain.store import members as member_store
from domain.store.governance import Extra
from domain.store.governance import Request as GovernanceRequest
from domain.store.models import ActivityRow, ApprovalRow, CreationMarkerRow, MemberRow
from domain.store.reads import Key, Reads

LISTED_WORKSPACES = 20  # ids an INVALID_INPUT for an ambiguous ``workspaceId: ""`` names at most

# While the pipeline parses a call's arguments, the set that Redact-typed fields (domain.tools.args)
# add the rule ids of the secrets they took out to. A context variable rather than pydantic's
# validation context: models with their own __init__ (domain.registry) do not pass that one on.
REDACTING: ContextVar[set[str] | None] = ContextVar("redacting", default=None)
REDACTIONS = "redactions"  # the answer field naming them


@dataclass(frozen=True)
class Binding:
    """A connection's fixed binding (stdio adapter): workspace, checkout, lifetime id, observe flag.

    In process it rides on the stdio session; through the bridge it reaches the remote server
    with every request as the ``X-MCP-Binding`` header (:mod:`functions.protocol`), so the same
    rules apply there. ``checkout`` (a local path) is not sent; ``repository`` is.
    """

    workspace_id: str | None
    lifetime_id: str
    checkout: str | None = None
    repository: str | None = None
    observe: bool = False
    observe_reason: str = ""
    client_info: dict[str, Any] | None = None


Selection = tuple[tuple[str, ...], bool]  # a connection's (toolsets, read-only), domain.toolsets


@dataclass
class CallState:
    """What the pipeline owns for one call: everything the steps of :mod:`domain.pipeline` write
    while the call runs. Only the pipeline, the access step (:mod:`domain.access`) and the
    governance gate (:mod:`domain.governance`) reach it, as ``ctx.call_state``; a handler reads
    the parts it may use through :class:`CallContext`'s read-only properties
    (tests/test_layering.py keeps tool modules off this object).
    """

    # set by the pipeline
    selection: Selection | None = None  # passed in by the transport when the connection chose any
    rate: Admission | None = None  # the call's place in the rate window (its add, if any, runs while the call reads)
    window: Window | None = None  # the settled rate window (settle_rate)
    idempotency_key: str | None = None  # a keyed call's key
    args_hash: str | None = None  # sha256 of its canonical arguments (hex)
    marker: CreationMarkerRow | None = None  # a keyed create's marker, for a spec declaring replay
    expected_updated_at: str | None = None  # the spec's cas argument (e.g. expectedUpdatedAt)
    redactions: set[str] = field(default_factory=set)  # rule ids of secrets taken out of the arguments
    # set by the access step
    target: Located | None = None  # the located target, for a spec with one
    targets: list[ItemAccess] | None = None  # one entry per item, for a list target
    read: Reads = field(default_factory=Reads)  # the spec's named read plans (domain.store.reads)
    prefetched: dict[Key, Any] = field(default_factory=dict)  # items read with the membership, by key
    queries: dict[str, Future[Any]] = field(default_factory=dict)  # prefetch queries under way, by name
    members: dict[str, MemberRow] = field(default_factory=dict)  # the caller's member item per workspace
    absent_members: set[str] = field(default_factory=set)  # workspaces a read showed the caller is not in
    # set by the governance gate
    governance_request: GovernanceRequest | None = None  # a governed call as an approval binds it
    approval: ApprovalRow | None = None  # the APPROVED approval letting this agent's call through once

    def settle_rate(self) -> None:
        """Settle the call's rate-window admission (domain/ratelimit.py); RATE_LIMITED when refused.

        A call the limiter already knew to be over is refused by the pipeline before it sends
        any request; otherwise this waits for the add riding on the call (exact mode may still
        refuse here). Called before anything is written or answered, so a refused call never acts.
        """
        if self.rate is None:
            return
        admission, self.rate = self.rate, None
        window = admission.result()
        self.window = window
        if admission.over():
            raise ToolError(
                ErrorCode.RATE_LIMITED,
                f"This token made more than {window.limit} calls in the current minute.",
                "Wait for the window to reset, then retry.",
                retry_after_seconds=window.retry_after_seconds(clock.now_ms()),
            )


@dataclass(frozen=True, eq=False)
class CallContext:
    """What a handler may read about its call: who calls (``principal``), the correlation id, the
    tool, the connection's ``binding``, and, through read-only properties, what the pipeline
    found for it (``target``, ``read``, ``marker``, ``approval``, ...). The context itself is
    frozen: no handler assigns to it. Everything the pipeline writes while the call runs lives
    in ``call_state`` (:class:`CallState`), which tool modules never touch.
    """

    principal: Principal
    correlation_id: str
    tool: str
    binding: Binding | None = None
    call_state: CallState = field(default_factory=CallState)

    @property
    def source(self) -> str:
        """Where a write is recorded as coming from: a human's credential is the UI, an agent's MCP."""
        return "ui" if self.principal.human else "mcp"

    # -- what the pipeline found, read-only ---------------------------------------------------
    @property
    def target(self) -> Located:
        """The located target (:class:`~domain.located.Located`), for a spec that declares one
        (the access step sets it before the handler runs). Its parts beyond the workspace are
        optional because one type serves every kind; :meth:`Located.board` and its siblings
        hand out the part the spec's kind always sets.

        Raises:
            LookupError: when the spec declares no target (a programming error, never a caller's).
        """
        where = self.call_state.target
        if where is None:
            raise LookupError(f"{self.tool} declares no target; ctx.target is not set")
        return where

    @property
    def targets(self) -> list[ItemAccess]:
        """The list target's outcome, one :class:`~domain.located.ItemAccess` per item (admitted
        ``where`` or its ``error``), in the order the caller sent them.

        Raises:
            LookupError: when the spec declares no list target (a programming error).
        """
        entries = self.call_state.targets
        if entries is None:
            raise LookupError(f"{self.tool} declares no list target; ctx.targets is not set")
        return entries

    @property
    def read(self) -> Reads:
        """The spec's named read plans' results (``ctx.read.task``: typed, ``None`` when absent)."""
        return self.call_state.read

    @property
    def selection(self) -> Selection | None:
        """The connection's (toolsets, read-only) when it chose any (get_token_context reports it)."""
        return self.call_state.selection

    @property
    def window(self) -> Window | None:
        """The rate window as settled for this call (``None`` before the pipeline settles it)."""
        return self.call_state.window

    @property
    def idempotency_key(self) -> str | None:
        """The call's ``idempotencyKey`` when its tool is keyed and the caller sent one."""
        return self.call_state.idempotency_key

    @property
    def args_hash(self) -> str | None:
        """A keyed call's canonical-arguments digest (sha256, hex): same key, same meaning."""
        return self.call_state.args_hash

    @property
    def marker(self) -> CreationMarkerRow | None:
        """A replay-declaring keyed create's creation marker, for the handler's transaction."""
        return self.call_state.marker

    @property
    def approval(self) -> ApprovalRow | None:
        """The APPROVED request that lets this governed call through once (``approval_write``
        spends it), or ``None``."""
        return self.call_state.approval

    def approval_write(self) -> tuple[Extra | None, Key | None]:
        """``(extra, key)`` for a governed change's transaction: the action consuming the approval
        that let this call through (or ``None``), and that approval's key."""
        approval = self.call_state.approval
        if approval is None:
            return None, None
        return governance_store.consume(approval), (approval.PK, approval.SK)

    def still_current(
        self,
        kind: str,
        updated_at: str,
        current: Callable[[], dict[str, Any]],
        *,
        hint: str = "Merge your edit into error.current and call again with its updatedAt.",
    ) -> None:
        """The stale check of a spec declaring ``cas`` (one implementation for every such tool):
        CONFLICT when the caller sent an expected ``updatedAt`` and the entity's differs, with the
        entity as it is now (``current()``, its view) in ``error.current`` and ``hint`` (the tool's
        own next step). Called inside the compare-and-set plan, so it judges the row the write is
        conditioned on."""
        expected = self.call_state.expected_updated_at
        if expected is not None and updated_at != expected:
            raise errors.conflict(
                f"The {kind} changed since you read it (your expectedUpdatedAt {expected}, now {updated_at}).",
                hint,
                current=current(),
            )

    def query(self, name: str, fallback: Callable[[], Any] | None = None) -> Any:
        """The result of a prefetch query started by the access step, or ``fallback()``."""
        future = self.call_state.queries.pop(name, None)
        if future is not None:
            return future.result()
        return fallback() if fallback is not None else None

    def item(self, key: Key) -> Any:
        """An item the access step read together with the membership (``None`` when absent)."""
        return self.call_state.prefetched.get(key)

    @property
    def user_id(self) -> str:
        return self.principal.user_id

    def activity(
        self,
        workspace_id: str,
        board_id: str,
        type_: str,
        summary: str,
        *,
        task_id: str | None = None,
        data: dict[str, Any] | None = None,
        at: str | None = None,
    ) -> ActivityRow:
        """A new activity row by this caller (actor and source filled in), for the write's transaction."""
        return activity_store.new_row(
            workspace_id=workspace_id,
            board_id=board_id,
            type_=type_,
            summary=summary,
            actor_id=self.principal.user_id,
            source=self.source,
            task_id=task_id,
            data=data,
            at=at,
        )

    # -- workspace resolution -------------------------------------------------------------
    def default_workspace(self) -> str | None:
        if self.binding and self.binding.workspace_id:
            return self.binding.workspace_id
        return self.principal.workspace_pin

    def workspace_argument(self, value: str, field_name: str = "workspaceId") -> str:
        """Resolve a ``workspaceId`` argument: ``""`` is the bound or pinned workspace, and for an
        unpinned credential with no connection binding (HTTP) the caller's only workspace."""
        if value == "":
            ws = self.default_workspace()
            if not ws and self.binding is None:
                return self.only_workspace(field_name)
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
                f'Pass workspaceId "" or {self.binding.workspace_id!r}; start another adapter with --workspace to use a different one.',
            )
        return value

    def only_workspace(self, field_name: str = "workspaceId") -> str:
        """``workspaceId: ""`` from an unpinned credential on no connection binding (HTTP): the
        caller's only workspace, read from the user's membership mirrors (one Query).

        Raises:
            ToolError: INVALID_INPUT naming ``field_name`` when the user belongs to no workspace,
                or to several (the message lists their ids).
        """
        spaces = sorted(m.workspaceId for m in member_store.memberships(self.principal.user_id))
        if len(spaces) == 1:
            return spaces[0]
        if not spaces:
            raise errors.invalid(
                field_name,
                "is empty and stands for your only workspace, but you belong to none",
                "Create one with create_workspace (or accept an invitation), then pass its id.",
            )
        shown = ", ".join(spaces[:LISTED_WORKSPACES]) + (
            f" and {len(spaces) - LISTED_WORKSPACES} more" if len(spaces) > LISTED_WORKSPACES else ""
        )
        raise errors.invalid(
            field_name,
            f"is empty, which names your only workspace, but you belong to {len(spaces)}: {shown}",
            "Pass one of these ids (list_workspaces shows their names), or use a token pinned to one workspace.",
        )

    def visible(self, workspace_id: str) -> bool:
        """Whether this call may see ``workspace_id`` at all: the token's pin and the connection's
        binding each narrow what is visible, and neither can widen what the other allows (a binding
        to another workspace than the pin leaves nothing visible). Every located id, target or ref,
        goes through here (``member``, :mod:`domain.access`)."""
        pin = self.principal.workspace_pin
        if pin is not None and pin != workspace_id:
            return False
        bound = self.binding.workspace_id if self.binding else None
        return bound is None or bound == workspace_id

    def member(self, workspace_id: str, kind: str = "workspace", ident: str | None = None) -> MemberRow:
        """The caller's membership in ``workspace_id`` (one consistent GetItem, cached per call).

        Raises:
            ToolError: NOT_FOUND naming ``kind``/``ident`` when the workspace is invisible.
        """
        if not self.visible(workspace_id):
            raise errors.not_found(kind, ident or workspace_id)
        known = self.call_state.members
        row = known.get(workspace_id)
        if row is None and workspace_id in self.call_state.absent_members:
            raise errors.not_found(kind, ident or workspace_id)
        if row is None:
            row = member_store.get(workspace_id, self.principal.user_id)
            if row is None:
                raise errors.not_found(kind, ident or workspace_id)
            known[workspace_id] = row
        return row

    def ensure_writable(self) -> None:
        if self.binding and self.binding.observe:
            raise errors.forbidden(
                f"This connection is an observe session ({self.binding.observe_reason}); {self.tool} writes and is refused.",
                "Restart the adapter with --workspace ws_… (or --checkout DIR), or give the client exactly one git checkout root.",
            )
