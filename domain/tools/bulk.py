"""Bulk task tools: bulk_create_tasks, bulk_update_tasks, bulk_move_tasks.

bulk_create_tasks is all-or-nothing for the task set (one transaction claims the numbers and
writes the compact rows; the full items follow, see :mod:`domain.store.bulk`). The bulk edits
check access per task (``each`` targets), apply the valid items in as few transactions as the
100-action limit allows (two for 50 tasks) and answer one result per item, with the error
envelope of each item that was not applied. docs/data-model.md ("Bulk writes") derives the
transaction shapes and budgets; docs/decisions.md records the deviation from "one transaction".
"""

from functools import partial
from typing import Annotated, Any, Literal, TypeVar

from fractional_indexing import generate_key_between
from pydantic import Field

from domain import clock, errors, faults, ids
from domain.access import Located, Prefetch, each, target
from domain.context import CallContext
from domain.errors import ToolError
from domain.idempotency import answer
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import boards as board_store
from domain.store import bulk as bulk_store
from domain.store import search_marks
from domain.store import tasks as task_store
from domain.store import work as work_store
from domain.store.db import ConditionFailed, Missing
from domain.store.reads import Column, Task
from domain.text import has_visible
from domain.tools.args import (
    ColumnIdArg,
    DescriptionArg,
    DueDateArg,
    ExpectedUpdatedAtArg,
    IdempotencyKeyArg,
    IdShape,
    NewDueDateArg,
    Priority,
    Redact,
    SingleLine,
    TaskIdArg,
    TitleArg,
    redactions_field,
    requested_changes,
)
from domain.tools.views import TaskRowView, task_row_view

MAX_ITEMS = bulk_store.MAX_ITEMS
_CHUNKING = (
    "Valid items are applied in as few transactions as DynamoDB's 100-action limit allows: a task is two items "
    "plus its activity row and its recent-activity item, so up to about 24 tasks commit together and 50 take three "
    "transactions. If a later "
    "transaction fails after an earlier one committed, the results say exactly which items were applied; with an "
    "idempotencyKey, repeating the identical call applies the rest and never applies an item twice."
)


def _wip_over(column: Column, count: int) -> str | None:
    limit = int(column.wipLimit) if column.wipLimit is not None else None
    if limit is None or count <= limit:
        return None
    return f"Column {column.name!r} now holds {count} tasks, over its work-in-progress limit of {limit}."


# -- per-item results (bulk_update_tasks, bulk_move_tasks) -------------------------------------
class ItemError(ToolOutput):
    code: str = Field(
        description="FORBIDDEN, NOT_FOUND, INVALID_INPUT, CONFLICT or INTERNAL, as in the error envelope."
    )
    message: str
    hint: str
    retryAfterSeconds: int | None = Field(
        default=None, description="Set when repeating the item later may succeed as-is."
    )
    current: TaskRowView | None = Field(
        default=None, description="CONFLICT on expectedUpdatedAt: the task as stored now (without its description)."
    )


class ItemResult(ToolOutput):
    index: int = Field(description="0-based position of the item in the call's items.")
    taskId: str
    status: Literal["applied", "unchanged", "failed"] = Field(
        description="applied: written by this call (or by an earlier call with the same idempotencyKey); unchanged: the task already was what the item asked for; failed: not applied, see error.",
    )
    task: TaskRowView | None = Field(description="The task after the item (applied, unchanged); null when failed.")
    changedFields: list[str] | None = Field(default=None, description="bulk_update_tasks: the fields the item changed.")
    error: ItemError | None = Field(description="The error envelope's content for a failed item; null otherwise.")


class BulkEditOutput(ToolOutput):
    results: list[ItemResult] = Field(description="One result per item, in input order.")
    applied: int = Field(description="Items written (status applied).")
    failed: int = Field(description="Items not applied (status failed); retry just those.")
    notice: str | None = Field(
        description="Set when items failed, or when a column is now over its work-in-progress limit."
    )


class BulkUpdateOutput(BulkEditOutput):
    redactions: list[str] = redactions_field()


_Out = TypeVar("_Out", bound=BulkEditOutput)  # the answer model a planner fills


