"""Activity rows: a board's log (its own partition), through GSI1 each task's log, and through
GSI3 the board's rows of one type.

Keys: :func:`domain.store.keys.activity`, :func:`domain.store.keys.task_activity`,
:func:`domain.store.keys.activity_type_index`. A row is written in the same transaction as the
mutation it records; lists read newest first.
"""

from __future__ import annotations

from typing import Any

from ulid import ULID

from domain import clock
from domain.store import keys
from domain.store.models import ActivityRow, Row


def new_row(
    *,
    workspace_id: str,
    board_id: str,
    type_: str,
    summary: str,
    actor_id: str,
    source: str,
    task_id: str | None = None,
    data: dict[str, Any] | None = None,
    at: str | None = None,
) -> ActivityRow:
    """A new activity row for the board's log (and the task's, when ``task_id`` is given)."""
    when = at or clock.now_iso()
    aid = str(ULID()).lower()
    row = ActivityRow(
        *keys.activity(board_id, when, aid),
        activityId=f"act_{aid}",
        workspaceId=workspace_id,
        boardId=board_id,
        taskId=task_id,
        type=type_,
        source=source,
        actorId=actor_id,
        at=when,
        summary=summary,
        data=data,
    )
    if task_id:
        row.GSI1PK, row.GSI1SK = keys.task_activity(task_id, when, aid)
    row.GSI3PK, row.GSI3SK = keys.activity_type_index(board_id, type_, when, aid)
    return row


def recent_for_task(task_id: str, limit: int = 10) -> list[ActivityRow]:
    """The task's newest ``limit`` rows (one GSI1 Query)."""
    rows = ActivityRow.gsi1.query(keys.task_activity_partition(task_id), scan_index_forward=False, limit=limit)
    return [a for a in rows if isinstance(a, ActivityRow)][:limit]


def query_log(
    *,
    board_id: str | None = None,
    task_id: str | None = None,
    since: str | None = None,
    source: str | None = None,
    type_: str | None = None,
    limit: int,
    start: dict[str, Any] | None,
) -> Any:
    """The Query result of a board's or a task's log, newest first, strictly after ``since``.

    A board's log filtered by type reads the type's own index (GSI3 ``ACTT#<board>#<type>``), so
    every page is full unless the log is exhausted; GSI3 is eventually consistent, so an entry
    written a moment ago may show a moment later. The task log (small) and ``source`` filter."""
    filt = None
    if source:
        filt = ActivityRow.source == source
    after = keys.activity_after(since) if since else None
    if type_ and not task_id:
        assert board_id is not None
        cond = ActivityRow.GSI3SK > after if after else None
        return ActivityRow.gsi3.query(
            keys.activity_type_partition(board_id, type_),
            cond,
            filter_condition=filt,
            scan_index_forward=False,
            limit=limit,
            last_evaluated_key=start,
        )
    if type_:
        filt = (ActivityRow.type == type_) if filt is None else filt & (ActivityRow.type == type_)
    if task_id:
        cond = ActivityRow.GSI1SK > after if after else None
        return ActivityRow.gsi1.query(
            keys.task_activity_partition(task_id),
            cond,
            filter_condition=filt,
            scan_index_forward=False,
            limit=limit,
            last_evaluated_key=start,
        )
    assert board_id is not None
    cond = ActivityRow.SK > after if after else None
    return ActivityRow.query(
        keys.board_activity_partition(board_id),
        cond,
        filter_condition=filt,
        scan_index_forward=False,
        limit=limit,
        last_evaluated_key=start,
        consistent_read=True,
    )


def log_key_shape(*, board_id: str, task_id: str | None, type_: str | None = None) -> dict[str, str]:
    """The ExclusiveStartKey shape of :func:`query_log` (for cursor checks)."""
    if type_ and not task_id:
        return {
            "GSI3PK": keys.activity_type_partition(board_id, type_),
            "GSI3SK": "",
            "PK": keys.board_activity_partition(board_id),
            "SK": "",
        }
    if task_id:
        return {
            "GSI1PK": keys.task_activity_partition(task_id),
            "GSI1SK": "",
            "PK": keys.board_activity_partition(board_id),
            "SK": "",
        }
    return {"PK": keys.board_activity_partition(board_id), "SK": ""}


def subject_exists(*, board_id: str, task_number: int | None) -> bool:
    """Whether the board (or its task ``task_number``) exists: one BatchGetItem."""
    key = keys.task_full(board_id, task_number) if task_number is not None else keys.board_head(board_id)
    return any(True for _ in Row.batch_get([key], consistent_read=True))
