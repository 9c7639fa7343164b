"""The two writer contracts declared on the spec, one implementation each:

* ``cas="expectedUpdatedAt"``: the pipeline hands the argument to the context, and
  ``ctx.still_current`` is the one stale check;
* ``replay=...``: the pipeline puts a keyed create's marker on ``ctx.marker`` and answers an
  earlier committed create (``idempotency_markers.Earlier``) through the spec's replay."""

from __future__ import annotations

import uuid

import pytest
from pydantic import Field

from domain import auth, pipeline
from domain.access import each, target
from domain.catalog import registry as product_registry
from domain.registry import SpecError, ToolInput, ToolOutput, ToolSpec
from tests.conftest import make_actor
from tests.tools_support import create_tasks_in_process

STORED = "2026-03-01T10:00:00.000000Z"


class _EditIn(ToolInput):
    body: str = Field(description="new body")
    expectedUpdatedAt: str | None = Field(default=None, description="the updatedAt you read")


class _Out(ToolOutput):
    checked: bool


def _handler(ctx, args):
    ctx.still_current("note", STORED, lambda: {"id": "nt_1", "updatedAt": STORED})
    return {"checked": True}


def _spec(**policy) -> ToolSpec:
    return ToolSpec(
        name="synthetic_cas",
        title="Synthetic",
        description="test only",
        area="tasks",
        scope="write",
        input_model=_EditIn,
        output_model=_Out,
        handler=_handler,
        **policy,
    )


def test_registration_refuses_a_cas_argument_that_does_not_exist_or_a_read_only_tool():
    with pytest.raises(SpecError, match="cas names an argument"):
        _spec(cas="expectedRevision")
    with pytest.raises(SpecError, match="cas names an argument"):
        ToolSpec(
            name="synthetic_cas_read",
            title="Synthetic",
            description="test only",
            area="tasks",
            scope="read",
            read_only=True,
            input_model=_EditIn,
            output_model=_Out,
            handler=_handler,
            cas="expectedUpdatedAt",
        )


def test_a_stale_expected_updated_at_is_a_conflict_carrying_the_current_entity(stack):
    me = make_actor("Cas")
    principal = auth.authenticate(me.token)
    spec = _spec(cas="expectedUpdatedAt")
    stale = pipeline.call_tool(spec, {"body": "x", "expectedUpdatedAt": "2026-01-01T00:00:00.000000Z"}, principal)
    error = stale.error["error"]
    assert error["code"] == "CONFLICT" and "note changed since you read it" in error["message"], error
    assert STORED in error["message"] and error["current"] == {"id": "nt_1", "updatedAt": STORED}, error
    assert pipeline.call_tool(spec, {"body": "x", "expectedUpdatedAt": STORED}, principal).result == {"checked": True}
    assert pipeline.call_tool(spec, {"body": "x"}, principal).result == {"checked": True}


def test_every_tool_taking_an_expected_updated_at_declares_it_as_cas():
    """One stale check for every writer (issue 27): a tool whose arguments carry a top-level
    ``expectedUpdatedAt`` declares ``cas`` on it, so the pipeline hands it to ``ctx.still_current``;
    none checks it by hand. (The bulk edits carry it per item: each item is its own compare-and-set,
    answered per item, so there is no call-level argument to declare.)"""
    # value compare-and-set tools: they take expectedRole / expectedName and refuse the stamp
    value_cas = {"remove_member", "set_member_role", "update_workspace"}
    takers = [s for s in product_registry().ordered() if "expectedUpdatedAt" in s.input_model.model_fields]
    assert {s.name for s in takers} >= {"update_task", "move_task", "update_project", "complete_agent_session"}
    assert [s.name for s in takers if s.cas != "expectedUpdatedAt" and s.name not in value_cas] == []
    assert all(product_registry().get(n).cas is None for n in value_cas)


def test_registration_refuses_replay_without_a_key_or_for_a_list_target():
    class _CreateIn(ToolInput):
        taskId: str = Field(description="task")
        idempotencyKey: str | None = Field(default=None, description="key")

    def make(**policy):
        return ToolSpec(
            name="synthetic_replay",
            title="Synthetic",
            description="test only",
            area="tasks",
            scope="write",
            input_model=_CreateIn,
            output_model=_Out,
            handler=_handler,
            replay=lambda ctx, entity_id: {"checked": True},
            **policy,
        )

    with pytest.raises(SpecError, match="replay answers a keyed create"):
        make(target=target("taskId", "task"), min_role="MEMBER")
    with pytest.raises(SpecError, match="replay answers a keyed create"):
        make(keyed=True, target=each("taskId", "taskId", "task"), min_role="MEMBER")
    assert make(keyed=True, target=target("taskId", "task"), min_role="MEMBER").replay is not None
    # an untargeted create (create_workspace): its marker is keyed by no workspace
    assert make(keyed=True).replay is not None