def _item_error(exc: ToolError) -> ItemError:
    body = exc.envelope()["error"]
    current = body.get("current")
    return ItemError(
        code=body["code"],
        message=body["message"],
        hint=body["hint"],
        retryAfterSeconds=body.get("retryAfterSeconds"),
        current=TaskRowView(**current) if current else None,
    )


def _conflict_error() -> ToolError:
    return errors.conflict(
        "Other changes to this task or its columns kept committing while the bulk ran; the item was not applied.",
        "Repeat the call with just this item.",
        retry_after_seconds=1,
    )


def _halt_error(ctx: CallContext) -> Any:
    def make(exc: BaseException) -> ToolError:
        base = (
            faults.busy_error(ctx.correlation_id)
            if faults.throttled(exc)
            else faults.unavailable_error(ctx.correlation_id)
        )
        return ToolError(
            base.code,
            f"Not applied: a later transaction of this bulk failed after earlier ones committed. {base.message}",
            "Repeat the identical call with the same idempotencyKey to apply the rest (applied items are not applied again), "
            "or send just the failed items.",
            retry_after_seconds=base.retry_after_seconds,
        )

    return make


def _transient(exc: BaseException) -> bool:
    return faults.storage_unavailable(exc) or faults.throttled(exc)


def _bulk_reads(wheres: list[Located], args: Any) -> Prefetch:
    """Started with the memberships: each board's header (column names, lastRank) as a parallel
    Query. Every task's full item is the spec's read plan ``task`` for each item (the BatchGetItem
    with the memberships, which also holds each board's entry for the ``open_board`` check)."""
    boards = list(dict.fromkeys(w.board_id for w in wheres if w.board_id))
    return Prefetch(queries=tuple((f"header:{b}", partial(board_store.header, b)) for b in boards))


def _refuse_duplicates(ids_: list[str]) -> None:
    seen: dict[str, int] = {}
    for i, tid in enumerate(ids_):
        if tid in seen:
            raise errors.invalid(
                "items",
                f"task {tid} appears twice (items {seen[tid]} and {i})",
                "Send each task once per call; nothing was written.",
            )
        seen[tid] = i


class _Planner:
    """What the bulk edits share: item states, per-item results, the columns of each board."""

    def __init__(self, ctx: CallContext, count: int) -> None:
        self.ctx = ctx
        self.count = count
        self.results: dict[int, ItemResult] = {}
        self.states: dict[int, Task] = {}
        self.task_ids: dict[int, str] = {}
        self.where: dict[int, Located] = {}
        self.columns: dict[str, dict[str, Column]] = {}  # board -> column id -> column (as committed)

    # results
    def fail(self, i: int, exc: ToolError) -> None:
        self.results[i] = ItemResult(
            index=i, taskId=self.task_ids[i], status="failed", task=None, error=_item_error(exc)
        )

    def pending(self) -> list[int]:
        return [i for i in range(self.count) if i not in self.results]

    def give_up(self, indices: list[int], error: Any) -> None:
        for i in indices:
            if i not in self.results:
                self.fail(i, error)

    def recorded(self, applied: list[dict[str, Any]]) -> None:
        for a in applied:
            i = int(a["i"])
            if 0 <= i < self.count:
                self.results[i] = ItemResult(
                    index=i,
                    taskId=self.task_ids[i],
                    status="applied",
                    task=TaskRowView(**a["task"]),
                    changedFields=a.get("changed"),
                    error=None,
                )

    def view(self, detail: Task) -> TaskRowView:
        col = self.columns.get(detail.boardId, {}).get(detail.columnId)
        return task_row_view(detail, col.name if col else None)

    def load(self, ctx: CallContext, board_ids: set[str]) -> None:
        for b in board_ids:
            _, cols = ctx.query(f"header:{b}", partial(board_store.header, b))
            self.columns[b] = {c.columnId: c for c in cols}

    def output(self, notices: list[str], model: type[_Out]) -> _Out:
        results = [self.results[i] for i in range(self.count)]
        failed = sum(1 for r in results if r.status == "failed")
        if failed:
            notices.insert(
                0,
                f"{failed} of {self.count} items were not applied; each failed result carries its error. Retry just those.",
            )
        return model(
            results=results,
            applied=sum(1 for r in results if r.status == "applied"),
            failed=failed,
            notice=" ".join(notices) or None,
        )

    # shared failure handling
    def failed_common(self, chunk: bulk_store.Chunk, failure: ConditionFailed) -> None:
        from domain.store import members

        for i in chunk.indices:
            if i in self.results:
                continue
            w = self.where[i]
            if board_store.closed(failure, w.board()):
                self.fail(i, errors.board_archived("taskId"))
            elif members.guard_failed(failure, w.workspace_id, self.ctx.user_id):
                self.fail(i, errors.not_found("task", self.task_ids[i]))
            else:
                hit, stored = bulk_store.task_image(failure, w.task_ref())
                if stored is not None:
                    self.states[i] = stored
                elif hit:
                    self.fail(i, errors.not_found("task", self.task_ids[i]))

    def start(self, ctx: CallContext, ids_: list[str]) -> None:
        for entry in ctx.targets:
            i = entry.index
            self.task_ids[i] = ids_[i]
            if entry.error is not None:
                self.fail(i, entry.error)
                continue
            self.where[i] = entry.located()
            detail = entry.reads().task  # read with the memberships (reads=("task",))
            if detail is None:
                self.fail(i, errors.not_found("task", ids_[i]))
            else:
                self.states[i] = detail
        self.load(ctx, {w.board() for w in self.where.values()})


