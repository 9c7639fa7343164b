"""Behaviour of the task tools (create_task, get_task, update_task, move_task, archive_task,
list_tasks) through the official MCP SDK client against DynamoDB Local."""

from __future__ import annotations

import base64
import itertools
import json

import pytest

from tests.conftest import mcp_client
from tests.tools_support import STAMP, activity_rows, err, names_field, new_board, new_task, ok, stored_state


async def _board(c, ws: str, name: str = "Tasks") -> tuple[str, list[str]]:
    made = await new_board(c, ws, name)
    return made["board"]["id"], [col["id"] for col in made["columns"]]


async def _column_order(c, column_id: str) -> list[str]:
    return [t["id"] for t in (await ok(c, "list_tasks", {"columnId": column_id, "limit": 200}))["tasks"]]


async def _snapshot_order(c, board_id: str, column_id: str) -> list[str]:
    snap = await ok(c, "get_board_snapshot", {"boardId": board_id})
    col = next(x for x in snap["columns"] if x["id"] == column_id)
    in_tasks = [t["id"] for t in snap["tasks"] if t["columnId"] == column_id]
    assert col["taskIds"] == in_tasks
    return in_tasks


# -- create_task -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_create_task_numbers_are_gapless_per_workspace_with_prefixed_keys(server_url, owner, outsider, mode):
    async with mcp_client(server_url, owner.token, mode) as c:
        b1, cols1 = await _board(c, owner.workspace_id, "One")
        b2, cols2 = await _board(c, owner.workspace_id, "Two")
        made = [
            await new_task(c, cols1[0], "a"),
            await new_task(c, cols2[1], "b"),
            await new_task(c, cols1[2], "c"),
        ]
        # a refused create does not use up a number
        assert (await err(c, "create_task", {"columnId": cols1[0], "title": " "}))["code"] == "INVALID_INPUT"
        await ok(c, "manage_columns", {"action": "archive", "columnId": cols2[3]})
        assert (await err(c, "create_task", {"columnId": cols2[3], "title": "into archived"}))[
            "code"
        ] == "INVALID_INPUT"  # archived, not missing
        made.append(await new_task(c, cols2[0], "d"))
    assert [t["number"] for t in made] == [1, 2, 3, 4]
    assert [t["key"] for t in made] == ["TS-1", "TS-2", "TS-3", "TS-4"]
    assert [t["boardId"] for t in made] == [b1, b2, b1, b2]
    assert made[1]["id"].startswith("tk_") and made[1]["id"].endswith("_2")
    # another workspace counts from 1 on its own
    async with mcp_client(server_url, outsider.token, mode) as c:
        _, cols = await _board(c, outsider.workspace_id)
        theirs = await new_task(c, cols[0], "theirs")
    assert (theirs["number"], theirs["key"]) == (1, "ELS-1")


