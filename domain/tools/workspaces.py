"""Workspace tools: list_workspaces, create_workspace, list_members, get_token_context, update_workspace."""

from typing import Annotated, Any, Literal

from pydantic import Field

from domain import auth, errors, ids, repos
from domain.access import Prefetch, target
from domain.context import CallContext
from domain.registry import AREAS, ToolInput, ToolOutput, tool
from domain.store import members as member_store
from domain.store import parallel
from domain.store import workspaces as workspace_store
from domain.store.cas import Step, Unchanged, compare_and_set
from domain.store.db import Missing
from domain.store.reads import Workspace
from domain.text import has_visible
from domain.tools.args import IdempotencyKeyArg, SingleLine, WorkspaceIdArg, null_rule
from domain.tools.views import MemberView, WorkspaceView, member_view, workspace_view


# -- list_workspaces -------------------------------------------------------------------------
class ListWorkspacesInput(ToolInput):
    pass


class ListWorkspacesOutput(ToolOutput):
    workspaces: list[WorkspaceView]


@tool(
    "list_workspaces",
    title="List workspaces",
    description="Workspaces you belong to, with your role; a pinned token sees only its own.",
    area="workspaces",
    scope="read",
    read_only=True,
    fields_of="workspaces",
    input_model=ListWorkspacesInput,
    output_model=ListWorkspacesOutput,
)
def list_workspaces(ctx: CallContext, args: ListWorkspacesInput) -> ListWorkspacesOutput:
    mirrors = [m for m in member_store.memberships(ctx.user_id) if ctx.visible(m.workspaceId)]
    roles = {m.workspaceId: m.role for m in mirrors}
    rows = workspace_store.get_many(list(roles))
    views = sorted((workspace_view(w, roles[w.workspaceId]) for w in rows), key=lambda v: (v.name.lower(), v.id))
    return ListWorkspacesOutput(workspaces=views)


# -- create_workspace ------------------------------------------------------------------------
class CreateWorkspaceInput(ToolInput):
    name: Annotated[
        str, Field(min_length=1, max_length=80, description="Name; derives slug and key prefix."), SingleLine
    ]
    idempotencyKey: IdempotencyKeyArg


class CreateWorkspaceOutput(ToolOutput):
    workspace: WorkspaceView


def _replay_workspace(ctx: CallContext, workspace_id: str) -> CreateWorkspaceOutput:
    """The workspace an earlier call with the same idempotencyKey created (its marker named it)."""
    found = workspace_store.get(workspace_id)
    if found is None:
        raise errors.not_found("workspace", workspace_id)
    return CreateWorkspaceOutput(workspace=workspace_view(found, "OWNER"))


@tool(
    "create_workspace",
    title="Create workspace",
    description=(
        "Creates a workspace with you as OWNER; the name fixes a unique slug and task-key prefix for good ('Stack Team' "
        "-> ST-1). Workspace-pinned tokens are refused."
    ),
    area="workspaces",
    scope="write",
    keyed=True,
    replay=_replay_workspace,
    refused_when_bound=True,
    input_model=CreateWorkspaceInput,
    output_model=CreateWorkspaceOutput,
)
def create_workspace(ctx: CallContext, args: CreateWorkspaceInput) -> CreateWorkspaceOutput:
    name = args.name.strip()
    if not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    # the prefixes of the caller's workspaces (memberships Query, alongside the profile read, then
    # their heads), so a second workspace of the same name gets its own task keys (ST2-1 beside ST-1)
    memberships = parallel.submit(member_store.memberships, ctx.user_id)
    user = auth.user_by_id(ctx.user_id)
    if user is None:
        raise errors.not_found("user", ctx.user_id)
    taken = {w.taskPrefix for w in workspace_store.get_many([m.workspaceId for m in memberships.result()])}
    ws_id = ids.new_workspace_id()
    try:
        ws, _ = workspace_store.create(user, name, marker=ctx.marker, workspace_id=ws_id, taken_prefixes=taken)
    except workspace_store.NoFreeSlug:
        raise errors.conflict(
            "Could not find a free slug for this workspace name.", "Choose a more distinctive name."
        ) from None
    return CreateWorkspaceOutput(workspace=workspace_view(ws, "OWNER"))