def _markers(ctx: CallContext, ids_: list[str]) -> bulk_store.ChunkMarkers:
    first = next((ids.parse_task(t) for t in ids_ if ids.parse_task(t)), None)
    ws = first.workspace_id if first else ""
    return bulk_store.ChunkMarkers.of(ctx.user_id, ws, ctx.tool, ctx.idempotency_key, ctx.args_hash or "")


def _stale(expected: str | None, state: Task, planner: _Planner) -> ToolError | None:
    if expected is not None and state.updatedAt != expected:
        return errors.conflict(
            f"The task changed since you read it (your expectedUpdatedAt {expected}, now {state.updatedAt}).",
            "Merge your change into error.current and send the item again with its updatedAt.",
            current=planner.view(state).model_dump(mode="json"),
        )
    return None


# -- bulk_create_tasks ---------------------------------------------------------------------------
class NewTaskItem(ToolInput):
    title: TitleArg
    description: DescriptionArg
    priority: Priority = Field(default="NONE")
    dueDate: DueDateArg


class BulkCreateInput(ToolInput):
    columnId: ColumnIdArg
    tasks: list[NewTaskItem] = Field(min_length=1, max_length=MAX_ITEMS, description="In this order.")
    idempotencyKey: IdempotencyKeyArg


class BulkCreateOutput(ToolOutput):
    tasks: list[TaskRowView] = Field(
        description="The new tasks in input order, each with its id, number and key (numbers are consecutive)."
    )
    notice: str | None = Field(
        description="Set when the column is now over its work-in-progress limit, or when the descriptions are still being written."
    )
    redactions: list[str] = redactions_field()


