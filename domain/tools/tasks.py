"""Task tools: create_task, get_task, update_task, move_task, archive_task, list_tasks.

A task is two items in its board's partition: the compact row ``T#<number>`` (snapshots and
lists; GSI1 ``COL#<column> / <rank>#<number>`` for column order) and the full item
``X#<number>`` (description and everything else). Every write is one transaction that also
writes the activity row; edits are conditioned on the ``updatedAt`` just read (or the caller's
``expectedUpdatedAt``), and a failed condition returns the stored item (``ALL_OLD``) so a
CONFLICT carries the current task with no extra read. docs/data-model.md derives each budget.
"""

from __future__ import annotations

import random
import time
from typing import Annotated, Any

from fractional_indexing import generate_key_between
from pydantic import AfterValidator, Field

from domain import clock, errors, ids
from domain.context import CallContext
from domain.idempotency import creation_marker, earlier_entity, put_marker
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import db
from domain.store.models import (
    ActivityRow,
    BoardRow,
    ColumnRow,
    Row,
    TaskDetailRow,
    TaskNumberRow,
    TaskRow,
    WorkspaceRow,
)
from domain.tools.boards import board_header, member_guard
from domain.tools.common import (
    has_visible,
    ActivityView,
    ColumnIdArg,
    CursorArg,
    ExpectedUpdatedAtArg,
    IdempotencyKeyArg,
    LimitArg,
    Priority,
    ResponseFormat,
    TaskDetailView,
    TaskIdArg,
    TaskRowView,
    activity,
    activity_view,
    decode_cursor,
    encode_cursor,
    ordered_columns,
    take_page,
    task_detail_view,
    task_row_view,
)

TitleArg = Annotated[str, Field(min_length=1, max_length=500, description="Task title (1-500 characters).")]
DescriptionArg = Annotated[str | None, Field(default=None, max_length=20000, description="Markdown description (up to 20,000 characters).")]
DueDateArg = Annotated[
    str | None,
    Field(default=None, max_length=40, description="Due date, ISO-8601 (YYYY-MM-DD or a full timestamp); null clears it on update."),
    AfterValidator(lambda v: _check_due(v)),
]
COMPACT_FIELDS = ("taskId", "number", "key", "boardId", "columnId", "rank", "title", "priority", "dueDate", "assigneeIds", "labelIds", "createdAt", "updatedAt")
CREATE_ATTEMPTS = 25
MOVE_ATTEMPTS = 10
MAX_FILTERED_PAGES = 5
DETAILED_PAGE_CAP = 10


