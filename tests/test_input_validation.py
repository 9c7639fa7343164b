"""Bad tool input (catalog: shared contract, the error envelope): every case answers INVALID_INPUT naming the offending
field, or NOT_FOUND for an id the caller may not see — worded exactly as for an id that does
not exist — and in every case nothing is written.

"Nothing is written" is proven twice: a fingerprint of every item in the application and
idempotency tables (a test-side Scan, minus the per-minute rate-window counters that every call
legitimately bumps) is byte-identical before and after, and the tools' own reads
(get_board_snapshot, list_activity) report the same board.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from domain import ids
from tests.conftest import Actor, envelope, make_actor, mcp_client, structured


# -- observing the tables ------------------------------------------------------------------------
def table_fingerprint() -> list[str]:
    """Every stored item of both tables, canonically serialised; rate-window counters excluded."""
    from domain.settings import settings
    from domain.store import db

    client = db.dynamodb_client()
    items: list[str] = []
    for table in (settings.table, settings.idempotency_table):
        kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            page = client.scan(**kwargs)
            for item in page["Items"]:
                if item.get("PK", {}).get("S", "").startswith("RATE#"):
                    continue
                items.append(f"{table}|{json.dumps(item, sort_keys=True)}")
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return sorted(items)


@contextmanager
def nothing_written() -> Iterator[None]:
    before = table_fingerprint()
    yield
    after = table_fingerprint()
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    assert not added and not removed, f"the call wrote to the table:\n+ {added[:3]}\n- {removed[:3]}"


# -- raw calls for setup and for what the SDK refuses to send --------------------------------------
def raw_call(url: str, token: str, name: str, arguments: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    resp = httpx2.post(
        url,
        content=json.dumps(body),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["result"]


def raw_ok(url: str, token: str, name: str, arguments: Any) -> dict[str, Any]:
    result = raw_call(url, token, name, arguments)
    assert result["isError"] is False, result["content"][0]["text"]
    return result["structuredContent"]


def raw_error(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is True and "structuredContent" not in result, result
    return json.loads(result["content"][0]["text"])["error"]


@dataclass
class World:
    """A board with two columns and a task, for the caller (``me``) and for an outsider."""

    me: Actor
    board: str
    columns: list[str]
    task: dict[str, Any]
    other: Actor
    other_board: str
    other_column: str
    other_task: str
    other_number: int


@pytest.fixture(scope="module")
def world(server_url: str) -> World:
    tag = uuid.uuid4().hex[:8]
    me = make_actor("Val", f"Validation {tag}")
    other = make_actor("Mallory", f"Elsewhere {tag}")
    board = raw_ok(server_url, me.token, "create_board", {"workspaceId": me.workspace_id, "name": "Checks"})
    cols = [c["id"] for c in board["columns"]]
    task = raw_ok(server_url, me.token, "create_task", {"columnId": cols[0], "title": "Original title"})["task"]
    theirs = raw_ok(
        server_url, other.token, "create_board", {"workspaceId": other.workspace_id, "name": "Secret plans"}
    )
    their_task = raw_ok(
        server_url, other.token, "create_task", {"columnId": theirs["columns"][0]["id"], "title": "Hidden"}
    )["task"]
    return World(
        me,
        board["board"]["id"],
        cols,
        task,
        other,
        theirs["board"]["id"],
        theirs["columns"][0]["id"],
        their_task["id"],
        their_task["number"],
    )


def board_view(url: str, w: World) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    snap = raw_ok(url, w.me.token, "get_board_snapshot", {"boardId": w.board})
    acts = raw_ok(url, w.me.token, "list_activity", {"boardId": w.board, "limit": 200})["activity"]
    return snap, acts


def names_field(error: dict[str, Any], field: str) -> None:
    assert error["code"] == "INVALID_INPUT", error
    assert re.search(rf"(^|[^A-Za-z]){re.escape(field)}([^A-Za-z]|$)", error["message"]), (
        f"{field!r} not named in {error['message']!r}"
    )
    assert error["message"].split(":", 1)[0].strip() == field, error["message"]
    assert error["hint"]


# -- INVALID_INPUT naming the field -------------------------------------------------------------------
LONG_TITLE, LONG_DESCRIPTION = "t" * 501, "d" * 20_001

# (case id, tool, arguments built from the world, the field the error must name)
CASES: list[tuple[str, str, Any, str]] = [
    # unknown fields
    (
        "unknown-field-create",
        "create_task",
        lambda w: {"columnId": w.columns[0], "title": "ok", "colour": "red"},
        "colour",
    ),
    ("unknown-field-update", "update_task", lambda w: {"taskId": w.task["id"], "name": "renamed"}, "name"),
    (
        "unknown-field-board",
        "create_board",
        lambda w: {"workspaceId": w.me.workspace_id, "name": "B", "columns": ["a"]},
        "columns",
    ),
    ("unknown-field-read", "get_board_snapshot", lambda w: {"boardId": w.board, "verbose": True}, "verbose"),
    # wrong types (no coercion: "5" is not 5, 5 is not "5", true is not a string)
    ("title-int", "create_task", lambda w: {"columnId": w.columns[0], "title": 5}, "title"),
    ("title-bool", "update_task", lambda w: {"taskId": w.task["id"], "title": True}, "title"),
    ("limit-string", "list_tasks", lambda w: {"boardId": w.board, "limit": "5"}, "limit"),
    ("limit-float", "list_activity", lambda w: {"boardId": w.board, "limit": 5.5}, "limit"),
    ("number-string", "get_task", lambda w: {"workspaceId": w.me.workspace_id, "number": "1"}, "number"),
    ("name-int", "create_workspace", lambda w: {"name": 7}, "name"),
    (
        "priority-lowercase",
        "create_task",
        lambda w: {"columnId": w.columns[0], "title": "ok", "priority": "urgent"},
        "priority",
    ),
    ("action-unknown", "manage_columns", lambda w: {"action": "explode", "boardId": w.board}, "action"),
    (
        "include-archived-string",
        "list_boards",
        lambda w: {"workspaceId": w.me.workspace_id, "includeArchived": "yes"},
        "includeArchived",
    ),
    # over-long strings
    ("title-501", "create_task", lambda w: {"columnId": w.columns[0], "title": LONG_TITLE}, "title"),
    ("title-501-update", "update_task", lambda w: {"taskId": w.task["id"], "title": LONG_TITLE}, "title"),
    (
        "description-20001",
        "create_task",
        lambda w: {"columnId": w.columns[0], "title": "ok", "description": LONG_DESCRIPTION},
        "description",
    ),
    (
        "description-20001-update",
        "update_task",
        lambda w: {"taskId": w.task["id"], "description": LONG_DESCRIPTION},
        "description",
    ),
    ("board-name-121", "create_board", lambda w: {"workspaceId": w.me.workspace_id, "name": "b" * 121}, "name"),
    (
        "idempotency-key-129",
        "create_task",
        lambda w: {"columnId": w.columns[0], "title": "ok", "idempotencyKey": "k" * 129},
        "idempotencyKey",
    ),
    # missing required
    ("title-missing", "create_task", lambda w: {"columnId": w.columns[0]}, "title"),
    # malformed expectedUpdatedAt (the token must come back exactly as it was served)
    (
        "eua-words",
        "update_task",
        lambda w: {"taskId": w.task["id"], "title": "x", "expectedUpdatedAt": "yesterday"},
        "expectedUpdatedAt",
    ),
    (
        "eua-no-millis",
        "update_task",
        lambda w: {"taskId": w.task["id"], "title": "x", "expectedUpdatedAt": w.task["updatedAt"][:19] + "Z"},
        "expectedUpdatedAt",
    ),
    (
        "eua-offset",
        "update_task",
        lambda w: {"taskId": w.task["id"], "title": "x", "expectedUpdatedAt": w.task["updatedAt"][:-1] + "+00:00"},
        "expectedUpdatedAt",
    ),
    (
        "eua-int",
        "update_task",
        lambda w: {"taskId": w.task["id"], "title": "x", "expectedUpdatedAt": 1_700_000_000_000},
        "expectedUpdatedAt",
    ),
    (
        "eua-move",
        "move_task",
        lambda w: {
            "taskId": w.task["id"],
            "columnId": w.columns[1],
            "expectedUpdatedAt": w.task["updatedAt"].replace("T", " "),
        },
        "expectedUpdatedAt",
    ),
    # control characters in titles and names (terminal escapes; only newline and tab pass)
    ("title-ansi", "create_task", lambda w: {"columnId": w.columns[0], "title": "\x1b[31mred\x1b[0m"}, "title"),
    ("title-c1-csi", "update_task", lambda w: {"taskId": w.task["id"], "title": "x\x9b2J"}, "title"),
    (
        "title-bell-bulk",
        "bulk_create_tasks",
        lambda w: {"columnId": w.columns[0], "tasks": [{"title": "ok"}, {"title": "ring\x07"}]},
        "tasks.1.title",
    ),
    ("title-nul-subtask", "create_subtask", lambda w: {"taskId": w.task["id"], "title": "a\x00b"}, "title"),
    (
        "name-ansi-board",
        "create_board",
        lambda w: {"workspaceId": w.me.workspace_id, "name": "\x1b]0;pwned\x07Board"},
        "name",
    ),
    ("name-cr-rename", "rename_board", lambda w: {"boardId": w.board, "name": "Checks\rFake"}, "name"),
    ("name-del-column", "manage_columns", lambda w: {"action": "create", "boardId": w.board, "name": "QA\x7f"}, "name"),
    (
        "name-esc-label",
        "manage_labels",
        lambda w: {"action": "create", "boardId": w.board, "name": "\x1b[5mbug", "color": "#112233"},
        "name",
    ),
    ("name-esc-workspace", "create_workspace", lambda w: {"name": "Space\x1b[2J"}, "name"),
    ("name-esc-project", "create_project", lambda w: {"workspaceId": w.me.workspace_id, "name": "P\x1b[0m"}, "name"),
    (
        "milestone-esc",
        "create_project",
        lambda w: {"workspaceId": w.me.workspace_id, "name": "P", "milestones": [{"title": "M\x1b[0m"}]},
        "milestones.0.title",
    ),
]


@pytest.mark.parametrize(("tool", "build", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_invalid_input_names_the_field_and_writes_nothing(server_url, world, tool, build, field):
    args = build(world)
    view_before = board_view(server_url, world)
    with nothing_written():
        async with mcp_client(server_url, world.me.token, "auto") as c:
            names_field(envelope(await c.call_tool(tool, args)), field)
    assert board_view(server_url, world) == view_before


async def test_tab_and_newline_are_the_control_characters_a_title_keeps(server_url, world):
    async with mcp_client(server_url, world.me.token, "auto") as c:
        task = structured(await c.call_tool("create_task", {"columnId": world.columns[1], "title": "a\tb\nc"}))["task"]
    assert task["title"] == "a\tb\nc"
    error = envelope(
        await _one_call(server_url, world, "create_task", {"columnId": world.columns[1], "title": "a\x1bb"})
    )
    assert "U+001B" in error["message"] and "newline and tab" in error["hint"], error


async def _one_call(url: str, w: World, tool: str, args: dict[str, Any]) -> Any:
    async with mcp_client(url, w.me.token, "auto") as c:
        return await c.call_tool(tool, args)


@pytest.mark.parametrize("arguments", [[1], "title=x", 5, True], ids=["array", "string", "number", "bool"])
def test_non_object_arguments_are_invalid_input(server_url, world, arguments):
    # The SDK client will not send these, so this one goes out as raw JSON-RPC.
    view_before = board_view(server_url, world)
    with nothing_written():
        names_field(raw_error(raw_call(server_url, world.me.token, "create_task", arguments)), "arguments")
    assert board_view(server_url, world) == view_before


def test_a_valid_call_is_visible_to_the_fingerprint(server_url, world):
    """The no-write check can fail: a real write changes the fingerprint."""
    before = table_fingerprint()
    raw_ok(server_url, world.me.token, "create_task", {"columnId": world.columns[1], "title": "Proof the check bites"})
    assert table_fingerprint() != before


# -- an id from another workspace is NOT_FOUND, exactly like a missing one ---------------------------
def _missing_ids(w: World) -> dict[str, str]:
    """Well-formed ids that exist nowhere, inside the caller's own workspace."""
    board = ids.new_board_id(w.me.workspace_id)
    return {
        "workspace": ids.new_workspace_id(),
        "board": board,
        "column": ids.new_column_id(w.board),
        "task": ids.task_id(w.board, 999_999),
    }