@tool(
    "bulk_create_tasks",
    title="Create tasks in bulk",
    description=(
        "Creates 1-50 tasks at the bottom of a column, all or nothing. Descriptions land just after, so "
        "get_task may briefly lack one."
    ),
    area="tasks",
    scope="write",
    keyed=True,
    marker=True,  # the store finishes an earlier call with the key itself (it needs the items)
    target=target("columnId", "column"),
    min_role="MEMBER",
    open_board=True,
    reads=("column",),
    input_model=BulkCreateInput,
    output_model=BulkCreateOutput,
)
def bulk_create_tasks(ctx: CallContext, args: BulkCreateInput) -> BulkCreateOutput:
    where = ctx.target
    items = []
    for i, t in enumerate(args.tasks):
        title = t.title.strip()
        if not has_visible(title):
            raise errors.invalid(f"tasks.{i}.title", "must contain visible characters")
        items.append(
            bulk_store.NewTask(title=title, description=t.description or "", priority=t.priority, due=t.dueDate)
        )

    def activity_for(details: list[Task], column: Column) -> Any:
        shown = ", ".join(d.key for d in details[:10]) + (f" and {len(details) - 10} more" if len(details) > 10 else "")
        return ctx.activity(
            where.workspace_id,
            where.board(),
            "task.bulk_created",
            f"Created {len(details)} task{'s' if len(details) != 1 else ''} in {column.name!r}: {shown}",
            data={
                "columnId": where.column_id,
                "taskIds": [d.taskId for d in details],
                "keys": [d.key for d in details],
            },
            at=details[0].createdAt,
        )

    def entry_for(detail: Task) -> Any:  # the task's own creation entry, as create_task words it (+ "bulk")
        return ctx.activity(
            where.workspace_id,
            where.board(),
            "task.created",
            f"Created {detail.key} {detail.title!r} (bulk)",
            task_id=detail.taskId,
            data={"columnId": where.column_id, "bulk": True},
            at=detail.createdAt,
        )

    try:
        made = bulk_store.create_many(
            workspace_id=where.workspace_id,
            board_id=where.board(),
            column_id=where.column(),
            actor_id=ctx.user_id,
            items=items,
            activity_for=activity_for,
            entry_for=entry_for,
            marker=ctx.marker,
            transient=_transient,
            first_column=ctx.read.column,
        )
    except task_store.ColumnArchived:
        raise errors.invalid(
            "columnId", "this column is archived", "Create the tasks in an active column (list_columns)."
        ) from None
    except bulk_store.BoardClosed:
        raise errors.board_archived("columnId") from None
    except Missing:
        raise errors.not_found("column", args.columnId) from None
    name = made.column.name if made.column is not None else task_store.column_name(where.board(), where.column())
    notices = []
    if made.column is not None:
        over = _wip_over(made.column, int(made.column.taskCount or 0) + len(items))
        if over:
            notices.append(over + " The tasks were placed anyway.")
    if not made.complete:
        notices.append(
            "The tasks exist on the board, but their descriptions and number lookups could not be written yet (the store did not answer). "
            "Repeat the identical call with the same idempotencyKey to finish them; nothing is created twice."
        )
    out = BulkCreateOutput(tasks=[task_row_view(d, name) for d in made.tasks], notice=" ".join(notices) or None)
    return answer(ctx, out, finished=made.complete)


# -- bulk_update_tasks ---------------------------------------------------------------------------
_CLEARABLE: dict[str, Any] = {"description": "", "dueDate": None}


class UpdateItem(ToolInput):
    taskId: TaskIdArg
    title: Annotated[str | None, Field(default=None, min_length=1, max_length=500), SingleLine, Redact]
    description: Annotated[
        str | None, Field(default=None, max_length=20000, description="Markdown; null empties it."), Redact
    ]
    priority: Priority | None = None
    dueDate: NewDueDateArg
    expectedUpdatedAt: ExpectedUpdatedAtArg


class BulkUpdateInput(ToolInput):
    items: list[UpdateItem] = Field(min_length=1, max_length=MAX_ITEMS, description="Each task once.")
    idempotencyKey: IdempotencyKeyArg


