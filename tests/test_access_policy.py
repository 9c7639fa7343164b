"""The access step (domain/access.py) on synthetic tools: what a spec declares is enforced by
the pipeline with no check in the handler, and registration refuses what it could not enforce."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field

from domain import auth, ids
from domain.access import Ref, each, target
from domain.errors import ErrorCode
from domain.pipeline import call_tool
from domain.registry import Registry, SpecError, ToolInput, ToolOutput, ToolSpec, tool
from functions.protocol import McpProtocol, Session
from tests.conftest import make_actor


class _TaskIn(ToolInput):
    taskId: str = Field(description="task")
    otherTaskId: str | None = Field(default=None, description="another task of the same board")


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    taskId: str = Field(description="task")


class _ItemsIn(ToolInput):
    items: list[_Item] = Field(description="items")


class _Out(ToolOutput):
    seen: list[str]


def _seen_target(ctx, args):
    return {"seen": [ctx.target.workspace_id, ctx.target.board_id, str(ctx.target.task.number)]}


def _seen_items(ctx, args):
    return {"seen": [f"{t.index}:{'ok' if t.where else t.error.code.value}" for t in ctx.targets]}


def _spec(handler, input_model, **policy) -> ToolSpec:
    return ToolSpec(
        name="synthetic",
        title="Synthetic",
        description="test only",
        area="tasks",
        scope="read",
        read_only=True,
        input_model=input_model,
        output_model=_Out,
        handler=handler,
        **policy,
    )


@pytest.fixture(scope="module")
def people(stack):
    me = make_actor("Acc")
    other = make_actor("Oth")
    board = ids.new_board_id(me.workspace_id)
    return me, other, auth.authenticate(me.token), board


def test_target_is_located_and_admitted_before_the_handler(people):
    me, other, principal, board = people
    spec = _spec(_seen_target, _TaskIn, target=target("taskId", "task"), min_role="MEMBER")
    mine = ids.task_id(board, 7)
    assert call_tool(spec, {"taskId": mine}, principal).result == {"seen": [me.workspace_id, board, "7"]}
    foreign = ids.task_id(ids.new_board_id(other.workspace_id), 3)
    for bad in (foreign, "tk_nonsense", ids.task_id(ids.new_board_id(ids.new_workspace_id()), 1)):
        out = call_tool(spec, {"taskId": bad}, principal)
        assert out.error["error"]["code"] == "NOT_FOUND" and bad in out.error["error"]["message"], out.error


def test_min_role_admin_refuses_a_member_with_no_check_in_the_handler(people):
    from domain.store import keys
    from domain.store.models import MemberRow

    me, _, principal, board = people
    calls = []

    def handler(ctx, args):
        calls.append(args.taskId)
        return {"seen": []}

    spec = _spec(handler, _TaskIn, target=target("taskId", "task"), min_role="ADMIN")
    member = MemberRow(*keys.member(me.workspace_id, me.user_id))
    member.update(actions=[MemberRow.role.set("MEMBER")])
    try:
        out = call_tool(spec, {"taskId": ids.task_id(board, 1)}, principal)
        assert out.error["error"]["code"] == "FORBIDDEN" and "ADMIN" in out.error["error"]["message"]
        assert calls == []
    finally:
        member.update(actions=[MemberRow.role.set("OWNER")])
    assert call_tool(spec, {"taskId": ids.task_id(board, 1)}, principal).result == {"seen": []}
    assert len(calls) == 1


def test_refs_outside_the_target_get_their_declared_error(people):
    me, other, principal, board = people
    spec = _spec(
        _seen_target,
        _TaskIn,
        target=target("taskId", "task"),
        min_role="MEMBER",
        refs=(Ref("otherTaskId", "task", within="board", error=ErrorCode.INVALID_INPUT),),
    )
    mine = ids.task_id(board, 1)
    assert call_tool(spec, {"taskId": mine, "otherTaskId": ids.task_id(board, 2)}, principal).result
    for bad in (
        ids.task_id(ids.new_board_id(me.workspace_id), 2),
        ids.task_id(ids.new_board_id(other.workspace_id), 2),
        "junk",
    ):
        out = call_tool(spec, {"taskId": mine, "otherTaskId": bad}, principal)
        assert out.error["error"]["code"] == "INVALID_INPUT" and out.error["error"]["message"].startswith(
            "otherTaskId:"
        ), out.error
    not_found = _spec(
        _seen_target, _TaskIn, target=target("taskId", "task"), min_role="MEMBER", refs=(Ref("otherTaskId", "task"),)
    )
    out = call_tool(
        not_found, {"taskId": mine, "otherTaskId": ids.task_id(ids.new_board_id(other.workspace_id), 2)}, principal
    )
    assert out.error["error"]["code"] == "NOT_FOUND"


def test_list_targets_are_checked_item_by_item(people):
    _me, other, principal, board = people
    items = [
        {"taskId": ids.task_id(board, 1)},
        {"taskId": ids.task_id(ids.new_board_id(other.workspace_id), 1)},
        {"taskId": "junk"},
        {"taskId": ids.task_id(board, 2)},
    ]
    per_item = _spec(_seen_items, _ItemsIn, target=each("items", "taskId", "task"), min_role="MEMBER")
    assert call_tool(per_item, {"items": items}, principal).result == {
        "seen": ["0:ok", "1:NOT_FOUND", "2:NOT_FOUND", "3:ok"]
    }
    whole = _spec(_seen_items, _ItemsIn, target=each("items", "taskId", "task", all_or_nothing=True), min_role="MEMBER")
    assert call_tool(whole, {"items": items}, principal).error["error"]["code"] == "NOT_FOUND"


def test_registration_refuses_what_the_pipeline_cannot_enforce():
    with pytest.raises(SpecError, match="min_role needs a target"):
        _spec(_seen_target, _TaskIn, min_role="ADMIN")
    with pytest.raises(SpecError, match="needs a min_role"):
        _spec(_seen_target, _TaskIn, target=target("taskId", "task"))
    with pytest.raises(SpecError, match="not an argument"):
        _spec(_seen_target, _TaskIn, target=target("boardId", "board"), min_role="MEMBER")
    with pytest.raises(SpecError, match="idempotencyKey"):
        _spec(_seen_target, _TaskIn, target=target("taskId", "task"), min_role="MEMBER", keyed=True)
    with pytest.raises(SpecError, match="open_board needs a target"):
        _spec(_seen_target, _TaskIn, open_board=True)
    with pytest.raises(SpecError, match="open_board needs a target"):
        _spec(
            _seen_target, _TaskIn, target=target("taskId", "task"), min_role="MEMBER", open_board=True
        )  # _spec declares a read-only tool
    with pytest.raises(SpecError, match="declared twice"):
        Registry([_spec(_seen_target, _TaskIn, target=target("taskId", "task"), min_role="MEMBER")] * 2)


def test_a_registry_instance_is_what_the_protocol_serves():
    @tool(
        "synthetic_echo",
        title="Echo",
        description="Echoes nothing; test only.",
        area="context",
        scope="read",
        read_only=True,
        input_model=ToolInput,
        output_model=_Out,
    )
    def echo(ctx, args):
        return {"seen": [ctx.tool]}

    assert isinstance(echo, ToolSpec)  # @tool returns the spec and registers nothing
    proto = McpProtocol(registry=Registry([echo]))
    session = Session(
        principal=auth.Principal(user_id="usr_x", token_id="tok_x", kind="pat", stored_scopes=(), workspace_pin=None)
    )
    listed = proto.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, headers=None, session=session
    )
    assert [t["name"] for t in listed.message["result"]["tools"]] == ["synthetic_echo"]
    unknown = proto.handle(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_boards", "arguments": {}}},
        headers=None,
        session=session,
    )
    assert unknown.message["error"]["code"] == -32602
