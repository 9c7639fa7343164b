"""Board items: the board head and columns in the board partition, the entry in the workspace.

Keys: :func:`domain.store.keys.board_head`, :func:`domain.store.keys.column`,
:func:`domain.store.keys.board_entry`. One Query over ``HEADER_RANGE`` returns the head and
every column; one over ``LABELED_HEADER_RANGE`` adds the labels, one over ``SNAPSHOT_RANGE``
the compact task rows as well.

Whether a board is archived is its entry's ``archivedAt`` (docs/data-model.md, "Archived
boards"): archive_board and unarchive_boards write that one item per board, and every write on
an archived board's tasks carries :func:`open_check` on it.
"""

from __future__ import annotations

from typing import Any

from fractional_indexing import generate_n_keys_between

from domain import clock, ids
from domain.store import columns as column_store
from domain.store import db, keys, members, warm
from domain.store.board_entry import closed as closed
from domain.store.board_entry import entry_key as entry_key
from domain.store.board_entry import is_archived as is_archived
from domain.store.board_entry import open_check as open_check
from domain.store.cas import Unchanged, Write, compare_and_set
from domain.store.errors import StoreError
from domain.store.idempotency_markers import Earlier, earlier_entity, put_marker
from domain.store.models import (
    ActivityRow,
    BoardEntryRow,
    BoardRow,
    ColumnRow,
    CreationMarkerRow,
    LabelRow,
    Row,
    TaskRow,
)


class BoardArchived(StoreError):
    """The board is archived (its tasks are read-only), or its entry is gone."""

    answer = "board_archived"


def get_head(board_id: str) -> BoardRow | None:
    try:
        return BoardRow.get(*keys.board_head(board_id), consistent_read=True)
    except BoardRow.DoesNotExist:
        return None


def header(board_id: str) -> tuple[BoardRow | None, list[ColumnRow]]:
    """Board head and every column in one Query."""
    board: BoardRow | None = None
    columns: list[ColumnRow] = []
    lo, hi = keys.HEADER_RANGE
    for row in Row.query(keys.board_partition(board_id), Row.SK.between(lo, hi), consistent_read=True):
        if isinstance(row, BoardRow):
            board = row
        elif isinstance(row, ColumnRow):
            columns.append(row)
    return board, columns


def column_list(board_id: str) -> list[ColumnRow]:
    """The board's columns for naming a task's column (get_task): the list a consistent
    :func:`header` read returned in this process at most ``JENTRIX_TOKEN_CACHE_SECONDS`` ago
    (:mod:`domain.store.warm`; a column write here forgets it at once), else that Query (which
    keeps its answer). For read tools only: writes read the header fresh."""
    hit = warm.COLUMNS.get(board_id)
    if hit is not None:
        return hit
    head, columns = header(board_id)
    if head is not None:
        warm.COLUMNS.put(board_id, columns)
    return columns


def labeled_header(board_id: str) -> tuple[BoardRow | None, list[ColumnRow], list[LabelRow]]:
    """Board head, every column and every label in one Query (``LABELED_HEADER_RANGE``)."""
    board: BoardRow | None = None
    columns: list[ColumnRow] = []
    labels: list[LabelRow] = []
    lo, hi = keys.LABELED_HEADER_RANGE
    for row in Row.query(keys.board_partition(board_id), Row.SK.between(lo, hi), consistent_read=True):
        if isinstance(row, BoardRow):
            board = row
        elif isinstance(row, ColumnRow):
            columns.append(row)
        elif isinstance(row, LabelRow):
            labels.append(row)
    return board, columns, labels


MAX_LABELS = 100  # labels per board (domain.store.labels.MAX_PER_BOARD); they sort inside the snapshot range
# the head, up to 50 active columns and a few archived ones, the labels, and one task past the cap
SNAPSHOT_PAGE_SLACK = 64 + MAX_LABELS