# (probe id, tool, kind of id, arguments built from the world and the id)
PROBES: list[Any] = [
    pytest.param("list_boards", "workspace", lambda w, i: {"workspaceId": i}, id="list_boards"),
    pytest.param("list_members", "workspace", lambda w, i: {"workspaceId": i}, id="list_members"),
    pytest.param("create_board", "workspace", lambda w, i: {"workspaceId": i, "name": "Sneaky"}, id="create_board"),
    pytest.param("get_board_snapshot", "board", lambda w, i: {"boardId": i}, id="get_board_snapshot"),
    pytest.param("list_columns", "board", lambda w, i: {"boardId": i}, id="list_columns"),
    pytest.param("list_tasks", "board", lambda w, i: {"boardId": i}, id="list_tasks-board"),
    pytest.param("rename_board", "board", lambda w, i: {"boardId": i, "name": "Mine now"}, id="rename_board"),
    pytest.param("list_activity", "board", lambda w, i: {"boardId": i}, id="list_activity-board"),
    pytest.param(
        "manage_columns",
        "board",
        lambda w, i: {"action": "create", "boardId": i, "name": "Extra"},
        id="manage_columns-create",
    ),
    pytest.param("create_task", "column", lambda w, i: {"columnId": i, "title": "Planted"}, id="create_task"),
    pytest.param("list_tasks", "column", lambda w, i: {"columnId": i}, id="list_tasks-column"),
    pytest.param(
        "manage_columns",
        "column",
        lambda w, i: {"action": "rename", "columnId": i, "name": "Renamed"},
        id="manage_columns-rename",
    ),
    pytest.param(
        "manage_columns", "column", lambda w, i: {"action": "archive", "columnId": i}, id="manage_columns-archive"
    ),
    pytest.param("get_task", "task", lambda w, i: {"taskId": i}, id="get_task"),
    pytest.param("update_task", "task", lambda w, i: {"taskId": i, "title": "Defaced"}, id="update_task"),
    pytest.param("move_task", "task", lambda w, i: {"taskId": i, "columnId": w.columns[1]}, id="move_task"),
    pytest.param("archive_task", "task", lambda w, i: {"taskId": i}, id="archive_task"),
    pytest.param("list_activity", "task", lambda w, i: {"taskId": i}, id="list_activity-task"),
]