def _forget_powertools_records(entity_id: str) -> int:
    """Delete the Powertools idempotency records whose stored answer names ``entity_id``: what a
    crash between the entity's commit and the record's completion leaves behind."""
    from domain.settings import settings
    from domain.store import db

    client = db.dynamodb_client()
    found = client.scan(
        TableName=settings.idempotency_table,
        FilterExpression="contains(#d, :e)",
        ExpressionAttributeNames={"#d": "data"},
        ExpressionAttributeValues={":e": {"S": entity_id}},
    )["Items"]
    for item in found:
        client.delete_item(TableName=settings.idempotency_table, Key={"id": item["id"]})
    return len(found)


@pytest.mark.parametrize(
    ("tool", "arguments", "entity", "listed"),
    [
        ("create_comment", {"body": "only once"}, "comment", "list_comments"),
        ("create_subtask", {"title": "only once"}, "subtask", "get_task"),
    ],
)
def test_a_keyed_create_whose_record_was_lost_answers_from_its_marker(stack, tool, arguments, entity, listed):
    me = make_actor("Rpl")
    principal = auth.authenticate(me.token)
    specs = product_registry()
    board = pipeline.call_tool(specs.get("create_board"), {"workspaceId": me.workspace_id, "name": "Replay"}, principal)
    task = create_tasks_in_process(me.token, board.result["columns"][0]["id"], 1, "replayed")[0]
    call = {"taskId": task["id"], "idempotencyKey": "once-1", **arguments}
    first = pipeline.call_tool(specs.get(tool), call, principal)
    assert first.result is not None, first.error
    made = first.result[entity]["id"]
    assert _forget_powertools_records(made) >= 1
    again = pipeline.call_tool(specs.get(tool), call, principal)
    assert again.result is not None, again.error
    assert again.result[entity]["id"] == made  # the marker's entity, not a second one
    shown = pipeline.call_tool(specs.get(listed), {"taskId": task["id"]}, principal).result
    rows = shown["comments"] if entity == "comment" else shown["subtasks"]
    assert [r["id"] for r in rows] == [made]


def test_a_keyed_create_workspace_whose_record_was_lost_answers_from_its_marker(stack):
    """The untargeted keyed create: its marker (keyed by no workspace) names the workspace made."""
    me = make_actor("Rpw")
    principal = auth.authenticate(me.token)
    spec = product_registry().get("create_workspace")
    call = {"name": f"Replayed {uuid.uuid4().hex[:12]}", "idempotencyKey": "once-ws"}
    first = pipeline.call_tool(spec, call, principal)
    assert first.result is not None, first.error
    made = first.result["workspace"]["id"]
    assert _forget_powertools_records(made) >= 1
    again = pipeline.call_tool(spec, call, principal)
    assert again.result is not None, again.error
    assert again.result["workspace"] == first.result["workspace"]  # the marker's workspace, not a second one
    listed = pipeline.call_tool(product_registry().get("list_workspaces"), {}, principal).result
    assert [w["id"] for w in listed["workspaces"] if w["name"] == call["name"]] == [made]


def test_a_keyed_create_board_whose_record_was_lost_answers_from_its_marker(stack):
    """create_board's marker names the board: a retry whose Powertools record was lost answers
    with that board and its columns, and the workspace still holds one board of the name."""
    me = make_actor("Rpb")
    principal = auth.authenticate(me.token)
    specs = product_registry()
    call = {"workspaceId": me.workspace_id, "name": f"Replayed {uuid.uuid4().hex[:12]}", "idempotencyKey": "once-bd"}
    first = pipeline.call_tool(specs.get("create_board"), call, principal)
    assert first.result is not None, first.error
    made = first.result["board"]["id"]
    assert _forget_powertools_records(made) >= 1
    again = pipeline.call_tool(specs.get("create_board"), call, principal)
    assert again.result is not None, again.error
    assert again.result == first.result  # the marker's board and columns, not a second board
    listed = pipeline.call_tool(specs.get("list_boards"), {"workspaceId": me.workspace_id}, principal).result
    assert [b["id"] for b in listed["boards"] if b["name"] == call["name"]] == [made]


