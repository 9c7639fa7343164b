"""Column items (rows of a board partition) and their order.

Key: :func:`domain.store.keys.column`. Columns are ordered by a fractional-index rank string
(``position``), ties broken by id. The board head counts active columns (``activeColumns``):
creating one adds under the condition ``activeColumns < limit``, archiving one subtracts under
``activeColumns > 1``, so concurrent calls can neither overfill a board nor empty it.
"""

from __future__ import annotations

from typing import Any

from fractional_indexing import generate_key_between, generate_n_keys_between

from domain.store import db, keys, members, warm
from domain.store.board_entry import open_check
from domain.store.errors import StoreError
from domain.store.models import ActivityRow, BoardRow, ColumnRow, Row


class LastActiveColumn(StoreError):
    """Archiving would leave the board without an active column."""


class ColumnChanged(StoreError):
    """The column was changed by someone else between the read and the write."""


class AnchorNotFound(StoreError):
    """The column to place next to is not an active column of the board."""


def ordered(columns: list[ColumnRow], include_archived: bool = False) -> list[tuple[ColumnRow, int]]:
    """Columns sorted by their rank, with their 0-based position among the returned ones."""
    live = sorted((c for c in columns if include_archived or not c.archivedAt), key=lambda c: (c.position, c.columnId))
    return [(c, i) for i, c in enumerate(live)]


def placement(
    columns: list[tuple[ColumnRow, int]], moving: str | None, before: str | None, after: str | None
) -> tuple[str, dict[str, str]]:
    """The rank for a column placed as asked, plus any columns that must be re-ranked.

    Two columns created at the same instant can share a rank; placing a column between them
    then has no key in between, so the board's active columns are re-ranked evenly (a rare
    rebalance of a handful of items, written in the same transaction).

    Raises:
        AnchorNotFound: ``before``/``after`` is not an active column of the board.
    """
    order = [c for c, _ in columns if c.columnId != moving]
    anchor_id = before or after
    if anchor_id is None:
        slot = len(order)
    else:
        idx = next((i for i, c in enumerate(order) if c.columnId == anchor_id), None)
        if idx is None:
            raise AnchorNotFound(anchor_id)
        slot = idx if before else idx + 1
    lo = order[slot - 1].position if slot > 0 else None
    hi = order[slot].position if slot < len(order) else None
    if lo is None or hi is None or lo < hi:
        return generate_key_between(lo, hi), {}
    ranks = generate_n_keys_between(None, None, len(order) + 1)
    rest = ranks[:slot] + ranks[slot + 1 :]
    return ranks[slot], {c.columnId: k for c, k in zip(order, rest, strict=True) if c.position != k}


def apply_rerank(columns: list[ColumnRow], moved: dict[str, str]) -> None:
    for c in columns:
        if c.columnId in moved:
            c.position = moved[c.columnId]


def _rerank(tx: Any, board_id: str, moved: dict[str, str]) -> None:
    for cid, pos in moved.items():
        tx.update(
            ColumnRow(*keys.column(board_id, cid)), actions=[ColumnRow.position.set(pos)], condition=Row.PK.exists()
        )


def new_row(board_id: str, column_id: str, name: str, position: str, wip_limit: int | None, now: str) -> ColumnRow:
    return ColumnRow(
        *keys.column(board_id, column_id),
        columnId=column_id,
        boardId=board_id,
        name=name,
        position=position,
        taskCount=0,
        wipLimit=wip_limit,
        createdAt=now,
        updatedAt=now,
    )


def create(
    column: ColumnRow,
    moved: dict[str, str],
    *,
    workspace_id: str,
    actor_id: str,
    activity: ActivityRow,
    max_active: int,
) -> None:
    """Add ``column`` (and re-rank ``moved``) in one transaction.

    Raises:
        Missing: the board is gone or archived, it already holds ``max_active`` columns, or the
            caller is no longer a member.
    """
    board_id = column.boardId
    warm.COLUMNS.forget(board_id)

    def build(tx: Any) -> None:
        tx.save(column, condition=Row.PK.does_not_exist())
        tx.update(
            BoardRow(*keys.board_head(board_id)),
            actions=[BoardRow.activeColumns.add(1)],
            condition=Row.PK.exists() & (BoardRow.activeColumns < max_active),
        )
        open_check(tx, board_id)  # the board is not archived (its entry says so)
        members.guard(tx, workspace_id, actor_id)
        tx.save(activity)
        _rerank(tx, board_id, moved)

    try:
        db.transact(build)
    except db.ConditionFailed:
        raise db.Missing(board_id) from None
    finally:
        warm.COLUMNS.forget(board_id)  # (again: a get_task between the two may have kept the old list)


def update(
    column: ColumnRow,
    changes: dict[str, Any],
    previous: str,
    moved: dict[str, str],
    *,
    archiving: bool,
    workspace_id: str,
    actor_id: str,
    activity: ActivityRow,
) -> None:
    """Set the attributes ``changes`` names on ``column`` (``None`` removes one, e.g. ``wipLimit``)
    under ``updatedAt = previous`` (one transaction, an UpdateItem: the task counts stay).

    Raises:
        LastActiveColumn: archiving the board's last active column.
        ColumnChanged: the column changed since it was read (or the caller left the workspace).
    """
    board_id = column.boardId
    warm.COLUMNS.forget(board_id)

    actions = [
        getattr(ColumnRow, name).remove() if value is None else getattr(ColumnRow, name).set(value)
        for name, value in changes.items()
    ]

    def build(tx: Any) -> None:
        tx.update(column, actions=actions, condition=ColumnRow.updatedAt == previous)
        members.guard(tx, workspace_id, actor_id)
        tx.save(activity)
        _rerank(tx, board_id, moved)
        if archiving:
            tx.update(
                BoardRow(*keys.board_head(board_id)),
                actions=[BoardRow.activeColumns.add(-1)],
                condition=BoardRow.activeColumns > 1,
            )

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if archiving and failure.hit(*keys.board_head(board_id)):
            raise LastActiveColumn(column.columnId) from None
        raise ColumnChanged(column.columnId) from None
    finally:
        warm.COLUMNS.forget(board_id)
