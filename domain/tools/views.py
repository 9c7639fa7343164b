"""Result views shared by the tool modules, and the converters from stored rows to them."""

from typing import Annotated, Any

from pydantic import Field

from domain.registry import ToolOutput
from domain.store.reads import (
    Activity,
    Board,
    Column,
    CompactTask,
    Label,
    Member,
    Subtask,
    Task,
    Workspace,
    row_values,
)


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
    taskCount: int = Field(
        description="Tasks on the board's active columns (what get_board_snapshot's totalCount counts); tasks of archived columns are not included."
    )
    createdAt: str
    updatedAt: str
    archivedAt: str | None = Field(
        description="When the board was archived (its tasks are then read-only); null for an active board."
    )


class ColumnView(ToolOutput):
    id: str
    boardId: str
    name: str
    position: int = Field(description="0-based order of the column on its board.")
    taskCount: int
    wipLimit: int | None
    done: bool = Field(description="A done column: its tasks count as finished (list_my_work leaves them out).")
    createdAt: str
    updatedAt: str
    archivedAt: str | None


class LabelView(ToolOutput):
    id: str
    boardId: str
    name: str
    color: str = Field(description="#rrggbb, lowercase.")
    taskCount: int = Field(description="Tasks carrying the label, archived tasks included.")
    createdAt: str
    updatedAt: str


class TaskRowView(ToolOutput):
    id: str
    number: int
    key: str
    title: str
    boardId: str
    columnId: str
    columnName: str | None = Field(
        description="The name of the task's column (null only if that column no longer exists)."
    )
    priority: str
    dueDate: str | None
    assigneeIds: list[str]
    labelIds: list[str]
    subtaskCount: int = Field(description="Subtasks (checklist items) on the task, 0-100.")
    subtasksDone: int = Field(description="How many of them are completed.")
    createdAt: str
    updatedAt: str
    archivedAt: str | None = Field(description="When the task was archived; null for a task on the board.")


class TaskDetailView(TaskRowView):
    description: str
    createdBy: str


class SubtaskView(ToolOutput):
    id: str
    taskId: str
    title: str
    completed: bool
    completedAt: str | None = Field(description="When it was last marked complete; null while it is open.")
    createdBy: str
    createdAt: str
    updatedAt: str


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


def workspace_view(ws: Workspace, role: str) -> WorkspaceView:
    return WorkspaceView(
        id=ws.workspaceId, name=ws.name, slug=ws.slug, taskPrefix=ws.taskPrefix, role=role, createdAt=ws.createdAt
    )


def member_view(m: Member) -> MemberView:
    return MemberView(userId=m.userId, email=m.email, displayName=m.displayName, role=m.role, joinedAt=m.joinedAt)


def board_view(b: Board, columns: list[Column], archived_at: str | None = None) -> BoardView:
    """The board as callers see it; ``columns`` are the board's columns from the same header read.

    ``taskCount`` is the sum of the active columns' counts, so it agrees with the snapshot's
    ``totalCount`` after a column is archived (docs/data-model.md, "totalCount"). Whether the
    board is archived is its entry's ``archivedAt`` (``archived_at``), read with the membership.
    """
    live = sum(int(c.taskCount or 0) for c in columns if not c.archivedAt)
    return BoardView(
        id=b.boardId,
        workspaceId=b.workspaceId,
        name=b.name,
        kind=b.boardKind,
        taskCount=live,
        createdAt=b.createdAt,
        updatedAt=b.updatedAt,
        archivedAt=archived_at,
    )


def label_view(lb: Label) -> LabelView:
    return LabelView(
        id=lb.labelId,
        boardId=lb.boardId,
        name=lb.name,
        color=lb.color,
        taskCount=max(0, int(lb.taskCount or 0)),
        createdAt=lb.createdAt,
        updatedAt=lb.updatedAt,
    )


def column_view(c: Column, position: int) -> ColumnView:
    return ColumnView(
        id=c.columnId,
        boardId=c.boardId,
        name=c.name,
        position=position,
        taskCount=int(c.taskCount or 0),
        wipLimit=int(c.wipLimit) if c.wipLimit is not None else None,
        done=bool(c.done),
        createdAt=c.createdAt,
        updatedAt=c.updatedAt,
        archivedAt=c.archivedAt,
    )