def test_a_keyed_create_project_whose_record_was_lost_answers_from_its_marker(stack):
    """create_project's marker names the project: a retry whose Powertools record was lost goes
    past the slug claim its first call made (the marker is set) and answers with that project,
    and the workspace holds one project of the name."""
    me = make_actor("Rpp")
    principal = auth.authenticate(me.token)
    specs = product_registry()
    call = {"workspaceId": me.workspace_id, "name": f"Replayed {uuid.uuid4().hex[:12]}", "idempotencyKey": "once-pj"}
    first = pipeline.call_tool(specs.get("create_project"), call, principal)
    assert first.result is not None, first.error
    made = first.result["project"]["id"]
    assert _forget_powertools_records(made) >= 1
    again = pipeline.call_tool(specs.get("create_project"), call, principal)
    assert again.result is not None, again.error
    assert again.result == first.result  # the marker's project, not a second one nor a slug CONFLICT
    listed = pipeline.call_tool(specs.get("list_projects"), {"workspaceId": me.workspace_id}, principal).result
    assert [p["id"] for p in listed["projects"] if p["name"] == call["name"]] == [made]


def test_a_keyed_create_agent_session_whose_record_was_lost_answers_from_its_marker(stack):
    """create_agent_session's marker names the session: a retry whose Powertools record was lost
    answers with that session, and the workspace holds one session of the project."""
    me = make_actor("Rps")
    principal = auth.authenticate(me.token)
    specs = product_registry()
    made_project = pipeline.call_tool(
        specs.get("create_project"), {"workspaceId": me.workspace_id, "name": f"Pj {uuid.uuid4().hex[:12]}"}, principal
    )
    project = made_project.result["project"]["id"]
    repo = f"replay/repo-{uuid.uuid4().hex[:12]}"
    linked = pipeline.call_tool(
        specs.get("add_project_link"), {"projectId": project, "targetType": "REPO", "targetId": repo}, principal
    )
    assert linked.result is not None, linked.error
    call = {"projectId": project, "repo": repo, "idempotencyKey": "once-ses"}
    first = pipeline.call_tool(specs.get("create_agent_session"), call, principal)
    assert first.result is not None, first.error
    made = first.result["session"]["id"]
    assert _forget_powertools_records(made) >= 1
    again = pipeline.call_tool(specs.get("create_agent_session"), call, principal)
    assert again.result is not None, again.error
    assert again.result == first.result  # the marker's session, not a second one
    listed = pipeline.call_tool(
        specs.get("list_agent_sessions"), {"workspaceId": me.workspace_id, "projectId": project}, principal
    ).result
    assert [s["id"] for s in listed["sessions"]] == [made]


def test_a_keyed_create_task_whose_record_was_lost_answers_from_its_marker(stack):
    """create_task declares replay: a retry whose Powertools record was lost answers with the task
    the marker names (as stored now), and the column holds one task, not two."""
    me = make_actor("Rpt")
    principal = auth.authenticate(me.token)
    specs = product_registry()
    board = pipeline.call_tool(specs.get("create_board"), {"workspaceId": me.workspace_id, "name": "Replay"}, principal)
    column = board.result["columns"][0]["id"]
    call = {"columnId": column, "title": "only once", "idempotencyKey": "once-tk"}
    first = pipeline.call_tool(specs.get("create_task"), call, principal)
    assert first.result is not None, first.error
    made = first.result["task"]["id"]
    assert _forget_powertools_records(made) >= 1
    again = pipeline.call_tool(specs.get("create_task"), call, principal)
    assert again.result is not None, again.error
    assert again.result["task"] == first.result["task"]  # the marker's task, not a second one
    listed = pipeline.call_tool(specs.get("list_tasks"), {"columnId": column}, principal).result
    assert [t["id"] for t in listed["tasks"]] == [made]


def test_registration_refuses_a_creation_marker_without_a_key_or_for_a_list_target():
    """marker=True (a keyed create whose store answers an earlier call itself) has replay's rules."""

    class _CreateIn(ToolInput):
        taskId: str = Field(description="task")
        idempotencyKey: str | None = Field(default=None, description="key")

    def make(**policy):
        return ToolSpec(
            name="synthetic_marker",
            title="Synthetic",
            description="test only",
            area="tasks",
            scope="write",
            input_model=_CreateIn,
            output_model=_Out,
            handler=_handler,
            marker=True,
            **policy,
        )

    with pytest.raises(SpecError, match="replay answers a keyed create"):
        make(target=target("taskId", "task"), min_role="MEMBER")
    with pytest.raises(SpecError, match="replay answers a keyed create"):
        make(keyed=True, target=each("taskId", "taskId", "task"), min_role="MEMBER")
    assert make(keyed=True, target=target("taskId", "task"), min_role="MEMBER").marker
