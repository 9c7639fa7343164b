"""A board's entry in its workspace partition, as a guard: whether the board is open.

Whether a board is archived is its entry's ``archivedAt`` (docs/data-model.md, "Archived
boards"). Every write on a board's tasks or columns carries :func:`open_check` on that one
item, which no task write touches; :func:`closed` tells whether a failed transaction failed
there. ``domain.store.boards`` re-exports these; writers of other aggregates (columns, tasks)
import them from here, so no store module needs the whole board module for its guard.
"""

from __future__ import annotations

from typing import Any

from domain import ids
from domain.store import db, keys
from domain.store.models import BoardEntryRow, Row


def entry_key(board_id: str) -> tuple[str, str]:
    """The key of the board's entry (the board id names its workspace)."""
    return keys.board_entry(ids.workspace_of_board(board_id), board_id)


def open_check(tx: Any, board_id: str) -> None:
    """ConditionCheck in ``tx``: the board exists and is not archived (an archived board's tasks
    are read-only). It checks the board's entry, which no task write touches, so it goes into
    any task transaction (one action per item); :func:`closed` tells whether a failure was it."""
    tx.condition_check(
        BoardEntryRow, *entry_key(board_id), condition=Row.PK.exists() & BoardEntryRow.archivedAt.does_not_exist()
    )


def closed(failure: db.ConditionFailed, board_id: str) -> bool:
    """Whether ``failure`` was :func:`open_check` on ``board_id`` (archived or gone)."""
    return failure.hit(*entry_key(board_id))


def is_archived(entry: Any) -> bool:
    """Whether a board entry read earlier (e.g. with the membership) says the board is archived."""
    return isinstance(entry, BoardEntryRow) and bool(entry.archivedAt)
