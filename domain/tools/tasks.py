"""Task tools: create_task, get_task, update_task, move_task, archive_task, list_tasks.

A task is two items in its board's partition — the compact row (snapshots, lists, GSI1 column
order) and the full item (description and everything else) — written together by
:func:`domain.store.tasks.put_rows`. Every edit is a compare-and-set on ``updatedAt`` (the
value just read, or the caller's ``expectedUpdatedAt``); a failed condition returns the stored
item, so a CONFLICT carries the current task with no extra read. docs/data-model.md derives
each request budget.
"""

from typing import Annotated, Any

from fractional_indexing import generate_key_between
from pydantic import Field

from domain import clock, errors, ids
from domain.access import Located, Prefetch, Ref, either, target
from domain.context import CallContext
from domain.errors import ErrorCode
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import activity as activity_store
from domain.store import boards as board_store
from domain.store import columns as column_store
from domain.store import links as link_store
from domain.store import parallel, warm
from domain.store import subtasks as subtask_store
from domain.store import tasks as task_store
from domain.store.cas import Step, Unchanged
from domain.store.db import Missing
from domain.store.paging import decode_cursor, encode_cursor, list_kind, take_page
from domain.store.reads import Column, Task
from domain.text import has_visible
from domain.tools.args import (
    ColumnIdArg,
    CursorArg,
    DescriptionArg,
    DueAfterFilter,
    DueBeforeFilter,
    DueDateArg,
    ExpectedUpdatedAtArg,
    IdempotencyKeyArg,
    IdShape,
    LabelNameFilter,
    LimitArg,
    NewDueDateArg,
    OverdueFilter,
    Priority,
    Redact,
    ResponseFormat,
    SingleLine,
    TaskIdArg,
    TitleArg,
    UpdatedSinceFilter,
    null_rule,
    redactions_field,
    requested_changes,
)
from domain.tools.views import (
    ActivityView,
    ChangedFields,
    SubtaskView,
    TaskDetailView,
    TaskLinksView,
    TaskRowView,
    activity_view,
    subtask_view,
    task_detail_view,
    task_links_view,
    task_row_view,
)

MAX_FILTERED_PAGES = 5
DETAILED_PAGE_CAP = 10


def _wip_notice(column: Column, count: int) -> str | None:
    """The notice of a create or move that leaves ``column`` holding ``count`` tasks, over its WIP limit."""
    limit = int(column.wipLimit) if column.wipLimit is not None else None
    if limit is None or count <= limit:
        return None
    return (
        f"Column {column.name!r} now holds {count} tasks, over its work-in-progress limit of {limit}. The task was placed "
        "anyway; finish or move work out of the column to get back under the limit."
    )


def task_reads(where: Located, args: Any) -> Prefetch:
    """A task tool's first queries, started with the membership check: the board header (column
    names) as a parallel Query (and get_task's sidecar). The items it reads first (the task's full
    item, move_task's anchor, the board's entry for the writes) are its read plans (``reads``), in
    the membership BatchGetItem."""
    if where.task is None:  # get_task by workspaceId + number: the board is known only from the pointer
        return Prefetch()
    board_id = where.board()
    queries: list[tuple[str, Any]] = [("header", lambda: board_store.header(board_id))]
    if getattr(args, "response_format", None) == "detailed":
        task_id = where.ident
        # get_task's links, subtasks and newest activity (the task's recent item): one Query
        queries.append(("sidecar", lambda: task_store.sidecar(task_id)))
    return Prefetch(queries=tuple(queries))


def get_task_reads(where: Located, args: Any) -> Prefetch:
    """get_task's first reads: :func:`task_reads`, with the column names from the warm process's
    board columns (:func:`domain.store.boards.column_list`) instead of a header Query while they
    are within the warm bound."""
    plan = task_reads(where, args)
    if where.task is None:
        return plan
    board_id = where.board()
    detailed = getattr(args, "response_format", None) == "detailed"
    return Prefetch(
        queries=tuple(
            ("header", lambda: (None, board_store.column_list(board_id))) if name == "header" else (name, fn)
            for name, fn in plan.queries
            if name != "header" or warm.COLUMNS.get(board_id) is None
        ),
        # detailed: the side items' Query (strongly consistent) carries the task's freshness
        # witness, so its full item may be read eventually consistent (get_task checks it)
        eventual=(task_store.full_key(where.task),) if detailed else (),
    )


