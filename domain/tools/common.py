"""Pieces every tool module shares: result views, activity rows, cursors, input field types."""

from __future__ import annotations

import base64
import unicodedata
import json
from typing import Annotated, Any, Literal

from pydantic import Field
from pynamodb.exceptions import QueryError
from ulid import ULID

from domain import clock, errors
from domain.context import CallContext
from domain.registry import ToolOutput
from domain.store.models import ActivityRow, BoardRow, ColumnRow, MemberRow, Row, TaskDetailRow, TaskRow

Priority = Literal["NONE", "LOW", "MEDIUM", "HIGH", "URGENT"]
ResponseFormat = Literal["concise", "detailed"]
ActivityType = Literal[
    "board.created", "board.renamed",
    "column.created", "column.renamed", "column.moved", "column.archived",
    "task.created", "task.updated", "task.moved", "task.archived",
]

WorkspaceIdArg = Annotated[str, Field(max_length=64, description='Workspace id (ws_…); "" selects the workspace this token or connection is bound to.')]
BoardIdArg = Annotated[str, Field(min_length=1, max_length=64, description="Board id (bd_…).")]
ColumnIdArg = Annotated[str, Field(min_length=1, max_length=80, description="Column id (cl_…).")]
TaskIdArg = Annotated[str, Field(min_length=1, max_length=80, description="Task id (tk_…).")]
IdempotencyKeyArg = Annotated[
    str | None,
    Field(default=None, min_length=1, max_length=128, description="Optional retry key. Repeating the call with this key and identical arguments returns the original result rather than creating a second one."),
]
ExpectedUpdatedAtArg = Annotated[
    str | None,
    Field(
        default=None,
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
        description="Optional concurrency guard: the updatedAt you last read. If the entity changed since, nothing is written and CONFLICT returns its current state.",
    ),
]
LimitArg = Annotated[int, Field(default=50, ge=1, le=200, description="Page size (1-200).")]
CursorArg = Annotated[str | None, Field(default=None, max_length=2048, description="nextCursor from the previous page; omit for the first page.")]


class WorkspaceView(ToolOutput):
    id: str
    name: str
    slug: str
    taskPrefix: str
    role: str
    createdAt: str


class MemberView(ToolOutput):
    userId: str
    email: str
    displayName: str
    role: str
    joinedAt: str


class BoardView(ToolOutput):
    id: str
    workspaceId: str
    name: str
    kind: str
    taskCount: int = Field(description="Unarchived tasks on the board, including those sitting in archived columns.")
    createdAt: str
    updatedAt: str
    archivedAt: str | None


class ColumnView(ToolOutput):
    id: str
    boardId: str
    name: str
    position: int = Field(description="0-based order of the column on its board.")
    taskCount: int
    wipLimit: int | None
    createdAt: str
    updatedAt: str
    archivedAt: str | None


class TaskRowView(ToolOutput):
    id: str
    number: int
    key: str
    title: str
    boardId: str
    columnId: str
    columnName: str | None = Field(description="The column's name where the call read it (lists, snapshots, detailed get_task, move_task); otherwise null.")
    priority: str
    dueDate: str | None
    assigneeIds: list[str]
    labelIds: list[str]
    createdAt: str
    updatedAt: str
    archivedAt: str | None = Field(description="When the task was archived; null for a task on the board.")


class TaskDetailView(TaskRowView):
    description: str
    createdBy: str


class ActivityView(ToolOutput):
    id: str
    type: str
    source: str
    actorId: str
    at: str
    summary: str
    boardId: str
    taskId: str | None
    data: dict[str, Any] | None


_INVISIBLE = {"\u115f", "\u1160", "\u2800", "\u3164", "\uffa0"}


def has_visible(text: str | None) -> bool:
    """Whether ``text`` shows anything: not only spaces, controls, format marks (zero-width,
    bidi) or the blank "filler" letters some scripts have."""
    return bool(text) and any(unicodedata.category(ch)[0] not in "ZC" and ch not in _INVISIBLE for ch in text)  # type: ignore[union-attr]


def member_view(m: MemberRow) -> MemberView:
    return MemberView(userId=m.userId, email=m.email, displayName=m.displayName, role=m.role, joinedAt=m.joinedAt)


def board_view(b: BoardRow) -> BoardView:
    return BoardView(
        id=b.boardId, workspaceId=b.workspaceId, name=b.name, kind=b.boardKind, taskCount=int(b.taskCount or 0),
        createdAt=b.createdAt, updatedAt=b.updatedAt, archivedAt=b.archivedAt,
    )


def column_view(c: ColumnRow, position: int) -> ColumnView:
    return ColumnView(
        id=c.columnId, boardId=c.boardId, name=c.name, position=position, taskCount=int(c.taskCount or 0),
        wipLimit=int(c.wipLimit) if c.wipLimit is not None else None, createdAt=c.createdAt, updatedAt=c.updatedAt,
        archivedAt=c.archivedAt,
    )


