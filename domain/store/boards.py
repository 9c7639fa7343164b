"""Board items: the board head and columns in the board partition, the entry in the workspace.

Keys: :func:`domain.store.keys.board_head`, :func:`domain.store.keys.column`,
:func:`domain.store.keys.board_entry`. One Query over ``HEADER_RANGE`` returns the head and
every column; one over ``SNAPSHOT_RANGE`` adds the compact task rows.
"""

from __future__ import annotations

from typing import Any

from fractional_indexing import generate_n_keys_between

from domain import clock, ids
from domain.store import columns as column_store
from domain.store import db, keys, members
from domain.store.cas import Unchanged, Write, compare_and_set
from domain.store.idempotency_markers import earlier_entity, put_marker
from domain.store.models import ActivityRow, BoardEntryRow, BoardRow, ColumnRow, CreationMarkerRow, Row, TaskRow


def get_head(board_id: str) -> BoardRow | None:
    try:
        return BoardRow.get(*keys.board_head(board_id), consistent_read=True)
    except BoardRow.DoesNotExist:
        return None


def open_check(tx: Any, board_id: str) -> None:
    """ConditionCheck in ``tx``: the board exists and is not archived (an archived board's tasks
    are read-only). Use it in a task write that does not already update the board head (one
    action per item per transaction); :func:`closed` tells whether a failure was this check."""
    tx.condition_check(BoardRow, *keys.board_head(board_id), condition=Row.PK.exists() & BoardRow.archivedAt.does_not_exist())


def closed(failure: db.ConditionFailed, board_id: str) -> bool:
    """Whether ``failure`` was :func:`open_check` on ``board_id`` (archived or gone)."""
    return failure.hit(*keys.board_head(board_id))


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


SNAPSHOT_PAGE_SLACK = 64  # the head, up to 50 active columns and a few archived ones, and one task past the cap


def snapshot(board_id: str, cap: int) -> tuple[BoardRow | None, list[ColumnRow], list[TaskRow], bool]:
    """Head, columns and up to ``cap`` compact rows of tasks in active columns, in one Query.

    Columns sort before tasks, so the active set is known when the first task row arrives;
    rows of archived columns are skipped without using up the cap. Pages hold ``cap`` plus
    room for the head and the columns, so a board of any size is read only as far as the
    answer needs (one Query for up to ``cap`` tasks unless archived columns' tasks are in the
    way; the next page is read only then). Returns ``(board, columns, tasks, truncated)``.
    """
    board: BoardRow | None = None
    columns: list[ColumnRow] = []
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
        elif isinstance(row, TaskRow):
            if live is None:
                live = {c.columnId for c, _ in column_store.ordered(columns)}
            if row.columnId not in live:
                continue
            if len(tasks) >= cap:
                truncated = True
                break
            tasks.append(row)
    return board, columns, tasks, truncated


def entries(workspace_id: str) -> list[BoardEntryRow]:
    """The workspace's board entries (one Query)."""
    pk = keys.workspace_partition(workspace_id)
    return [r for r in Row.query(pk, Row.SK.startswith(keys.BOARD_ENTRIES_PREFIX), consistent_read=True) if isinstance(r, BoardEntryRow)]


def create(
    workspace_id: str, name: str, kind: str, column_names: list[str], *, actor_id: str,
    activity: ActivityRow, marker: CreationMarkerRow | None,
) -> tuple[BoardRow, list[ColumnRow], bool]:
    """Create a board with its columns in one transaction; ``(board, columns, created)``.

    With ``marker``, a retry of a committed keyed create returns that board (``created`` False).

    Raises:
        Missing: the caller is no longer a member.
        IdempotencyMismatch: the key already created a board with other arguments.
    """
    now = activity.at
    board_id = activity.boardId
    board = BoardRow(
        *keys.board_head(board_id), boardId=board_id, workspaceId=workspace_id, name=name, boardKind=kind, taskCount=0,
        activeColumns=len(column_names), createdAt=now, updatedAt=now,
    )
    entry = BoardEntryRow(*keys.board_entry(workspace_id, board_id), boardId=board_id, name=name, boardKind=kind, createdAt=now)
    cols = []
    for col_name, pos in zip(column_names, generate_n_keys_between(None, None, len(column_names)), strict=True):
        cid = ids.new_column_id(board_id)
        cols.append(ColumnRow(*keys.column(board_id, cid), columnId=cid, boardId=board_id, name=col_name, position=pos, taskCount=0, createdAt=now, updatedAt=now))
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
            b, found = header(earlier)
            if b is None:
                raise db.Missing(earlier) from None
            return b, [c for c, _ in column_store.ordered(found)], False
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
            tx.update(current, actions=[BoardRow.name.set(name), BoardRow.updatedAt.set(stamp)], condition=BoardRow.updatedAt == previous, return_values="ALL_OLD")
            tx.update(BoardEntryRow(*keys.board_entry(ws, current.boardId)), actions=[BoardEntryRow.name.set(name)], condition=Row.PK.exists())
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
