"""Named read plans: what a tool reads first, by name, with a typed result.

A tool declares ``reads=("task", "comment", ...)`` on its spec. For each name, the plan here maps
the located target (``domain.targets.Located``: any object with the attributes of :class:`Where`)
and the validated arguments to the keys of the items it needs; the access step adds those keys
to the one consistent BatchGetItem that reads the caller's membership, so a plan costs no request
of its own (tests/test_request_budget.py). The handler then reads ``ctx.read.<name>``: the row
of the declared type, or ``None`` when the item is absent (or is not the row the plan expects).

Tools never spell keys or row classes for these reads: the plan owns the key
(``domain.store.keys``) and the type (``domain.store.models``). The row types a handler names in
its annotations are re-exported here as :data:`Task`, :data:`Comment`, ... .

Adding a plan: write a :class:`ReadPlan` below, list it in :data:`PLANS` and give
:class:`Reads` a property of the same name (tests/test_read_plans.py checks the three agree).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from domain import ids
from domain.store import keys
from domain.store.errors import StoreError
from domain.store.models import (
    ActivityRow,
    ArtifactBodyRow,
    ArtifactRow,
    AttachmentCountRow,
    BoardEntryRow,
    BoardRow,
    ClaimHeadRow,
    ColumnRow,
    CommentCountRow,
    CommentRow,
    ConsultationRow,
    IntegrationRow,
    InvitationRow,
    LabelNameRow,
    LabelRow,
    LinkCountRow,
    LinkGraphRow,
    LinkRow,
    MemberRow,
    PeerRequestRow,
    ProjectLinkRow,
    ProjectRow,
    ProjectSlugRow,
    ReviewRow,
    SessionClaimRow,
    SessionRow,
    SubtaskRow,
    TaskDetailRow,
    TaskNumberRow,
    TaskRow,
    WorkspaceRow,
    values,
)

# The row types handlers may name (their annotations), without importing domain.store.models.
Task = TaskDetailRow
CompactTask = TaskRow  # a task's compact row (the fields a list shows)
Comment = CommentRow
Subtask = SubtaskRow
Label = LabelRow
Link = LinkRow
BoardEntry = BoardEntryRow
Member = MemberRow
Invitation = InvitationRow
Workspace = WorkspaceRow
Board = BoardRow  # a board's head row (name, settings)
Column = ColumnRow
Activity = ActivityRow
# projects, sessions (issue 27)
Project = ProjectRow  # a project's head
ProjectLink = ProjectLinkRow  # one link of a project (board, task, repo, doc, ...)
Session = SessionRow  # an agent session's head
SessionClaim = SessionClaimRow  # a provider thread's binding claim
TaskNumber = TaskNumberRow  # a workspace's pointer from a task number to its task id (tasks, bulk, search; issue 27)
# values(row): a row's attribute values by name, read without the attribute descriptors (views).
row_values = values

Key = tuple[str, str]
R = TypeVar("R")


class Where(Protocol):
    """What a plan reads from the located target (``domain.targets.Located`` has all of it)."""

    @property
    def workspace_id(self) -> str: ...
    @property
    def board_id(self) -> str | None: ...
    @property
    def label_id(self) -> str | None: ...
    @property
    def task(self) -> ids.TaskRef | None: ...
    @property
    def comment(self) -> ids.CommentRef | None: ...
    @property
    def subtask(self) -> ids.SubtaskRef | None: ...
    @property
    def invitation(self) -> ids.InvitationRef | None: ...
    @property
    def artifact(self) -> ids.ArtifactRef | None: ...
    # projects, sessions (issue 27)
    @property
    def project_id(self) -> str | None: ...
    @property
    def session(self) -> ids.SessionRef | None: ...
    # tasks, bulk, search (issue 27)
    @property
    def column_id(self) -> str | None: ...


class PlanError(StoreError, ValueError):
    """A plan asked for something its target does not carry (a spec declaring ``reads`` that do
    not fit its target kind): a programming error, caught by the catalog harness."""


@dataclass(frozen=True)
class ReadPlan(Generic[R]):
    """One named read: ``keys(where, args)`` the items (none when the arguments ask for none),
    ``row`` the type the first of them must be for the result to be present."""

    name: str
    keys: Callable[[Where, Any], tuple[Key, ...]]
    row: type[R]

    def result(self, fetched: Mapping[Key, Any], where: Where, args: Any) -> R | None:
        wanted = self.keys(where, args)
        found = fetched.get(wanted[0]) if wanted else None
        return found if isinstance(found, self.row) else None


@dataclass(frozen=True)
class ManyReadPlan(Generic[R]):
    """A named read of several items: ``keys(where, args)`` the items, ``row`` their type; the
    result is the ones present, in key order (absent items, and rows of another type, left out)."""

    name: str
    keys: Callable[[Where, Any], tuple[Key, ...]]
    row: type[R]

    def results(self, fetched: Mapping[Key, Any], where: Where, args: Any) -> list[R]:
        found = (fetched.get(k) for k in self.keys(where, args))
        return [r for r in found if isinstance(r, self.row)]


def _task_key(where: Where) -> Key:
    if where.board_id is None or where.task is None:
        raise PlanError("the target names no task")
    return keys.task_full(where.board_id, where.task.number)


def _task_id(where: Where) -> str:
    if where.board_id is None or where.task is None:
        raise PlanError("the target names no task")
    return ids.task_id(where.board_id, where.task.number)


def _comment_key(where: Where) -> Key:
    if where.comment is None:
        raise PlanError("the target names no comment")
    return keys.comment(where.comment.task_id, where.comment.ulid)


def _subtask_key(where: Where) -> Key:
    if where.subtask is None:
        raise PlanError("the target names no subtask")
    return keys.subtask(where.subtask.task_id, where.subtask.ulid)


def _board(where: Where) -> str:
    if where.board_id is None:
        raise PlanError("the target names no board")
    return where.board_id


def _label_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # Nothing for a target that names no label (manage_labels' board alternative, a create).
    return (keys.label(_board(where), where.label_id),) if where.label_id else ()


def _label_name_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # Read for a label target given a name (a rename): a create checks names against the board's labels.
    name = " ".join((getattr(args, "name", None) or "").split())
    return (keys.label_name_claim(_board(where), name),) if name and where.label_id else ()


def _user_member_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The member items of the users args.userIds names, in the target's workspace, each once.
    wanted = dict.fromkeys(getattr(args, "userIds", None) or [])
    return tuple(keys.member(where.workspace_id, u) for u in wanted)


def _user_member_key(where: Where, args: Any) -> tuple[Key, ...]:
    # The member item of the user args.userId names, in the target's workspace.
    user_id = getattr(args, "userId", None)
    return (keys.member(where.workspace_id, user_id),) if user_id else ()


def _invitation_key(where: Where) -> Key:
    if where.invitation is None:
        raise PlanError("the target names no invitation")
    return keys.invitation(where.workspace_id, where.invitation.ulid)


def _listed_entry_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The entries of the boards args.boardIds names that lie in the target's workspace, each once
    # (a foreign one is refused by the access step's ref check and not read).
    from domain.store.board_entry import entry_key

    listed = dict.fromkeys(getattr(args, "boardIds", None) or [])
    return tuple(entry_key(b) for b in listed if (p := ids.parse_board(b)) is not None and p[0] == where.workspace_id)


def _artifact_ref(where: Where) -> ids.ArtifactRef:
    if where.artifact is None:
        raise PlanError("the target names no artifact")
    return where.artifact


def _linked_task_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The task args.taskId names, when it lies in the target's workspace.
    ref = ids.parse_task(getattr(args, "taskId", None) or "")
    return (keys.task_full(ref.board_id, ref.number),) if ref and ref.workspace_id == where.workspace_id else ()


def _linked_project_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The project args.projectId names, when it lies in the target's workspace.
    ref = ids.parse_project(getattr(args, "projectId", None) or "")
    return (keys.project(where.workspace_id, ref[1]),) if ref and ref[0] == where.workspace_id else ()


def _linked_session_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The agent session head args.sessionId names, when it lies in the target's workspace.
    ref = ids.parse_session(getattr(args, "sessionId", None) or "")
    return (keys.session(where.workspace_id, ref.ulid),) if ref and ref.workspace_id == where.workspace_id else ()


def _entry_key(where: Where) -> Key:
    from domain.store.board_entry import entry_key

    return entry_key(_board(where))


def _to_task(where: Where, args: Any) -> ids.TaskRef | None:
    # The other end of an edge tool (args.toTaskId), when it names a task of the target's
    # workspace: a foreign one is refused by the access step's ref check, and nothing is read.
    ref = ids.parse_task(getattr(args, "toTaskId", None) or "")
    return ref if ref is not None and ref.workspace_id == where.workspace_id else None


def _to_task_keys(where: Where, args: Any) -> tuple[Key, ...]:
    to = _to_task(where, args)
    return (keys.task_full(to.board_id, to.number),) if to else ()


def _to_entry_keys(where: Where, args: Any) -> tuple[Key, ...]:
    from domain.store.board_entry import entry_key

    to = _to_task(where, args)
    return (entry_key(to.board_id),) if to else ()


def _edge_keys(where: Where, args: Any) -> tuple[Key, ...]:
    to = _to_task(where, args)
    if to is None:
        return ()
    return (keys.link_out(_task_id(where), args.kind, ids.task_id(to.board_id, to.number)),)


def _to_link_count_keys(where: Where, args: Any) -> tuple[Key, ...]:
    to = _to_task(where, args)
    return (keys.link_count(ids.task_id(to.board_id, to.number)),) if to else ()


def _link_graph_keys(where: Where, args: Any) -> tuple[Key, ...]:
    from domain.store.links import DEPENDENCY_KINDS

    return (keys.link_graph(where.workspace_id),) if getattr(args, "kind", None) in DEPENDENCY_KINDS else ()


# The head of the target's workspace (name, slug, task prefix, default repository).
WORKSPACE = ReadPlan("workspace", lambda w, a: (keys.workspace_head(w.workspace_id),), WorkspaceRow)
# The member of the target's workspace that ``args.userId`` names (absent for the caller: the
# access step keeps the caller's own member item for ``ctx.member``).
USER_MEMBER = ReadPlan("user_member", _user_member_key, MemberRow)
# The invitation the target names (any state: pending, accepted, revoked).
INVITATION = ReadPlan("invitation", lambda w, a: (_invitation_key(w),), InvitationRow)
# The artifact the target names: its head, and its stored body (absent for one without a body).
ARTIFACT = ReadPlan(
    "artifact", lambda w, a: (keys.artifact(_artifact_ref(w).workspace_id, _artifact_ref(w).ulid),), ArtifactRow
)
ARTIFACT_BODY = ReadPlan(
    "artifact_body",
    lambda w, a: (keys.artifact_body(_artifact_ref(w).workspace_id, _artifact_ref(w).ulid),),
    ArtifactBodyRow,
)
# What an artifact links to, named by the arguments taskId, projectId and sessionId (nothing read
# for an id of another workspace: the access step's ref check refuses it).
LINKED_TASK = ReadPlan("linked_task", _linked_task_keys, TaskDetailRow)
LINKED_PROJECT = ReadPlan("linked_project", _linked_project_keys, ProjectRow)
LINKED_SESSION = ReadPlan("linked_session", _linked_session_keys, SessionRow)
# The task the target names (its full row: fields, labels, subtask and link counts).
TASK = ReadPlan("task", lambda w, a: (_task_key(w),), TaskDetailRow)
# The comment the target names.
COMMENT = ReadPlan("comment", lambda w, a: (_comment_key(w),), CommentRow)
# The counter of the target task's comments (absent: none yet).
COMMENT_COUNT = ReadPlan("comment_count", lambda w, a: (keys.comment_count(_task_id(w)),), CommentCountRow)
# The subtask the target names.
SUBTASK = ReadPlan("subtask", lambda w, a: (_subtask_key(w),), SubtaskRow)
# The label the target names (nothing read when the target is a board).
LABEL = ReadPlan("label", _label_keys, LabelRow)
# For a label target: the claim on the label name ``args.name`` (whitespace collapsed) on its board.
LABEL_NAME = ReadPlan("label_name", _label_name_keys, LabelNameRow)
# The board's entry in its workspace (archived or not; absent: the board is gone).
BOARD_ENTRY = ReadPlan("board_entry", lambda w, a: (_entry_key(w),), BoardEntryRow)
# The counter of the target task's attachments (absent: none yet).
ATTACHMENT_COUNT = ReadPlan("attachment_count", lambda w, a: (keys.attachment_count(_task_id(w)),), AttachmentCountRow)
# The members of the target's workspace among the users ``args.userIds`` names (the caller's own
# member item is not among them: the access step keeps it for ``ctx.member``).
USER_MEMBERS = ManyReadPlan("user_members", _user_member_keys, MemberRow)
# The entries of the target workspace's boards that ``args.boardIds`` names (absent ones left out).
BOARD_ENTRIES = ManyReadPlan("board_entries", _listed_entry_keys, BoardEntryRow)
# The link counter of the target task (absent: no links yet).
LINK_COUNT = ReadPlan("link_count", lambda w, a: (keys.link_count(_task_id(w)),), LinkCountRow)
# Edge tools (arguments toTaskId and kind; the target is the source task): the other task, its
# board's entry, the stored edge target -> other of that kind, and the other task's link counter;
# all absent for another workspace's task.
TO_TASK = ReadPlan("to_task", _to_task_keys, TaskDetailRow)
TO_BOARD_ENTRY = ReadPlan("to_board_entry", _to_entry_keys, BoardEntryRow)
EDGE = ReadPlan("edge", _edge_keys, LinkRow)
TO_LINK_COUNT = ReadPlan("to_link_count", _to_link_count_keys, LinkCountRow)
# The workspace's link graph version, read only for a dependency kind (args.kind BLOCKS, DEPENDS_ON).
LINK_GRAPH = ReadPlan("link_graph", _link_graph_keys, LinkGraphRow)


# projects, sessions (issue 27)
def _project_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The target's project (nothing for get_project's workspace + slug alternative).
    return (keys.project(where.workspace_id, where.project_id),) if where.project_id else ()


def _project_slug_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # For a workspace target: the claim on args.slug, else on the slug args.name derives.
    from domain.store.workspaces import slugify

    if where.project_id:
        return ()
    slug = getattr(args, "slug", None) or slugify(getattr(args, "name", None) or "")
    return (keys.project_slug_claim(where.workspace_id, slug),)


def _parent_project_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The project args.parentId names, when it lies in the target's workspace.
    ref = ids.parse_project(getattr(args, "parentId", None) or "")
    return (keys.project(where.workspace_id, ref[1]),) if ref and ref[0] == where.workspace_id else ()


def _owner_member_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The member item of the user args.ownerId names, in the target's workspace.
    owner = getattr(args, "ownerId", None)
    return (keys.member(where.workspace_id, owner),) if owner else ()


def _project_link_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The target project's link to (args.targetType, args.stored_target_id): the input model
    # gives the target id as stored (a repository normalised), None for one it refuses.
    stored = getattr(args, "stored_target_id", None)
    if not where.project_id or not stored:
        return ()
    return (keys.project_link(where.project_id, args.targetType, stored),)


def _link_target(where: Where, args: Any, kind: str) -> str:
    # args.targetId when args.targetType is ``kind`` ("" otherwise).
    return (getattr(args, "targetId", None) or "").strip() if getattr(args, "targetType", None) == kind else ""


def _link_board_keys(where: Where, args: Any) -> tuple[Key, ...]:
    from domain.store.board_entry import entry_key

    board = ids.parse_board(_link_target(where, args, "BOARD"))
    return (entry_key(board[1]),) if board and board[0] == where.workspace_id else ()


def _link_task_keys(where: Where, args: Any) -> tuple[Key, ...]:
    ref = ids.parse_task(_link_target(where, args, "TASK"))
    return (keys.task_full(ref.board_id, ref.number),) if ref and ref.workspace_id == where.workspace_id else ()


def _session_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The target's session (nothing for attach_agent_session's project alternative).
    return (keys.session(where.session.workspace_id, where.session.ulid),) if where.session else ()


def _thread_claim_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The claim on the provider thread args.provider + args.threadId names.
    return (keys.session_binding_claim(args.provider, args.threadId),)


def _continued_session_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The session args.continuesSessionId names, when it lies in the target's workspace.
    ref = ids.parse_session(getattr(args, "continuesSessionId", None) or "")
    return (keys.session(where.workspace_id, ref.ulid),) if ref and ref.workspace_id == where.workspace_id else ()


def _gate_project_id(where: Where, args: Any) -> str | None:
    # The project a session's repository gate judges: the target project, else (a session
    # target) the one args.projectId names in the target's workspace when args names the
    # repository too (args.stored_repo: the input model's normalised repo, None without one).
    if where.project_id:
        return where.project_id
    ref = ids.parse_project(getattr(args, "projectId", None) or "")
    if ref and ref[0] == where.workspace_id and getattr(args, "stored_repo", None):
        return ref[1]
    return None


def _gate_project_keys(where: Where, args: Any) -> tuple[Key, ...]:
    project_id = _gate_project_id(where, args)
    return (keys.project(where.workspace_id, project_id),) if project_id else ()


def _gate_link_keys(where: Where, args: Any) -> tuple[Key, ...]:
    project_id, repo = _gate_project_id(where, args), getattr(args, "stored_repo", None)
    return (keys.project_link(project_id, "REPO", repo),) if project_id and repo else ()


def _gate_workspace_keys(where: Where, args: Any) -> tuple[Key, ...]:
    return (keys.workspace_head(where.workspace_id),) if _gate_project_id(where, args) else ()


# The project the target names (its head; nothing read when the target is a workspace).
PROJECT = ReadPlan("project", _project_keys, ProjectRow)
# For a workspace target: the claim on the project slug args.slug (else the one args.name derives).
PROJECT_SLUG = ReadPlan("project_slug", _project_slug_keys, ProjectSlugRow)
# The project args.parentId names (nothing read for another workspace's id).
PARENT_PROJECT = ReadPlan("parent_project", _parent_project_keys, ProjectRow)
# The member of the target's workspace that args.ownerId names (absent for the caller, like
# user_member: the access step keeps the caller's own member item for ``ctx.member``).
OWNER_MEMBER = ReadPlan("owner_member", _owner_member_keys, MemberRow)
# The target project's link to the target args names, when it exists.
PROJECT_LINK = ReadPlan("project_link", _project_link_keys, ProjectLinkRow)
# What a BOARD or TASK project link would point at: the board's entry, the task (in the target's
# workspace; nothing read for another type).
LINK_BOARD_ENTRY = ReadPlan("link_board_entry", _link_board_keys, BoardEntryRow)
LINK_TASK = ReadPlan("link_task", _link_task_keys, TaskDetailRow)
# The agent session the target names (its head; nothing read when the target is a project).
SESSION = ReadPlan("session", _session_keys, SessionRow)
# The binding claim on the provider thread args.provider + args.threadId (absent: never bound).
THREAD_CLAIM = ReadPlan("thread_claim", _thread_claim_keys, SessionClaimRow)
# The session args.continuesSessionId names (nothing read for another workspace's id).
CONTINUED_SESSION = ReadPlan("continued_session", _continued_session_keys, SessionRow)
# A session's repository gate, when the arguments name its repository (``args.stored_repo``): the
# project (the target project, or args.projectId beside a session target), its REPO link to the
# repository, and the workspace head (its defaultRepo and repoLinkCount). Nothing read without a
# project; the link not without a repository.
GATE_PROJECT = ReadPlan("gate_project", _gate_project_keys, ProjectRow)
GATE_LINK = ReadPlan("gate_link", _gate_link_keys, ProjectLinkRow)
GATE_WORKSPACE = ReadPlan("gate_workspace", _gate_workspace_keys, WorkspaceRow)


# coordination (issue 27): the mj_* tools target a workspace and name their items by snake_case
# arguments; an id of another workspace reads nothing (the ref check, or the handler, refuses it).
def _arg_task(where: Where, args: Any, field: str) -> ids.TaskRef | None:
    ref = ids.parse_task(getattr(args, field, None) or "")
    return ref if ref is not None and ref.workspace_id == where.workspace_id else None


def _arg_task_keys(field: str) -> Callable[[Where, Any], tuple[Key, ...]]:
    def wanted(where: Where, args: Any) -> tuple[Key, ...]:
        ref = _arg_task(where, args, field)
        return (keys.task_full(ref.board_id, ref.number),) if ref else ()

    return wanted


def _claim_head_keys(where: Where, args: Any) -> tuple[Key, ...]:
    ref = _arg_task(where, args, "task_id")
    return (keys.claim_head(ids.task_id(ref.board_id, ref.number)),) if ref else ()


_ACTOR_FIELDS = ("assignee_actor_id", "to_actor_id", "reviewer_actor_id")


def _actor_member_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The first of the actor arguments the input carries (no mj_* input has two).
    user_id = next((v for f in _ACTOR_FIELDS if (v := getattr(args, f, None))), None)
    return (keys.member(where.workspace_id, user_id),) if user_id and ids.parse_user(user_id) else ()


def _into_column_keys(where: Where, args: Any) -> tuple[Key, ...]:
    p = ids.parse_column(getattr(args, "column_id", None) or "")
    return (keys.column(p[1], p[2]),) if p and p[0] == where.workspace_id else ()


def _peer_request_keys(where: Where, args: Any) -> tuple[Key, ...]:
    ref = ids.parse_request(getattr(args, "request_id", None) or "")
    return (keys.peer_request(ref.task_id, ref.ulid),) if ref and ref.task.workspace_id == where.workspace_id else ()


def _review_keys(where: Where, args: Any) -> tuple[Key, ...]:
    ref = ids.parse_review(getattr(args, "review_id", None) or "")
    return (keys.review(ref.task_id, ref.ulid),) if ref and ref.task.workspace_id == where.workspace_id else ()


def _integration_keys(where: Where, args: Any) -> tuple[Key, ...]:
    ref = ids.parse_integration(getattr(args, "integration_id", None) or "")
    return (keys.integration(ref.task_id, ref.ulid),) if ref and ref.task.workspace_id == where.workspace_id else ()


def _agent_session_keys(where: Where, args: Any) -> tuple[Key, ...]:
    ref = ids.parse_session(getattr(args, "session_id", None) or "")
    return (keys.session(ref.workspace_id, ref.ulid),) if ref and ref.workspace_id == where.workspace_id else ()


def _consultation_keys(where: Where, args: Any) -> tuple[Key, ...]:
    ref = ids.parse_consultation(getattr(args, "consultation_id", None) or "")
    return (keys.consultation(*ref),) if ref and ref[0] == where.workspace_id else ()


# The task args.task_id names, and the helper task args.helper_task_id names (full rows).
WORK_TASK = ReadPlan("work_task", _arg_task_keys("task_id"), TaskDetailRow)
HELPER_TASK = ReadPlan("helper_task", _arg_task_keys("helper_task_id"), TaskDetailRow)
# The claims head of the task args.task_id names (absent: never claimed).
CLAIM_HEAD = ReadPlan("claim_head", _claim_head_keys, ClaimHeadRow)
# The member the actor argument names (assignee_actor_id, to_actor_id or reviewer_actor_id).
ACTOR_MEMBER = ReadPlan("actor_member", _actor_member_keys, MemberRow)
# The column args.column_id names (where a create puts its task).
INTO_COLUMN = ReadPlan("into_column", _into_column_keys, ColumnRow)
# The coordination items the arguments name: request_id, review_id, integration_id, session_id
# (an agent session head), consultation_id.
PEER_REQUEST = ReadPlan("peer_request", _peer_request_keys, PeerRequestRow)
REVIEW = ReadPlan("review", _review_keys, ReviewRow)
INTEGRATION = ReadPlan("integration", _integration_keys, IntegrationRow)
AGENT_SESSION = ReadPlan("agent_session", _agent_session_keys, SessionRow)
CONSULTATION = ReadPlan("consultation", _consultation_keys, ConsultationRow)


# tasks, bulk, search (issue 27)
def _column_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # The column the target names (create_task, bulk_create_tasks); nothing for another target.
    return (keys.column(_board(where), where.column_id),) if where.column_id else ()


def _task_number_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # get_task by workspaceId + number: the workspace's pointer item for that key number (the
    # target names no task yet); nothing when the target names a task.
    return (keys.task_number(where.workspace_id, getattr(args, "number", 0) or 0),) if where.task is None else ()


def _task_if_named_keys(where: Where, args: Any) -> tuple[Key, ...]:
    return (_task_key(where),) if where.task is not None else ()


def _anchor_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # move_task's anchor (args.beforeTaskId, else args.afterTaskId): its compact row, when it is a
    # task of the target's board (another board's is refused by the access step's ref check).
    anchor = ids.parse_task(getattr(args, "beforeTaskId", None) or getattr(args, "afterTaskId", None) or "")
    return (keys.task_compact(anchor.board_id, anchor.number),) if anchor and anchor.board_id == where.board_id else ()


def _query_number_keys(where: Where, args: Any) -> tuple[Key, ...]:
    # search_tasks: the pointer of the task number when args.query is exactly a task key (ST-42);
    # the tool checks the key's prefix against the workspace head.
    key = ids.parse_task_key(getattr(args, "query", None) or "")
    return (keys.task_number(where.workspace_id, key[1]),) if key else ()


# The column the target names (its lastRank, count, WIP limit; archived or not).
COLUMN = ReadPlan("column", _column_keys, ColumnRow)
# get_task's workspaceId + number form: the pointer from that key number to its task id.
TASK_NUMBER = ReadPlan("task_number", _task_number_keys, TaskNumberRow)
# The task the target names, when it names one (get_task's either target: nothing read for the
# workspaceId + number form, whose task is known only from its pointer).
TASK_IF_NAMED = ReadPlan("task_if_named", _task_if_named_keys, TaskDetailRow)
# move_task's anchor task (beforeTaskId or afterTaskId) on the target's board: its compact row.
ANCHOR_TASK = ReadPlan("anchor_task", _anchor_keys, TaskRow)
# search_tasks: the pointer of the task number its query names, when the query is a task key.
QUERY_TASK_NUMBER = ReadPlan("query_task_number", _query_number_keys, TaskNumberRow)

PLANS: dict[str, ReadPlan[Any] | ManyReadPlan[Any]] = {
    p.name: p
    for p in (
        WORKSPACE,
        USER_MEMBER,
        INVITATION,
        ARTIFACT,
        ARTIFACT_BODY,
        LINKED_TASK,
        LINKED_PROJECT,
        LINKED_SESSION,
        TASK,
        COMMENT,
        COMMENT_COUNT,
        SUBTASK,
        LABEL,
        LABEL_NAME,
        BOARD_ENTRY,
        BOARD_ENTRIES,
        ATTACHMENT_COUNT,
        USER_MEMBERS,
        LINK_COUNT,
        TO_TASK,
        TO_BOARD_ENTRY,
        EDGE,
        TO_LINK_COUNT,
        LINK_GRAPH,
        # projects, sessions (issue 27)
        PROJECT,
        PROJECT_SLUG,
        PARENT_PROJECT,
        OWNER_MEMBER,
        PROJECT_LINK,
        LINK_BOARD_ENTRY,
        LINK_TASK,
        SESSION,
        THREAD_CLAIM,
        CONTINUED_SESSION,
        GATE_PROJECT,
        GATE_LINK,
        GATE_WORKSPACE,
        # coordination (issue 27)
        WORK_TASK,
        HELPER_TASK,
        CLAIM_HEAD,
        ACTOR_MEMBER,
        INTO_COLUMN,
        PEER_REQUEST,
        REVIEW,
        INTEGRATION,
        AGENT_SESSION,
        CONSULTATION,
        # tasks, bulk, search (issue 27)
        COLUMN,
        TASK_NUMBER,
        TASK_IF_NAMED,
        ANCHOR_TASK,
        QUERY_TASK_NUMBER,
    )
}


def plan_keys(names: Iterable[str], where: Where, args: Any) -> tuple[Key, ...]:
    """The keys of every named plan for this target and these arguments, each once, in order."""
    return tuple(dict.fromkeys(k for name in names for k in PLANS[name].keys(where, args)))


class Reads:
    """The results of a call's declared plans (``ctx.read``): one typed property per plan,
    ``None`` when the item is absent. Reading a plan the spec did not declare is a programming
    error (it was not fetched) and raises :class:`PlanError`."""

    def __init__(
        self,
        declared: Iterable[str] = (),
        fetched: Mapping[Key, Any] | None = None,
        where: Any = None,
        args: Any = None,
    ) -> None:
        self._declared = frozenset(declared)
        self._fetched: Mapping[Key, Any] = fetched if fetched is not None else {}
        self._where = where
        self._args = args
        # Whether the items were read eventually consistent (domain.targets.Prefetch.eventual):
        # the handler then checks them against their freshness witness (domain.store.witness).
        self.eventual = False

    def _get(self, plan: ReadPlan[R]) -> R | None:
        if plan.name not in self._declared:
            raise PlanError(f"read plan {plan.name!r} was not declared in the tool's reads")
        return plan.result(self._fetched, self._where, self._args)

    def _get_many(self, plan: ManyReadPlan[R]) -> list[R]:
        if plan.name not in self._declared:
            raise PlanError(f"read plan {plan.name!r} was not declared in the tool's reads")
        return plan.results(self._fetched, self._where, self._args)

    @property
    def workspace(self) -> WorkspaceRow | None:
        return self._get(WORKSPACE)

    @property
    def user_member(self) -> MemberRow | None:
        return self._get(USER_MEMBER)

    @property
    def invitation(self) -> InvitationRow | None:
        return self._get(INVITATION)

    @property
    def artifact(self) -> ArtifactRow | None:
        return self._get(ARTIFACT)

    @property
    def artifact_body(self) -> ArtifactBodyRow | None:
        return self._get(ARTIFACT_BODY)

    @property
    def linked_task(self) -> TaskDetailRow | None:
        return self._get(LINKED_TASK)

    @property
    def linked_project(self) -> ProjectRow | None:
        return self._get(LINKED_PROJECT)

    @property
    def linked_session(self) -> SessionRow | None:
        return self._get(LINKED_SESSION)

    @property
    def task(self) -> TaskDetailRow | None:
        return self._get(TASK)

    @property
    def comment(self) -> CommentRow | None:
        return self._get(COMMENT)

    @property
    def comment_count(self) -> CommentCountRow | None:
        return self._get(COMMENT_COUNT)

    @property
    def subtask(self) -> SubtaskRow | None:
        return self._get(SUBTASK)

    @property
    def label(self) -> LabelRow | None:
        return self._get(LABEL)

    @property
    def label_name(self) -> LabelNameRow | None:
        return self._get(LABEL_NAME)

    @property
    def board_entry(self) -> BoardEntryRow | None:
        return self._get(BOARD_ENTRY)

    @property
    def attachment_count(self) -> AttachmentCountRow | None:
        return self._get(ATTACHMENT_COUNT)

    @property
    def board_entries(self) -> list[BoardEntryRow]:
        return self._get_many(BOARD_ENTRIES)

    @property
    def user_members(self) -> list[MemberRow]:
        return self._get_many(USER_MEMBERS)

    @property
    def link_count(self) -> LinkCountRow | None:
        return self._get(LINK_COUNT)

    @property
    def to_task(self) -> TaskDetailRow | None:
        return self._get(TO_TASK)

    @property
    def to_board_entry(self) -> BoardEntryRow | None:
        return self._get(TO_BOARD_ENTRY)

    @property
    def edge(self) -> LinkRow | None:
        return self._get(EDGE)

    @property
    def to_link_count(self) -> LinkCountRow | None:
        return self._get(TO_LINK_COUNT)

    @property
    def link_graph(self) -> LinkGraphRow | None:
        return self._get(LINK_GRAPH)

    # projects, sessions (issue 27)
    @property
    def project(self) -> ProjectRow | None:
        return self._get(PROJECT)

    @property
    def project_slug(self) -> ProjectSlugRow | None:
        return self._get(PROJECT_SLUG)

    @property
    def parent_project(self) -> ProjectRow | None:
        return self._get(PARENT_PROJECT)

    @property
    def owner_member(self) -> MemberRow | None:
        return self._get(OWNER_MEMBER)

    @property
    def project_link(self) -> ProjectLinkRow | None:
        return self._get(PROJECT_LINK)

    @property
    def link_board_entry(self) -> BoardEntryRow | None:
        return self._get(LINK_BOARD_ENTRY)

    @property
    def link_task(self) -> TaskDetailRow | None:
        return self._get(LINK_TASK)

    @property
    def session(self) -> SessionRow | None:
        return self._get(SESSION)

    @property
    def thread_claim(self) -> SessionClaimRow | None:
        return self._get(THREAD_CLAIM)

    @property
    def continued_session(self) -> SessionRow | None:
        return self._get(CONTINUED_SESSION)

    @property
    def gate_project(self) -> ProjectRow | None:
        return self._get(GATE_PROJECT)

    @property
    def gate_link(self) -> ProjectLinkRow | None:
        return self._get(GATE_LINK)

    @property
    def gate_workspace(self) -> WorkspaceRow | None:
        return self._get(GATE_WORKSPACE)

    # coordination (issue 27)
    @property
    def args(self) -> Any:
        """The validated arguments the plans were read for (a spec's ``replay`` gets no others)."""
        return self._args

    @property
    def work_task(self) -> TaskDetailRow | None:
        return self._get(WORK_TASK)

    @property
    def helper_task(self) -> TaskDetailRow | None:
        return self._get(HELPER_TASK)

    @property
    def claim_head(self) -> ClaimHeadRow | None:
        return self._get(CLAIM_HEAD)

    @property
    def actor_member(self) -> MemberRow | None:
        return self._get(ACTOR_MEMBER)

    @property
    def into_column(self) -> ColumnRow | None:
        return self._get(INTO_COLUMN)

    @property
    def peer_request(self) -> PeerRequestRow | None:
        return self._get(PEER_REQUEST)

    @property
    def review(self) -> ReviewRow | None:
        return self._get(REVIEW)

    @property
    def integration(self) -> IntegrationRow | None:
        return self._get(INTEGRATION)

    @property
    def agent_session(self) -> SessionRow | None:
        return self._get(AGENT_SESSION)

    @property
    def consultation(self) -> ConsultationRow | None:
        return self._get(CONSULTATION)

    # tasks, bulk, search (issue 27)
    @property
    def column(self) -> ColumnRow | None:
        return self._get(COLUMN)

    @property
    def task_number(self) -> TaskNumberRow | None:
        return self._get(TASK_NUMBER)

    @property
    def task_if_named(self) -> TaskDetailRow | None:
        return self._get(TASK_IF_NAMED)

    @property
    def anchor_task(self) -> TaskRow | None:
        return self._get(ANCHOR_TASK)

    @property
    def query_task_number(self) -> TaskNumberRow | None:
        return self._get(QUERY_TASK_NUMBER)


__all__ = [
    "ACTOR_MEMBER",
    "AGENT_SESSION",
    "ANCHOR_TASK",
    "ARTIFACT",
    "ARTIFACT_BODY",
    "ATTACHMENT_COUNT",
    "BOARD_ENTRIES",
    "BOARD_ENTRY",
    "CLAIM_HEAD",
    "COLUMN",
    "COMMENT",
    "COMMENT_COUNT",
    "CONSULTATION",
    "CONTINUED_SESSION",
    "EDGE",
    "GATE_LINK",
    "GATE_PROJECT",
    "GATE_WORKSPACE",
    "HELPER_TASK",
    "INTEGRATION",
    "INTO_COLUMN",
    "INVITATION",
    "LABEL",
    "LABEL_NAME",
    "LINKED_PROJECT",
    "LINKED_SESSION",
    "LINKED_TASK",
    "LINK_BOARD_ENTRY",
    "LINK_COUNT",
    "LINK_GRAPH",
    "LINK_TASK",
    "OWNER_MEMBER",
    "PARENT_PROJECT",
    "PEER_REQUEST",
    "PLANS",
    "PROJECT",
    "PROJECT_LINK",
    "PROJECT_SLUG",
    "QUERY_TASK_NUMBER",
    "REVIEW",
    "SESSION",
    "SUBTASK",
    "TASK",
    "TASK_IF_NAMED",
    "TASK_NUMBER",
    "THREAD_CLAIM",
    "TO_BOARD_ENTRY",
    "TO_LINK_COUNT",
    "TO_TASK",
    "USER_MEMBER",
    "USER_MEMBERS",
    "WORKSPACE",
    "WORK_TASK",
    "Activity",
    "Board",
    "BoardEntry",
    "Column",
    "Comment",
    "CompactTask",
    "Invitation",
    "Key",
    "Label",
    "Link",
    "ManyReadPlan",
    "Member",
    "PlanError",
    "Project",
    "ProjectLink",
    "ReadPlan",
    "Reads",
    "Session",
    "SessionClaim",
    "Subtask",
    "Task",
    "TaskNumber",
    "Where",
    "Workspace",
    "plan_keys",
    "row_values",
]