def _theirs(w: World, kind: str) -> str:
    return {"workspace": w.other.workspace_id, "board": w.other_board, "column": w.other_column, "task": w.other_task}[
        kind
    ]


def _shape(error: dict[str, Any], ident: str) -> dict[str, Any]:
    return {**error, "message": error["message"].replace(ident, "<id>"), "hint": error["hint"].replace(ident, "<id>")}


@pytest.mark.parametrize(("tool", "kind", "build"), PROBES)
async def test_foreign_id_is_not_found_like_a_missing_id_and_writes_nothing(server_url, world, tool, kind, build):
    foreign, missing = _theirs(world, kind), _missing_ids(world)[kind]
    view_before = board_view(server_url, world)
    their_view = raw_ok(server_url, world.other.token, "get_board_snapshot", {"boardId": world.other_board})
    with nothing_written():
        async with mcp_client(server_url, world.me.token, "auto") as c:
            seen_foreign = envelope(await c.call_tool(tool, build(world, foreign)))
            seen_missing = envelope(await c.call_tool(tool, build(world, missing)))
    assert seen_foreign["code"] == "NOT_FOUND", seen_foreign
    assert _shape(seen_foreign, foreign) == _shape(seen_missing, missing)
    assert foreign in seen_foreign["message"] or kind == "workspace"
    assert board_view(server_url, world) == view_before
    assert raw_ok(server_url, world.other.token, "get_board_snapshot", {"boardId": world.other_board}) == their_view


