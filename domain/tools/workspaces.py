"""Workspace tools: list_workspaces, create_workspace, list_members, get_token_context."""

from __future__ import annotations

import re
import secrets
import unicodedata
from typing import Annotated, Any

from pydantic import Field
from pynamodb.exceptions import DoesNotExist

from domain import clock, errors, ids
from domain.context import CallContext
from domain.idempotency import creation_marker, earlier_entity, put_marker
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import db
from domain.store.models import (
    CreationMarkerRow,
    MemberRow,
    MembershipMirrorRow,
    Row,
    SlugRow,
    UserRow,
    WorkspaceRow,
)
from domain.tools.common import IdempotencyKeyArg, MemberView, has_visible, WorkspaceIdArg, WorkspaceView, member_view


def workspace_view(ws: WorkspaceRow, role: str) -> WorkspaceView:
    return WorkspaceView(id=ws.workspaceId, name=ws.name, slug=ws.slug, taskPrefix=ws.taskPrefix, role=role, createdAt=ws.createdAt)


def slugify(name: str) -> str:
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:40].strip("-")
    return slug or "workspace"


def task_prefix(name: str) -> str:
    """``Stack Team`` -> ``ST``; ``Jentrix`` -> ``JEN``; non-Latin names fall back to ``WS``."""
    words = re.findall(r"[A-Za-z0-9]+", unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode())
    if len(words) >= 2:
        prefix = "".join(w[0] for w in words[:4])
    elif words:
        prefix = words[0][:3]
    else:
        prefix = "WS"
    prefix = prefix.upper()
    return prefix if prefix[0].isalpha() else "W" + prefix[:3]


def create_workspace_rows(user: UserRow, name: str, *, marker: CreationMarkerRow | None = None, workspace_id: str | None = None) -> tuple[WorkspaceRow, bool]:
    """Create a workspace owned by ``user`` in one transaction; return ``(workspace, created)``.

    The slug is unique across the service (``SLUG#`` claim); on a clash ``-2``, ``-3``… is tried.
    With ``marker`` set, an earlier committed create with the same key is returned instead.
    """
    base = slugify(name)
    now = clock.now_iso()
    ws_id = workspace_id or ids.new_workspace_id()
    for attempt in range(1, 50):
        # The plain slug, then -2 … -5, then a random suffix: a popular name never runs out.
        slug = base if attempt == 1 else f"{base}-{attempt}" if attempt <= 5 else f"{base}-{secrets.token_hex(3)}"
        ws = WorkspaceRow(
            f"WS#{ws_id}", "META", workspaceId=ws_id, name=name, slug=slug, taskPrefix=task_prefix(name),
            taskCounter=0, createdAt=now, createdBy=user.userId,
        )
        member = MemberRow(
            f"WS#{ws_id}", f"MEMBER#{user.userId}", workspaceId=ws_id, userId=user.userId, role="OWNER",
            email=user.email, displayName=user.displayName, joinedAt=now, updatedAt=now,
        )
        mirror = MembershipMirrorRow(f"USER#{user.userId}", f"WS#{ws_id}", workspaceId=ws_id, role="OWNER")
        claim = SlugRow(f"SLUG#{slug}", "SLUG", workspaceId=ws_id)

        def build(tx: Any) -> None:
            tx.save(ws, condition=Row.PK.does_not_exist())
            tx.save(claim, condition=Row.PK.does_not_exist())
            tx.save(member)
            tx.save(mirror)
            put_marker(tx, marker)

        try:
            db.transact(build)
            return ws, True
        except db.ConditionFailed as failure:
            earlier = earlier_entity(failure, marker, "workspace")
            if earlier:
                return WorkspaceRow.get(f"WS#{earlier}", "META", consistent_read=True), False
            if failure.hit(claim.PK, claim.SK):
                continue
            raise
    raise errors.conflict("Could not find a free slug for this workspace name.", "Choose a more distinctive name.")


def refuse_when_bound(ctx: CallContext) -> None:
    """A pinned token or a bound connection works in one workspace and cannot mint another."""
    if ctx.principal.workspace_pin or (ctx.binding and ctx.binding.workspace_id):
        raise errors.forbidden(
            "This credential is pinned to one workspace and cannot create another.",
            "Create workspaces with an unpinned token (jentrix token create without --workspace).",
        )


