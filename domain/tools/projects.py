"""Project tools: create_project, get_project, list_projects, update_project,
add_project_link, remove_project_link, resolve_projects_for_repo.

A project is the container that ties boards, tasks, repositories, docs, decisions, metrics and
agents together (catalog: "projects"). Its head lives in its workspace's partition, its links
in its own partition; REPO links are indexed by repository (GSI2) so
resolve_projects_for_repo is one Query whatever the size of the table (docs/data-model.md,
"Workspace settings, projects and repositories").
"""

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from domain import clock, errors, ids, repos
from domain.access import Located, Prefetch, Ref, either, locate, target
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import projects as project_store
from domain.store.cas import Step, Unchanged, compare_and_set
from domain.store.db import Missing
from domain.store.paging import list_kind
from domain.store.reads import Project, ProjectLink
from domain.store.workspaces import slugify
from domain.text import has_visible
from domain.tools.args import (
    CursorArg,
    ExpectedUpdatedAtArg,
    IdempotencyKeyArg,
    IdShape,
    LimitArg,
    SingleLine,
    WorkspaceIdArg,
    null_rule,
    requested_changes,
)

Status = Literal["PLANNED", "ACTIVE", "ON_HOLD", "COMPLETED", "ARCHIVED"]
TargetType = Literal["BOARD", "TASK", "REPO", "DOC", "DECISION", "METRIC", "AGENT"]
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

ProjectIdArg = Annotated[str, Field(min_length=1, max_length=64, description="pj_…")]
NameArg = Annotated[str, Field(min_length=1, max_length=120), SingleLine]
ShortText = Annotated[str, Field(min_length=1, max_length=300)]


class Milestone(ToolInput):
    title: Annotated[str, Field(min_length=1, max_length=200, description="What is reached."), SingleLine]
    dueDate: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD.")
    done: bool = Field(default=False, description="Reached.")


class Risk(ToolInput):
    title: Annotated[str, Field(min_length=1, max_length=300, description="The risk."), SingleLine]
    severity: Literal["LOW", "MEDIUM", "HIGH"] = Field(default="MEDIUM", description="Severity.")
    mitigation: str | None = Field(default=None, max_length=1000, description="How it is handled.")


class MilestoneView(ToolOutput):
    title: str
    dueDate: str | None
    done: bool


class RiskView(ToolOutput):
    title: str
    severity: str
    mitigation: str | None


class ProjectCounts(ToolOutput):
    children: int = Field(description="Projects whose parent is this one.")
    links: int
    milestones: int
    risks: int
    decisions: int = Field(description="DECISION links.")


class ProjectView(ToolOutput):
    id: str
    workspaceId: str
    name: str
    slug: str
    status: str
    ownerId: str | None = Field(description="The accountable member's userId, or null.")
    parentId: str | None
    goal: str | None = Field(description="The goal statement, or null.")
    constraints: list[str]
    milestones: list[MilestoneView]
    risks: list[RiskView]
    budget: str | None
    successMetrics: list[str]
    counts: ProjectCounts
    createdBy: str
    createdAt: str
    updatedAt: str


class LinkView(ToolOutput):
    targetType: str
    targetId: str = Field(description="The linked entity's id; lowercase owner/name for a REPO.")
    createdAt: str
    createdBy: str


def project_view(p: Project) -> ProjectView:
    milestones = [MilestoneView(**m) for m in (p.milestones or [])]
    risks = [RiskView(**r) for r in (p.risks or [])]
    return ProjectView(
        id=p.projectId,
        workspaceId=p.workspaceId,
        name=p.name,
        slug=p.slug,
        status=p.status,
        ownerId=p.ownerId,
        parentId=p.parentId,
        goal=p.goal,
        constraints=list(p.constraints or []),
        milestones=milestones,
        risks=risks,
        budget=p.budget,
        successMetrics=list(p.successMetrics or []),
        counts=ProjectCounts(
            children=int(p.childCount or 0),
            links=int(p.linkCount or 0),
            milestones=len(milestones),
            risks=len(risks),
            decisions=int(p.decisionCount or 0),
        ),
        createdBy=p.createdBy,
        createdAt=p.createdAt,
        updatedAt=p.updatedAt,
    )


def link_view(link: ProjectLink) -> LinkView:
    return LinkView(
        targetType=link.targetType, targetId=link.targetId, createdAt=link.createdAt, createdBy=link.createdBy
    )


