"""Subtask tools: create_subtask, toggle_subtask, delete_subtask.

A task's subtasks are an ordered checklist (creation order, at most 100) in the task's side
partition (docs/data-model.md, "subtask"). Every subtask write also moves the task's
``subtaskCount`` / ``subtasksDone`` on both task rows (``ADD``) in the same transaction:
snapshots and lists show a task's progress with no extra read and the counts never drift from
the items, while writes to different subtasks of one task do not turn each other away (the cap
is a condition on the count). A subtask write stamps the task's ``updatedAt`` too, and answers
the task's progress as read back after the commit. An archived task's subtasks are readable
(get_task) and take no writes.
"""

from typing import Annotated

from pydantic import Field
from ulid import ULID

from domain import clock, errors, ids
from domain.access import target
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import subtasks as subtask_store
from domain.store import tasks as task_store
from domain.store.cas import Step, Unchanged, compare_and_set
from domain.store.db import Missing
from domain.store.reads import Subtask, Task
from domain.text import has_visible
from domain.tools.args import IdempotencyKeyArg, Redact, SingleLine, TaskIdArg, redactions_field
from domain.tools.views import SubtaskView, subtask_view

MAX = subtask_store.MAX_PER_TASK
SubtaskTitleArg = Annotated[str, Field(min_length=1, max_length=500), SingleLine, Redact]
SubtaskIdArg = Annotated[str, Field(min_length=1, max_length=120, description="st_…")]


class SubtaskProgress(ToolOutput):
    taskId: str
    subtaskCount: int = Field(description=f"Subtasks on the task after this call (at most {MAX}).")
    subtasksDone: int = Field(description="How many of them are completed.")
    taskUpdatedAt: str = Field(
        description="The task's updatedAt after this call: a subtask write stamps its task as well."
    )


def _progress(task: Task) -> SubtaskProgress:
    return SubtaskProgress(
        taskId=task.taskId,
        subtaskCount=int(task.subtaskCount or 0),
        subtasksDone=int(task.subtasksDone or 0),
        taskUpdatedAt=task.updatedAt,
    )


def _task_item(ctx: CallContext) -> Task:
    task = ctx.read.task
    if task is None:
        where = ctx.target
        raise errors.not_found("task", ids.task_id(where.board(), where.task_ref().number))
    return task


def _closed(field: str) -> errors.ToolError:
    return errors.invalid(
        field,
        "the task is archived: its subtasks can be read (get_task) but not changed",
        "Archived tasks are read-only; keep the checklist on a live task.",
    )


def _subtask_item(ctx: CallContext, subtask_id: str) -> Subtask:
    row = ctx.read.subtask
    if row is None:
        raise errors.not_found("subtask", subtask_id)
    return row


# -- create_subtask --------------------------------------------------------------------------
class CreateSubtaskInput(ToolInput):
    taskId: TaskIdArg
    title: SubtaskTitleArg
    idempotencyKey: IdempotencyKeyArg


class CreateSubtaskOutput(ToolOutput):
    subtask: SubtaskView
    progress: SubtaskProgress
    redactions: list[str] = redactions_field()