def snapshot(board_id: str, cap: int) -> tuple[BoardRow | None, list[ColumnRow], list[TaskRow], bool, list[LabelRow]]:
    """Head, columns, labels and up to ``cap`` compact rows of tasks in active columns, in one Query.

    Columns sort before tasks, so the active set is known when the first task row arrives;
    rows of archived columns are skipped without using up the cap. Pages hold ``cap`` plus
    room for the head and the columns, so a board of any size is read only as far as the
    answer needs (one Query for up to ``cap`` tasks unless archived columns' tasks are in the
    way; the next page is read only then). Labels sort between the columns and the tasks and
    come with the same pages. Returns ``(board, columns, tasks, truncated, labels)``.
    """
    board: BoardRow | None = None
    columns: list[ColumnRow] = []
    labels: list[LabelRow] = []
    tasks: list[TaskRow] = []
    live: set[str] | None = None
    truncated = False
    lo, hi = keys.SNAPSHOT_RANGE
    page = cap + SNAPSHOT_PAGE_SLACK
    for row in Row.query(keys.board_partition(board_id), Row.SK.between(lo, hi), consistent_read=True, page_size=page):
        if isinstance(row, BoardRow):
            board = row
        elif isinstance(row, ColumnRow):
            columns.append(row)
        elif isinstance(row, LabelRow):
            labels.append(row)
        elif isinstance(row, TaskRow):
            if live is None:
                live = {c.columnId for c, _ in column_store.ordered(columns)}
            if row.columnId not in live:
                continue
            if len(tasks) >= cap:
                truncated = True
                break
            tasks.append(row)
    return board, columns, tasks, truncated, labels


def entries(workspace_id: str) -> list[BoardEntryRow]:
    """The workspace's board entries (one Query)."""
    pk = keys.workspace_partition(workspace_id)
    return [
        r
        for r in Row.query(pk, Row.SK.startswith(keys.BOARD_ENTRIES_PREFIX), consistent_read=True)
        if isinstance(r, BoardEntryRow)
    ]


def create(
    workspace_id: str,
    name: str,
    kind: str,
    column_names: list[str],
    *,
    actor_id: str,
    activity: ActivityRow,
    marker: CreationMarkerRow | None,
) -> tuple[BoardRow, list[ColumnRow], bool]:
    """Create a board with its columns in one transaction; ``(board, columns, created)``.

    With ``marker``, the marker names the new board and goes into the same transaction.

    Raises:
        Earlier: the marker's key already created a board with these arguments (its id).
        Missing: the caller is no longer a member.
        IdempotencyMismatch: the key already created a board with other arguments.
    """
    now = activity.at
    board_id = activity.boardId
    board = BoardRow(
        *keys.board_head(board_id),
        boardId=board_id,
        workspaceId=workspace_id,
        name=name,
        boardKind=kind,
        taskCount=0,
        activeColumns=len(column_names),
        createdAt=now,
        updatedAt=now,
    )
    entry = BoardEntryRow(
        *keys.board_entry(workspace_id, board_id), boardId=board_id, name=name, boardKind=kind, createdAt=now
    )
    cols = []
    for n, (col_name, pos) in enumerate(
        zip(column_names, generate_n_keys_between(None, None, len(column_names)), strict=True)
    ):
        cid = ids.new_column_id(board_id)
        # the final default column is the done column: its tasks are finished work (list_my_work)
        cols.append(
            ColumnRow(
                *keys.column(board_id, cid),
                columnId=cid,
                boardId=board_id,
                name=col_name,
                position=pos,
                taskCount=0,
                createdAt=now,
                updatedAt=now,
                done=n == len(column_names) - 1,
            )
        )
    if marker is not None:
        marker.entityId = board_id

    def build(tx: Any) -> None:
        put_marker(tx, marker)
        members.guard(tx, workspace_id, actor_id)
        tx.save(board, condition=Row.PK.does_not_exist())
        tx.save(entry)
        for c in cols:
            tx.save(c)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        earlier = earlier_entity(failure, marker)
        if earlier:
            raise Earlier(earlier) from None
        raise db.Missing(workspace_id) from None
    return board, cols, True