def _load(ctx: CallContext) -> Task:
    """The full item of the call's target task (read with the membership; read again when that
    read found none); NOT_FOUND when absent."""
    where = ctx.target
    detail = ctx.read.task or task_store.get(where.task_ref())
    if detail is None:
        raise errors.not_found("task", where.ident)
    return detail


def _column_names(ctx: CallContext) -> dict[str, str]:
    """Column id -> name for the target's board, from the header Query started with the membership."""
    board_id = ctx.target.board()
    _, columns = ctx.query("header", lambda: board_store.header(board_id))
    return {c.columnId: c.name for c in columns}


def _warm_column_names(ctx: CallContext) -> dict[str, str]:
    """:func:`_column_names` from the warm process's column list when it holds the board
    (:func:`get_task_reads` then sent no header Query): for an edit that needs the names only to
    answer (update_task), never for one that writes by them (moves read ``lastRank`` fresh)."""
    board_id = ctx.target.board()
    _, columns = ctx.query("header", lambda: (None, board_store.column_list(board_id)))
    return {c.columnId: c.name for c in columns}


def _current(detail: Task, names: dict[str, str]) -> dict[str, Any]:
    return task_detail_view(detail, names.get(detail.columnId)).model_dump(mode="json")


def _stale(ctx: CallContext, detail: Task, names: dict[str, str]) -> None:
    # the spec's cas="expectedUpdatedAt" check, judged on the row the write is conditioned on
    ctx.still_current(
        "task",
        detail.updatedAt,
        lambda: _current(detail, names),
        hint="Merge your change into error.current and call again with its updatedAt.",
    )


# -- create_task -----------------------------------------------------------------------------
class CreateTaskInput(ToolInput):
    columnId: ColumnIdArg
    title: TitleArg
    description: DescriptionArg
    priority: Priority = Field(default="NONE")
    dueDate: DueDateArg
    idempotencyKey: IdempotencyKeyArg


class TaskOutput(ToolOutput):
    task: TaskDetailView
    notice: str | None = Field(
        default=None,
        description="create_task/move_task: set when the task's column is now over its work-in-progress limit.",
    )


class CreateTaskOutput(TaskOutput):
    redactions: list[str] = redactions_field()


@tool(
    "create_task",
    title="Create task",
    description=(
        "Adds a task at the bottom of a column; returns it with its key (e.g. ST-42). Over a WIP limit only adds a "
        "notice."
    ),
    area="tasks",
    scope="write",
    keyed=True,
    replay=lambda ctx, task_id: _replay_task(task_id),
    target=target("columnId", "column"),
    min_role="MEMBER",
    open_board=True,
    reads=("column",),
    input_model=CreateTaskInput,
    output_model=CreateTaskOutput,
)
def create_task(ctx: CallContext, args: CreateTaskInput) -> TaskOutput:
    where = ctx.target
    title = args.title.strip()
    if not has_visible(title):
        raise errors.invalid("title", "must contain visible characters")

    def build_detail(wsrow: Any, column: Any, number: int, rank: str) -> Task:
        return task_store.new_detail(
            workspace_prefix=wsrow.taskPrefix,
            board_id=where.board(),
            column_id=where.column(),
            number=number,
            rank=rank,
            title=title,
            priority=args.priority,
            due=args.dueDate,
            description=args.description or "",
            created_by=ctx.user_id,
        )

    def activity_for(detail: Task, column: Any) -> Any:
        return ctx.activity(
            where.workspace_id,
            where.board(),
            "task.created",
            f"Created {detail.key} {title!r} in {column.name!r}",
            task_id=detail.taskId,
            data={"columnId": where.column_id},
            at=detail.createdAt,
        )

    try:
        detail, column = task_store.create(
            workspace_id=where.workspace_id,
            board_id=where.board(),
            column_id=where.column(),
            actor_id=ctx.user_id,
            build_detail=build_detail,
            activity_for=activity_for,
            marker=ctx.marker,
            first_column=ctx.read.column,
        )
    except task_store.ColumnArchived:
        raise errors.invalid(
            "columnId", "this column is archived", "Create the task in an active column (list_columns)."
        ) from None
    except board_store.BoardArchived:
        raise errors.board_archived("columnId") from None
    except Missing:
        raise errors.not_found("column", args.columnId) from None
    if column is None:
        return CreateTaskOutput(task=task_detail_view(detail, None))
    return CreateTaskOutput(
        task=task_detail_view(detail, column.name), notice=_wip_notice(column, int(column.taskCount or 0) + 1)
    )


