"""Task items: the compact row and the full item in the board partition, and the number pointer.

Keys: :func:`domain.store.keys.task_compact` (read by snapshots and lists; GSI1
:func:`domain.store.keys.column_order` gives column order), :func:`domain.store.keys.task_full`
(everything including the description) and :func:`domain.store.keys.task_number`
(``workspaceId`` + number -> task id). :func:`put_rows` is the one function that writes a
task's two items, so they never drift: every create, edit, move and archive goes through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from fractional_indexing import generate_key_between, generate_n_keys_between
from pynamodb.exceptions import UpdateError

from domain import clock, ids
from domain.store import boards as board_store
from domain.store import db, idempotency_markers, keys, members, search_marks, work
from domain.store.cas import R, Step, Write, compare_and_set
from domain.store.errors import StoreError
from domain.store.idempotency_markers import IdempotencyMismatch, earlier_entity, put_marker
from domain.store.models import (
    ActivityRow,
    BoardRow,
    ColumnRow,
    CreationMarkerRow,
    RecentActivityRow,
    Row,
    TaskDetailRow,
    TaskNumberRow,
    TaskRow,
    WorkspaceRow,
)
from domain.store.retry import ATTEMPTS, Contended, conflict_backoff

COMPACT_FIELDS = (
    "taskId",
    "number",
    "key",
    "boardId",
    "columnId",
    "rank",
    "title",
    "priority",
    "dueDate",
    "assigneeIds",
    "labelIds",
    "subtaskCount",
    "subtasksDone",
    "createdAt",
    "updatedAt",
)


class ColumnArchived(StoreError):
    """The destination column is archived."""


class Earlier(idempotency_markers.Earlier):
    """A keyed create already committed; ``task_id`` (the marker's ``entity_id``) names the task it
    made. A spec declaring ``replay`` lets the pipeline answer it (create_task)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


def compact_of(detail: TaskDetailRow) -> TaskRow:
    """The compact row that goes with ``detail`` (same fields minus the body; GSI1 column order)."""
    row = TaskRow(
        *keys.task_compact(detail.boardId, int(detail.number)), **{f: getattr(detail, f) for f in COMPACT_FIELDS}
    )
    row.GSI1PK, row.GSI1SK = keys.column_order(detail.columnId, detail.rank, int(detail.number))
    return row


def copy(detail: TaskDetailRow) -> TaskDetailRow:
    return TaskDetailRow.from_raw_data(detail.serialize())


def full_key(ref: ids.TaskRef) -> tuple[str, str]:
    """The key of ``ref``'s full item (a prefetch naming what it may read eventually consistent)."""
    return keys.task_full(ref.board_id, ref.number)


def get(ref: ids.TaskRef) -> TaskDetailRow | None:
    """The full item (one consistent GetItem), or ``None``."""
    try:
        return TaskDetailRow.get(*keys.task_full(ref.board_id, ref.number), consistent_read=True)
    except TaskDetailRow.DoesNotExist:
        return None


def get_compact(ref: ids.TaskRef) -> TaskRow | None:
    """The compact row (one consistent GetItem), or ``None``: what answers for a bulk-created task
    whose full item is still being written."""
    try:
        return TaskRow.get(*keys.task_compact(ref.board_id, ref.number), consistent_read=True)
    except TaskRow.DoesNotExist:
        return None


def id_for_number(workspace_id: str, number: int) -> str | None:
    """The task id behind ``workspaceId`` + number (the pointer item), or ``None``."""
    try:
        return TaskNumberRow.get(*keys.task_number(workspace_id, number), consistent_read=True).taskId
    except TaskNumberRow.DoesNotExist:
        return None


def put_rows(
    tx: Any,
    detail: TaskDetailRow,
    *,
    previous: str | None,
    part: Literal["both", "compact", "full"] = "both",
    search_marker: bool = True,
) -> None:
    """Write a task's full item and compact row together.

    ``previous=None`` creates the task (the full item must not exist); otherwise the full item
    is replaced under ``updatedAt = previous`` and "not archived", returning the stored item on
    failure (``ALL_OLD``). An archived task's compact row is deleted: lists and snapshots only
    hold tasks on the board.

    A changed title or description (or an archive) also puts the search index's pending marker
    (:func:`domain.store.search_marks.mark_task`); the postings follow the commit. Bulk writes
    (``part="full"``, ``search_marker=False``: 50 tasks already fill a transaction) keep the doc
    for one batch record per transaction, which the caller puts with
    :func:`domain.store.search_marks.flush_batch` before the commit.

    ``part`` splits a create in two (bulk_create_tasks only, docs/data-model.md "Bulk writes"):
    ``"compact"`` puts the compact row alone, under "must not exist"; ``"full"`` the full item alone.
    """
    if part == "compact":
        tx.save(compact_of(detail), condition=Row.PK.does_not_exist())
        return
    search_marks.mark_task(tx, detail, fresh=previous is None, marker=search_marker and part == "both")
    work.sync(tx, detail)  # the assignees' work-index entries, in this transaction (domain.store.work)
    if previous is None:
        tx.save(detail, condition=Row.PK.does_not_exist())
    else:
        tx.save(
            detail,
            condition=(TaskDetailRow.updatedAt == previous) & TaskDetailRow.archivedAt.does_not_exist(),
            return_values="ALL_OLD",
        )
    if part == "full":
        return
    if detail.archivedAt:
        tx.delete(TaskRow(*keys.task_compact(detail.boardId, int(detail.number))))
    else:
        tx.save(compact_of(detail))


def write(
    detail: TaskDetailRow,
    previous: str,
    *,
    workspace_id: str,
    actor_id: str,
    activity: ActivityRow,
    result: Callable[[], R],
    extra: Callable[[Any], None] | None = None,
    replan_on: TaskDetailRow | None = None,
) -> Write[TaskDetailRow, R]:
    """One conditional task write for :func:`domain.store.cas.compare_and_set`.

    Every such write carries :func:`domain.store.boards.open_check`: a task of an archived board
    is read-only (:class:`~domain.store.boards.BoardArchived`). The retry plans again on the
    stored item returned by a failed ``updatedAt`` condition. A failure that returned no item
    means the task or the caller's membership is gone (:class:`~domain.store.db.Missing`) —
    unless ``replan_on`` is given (a condition in ``extra`` may have lost a race): then that
    state is planned again.
    """

    def build(tx: Any) -> None:
        put_rows(tx, detail, previous=previous)
        members.guard(tx, workspace_id, actor_id)
        board_store.open_check(tx, detail.boardId)
        tx.save(activity)
        if extra:
            extra(tx)

    def retry(failure: db.ConditionFailed) -> TaskDetailRow:
        if board_store.closed(failure, detail.boardId):
            raise board_store.BoardArchived(detail.boardId)
        stored = failure.item(detail.PK, detail.SK)
        if stored:
            return TaskDetailRow.from_raw_data(stored)
        if members.guard_failed(failure, workspace_id, actor_id) or replan_on is None:
            raise db.Missing(detail.taskId)
        return replan_on

    return Write(build=build, result=result, retry=retry)


def edit(operation: str, state: TaskDetailRow, plan: Callable[[TaskDetailRow], Step[TaskDetailRow, R]]) -> R:
    """Compare-and-set on a task: ``plan(state)`` returns :func:`write` or ``Unchanged``."""
    return compare_and_set(operation, state, plan)


def claim_numbers(workspace_id: str, count: int = 1) -> tuple[int, WorkspaceRow]:
    """Claim ``count`` consecutive task numbers of a workspace: one ``UpdateItem`` that adds
    ``count`` to the head's ``taskCounter`` and returns the head as written (``ALL_NEW``).

    Returns ``(first number, workspace head)``: the numbers are ``first .. first + count - 1``,
    and no other claim ever gets them. A claim is not a transaction and waits on no other
    writer; a create that fails after claiming leaves its numbers unused (docs/data-model.md,
    "Human task keys": numbers are unique and increasing, gaps allowed). DynamoDB refuses a
    single write to an item that an in-flight transaction holds (``TransactionConflictException``,
    e.g. an update_workspace); that is retried within the "transaction" budget.

    Raises:
        Missing: the workspace is gone.
        Contended: every attempt met a transaction on the head.
    """
    head = WorkspaceRow(*keys.workspace_head(workspace_id))
    attempts = ATTEMPTS["transaction"]
    for attempt in range(attempts):
        try:
            head.update(actions=[WorkspaceRow.taskCounter.add(count)], condition=Row.PK.exists())
        except UpdateError as exc:
            response = getattr(exc.cause, "response", None)  # None for a timeout or a dropped connection
            code = ((response or {}).get("Error") or {}).get("Code") if isinstance(response, dict) else None
            if code == "ConditionalCheckFailedException":
                raise db.Missing(workspace_id) from exc
            if code != "TransactionConflictException":
                raise
            if attempt + 1 < attempts:
                conflict_backoff(attempt)
            continue
        return int(head.taskCounter) - count + 1, head
    raise Contended("transaction", attempts)


def release_numbers(
    workspace_id: str, first: int, count: int = 1, *, unless_written: tuple[str, str] | None = None
) -> None:
    """Give back numbers a create claimed and then did not use, when no later claim was made
    (``taskCounter`` still ends at them): one conditional ``UpdateItem``, best effort. A quiet
    workspace thus keeps its numbers gapless; under concurrent creates the gap stays.

    ``unless_written`` is the key of an item the create's (first) transaction puts, given when
    the failure may hide a commit (a timeout after DynamoDB applied it): one consistent
    ``GetItem`` first, and the numbers are kept when that item exists (the create committed
    and uses them) or cannot be read. Otherwise the counter would fall below a committed task's
    number, and the keyed retry that finds the creation marker would leave it there."""
    if unless_written is not None:
        try:
            TaskRow.get(*unless_written, consistent_read=True, attributes_to_get=["PK", "SK", "kind"])
            return  # committed: the numbers are in use
        except TaskRow.DoesNotExist:
            pass
        except Exception:  # noqa: BLE001 - unknown whether it committed: keep the gap
            return
    head = WorkspaceRow(*keys.workspace_head(workspace_id))
    try:
        head.update(
            actions=[WorkspaceRow.taskCounter.add(-count)], condition=WorkspaceRow.taskCounter == first + count - 1
        )
    except Exception:  # noqa: BLE001 - best effort: a later claim, a gone workspace or an unreachable store keeps the gap
        pass


# What ends a create with nothing written: its claimed numbers are given back at once. Any other
# exception (a timeout, a reset) may hide a commit: release_numbers checks the create's first
# compact row before giving them back.
NOT_WRITTEN: tuple[type[BaseException], ...] = (
    db.Missing,
    db.ConditionFailed,
    Contended,
    ColumnArchived,
    Earlier,
    board_store.BoardArchived,
    IdempotencyMismatch,
)


def give_back(
    workspace_id: str, board_id: str, first: int, count: int, failed: BaseException, *, definite: bool = False
) -> None:
    """Release the numbers a failed create claimed (:func:`release_numbers`), checking for a
    hidden commit unless ``failed`` is a definite refusal (:data:`NOT_WRITTEN`, or ``definite``)."""
    definite = definite or isinstance(failed, NOT_WRITTEN)
    release_numbers(workspace_id, first, count, unless_written=None if definite else keys.task_compact(board_id, first))


def planned_column(pending: list[Any], col_key: tuple[str, str], column_id: str) -> ColumnRow:
    """The column a create plans on: the image a lost race (or the access read) left in
    ``pending``, else one consistent GetItem.

    Raises:
        Missing: the column does not exist.
    """
    if pending:
        column = pending.pop()
    else:
        try:
            column = ColumnRow.get(*col_key, consistent_read=True)
        except ColumnRow.DoesNotExist:
            column = None
    if not isinstance(column, ColumnRow):
        raise db.Missing(column_id)
    return column


def create(
    *,
    workspace_id: str,
    board_id: str,
    column_id: str,
    actor_id: str,
    build_detail: Callable[[WorkspaceRow, ColumnRow, int, str], TaskDetailRow],
    activity_for: Callable[[TaskDetailRow, ColumnRow], ActivityRow],
    marker: CreationMarkerRow | None,
    first_read: dict[tuple[str, str], Any] | None = None,
    extra: Callable[[Any, TaskDetailRow], None] | None = None,
    first_column: ColumnRow | None = None,
) -> tuple[TaskDetailRow, ColumnRow | None]:
    """Create a task at the bottom of a column with the next workspace number.

    The number comes from :func:`claim_numbers` (one ``UpdateItem ADD``), claimed once per call
    after the first read of the column found it live, and kept for every later attempt. Each
    attempt reads the column (GetItem; the first attempt may use ``first_column``, or the column in
    ``first_read``: the column read with the membership check) and writes in one transaction: column (``lastRank = value read``,
    not archived, count +1), board (count +1), the board's open check, both task items, the
    number pointer (must not exist), the membership guard, the activity row and the marker. The
    workspace head is in no task transaction. A lost race on the column's ``lastRank`` reads the
    column again.

    Returns ``(task, column)``; ``column`` is ``None`` when an earlier keyed create answered.

    Raises:
        Missing: the column, its board, the workspace or the caller's membership is gone.
        BoardArchived: the board is archived (its tasks are read-only).
        ColumnArchived: the column is archived.
        Earlier: a keyed create with the same key committed before (its task id).
        IdempotencyMismatch, Contended.
    """
    col_key = keys.column(board_id, column_id)
    pending = [first_read[col_key]] if first_read and col_key in first_read else []
    if first_column is not None:
        pending = [first_column]
    claimed: list[tuple[int, WorkspaceRow]] = []

    def plan(_: None) -> Write[None, tuple[TaskDetailRow, ColumnRow | None]]:
        column = planned_column(pending, col_key, column_id)
        if column.archivedAt:
            raise ColumnArchived(column_id)
        if not claimed:
            claimed.append(claim_numbers(workspace_id))
        number, wsrow = claimed[0]
        rank = generate_key_between(column.lastRank, None)
        detail = build_detail(wsrow, column, number, rank)
        pointer = TaskNumberRow(*keys.task_number(workspace_id, number), taskId=detail.taskId)
        act = activity_for(detail, column)
        if marker is not None:
            marker.entityId = detail.taskId
        last_rank = column.lastRank

        def build(tx: Any) -> None:
            put_marker(tx, marker)
            col_cond = ColumnRow.archivedAt.does_not_exist() & (
                ColumnRow.lastRank == last_rank if last_rank else ColumnRow.lastRank.does_not_exist()
            )
            tx.update(
                ColumnRow(*col_key),
                actions=[ColumnRow.lastRank.set(rank), ColumnRow.taskCount.add(1)],
                condition=col_cond & Row.PK.exists(),
                return_values="ALL_OLD",
            )
            tx.update(
                BoardRow(*keys.board_head(board_id)), actions=[BoardRow.taskCount.add(1)], condition=Row.PK.exists()
            )
            board_store.open_check(tx, board_id)
            put_rows(tx, detail, previous=None)
            tx.save(pointer, condition=Row.PK.does_not_exist())
            members.guard(tx, workspace_id, actor_id)
            tx.save(act)
            if extra is not None:  # items written with the task (mj_start_work's first claim on it)
                extra(tx, detail)

        def retry(failure: db.ConditionFailed) -> None:
            earlier = earlier_entity(failure, marker)
            if earlier:
                raise Earlier(earlier)
            if board_store.closed(failure, board_id):
                raise board_store.BoardArchived(board_id)
            if failure.hit(*keys.board_head(board_id)) or members.guard_failed(failure, workspace_id, actor_id):
                raise db.Missing(column_id)
            if failure.hit(*col_key):
                stored = failure.item(*col_key)
                if not stored:
                    raise db.Missing(column_id)
                # the column's last rank moved (another create or a move won), or it was archived:
                # plan again on the image the failure returned
                pending.append(ColumnRow.from_raw_data(stored))
            if failure.hit(*keys.task_number(workspace_id, number)) or failure.hit(*keys.task_full(board_id, number)):
                claimed.clear()  # the number is taken (a counter set back by hand): claim another

        return Write(build=build, result=lambda: (detail, column), retry=retry)

    try:
        return compare_and_set("create_task", None, plan)
    except Exception as failed:
        if claimed:
            give_back(workspace_id, board_id, claimed[0][0], 1, failed)
        raise


# Ranks are fractional-index strings; inserting again and again at one spot lengthens them by
# about a character every few moves, and a sort key may not pass 1 KB. A move whose new rank
# would be longer than MAX_RANK_LENGTH first spreads the ranks of up to REBALANCE_SIDE tasks on
# each side of the slot evenly between the ranks just outside that window, in the move's own
# transaction (2 actions per re-ranked task: at most 80 of the 100 a transaction holds).
MAX_RANK_LENGTH = 24
REBALANCE_SIDE = 20


@dataclass(frozen=True)
class Rebalance:
    """The new rank of the moved task, the neighbours re-ranked with it, and the column's new
    ``lastRank`` when the window reaches the column's end."""

    rank: str
    neighbours: tuple[tuple[TaskRow, str], ...]
    last_rank: str | None


def rebalance(board_id: str, column_id: str, lo: str | None, hi: str | None, *, moving_task: str) -> Rebalance:
    """Ranks for a slot between ``lo`` and ``hi`` that stay short: the window around the slot
    (two GSI1 Queries of at most ``REBALANCE_SIDE + 2`` rows) is spread evenly."""
    pk = keys.column_order_partition(column_id)
    left: list[TaskRow] = []
    right: list[TaskRow] = []
    if lo is not None:
        rows = TaskRow.gsi1.query(pk, TaskRow.GSI1SK <= f"{lo}#~", scan_index_forward=False, limit=REBALANCE_SIDE + 2)
        left = [r for r in rows if isinstance(r, TaskRow) and r.taskId != moving_task][: REBALANCE_SIDE + 1]
    if hi is not None:
        rows = TaskRow.gsi1.query(pk, TaskRow.GSI1SK >= f"{hi}#", limit=REBALANCE_SIDE + 2)
        right = [r for r in rows if isinstance(r, TaskRow) and r.taskId != moving_task][: REBALANCE_SIDE + 1]
    outer_lo = left[REBALANCE_SIDE].rank if len(left) > REBALANCE_SIDE else None
    outer_hi = right[REBALANCE_SIDE].rank if len(right) > REBALANCE_SIDE else None
    window_left = list(reversed(left[:REBALANCE_SIDE]))
    window_right = right[:REBALANCE_SIDE]
    ranks = generate_n_keys_between(outer_lo, outer_hi, len(window_left) + 1 + len(window_right))
    mine = ranks[len(window_left)]
    neighbours = tuple(
        zip(window_left + window_right, ranks[: len(window_left)] + ranks[len(window_left) + 1 :], strict=True)
    )
    reaches_end = outer_hi is None
    last = ranks[-1] if reaches_end else None
    return Rebalance(mine, tuple((row, new) for row, new in neighbours if row.rank != new), last)


def _rerank(tx: Any, board_id: str, row: TaskRow, new: str) -> None:
    """Give one task a new rank on both of its items, under ``rank = <value read>``."""
    number = int(row.number)
    tx.update(
        TaskDetailRow(*keys.task_full(board_id, number)),
        actions=[TaskDetailRow.rank.set(new)],
        condition=TaskDetailRow.rank == row.rank,
    )
    tx.update(
        TaskRow(*keys.task_compact(board_id, number)),
        actions=[TaskRow.rank.set(new), TaskRow.GSI1SK.set(keys.column_order_sort_key(new, number))],
        condition=TaskRow.rank == row.rank,
    )


def move_extra(
    *, board_id: str, old_column: str, dest: ColumnRow, rank: str, spread: Rebalance | None = None
) -> Callable[[Any], None]:
    """The column actions of a move: counts, the destination's ``lastRank`` when it grows (or
    when a rebalance re-ranked the column's end), and the rebalanced neighbours."""
    moving_out = dest.columnId != old_column
    last_rank = dest.lastRank
    new_last = spread.last_rank if spread is not None and spread.last_rank is not None else rank
    becomes_last = last_rank is None or new_last > last_rank or (spread is not None and spread.last_rank is not None)

    def extra(tx: Any) -> None:
        if spread is not None:
            for row, new in spread.neighbours:
                _rerank(tx, board_id, row, new)
        col_actions: list[Any] = []
        if becomes_last:
            col_actions.append(ColumnRow.lastRank.set(new_last))
        if moving_out:
            col_actions.append(ColumnRow.taskCount.add(1))
            tx.update(
                ColumnRow(*keys.column(board_id, old_column)),
                actions=[ColumnRow.taskCount.add(-1)],
                condition=Row.PK.exists(),
            )
        dest_key = keys.column(board_id, dest.columnId)
        live = ColumnRow.archivedAt.does_not_exist() & Row.PK.exists()
        if col_actions:
            cond = live
            if becomes_last:
                cond = cond & (ColumnRow.lastRank == last_rank if last_rank else ColumnRow.lastRank.does_not_exist())
            tx.update(ColumnRow(*dest_key), actions=col_actions, condition=cond)
        else:
            tx.condition_check(ColumnRow, *dest_key, condition=live)

    return extra


def archive_extra(*, board_id: str, column_id: str) -> Callable[[Any], None]:
    """The counter actions of an archive: the column and the board lose one task."""

    def extra(tx: Any) -> None:
        tx.update(
            ColumnRow(*keys.column(board_id, column_id)),
            actions=[ColumnRow.taskCount.add(-1)],
            condition=Row.PK.exists(),
        )
        tx.update(BoardRow(*keys.board_head(board_id)), actions=[BoardRow.taskCount.add(-1)], condition=Row.PK.exists())

    return extra


def column_and_anchor(
    board_id: str, column_id: str, anchor_number: int | None
) -> tuple[ColumnRow | None, TaskRow | None]:
    """The destination column and, for a before/after move, the anchor's compact row (one BatchGetItem)."""
    wanted = [keys.column(board_id, column_id)]
    if anchor_number is not None:
        wanted.append(keys.task_compact(board_id, anchor_number))
    got = {r.SK: r for r in Row.batch_get(wanted, consistent_read=True)}
    column = got.get(wanted[0][1])
    anchor = got.get(wanted[1][1]) if anchor_number is not None else None
    return (column if isinstance(column, ColumnRow) else None), (anchor if isinstance(anchor, TaskRow) else None)


def neighbour_rank(column_id: str, anchor: TaskRow, *, before: bool, moving_task: str) -> str | None:
    """The rank of the task on the other side of ``anchor`` in the column (GSI1, limit 2)."""
    anchor_sk = keys.column_order_sort_key(anchor.rank, int(anchor.number))
    cond = TaskRow.GSI1SK < anchor_sk if before else TaskRow.GSI1SK > anchor_sk
    rows = TaskRow.gsi1.query(keys.column_order_partition(column_id), cond, scan_index_forward=not before, limit=2)
    found = [n for n in rows if isinstance(n, TaskRow) and n.taskId != moving_task]
    return found[0].rank if found else None


def board_rows(board_id: str, *, live_columns: set[str] | None, limit: int, start: dict[str, Any] | None) -> Any:
    """A Query over the board's compact rows by number; ``live_columns`` filters server-side."""
    return TaskRow.query(
        keys.board_partition(board_id),
        Row.SK.startswith(keys.TASK_ROWS_PREFIX),
        filter_condition=TaskRow.columnId.is_in(*live_columns) if live_columns is not None else None,
        limit=limit,
        last_evaluated_key=start,
        consistent_read=True,
    )


def compact_in(rows: Iterable[Any]) -> list[TaskRow]:
    """The compact task rows among a page's rows (:func:`board_rows`, :func:`column_rows`), in order."""
    return [r for r in rows if isinstance(r, TaskRow)]


def list_condition(
    *,
    assignee: str | None = None,
    label_id: str | None = None,
    priority: str | None = None,
    due_before: str | None = None,
    due_after: str | None = None,
    overdue: bool | None = None,
    updated_since: str | None = None,
) -> Any:
    """list_tasks' server-side filter for :func:`filtered_rows`: every given criterion, combined
    with AND, or ``None`` when none is given. ``assignee`` a user id among the assignees,
    ``label_id`` a label id on the task, ``priority`` equal, ``due_before`` (exclusive) and
    ``due_after`` (inclusive) ISO dates or stamps, ``overdue`` True for tasks past their due date
    now (a date-only due date once its day is over, a stamp once it has passed; clock.now_iso),
    False for the others (no due date included), ``updated_since`` an ISO stamp (inclusive)."""
    parts: list[Any] = []
    if assignee is not None:
        parts.append(TaskRow.assigneeIds.contains(assignee))
    if label_id is not None:
        parts.append(TaskRow.labelIds.contains(label_id))
    if priority is not None:
        parts.append(TaskRow.priority == priority)
    if due_before is not None:
        parts.append(TaskRow.dueDate < due_before)
    if due_after is not None:
        parts.append(TaskRow.dueDate >= due_after)
    if overdue is not None:
        now = clock.now_iso()
        today = now[:10]
        late = (TaskRow.dueDate < today) | ((TaskRow.dueDate > today) & (TaskRow.dueDate < now))
        parts.append(late if overdue else (TaskRow.dueDate.does_not_exist() | ~late))
    if updated_since is not None:
        parts.append(TaskRow.updatedAt >= updated_since)
    if not parts:
        return None
    condition = parts[0]
    for part in parts[1:]:
        condition = condition & part
    return condition


def filtered_rows(
    board_id: str, column_id: str | None, condition: Any, *, live_columns: set[str] | None
) -> list[TaskRow]:
    """Every compact row of a board (by number) or a column (board order) matching ``condition``,
    read to the end so the count is exact: one Query request per 1 MB read (about 3,000 compact
    rows), filtered server-side."""
    result: Iterable[Row]
    if column_id is not None:
        result = TaskRow.gsi1.query(keys.column_order_partition(column_id), filter_condition=condition)
    else:
        if live_columns is not None:
            condition = condition & TaskRow.columnId.is_in(*live_columns)
        result = TaskRow.query(
            keys.board_partition(board_id),
            Row.SK.startswith(keys.TASK_ROWS_PREFIX),
            filter_condition=condition,
            consistent_read=True,
        )
    return [r for r in result if isinstance(r, TaskRow)]


def board_rows_shape(board_id: str) -> dict[str, str]:
    return {"PK": keys.board_partition(board_id), "SK": keys.TASK_ROWS_PREFIX}


def column_rows(column_id: str, *, limit: int, start: dict[str, Any] | None) -> Any:
    """A Query over one column's compact rows in board order (GSI1)."""
    return TaskRow.gsi1.query(keys.column_order_partition(column_id), limit=limit, last_evaluated_key=start)


def column_rows_shape(board_id: str, column_id: str) -> dict[str, str]:
    return {
        "GSI1PK": keys.column_order_partition(column_id),
        "GSI1SK": "",
        "PK": keys.board_partition(board_id),
        "SK": keys.TASK_ROWS_PREFIX,
    }


def details_of(rows: list[TaskRow]) -> dict[str, TaskDetailRow]:
    """The full items behind compact rows (one BatchGetItem per 100), by task id."""
    if not rows:
        return {}
    wanted = [keys.task_full(r.boardId, int(r.number)) for r in rows]
    return {d.taskId: d for d in TaskDetailRow.batch_get(wanted, consistent_read=True) if isinstance(d, TaskDetailRow)}


def column_name(board_id: str, column_id: str) -> str | None:
    try:
        return ColumnRow.get(*keys.column(board_id, column_id)).name
    except ColumnRow.DoesNotExist:
        return None


def new_detail(
    *,
    workspace_prefix: str,
    board_id: str,
    column_id: str,
    number: int,
    rank: str,
    title: str,
    priority: str,
    due: str | None,
    description: str,
    created_by: str,
) -> TaskDetailRow:
    now = clock.now_iso()
    return TaskDetailRow(
        *keys.task_full(board_id, number),
        taskId=ids.task_id(board_id, number),
        number=number,
        key=f"{workspace_prefix}-{number}",
        boardId=board_id,
        columnId=column_id,
        rank=rank,
        title=title,
        priority=priority,
        dueDate=due,
        assigneeIds=[],
        labelIds=[],
        createdAt=now,
        updatedAt=now,
        description=description,
        createdBy=created_by,
    )


def witnessed(detail: TaskDetailRow | None, side: list[Row], ref: ids.TaskRef) -> TaskDetailRow | None:
    """``detail``, an eventually consistent read of ``ref``'s full item, when its freshness
    witness is the one the recent item in ``side`` (the strongly consistent :func:`sidecar`
    Query) holds; else the item read again strongly (one GetItem): a stale read, an absent item,
    or a recent item no witnessed write has reached yet (domain.store.witness)."""
    recent = next((r for r in side if isinstance(r, RecentActivityRow)), None)
    expected = recent.taskWitness if recent is not None else None
    if detail is not None and expected is not None and detail.witness == expected:
        return detail
    return get(ref)


def sidecar(task_id: str) -> list[Row]:
    """A task's side items that a detailed get_task shows: one Query over
    :data:`domain.store.keys.SIDECAR_RANGE` of the task's side partition (link edges ``LN#…``,
    then subtasks ``ST#…`` in checklist order), never its comments. Callers pick the item
    types they show by class."""
    lo, hi = keys.SIDECAR_RANGE
    return list(Row.query(keys.task_side_partition(task_id), Row.SK.between(lo, hi), consistent_read=True))