def _head(ctx: CallContext) -> Project:
    """The target project's head (read with the membership: ``reads=("project", ...)``)."""
    head = ctx.read.project
    if head is None:
        raise errors.not_found("project", ctx.target.project())
    return head


def _member_of(ctx: CallContext, field: str, user_id: str) -> None:
    # args.ownerId's member item, read with the membership (``reads=("owner_member", ...)``); the
    # caller's own is the access step's (the plan leaves it out), and the access step admitted it
    if user_id == ctx.user_id:
        return
    if ctx.read.owner_member is None:
        raise errors.invalid(
            field, f"{user_id!r} is not a member of this workspace", "Pick a userId from list_members."
        )


def _texts(field: str, values: list[str] | None) -> list[str]:
    out = [v.strip() for v in values or []]
    if any(not has_visible(v) for v in out):
        raise errors.invalid(field, "every entry must contain visible characters")
    return out


TextList = Annotated[list[ShortText] | None, Field(default=None, max_length=20)]


# -- create_project ----------------------------------------------------------------------------
class CreateProjectInput(ToolInput):
    workspaceId: WorkspaceIdArg
    name: NameArg
    slug: str | None = Field(
        default=None, min_length=1, max_length=60, description="Unique; a-z, 0-9, dashes; default from name."
    )
    status: Status = Field(default="ACTIVE", description="Status.")
    ownerId: Annotated[str | None, IdShape("user")] = Field(
        default=None, max_length=64, description="Accountable userId; default you."
    )
    parentId: str | None = Field(default=None, max_length=64, description="Parent pj_… (same workspace).")
    goal: str | None = Field(default=None, max_length=4000, description="Goal statement.")
    constraints: TextList = Field(default=None, max_length=20, description="Constraints (≤300 chars each).")
    milestones: list[Milestone] | None = Field(default=None, max_length=20, description="Milestones.")
    risks: list[Risk] | None = Field(default=None, max_length=20, description="Risks.")
    budget: str | None = Field(default=None, max_length=200, description="Free text, e.g. '3 engineer-weeks'.")
    successMetrics: TextList = Field(default=None, max_length=20, description="Metrics (≤300 chars each).")
    idempotencyKey: IdempotencyKeyArg


class ProjectOutput(ToolOutput):
    project: ProjectView


def _replay_project(ctx: CallContext, project_id: str) -> ProjectOutput:
    """The project an earlier call with the same idempotencyKey created (its marker named it)."""
    found = project_store.get(ctx.target.workspace_id, project_id)
    if found is None:
        raise errors.not_found("project", project_id)
    return ProjectOutput(project=project_view(found))


@tool(
    "create_project",
    title="Create project",
    description=(
        "Creates a project in a workspace (ADMIN) with goal, constraints, milestones, risks, budget and success "
        "metrics; the slug is derived from the name unless given. Link boards, tasks or repos afterwards with "
        "add_project_link."
    ),
    area="projects",
    scope="write",
    keyed=True,
    replay=_replay_project,
    target=target("workspaceId", "workspace"),
    min_role="ADMIN",
    refs=(Ref("parentId", "project"),),
    reads=("project_slug", "parent_project", "owner_member"),
    input_model=CreateProjectInput,
    output_model=ProjectOutput,
)
def create_project(ctx: CallContext, args: CreateProjectInput) -> ProjectOutput:
    ws = ctx.target.workspace_id
    name = args.name.strip()
    if not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    slug = args.slug if args.slug is not None else slugify(name)
    if not _SLUG.fullmatch(slug):
        raise errors.invalid(
            "slug", "must be lowercase letters and digits separated by single dashes", "For example launch-2026."
        )
    if args.parentId and ctx.read.parent_project is None:
        raise errors.not_found("project", args.parentId)
    owner = args.ownerId or ctx.user_id
    if args.ownerId:
        _member_of(ctx, "ownerId", args.ownerId)
    project_id = ids.new_project_id(ws)
    claim = ctx.read.project_slug
    if claim is not None and ctx.marker is None:
        # A keyed call goes on to the transaction: if its key already made this project, the
        # marker's condition answers with it (a retry after a lost answer); else the claim refuses.
        raise _slug_taken(slug, claim.projectId)
    now = clock.now_iso()
    row = project_store.new_row(
        ws,
        project_id,
        name=name,
        slug=slug,
        status=args.status,
        ownerId=owner,
        parentId=args.parentId,
        goal=args.goal,
        constraints=_texts("constraints", args.constraints),
        milestones=[m.model_dump() for m in args.milestones or []],
        risks=[r.model_dump() for r in args.risks or []],
        budget=args.budget,
        successMetrics=_texts("successMetrics", args.successMetrics),
        childCount=0,
        linkCount=0,
        decisionCount=0,
        createdBy=ctx.user_id,
        createdAt=now,
        updatedAt=now,
    )
    try:
        project_store.create(row, actor_id=ctx.user_id, marker=ctx.marker)
    except project_store.SlugTaken as taken:
        raise _slug_taken(slug, taken.project_id) from None
    except project_store.OwnerGone:
        raise errors.invalid(
            "ownerId", f"{owner!r} is not a member of this workspace", "Pick a userId from list_members."
        ) from None
    except project_store.ParentGone:
        raise errors.not_found("project", args.parentId or "") from None
    except Missing:
        raise errors.not_found("workspace", ws) from None
    return ProjectOutput(project=project_view(row))