def rename(board: BoardRow, name: str, *, actor_id: str, activity_for: Any) -> BoardRow:
    """Rename with compare-and-set on ``updatedAt``; re-applied on a concurrent writer's image.

    ``activity_for(old_name, stamp)`` builds the activity row of one attempt.

    Raises:
        Missing: the board or the caller's membership is gone.
        Contended: the board kept changing.
    """
    ws = board.workspaceId

    def plan(current: BoardRow) -> Write[BoardRow, BoardRow] | Unchanged[BoardRow]:
        if current.name == name:
            return Unchanged(current)
        previous = current.updatedAt
        stamp = clock.next_stamp(previous)
        act = activity_for(current.name, stamp)

        def build(tx: Any) -> None:
            tx.update(
                current,
                actions=[BoardRow.name.set(name), BoardRow.updatedAt.set(stamp)],
                condition=BoardRow.updatedAt == previous,
                return_values="ALL_OLD",
            )
            tx.update(
                BoardEntryRow(*keys.board_entry(ws, current.boardId)),
                actions=[BoardEntryRow.name.set(name)],
                condition=Row.PK.exists(),
            )
            members.guard(tx, ws, actor_id)
            tx.save(act)

        def done() -> BoardRow:
            current.name, current.updatedAt = name, stamp
            return current

        def retry(failure: db.ConditionFailed) -> BoardRow:
            stored = failure.item(current.PK, current.SK)
            if not stored:
                raise db.Missing(current.boardId)
            return BoardRow.from_raw_data(stored)  # someone else wrote: go again on their state

        return Write(build=build, result=done, retry=retry)

    return compare_and_set("rename_board", board, plan)


# -- archive / unarchive -----------------------------------------------------------------------
def get_entries(board_ids: list[str]) -> dict[str, BoardEntryRow]:
    """Board entries by board id (one consistent BatchGetItem per 100)."""
    if not board_ids:
        return {}
    found = BoardEntryRow.batch_get([entry_key(b) for b in board_ids], consistent_read=True)
    return {r.boardId: r for r in found if isinstance(r, BoardEntryRow)}


def archive(entry: BoardEntryRow, *, actor_id: str, activity: ActivityRow) -> tuple[BoardEntryRow, bool]:
    """Archive the board: its entry gets ``archivedAt`` (condition: not archived yet), with the
    membership guard and the activity row, in one transaction. Returns ``(entry, changed)``;
    an entry already archived (also by a concurrent call) is returned unchanged.

    Raises:
        Missing: the board or the caller's membership is gone.
    """
    if entry.archivedAt:
        return entry, False
    ws = ids.workspace_of_board(entry.boardId)
    stamp = activity.at

    def build(tx: Any) -> None:
        tx.update(
            entry,
            actions=[BoardEntryRow.archivedAt.set(stamp)],
            condition=Row.PK.exists() & BoardEntryRow.archivedAt.does_not_exist(),
            return_values="ALL_OLD",
        )
        members.guard(tx, ws, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        stored = failure.item(entry.PK, entry.SK)
        if stored and not members.guard_failed(failure, ws, actor_id):
            return BoardEntryRow.from_raw_data(stored), False  # archived meanwhile: the no-op answer
        raise db.Missing(entry.boardId) from None
    entry.archivedAt = stamp
    return entry, True


class StillRestoring(StoreError):
    """A board entry changed between the read and the write (archived or restored meanwhile)."""


def unarchive(entries: list[BoardEntryRow], *, workspace_id: str, actor_id: str, activity: ActivityRow | None) -> None:
    """Restore ``entries`` (all archived when read) in one transaction: each entry loses
    ``archivedAt`` under ``archivedAt = <value read>``, with the membership guard and one activity
    row for the call — at most 50 + 2 actions.

    Raises:
        StillRestoring: an entry changed meanwhile (the caller re-reads and plans again).
        Missing: the caller's membership is gone.
    """

    def build(tx: Any) -> None:
        for e in entries:
            tx.update(
                BoardEntryRow(e.PK, e.SK),
                actions=[BoardEntryRow.archivedAt.remove()],
                condition=BoardEntryRow.archivedAt == e.archivedAt,
            )
        members.guard(tx, workspace_id, actor_id)
        if activity is not None:
            tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if members.guard_failed(failure, workspace_id, actor_id):
            raise db.Missing(workspace_id) from None
        raise StillRestoring() from None
