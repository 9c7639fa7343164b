"""Named read plans (domain/store/reads.py): a spec declares ``reads``, the access step reads their
items in the membership BatchGetItem, the handler finds typed rows (or None) on ``ctx.read``."""

from __future__ import annotations

import inspect
import typing

import pytest
from pydantic import Field

from domain import auth, ids, pipeline
from domain.access import target
from domain.catalog import registry as product_registry
from domain.registry import SpecError, ToolInput, ToolOutput, ToolSpec
from domain.store import reads
from tests.conftest import make_actor
from tests.rpc import RequestCounter
from tests.tools_support import create_tasks_in_process


class _TaskIn(ToolInput):
    taskId: str = Field(description="task")


class _Out(ToolOutput):
    seen: list[str]


def _spec(handler, **policy) -> ToolSpec:
    return ToolSpec(
        name="synthetic_reads",
        title="Synthetic",
        description="test only",
        area="tasks",
        scope="read",
        read_only=True,
        input_model=_TaskIn,
        output_model=_Out,
        handler=handler,
        **policy,
    )


def test_every_plan_has_a_typed_property_of_its_name():
    hints = {}
    for name, plan in reads.PLANS.items():
        prop = inspect.getattr_static(reads.Reads, name, None)
        assert isinstance(prop, property), name
        hints[name] = typing.get_type_hints(prop.fget, vars(reads))["return"]
        wanted = list[plan.row] if isinstance(plan, reads.ManyReadPlan) else (plan.row | None)
        assert hints[name] == wanted, (name, hints[name])
    assert {"task", "comment", "subtask", "label", "board_entry", "edge"} <= set(reads.PLANS)


def test_a_plan_not_declared_is_refused_not_read():
    declared = reads.Reads(("task",), {}, None, None)
    with pytest.raises(reads.PlanError, match="comment"):
        _ = declared.comment


def test_registration_refuses_unknown_plans_and_plans_without_one_target():
    def handler(ctx, args):
        return {"seen": []}

    with pytest.raises(SpecError, match="unknown read plans"):
        _spec(handler, target=target("taskId", "task"), min_role="MEMBER", reads=("task", "tsak"))
    with pytest.raises(SpecError, match="one target"):
        _spec(handler, reads=("task",))


@pytest.fixture(scope="module")
def task_with_a_comment(stack):
    me = make_actor("Rdr")
    principal = auth.authenticate(me.token)
    specs = product_registry()
    board = pipeline.call_tool(specs.get("create_board"), {"workspaceId": me.workspace_id, "name": "Plans"}, principal)
    assert board.result is not None, board.error
    column = board.result["columns"][0]["id"]
    task = create_tasks_in_process(me.token, column, 1, "planned")[0]
    made = pipeline.call_tool(
        specs.get("create_comment"), {"taskId": task["id"], "body": "first", "idempotencyKey": "k-1"}, principal
    )
    assert made.result is not None, made.error
    return principal, task


def test_declared_plans_ride_in_the_membership_batch_and_come_back_typed(task_with_a_comment):
    principal, task = task_with_a_comment
    seen = []

    def handler(ctx, args):
        t, count, entry = ctx.read.task, ctx.read.comment_count, ctx.read.board_entry
        seen.append((type(t).__name__, t.taskId, int(count.count), entry.boardId == t.boardId))
        return {"seen": []}

    spec = _spec(
        handler, target=target("taskId", "task"), min_role="MEMBER", reads=("task", "comment_count", "board_entry")
    )
    counter = RequestCounter()
    with counter.watching():
        out = pipeline.call_tool(spec, {"taskId": task["id"]}, principal)
    assert out.result == {"seen": []}, out.error
    assert seen == [("TaskDetailRow", task["id"], 1, True)]
    # one BatchGetItem for the membership and every plan (the rate window may add its own update)
    assert counter.ops["BatchGetItem"] == 1 and "GetItem" not in counter.ops and "Query" not in counter.ops, counter.ops


def test_an_absent_item_reads_as_none(task_with_a_comment):
    principal, task = task_with_a_comment
    seen = []

    def handler(ctx, args):
        seen.append((ctx.read.task, ctx.read.comment_count))
        return {"seen": []}

    spec = _spec(handler, target=target("taskId", "task"), min_role="MEMBER", reads=("task", "comment_count"))
    ref = ids.parse_task(task["id"])
    missing = ids.task_id(ref.board_id, 999_999)  # a number past the board's last task
    out = pipeline.call_tool(spec, {"taskId": missing}, principal)
    assert out.result == {"seen": []}, out.error
    assert seen == [(None, None)]


class _TaskItem(ToolInput):
    taskId: str = Field(description="task")


class _ItemsIn(ToolInput):
    items: list[_TaskItem] = Field(description="tasks")


def test_a_list_target_reads_each_items_plans_in_the_one_membership_batch(task_with_a_comment):
    """reads on an ``each`` target (bulk_update_tasks, bulk_move_tasks): every admitted item's
    plans join the memberships' BatchGetItem, and each entry carries its own typed results."""
    from domain.access import each

    principal, task = task_with_a_comment
    ref = ids.parse_task(task["id"])
    missing = ids.task_id(ref.board_id, 999_999)
    seen = []

    def handler(ctx, args):
        seen.extend((e.index, e.read.task.taskId if e.read.task else None) for e in ctx.targets)
        return {"seen": []}

    spec = ToolSpec(
        name="synthetic_each_reads",
        title="Synthetic",
        description="test only",
        area="tasks",
        scope="read",
        read_only=True,
        input_model=_ItemsIn,
        output_model=_Out,
        handler=handler,
        target=each("items", "taskId", "task"),
        min_role="MEMBER",
        reads=("task",),
    )
    counter = RequestCounter()
    with counter.watching():
        out = pipeline.call_tool(spec, {"items": [{"taskId": task["id"]}, {"taskId": missing}]}, principal)
    assert out.result == {"seen": []}, out.error
    assert seen == [(0, task["id"]), (1, None)]
    assert counter.ops["BatchGetItem"] == 1 and "GetItem" not in counter.ops and "Query" not in counter.ops, counter.ops