def _slug_taken(slug: str, holder: str | None) -> errors.ToolError:
    return errors.conflict(
        f"The slug {slug!r} is taken in this workspace (by {holder or 'another project'}); nothing was written.",
        "Pass another slug, or use get_project with this slug to see the existing project.",
    )


# -- get_project -------------------------------------------------------------------------------
class GetProjectInput(ToolInput):
    projectId: str | None = Field(
        default=None, max_length=64, description="Project id (pj_…); or give workspaceId + slug."
    )
    workspaceId: str | None = Field(
        default=None, max_length=64, description='With slug: the project\'s workspace ("" for the bound one).'
    )
    slug: str | None = Field(
        default=None, min_length=1, max_length=60, description="With workspaceId: the project's slug."
    )


class GetProjectOutput(ToolOutput):
    project: ProjectView
    links: list[LinkView] = Field(description="Every link, by target type then target id.")


def _locate_project(ctx: CallContext, args: GetProjectInput) -> Located:
    if args.projectId is not None:
        if args.slug is not None or args.workspaceId is not None:
            raise errors.invalid("projectId", "give projectId, or workspaceId + slug, not both")
        return locate(ctx, "project", args.projectId)
    if args.slug is None or args.workspaceId is None:
        raise errors.invalid("projectId", "is required unless workspaceId and slug are both given")
    ws = ctx.workspace_argument(args.workspaceId)
    return Located("workspace", ws, ws)


@tool(
    "get_project",
    title="Get project",
    description=(
        "One project, by projectId or by workspaceId + slug, with milestones, risks, every link and child/link/decision "
        "counts."
    ),
    area="projects",
    scope="read",
    read_only=True,
    fields_of="project",
    target=either(
        ("projectId", "project"), ("workspaceId", "workspace", {"slug": "some-project"}), resolve=_locate_project
    ),
    min_role="MEMBER",
    reads=("project", "project_slug"),  # the head by id, or the slug's claim
    input_model=GetProjectInput,
    output_model=GetProjectOutput,
)
def get_project(ctx: CallContext, args: GetProjectInput) -> GetProjectOutput:
    where = ctx.target
    if where.project_id:
        head = _head(ctx)
    else:
        claim = ctx.read.project_slug
        if claim is None:
            raise errors.not_found("project", f"slug {args.slug} in workspace {where.workspace_id}")
        found = project_store.get(where.workspace_id, claim.projectId)
        if found is None:
            raise errors.not_found("project", claim.projectId)
        head = found
    # The links ride on the head (its copies); a head from before the copies reads them (+1 request).
    links = project_store.copied_links(head)
    if links is None:
        links = project_store.links(head.projectId)
    ordered = sorted(links, key=lambda link: (link.targetType, link.targetId))
    return GetProjectOutput(project=project_view(head), links=[link_view(link) for link in ordered])


# -- list_projects -----------------------------------------------------------------------------
class ListProjectsInput(ToolInput):
    workspaceId: WorkspaceIdArg
    status: Status | None = Field(default=None, description="Status.")
    ownerId: Annotated[str | None, IdShape("user")] = Field(default=None, max_length=64, description="Owner's userId.")
    parentId: Annotated[str | None, IdShape("project")] = Field(
        default=None, max_length=64, description="Direct children of this pj_…."
    )
    limit: LimitArg
    cursor: CursorArg