def _task_fields(v: dict[str, Any], column_name: str | None) -> dict[str, Any]:
    """A task view's fields from a task row's ``row_values()`` (every field of every listed task:
    the descriptor-free read)."""
    return {
        "id": v.get("taskId"),
        "number": int(v["number"]),
        "key": v.get("key"),
        "title": v.get("title"),
        "boardId": v.get("boardId"),
        "columnId": v.get("columnId"),
        "columnName": column_name,
        "priority": v.get("priority"),
        "dueDate": v.get("dueDate"),
        "assigneeIds": list(v.get("assigneeIds") or []),
        "labelIds": list(v.get("labelIds") or []),
        "subtaskCount": int(v.get("subtaskCount") or 0),
        "subtasksDone": int(v.get("subtasksDone") or 0),
        "createdAt": v.get("createdAt"),
        "updatedAt": v.get("updatedAt"),
        "archivedAt": v.get("archivedAt"),
    }


def task_row_view(t: CompactTask | Task, column_name: str | None = None) -> TaskRowView:
    return TaskRowView(**_task_fields(row_values(t), column_name))


def task_detail_view(t: Task, column_name: str | None = None) -> TaskDetailView:
    v = row_values(t)
    return TaskDetailView(
        **_task_fields(v, column_name), description=v.get("description") or "", createdBy=v.get("createdBy")
    )


def subtask_view(s: Subtask) -> SubtaskView:
    return SubtaskView(
        id=s.subtaskId,
        taskId=s.taskId,
        title=s.title,
        completed=bool(s.completed),
        completedAt=s.completedAt,
        createdBy=s.createdBy,
        createdAt=s.createdAt,
        updatedAt=s.updatedAt,
    )


def activity_view(a: Activity) -> ActivityView:
    v = row_values(a)
    return ActivityView(
        id=v.get("activityId"),
        type=v.get("type"),
        source=v.get("source"),
        actorId=v.get("actorId"),
        at=v.get("at"),
        summary=v.get("summary"),
        boardId=v.get("boardId"),
        taskId=v.get("taskId"),
        data=v.get("data"),
    )


ChangedFields = Annotated[
    list[str],
    Field(
        description="The fields this call changed, in argument order; empty when nothing changed (nothing was written)."
    ),
]


# -- task links (list_task_links; a detailed get_task can show the same view) ---------------------
class LinkedTaskView(ToolOutput):
    kind: str = Field(description="BLOCKS, DEPENDS_ON, RELATES_TO or DUPLICATES.")
    taskId: str = Field(description="The task at the other end of the link.")
    key: str = Field(description="Its key, e.g. ABC-7.")
    title: str | None = Field(description="Its current title (null only if the task no longer exists).")
    boardId: str
    boardName: str | None = Field(
        description="The current name of its board (null only if the board no longer exists)."
    )
    archived: bool = Field(description="Whether the other task is archived.")
    boardArchived: bool = Field(description="Whether the other task's board is archived (its tasks are read-only).")
    linkedAt: str
    linkedBy: str = Field(description="User id of whoever added the link.")


class TaskLinksView(ToolOutput):
    outgoing: list[LinkedTaskView] = Field(
        description="Links from this task: 'this task <kind> the other'. By kind, then task number."
    )
    incoming: list[LinkedTaskView] = Field(
        description="Links to this task: 'the other <kind> this task'. By kind, then task number."
    )


def task_links_view(ends: list[Any]) -> TaskLinksView:
    """The view of :func:`domain.store.links.links_of`'s result (``LinkEnd`` items)."""

    def one(e: Any) -> LinkedTaskView:
        return LinkedTaskView(
            kind=e.kind,
            taskId=e.task_id,
            key=e.key,
            title=e.title,
            boardId=e.board_id,
            boardName=e.board_name,
            archived=e.archived_at is not None,
            boardArchived=e.board_archived_at is not None,
            linkedAt=e.linked_at,
            linkedBy=e.linked_by,
        )

    return TaskLinksView(
        outgoing=[one(e) for e in ends if e.direction == "outgoing"],
        incoming=[one(e) for e in ends if e.direction == "incoming"],
    )
