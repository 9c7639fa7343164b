"""Workspace tools: list_workspaces, create_workspace, list_members, get_token_context."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from domain import errors, ids
from domain.access import Prefetch, target
from domain.context import CallContext
from domain.idempotency import creation_marker
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import members as member_store
from domain.store import workspaces as workspace_store
from domain.store.models import UserRow
from domain.store import keys
from domain.text import has_visible
from domain.tools.args import IdempotencyKeyArg, WorkspaceIdArg
from domain.tools.views import MemberView, WorkspaceView, member_view, workspace_view


def only_bound_workspace(content: dict[str, Any], binding: Any) -> bool:
    """Relayed list_workspaces: keep only the connection's bound workspace (stdio bridge)."""
    if not isinstance(content.get("workspaces"), list) or not binding.workspace_id:
        return False
    content["workspaces"] = [w for w in content["workspaces"] if isinstance(w, dict) and w.get("id") == binding.workspace_id]
    return True


def local_binding(content: dict[str, Any], binding: Any) -> bool:
    """Relayed get_token_context: report the connection's binding, which the remote cannot see."""
    if "boundWorkspaceId" not in content:
        return False
    content["boundWorkspaceId"] = binding.workspace_id
    content["observe"] = binding.observe
    return True


# -- list_workspaces -------------------------------------------------------------------------
class ListWorkspacesInput(ToolInput):
    pass


class ListWorkspacesOutput(ToolOutput):
    workspaces: list[WorkspaceView]


@tool(
    "list_workspaces",
    title="List workspaces",
    description="Lists the workspaces you are a member of, each with your role in it. A workspace-pinned token sees only its workspace.",
    area="workspaces",
    scope="read",
    read_only=True,
    input_model=ListWorkspacesInput,
    output_model=ListWorkspacesOutput,
    rebind=only_bound_workspace,
)
def list_workspaces(ctx: CallContext, args: ListWorkspacesInput) -> ListWorkspacesOutput:
    mirrors = [m for m in member_store.memberships(ctx.user_id) if ctx.visible(m.workspaceId)]
    roles = {m.workspaceId: m.role for m in mirrors}
    rows = workspace_store.get_many(list(roles))
    views = sorted((workspace_view(w, roles[w.workspaceId]) for w in rows), key=lambda v: (v.name.lower(), v.id))
    return ListWorkspacesOutput(workspaces=views)


# -- create_workspace ------------------------------------------------------------------------
class CreateWorkspaceInput(ToolInput):
    name: Annotated[str, Field(min_length=1, max_length=80, description="Display name; it also derives the slug and the task-key prefix, which never change afterwards.")]
    idempotencyKey: IdempotencyKeyArg


class CreateWorkspaceOutput(ToolOutput):
    workspace: WorkspaceView


@tool(
    "create_workspace",
    title="Create workspace",
    description=(
        "Creates a workspace and makes you its OWNER. The name yields a unique slug and a task-key prefix (e.g. "
        "'Stack Team' -> ST-1), both fixed for life. A token pinned to one workspace is refused before anything is written."
    ),
    area="workspaces",
    scope="write",
    keyed=True,
    refused_when_bound=True,
    input_model=CreateWorkspaceInput,
    output_model=CreateWorkspaceOutput,
)
def create_workspace(ctx: CallContext, args: CreateWorkspaceInput) -> CreateWorkspaceOutput:
    name = args.name.strip()
    if not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    try:
        user = UserRow.get(*keys.user_profile(ctx.user_id))
    except UserRow.DoesNotExist:
        raise errors.not_found("user", ctx.user_id) from None
    ws_id = ids.new_workspace_id()
    marker = creation_marker(ctx, "", ws_id)
    try:
        ws, _ = workspace_store.create(user, name, marker=marker, workspace_id=ws_id)
    except workspace_store.NoFreeSlug:
        raise errors.conflict("Could not find a free slug for this workspace name.", "Choose a more distinctive name.") from None
    return CreateWorkspaceOutput(workspace=workspace_view(ws, "OWNER"))


# -- list_members ----------------------------------------------------------------------------
class ListMembersInput(ToolInput):
    workspaceId: WorkspaceIdArg


class ListMembersOutput(ToolOutput):
    members: list[MemberView]


@tool(
    "list_members",
    title="List members",
    description="Lists the members of a workspace with their roles. A member's userId is the id that names that person in task results (createdBy) and activity entries (actorId).",
    area="members",
    scope="read",
    read_only=True,
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(queries=(("members", lambda: member_store.list_members(where.workspace_id)),)),
    input_model=ListMembersInput,
    output_model=ListMembersOutput,
)
def list_members(ctx: CallContext, args: ListMembersInput) -> ListMembersOutput:
    return ListMembersOutput(members=[member_view(m) for m in ctx.query("members")])


# -- get_token_context -----------------------------------------------------------------------
class GetTokenContextInput(ToolInput):
    pass


class RateWindowView(ToolOutput):
    limit: int
    used: int
    remaining: int
    resetAt: str
    windowSeconds: int


class GetTokenContextOutput(ToolOutput):
    tokenId: str
    kind: str
    holder: Literal["agent", "human"] = Field(description="Who holds this credential: an agent (the default) or a human (minted with jentrix token create --human).")
    userId: str
    scopes: list[str] = Field(description="Effective scopes (read < write < admin).")
    storedScopes: list[str] = Field(description="Scopes as stored on the token; empty means full access.")
    fullAccess: bool = Field(description="True when every scope class (read, write and admin) is effective for this token.")
    workspaceId: str | None = Field(description="The workspace this token is pinned to, or null.")
    boundWorkspaceId: str | None = Field(description="The workspace this connection is bound to (stdio), or null.")
    observe: bool
    displayName: str | None
    emoji: str | None
    expiresAt: str | None
    rateLimit: RateWindowView


@tool(
    "get_token_context",
    title="Get token context",
    description=(
        "Describes the credential making this call — who holds it (agent or human), effective and stored scopes, workspace pin, display name and emoji, "
        "expiry, and the per-minute rate window — so an agent can check what it may do before trying. Never returns the secret."
    ),
    area="context",
    scope="read",
    read_only=True,
    input_model=GetTokenContextInput,
    output_model=GetTokenContextOutput,
    rebind=local_binding,
)
def get_token_context(ctx: CallContext, args: GetTokenContextInput) -> GetTokenContextOutput:
    p = ctx.principal
    window = ctx.window
    assert window is not None
    return GetTokenContextOutput(
        tokenId=p.token_id, kind=p.kind, holder=p.holder, userId=p.user_id, scopes=list(p.scopes), storedScopes=list(p.stored_scopes),
        fullAccess="admin" in p.scopes, workspaceId=p.workspace_pin,
        boundWorkspaceId=ctx.binding.workspace_id if ctx.binding else None,
        observe=bool(ctx.binding and ctx.binding.observe), displayName=p.display_name, emoji=p.emoji,
        expiresAt=p.expires_at, rateLimit=RateWindowView(**window.as_dict()),  # type: ignore[arg-type]
    )


TOOLS = (list_workspaces, create_workspace, list_members, get_token_context)