class ListProjectsOutput(ToolOutput):
    projects: list[ProjectView] = Field(description="In id order.")
    totalCount: int = Field(description="Projects matching the filters, over all pages.")
    nextCursor: str | None
    notice: str | None


@tool(
    "list_projects",
    title="List projects",
    description=("A workspace's projects with owner, status and counts, filtered by status, owner or parent."),
    area="projects",
    scope="read",
    read_only=True,
    fields_of="projects",
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(
        queries=(("projects", lambda: project_store.in_workspace(where.workspace_id)),)
    ),
    input_model=ListProjectsInput,
    output_model=ListProjectsOutput,
)
def list_projects(ctx: CallContext, args: ListProjectsInput) -> ListProjectsOutput:
    import base64
    import json

    kind = list_kind(
        "projects", workspace=ctx.target.workspace_id, status=args.status, owner=args.ownerId, parent=args.parentId
    )
    after = ""
    if args.cursor:
        try:
            raw = json.loads(base64.urlsafe_b64decode(args.cursor.encode()))
            assert raw["k"] == kind and isinstance(raw["a"], str)
            after = raw["a"]
        except Exception:  # noqa: BLE001 - whatever breaks while decoding, the cursor is the caller's
            raise errors.invalid(
                "cursor",
                "is not a cursor of this list",
                "Send nextCursor from the previous page with the same filters, or omit it.",
            ) from None
    rows = [
        p
        for p in ctx.query("projects")
        if (args.status is None or p.status == args.status)
        and (args.ownerId is None or p.ownerId == args.ownerId)
        and (args.parentId is None or p.parentId == args.parentId)
    ]
    rows.sort(key=lambda p: p.projectId)
    rest = [p for p in rows if p.projectId > after]
    page = rest[: args.limit]
    cursor = None
    if len(rest) > args.limit:
        cursor = base64.urlsafe_b64encode(json.dumps({"k": kind, "a": page[-1].projectId}).encode()).decode()
    notice = f"Showing {len(page)} of {len(rows)} projects; pass nextCursor for the next page." if cursor else None
    return ListProjectsOutput(
        projects=[project_view(p) for p in page], totalCount=len(rows), nextCursor=cursor, notice=notice
    )


# -- update_project ----------------------------------------------------------------------------
class UpdateProjectInput(ToolInput):
    projectId: ProjectIdArg
    name: Annotated[str | None, SingleLine] = Field(default=None, min_length=1, max_length=120)
    status: Status | None = Field(default=None, description="Status.")
    ownerId: Annotated[str | None, IdShape("user")] = Field(
        default=None, max_length=64, description="userId; null: without one."
    )
    parentId: str | None = Field(
        default=None, max_length=64, description="pj_… of the workspace; null: top-level; no cycles."
    )
    goal: str | None = Field(default=None, max_length=4000, description="null removes it.")
    constraints: TextList = Field(default=None, max_length=20, description="Replaces all; null empties.")
    milestones: list[Milestone] | None = Field(default=None, max_length=20, description="Replaces all; null empties.")
    risks: list[Risk] | None = Field(default=None, max_length=20, description="Replaces all; null empties.")
    budget: str | None = Field(default=None, max_length=200, description="null removes it.")
    successMetrics: TextList = Field(default=None, max_length=20, description="Replaces all; null empties.")
    expectedUpdatedAt: ExpectedUpdatedAtArg


class UpdateProjectOutput(ToolOutput):
    project: ProjectView
    changedFields: list[str]


_CLEAR: dict[str, Any] = {
    "ownerId": None,
    "parentId": None,
    "goal": None,
    "constraints": [],
    "milestones": [],
    "risks": [],
    "budget": None,
    "successMetrics": [],
}


