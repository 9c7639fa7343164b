"""The work index: one item per (task, assignee), indexed by GSI3 for list_my_work.

Items: :func:`domain.store.keys.work_item` (one per task and user), GSI3
:func:`domain.store.keys.work_index` (per workspace and user, by due date, then priority rank, then task).

:func:`sync` is called by :func:`domain.store.tasks.put_rows` — the one function writing a task's
rows — so every write that changes assignees, the due date, the priority or the column (a move), or
archives the task, updates the entries in the same transaction. The full item records what it indexed
(``workIndexed``, ``workSort``) under its own ``updatedAt`` condition, so the entries never drift:
a put for each assignee whose entry is new or whose sort key or column changed, a delete for each
user no longer assigned (all of them when the task is archived). Whether the column is done or
archived, and whether the board is archived, is read at list time (a column or board change would
otherwise rewrite thousands of entries; docs/data-model.md, "list_my_work").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pynamodb.expressions.condition import Condition

from domain import ids
from domain.store import keys
from domain.store.models import BoardEntryRow, ColumnRow, LabelNameRow, Row, TaskDetailRow, TaskRow, WorkItemRow

NO_DUE = keys.NO_DUE  # the sort key's due part of a task without a due date (after every date)


def actions(detail: TaskDetailRow) -> int:
    """How many transaction actions :func:`sync` adds for ``detail`` (bulk writes size chunks by it)."""
    puts, deletes, _ = _plan(detail)
    return len(puts) + len(deletes)


def _plan(detail: TaskDetailRow) -> tuple[list[str], list[str], str]:
    wanted = [] if detail.archivedAt else list(dict.fromkeys(detail.assigneeIds or []))
    before = list(detail.workIndexed or [])
    sort = keys.work_sort_key(detail.dueDate, detail.priority or "NONE", detail.taskId)
    signature = f"{sort}|{detail.columnId}"  # what an entry carries: its sort key and the task's column
    puts = [u for u in wanted if u not in before or detail.workSort != signature]
    deletes = [u for u in before if u not in wanted]
    return puts, deletes, signature


def sync(tx: Any, detail: TaskDetailRow) -> None:
    """Add the entry writes ``detail`` needs to ``tx`` and record them on ``detail`` (saved next)."""
    puts, deletes, signature = _plan(detail)
    workspace_id = ids.workspace_of_board(detail.boardId)
    sort = signature.rsplit("|", 1)[0]
    for user_id in puts:
        item = WorkItemRow(
            *keys.work_item(detail.taskId, user_id),
            taskId=detail.taskId,
            boardId=detail.boardId,
            columnId=detail.columnId,
            number=int(detail.number),
            userId=user_id,
        )
        item.GSI3PK, item.GSI3SK = keys.work_partition(workspace_id, user_id), sort
        tx.save(item)
    for user_id in deletes:
        tx.delete(WorkItemRow(*keys.work_item(detail.taskId, user_id)))
    wanted = [] if detail.archivedAt else list(dict.fromkeys(detail.assigneeIds or []))
    detail.workIndexed = wanted
    detail.workSort = signature if wanted else None


def page(
    workspace_id: str, user_id: str, *, low: str | None, high: str | None, limit: int, start: dict[str, Any] | None
) -> Any:
    """One GSI3 Query page of a member's entries, due-date order, within [low, high) of the sort key."""
    partition = keys.work_partition(workspace_id, user_id)
    condition: Condition | None
    if low is not None and high is not None:
        condition = Row.GSI3SK.between(low, high)
    elif low is not None:
        condition = Row.GSI3SK >= low
    elif high is not None:
        condition = Row.GSI3SK < high
    else:
        condition = None
    return WorkItemRow.gsi3.query(partition, condition, limit=limit, last_evaluated_key=start)


def page_shape(workspace_id: str, user_id: str) -> dict[str, str]:
    pk, sk = keys.WORK_ITEM_PREFIXES
    return {"GSI3PK": keys.work_partition(workspace_id, user_id), "GSI3SK": "", "PK": pk, "SK": sk}


def entries(items: Iterable[Any]) -> list[WorkItemRow]:
    return [i for i in items if isinstance(i, WorkItemRow)]


def label_filter(name: str) -> str:
    """The form a label-name filter is compared (and a cursor keyed) in: case-insensitive."""
    return keys.label_name_key(name)


def entry_cursor(entry: WorkItemRow) -> dict[str, Any]:
    """The ExclusiveStartKey that resumes a :func:`page` right after ``entry``."""
    return {"GSI3PK": {"S": entry.GSI3PK}, "GSI3SK": {"S": entry.GSI3SK}, "PK": {"S": entry.PK}, "SK": {"S": entry.SK}}


@dataclass
class OpenWork:
    """What a list of work entries needs besides the entries, read as the pages come and kept
    across them: the compact task rows, each board's entry in ``workspace_id``, each column and,
    for a label-name filter, each board's label with that name. ``None`` for one read and absent."""

    workspace_id: str
    label_name: str | None = None
    boards: dict[str, BoardEntryRow | None] = field(default_factory=dict)
    columns: dict[tuple[str, str], ColumnRow | None] = field(default_factory=dict)
    labels: dict[str, str | None] = field(default_factory=dict)  # board id -> label id

    def read(self, entries: list[WorkItemRow]) -> dict[str, TaskRow]:
        """The entries' compact rows by task id, with the columns, board entries and label-name
        claims not read yet: one BatchGetItem (per 100 keys); nothing for no entries."""
        if not entries:
            return {}
        wanted: list[tuple[str, str]] = [keys.task_compact(e.boardId, int(e.number)) for e in entries]
        for e in entries:
            if (e.boardId, e.columnId) not in self.columns:
                self.columns[(e.boardId, e.columnId)] = None
                wanted.append(keys.column(e.boardId, e.columnId))
            if e.boardId not in self.boards:
                self.boards[e.boardId] = None
                wanted.append(keys.board_entry(self.workspace_id, e.boardId))
                if self.label_name:
                    self.labels[e.boardId] = None
                    wanted.append(keys.label_name_claim(e.boardId, self.label_name))
        rows: dict[str, TaskRow] = {}
        for item in Row.batch_get(list(dict.fromkeys(wanted)), consistent_read=True):
            if isinstance(item, TaskRow):
                rows[item.taskId] = item
            elif isinstance(item, ColumnRow):
                self.columns[(item.boardId, item.columnId)] = item
            elif isinstance(item, BoardEntryRow):
                self.boards[item.boardId] = item
            elif isinstance(item, LabelNameRow):
                self.labels[item.PK.split("#", 2)[1]] = item.labelId
        return rows