def _replay_task(task_id: str) -> CreateTaskOutput:
    """The task an earlier create_task with the same idempotencyKey made (its marker named it), as
    it is stored now."""
    ref = ids.parse_task(task_id)
    found = task_store.get(ref) if ref else None
    if found is None:
        raise errors.not_found("task", task_id)
    return CreateTaskOutput(task=task_detail_view(found, task_store.column_name(found.boardId, found.columnId)))


# -- get_task --------------------------------------------------------------------------------
class GetTaskInput(ToolInput):
    taskId: str | None = Field(default=None, max_length=80, description="tk_…")
    workspaceId: str | None = Field(default=None, max_length=64, description="ws_…, with number.")
    number: int | None = Field(default=None, ge=1, le=9_999_999_999, description="Key number (ST-42 -> 42).")
    response_format: ResponseFormat = Field(default="detailed", description="concise: scalars and counts.")


class GetTaskOutput(ToolOutput):
    task: TaskDetailView | TaskRowView
    subtasks: list[SubtaskView] | None = Field(
        description="The task's checklist in order (at most 100); null in concise format."
    )
    links: TaskLinksView | None = Field(
        description="The task's links both ways, with the other tasks' keys, titles and boards; null in concise format."
    )
    recentActivity: list[ActivityView] | None = Field(description="Newest first, up to 10; null in concise format.")


def _locate_task(ctx: CallContext, args: GetTaskInput) -> Located:
    from domain.access import locate

    if args.taskId is not None:
        if args.number is not None or args.workspaceId is not None:
            raise errors.invalid("taskId", "give taskId, or workspaceId + number, not both")
        keyed = errors.task_key_for_id(args.taskId)
        if keyed is not None:
            raise keyed
        return locate(ctx, "task", args.taskId)
    if args.number is None or args.workspaceId is None:
        raise errors.invalid("taskId", "is required unless workspaceId and number are both given")
    ws = ctx.workspace_argument(args.workspaceId)
    return Located("task", errors.TaskNumber(ws, args.number), ws)


@tool(
    "get_task",
    title="Get task",
    description=(
        "One task by taskId or workspaceId + key number; detailed (default) adds description, subtasks, links, last 10 "
        "activities."
    ),
    area="tasks",
    scope="read",
    read_only=True,
    fields_of="task",
    target=either(("taskId", "task"), ("workspaceId", "workspace", {"number": 1}), resolve=_locate_task),
    min_role="MEMBER",
    reads=("task_number", "task_if_named"),
    prefetch=get_task_reads,
    input_model=GetTaskInput,
    output_model=GetTaskOutput,
)
def get_task(ctx: CallContext, args: GetTaskInput) -> GetTaskOutput:
    where = ctx.target
    if where.task is None:
        pointer = ctx.read.task_number
        ref = ids.parse_task(pointer.taskId) if pointer is not None else None
        if pointer is None or ref is None or ref.workspace_id != where.workspace_id:
            raise errors.not_found("task", where.ident)
        # The board is known only now: its reads go out together, still one round trip.
        task_id = pointer.taskId
        header = parallel.submit(board_store.header, ref.board_id)
        detailed = args.response_format == "detailed"
        side = parallel.submit(task_store.sidecar, task_id) if detailed else None
        detail = task_store.get(ref)
        columns = header.result()[1]
        sidecar = side.result() if side is not None else None
    else:
        task_id = where.ident
        detail = ctx.read.task_if_named
        columns = ctx.query("header", lambda: (None, board_store.column_list(where.board())))[1]
        sidecar = ctx.query("sidecar") if args.response_format == "detailed" else None
        if ctx.read.eventual:  # a stale read of the full item is read again, strongly
            detail = task_store.witnessed(detail, sidecar or [], where.task)
        if detail is None:
            # bulk_create_tasks writes the compact rows first and the full items in a second
            # transaction (docs/data-model.md, "Bulk writes"): meanwhile the compact row answers.
            compact = task_store.get_compact(where.task)
            if compact is None:
                raise errors.not_found("task", task_id)
            name = next((c.name for c in columns if c.columnId == compact.columnId), None)
            detailed = args.response_format == "detailed"
            recent = _recent_activity(task_id, sidecar or [], compact.createdAt) if detailed else None
            return GetTaskOutput(
                task=task_row_view(compact, name),
                subtasks=[] if detailed else None,
                links=task_links_view([]) if detailed else None,
                recentActivity=recent,
            )
    if detail is None:
        raise errors.not_found("task", task_id)
    column_name = next((c.name for c in columns if c.columnId == detail.columnId), None)
    if args.response_format == "concise":
        return GetTaskOutput(task=task_row_view(detail, column_name), subtasks=None, links=None, recentActivity=None)
    # The sidecar rows hold the task's link edges (LN#) and subtasks (ST#); the links' other ends
    # cost one BatchGetItem, only when the task has links.
    subtasks = [subtask_view(s) for s in subtask_store.of(sidecar or [])]
    links = task_links_view(link_store.links_of(sidecar or []))
    return GetTaskOutput(
        task=task_detail_view(detail, column_name),
        subtasks=subtasks,
        links=links,
        recentActivity=_recent_activity(task_id, sidecar or [], detail.createdAt),
    )