@tool(
    "update_project",
    title="Update project",
    description=(
        "Changes a project's fields (ADMIN); lists are replaced whole. " + null_rule(list(_CLEAR), ["name", "status"])
    ),
    area="projects",
    scope="write",
    idempotent=True,
    target=target("projectId", "project"),
    min_role="ADMIN",
    refs=(Ref("parentId", "project"),),
    reads=("project", "parent_project", "owner_member"),
    cas="expectedUpdatedAt",
    input_model=UpdateProjectInput,
    output_model=UpdateProjectOutput,
)
def update_project(ctx: CallContext, args: UpdateProjectInput) -> UpdateProjectOutput:
    changes = requested_changes(args, clear_to=_CLEAR, not_values=("projectId", "expectedUpdatedAt"))
    if not changes:
        raise errors.invalid(
            "projectId",
            "nothing to change: send at least one field",
            "Send the fields to change; null clears a field that may be empty.",
        )
    ws = ctx.target.workspace_id
    if "name" in changes:
        changes["name"] = changes["name"].strip()
        if not has_visible(changes["name"]):
            raise errors.invalid("name", "must contain visible characters")
    for field in ("constraints", "successMetrics"):
        if field in changes:
            changes[field] = _texts(field, changes[field])
    for field in ("milestones", "risks"):
        if field in changes:
            changes[field] = [m.model_dump() for m in changes[field]]
    if changes.get("ownerId"):
        _member_of(ctx, "ownerId", changes["ownerId"])
    current = _head(ctx)
    chain: list[Project] = []
    if changes.get("parentId") and changes["parentId"] != current.parentId:
        parent_id = changes["parentId"]
        if parent_id == current.projectId:
            raise errors.invalid("parentId", "a project cannot be its own parent")
        parent = ctx.read.parent_project
        if parent is None:
            raise errors.not_found("project", parent_id)
        above, complete = project_store.ancestors(ws, parent.parentId) if parent.parentId else ([], True)
        chain = [parent, *above]
        if not complete or len(chain) > project_store.MAX_DEPTH:
            raise errors.invalid("parentId", f"the parent chain would be deeper than {project_store.MAX_DEPTH} levels")
        if any(a.projectId == current.projectId for a in chain):
            names = [a.name for a in chain[: next(i for i, a in enumerate(chain) if a.projectId == current.projectId)]]
            raise errors.invalid(
                "parentId",
                f"would make a cycle: {current.name} would sit under {' -> '.join(names)}, which already sits under {current.name}",
                "Pick a parent that is not one of this project's descendants.",
            )

    def plan(head: Project) -> Step[Project, UpdateProjectOutput]:
        ctx.still_current("project", head.updatedAt, lambda: project_view(head).model_dump(mode="json"))
        changed = [f for f, v in changes.items() if _stored(head, f) != v]
        if not changed:
            return Unchanged(UpdateProjectOutput(project=project_view(head), changedFields=[]))
        edited = project_store.copy(head)
        for f in changed:
            setattr(edited, f, changes[f])
        edited.updatedAt = clock.next_stamp(head.updatedAt)
        return project_store.edit(
            edited,
            head,
            ancestors=chain,
            actor_id=ctx.user_id,
            result=lambda: UpdateProjectOutput(project=project_view(edited), changedFields=changed),
        )

    try:
        return compare_and_set("update_project", current, plan)
    except project_store.OwnerGone:
        raise errors.invalid(
            "ownerId",
            f"{changes.get('ownerId')!r} is not a member of this workspace",
            "Pick a userId from list_members.",
        ) from None
    except project_store.ParentGone:
        raise errors.conflict(
            "The new parent or one of its ancestors changed meanwhile; nothing was written.",
            "Call again: the cycle check runs on the new tree.",
        ) from None
    except Missing:
        raise errors.not_found("project", args.projectId) from None


def _stored(head: Project, field: str) -> Any:
    value = getattr(head, field)
    if field in ("constraints", "successMetrics"):
        return list(value or [])
    if field in ("milestones", "risks"):
        return list(value or [])
    return value


# -- add_project_link / remove_project_link ------------------------------------------------------
class ProjectLinkInput(ToolInput):
    projectId: ProjectIdArg
    targetType: TargetType = Field(description="Kind of target.")
    targetId: str = Field(
        min_length=1,
        max_length=300,
        description="bd_… or tk_… of the workspace; REPO: owner/name or GitHub URL; other types: your own id.",
    )

    @property
    def stored_target_id(self) -> str | None:
        """``targetId`` as a link stores it: a REPO's lowercase ``owner/name`` (``None`` when it
        names no repository), any other type's id without surrounding whitespace. The read plan
        ``project_link`` keys the link by it."""
        if self.targetType == "REPO":
            return repos.normalise_repo(self.targetId)
        return self.targetId.strip()