async def test_moving_a_task_into_a_foreign_column_is_refused_like_any_column_of_another_board(server_url, world):
    """A task never leaves its board, so a column id naming another board is refused from the id
    alone (INVALID_INPUT on columnId) — the same answer for a foreign column, a column of another
    board of the caller's own, and a made-up one: the foreign column's existence is not revealed."""
    other_own_board = raw_ok(
        server_url,
        world.me.token,
        "create_board",
        {"workspaceId": world.me.workspace_id, "name": f"Side {uuid.uuid4().hex[:12]}"},
    )
    own_other_column = other_own_board["columns"][0]["id"]
    made_up = ids.new_column_id(ids.new_board_id(world.me.workspace_id))
    view_before = board_view(server_url, world)
    with nothing_written():
        async with mcp_client(server_url, world.me.token, "auto") as c:
            answers = [
                envelope(await c.call_tool("move_task", {"taskId": world.task["id"], "columnId": col}))
                for col in (world.other_column, own_other_column, made_up)
            ]
    for error in answers:
        names_field(error, "columnId")
    assert answers[0] == answers[1] == answers[2]
    assert board_view(server_url, world) == view_before


async def test_foreign_workspace_number_lookup_is_not_found_like_a_missing_number(server_url, world):
    nowhere_ws = ids.new_workspace_id()
    with nothing_written():
        async with mcp_client(server_url, world.me.token, "auto") as c:
            foreign = envelope(
                await c.call_tool("get_task", {"workspaceId": world.other.workspace_id, "number": world.other_number})
            )
            missing = envelope(await c.call_tool("get_task", {"workspaceId": world.me.workspace_id, "number": 999_999}))
            nowhere = envelope(await c.call_tool("get_task", {"workspaceId": nowhere_ws, "number": world.other_number}))
    assert foreign["code"] == missing["code"] == nowhere["code"] == "NOT_FOUND"
    # the message names the number and the workspace the caller passed, and nothing else differs
    assert (
        _shape(_shape(foreign, world.other.workspace_id), str(world.other_number))
        == _shape(_shape(missing, world.me.workspace_id), "999999")
        == _shape(_shape(nowhere, nowhere_ws), str(world.other_number))
    )