def _recent_activity(task_id: str, sidecar: list[Any], created_at: str | None) -> list[ActivityView]:
    """The task's newest entries from its recent item (read with its links and subtasks); a task
    whose item cannot tell (written before the item existed) reads its GSI1 log instead."""
    entries = activity_store.recent_of(sidecar, created_at=created_at)
    if entries is None:
        return [activity_view(a) for a in activity_store.recent_for_task(task_id, activity_store.RECENT_KEEP)]
    ref = ids.parse_task(task_id)
    board_id = ref.board_id if ref is not None else None
    return [
        ActivityView(
            id=e.get("activityId"),
            type=e.get("type"),
            source=e.get("source"),
            actorId=e.get("actorId"),
            at=e.get("at"),
            summary=e.get("summary"),
            boardId=board_id,
            taskId=task_id,
            data=e.get("data"),
        )
        for e in entries
    ]


# -- update_task -----------------------------------------------------------------------------
class UpdateTaskInput(ToolInput):
    taskId: TaskIdArg
    title: Annotated[str | None, Field(default=None, min_length=1, max_length=500), SingleLine, Redact]
    description: Annotated[
        str | None, Field(default=None, max_length=20000, description="Markdown; null empties it."), Redact
    ]
    priority: Priority | None = None
    dueDate: NewDueDateArg
    expectedUpdatedAt: ExpectedUpdatedAtArg


# update_task's null rule (domain.tools.args.requested_changes): the empty value a null asks for.
_CLEARABLE: dict[str, Any] = {"description": "", "dueDate": None}


class UpdateTaskOutput(TaskOutput):
    changedFields: ChangedFields
    redactions: list[str] = redactions_field()