# -- list_members ----------------------------------------------------------------------------
class ListMembersInput(ToolInput):
    workspaceId: WorkspaceIdArg


class ListMembersOutput(ToolOutput):
    members: list[MemberView]


@tool(
    "list_members",
    title="List members",
    description="A workspace's members and roles; userId is the id in createdBy and actorId fields.",
    area="members",
    scope="read",
    read_only=True,
    fields_of="members",
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(
        queries=(("members", lambda: member_store.list_members(where.workspace_id)),)
    ),
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
    holder: Literal["agent", "human"] = Field(
        description="Who holds this credential: an agent (the default) or a human (minted with jentrix token create --human)."
    )
    userId: str
    scopes: list[str] = Field(description="Effective scopes (read < write < admin).")
    storedScopes: list[str] = Field(description="Scopes as stored on the token; empty means full access.")
    fullAccess: bool = Field(
        description="True when every scope class (read, write and admin) is effective for this token."
    )
    workspaceId: str | None = Field(description="The workspace this token is pinned to, or null.")
    boundWorkspaceId: str | None = Field(description="The workspace this connection is bound to (stdio), or null.")
    observe: bool
    displayName: str | None
    emoji: str | None
    expiresAt: str | None
    rateLimit: RateWindowView
    toolsets: list[str] = Field(
        description="Toolsets this connection serves (all unless narrowed by URL, X-MCP-* headers, stdio flags or the server)."
    )
    readOnly: bool = Field(description="True when this connection serves read-only tools only.")


@tool(
    "get_token_context",
    title="Get token context",
    description="What this credential may do: holder, scopes, workspace pin, expiry, rate window, toolsets, read-only.",
    area="context",
    scope="read",
    read_only=True,
    input_model=GetTokenContextInput,
    output_model=GetTokenContextOutput,
)
def get_token_context(ctx: CallContext, args: GetTokenContextInput) -> GetTokenContextOutput:
    p = ctx.principal
    window = ctx.window
    assert window is not None
    return GetTokenContextOutput(
        tokenId=p.token_id,
        kind=p.kind,
        holder=p.holder,
        userId=p.user_id,
        scopes=list(p.scopes),
        storedScopes=list(p.stored_scopes),
        fullAccess="admin" in p.scopes,
        workspaceId=p.workspace_pin,
        boundWorkspaceId=ctx.binding.workspace_id if ctx.binding else None,
        observe=bool(ctx.binding and ctx.binding.observe),
        displayName=p.display_name,
        emoji=p.emoji,
        expiresAt=p.grant_expires_at if p.kind == "oauth" else p.expires_at,
        rateLimit=RateWindowView(**window.as_dict()),
        toolsets=list(ctx.selection[0]) if ctx.selection else list(AREAS),
        readOnly=bool(ctx.selection and ctx.selection[1]),
    )


# -- update_workspace ------------------------------------------------------------------------
class UpdateWorkspaceInput(ToolInput):
    workspaceId: WorkspaceIdArg
    name: Annotated[str | None, SingleLine] = Field(
        default=None, min_length=1, max_length=80, description="Name (slug, prefix unchanged)."
    )
    expectedName: str | None = Field(
        default=None,
        max_length=80,
        description="Name you read; if changed: CONFLICT.",
    )
    defaultRepo: str | None = Field(
        default=None,
        max_length=300,
        description="owner/name or GitHub URL; null removes it. Used while no project links a repo.",
    )
    slug: str | None = Field(default=None, max_length=100, description="Write-once: refused.")
    taskPrefix: str | None = Field(default=None, max_length=100, description="Write-once: refused.")
    expectedUpdatedAt: str | None = Field(default=None, max_length=100, description="Refused; use expectedName.")


class WorkspaceDetailView(WorkspaceView):
    defaultRepo: str | None = Field(description="Lowercase owner/name sessions fall back to, or null.")


class UpdateWorkspaceOutput(ToolOutput):
    workspace: WorkspaceDetailView
    changedFields: list[Literal["name", "defaultRepo"]] = Field(
        description="The fields this call changed; empty when everything already had the values sent."
    )


def _detail(ws: Workspace, role: str) -> WorkspaceDetailView:
    return WorkspaceDetailView(**workspace_view(ws, role).model_dump(), defaultRepo=ws.defaultRepo)


@tool(
    "update_workspace",
    title="Update workspace",
    description=(
        "Renames a workspace and/or sets its defaultRepo (ADMIN), guarded by expectedName. "
        + null_rule(["defaultRepo"], ["name"])
    ),
    area="workspaces",
    scope="admin",
    idempotent=True,
    target=target("workspaceId", "workspace"),
    min_role="ADMIN",
    reads=("workspace",),
    input_model=UpdateWorkspaceInput,
    output_model=UpdateWorkspaceOutput,
)
def update_workspace(ctx: CallContext, args: UpdateWorkspaceInput) -> UpdateWorkspaceOutput:
    sent = args.model_fields_set
    if "expectedUpdatedAt" in sent:
        raise errors.invalid(
            "expectedUpdatedAt",
            "is not accepted by update_workspace: a workspace is guarded by its name, not a timestamp",
            "Send expectedName with the name you last read (list_workspaces) instead.",
        )
    for field in ("slug", "taskPrefix"):
        if field in sent:
            raise errors.invalid(
                field,
                "is write-once: it was fixed when the workspace was created and cannot change",
                "Leave it out; only name and defaultRepo can be updated.",
            )
    name = args.name.strip() if args.name is not None else None
    if name is not None and not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    set_repo = "defaultRepo" in sent
    repo = None
    if set_repo and args.defaultRepo is not None:
        repo = repos.normalise_repo(args.defaultRepo)
        if repo is None:
            raise errors.invalid(
                "defaultRepo",
                f"is not a GitHub repository: {args.defaultRepo!r}",
                f"Send {repos.FORMS}, or null to clear it.",
            )
    if name is None and not set_repo:
        raise errors.invalid(
            "name",
            "nothing to change: send name and/or defaultRepo",
            "Send a new name, a defaultRepo, or defaultRepo: null.",
        )
    where = ctx.target
    role = ctx.member(where.workspace_id).role
    current = ctx.read.workspace
    if current is None:
        raise errors.not_found("workspace", where.workspace_id)

    def plan(ws: Workspace) -> Step[Workspace, UpdateWorkspaceOutput]:
        if args.expectedName is not None and ws.name != args.expectedName:
            raise errors.conflict(
                f"The workspace is now named {ws.name!r}, not {args.expectedName!r} as you expected; nothing was written.",
                "Check error.current and call again with its name as expectedName.",
                current=_detail(ws, role).model_dump(mode="json"),
            )
        changed: list[Any] = []
        if name is not None and name != ws.name:
            changed.append("name")
        if set_repo and repo != ws.defaultRepo:
            changed.append("defaultRepo")
        if not changed:
            return Unchanged(UpdateWorkspaceOutput(workspace=_detail(ws, role), changedFields=[]))
        after = workspace_store.copy(ws)
        if "name" in changed:
            after.name = name
        if "defaultRepo" in changed:
            after.defaultRepo = repo
        return workspace_store.edit(
            ws,
            name=name if "name" in changed else None,
            default_repo=repo,
            set_repo="defaultRepo" in changed,
            actor_id=ctx.user_id,
            result=lambda: UpdateWorkspaceOutput(workspace=_detail(after, role), changedFields=changed),
        )

    try:
        return compare_and_set("update_workspace", current, plan)
    except Missing:
        raise errors.not_found("workspace", where.workspace_id) from None


TOOLS = (list_workspaces, create_workspace, list_members, get_token_context, update_workspace)