@tool(
    "create_subtask",
    title="Create subtask",
    description=("Appends an open checklist item to a task (max 100)."),
    area="collaboration",
    scope="write",
    keyed=True,
    target=target("taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    reads=("task",),
    replay=lambda ctx, entity_id: _replay_subtask(ctx, entity_id),
    input_model=CreateSubtaskInput,
    output_model=CreateSubtaskOutput,
)
def create_subtask(ctx: CallContext, args: CreateSubtaskInput) -> CreateSubtaskOutput:
    title = args.title.strip()
    if not has_visible(title):
        raise errors.invalid("title", "must contain visible characters")
    where = ctx.target
    task = _task_item(ctx)

    def plan(current: Task) -> Step[Task, CreateSubtaskOutput]:
        if current.archivedAt:
            raise _closed("taskId")
        count = int(current.subtaskCount or 0)
        if count >= MAX:
            raise errors.invalid(
                "taskId",
                f"the task already has {count} subtasks, the most one task holds ({MAX})",
                "Delete finished or obsolete subtasks (delete_subtask), or split the work into another task.",
            )
        stamp = clock.next_stamp(current.updatedAt)
        ulid = str(ULID()).lower()  # drawn per attempt: a retried create still sorts by when it commits
        subtask_id = ids.new_subtask_id(where.task_ref(), ulid)
        row = subtask_store.new_row(
            current.taskId,
            ulid,
            subtaskId=subtask_id,
            workspaceId=where.workspace_id,
            title=title,
            completed=False,
            completedAt=None,
            createdBy=ctx.user_id,
            createdAt=stamp,
            updatedAt=stamp,
        )
        counts = subtask_store.Counts(added=1, done=0, stamp=stamp)
        act = ctx.activity(
            where.workspace_id,
            where.board(),
            "subtask.created",
            f"Added subtask {title!r} to {current.key}",
            task_id=current.taskId,
            data={"subtaskId": subtask_id},
            at=stamp,
        )
        return subtask_store.create(
            current,
            counts,
            row,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity=act,
            marker=ctx.marker,
            result=lambda: CreateSubtaskOutput(
                subtask=subtask_view(row), progress=_progress(subtask_store.after(current, counts))
            ),
        )

    try:
        return compare_and_set("create_subtask", task, plan)
    except Missing:
        raise errors.not_found("task", task.taskId) from None


def _replay_subtask(ctx: CallContext, subtask_id: str) -> CreateSubtaskOutput:
    """The subtask an earlier call with the same idempotencyKey made, with its task's progress now."""
    ref = ids.parse_subtask(subtask_id)
    found = subtask_store.get(ref) if ref else None
    now = task_store.get(ctx.target.task_ref())
    if found is None or now is None:
        raise errors.not_found("subtask", subtask_id)
    return CreateSubtaskOutput(subtask=subtask_view(found), progress=_progress(now))


# -- toggle_subtask --------------------------------------------------------------------------
class ToggleSubtaskInput(ToolInput):
    subtaskId: SubtaskIdArg
    completed: bool = Field(description="true: done.")


class ToggleSubtaskOutput(ToolOutput):
    subtask: SubtaskView
    changed: bool = Field(
        description="false when the subtask already had that state: nothing was written and no activity recorded."
    )
    progress: SubtaskProgress


@tool(
    "toggle_subtask",
    title="Toggle subtask",
    description=("Sets a subtask done or open; the same state is changed: false."),
    area="collaboration",
    scope="write",
    idempotent=True,
    target=target("subtaskId", "subtask"),
    min_role="MEMBER",
    open_board=True,
    reads=("subtask", "task"),
    input_model=ToggleSubtaskInput,
    output_model=ToggleSubtaskOutput,
)
def toggle_subtask(ctx: CallContext, args: ToggleSubtaskInput) -> ToggleSubtaskOutput:
    where = ctx.target
    first = subtask_store.State(_task_item(ctx), _subtask_item(ctx, args.subtaskId))

    def plan(state: subtask_store.State) -> Step[subtask_store.State, ToggleSubtaskOutput]:
        current, sub = state.task, state.subtask
        if current.archivedAt:
            raise _closed("subtaskId")
        if bool(sub.completed) == args.completed:
            return Unchanged(ToggleSubtaskOutput(subtask=subtask_view(sub), changed=False, progress=_progress(current)))
        stamp = clock.next_stamp(max(current.updatedAt, sub.updatedAt))
        edited = subtask_store.copy(sub)
        edited.completed, edited.completedAt, edited.updatedAt = (
            args.completed,
            stamp if args.completed else None,
            stamp,
        )
        counts = subtask_store.Counts(added=0, done=1 if args.completed else -1, stamp=stamp)
        kind, verb = ("subtask.completed", "Completed") if args.completed else ("subtask.reopened", "Reopened")
        act = ctx.activity(
            where.workspace_id,
            where.board(),
            kind,
            f"{verb} subtask {sub.title!r} of {current.key}",
            task_id=current.taskId,
            data={"subtaskId": sub.subtaskId},
            at=stamp,
        )
        return subtask_store.change(
            state,
            counts,
            edited,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity=act,
            result=lambda: ToggleSubtaskOutput(
                subtask=subtask_view(edited), changed=True, progress=_progress(subtask_store.after(current, counts))
            ),
        )

    try:
        return compare_and_set("toggle_subtask", first, plan)
    except Missing:
        raise errors.not_found("subtask", args.subtaskId) from None


# -- delete_subtask --------------------------------------------------------------------------
class DeleteSubtaskInput(ToolInput):
    subtaskId: SubtaskIdArg


class DeleteSubtaskOutput(ToolOutput):
    deleted: SubtaskView = Field(description="The subtask as it was before it was deleted.")
    progress: SubtaskProgress


@tool(
    "delete_subtask",
    title="Delete subtask",
    description=("Deletes a subtask for good; again is NOT_FOUND."),
    area="collaboration",
    scope="write",
    destructive=True,
    target=target("subtaskId", "subtask"),
    min_role="MEMBER",
    open_board=True,
    reads=("subtask", "task"),
    input_model=DeleteSubtaskInput,
    output_model=DeleteSubtaskOutput,
)
def delete_subtask(ctx: CallContext, args: DeleteSubtaskInput) -> DeleteSubtaskOutput:
    where = ctx.target
    first = subtask_store.State(_task_item(ctx), _subtask_item(ctx, args.subtaskId))

    def plan(state: subtask_store.State) -> Step[subtask_store.State, DeleteSubtaskOutput]:
        current, sub = state.task, state.subtask
        if current.archivedAt:
            raise _closed("subtaskId")
        stamp = clock.next_stamp(max(current.updatedAt, sub.updatedAt))
        counts = subtask_store.Counts(added=-1, done=-1 if sub.completed else 0, stamp=stamp)
        act = ctx.activity(
            where.workspace_id,
            where.board(),
            "subtask.deleted",
            f"Deleted subtask {sub.title!r} of {current.key}",
            task_id=current.taskId,
            data={"subtaskId": sub.subtaskId},
            at=stamp,
        )
        return subtask_store.change(
            state,
            counts,
            None,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity=act,
            result=lambda: DeleteSubtaskOutput(
                deleted=subtask_view(sub), progress=_progress(subtask_store.after(current, counts))
            ),
        )

    try:
        return compare_and_set("delete_subtask", first, plan)
    except Missing:
        raise errors.not_found("subtask", args.subtaskId) from None


TOOLS = (create_subtask, toggle_subtask, delete_subtask)