@tool(
    "update_task",
    title="Update task",
    description="Changes a task's fields. " + null_rule(["description", "dueDate"], ["title", "priority"]),
    area="tasks",
    scope="write",
    idempotent=True,
    target=target("taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    reads=("task",),
    prefetch=get_task_reads,  # the column names only name the answer's column: warm ones will do
    cas="expectedUpdatedAt",
    input_model=UpdateTaskInput,
    output_model=UpdateTaskOutput,
)
def update_task(ctx: CallContext, args: UpdateTaskInput) -> UpdateTaskOutput:
    asked = requested_changes(args, clear_to=_CLEARABLE, not_values=("taskId", "expectedUpdatedAt"))
    if not asked:
        raise errors.invalid(
            "arguments",
            "nothing to change",
            "Give at least one of title, description, priority or dueDate (null on title or priority is ignored).",
        )
    if "title" in asked:
        asked["title"] = asked["title"].strip()
        if not has_visible(asked["title"]):
            raise errors.invalid("title", "must contain visible characters")
    where = ctx.target
    current_state = _load(ctx)
    names = _warm_column_names(ctx)

    def plan(current: Task) -> Step[Task, UpdateTaskOutput]:
        _stale(ctx, current, names)
        if current.archivedAt:
            raise errors.invalid(
                "taskId",
                "the task is archived and cannot be edited",
                "Archived tasks are read-only; create a new task if the work continues.",
            )
        detail = task_store.copy(current)
        changes: dict[str, Any] = {}
        for name, value in asked.items():
            stored = getattr(detail, name)
            if name in _CLEARABLE and not stored:
                stored = _CLEARABLE[name]  # an empty stored value equals the empty value asked for
            if stored != value:
                changes[name] = {"from": getattr(detail, name), "to": value}
                setattr(detail, name, value)
        if not changes:
            return Unchanged(
                UpdateTaskOutput(task=task_detail_view(current, names.get(current.columnId)), changedFields=[])
            )
        detail.updatedAt = clock.next_stamp(current.updatedAt)
        data = {k: v for k, v in changes.items() if k != "description"} | (
            {"description": "changed"} if "description" in changes else {}
        )
        act = ctx.activity(
            where.workspace_id,
            where.board(),
            "task.updated",
            f"Updated {detail.key}: {', '.join(sorted(changes))}",
            task_id=detail.taskId,
            data=data,
            at=detail.updatedAt,
        )
        return task_store.write(
            detail,
            current.updatedAt,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity=act,
            result=lambda: UpdateTaskOutput(
                task=task_detail_view(detail, names.get(detail.columnId)), changedFields=list(changes)
            ),
        )

    try:
        return task_store.edit("update_task", current_state, plan)
    except Missing:
        raise errors.not_found("task", args.taskId) from None


# -- move_task -------------------------------------------------------------------------------
class MoveTaskInput(ToolInput):
    taskId: TaskIdArg
    columnId: str | None = Field(default=None, max_length=80, description="cl_…, same board; omit to reorder.")
    beforeTaskId: str | None = Field(default=None, max_length=80, description="tk_… to go above.")
    afterTaskId: str | None = Field(default=None, max_length=80, description="tk_… to go below.")
    expectedUpdatedAt: ExpectedUpdatedAtArg


_SAME_BOARD_TASK = "must be a task on the same board"


@tool(
    "move_task",
    title="Move task",
    description=("Moves a task to a column of its board and/or reorders it (beforeTaskId/afterTaskId, else bottom)."),
    area="tasks",
    scope="write",
    target=target("taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    reads=("task", "anchor_task"),
    prefetch=task_reads,
    refs=(
        Ref(
            "columnId",
            "column",
            within="board",
            error=ErrorCode.INVALID_INPUT,
            message="must be a column of the task's board",
            hint="get_board_snapshot lists the board's columns.",
        ),
        Ref("beforeTaskId", "task", within="board", error=ErrorCode.INVALID_INPUT, message=_SAME_BOARD_TASK),
        Ref("afterTaskId", "task", within="board", error=ErrorCode.INVALID_INPUT, message=_SAME_BOARD_TASK),
    ),
    cas="expectedUpdatedAt",
    input_model=MoveTaskInput,
    output_model=TaskOutput,
)
def move_task(ctx: CallContext, args: MoveTaskInput) -> TaskOutput:
    if args.beforeTaskId and args.afterTaskId:
        raise errors.invalid("beforeTaskId", "give beforeTaskId or afterTaskId, not both")
    anchor_id = args.beforeTaskId or args.afterTaskId
    anchor_field = "beforeTaskId" if args.beforeTaskId else "afterTaskId"
    if anchor_id == args.taskId:
        raise errors.invalid(anchor_field, "cannot place a task relative to itself")
    where = ctx.target
    board_id = where.board()
    anchor_ref = ids.parse_task(anchor_id) if anchor_id else None
    current_state = _load(ctx)
    _, header_columns = ctx.query("header", lambda: board_store.header(board_id))
    names = {c.columnId: c.name for c in header_columns}
    first = [True]

    def reads(dest_id: str) -> tuple[Any, Any]:
        """The destination column and the anchor: from the reads made with the membership on the
        first attempt, read again after a lost race."""
        if first[0]:
            first[0] = False
            column = next((c for c in header_columns if c.columnId == dest_id), None)
            anchor = ctx.read.anchor_task if anchor_ref else None
            return column, anchor
        return task_store.column_and_anchor(board_id, dest_id, anchor_ref.number if anchor_ref else None)

    def plan(current: Task) -> Step[Task, TaskOutput]:
        _stale(ctx, current, names)
        if current.archivedAt:
            raise errors.invalid("taskId", "the task is archived; it cannot be moved")
        dest_id = args.columnId or current.columnId
        column, anchor = reads(dest_id)
        if column is None or column.archivedAt:
            raise errors.invalid("columnId", "is not an active column of this board")
        moving_out = dest_id != current.columnId
        if anchor_ref is not None:
            if anchor is None or anchor.columnId != dest_id:
                raise errors.invalid(anchor_field, "is not a task in the destination column")
            other = task_store.neighbour_rank(
                dest_id, anchor, before=bool(args.beforeTaskId), moving_task=current.taskId
            )
            lo, hi = (other, anchor.rank) if args.beforeTaskId else (anchor.rank, other)
            if lo is not None and hi is not None and lo >= hi:
                lo = None if args.beforeTaskId else lo
                hi = hi if args.beforeTaskId else None
            rank = generate_key_between(lo, hi)
        else:
            if not moving_out and column.lastRank == current.rank:
                return Unchanged(TaskOutput(task=task_detail_view(current, column.name)))  # already at the bottom
            rank = generate_key_between(column.lastRank, None)
        spread = None
        if len(rank) > task_store.MAX_RANK_LENGTH:
            lo_rank, hi_rank = (lo, hi) if anchor_ref is not None else (column.lastRank, None)
            spread = task_store.rebalance(board_id, dest_id, lo_rank, hi_rank, moving_task=current.taskId)
            rank = spread.rank
        moved = task_store.copy(current)
        moved.columnId, moved.rank = dest_id, rank
        moved.updatedAt = clock.next_stamp(current.updatedAt)
        verb = f"Moved {moved.key} to {column.name!r}" if moving_out else f"Reordered {moved.key} in {column.name!r}"
        act = ctx.activity(
            where.workspace_id,
            board_id,
            "task.moved",
            verb,
            task_id=moved.taskId,
            data={"fromColumnId": current.columnId, "toColumnId": dest_id},
            at=moved.updatedAt,
        )
        # A failure without the task's image is the destination column's lastRank moving under
        # us (another move or create won): plan again on the same task state.
        return task_store.write(
            moved,
            current.updatedAt,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity=act,
            result=lambda: TaskOutput(
                task=task_detail_view(moved, column.name),
                notice=_wip_notice(column, int(column.taskCount or 0) + 1) if moving_out else None,
            ),
            extra=task_store.move_extra(
                board_id=board_id, old_column=current.columnId, dest=column, rank=rank, spread=spread
            ),
            replan_on=current,
        )

    try:
        return task_store.edit("move_task", current_state, plan)
    except Missing:
        raise errors.not_found("task", args.taskId) from None


# -- archive_task ----------------------------------------------------------------------------
class ArchiveTaskInput(ToolInput):
    taskId: TaskIdArg


@tool(
    "archive_task",
    title="Archive task",
    description=("Archives a task: gone from board and lists, but key, data and history stay (get_task finds it)."),
    area="tasks",
    scope="write",
    destructive=True,
    target=target("taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    reads=("task",),
    prefetch=task_reads,
    input_model=ArchiveTaskInput,
    output_model=TaskOutput,
)
def archive_task(ctx: CallContext, args: ArchiveTaskInput) -> TaskOutput:
    where = ctx.target
    current_state = _load(ctx)
    names = _column_names(ctx)

    def plan(current: Task) -> Step[Task, TaskOutput]:
        if current.archivedAt:
            return Unchanged(TaskOutput(task=task_detail_view(current, names.get(current.columnId))))
        archived = task_store.copy(current)
        archived.updatedAt = archived.archivedAt = clock.next_stamp(current.updatedAt)
        act = ctx.activity(
            where.workspace_id,
            where.board(),
            "task.archived",
            f"Archived {archived.key}",
            task_id=archived.taskId,
            at=archived.updatedAt,
        )
        return task_store.write(
            archived,
            current.updatedAt,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity=act,
            result=lambda: TaskOutput(task=task_detail_view(archived, names.get(archived.columnId))),
            extra=task_store.archive_extra(board_id=where.board(), column_id=current.columnId),
        )

    try:
        return task_store.edit("archive_task", current_state, plan)
    except Missing:
        raise errors.not_found("task", args.taskId) from None


# -- list_tasks ------------------------------------------------------------------------------


class ListTasksInput(ToolInput):
    boardId: str | None = Field(default=None, max_length=64, description="bd_…")
    columnId: str | None = Field(default=None, max_length=80, description="cl_…")
    assigneeId: Annotated[str | None, IdShape("user", also=("me",))] = Field(
        default=None, max_length=64, description='userId or "me".'
    )
    labelName: LabelNameFilter = None
    priority: Priority | None = None
    dueBefore: DueBeforeFilter = None
    dueAfter: DueAfterFilter = None
    overdue: OverdueFilter = None
    updatedSince: UpdatedSinceFilter = None
    response_format: ResponseFormat = Field(
        default="concise", description="detailed adds description, creator; 10 a page."
    )
    limit: LimitArg
    cursor: CursorArg


class ListTasksOutput(ToolOutput):
    boardId: str
    boardName: str
    columnId: str | None
    columnName: str | None
    tasks: list[TaskDetailView | TaskRowView]
    totalCount: int
    nextCursor: str | None
    notice: str | None


def _locate_list(ctx: CallContext, args: ListTasksInput) -> Located:
    from domain.access import locate

    if not args.boardId and not args.columnId:
        raise errors.invalid("boardId", "give boardId or columnId")
    if args.columnId:
        where = locate(ctx, "column", args.columnId)
        if args.boardId and args.boardId != where.board_id:
            raise errors.invalid("columnId", "is not a column of boardId")
        return where
    return locate(ctx, "board", args.boardId or "")


@tool(
    "list_tasks",
    title="List tasks",
    description=(
        "A board's or column's tasks (boardId or columnId required), optionally filtered; totalCount is exact. Across "
        "boards: list_my_work, search_tasks."
    ),
    area="tasks",
    scope="read",
    read_only=True,
    fields_of="tasks",
    concise=True,
    target=either(("boardId", "board"), ("columnId", "column"), resolve=_locate_list),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(queries=(("header", lambda: board_store.header(where.board_id)),)),
    input_model=ListTasksInput,
    output_model=ListTasksOutput,
)
def list_tasks(ctx: CallContext, args: ListTasksInput) -> ListTasksOutput:
    where = ctx.target
    column_id, board_id = where.column_id, where.board()
    board, columns = ctx.query("header")
    if board is None:
        raise errors.not_found("board", board_id)
    names = {c.columnId: c.name for c in columns}
    live = {c.columnId for c, _ in column_store.ordered(columns)}
    condition = _filter_condition(ctx, args, board_id)
    if condition is not None:
        return _filtered_list(ctx, args, board, names, live, condition)
    # A cursor belongs to its board or column; limit and response_format only shape the page.
    kind = list_kind("tasks", board=board_id, column=column_id)
    # Detailed rows carry descriptions of up to 20,000 characters; a smaller page keeps one
    # answer well under Lambda's 6 MB response limit (the text block repeats the content).
    limit = min(args.limit, DETAILED_PAGE_CAP) if args.response_format == "detailed" else args.limit
    hidden = False
    if column_id:
        col = next((c for c in columns if c.columnId == column_id), None)
        if col is None:
            raise errors.not_found("column", column_id)
        start = decode_cursor(kind, args.cursor, task_store.column_rows_shape(board_id, column_id))
        total = int(col.taskCount or 0)
        result = task_store.column_rows(column_id, limit=limit + 1, start=start)
    else:
        start = decode_cursor(kind, args.cursor, task_store.board_rows_shape(board_id))
        total = sum(int(c.taskCount or 0) for c in columns if c.columnId in live)
        # Tasks of archived columns stay in the partition; when there are any, a server-side
        # filter drops them and up to MAX_FILTERED_PAGES reads fill the page.
        hidden = len(live) < len(columns)
        result = task_store.board_rows(board_id, live_columns=live if hidden else None, limit=limit + 1, start=start)
    page, last_key = take_page(result, limit, index=bool(column_id), max_pages=MAX_FILTERED_PAGES if hidden else None)
    rows = [r for r in task_store.compact_in(page) if column_id or r.columnId in live]
    next_cursor = encode_cursor(kind, last_key)
    if args.response_format == "detailed" and rows:
        details = task_store.details_of(rows)
        tasks: list[Any] = [
            task_detail_view(details[r.taskId], names.get(r.columnId)) for r in rows if r.taskId in details
        ]
    else:
        tasks = [task_row_view(r, names.get(r.columnId)) for r in rows]
    notices = []
    if column_id and column_id not in live:
        notices.append(
            "This column is archived, so its tasks are hidden from the board; move_task can bring one back to an active column."
        )
    if next_cursor and not tasks:
        notices.append(
            "No tasks in this stretch of the board (tasks of archived columns are skipped); pass nextCursor to keep going."
        )
    elif next_cursor:
        notices.append(
            f"Showing {len(tasks)} of {total} task{'s' if total != 1 else ''}; pass nextCursor for the next page."
        )
    if limit < args.limit:
        notices.append(f"Detailed pages hold at most {DETAILED_PAGE_CAP} tasks.")
    notice = " ".join(notices) or None
    return ListTasksOutput(
        boardId=board_id,
        boardName=board.name,
        columnId=column_id,
        columnName=names.get(column_id) if column_id else None,
        tasks=tasks,
        totalCount=total,
        nextCursor=next_cursor,
        notice=notice,
    )


FILTERS = ("assigneeId", "labelName", "priority", "dueBefore", "dueAfter", "overdue", "updatedSince")


class _NoMatch(Exception):
    """A filter no task can match (an unknown label name): the list is empty without a read."""


def _filter_condition(ctx: CallContext, args: ListTasksInput, board_id: str) -> Any:
    """The server-side filter of list_tasks' structured filters (all combined with AND), or None."""
    from domain.store import labels as label_store

    if all(getattr(args, f) is None for f in FILTERS):
        return None
    label_id = None
    if args.labelName is not None:
        # one GetItem on the name claim; an unknown name matches no task
        label_id = label_store.claimed(board_id, args.labelName) or "lb_none"
    return task_store.list_condition(
        assignee=None if args.assigneeId is None else (ctx.user_id if args.assigneeId == "me" else args.assigneeId),
        label_id=label_id,
        priority=args.priority,
        due_before=args.dueBefore,
        due_after=args.dueAfter,
        overdue=args.overdue,
        updated_since=args.updatedSince,
    )


def _filtered_list(
    ctx: CallContext, args: ListTasksInput, board: Any, names: dict[str, str], live: set[str], condition: Any
) -> ListTasksOutput:
    """Filtered list_tasks: the matching rows read to the end (exact totalCount), paged by offset."""
    where = ctx.target
    column_id, board_id = where.column_id, where.board()
    filters = {f: getattr(args, f) for f in FILTERS}
    if filters["assigneeId"] == "me":
        filters["assigneeId"] = ctx.user_id
    kind = list_kind("tasks", board=board_id, column=column_id, **filters)
    start = decode_cursor(kind, args.cursor)
    offset = start.get("offset") if start else 0
    if not isinstance(offset, int) or offset < 0:
        raise errors.invalid(
            "cursor", "is not a cursor this list returned", "Omit cursor to start from the first page."
        )
    hidden = len(live) < len(names)
    rows = task_store.filtered_rows(
        board_id, column_id, condition, live_columns=live if (hidden and not column_id) else None
    )
    total = len(rows)
    limit = min(args.limit, DETAILED_PAGE_CAP) if args.response_format == "detailed" else args.limit
    page = rows[offset : offset + limit]
    next_cursor = encode_cursor(kind, {"offset": offset + limit}) if offset + limit < total else None
    if args.response_format == "detailed" and page:
        details = task_store.details_of(page)
        tasks: list[Any] = [
            task_detail_view(details[r.taskId], names.get(r.columnId)) for r in page if r.taskId in details
        ]
    else:
        tasks = [task_row_view(r, names.get(r.columnId)) for r in page]
    notice = (
        f"Showing {len(tasks)} of {total} matching task{'s' if total != 1 else ''}; pass nextCursor for the next page."
        if next_cursor
        else None
    )
    return ListTasksOutput(
        boardId=board_id,
        boardName=board.name,
        columnId=column_id,
        columnName=names.get(column_id) if column_id else None,
        tasks=tasks,
        totalCount=total,
        nextCursor=next_cursor,
        notice=notice,
    )


TOOLS = (create_task, get_task, update_task, move_task, archive_task, list_tasks)