class _UpdatePlanner(_Planner):
    def __init__(self, ctx: CallContext, args: BulkUpdateInput) -> None:
        super().__init__(ctx, len(args.items))
        self.args = args
        self.asked: dict[int, dict[str, Any]] = {}

    def prepare(self) -> None:
        for i in self.pending():
            item = self.args.items[i]
            asked = requested_changes(item, clear_to=_CLEARABLE, not_values=("taskId", "expectedUpdatedAt"))
            if not asked:
                self.fail(
                    i,
                    errors.invalid(
                        "arguments",
                        "nothing to change",
                        "Give at least one of title, description, priority or dueDate.",
                    ),
                )
                continue
            if "title" in asked:
                asked["title"] = asked["title"].strip()
                if not has_visible(asked["title"]):
                    self.fail(i, errors.invalid("title", "must contain visible characters"))
                    continue
            self.asked[i] = asked

    def plan(self, i: int) -> tuple[Task, Any, dict[str, Any]] | None:
        """The write of item ``i`` on its current state, or ``None`` when it resolved without one."""
        state = self.states[i]
        stale = _stale(self.args.items[i].expectedUpdatedAt, state, self)
        if stale is not None:
            self.fail(i, stale)
            return None
        if state.archivedAt:
            self.fail(
                i,
                errors.invalid("taskId", "the task is archived and cannot be edited", "Archived tasks are read-only."),
            )
            return None
        detail = task_store.copy(state)
        changes: dict[str, Any] = {}
        for name, value in self.asked[i].items():
            stored = getattr(detail, name)
            if name in _CLEARABLE and not stored:
                stored = _CLEARABLE[name]
            if stored != value:
                changes[name] = {"from": getattr(detail, name), "to": value}
                setattr(detail, name, value)
        if not changes:
            self.results[i] = ItemResult(
                index=i,
                taskId=self.task_ids[i],
                status="unchanged",
                task=self.view(state),
                changedFields=[],
                error=None,
            )
            return None
        detail.updatedAt = clock.next_stamp(state.updatedAt)
        data = {k: v for k, v in changes.items() if k != "description"} | (
            {"description": "changed"} if "description" in changes else {}
        )
        w = self.where[i]
        act = self.ctx.activity(
            w.workspace_id,
            w.board(),
            "task.updated",
            f"Updated {detail.key}: {', '.join(sorted(changes))} (bulk)",
            task_id=detail.taskId,
            data=data,
            at=detail.updatedAt,
        )
        return detail, act, changes

    def next_chunk(self, reserved: int) -> bulk_store.Chunk | None:
        budget = bulk_store.MAX_ACTIONS - reserved
        edits: list[tuple[int, Task, Task, Any, list[str]]] = []
        spaces: set[str] = set()
        boards: set[str] = set()
        actions = size = text = 0
        for i in self.pending():
            planned = self.plan(i)
            if planned is None:
                continue
            detail, act, changes = planned
            w = self.where[i]
            cost = 4 + (
                w.workspace_id not in spaces
            )  # + the task's recent-activity item + (w.board_id not in boards) + work_store.actions(detail)
            entry = search_marks.entry_bytes(detail)  # the text again, in the search batch record
            weight = 2 * bulk_store.item_bytes(detail) + bulk_store.item_bytes(act) + entry
            records = (
                len(spaces | {w.workspace_id}) + (text + entry) // search_marks.BATCH_BYTES + 1
            )  # batch records (upper bound)
            if edits and (actions + cost + records > budget or size + weight > bulk_store.MAX_TX_BYTES):
                break
            edits.append((i, self.states[i], detail, act, list(changes)))
            spaces.add(w.workspace_id)
            boards.add(w.board())
            actions += cost
            size += weight
            text += entry
        if not edits:
            return None

        def build(tx: Any) -> None:
            for _, state, detail, act, _ in edits:
                task_store.put_rows(tx, detail, previous=state.updatedAt, search_marker=False)
                tx.save(act)
            search_marks.flush_batch(tx)  # the changed texts' durable search record(s)
            bulk_store.guards(tx, user_id=self.ctx.user_id, workspaces=spaces, boards=boards)

        applied = [{"i": i, "task": self.view(d).model_dump(mode="json"), "changed": ch} for i, _, d, _, ch in edits]
        return bulk_store.Chunk(
            indices=[e[0] for e in edits], applied=applied, build=build, actions=actions, context=edits
        )

    def committed(self, chunk: bulk_store.Chunk) -> None:
        for (i, _, detail, _, changed), rec in zip(chunk.context, chunk.applied, strict=True):
            self.states[i] = detail
            self.results[i] = ItemResult(
                index=i,
                taskId=self.task_ids[i],
                status="applied",
                task=TaskRowView(**rec["task"]),
                changedFields=changed,
                error=None,
            )

    def failed(self, chunk: bulk_store.Chunk, failure: ConditionFailed) -> None:
        self.failed_common(chunk, failure)


