"""Assignee tool: set_task_assignees.

The assignees are the ``assigneeIds`` list on the task's two rows, written together by
:func:`domain.store.tasks.put_rows` (through :func:`domain.store.assignees.write`), so a task's
compact row and its full item always agree. Every assignee must be a member of the task's
workspace: their member items are read with the caller's membership (no extra round trip) and
guarded in the write transaction (docs/data-model.md, "set_task_assignees").
"""

from typing import Annotated

from pydantic import Field

from domain import clock, errors
from domain.access import Ref, target
from domain.context import CallContext
from domain.errors import ErrorCode
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import assignees as assignee_store
from domain.store import tasks as task_store
from domain.store.cas import Step, Unchanged, compare_and_set
from domain.store.db import Missing
from domain.store.reads import Member, Task
from domain.tools.args import TaskIdArg

MAX = assignee_store.MAX_ASSIGNEES
UserIdArg = Annotated[str, Field(min_length=1, max_length=64)]
_MEMBERS_HINT = "list_members shows the workspace's members and their userId; only members can be assigned."


class SetTaskAssigneesInput(ToolInput):
    taskId: TaskIdArg
    userIds: list[UserIdArg] = Field(
        max_length=MAX,
        description="usr_… ids (list_members); [] clears.",
    )


class AssigneeView(ToolOutput):
    userId: str
    displayName: str = Field(description="The member's display name in the task's workspace.")


class SetTaskAssigneesOutput(ToolOutput):
    taskId: str
    key: str
    assignees: list[AssigneeView] = Field(description="The assignees now stored on the task, in the order given.")
    added: list[str] = Field(description="User ids this call assigned.")
    removed: list[str] = Field(description="User ids this call unassigned.")
    updatedAt: str = Field(
        description="The task's updatedAt (unchanged when the set already matched: nothing was written)."
    )


def _not_members(user_ids: list[str]) -> errors.ToolError:
    return errors.invalid(
        "userIds", f"not members of this workspace: {', '.join(user_ids)}; nothing was changed", _MEMBERS_HINT
    )


@tool(
    "set_task_assignees",
    title="Set task assignees",
    description=(
        "Replaces a task's assignees with exactly these members (max 20); any non-member refuses the whole call."
    ),
    area="collaboration",
    scope="write",
    idempotent=True,
    target=target("taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    refs=(
        Ref(
            "userIds",
            "user",
            error=ErrorCode.INVALID_INPUT,
            many=True,
            message="must be members of the task's workspace",
            hint=_MEMBERS_HINT,
        ),
    ),
    reads=("task", "user_members"),
    input_model=SetTaskAssigneesInput,
    output_model=SetTaskAssigneesOutput,
)
def set_task_assignees(ctx: CallContext, args: SetTaskAssigneesInput) -> SetTaskAssigneesOutput:
    where = ctx.target
    wanted = list(dict.fromkeys(args.userIds))
    found: dict[str, Member] = {m.userId: m for m in ctx.read.user_members}
    if ctx.user_id in wanted:  # the caller's own member item, read by the access step
        found[ctx.user_id] = ctx.member(where.workspace_id)
    missing = [u for u in wanted if u not in found]
    if missing:
        raise _not_members(missing)
    task = ctx.read.task
    if task is None:
        raise errors.not_found("task", args.taskId)

    def output(detail: Task, added: list[str], removed: list[str]) -> SetTaskAssigneesOutput:
        assignees = [AssigneeView(userId=u, displayName=found[u].displayName) for u in detail.assigneeIds or []]
        return SetTaskAssigneesOutput(
            taskId=detail.taskId,
            key=detail.key,
            assignees=assignees,
            added=added,
            removed=removed,
            updatedAt=detail.updatedAt,
        )

    def plan(current: Task) -> Step[Task, SetTaskAssigneesOutput]:
        if current.archivedAt:
            raise errors.invalid(
                "taskId",
                "the task is archived and cannot be edited",
                "Archived tasks are read-only; create a new task if the work continues.",
            )
        before = list(current.assigneeIds or [])
        if set(before) == set(wanted):
            return Unchanged(output(current, [], []))
        added = [u for u in wanted if u not in before]
        removed = [u for u in before if u not in wanted]
        detail = task_store.copy(current)
        detail.assigneeIds, detail.updatedAt = wanted, clock.next_stamp(current.updatedAt)
        names = ", ".join(found[u].displayName for u in wanted)
        summary = f"Assigned {detail.key} to {names}" if wanted else f"Unassigned everyone from {detail.key}"
        act = ctx.activity(
            where.workspace_id,
            where.board(),
            "task.assignees_set",
            summary,
            task_id=detail.taskId,
            data={"added": added, "removed": removed},
            at=detail.updatedAt,
        )
        return assignee_store.write(
            detail,
            current.updatedAt,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity=act,
            result=lambda: output(detail, added, removed),
        )

    try:
        return compare_and_set("set_task_assignees", task, plan)
    except assignee_store.NotMembers as gone:
        raise _not_members(gone.user_ids) from None
    except Missing:
        raise errors.not_found("task", args.taskId) from None


TOOLS = (set_task_assignees,)