async def test_create_task_returns_the_whole_task(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        plain = await new_task(c, cols[1], "  Plain task  ")
        full = await new_task(
            c, cols[1], "Full task", description="## Why\nBecause.", priority="HIGH", dueDate="2026-12-24"
        )
        stamped = await new_task(c, cols[1], "Timed", dueDate="2026-12-24T17:00:00Z")
    assert plain["title"] == "Plain task"
    assert plain["priority"] == "NONE" and plain["dueDate"] is None and plain["description"] == ""
    assert plain["columnId"] == cols[1] and plain["columnName"] == "To Do" and plain["boardId"] == bid
    assert plain["createdBy"] == owner.user_id and plain["archivedAt"] is None
    assert plain["assigneeIds"] == [] and plain["labelIds"] == []
    assert STAMP.match(plain["createdAt"]) and plain["updatedAt"] == plain["createdAt"]
    assert (full["description"], full["priority"], full["dueDate"]) == ("## Why\nBecause.", "HIGH", "2026-12-24")
    assert stamped["dueDate"] == "2026-12-24T17:00:00.000Z"  # timestamps are stored in UTC with milliseconds


async def test_create_task_bad_input_names_the_field(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        _, theirs = await _board(c, outsider.workspace_id)
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        before = stored_state()
        cases = [
            ({"columnId": cols[0]}, "title"),
            ({"columnId": cols[0], "title": ""}, "title"),
            ({"columnId": cols[0], "title": "   "}, "title"),
            ({"columnId": cols[0], "title": "x" * 501}, "title"),
            ({"title": "x"}, "columnId"),
            ({"columnId": cols[0], "title": "x", "priority": "CRITICAL"}, "priority"),
            ({"columnId": cols[0], "title": "x", "dueDate": "next week"}, "dueDate"),
            ({"columnId": cols[0], "title": "x", "dueDate": "2026-12-24T10:00:00"}, "dueDate"),
            ({"columnId": cols[0], "title": "x", "description": "d" * 20001}, "description"),
            ({"columnId": cols[0], "title": "x", "labels": ["a"]}, "labels"),
        ]
        for args, field in cases:
            problem = await err(c, "create_task", args)
            assert names_field(problem, field), (args, problem)
        for col in (theirs[0], "cl_aaaaaaaaaaaa_bbbbbbbb_cccccc", "nonsense"):
            assert (await err(c, "create_task", {"columnId": col, "title": "x"}))["code"] == "NOT_FOUND"
        assert stored_state() == before
        # numbering was not disturbed by any of it
        assert (await new_task(c, cols[0], "first"))["number"] == 1


# -- get_task ----------------------------------------------------------------------------------
async def test_get_task_by_id_and_by_number_concise_and_detailed(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        await new_task(c, cols[0], "first")
        task = await new_task(c, cols[0], "second", description="long text", priority="LOW")
        await ok(c, "update_task", {"taskId": task["id"], "priority": "HIGH"})
        detailed = await ok(c, "get_task", {"taskId": task["id"]})
        by_number = await ok(c, "get_task", {"workspaceId": owner.workspace_id, "number": 2})
        assert by_number == detailed
        explicit = await ok(c, "get_task", {"taskId": task["id"], "response_format": "detailed"})
        assert explicit == detailed
        concise = await ok(c, "get_task", {"taskId": task["id"], "response_format": "concise"})
        concise_by_number = await ok(
            c, "get_task", {"workspaceId": owner.workspace_id, "number": 2, "response_format": "concise"}
        )
        assert concise_by_number == concise
    t = detailed["task"]
    assert (t["id"], t["number"], t["key"], t["title"]) == (task["id"], 2, "TS-2", "second")
    assert t["description"] == "long text" and t["priority"] == "HIGH" and t["createdBy"] == owner.user_id
    assert [a["type"] for a in detailed["recentActivity"]] == ["task.updated", "task.created"]
    assert all(a["taskId"] == task["id"] for a in detailed["recentActivity"])
    assert concise.get("recentActivity") is None
    assert "description" not in concise["task"] and "createdBy" not in concise["task"]
    assert {k: concise["task"][k] for k in concise["task"] if k != "columnName"} == {
        k: t[k] for k in concise["task"] if k != "columnName"
    }
    assert t["columnName"] == concise["task"]["columnName"] == "Backlog"  # both read the board header with the task


async def test_get_task_recent_activity_is_the_ten_newest(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "busy")
        for i in range(11):
            await ok(c, "update_task", {"taskId": task["id"], "title": f"busy {i}"})
        recent = (await ok(c, "get_task", {"taskId": task["id"]}))["recentActivity"]
    assert len(recent) == 10
    assert [a["data"]["title"]["to"] for a in recent] == [f"busy {i}" for i in range(10, 0, -1)]
    assert [a["at"] for a in recent] == sorted((a["at"] for a in recent), reverse=True)


async def test_get_task_argument_rules(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        _, theirs = await _board(c, outsider.workspace_id)
        their_task = await new_task(c, theirs[0], "private")
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "mine")
        assert names_field(await err(c, "get_task", {}), "taskId")
        assert names_field(await err(c, "get_task", {"number": 1}), "taskId")
        assert names_field(await err(c, "get_task", {"workspaceId": owner.workspace_id}), "taskId")
        assert names_field(await err(c, "get_task", {"taskId": task["id"], "number": 1}), "taskId")
        assert names_field(await err(c, "get_task", {"workspaceId": owner.workspace_id, "number": 0}), "number")
        assert names_field(
            await err(c, "get_task", {"taskId": task["id"], "response_format": "full"}), "response_format"
        )
        assert (await err(c, "get_task", {"workspaceId": owner.workspace_id, "number": 99}))["code"] == "NOT_FOUND"
        assert (await err(c, "get_task", {"taskId": their_task["id"]}))["code"] == "NOT_FOUND"
        assert (await err(c, "get_task", {"workspaceId": outsider.workspace_id, "number": 1}))["code"] == "NOT_FOUND"


# -- update_task -------------------------------------------------------------------------------
async def test_update_task_changes_only_the_fields_sent(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "Draft", description="body", priority="LOW", dueDate="2026-12-01")
        steps = [
            ({"title": "Final"}, {"title": "Final"}),
            ({"priority": "URGENT"}, {"priority": "URGENT"}),
            ({"dueDate": "2027-01-15"}, {"dueDate": "2027-01-15"}),
            ({"dueDate": None}, {"dueDate": None}),
            ({"description": ""}, {"description": ""}),
            ({"description": "new body", "title": "Final v2"}, {"description": "new body", "title": "Final v2"}),
        ]
        current = task
        for sent, changed in steps:
            updated = (await ok(c, "update_task", {"taskId": task["id"], **sent}))["task"]
            expected = {**current, **changed}
            for k in ("updatedAt", "columnName"):
                expected.pop(k)
            assert {k: v for k, v in updated.items() if k not in ("updatedAt", "columnName")} == expected, sent
            assert updated["updatedAt"] > current["updatedAt"]
            current = updated
        stored = (await ok(c, "get_task", {"taskId": task["id"]}))["task"]
        assert {k: v for k, v in stored.items() if k != "columnName"} == {
            k: v for k, v in current.items() if k != "columnName"
        }
        assert stored["columnId"] == cols[0] and stored["createdAt"] == task["createdAt"]
        log = (await ok(c, "list_activity", {"taskId": task["id"]}))["activity"]
        assert [a["type"] for a in log] == ["task.updated"] * len(steps) + ["task.created"]
        assert log[-2]["data"] == {"title": {"from": "Draft", "to": "Final"}}
        assert log[0]["data"]["description"] == "changed"
        # the snapshot row follows the update
        shown = await ok(
            c, "get_board_snapshot", {"boardId": bid, "fields": ["title", "priority", "dueDate", "updatedAt"]}
        )
        row = next(t for t in shown["tasks"] if t["id"] == task["id"])
        assert (row["title"], row["priority"], row["dueDate"], row["updatedAt"]) == (
            "Final v2",
            "URGENT",
            None,
            current["updatedAt"],
        )


async def test_update_task_expected_updated_at(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "v1")
        v2 = (
            await ok(c, "update_task", {"taskId": task["id"], "title": "v2", "expectedUpdatedAt": task["updatedAt"]})
        )["task"]
        assert v2["title"] == "v2"
        before = stored_state()
        stale = await err(
            c, "update_task", {"taskId": task["id"], "title": "lost", "expectedUpdatedAt": task["updatedAt"]}
        )
        assert stored_state() == before
        assert stale["code"] == "CONFLICT" and stale["hint"]
        current = (await ok(c, "get_task", {"taskId": task["id"]}))["task"]
        assert stale["current"]["title"] == "v2" and stale["current"]["updatedAt"] == v2["updatedAt"]
        assert {k: v for k, v in stale["current"].items() if k != "columnName"} == {
            k: v for k, v in current.items() if k != "columnName"
        }
        # merging onto error.current and retrying with its updatedAt succeeds
        v3 = (
            await ok(
                c,
                "update_task",
                {"taskId": task["id"], "title": "v3", "expectedUpdatedAt": stale["current"]["updatedAt"]},
            )
        )["task"]
        assert v3["title"] == "v3"
        # a stale token is refused even when the change would be a no-op
        same = await err(c, "update_task", {"taskId": task["id"], "title": "v3", "expectedUpdatedAt": v2["updatedAt"]})
        assert same["code"] == "CONFLICT"


async def test_update_task_without_a_change_keeps_updated_at_and_writes_nothing(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "Same", priority="MEDIUM", dueDate="2026-12-01")
        before = stored_state()
        for sent in (
            {"title": "Same"},
            {"title": " Same "},
            {"priority": "MEDIUM", "dueDate": "2026-12-01"},
            {"description": ""},
        ):
            again = (
                await ok(c, "update_task", {"taskId": task["id"], **sent, "expectedUpdatedAt": task["updatedAt"]})
            )["task"]
            assert again["updatedAt"] == task["updatedAt"] and again["title"] == "Same"
        assert stored_state() == before
        assert len(activity_rows(bid)) == 2  # board.created, task.created


async def test_update_task_bad_input(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "t")
        before = stored_state()
        cases = [
            ({}, "arguments"),
            ({"expectedUpdatedAt": task["updatedAt"]}, "arguments"),
            # null on a field that cannot be empty is ignored, so these nulls are nothing to change
            ({"title": None, "priority": None}, "arguments"),
            ({"title": "  "}, "title"),
            ({"priority": "SOMEDAY"}, "priority"),
            ({"dueDate": "31/12/2026"}, "dueDate"),
            ({"columnId": cols[1]}, "columnId"),
            ({"title": "x", "expectedUpdatedAt": "2026-01-01"}, "expectedUpdatedAt"),
        ]
        for args, field in cases:
            problem = await err(c, "update_task", {"taskId": task["id"], **args})
            assert names_field(problem, field), (args, problem)
        assert names_field(await err(c, "update_task", {"title": "x"}), "taskId")
        assert (await err(c, "update_task", {"taskId": task["id"][:-1] + "9", "title": "x"}))["code"] == "NOT_FOUND"
        assert stored_state() == before
        kept = (
            await ok(
                c,
                "update_task",
                {"taskId": task["id"], "title": "renamed", "description": None, "priority": None, "dueDate": None},
            )
        )["task"]
        assert (kept["title"], kept["description"], kept["priority"]) == (
            "renamed",
            task["description"],
            task["priority"],
        )


# -- updatedAt as a token -------------------------------------------------------------------------
async def test_updated_at_strictly_increases_across_rapid_updates(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "rapid")
        stamps = [task["updatedAt"]]
        for i in range(15):
            stamps.append(
                (
                    await ok(
                        c, "update_task", {"taskId": task["id"], "title": f"rapid {i}", "expectedUpdatedAt": stamps[-1]}
                    )
                )["task"]["updatedAt"]
            )
        stamps.append(
            (await ok(c, "move_task", {"taskId": task["id"], "columnId": cols[1], "expectedUpdatedAt": stamps[-1]}))[
                "task"
            ]["updatedAt"]
        )
        stamps.append((await ok(c, "archive_task", {"taskId": task["id"]}))["task"]["updatedAt"])
    assert all(STAMP.match(s) for s in stamps), stamps
    assert all(a < b for a, b in itertools.pairwise(stamps)), stamps


def test_updated_at_strictly_increases_even_within_one_millisecond(stack, owner):
    """In-process calls come faster than the clock ticks: the token must still advance."""
    from domain import auth, pipeline
    from domain.catalog import registry as product_registry

    principal = auth.authenticate(owner.token)
    board = pipeline.call_tool(
        product_registry().get("create_board"), {"workspaceId": owner.workspace_id, "name": "Fast"}, principal
    ).result
    column = board["columns"][0]["id"]
    task = pipeline.call_tool(
        product_registry().get("create_task"), {"columnId": column, "title": "fast"}, principal
    ).result["task"]
    update = product_registry().get("update_task")
    stamps = [task["updatedAt"]]
    for i in range(40):
        out = pipeline.call_tool(update, {"taskId": task["id"], "priority": ["LOW", "HIGH"][i % 2]}, principal)
        assert out.error is None, out.error
        stamps.append(out.result["task"]["updatedAt"])
    assert all(STAMP.match(s) for s in stamps)
    assert len(set(stamps)) == len(stamps)
    assert stamps == sorted(stamps)


# -- move_task ---------------------------------------------------------------------------------
async def test_move_task_between_columns(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        a = await new_task(c, cols[0], "a")
        b = await new_task(c, cols[0], "b")
        c1 = await new_task(c, cols[2], "c1")
        moved = (
            await ok(c, "move_task", {"taskId": a["id"], "columnId": cols[2], "expectedUpdatedAt": a["updatedAt"]})
        )["task"]
        assert moved["columnId"] == cols[2] and moved["columnName"] == "In Progress"
        assert moved["updatedAt"] > a["updatedAt"] and moved["title"] == "a" and moved["number"] == a["number"]
        assert await _column_order(c, cols[2]) == [c1["id"], a["id"]]  # appended
        assert await _column_order(c, cols[0]) == [b["id"]]
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [col["taskCount"] for col in snap["columns"]] == [1, 0, 2, 0]
        assert [col["taskIds"] for col in snap["columns"]] == [[b["id"]], [], [c1["id"], a["id"]], []]
        listed = await ok(c, "list_tasks", {"columnId": cols[2]})
        assert listed["totalCount"] == 2 and listed["columnName"] == "In Progress"
        got = await ok(c, "get_task", {"taskId": a["id"]})
        assert got["task"]["columnId"] == cols[2] and got["recentActivity"][0]["type"] == "task.moved"
        assert got["recentActivity"][0]["data"] == {"fromColumnId": cols[0], "toColumnId": cols[2]}
        # a stale move is refused with the current task
        stale = await err(c, "move_task", {"taskId": a["id"], "columnId": cols[3], "expectedUpdatedAt": a["updatedAt"]})
        assert stale["code"] == "CONFLICT" and stale["current"]["columnId"] == cols[2]


async def test_move_task_before_and_after_placement(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        src, dst = cols[0], cols[1]
        t = {name: await new_task(c, dst, name) for name in ("a", "b", "c")}
        x = await new_task(c, src, "x")
        y = await new_task(c, src, "y")

        async def order() -> list[str]:
            ids_by_id = {v["id"]: k for k, v in {**t, "x": x, "y": y}.items()}
            listed = [ids_by_id[i] for i in await _column_order(c, dst)]
            assert [ids_by_id[i] for i in await _snapshot_order(c, bid, dst)] == listed
            return listed

        await ok(c, "move_task", {"taskId": x["id"], "columnId": dst, "beforeTaskId": t["b"]["id"]})
        assert await order() == ["a", "x", "b", "c"]
        await ok(c, "move_task", {"taskId": y["id"], "columnId": dst, "afterTaskId": t["c"]["id"]})
        assert await order() == ["a", "x", "b", "c", "y"]
        # reorder inside a column (columnId omitted)
        await ok(c, "move_task", {"taskId": t["c"]["id"], "beforeTaskId": t["a"]["id"]})
        assert await order() == ["c", "a", "x", "b", "y"]
        await ok(c, "move_task", {"taskId": t["c"]["id"], "afterTaskId": t["a"]["id"]})
        assert await order() == ["a", "c", "x", "b", "y"]
        await ok(c, "move_task", {"taskId": t["a"]["id"], "afterTaskId": y["id"]})
        assert await order() == ["c", "x", "b", "y", "a"]
        # next to its own neighbour: the place it already has
        await ok(c, "move_task", {"taskId": t["b"]["id"], "afterTaskId": x["id"]})
        assert await order() == ["c", "x", "b", "y", "a"]
        await ok(c, "move_task", {"taskId": t["b"]["id"], "beforeTaskId": y["id"]})
        assert await order() == ["c", "x", "b", "y", "a"]
        # neither anchor: to the bottom
        await ok(c, "move_task", {"taskId": x["id"], "columnId": dst})
        assert await order() == ["c", "b", "y", "a", "x"]
        await ok(c, "move_task", {"taskId": t["c"]["id"]})
        assert await order() == ["b", "y", "a", "x", "c"]
        # many insertions at the same spot keep a total order
        for _ in range(6):
            await ok(c, "move_task", {"taskId": t["c"]["id"], "afterTaskId": t["b"]["id"]})
            await ok(c, "move_task", {"taskId": y["id"], "beforeTaskId": t["c"]["id"]})
        assert (await order())[:2] == ["b", "y"]
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [col["taskCount"] for col in snap["columns"]][:2] == [0, 5]


async def test_move_task_refusals(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _bid, cols = await _board(c, owner.workspace_id)
        _, other_cols = await _board(c, owner.workspace_id, "Other")
        a = await new_task(c, cols[0], "a")
        b = await new_task(c, cols[1], "b")
        elsewhere = await new_task(c, other_cols[0], "elsewhere")
        before = stored_state()
        cases = [
            (
                {"taskId": a["id"], "columnId": cols[2], "beforeTaskId": b["id"]},
                "beforeTaskId",
            ),  # anchor in another column
            ({"taskId": a["id"], "columnId": cols[1], "afterTaskId": a["id"]}, "afterTaskId"),
            ({"taskId": a["id"], "beforeTaskId": b["id"], "afterTaskId": b["id"]}, "beforeTaskId"),
            ({"taskId": a["id"], "columnId": other_cols[1]}, "columnId"),  # a column of another board
            ({"taskId": a["id"], "columnId": cols[1], "afterTaskId": elsewhere["id"]}, "afterTaskId"),
            ({"taskId": a["id"], "columnId": "nonsense"}, "columnId"),
            ({"taskId": a["id"], "columnId": cols[1], "position": 0}, "position"),
            ({"columnId": cols[1]}, "taskId"),
        ]
        for args, field in cases:
            problem = await err(c, "move_task", args)
            assert names_field(problem, field), (args, problem)
        assert stored_state() == before
        assert (await ok(c, "get_task", {"taskId": a["id"]}))["task"]["columnId"] == cols[0]


# -- archive_task ------------------------------------------------------------------------------
async def test_archive_task(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        keep = await new_task(c, cols[0], "keep")
        gone = await new_task(c, cols[0], "gone", description="history")
        archived = (await ok(c, "archive_task", {"taskId": gone["id"]}))["task"]
        assert STAMP.match(archived["archivedAt"]) and archived["updatedAt"] == archived["archivedAt"]
        assert archived["updatedAt"] > gone["updatedAt"]
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [t["id"] for t in snap["tasks"]] == [keep["id"]]
        assert snap["totalCount"] == 1 and snap["columns"][0]["taskCount"] == 1 and snap["board"]["taskCount"] == 1
        for args in ({"boardId": bid}, {"columnId": cols[0]}):
            listed = await ok(c, "list_tasks", args)
            assert [t["id"] for t in listed["tasks"]] == [keep["id"]] and listed["totalCount"] == 1
        got = await ok(c, "get_task", {"taskId": gone["id"]})
        assert got["task"]["archivedAt"] == archived["archivedAt"] and got["task"]["description"] == "history"
        assert got["recentActivity"][0]["type"] == "task.archived"
        assert (await ok(c, "get_task", {"workspaceId": owner.workspace_id, "number": gone["number"]}))["task"][
            "id"
        ] == gone["id"]
        before = stored_state()
        assert names_field(await err(c, "update_task", {"taskId": gone["id"], "title": "revive"}), "taskId")
        assert names_field(await err(c, "move_task", {"taskId": gone["id"], "columnId": cols[1]}), "taskId")
        assert names_field(await err(c, "move_task", {"taskId": keep["id"], "afterTaskId": gone["id"]}), "afterTaskId")
        # archiving again answers the archived task and changes nothing
        again = (await ok(c, "archive_task", {"taskId": gone["id"]}))["task"]
        assert again["archivedAt"] == archived["archivedAt"] and again["updatedAt"] == archived["updatedAt"]
        assert stored_state() == before
        assert (await err(c, "archive_task", {"taskId": gone["id"][:-1] + "9"}))["code"] == "NOT_FOUND"
        # its number stays taken
        assert (await new_task(c, cols[0], "next"))["number"] == gone["number"] + 1


# -- list_tasks --------------------------------------------------------------------------------
async def test_list_tasks_board_and_column_concise_and_detailed(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id, "Listing")
        a = await new_task(c, cols[1], "a", description="alpha")
        b = await new_task(c, cols[0], "b")
        d = await new_task(c, cols[1], "d")
        await ok(c, "move_task", {"taskId": d["id"], "beforeTaskId": a["id"]})
        board = await ok(c, "list_tasks", {"boardId": bid})
        assert board["boardId"] == bid and board["boardName"] == "Listing"
        assert board["columnId"] is None and board["columnName"] is None
        assert [t["id"] for t in board["tasks"]] == [a["id"], b["id"], d["id"]]  # by number
        assert board["totalCount"] == 3 and board["nextCursor"] is None and board["notice"] is None
        assert {t["id"]: t["columnName"] for t in board["tasks"]} == {
            a["id"]: "To Do",
            b["id"]: "Backlog",
            d["id"]: "To Do",
        }
        assert all("description" not in t for t in board["tasks"])
        column = await ok(c, "list_tasks", {"columnId": cols[1]})
        assert column["columnId"] == cols[1] and column["columnName"] == "To Do" and column["boardId"] == bid
        assert [t["id"] for t in column["tasks"]] == [d["id"], a["id"]]  # by rank
        assert column["totalCount"] == 2
        both = await ok(c, "list_tasks", {"boardId": bid, "columnId": cols[1]})
        assert [t["id"] for t in both["tasks"]] == [d["id"], a["id"]]
        detailed = await ok(c, "list_tasks", {"columnId": cols[1], "response_format": "detailed"})
        assert [t["id"] for t in detailed["tasks"]] == [d["id"], a["id"]]
        assert detailed["tasks"][1]["description"] == "alpha" and detailed["tasks"][1]["createdBy"] == owner.user_id
        full = (await ok(c, "get_task", {"taskId": a["id"]}))["task"]
        assert {**detailed["tasks"][1], "columnName": None} == {**full, "columnName": None}
        empty = await ok(c, "list_tasks", {"columnId": cols[3]})
        assert empty["tasks"] == [] and empty["totalCount"] == 0 and empty["nextCursor"] is None


@pytest.mark.parametrize("count", [5, 6])
async def test_list_tasks_pages_walk_every_task_once(server_url, owner, count):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        made = [await new_task(c, cols[i % 2], f"t{i}") for i in range(count)]
        for args, expected in (
            ({"boardId": bid}, [t["id"] for t in made]),
            ({"columnId": cols[0]}, [t["id"] for t in made if t["columnId"] == cols[0]]),
        ):
            seen: list[str] = []
            cursor = None
            pages = 0
            while True:
                page = await ok(c, "list_tasks", {**args, "limit": 2, **({"cursor": cursor} if cursor else {})})
                pages += 1
                assert page["totalCount"] == len(expected)
                assert len(page["tasks"]) <= 2
                seen += [t["id"] for t in page["tasks"]]
                cursor = page["nextCursor"]
                if cursor is None:
                    assert page["notice"] is None
                    break
                assert page["tasks"], "a page that promises more must not be empty"
                assert str(len(expected)) in page["notice"] and "nextCursor" in page["notice"]
            assert seen == expected
            assert pages == -(-len(expected) // 2)


async def test_list_tasks_refusals(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        their_board, theirs = await _board(c, outsider.workspace_id)
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        other_bid, _ = await _board(c, owner.workspace_id, "Other")
        for i in range(3):
            await new_task(c, cols[0], f"t{i}")
        first = await ok(c, "list_tasks", {"boardId": bid, "limit": 1})
        assert first["nextCursor"]
        forged = base64.urlsafe_b64encode(
            json.dumps(
                {"k": f"tasks:{bid}", "l": {"PK": {"S": f"BOARD#{their_board}"}, "SK": {"S": "T#0000000001"}}}
            ).encode()
        ).decode()
        junk_shape = base64.urlsafe_b64encode(json.dumps({"k": f"tasks:{bid}", "l": {"PK": 5}}).encode()).decode()
        cases = [
            ({}, "boardId"),
            ({"boardId": bid, "cursor": "not-a-cursor"}, "cursor"),
            ({"boardId": bid, "cursor": base64.urlsafe_b64encode(b"[1,2]").decode()}, "cursor"),
            ({"boardId": other_bid, "cursor": first["nextCursor"]}, "cursor"),  # from another list
            ({"columnId": cols[0], "cursor": first["nextCursor"]}, "cursor"),
            ({"boardId": bid, "cursor": forged}, "cursor"),
            ({"boardId": bid, "cursor": junk_shape}, "cursor"),
            ({"boardId": other_bid, "columnId": cols[0]}, "columnId"),
            ({"boardId": bid, "limit": 0}, "limit"),
            ({"boardId": bid, "limit": 201}, "limit"),
            ({"boardId": bid, "response_format": "verbose"}, "response_format"),
        ]
        for args, field in cases:
            problem = await err(c, "list_tasks", args)
            assert names_field(problem, field), (args, problem)
        for args in (
            {"boardId": their_board},
            {"columnId": theirs[0]},
            {"columnId": "cl_aaaaaaaaaaaa_bbbbbbbb_cccccc"},
        ):
            assert (await err(c, "list_tasks", args))["code"] == "NOT_FOUND"


async def test_list_tasks_on_an_archived_column_lists_it_with_a_notice(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id, "Archived column")
        kept = await new_task(c, cols[0], "stays")
        hidden = await new_task(c, cols[3], "leaves with its column")
        await ok(c, "manage_columns", {"action": "archive", "columnId": cols[3]})
        listed = await ok(c, "list_tasks", {"columnId": cols[3]})
        assert [t["id"] for t in listed["tasks"]] == [hidden["id"]] and "archived" in listed["notice"]
        board = await ok(c, "list_tasks", {"boardId": bid})
        assert [t["id"] for t in board["tasks"]] == [kept["id"]] and board["totalCount"] == 1
        back = await ok(c, "move_task", {"taskId": hidden["id"], "columnId": cols[0]})
        assert back["task"]["columnId"] == cols[0]


async def test_board_pages_skip_archived_column_tasks_without_empty_pages(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id, "Paging past hidden")
        first = await new_task(c, cols[0], "q0")
        for title in ("q1", "q2"):
            await new_task(c, cols[3], title)
        last = await new_task(c, cols[0], "q3")
        await ok(c, "manage_columns", {"action": "archive", "columnId": cols[3]})
        seen, cursor, pages = [], None, 0
        while True:
            page = await ok(c, "list_tasks", {"boardId": bid, "limit": 1, **({"cursor": cursor} if cursor else {})})
            pages += 1
            assert page["tasks"], "a page came back empty"
            seen += [t["id"] for t in page["tasks"]]
            cursor = page["nextCursor"]
            if not cursor:
                break
        assert seen == [first["id"], last["id"]] and pages == 2


async def test_concurrent_moves_into_one_column_all_land(server_url, owner):
    import asyncio

    async with mcp_client(server_url, owner.token) as c:
        _bid, cols = await _board(c, owner.workspace_id, "Crowded column")
        tasks = [await new_task(c, cols[0], f"m{i}") for i in range(8)]

    async def move(t):
        async with mcp_client(server_url, owner.token) as c2:
            return await ok(c2, "move_task", {"taskId": t["id"], "columnId": cols[2]})

    moved = await asyncio.gather(*(move(t) for t in tasks))
    assert all(m["task"]["columnId"] == cols[2] for m in moved)
    async with mcp_client(server_url, owner.token) as c:
        order = await _column_order(c, cols[2])
    assert sorted(order) == sorted(t["id"] for t in tasks)


async def test_secrets_in_task_text_are_redacted_before_storage(server_url, owner):
    """Issue 24 items 7 and 8: titles, descriptions (create and update) and subtask titles lose
    their secrets before anything is stored: a tm_ token with a wrong checksum in a title, a
    GitHub token split by a zero-width space, an .npmrc auth line. Each answer names the rules
    in ``redactions``; the activity lines carry the redacted title only."""
    import secrets
    import string

    from domain import tokens

    good = tokens.mint("tm_")
    bad = good[:-1] + ("A" if good[-1] != "A" else "B")
    ghp = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))
    npm = "".join(secrets.choice("0123456789abcdef") for _ in range(32))
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id)
        col = board["columns"][0]["id"]
        made = await ok(
            c, "create_task", {"columnId": col, "title": f"Token {bad} stopped working", "description": "see the logs"}
        )
        assert (
            made["redactions"] == ["jentrix-token"]
            and made["task"]["title"] == "Token [REDACTED:jentrix-token] stopped working"
        )
        task_id = made["task"]["id"]
        split = ghp[:12] + "\u200b" + ghp[12:]
        upd = await ok(
            c,
            "update_task",
            {"taskId": task_id, "description": f"Ｕｓｅ {split} then\n//npm.example.com/:_authToken={npm}"},
        )
        assert upd["redactions"] == ["github-token", "npmrc-auth"], upd["redactions"]
        assert (
            upd["task"]["description"].startswith("Ｕｓｅ [REDACTED:github-token] then")
            and npm not in upd["task"]["description"]
        )
        assert upd["changedFields"] == ["description"]
        same = await ok(c, "update_task", {"taskId": task_id, "priority": "HIGH"})
        assert same["redactions"] == []
        sub = await ok(c, "create_subtask", {"taskId": task_id, "title": f"revoke {ghp}"})
        assert sub["redactions"] == ["github-token"] and sub["subtask"]["title"] == "revoke [REDACTED:github-token]"
        got = await ok(c, "get_task", {"taskId": task_id})
        assert bad not in str(got) and ghp not in str(got) and ghp[12:] not in str(got)
        activity = activity_rows(board["board"]["id"])
    state = str(stored_state())
    for secret in (bad, ghp, ghp[12:], npm):
        assert secret not in state
    assert any("[REDACTED:jentrix-token]" in str(a) for a in activity)