@tool(
    "bulk_update_tasks",
    title="Update tasks in bulk",
    description="Edits 1-50 tasks, each as update_task would; per-item results, and the same idempotencyKey finishes a partial run.",
    area="tasks",
    scope="write",
    idempotent=True,
    keyed=True,
    target=each("items", "taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    reads=("task",),
    prefetch=_bulk_reads,
    input_model=BulkUpdateInput,
    output_model=BulkUpdateOutput,
)
def bulk_update_tasks(ctx: CallContext, args: BulkUpdateInput) -> BulkUpdateOutput:
    ids_ = [item.taskId for item in args.items]
    _refuse_duplicates(ids_)
    planner = _UpdatePlanner(ctx, args)
    planner.start(ctx, ids_)
    planner.prepare()
    run = bulk_store.run_chunks(
        planner,
        _markers(ctx, ids_),
        operation="bulk_update_tasks",
        transient=_transient,
        halt_error=_halt_error(ctx),
        conflict_error=_conflict_error(),
    )
    return answer(ctx, planner.output([], BulkUpdateOutput), finished=run.halted is None)


# -- bulk_move_tasks -----------------------------------------------------------------------------
class MoveItem(ToolInput):
    taskId: TaskIdArg
    columnId: Annotated[str, IdShape("column")] = Field(min_length=1, max_length=80, description="cl_…")
    expectedUpdatedAt: ExpectedUpdatedAtArg


class BulkMoveInput(ToolInput):
    items: list[MoveItem] = Field(min_length=1, max_length=MAX_ITEMS, description="Each task once.")
    idempotencyKey: IdempotencyKeyArg


class _MovePlanner(_Planner):
    def __init__(self, ctx: CallContext, args: BulkMoveInput) -> None:
        super().__init__(ctx, len(args.items))
        self.args = args

    def prepare(self) -> None:
        for i in self.pending():
            dest = ids.parse_column(self.args.items[i].columnId)
            if dest is None or dest[1] != self.where[i].board_id:
                self.fail(
                    i,
                    errors.invalid(
                        "columnId",
                        "must be a column of the task's board",
                        "get_board_snapshot lists the board's columns.",
                    ),
                )

    def plan(self, i: int, cols: dict[str, dict[str, Column]]) -> tuple[Task, Any, Column] | None:
        """Item ``i`` appended to its destination as ``cols`` (this chunk's view) stands."""
        state = self.states[i]
        stale = _stale(self.args.items[i].expectedUpdatedAt, state, self)
        if stale is not None:
            self.fail(i, stale)
            return None
        if state.archivedAt:
            self.fail(i, errors.invalid("taskId", "the task is archived; it cannot be moved"))
            return None
        board = state.boardId
        dest_id = self.args.items[i].columnId
        dest = cols.get(board, {}).get(dest_id)
        if dest is None or dest.archivedAt:
            self.fail(
                i,
                errors.invalid(
                    "columnId",
                    "is not an active column of this task's board",
                    "get_board_snapshot lists the board's columns.",
                ),
            )
            return None
        if dest_id == state.columnId and dest.lastRank == state.rank:
            self.results[i] = ItemResult(
                index=i, taskId=self.task_ids[i], status="unchanged", task=self.view(state), error=None
            )
            return None
        moved = task_store.copy(state)
        moved.columnId, moved.rank = dest_id, generate_key_between(dest.lastRank, None)
        moved.updatedAt = clock.next_stamp(state.updatedAt)
        w = self.where[i]
        verb = (
            f"Moved {moved.key} to {dest.name!r} (bulk)"
            if dest_id != state.columnId
            else f"Reordered {moved.key} to the bottom of {dest.name!r} (bulk)"
        )
        act = self.ctx.activity(
            w.workspace_id,
            board,
            "task.moved",
            verb,
            task_id=moved.taskId,
            data={"fromColumnId": state.columnId, "toColumnId": dest_id},
            at=moved.updatedAt,
        )
        return moved, act, dest

    def next_chunk(self, reserved: int) -> bulk_store.Chunk | None:
        budget = bulk_store.MAX_ACTIONS - reserved
        cols = bulk_store.column_copies(self.columns)
        read = {(b, c): (row.lastRank, row) for b, cs in self.columns.items() for c, row in cs.items()}
        edits: list[tuple[int, Task, Task, Any]] = []
        delta: dict[tuple[str, str], int] = {}
        grown: set[tuple[str, str]] = set()
        spaces: set[str] = set()
        boards: set[str] = set()
        actions = size = 0
        for i in self.pending():
            planned = self.plan(i, cols)
            if planned is None:
                continue
            moved, act, dest = planned
            state = self.states[i]
            w = self.where[i]
            src_key, dest_key = (state.boardId, state.columnId), (state.boardId, moved.columnId)
            touched = {src_key, dest_key} - set(delta) - grown
            cost = (
                4  # two rows, the activity row and the task's recent-activity item
                + (w.workspace_id not in spaces)
                + (w.board_id not in boards)
                + len(touched)
                + work_store.actions(moved)
            )
            weight = 2 * bulk_store.item_bytes(moved) + bulk_store.item_bytes(act)
            # a move leaves the text alone; a row without searchVersion (older data) still gets a
            # search batch record: one action per workspace held back for it
            if edits and (
                actions + cost + len(spaces | {w.workspace_id}) > budget or size + weight > bulk_store.MAX_TX_BYTES
            ):
                break
            edits.append((i, state, moved, act))
            spaces.add(w.workspace_id)
            boards.add(w.board())
            actions += cost
            size += weight
            dest.lastRank = moved.rank
            grown.add(dest_key)
            if src_key != dest_key:
                delta[src_key] = delta.get(src_key, 0) - 1
                delta[dest_key] = delta.get(dest_key, 0) + 1
                src = cols.get(state.boardId, {}).get(state.columnId)
                if src is not None:
                    src.taskCount = int(src.taskCount or 0) - 1
                dest.taskCount = int(dest.taskCount or 0) + 1
            else:
                delta.setdefault(src_key, 0)
        if not edits:
            return None
        column_writes = []
        for key in sorted(set(delta) | grown):
            b, c = key
            last_read = read[key][0] if key in read else None
            new_last = cols[b][c].lastRank if key in grown else None
            column_writes.append((b, c, delta.get(key, 0), last_read, new_last))

        def build(tx: Any) -> None:
            for _, state, moved, act in edits:
                task_store.put_rows(tx, moved, previous=state.updatedAt, search_marker=False)
                tx.save(act)
            search_marks.flush_batch(tx)
            bulk_store.update_columns(tx, column_writes)
            bulk_store.guards(tx, user_id=self.ctx.user_id, workspaces=spaces, boards=boards)

        applied = [
            {"i": i, "task": task_row_view(m, cols[m.boardId][m.columnId].name).model_dump(mode="json")}
            for i, _, m, _ in edits
        ]
        return bulk_store.Chunk(
            indices=[e[0] for e in edits],
            applied=applied,
            build=build,
            actions=actions + len(column_writes),
            context=(edits, cols),
        )

    def committed(self, chunk: bulk_store.Chunk) -> None:
        edits, cols = chunk.context
        self.columns = cols
        for (i, _, moved, _), rec in zip(edits, chunk.applied, strict=True):
            self.states[i] = moved
            self.results[i] = ItemResult(
                index=i, taskId=self.task_ids[i], status="applied", task=TaskRowView(**rec["task"]), error=None
            )

    def failed(self, chunk: bulk_store.Chunk, failure: ConditionFailed) -> None:
        self.failed_common(chunk, failure)
        stale = {b for b, cs in self.columns.items() for c in cs if bulk_store.column_hit(failure, b, c)}
        for b in stale:  # a destination's lastRank moved, or it was archived: read the board's columns again
            _, cols = board_store.header(b)
            self.columns[b] = {c.columnId: c for c in cols}

    def notices(self) -> list[str]:
        out = []
        moved_to = {
            (r.task.boardId, r.task.columnId) for r in self.results.values() if r.status == "applied" and r.task
        }
        for b, c in sorted(moved_to):
            col = self.columns.get(b, {}).get(c)
            if col is not None:
                over = _wip_over(col, int(col.taskCount or 0))
                if over:
                    out.append(over)
        return out


@tool(
    "bulk_move_tasks",
    title="Move tasks in bulk",
    description=(
        "Moves 1-50 tasks, each to a column of its own board; items succeed or fail alone, results in order. The same "
        "idempotencyKey applies what is missing."
    ),
    area="tasks",
    scope="write",
    keyed=True,
    target=each("items", "taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    reads=("task",),
    prefetch=_bulk_reads,
    input_model=BulkMoveInput,
    output_model=BulkEditOutput,
)
def bulk_move_tasks(ctx: CallContext, args: BulkMoveInput) -> BulkEditOutput:
    ids_ = [item.taskId for item in args.items]
    _refuse_duplicates(ids_)
    planner = _MovePlanner(ctx, args)
    planner.start(ctx, ids_)
    planner.prepare()
    run = bulk_store.run_chunks(
        planner,
        _markers(ctx, ids_),
        operation="bulk_move_tasks",
        transient=_transient,
        halt_error=_halt_error(ctx),
        conflict_error=_conflict_error(),
    )
    return answer(ctx, planner.output(planner.notices(), BulkEditOutput), finished=run.halted is None)


TOOLS = (bulk_create_tasks, bulk_update_tasks, bulk_move_tasks)