class ProjectLinkOutput(ToolOutput):
    projectId: str
    link: LinkView
    added: bool | None = Field(
        default=None, description="add_project_link: false when the link already existed (nothing written)."
    )
    removed: bool | None = Field(
        default=None, description="remove_project_link: false when there was no such link (nothing written)."
    )


class RemovedLinkView(ToolOutput):
    """The link remove_project_link acted on; with no such link, the arguments (normalised) and no stamps."""

    targetType: str
    targetId: str = Field(description="The linked entity's id; lowercase owner/name for a REPO.")
    createdAt: str | None = Field(description="When the removed link was made; null when there was no such link.")
    createdBy: str | None = Field(description="Who made the removed link; null when there was no such link.")


class RemoveProjectLinkOutput(ToolOutput):
    projectId: str
    link: RemovedLinkView
    added: bool | None = Field(
        default=None, description="Always null here (kept for the shape shared with add_project_link)."
    )
    removed: bool = Field(description="false when there was no such link (nothing written).")


def _target_id(args: ProjectLinkInput, workspace_id: str) -> str:
    value = args.stored_target_id
    if args.targetType == "REPO":
        if value is None:
            raise errors.invalid("targetId", f"is not a GitHub repository: {args.targetId!r}", f"Send {repos.FORMS}.")
        return value
    assert value is not None  # only a repository can name nothing
    if args.targetType == "BOARD":
        board = ids.parse_board(value)
        if board is None or board[0] != workspace_id:
            raise errors.not_found("board", value)
    elif args.targetType == "TASK":
        task = ids.parse_task(value)
        if task is None or task.workspace_id != workspace_id:
            raise errors.not_found("task", value)
    elif not has_visible(value) or "#" in value:
        raise errors.invalid("targetId", "must contain visible characters and no '#'")
    return value


def _refuse_foreign_target(where: Located, args: ProjectLinkInput) -> Prefetch:
    # A malformed or foreign targetId is refused here, before the access read: the answer
    # depends on the ids the caller sent alone, so nothing is read for it (issue 24). The items
    # (project, link, the board's entry or the task) are the spec's read plans.
    _target_id(args, where.workspace_id)
    return Prefetch()


@tool(
    "add_project_link",
    title="Add project link",
    description=(
        "Links a project (ADMIN) to a board or task of its workspace, a repo (stored lowercase owner/name), doc, "
        "decision, metric or agent. An existing link writes nothing (added: false)."
    ),
    area="projects",
    scope="write",
    idempotent=True,
    target=target("projectId", "project"),
    min_role="ADMIN",
    prefetch=_refuse_foreign_target,
    reads=("project", "project_link", "link_board_entry", "link_task"),
    input_model=ProjectLinkInput,
    output_model=ProjectLinkOutput,
)
def add_project_link(ctx: CallContext, args: ProjectLinkInput) -> ProjectLinkOutput:
    where = ctx.target
    target_id = _target_id(args, where.workspace_id)
    head = _head(ctx)
    existing = ctx.read.project_link
    if existing is not None:
        return ProjectLinkOutput(projectId=where.project_id, link=link_view(existing), added=False)
    if args.targetType == "BOARD" and ctx.read.link_board_entry is None:
        raise errors.not_found("board", target_id)
    if args.targetType == "TASK" and ctx.read.link_task is None:
        raise errors.not_found("task", target_id)
    checked = args.targetType in ("BOARD", "TASK")  # the store conditions the write on the target
    row = project_store.new_link(
        where.workspace_id, where.project(), args.targetType, target_id, created_by=ctx.user_id
    )
    # A head whose link copies fall short (links made before the copies existed) gets them all
    # with this addition: one Query more, once per such project.
    backfill = project_store.links(where.project()) if project_store.copied_links(head) is None else []
    try:
        added = project_store.add_link(row, actor_id=ctx.user_id, backfill=backfill)
    except project_store.TooManyLinks:
        raise errors.invalid(
            "projectId", f"the project holds {project_store.MAX_LINKS} links, the most it can", "Remove a link first."
        ) from None
    except Missing:
        raise errors.not_found(
            args.targetType.lower() if checked else "project", target_id if checked else where.project()
        ) from None
    if not added:
        stored = project_store.link(where.project(), args.targetType, target_id)
        if stored is None:  # made by another call and removed again since this one tried
            raise errors.conflict(
                "The link was added and removed meanwhile by other calls; nothing was written.",
                "Call again to add it.",
            )
        return ProjectLinkOutput(projectId=where.project_id, link=link_view(stored), added=False)
    return ProjectLinkOutput(projectId=where.project_id, link=link_view(row), added=True)