# -- list_workspaces -------------------------------------------------------------------------
class ListWorkspacesInput(ToolInput):
    pass


class ListWorkspacesOutput(ToolOutput):
    workspaces: list[WorkspaceView]


@tool(
    "list_workspaces",
    title="List workspaces",
    description="Lists the workspaces you are a member of, each with your role in it. A workspace-pinned token sees only its workspace.",
    scope="read",
    read_only=True,
    input_model=ListWorkspacesInput,
    output_model=ListWorkspacesOutput,
    min_role=None,
)
def list_workspaces(ctx: CallContext, args: ListWorkspacesInput) -> ListWorkspacesOutput:
    uid = ctx.principal.user_id
    mirrors = [m for m in MembershipMirrorRow.query(f"USER#{uid}", Row.SK.startswith("WS#"), consistent_read=True) if isinstance(m, MembershipMirrorRow)]
    mirrors = [m for m in mirrors if ctx.visible(m.workspaceId)]
    roles = {m.workspaceId: m.role for m in mirrors}
    rows = list(WorkspaceRow.batch_get([(f"WS#{w}", "META") for w in roles], consistent_read=True)) if roles else []
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
    scope="write",
    keyed=True,
    input_model=CreateWorkspaceInput,
    output_model=CreateWorkspaceOutput,
    min_role=None,
)
def create_workspace(ctx: CallContext, args: CreateWorkspaceInput) -> CreateWorkspaceOutput:
    refuse_when_bound(ctx)
    name = args.name.strip()
    if not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    try:
        user = UserRow.get(f"USER#{ctx.principal.user_id}", "PROFILE")
    except DoesNotExist:
        raise errors.not_found("user", ctx.principal.user_id) from None
    ws_id = ids.new_workspace_id()
    marker = creation_marker(ctx, "", ws_id)
    ws, _ = create_workspace_rows(user, name, marker=marker, workspace_id=ws_id)
    return CreateWorkspaceOutput(workspace=workspace_view(ws, "OWNER"))


# -- list_members ----------------------------------------------------------------------------
class ListMembersInput(ToolInput):
    workspaceId: WorkspaceIdArg


class ListMembersOutput(ToolOutput):
    members: list[MemberView]


@tool(
    "list_members",
    title="List members",
    description="Lists the members of a workspace with their roles; a member's userId is how other tools refer to that person.",
    scope="read",
    read_only=True,
    input_model=ListMembersInput,
    output_model=ListMembersOutput,
)
def list_members(ctx: CallContext, args: ListMembersInput) -> ListMembersOutput:
    ws = ctx.workspace_argument(args.workspaceId)
    ctx.member(ws)
    rows = [m for m in MemberRow.query(f"WS#{ws}", Row.SK.startswith("MEMBER#"), consistent_read=True) if isinstance(m, MemberRow)]
    return ListMembersOutput(members=[member_view(m) for m in rows])


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
        "Describes the credential making this call — effective and stored scopes, workspace pin, display name and emoji, "
        "expiry, and the per-minute rate window — so an agent can check what it may do before trying. Never returns the secret."
    ),
    scope="read",
    read_only=True,
    input_model=GetTokenContextInput,
    output_model=GetTokenContextOutput,
    min_role=None,
)
def get_token_context(ctx: CallContext, args: GetTokenContextInput) -> GetTokenContextOutput:
    p = ctx.principal
    window = ctx.window
    assert window is not None
    return GetTokenContextOutput(
        tokenId=p.token_id, kind=p.kind, userId=p.user_id, scopes=list(p.scopes), storedScopes=list(p.stored_scopes),
        fullAccess="admin" in p.scopes, workspaceId=p.workspace_pin,
        boundWorkspaceId=ctx.binding.workspace_id if ctx.binding else None,
        observe=bool(ctx.binding and ctx.binding.observe), displayName=p.display_name, emoji=p.emoji,
        expiresAt=p.expires_at, rateLimit=RateWindowView(**window.as_dict()),  # type: ignore[arg-type]
    )