def _check_due(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        if len(value) == 10:
            clock.parse_iso(value + "T00:00:00Z")
        else:
            clock.parse_iso(value)
    except ValueError:
        raise ValueError("must be an ISO-8601 date (YYYY-MM-DD) or timestamp with a zone") from None
    return value


def compact_of(detail: TaskDetailRow) -> TaskRow:
    row = TaskRow(detail.PK, f"T#{int(detail.number):010d}", **{f: getattr(detail, f) for f in COMPACT_FIELDS})
    row.GSI1PK = f"COL#{detail.columnId}"
    row.GSI1SK = f"{detail.rank}#{int(detail.number):010d}"
    return row


def task_keys(ref: ids.TaskRef) -> tuple[str, str, str]:
    return f"BOARD#{ref.board_id}", f"T#{ref.number:010d}", f"X#{ref.number:010d}"


def resolve_task_id(ctx: CallContext, task_id: str) -> ids.TaskRef:
    ref = ids.parse_task(task_id)
    if ref is None:
        raise errors.not_found("task", task_id)
    ctx.member(ref.workspace_id, "task", task_id)
    return ref


def load_task(ctx: CallContext, task_id: str) -> tuple[ids.TaskRef, TaskDetailRow]:
    ref = resolve_task_id(ctx, task_id)
    pk, _, xsk = task_keys(ref)
    try:
        return ref, TaskDetailRow.get(pk, xsk, consistent_read=True)
    except TaskDetailRow.DoesNotExist:
        raise errors.not_found("task", task_id) from None


def _current(detail: TaskDetailRow) -> dict[str, Any]:
    return task_detail_view(detail).model_dump(mode="json")


def _stale(expected: str | None, detail: TaskDetailRow) -> None:
    if expected is not None and detail.updatedAt != expected:
        raise errors.conflict(
            f"The task changed since you read it (your expectedUpdatedAt {expected}, now {detail.updatedAt}).",
            "Merge your change into error.current and call again with its updatedAt.",
            current=_current(detail),
        )


# -- create_task -----------------------------------------------------------------------------
class CreateTaskInput(ToolInput):
    columnId: ColumnIdArg
    title: TitleArg
    description: DescriptionArg
    priority: Priority = Field(default="NONE", description="NONE, LOW, MEDIUM, HIGH or URGENT.")
    dueDate: DueDateArg
    idempotencyKey: IdempotencyKeyArg


class TaskOutput(ToolOutput):
    task: TaskDetailView


@tool(
    "create_task",
    title="Create task",
    description=(
        "Creates a task at the bottom of a column. Returns the task with its id, its number in the workspace and its "
        "human key (prefix-number, e.g. ST-42); numbers have no gaps."
    ),
    scope="write",
    keyed=True,
    input_model=CreateTaskInput,
    output_model=TaskOutput,
)
def create_task(ctx: CallContext, args: CreateTaskInput) -> TaskOutput:
    parsed = ids.parse_column(args.columnId)
    if parsed is None:
        raise errors.not_found("column", args.columnId)
    ws, board_id, column_id = parsed
    ctx.member(ws, "column", args.columnId)
    title = args.title.strip()
    if not has_visible(title):
        raise errors.invalid("title", "must contain visible characters")
    marker = creation_marker(ctx, ws)
    for attempt in range(CREATE_ATTEMPTS):
        got = {(r.PK, r.SK): r for r in Row.batch_get([(f"WS#{ws}", "META"), (f"BOARD#{board_id}", f"C#{column_id}")], consistent_read=True)}
        wsrow = got.get((f"WS#{ws}", "META"))
        column = got.get((f"BOARD#{board_id}", f"C#{column_id}"))
        if not isinstance(wsrow, WorkspaceRow) or not isinstance(column, ColumnRow):
            raise errors.not_found("column", args.columnId)
        if column.archivedAt:
            raise errors.invalid("columnId", "this column is archived", "Create the task in an active column (list_columns).")
        counter = int(wsrow.taskCounter or 0)
        number = counter + 1
        tid = ids.task_id(board_id, number)
        now = clock.now_iso()
        rank = generate_key_between(column.lastRank, None)
        detail = TaskDetailRow(
            f"BOARD#{board_id}", f"X#{number:010d}", taskId=tid, number=number, key=f"{wsrow.taskPrefix}-{number}",
            boardId=board_id, columnId=column_id, rank=rank, title=title, priority=args.priority, dueDate=args.dueDate,
            assigneeIds=[], labelIds=[], createdAt=now, updatedAt=now, description=args.description or "",
            createdBy=ctx.principal.user_id,
        )
        compact = compact_of(detail)
        pointer = TaskNumberRow(f"WS#{ws}", f"TASKNO#{number:010d}", taskId=tid)
        act = activity(ctx, ws, board_id, "task.created", f"Created {detail.key} {title!r} in {column.name!r}", task_id=tid, data={"columnId": column_id}, at=now)
        if marker is not None:
            marker.entityId = tid
        last_rank = column.lastRank

        def build(tx: Any, counter: int = counter, number: int = number, last_rank: str | None = last_rank, rank: str = rank,
                  detail: TaskDetailRow = detail, compact: TaskRow = compact, pointer: TaskNumberRow = pointer, act: ActivityRow = act) -> None:
            put_marker(tx, marker)
            tx.update(WorkspaceRow(f"WS#{ws}", "META"), actions=[WorkspaceRow.taskCounter.set(number)], condition=WorkspaceRow.taskCounter == counter)
            col_cond = ColumnRow.archivedAt.does_not_exist() & (ColumnRow.lastRank == last_rank if last_rank else ColumnRow.lastRank.does_not_exist())
            tx.update(ColumnRow(f"BOARD#{board_id}", f"C#{column_id}"), actions=[ColumnRow.lastRank.set(rank), ColumnRow.taskCount.add(1)], condition=col_cond & Row.PK.exists())
            tx.update(BoardRow(f"BOARD#{board_id}", "#META"), actions=[BoardRow.taskCount.add(1)], condition=BoardRow.archivedAt.does_not_exist() & Row.PK.exists())
            tx.save(detail, condition=Row.PK.does_not_exist())
            tx.save(compact)
            tx.save(pointer, condition=Row.PK.does_not_exist())
            member_guard(tx, ws, ctx.principal.user_id)
            tx.save(act)

        try:
            db.transact(build)
            return TaskOutput(task=task_detail_view(detail, column.name))
        except db.ConditionFailed as failure:
            earlier = earlier_entity(failure, marker, "task")
            if earlier:
                _, found = load_task(ctx, earlier)
                return TaskOutput(task=task_detail_view(found, column.name))
            if failure.hit(f"BOARD#{board_id}", "#META") or failure.hit(f"WS#{ws}", f"MEMBER#{ctx.principal.user_id}"):
                raise errors.not_found("column", args.columnId) from None
            # The counter or the column's last rank moved under us (another create won), or the
            # column was archived meanwhile: read again; the next read tells which.
            time.sleep(random.uniform(0.0, 0.02) * min(attempt + 1, 5))
    raise errors.conflict("Too many tasks were being created in this workspace at once.", "Retry the call.", retry_after_seconds=1)


# -- get_task --------------------------------------------------------------------------------
class GetTaskInput(ToolInput):
    taskId: str | None = Field(default=None, max_length=80, description="Task id (tk_…). Give this, or workspaceId + number.")
    workspaceId: str | None = Field(default=None, max_length=64, description='With number: the workspace ("" = the bound one).')
    number: int | None = Field(default=None, ge=1, le=9_999_999_999, description="With workspaceId: the number part of a key such as ST-42.")
    response_format: ResponseFormat = Field(default="detailed", description="'concise' returns scalars and counts only; 'detailed' adds the description and recent activity.")


class GetTaskOutput(ToolOutput):
    task: TaskDetailView | TaskRowView
    recentActivity: list[ActivityView] | None = Field(description="Newest first, up to 10; null in concise format.")


@tool(
    "get_task",
    title="Get task",
    description=(
        "Fetches one task by taskId, or by workspaceId + number (the numeric part of a key like ST-42). The detailed "
        "format (default) includes the description and the ten most recent activity entries; 'concise' returns scalars only."
    ),
    scope="read",
    read_only=True,
    input_model=GetTaskInput,
    output_model=GetTaskOutput,
)
def get_task(ctx: CallContext, args: GetTaskInput) -> GetTaskOutput:
    if args.taskId is not None:
        if args.number is not None or args.workspaceId is not None:
            raise errors.invalid("taskId", "give taskId, or workspaceId + number, not both")
        task_id = args.taskId
    else:
        if args.number is None or args.workspaceId is None:
            raise errors.invalid("taskId", "is required unless workspaceId and number are both given")
        ws = ctx.workspace_argument(args.workspaceId)
        ctx.member(ws, "task", f"number {args.number}")
        try:
            task_id = TaskNumberRow.get(f"WS#{ws}", f"TASKNO#{args.number:010d}", consistent_read=True).taskId
        except TaskNumberRow.DoesNotExist:
            raise errors.not_found("task", f"number {args.number}") from None
    _, detail = load_task(ctx, task_id)
    if args.response_format == "concise":
        return GetTaskOutput(task=task_row_view(detail), recentActivity=None)
    try:
        column_name = ColumnRow.get(detail.PK, f"C#{detail.columnId}").name
    except ColumnRow.DoesNotExist:
        column_name = None
    recent = [a for a in ActivityRow.gsi1.query(f"TACT#{detail.taskId}", scan_index_forward=False, limit=10) if isinstance(a, ActivityRow)]
    return GetTaskOutput(task=task_detail_view(detail, column_name), recentActivity=[activity_view(a) for a in recent[:10]])


# -- update_task -----------------------------------------------------------------------------
class UpdateTaskInput(ToolInput):
    taskId: TaskIdArg
    title: str | None = Field(default=None, min_length=1, max_length=500, description="New title; omit or null to keep it.")
    description: str | None = Field(default=None, max_length=20000, description="New markdown description (\"\" empties it); omit or null to keep it.")
    priority: Priority | None = Field(default=None, description="New priority; omit or null to keep it.")
    dueDate: DueDateArg
    expectedUpdatedAt: ExpectedUpdatedAtArg


def _write_task(ctx: CallContext, ref: ids.TaskRef, detail: TaskDetailRow, previous: str, act: ActivityRow, extra: Any = None) -> None:
    """Put the new full item (conditioned on ``previous``), its compact row and the activity row."""

    def build(tx: Any) -> None:
        tx.save(detail, condition=(TaskDetailRow.updatedAt == previous) & TaskDetailRow.archivedAt.does_not_exist(), return_values="ALL_OLD")
        tx.save(compact_of(detail))
        member_guard(tx, ref.workspace_id, ctx.principal.user_id)
        tx.save(act)
        if extra:
            extra(tx)

    db.transact(build)


@tool(
    "update_task",
    title="Update task",
    description=(
        "Changes fields of a task; fields you leave out stay as they are. Pass expectedUpdatedAt from your last read to "
        "refuse the write if someone else changed the task meanwhile (CONFLICT returns the current task)."
    ),
    scope="write",
    idempotent=True,
    input_model=UpdateTaskInput,
    output_model=TaskOutput,
)
def update_task(ctx: CallContext, args: UpdateTaskInput) -> TaskOutput:
    # Many clients send every field, with null for the ones they leave alone: null keeps the
    # value, except for dueDate, where null is how a due date is cleared.
    sent = {f for f in args.model_fields_set - {"taskId", "expectedUpdatedAt"} if f == "dueDate" or getattr(args, f) is not None}
    if not sent:
        raise errors.invalid("arguments", "nothing to change", "Give at least one of title, description, priority or dueDate.")
    if "title" in sent and not has_visible(args.title):
        raise errors.invalid("title", "must contain visible characters")
    ref, detail = load_task(ctx, args.taskId)
    expected = args.expectedUpdatedAt
    for _ in range(db.MAX_TRANSACTION_ATTEMPTS):
        _stale(expected, detail)
        if detail.archivedAt:
            raise errors.invalid("taskId", "the task is archived and cannot be edited", "Archived tasks are read-only; create a new task if the work continues.")
        previous = detail.updatedAt
        changes: dict[str, Any] = {}
        for name in sent:
            value = getattr(args, name)
            if name == "title":
                value = value.strip()
            if getattr(detail, name) != value:
                changes[name] = {"from": getattr(detail, name), "to": value}
                setattr(detail, name, value)
        if not changes:
            return TaskOutput(task=task_detail_view(detail))
        detail.updatedAt = clock.next_stamp(previous)
        act = activity(ctx, ref.workspace_id, ref.board_id, "task.updated", f"Updated {detail.key}: {', '.join(sorted(changes))}", task_id=detail.taskId,
                       data={k: v for k, v in changes.items() if k != "description"} | ({"description": "changed"} if "description" in changes else {}), at=detail.updatedAt)
        try:
            _write_task(ctx, ref, detail, previous, act)
            return TaskOutput(task=task_detail_view(detail))
        except db.ConditionFailed as failure:
            stored = failure.item(detail.PK, detail.SK)
            if not stored:
                raise errors.not_found("task", args.taskId) from None
            detail = TaskDetailRow.from_raw_data(stored)  # without expectedUpdatedAt: re-apply on the fresh state
    raise errors.conflict("The task kept changing while updating it.", "Retry the call.", retry_after_seconds=1)


# -- move_task -------------------------------------------------------------------------------
class MoveTaskInput(ToolInput):
    taskId: TaskIdArg
    columnId: str | None = Field(default=None, max_length=80, description="Destination column (same board); omit to reorder within the current column.")
    beforeTaskId: str | None = Field(default=None, max_length=80, description="Place the task just above this task of the destination column.")
    afterTaskId: str | None = Field(default=None, max_length=80, description="Place the task just below this task of the destination column.")
    expectedUpdatedAt: ExpectedUpdatedAtArg


@tool(
    "move_task",
    title="Move task",
    description=(
        "Moves a task to another column of its board (its status on the kanban board) and/or reorders it. beforeTaskId or "
        "afterTaskId sets the place in the destination column; with neither, the task goes to the bottom."
    ),
    scope="write",
    input_model=MoveTaskInput,
    output_model=TaskOutput,
)
def move_task(ctx: CallContext, args: MoveTaskInput) -> TaskOutput:
    if args.beforeTaskId and args.afterTaskId:
        raise errors.invalid("beforeTaskId", "give beforeTaskId or afterTaskId, not both")
    ref, detail = load_task(ctx, args.taskId)
    for attempt in range(MOVE_ATTEMPTS):
        try:
            return _move_once(ctx, args, ref, detail)
        except _MoveRace as race:
            # Another writer got there first: the task itself changed (without expectedUpdatedAt
            # the move is re-applied on its new state), or the destination column's last rank moved.
            detail = race.current or detail
            time.sleep(random.uniform(0.0, 0.02) * min(attempt + 1, 5))
    raise errors.conflict("The destination column kept changing while moving the task.", "Retry the call.", retry_after_seconds=1)


class _MoveRace(Exception):
    def __init__(self, current: TaskDetailRow | None) -> None:
        super().__init__("move raced with another write")
        self.current = current


def _move_once(ctx: CallContext, args: MoveTaskInput, ref: ids.TaskRef, detail: TaskDetailRow) -> TaskOutput:
    _stale(args.expectedUpdatedAt, detail)
    if detail.archivedAt:
        raise errors.invalid("taskId", "the task is archived; it cannot be moved")
    dest_id = args.columnId or detail.columnId
    dest = ids.parse_column(dest_id)
    if dest is None or dest[1] != ref.board_id:
        raise errors.invalid("columnId", "must be a column of the task's board", "get_board_snapshot lists the board's columns.")
    anchor_id = args.beforeTaskId or args.afterTaskId
    anchor_field = "beforeTaskId" if args.beforeTaskId else "afterTaskId"
    if anchor_id == args.taskId:
        raise errors.invalid(anchor_field, "cannot place a task relative to itself")
    keys = [(f"BOARD#{ref.board_id}", f"C#{dest_id}")]
    anchor_ref = None
    if anchor_id:
        anchor_ref = ids.parse_task(anchor_id)
        if anchor_ref is None or anchor_ref.board_id != ref.board_id:
            raise errors.invalid(anchor_field, "must be a task on the same board")
        keys.append((f"BOARD#{ref.board_id}", f"T#{anchor_ref.number:010d}"))
    got = {r.SK: r for r in Row.batch_get(keys, consistent_read=True)}
    column = got.get(f"C#{dest_id}")
    if not isinstance(column, ColumnRow) or column.archivedAt:
        raise errors.invalid("columnId", "is not an active column of this board")
    moving_out = dest_id != detail.columnId
    if anchor_ref is not None:
        anchor = got.get(f"T#{anchor_ref.number:010d}")
        if not isinstance(anchor, TaskRow) or anchor.columnId != dest_id:
            raise errors.invalid(anchor_field, "is not a task in the destination column")
        # The neighbour on the other side of the anchor, read from the column index (GSI1).
        anchor_sk = f"{anchor.rank}#{int(anchor.number):010d}"
        cond = TaskRow.GSI1SK < anchor_sk if args.beforeTaskId else TaskRow.GSI1SK > anchor_sk
        neighbours = [n for n in TaskRow.gsi1.query(f"COL#{dest_id}", cond, scan_index_forward=not args.beforeTaskId, limit=2) if isinstance(n, TaskRow) and n.taskId != detail.taskId]
        other = neighbours[0].rank if neighbours else None
        lo, hi = (other, anchor.rank) if args.beforeTaskId else (anchor.rank, other)
        if lo is not None and hi is not None and lo >= hi:
            lo = None if args.beforeTaskId else lo
            hi = hi if args.beforeTaskId else None
        rank = generate_key_between(lo, hi)
    else:
        if not moving_out and column.lastRank == detail.rank:
            return TaskOutput(task=task_detail_view(detail, column.name))  # already at the bottom
        rank = generate_key_between(column.lastRank, None)
    moved = TaskDetailRow.from_raw_data(detail.serialize())  # work on a copy: a race re-reads
    previous = detail.updatedAt
    old_column = detail.columnId
    moved.columnId, moved.rank = dest_id, rank
    moved.updatedAt = clock.next_stamp(previous)
    becomes_last = column.lastRank is None or rank > column.lastRank
    last_rank = column.lastRank
    verb = f"Moved {moved.key} to {column.name!r}" if moving_out else f"Reordered {moved.key} in {column.name!r}"
    act = activity(ctx, ref.workspace_id, ref.board_id, "task.moved", verb, task_id=moved.taskId, data={"fromColumnId": old_column, "toColumnId": dest_id}, at=moved.updatedAt)

    def extra(tx: Any) -> None:
        col_actions: list[Any] = []
        if becomes_last:
            col_actions.append(ColumnRow.lastRank.set(rank))
        if moving_out:
            col_actions.append(ColumnRow.taskCount.add(1))
            tx.update(ColumnRow(f"BOARD#{ref.board_id}", f"C#{old_column}"), actions=[ColumnRow.taskCount.add(-1)], condition=Row.PK.exists())
        if col_actions:
            cond = ColumnRow.archivedAt.does_not_exist() & Row.PK.exists()
            if becomes_last:
                cond = cond & (ColumnRow.lastRank == last_rank if last_rank else ColumnRow.lastRank.does_not_exist())
            tx.update(ColumnRow(f"BOARD#{ref.board_id}", f"C#{dest_id}"), actions=col_actions, condition=cond)
        else:
            tx.condition_check(ColumnRow, f"BOARD#{ref.board_id}", f"C#{dest_id}", condition=ColumnRow.archivedAt.does_not_exist() & Row.PK.exists())

    try:
        _write_task(ctx, ref, moved, previous, act, extra)
    except db.ConditionFailed as failure:
        stored = failure.item(moved.PK, moved.SK)
        if stored:
            current = TaskDetailRow.from_raw_data(stored)
            if args.expectedUpdatedAt is not None or current.archivedAt:
                _stale(args.expectedUpdatedAt, current)
            raise _MoveRace(current) from None
        if failure.hit(f"WS#{ref.workspace_id}", f"MEMBER#{ctx.principal.user_id}"):
            raise errors.not_found("task", args.taskId) from None
        raise _MoveRace(None) from None
    return TaskOutput(task=task_detail_view(moved, column.name))


# -- archive_task ----------------------------------------------------------------------------
class ArchiveTaskInput(ToolInput):
    taskId: TaskIdArg


@tool(
    "archive_task",
    title="Archive task",
    description="Archives a task: it leaves the board and its lists but keeps its history, key and data, and get_task still finds it.",
    scope="write",
    destructive=True,
    input_model=ArchiveTaskInput,
    output_model=TaskOutput,
)
def archive_task(ctx: CallContext, args: ArchiveTaskInput) -> TaskOutput:
    ref, detail = load_task(ctx, args.taskId)
    pk, tsk, _ = task_keys(ref)
    for attempt in range(db.MAX_TRANSACTION_ATTEMPTS):
        if detail.archivedAt:
            return TaskOutput(task=task_detail_view(detail))
        previous = detail.updatedAt
        archived = TaskDetailRow.from_raw_data(detail.serialize())
        archived.updatedAt = archived.archivedAt = clock.next_stamp(previous)
        act = activity(ctx, ref.workspace_id, ref.board_id, "task.archived", f"Archived {archived.key}", task_id=archived.taskId, at=archived.updatedAt)

        def build(tx: Any, archived: TaskDetailRow = archived, previous: str = previous, act: ActivityRow = act) -> None:
            tx.save(archived, condition=(TaskDetailRow.updatedAt == previous) & TaskDetailRow.archivedAt.does_not_exist(), return_values="ALL_OLD")
            tx.delete(TaskRow(pk, tsk))
            tx.update(ColumnRow(pk, f"C#{archived.columnId}"), actions=[ColumnRow.taskCount.add(-1)], condition=Row.PK.exists())
            tx.update(BoardRow(pk, "#META"), actions=[BoardRow.taskCount.add(-1)], condition=Row.PK.exists())
            member_guard(tx, ref.workspace_id, ctx.principal.user_id)
            tx.save(act)

        try:
            db.transact(build)
            return TaskOutput(task=task_detail_view(archived))
        except db.ConditionFailed as failure:
            stored = failure.item(detail.PK, detail.SK)
            if not stored:
                raise errors.not_found("task", args.taskId) from None
            detail = TaskDetailRow.from_raw_data(stored)  # changed meanwhile (e.g. moved): archive that state
            time.sleep(random.uniform(0.0, 0.02) * (attempt + 1))
    raise errors.conflict("The task kept changing while archiving it.", "Retry the call.", retry_after_seconds=1)


# -- list_tasks ------------------------------------------------------------------------------
class ListTasksInput(ToolInput):
    boardId: str | None = Field(default=None, max_length=64, description="List the board's tasks (ordered by number). Give boardId or columnId.")
    columnId: str | None = Field(default=None, max_length=80, description="List one column's tasks in board order.")
    response_format: ResponseFormat = Field(default="concise", description="'concise' rows, or 'detailed' rows with description and creator (at most 10 per page).")
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


@tool(
    "list_tasks",
    title="List tasks",
    description=(
        "Lists the tasks of a board or of one column, with board and column names, the total count and a cursor for the "
        "next page. Rows are concise unless response_format is 'detailed'. Needs boardId or columnId."
    ),
    scope="read",
    read_only=True,
    input_model=ListTasksInput,
    output_model=ListTasksOutput,
)
def list_tasks(ctx: CallContext, args: ListTasksInput) -> ListTasksOutput:
    if not args.boardId and not args.columnId:
        raise errors.invalid("boardId", "give boardId or columnId")
    column_id = args.columnId
    if column_id:
        parsed = ids.parse_column(column_id)
        if parsed is None:
            raise errors.not_found("column", column_id)
        ws, board_id, _ = parsed
        if args.boardId and args.boardId != board_id:
            raise errors.invalid("columnId", "is not a column of boardId")
    else:
        parsed_b = ids.parse_board(args.boardId or "")
        if parsed_b is None:
            raise errors.not_found("board", args.boardId or "")
        ws, board_id = parsed_b
    ctx.member(ws, "column" if column_id else "board", column_id or board_id)
    board, columns = board_header(board_id)
    if board is None:
        raise errors.not_found("board", board_id)
    names = {c.columnId: c.name for c in columns}
    live = {c.columnId for c, _ in ordered_columns(columns)}
    kind = f"tasks:{column_id or board_id}"
    # Detailed rows carry descriptions of up to 20,000 characters; a smaller page keeps one
    # answer well under Lambda's 6 MB response limit (the text block repeats the content).
    limit = min(args.limit, DETAILED_PAGE_CAP) if args.response_format == "detailed" else args.limit
    if column_id:
        col = next((c for c in columns if c.columnId == column_id), None)
        if col is None:
            raise errors.not_found("column", column_id)
        start = decode_cursor(kind, args.cursor, {"GSI1PK": f"COL#{column_id}", "GSI1SK": "", "PK": f"BOARD#{board_id}", "SK": "T#"})
        total = int(col.taskCount or 0)
        result = TaskRow.gsi1.query(f"COL#{column_id}", limit=limit + 1, last_evaluated_key=start)
    else:
        start = decode_cursor(kind, args.cursor, {"PK": f"BOARD#{board_id}", "SK": "T#"})
        total = sum(int(c.taskCount or 0) for c in columns if c.columnId in live)
        # Tasks of archived columns stay in the partition; when there are any, a server-side
        # filter drops them and up to MAX_FILTERED_PAGES reads fill the page.
        hidden = len(live) < len(columns)
        result = TaskRow.query(
            f"BOARD#{board_id}", Row.SK.startswith("T#"), filter_condition=TaskRow.columnId.is_in(*live) if hidden else None,
            limit=limit + 1, last_evaluated_key=start, consistent_read=True,
        )
    page, last_key = take_page(result, limit, index=bool(column_id), max_pages=MAX_FILTERED_PAGES if not column_id and hidden else None)
    rows = [r for r in page if isinstance(r, TaskRow) and (column_id or r.columnId in live)]
    next_cursor = encode_cursor(kind, last_key)
    if args.response_format == "detailed" and rows:
        details = {d.taskId: d for d in TaskDetailRow.batch_get([(r.PK, f"X#{int(r.number):010d}") for r in rows], consistent_read=True)}
        tasks: list[Any] = [task_detail_view(details[r.taskId], names.get(r.columnId)) for r in rows if r.taskId in details]
    else:
        tasks = [task_row_view(r, names.get(r.columnId)) for r in rows]
    notices = []
    if column_id and column_id not in live:
        notices.append("This column is archived, so its tasks are hidden from the board; move_task can bring one back to an active column.")
    if next_cursor and not tasks:
        notices.append("No tasks in this stretch of the board (tasks of archived columns are skipped); pass nextCursor to keep going.")
    elif next_cursor:
        notices.append(f"Showing {len(tasks)} of {total} task{'s' if total != 1 else ''}; pass nextCursor for the next page.")
    if limit < args.limit:
        notices.append(f"Detailed pages hold at most {DETAILED_PAGE_CAP} tasks.")
    notice = " ".join(notices) or None
    return ListTasksOutput(
        boardId=board_id, boardName=board.name, columnId=column_id, columnName=names.get(column_id) if column_id else None,
        tasks=tasks, totalCount=total, nextCursor=next_cursor, notice=notice,
    )