@tool(
    "remove_project_link",
    title="Remove project link",
    description=(
        "Removes one project link, matched by targetType and targetId (any repo spelling; ADMIN). A missing link writes "
        "nothing (removed: false)."
    ),
    area="projects",
    scope="write",
    idempotent=True,
    target=target("projectId", "project"),
    min_role="ADMIN",
    prefetch=_refuse_foreign_target,
    reads=("project", "project_link"),
    input_model=ProjectLinkInput,
    output_model=RemoveProjectLinkOutput,
)
def remove_project_link(ctx: CallContext, args: ProjectLinkInput) -> RemoveProjectLinkOutput:
    where = ctx.target
    target_id = _target_id(args, where.workspace_id)
    _head(ctx)
    existing = ctx.read.project_link
    if existing is None:  # a no-op: echo what was asked, invent nothing
        asked = RemovedLinkView(targetType=args.targetType, targetId=target_id, createdAt=None, createdBy=None)
        return RemoveProjectLinkOutput(projectId=where.project_id, link=asked, removed=False)
    try:
        removed = project_store.remove_link(existing, actor_id=ctx.user_id, stamp=clock.now_iso())
    except Missing:
        raise errors.not_found("project", where.project()) from None
    link = RemovedLinkView(**link_view(existing).model_dump())
    return RemoveProjectLinkOutput(projectId=where.project_id, link=link, removed=removed)


# -- resolve_projects_for_repo ---------------------------------------------------------------------
class ResolveProjectsInput(ToolInput):
    repo: str = Field(min_length=1, max_length=300, description="owner/name or GitHub URL.")


class RepoMatch(ToolOutput):
    project: ProjectView
    workspaceName: str
    matchedBy: Literal["link", "default"] = Field(
        description="link: the project links the repository; default: its workspace's defaultRepo is the repository and no project there links one."
    )


class ResolveProjectsOutput(ToolOutput):
    repo: str = Field(description="The repository as normalised (lowercase owner/name).")
    matches: list[RepoMatch] = Field(description="Live (not ARCHIVED) projects, by workspace then project id.")


@tool(
    "resolve_projects_for_repo",
    title="Resolve projects for a repository",
    description=(
        "Live projects linking a repo, across all your workspaces; where no project of a workspace links a repo and its "
        "defaultRepo matches, its live projects come back as matchedBy: default. Human unpinned credentials only (else "
        "FORBIDDEN)."
    ),
    area="projects",
    scope="read",
    read_only=True,
    input_model=ResolveProjectsInput,
    output_model=ResolveProjectsOutput,
)
def resolve_projects_for_repo(ctx: CallContext, args: ResolveProjectsInput) -> ResolveProjectsOutput:
    p = ctx.principal
    if not p.human or p.workspace_pin or (ctx.binding and ctx.binding.workspace_id):
        raise errors.forbidden(
            "resolve_projects_for_repo needs an unpinned human credential; this one is "
            + (
                "pinned to one workspace."
                if p.workspace_pin or (ctx.binding and ctx.binding.workspace_id)
                else "an agent's."
            ),
            "Run it with a human token made without --workspace (jentrix token create --human).",
        )
    repo = repos.normalise_repo(args.repo)
    if repo is None:
        raise errors.invalid("repo", f"is not a GitHub repository: {args.repo!r}", f"Send {repos.FORMS}.")
    found, names = project_store.lookup(ctx.user_id, repo)
    matches = [
        RepoMatch(project=project_view(pj), workspaceName=names.get(pj.workspaceId, ""), matchedBy=how)
        for pj, how in sorted(found, key=lambda m: (m[0].workspaceId, m[0].projectId))
    ]
    return ResolveProjectsOutput(repo=repo, matches=matches)


TOOLS = (
    create_project,
    get_project,
    list_projects,
    update_project,
    add_project_link,
    remove_project_link,
    resolve_projects_for_repo,
)