def task_row_view(t: TaskRow | TaskDetailRow, column_name: str | None = None) -> TaskRowView:
    return TaskRowView(
        id=t.taskId, number=int(t.number), key=t.key, title=t.title, boardId=t.boardId, columnId=t.columnId,
        columnName=column_name, priority=t.priority, dueDate=t.dueDate, assigneeIds=list(t.assigneeIds or []),
        labelIds=list(t.labelIds or []), createdAt=t.createdAt, updatedAt=t.updatedAt,
        archivedAt=getattr(t, "archivedAt", None),
    )


def task_detail_view(t: TaskDetailRow, column_name: str | None = None) -> TaskDetailView:
    base = task_row_view(t, column_name).model_dump()
    return TaskDetailView(**base, description=t.description or "", createdBy=t.createdBy)


def activity_view(a: ActivityRow) -> ActivityView:
    return ActivityView(
        id=a.activityId, type=a.type, source=a.source, actorId=a.actorId, at=a.at, summary=a.summary,
        boardId=a.boardId, taskId=a.taskId, data=a.data,
    )


def activity(ctx: CallContext, workspace_id: str, board_id: str, type_: ActivityType, summary: str, *, task_id: str | None = None, data: dict[str, Any] | None = None, at: str | None = None) -> ActivityRow:
    """A new activity row for the board's log (and the task's, through GSI1)."""
    when = at or clock.now_iso()
    aid = str(ULID()).lower()
    row = ActivityRow(
        f"BACT#{board_id}", f"{when}#{aid}", activityId=f"act_{aid}", workspaceId=workspace_id, boardId=board_id,
        taskId=task_id, type=type_, source=ctx.source, actorId=ctx.principal.user_id, at=when, summary=summary, data=data,
    )
    if task_id:
        row.GSI1PK = f"TACT#{task_id}"
        row.GSI1SK = f"{when}#{aid}"
    return row


def encode_cursor(kind: str, last_key: dict[str, Any] | None) -> str | None:
    if not last_key:
        return None
    raw = json.dumps({"k": kind, "l": last_key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def bad_cursor() -> errors.ToolError:
    return errors.invalid("cursor", "is not a cursor this list returned", "Omit cursor to start from the first page.")


def decode_cursor(kind: str, cursor: str | None, key_shape: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The ExclusiveStartKey inside ``cursor``; INVALID_INPUT if it is not one of ours for ``kind``.

    ``key_shape`` maps each key attribute the list's Query expects to a prefix its value must
    start with (the whole partition value for partition keys). A cursor whose key does not have
    exactly that shape is refused here instead of failing inside DynamoDB as INTERNAL.
    """
    if cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
        last = data.get("l")
        if data.get("k") != kind or not isinstance(last, dict):
            raise ValueError
        if key_shape is not None:
            if set(last) != set(key_shape):
                raise ValueError
            for name, prefix in key_shape.items():
                value = last[name]
                if not isinstance(value, dict) or list(value) != ["S"] or not isinstance(value["S"], str) or not value["S"].startswith(prefix):
                    raise ValueError
        return last
    except (ValueError, UnicodeDecodeError, AttributeError, RecursionError):
        raise bad_cursor() from None


def row_key(row: Any, index: bool = False) -> dict[str, Any]:
    """The ExclusiveStartKey that resumes a Query right after ``row`` (base table or GSI1)."""
    key = {"PK": {"S": row.PK}, "SK": {"S": row.SK}}
    if index:
        key |= {"GSI1PK": {"S": row.GSI1PK}, "GSI1SK": {"S": row.GSI1SK}}
    return key


def take_page(result: Any, limit: int, *, index: bool = False, max_pages: int | None = None) -> tuple[list[Any], dict[str, Any] | None]:
    """Up to ``limit`` items of a Query issued with ``Limit = limit + 1``, and the key to resume after them.

    Pages are pulled from ``result.page_iter`` one request at a time and typed through the
    ``kind`` discriminator (callers keep their isinstance filters). Reading one item past the
    page tells whether more exist, so a list whose length is a multiple of the page size ends
    with a page without a cursor rather than an empty last page. With a filter, pages can come
    back short; ``max_pages`` bounds the requests, and the cursor then resumes after what
    DynamoDB evaluated. Raises INVALID_INPUT on ``cursor`` when DynamoDB refuses the start key.
    """
    pages = result.page_iter
    rows: list[Any] = []
    fetched = 0
    try:
        while len(rows) <= limit:
            if max_pages is not None and fetched >= max_pages:
                return rows, pages.last_evaluated_key
            try:
                page = next(pages)
            except StopIteration:
                return rows, None
            fetched += 1
            rows.extend(Row.from_raw_data(item) for item in page.get("Items", []))
            if pages.last_evaluated_key is None and len(rows) <= limit:
                return rows, None
    except QueryError as exc:
        if "starting key" in str(exc):  # DynamoDB refused the ExclusiveStartKey taken from the cursor
            raise bad_cursor() from None
        raise
    rows = rows[:limit]
    return rows, row_key(rows[-1], index)


def ordered_columns(columns: list[ColumnRow], include_archived: bool = False) -> list[tuple[ColumnRow, int]]:
    """Columns sorted by their rank, with their 0-based position among the returned ones."""
    live = sorted((c for c in columns if include_archived or not c.archivedAt), key=lambda c: (c.position, c.columnId))
    return [(c, i) for i, c in enumerate(live)]