async def test_foreign_id_looks_like_an_id_in_a_workspace_that_does_not_exist(server_url, world):
    """Also indistinguishable from ids whose workspace part names no workspace at all."""
    nowhere_ws = ids.new_workspace_id()
    nowhere_board = ids.new_board_id(nowhere_ws)
    async with mcp_client(server_url, world.me.token, "auto") as c:
        a = envelope(await c.call_tool("get_board_snapshot", {"boardId": world.other_board}))
        b = envelope(await c.call_tool("get_board_snapshot", {"boardId": nowhere_board}))
        t = envelope(await c.call_tool("get_task", {"taskId": world.other_task}))
        u = envelope(await c.call_tool("get_task", {"taskId": ids.task_id(nowhere_board, 1)}))
    assert _shape(a, world.other_board) == _shape(b, nowhere_board)
    assert _shape(t, world.other_task) == _shape(u, ids.task_id(nowhere_board, 1))


async def test_structurally_invalid_id_is_not_found_or_invalid_and_writes_nothing(server_url, world):
    """A string that is no id at all never reaches another workspace and never writes."""
    with nothing_written():
        async with mcp_client(server_url, world.me.token, "auto") as c:
            for tool, args in [
                ("get_task", {"taskId": "tk_../../etc"}),
                ("update_task", {"taskId": "not-an-id", "title": "x"}),
                ("get_board_snapshot", {"boardId": "BOARD#x"}),
                ("create_task", {"columnId": "cl_", "title": "x"}),
            ]:
                error = envelope(await c.call_tool(tool, args))
                assert error["code"] in ("NOT_FOUND", "INVALID_INPUT"), (tool, error)
