"""Behaviour of the board and column tools (create_board, rename_board, list_boards,
list_columns, manage_columns, get_board_snapshot) through the official MCP SDK client."""

from __future__ import annotations

import time

import pytest

from tests.conftest import mcp_client
from tests.tools_support import (
    STAMP,
    activity_rows,
    create_tasks_in_process,
    err,
    names_field,
    new_board,
    new_task,
    ok,
    seed_tasks,
    stored_state,
)

KIND_COLUMNS = {
    "TASKS": ["Backlog", "To Do", "In Progress", "Done"],
    "CRM": ["Lead", "Qualified", "Proposal", "Negotiation", "Won", "Lost"],
    "SUPPORT": ["New", "Triaged", "In Progress", "Waiting on Customer", "Resolved"],
    "BUGS": ["Reported", "Confirmed", "In Progress", "In Review", "Fixed"],
    "ROADMAP": ["Ideas", "Planned", "In Progress", "Shipped"],
}


async def _names(c, board_id: str, include_archived: bool = False) -> list[str]:
    cols = (await ok(c, "list_columns", {"boardId": board_id, "includeArchived": include_archived}))["columns"]
    assert [col["position"] for col in cols] == list(range(len(cols)))
    return [col["name"] for col in cols]


# -- create_board ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(KIND_COLUMNS))
async def test_create_board_has_the_default_columns_of_its_kind(server_url, owner, kind):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, f"{kind} board", kind)
        board = made["board"]
        assert board["kind"] == kind and board["name"] == f"{kind} board"
        assert board["workspaceId"] == owner.workspace_id and board["taskCount"] == 0
        assert (
            board["archivedAt"] is None and STAMP.match(board["createdAt"]) and board["updatedAt"] == board["createdAt"]
        )
        assert [col["name"] for col in made["columns"]] == KIND_COLUMNS[kind]
        assert [col["position"] for col in made["columns"]] == list(range(len(KIND_COLUMNS[kind])))
        assert all(
            col["boardId"] == board["id"] and col["taskCount"] == 0 and col["archivedAt"] is None
            for col in made["columns"]
        )
        # what create_board returned is what the board reads back as
        listed = (await ok(c, "list_columns", {"boardId": board["id"]}))["columns"]
        assert listed == made["columns"]
        snap = await ok(c, "get_board_snapshot", {"boardId": board["id"]})
        assert snap["board"] == board
    rows = activity_rows(board["id"])
    assert [r["type"]["S"] for r in rows] == ["board.created"]


async def test_create_board_defaults_to_tasks(server_url, owner):
    async with mcp_client(server_url, owner.token, "legacy") as c:
        made = await new_board(c, owner.workspace_id, "Plain")
    assert made["board"]["kind"] == "TASKS"
    assert [col["name"] for col in made["columns"]] == KIND_COLUMNS["TASKS"]


async def test_create_board_bad_input_writes_nothing(server_url, owner, outsider):
    async with mcp_client(server_url, owner.token) as c:
        before = stored_state()
        assert names_field(
            await err(c, "create_board", {"workspaceId": owner.workspace_id, "name": "x", "kind": "KANBAN"}), "kind"
        )
        assert names_field(await err(c, "create_board", {"workspaceId": owner.workspace_id}), "name")
        assert names_field(await err(c, "create_board", {"workspaceId": owner.workspace_id, "name": "  "}), "name")
        assert names_field(await err(c, "create_board", {"name": "x"}), "workspaceId")
        foreign = await err(c, "create_board", {"workspaceId": outsider.workspace_id, "name": "Intruder"})
        assert foreign["code"] == "NOT_FOUND"
        assert stored_state() == before


# -- list_boards -------------------------------------------------------------------------------
async def test_list_boards_lists_the_active_boards_of_that_workspace_only(server_url, owner, outsider):
    from domain.store.models import BoardEntryRow

    async with mcp_client(server_url, outsider.token) as c:
        await new_board(c, outsider.workspace_id, "Not yours")
    async with mcp_client(server_url, owner.token) as c:
        assert (await ok(c, "list_boards", {"workspaceId": owner.workspace_id}))["boards"] == []
        made = [
            (await new_board(c, owner.workspace_id, name, kind))["board"]
            for name, kind in [("Alpha", "TASKS"), ("Beta", "CRM"), ("Gamma", "BUGS")]
        ]
        listed = (await ok(c, "list_boards", {"workspaceId": owner.workspace_id}))["boards"]
        assert [(b["id"], b["name"], b["kind"]) for b in listed] == [(b["id"], b["name"], b["kind"]) for b in made]
        assert all(b["archivedAt"] is None for b in listed)
        # an archived board (no archive tool yet: flag its entry directly) leaves the default list
        BoardEntryRow(f"WS#{owner.workspace_id}", f"BOARD#{made[1]['id']}").update(
            actions=[BoardEntryRow.archivedAt.set("2026-01-01T00:00:00.000Z")]
        )
        active = (await ok(c, "list_boards", {"workspaceId": owner.workspace_id}))["boards"]
        assert [b["name"] for b in active] == ["Alpha", "Gamma"]
        everything = (await ok(c, "list_boards", {"workspaceId": owner.workspace_id, "includeArchived": True}))[
            "boards"
        ]
        assert [b["name"] for b in everything] == ["Alpha", "Beta", "Gamma"]
        assert (await err(c, "list_boards", {"workspaceId": outsider.workspace_id}))["code"] == "NOT_FOUND"


# -- rename_board ------------------------------------------------------------------------------
async def test_rename_board_and_same_name_is_a_no_op(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board = (await new_board(c, owner.workspace_id, "Launch"))["board"]
        renamed = (await ok(c, "rename_board", {"boardId": board["id"], "name": "Launch v2"}))["board"]
        assert renamed["name"] == "Launch v2" and renamed["id"] == board["id"]
        assert STAMP.match(renamed["updatedAt"]) and renamed["updatedAt"] > board["updatedAt"]
        assert renamed["createdAt"] == board["createdAt"]
        assert [b["name"] for b in (await ok(c, "list_boards", {"workspaceId": owner.workspace_id}))["boards"]] == [
            "Launch v2"
        ]
        assert (await ok(c, "get_board_snapshot", {"boardId": board["id"]}))["board"] == renamed
        rows_after_rename = len(activity_rows(board["id"]))
        same = (await ok(c, "rename_board", {"boardId": board["id"], "name": "Launch v2"}))["board"]
        assert same == renamed
        padded = (await ok(c, "rename_board", {"boardId": board["id"], "name": "  Launch v2 "}))["board"]
        assert padded == renamed
        assert len(activity_rows(board["id"])) == rows_after_rename
        log = (await ok(c, "list_activity", {"boardId": board["id"]}))["activity"]
        assert log[0]["type"] == "board.renamed" and log[0]["data"] == {"from": "Launch", "to": "Launch v2"}


async def test_rename_board_errors(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        foreign = (await new_board(c, outsider.workspace_id, "Theirs"))["board"]
    async with mcp_client(server_url, owner.token) as c:
        board = (await new_board(c, owner.workspace_id, "Mine"))["board"]
        before = stored_state()
        assert names_field(await err(c, "rename_board", {"boardId": board["id"], "name": " "}), "name")
        assert names_field(await err(c, "rename_board", {"boardId": board["id"], "name": ""}), "name")
        assert names_field(await err(c, "rename_board", {"boardId": board["id"]}), "name")
        assert names_field(await err(c, "rename_board", {"name": "x"}), "boardId")
        hidden = await err(c, "rename_board", {"boardId": foreign["id"], "name": "Mine now"})
        missing = await err(c, "rename_board", {"boardId": "bd_aaaaaaaaaaaa_bbbbbbbb", "name": "x"})
        garbage = await err(c, "rename_board", {"boardId": "nonsense", "name": "x"})
        assert hidden["code"] == missing["code"] == garbage["code"] == "NOT_FOUND"
        assert stored_state() == before


# -- list_columns and manage_columns --------------------------------------------------------------
async def test_manage_columns_create_appends_or_places(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Cols")
        bid = made["board"]["id"]
        cols = {col["name"]: col["id"] for col in made["columns"]}
        appended = await ok(c, "manage_columns", {"action": "create", "boardId": bid, "name": "Archive", "wipLimit": 7})
        assert appended["action"] == "create"
        assert (
            appended["column"]["name"] == "Archive"
            and appended["column"]["position"] == 4
            and appended["column"]["wipLimit"] == 7
        )
        assert [col["name"] for col in appended["columns"]] == ["Backlog", "To Do", "In Progress", "Done", "Archive"]
        before = await ok(
            c, "manage_columns", {"action": "create", "boardId": bid, "name": "Review", "beforeColumnId": cols["Done"]}
        )
        assert before["column"]["position"] == 3
        after = await ok(
            c, "manage_columns", {"action": "create", "boardId": bid, "name": "Inbox", "afterColumnId": cols["Backlog"]}
        )
        assert after["column"]["position"] == 1
        first = await ok(
            c,
            "manage_columns",
            {"action": "create", "boardId": bid, "name": "Ideas", "beforeColumnId": cols["Backlog"]},
        )
        assert first["column"]["position"] == 0
        expected = ["Ideas", "Backlog", "Inbox", "To Do", "In Progress", "Review", "Done", "Archive"]
        assert [col["name"] for col in first["columns"]] == expected
        assert await _names(c, bid) == expected
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [col["name"] for col in snap["columns"]] == expected


async def test_manage_columns_rename(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Cols")
        todo = made["columns"][1]
        out = await ok(
            c, "manage_columns", {"action": "rename", "columnId": todo["id"], "name": "Ready", "wipLimit": 3}
        )
        assert out["column"]["name"] == "Ready" and out["column"]["position"] == 1 and out["column"]["wipLimit"] == 3
        assert out["column"]["updatedAt"] > todo["updatedAt"]
        assert await _names(c, made["board"]["id"]) == ["Backlog", "Ready", "In Progress", "Done"]
        task = await new_task(c, todo["id"], "shows the new name")
        assert task["columnName"] == "Ready"


async def test_manage_columns_move(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Cols")
        bid = made["board"]["id"]
        ids = {col["name"]: col["id"] for col in made["columns"]}
        out = await ok(
            c, "manage_columns", {"action": "move", "columnId": ids["Done"], "beforeColumnId": ids["Backlog"]}
        )
        assert out["column"]["position"] == 0
        assert [col["name"] for col in out["columns"]] == ["Done", "Backlog", "To Do", "In Progress"]
        await ok(c, "manage_columns", {"action": "move", "columnId": ids["Done"], "afterColumnId": ids["In Progress"]})
        assert await _names(c, bid) == ["Backlog", "To Do", "In Progress", "Done"]
        await ok(c, "manage_columns", {"action": "move", "columnId": ids["Backlog"], "afterColumnId": ids["To Do"]})
        assert await _names(c, bid) == ["To Do", "Backlog", "In Progress", "Done"]
        await ok(
            c, "manage_columns", {"action": "move", "columnId": ids["In Progress"], "beforeColumnId": ids["Backlog"]}
        )
        assert await _names(c, bid) == ["To Do", "In Progress", "Backlog", "Done"]
        await ok(c, "manage_columns", {"action": "move", "columnId": ids["To Do"], "afterColumnId": ids["Done"]})
        assert await _names(c, bid) == ["In Progress", "Backlog", "Done", "To Do"]
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [col["name"] for col in snap["columns"]] == ["In Progress", "Backlog", "Done", "To Do"]


async def test_manage_columns_archive(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Cols")
        bid = made["board"]["id"]
        backlog, todo, doing, done = (col["id"] for col in made["columns"])
        kept = await new_task(c, backlog, "stays")
        gone = [await new_task(c, doing, f"leaves {i}") for i in range(2)]
        out = await ok(c, "manage_columns", {"action": "archive", "columnId": doing})
        assert out["column"]["id"] == doing and STAMP.match(out["column"]["archivedAt"])
        assert [col["name"] for col in out["columns"]] == ["Backlog", "To Do", "Done"]
        assert await _names(c, bid) == ["Backlog", "To Do", "Done"]
        assert await _names(c, bid, include_archived=True) == ["Backlog", "To Do", "In Progress", "Done"]
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [t["id"] for t in snap["tasks"]] == [kept["id"]]
        assert snap["totalCount"] == 1 and doing not in [col["id"] for col in snap["columns"]]
        listed = await ok(c, "list_tasks", {"boardId": bid})
        assert [t["id"] for t in listed["tasks"]] == [kept["id"]] and listed["totalCount"] == 1
        # nothing new can go into an archived column, and it cannot be changed again
        assert (await err(c, "create_task", {"columnId": doing, "title": "late"}))[
            "code"
        ] == "INVALID_INPUT"  # archived, not missing
        assert names_field(await err(c, "move_task", {"taskId": kept["id"], "columnId": doing}), "columnId")
        assert names_field(await err(c, "manage_columns", {"action": "archive", "columnId": doing}), "columnId")
        assert names_field(
            await err(c, "manage_columns", {"action": "rename", "columnId": doing, "name": "Back"}), "columnId"
        )
        # the archived tasks are still there for get_task
        got = await ok(c, "get_task", {"taskId": gone[0]["id"]})
        assert got["task"]["columnId"] == doing
        # a board keeps one active column: the last one cannot go
        await ok(c, "manage_columns", {"action": "archive", "columnId": todo})
        await ok(c, "manage_columns", {"action": "archive", "columnId": done})
        before = stored_state()
        last = await err(c, "manage_columns", {"action": "archive", "columnId": backlog})
        assert names_field(last, "columnId") and "at least one" in last["message"]
        assert stored_state() == before
        assert await _names(c, bid) == ["Backlog"]


async def test_manage_columns_errors_name_the_field(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        foreign = await new_board(c, outsider.workspace_id, "Theirs")
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Cols")
        bid = made["board"]["id"]
        other = await new_board(c, owner.workspace_id, "Other")
        col = made["columns"][0]["id"]
        before = stored_state()
        cases = [
            ({"action": "create", "name": "x"}, "boardId"),
            ({"action": "create", "boardId": bid}, "name"),
            ({"action": "create", "boardId": bid, "name": "  "}, "name"),
            (
                {"action": "create", "boardId": bid, "name": "x", "beforeColumnId": col, "afterColumnId": col},
                "beforeColumnId",
            ),
            (
                {"action": "create", "boardId": bid, "name": "x", "afterColumnId": other["columns"][0]["id"]},
                "afterColumnId",
            ),
            ({"action": "rename", "name": "x"}, "columnId"),
            ({"action": "rename", "columnId": col}, "name"),
            ({"action": "move", "columnId": col}, "beforeColumnId"),
            ({"action": "move", "columnId": col, "afterColumnId": col}, "afterColumnId"),
            ({"action": "move", "columnId": col, "beforeColumnId": other["columns"][1]["id"]}, "beforeColumnId"),
            ({"action": "archive"}, "columnId"),
            ({"action": "archive", "columnId": col, "boardId": other["board"]["id"]}, "boardId"),
            ({"action": "delete", "columnId": col}, "action"),
            ({"columnId": col}, "action"),
            ({"action": "rename", "columnId": col, "name": "x", "position": 2}, "position"),
            ({"action": "create", "boardId": bid, "name": "x", "wipLimit": 0}, "wipLimit"),
        ]
        for args, field in cases:
            problem = await err(c, "manage_columns", args)
            assert names_field(problem, field), (args, problem)
        for args in (
            {"action": "rename", "columnId": foreign["columns"][0]["id"], "name": "mine"},
            {"action": "archive", "columnId": "cl_aaaaaaaaaaaa_bbbbbbbb_cccccc"},
            {"action": "move", "columnId": "nonsense", "beforeColumnId": col},
            {"action": "create", "boardId": foreign["board"]["id"], "name": "sneaky"},
        ):
            assert (await err(c, "manage_columns", args))["code"] == "NOT_FOUND", args
        assert stored_state() == before


async def test_every_column_change_writes_one_activity_row(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Log")
        bid = made["board"]["id"]
        cols = [col["id"] for col in made["columns"]]
        steps = [
            ({"action": "create", "boardId": bid, "name": "New"}, "column.created"),
            ({"action": "rename", "columnId": cols[0], "name": "Later"}, "column.renamed"),
            ({"action": "move", "columnId": cols[0], "afterColumnId": cols[3]}, "column.moved"),
            ({"action": "archive", "columnId": cols[1]}, "column.archived"),
        ]
        for args, kind in steps:
            count = len(activity_rows(bid))
            await ok(c, "manage_columns", args)
            rows = activity_rows(bid)
            assert len(rows) == count + 1
            assert rows[-1]["type"]["S"] == kind


# -- get_board_snapshot -------------------------------------------------------------------------
async def test_snapshot_orders_tasks_by_column_position_then_rank(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Order")
        bid = made["board"]["id"]
        backlog, todo, doing, done = (col["id"] for col in made["columns"])
        d1 = await new_task(c, done, "done 1")
        b1 = await new_task(c, backlog, "backlog 1")
        t1 = await new_task(c, todo, "todo 1")
        b2 = await new_task(c, backlog, "backlog 2")
        b3 = await new_task(c, backlog, "backlog 3")
        await ok(c, "move_task", {"taskId": b3["id"], "beforeTaskId": b1["id"]})
        await ok(c, "manage_columns", {"action": "move", "columnId": done, "beforeColumnId": todo})
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [t["id"] for t in snap["tasks"]] == [b3["id"], b1["id"], b2["id"], d1["id"], t1["id"]]
        assert [col["id"] for col in snap["columns"]] == [backlog, done, todo, doing]
        assert [col["taskIds"] for col in snap["columns"]] == [
            [b3["id"], b1["id"], b2["id"]],
            [d1["id"]],
            [t1["id"]],
            [],
        ]
        assert [col["taskCount"] for col in snap["columns"]] == [3, 1, 1, 0]
        assert snap["totalCount"] == 5 and snap["truncated"] is False and snap["notice"] is None
        assert snap["board"]["taskCount"] == 5
        row = next(t for t in snap["tasks"] if t["id"] == t1["id"])
        assert row == {
            "id": t1["id"],
            "key": t1["key"],
            "title": "todo 1",
            "columnId": todo,
            "priority": t1["priority"],
        }  # concise: empties dropped
        more = await ok(c, "get_board_snapshot", {"boardId": bid, "fields": ["columnName", "number", "labelIds"]})
        row = next(t for t in more["tasks"] if t["id"] == t1["id"])
        assert row == {"id": t1["id"], "columnName": "To Do", "number": t1["number"], "labelIds": []}
        assert (await err(c, "get_board_snapshot", {"boardId": bid, "fields": ["description"]}))[
            "code"
        ] == "INVALID_INPUT"


async def test_snapshot_pages_with_limit_and_a_cursor_that_belongs_to_its_board(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Pages")
        bid = made["board"]["id"]
        backlog, todo = made["columns"][0]["id"], made["columns"][1]["id"]
        ids = seed_tasks(owner.user_id, todo, 3, "t") + seed_tasks(owner.user_id, backlog, 2, "b")
        first = await ok(c, "get_board_snapshot", {"boardId": bid, "limit": 3})
        assert [t["id"] for t in first["tasks"]] == ids[3:] + ids[:1]  # board order: Backlog, then To Do
        assert first["truncated"] is True and first["totalCount"] == 5 and "1-3 of 5" in first["notice"]
        assert [col["taskIds"] for col in first["columns"]][:2] == [ids[3:], ids[:1]] and [
            col["taskCount"] for col in first["columns"]
        ][:2] == [2, 3]
        rest = await ok(c, "get_board_snapshot", {"boardId": bid, "limit": 3, "cursor": first["nextCursor"]})
        assert [t["id"] for t in rest["tasks"]] == ids[1:3] and rest["nextCursor"] is None
        assert [col["taskIds"] for col in rest["columns"]][:2] == [[], ids[1:3]]
        other = (await new_board(c, owner.workspace_id, "Other"))["board"]["id"]
        listed = await ok(c, "list_tasks", {"boardId": bid, "limit": 1})
        for cursor in (first["nextCursor"], listed["nextCursor"], "garbage"):
            board = other if cursor == first["nextCursor"] else bid
            assert names_field(await err(c, "get_board_snapshot", {"boardId": board, "cursor": cursor}), "cursor")
        assert names_field(await err(c, "get_board_snapshot", {"boardId": bid, "limit": 501}), "limit")


async def test_snapshot_of_a_foreign_or_missing_board_is_not_found(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        foreign = (await new_board(c, outsider.workspace_id, "Theirs"))["board"]
    async with mcp_client(server_url, owner.token) as c:
        for bid in (foreign["id"], "bd_aaaaaaaaaaaa_bbbbbbbb", "x"):
            assert (await err(c, "get_board_snapshot", {"boardId": bid}))["code"] == "NOT_FOUND"


async def test_snapshot_is_capped_at_500_tasks_with_a_notice(server_url, owner):
    started = time.monotonic()
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Big")
        bid = made["board"]["id"]
        backlog, todo, doing, _ = (col["id"] for col in made["columns"])
        # tasks in a column that then gets archived must not use up the snapshot's room
        seed_tasks(owner.user_id, doing, 10, "archived")
        seed_tasks(owner.user_id, backlog, 495, "live")
        await ok(c, "manage_columns", {"action": "archive", "columnId": doing})
        snap = await ok(c, "get_board_snapshot", {"boardId": bid, "limit": 500})
        assert snap["totalCount"] == 495 and len(snap["tasks"]) == 495
        assert snap["truncated"] is False and snap["notice"] is None and snap["nextCursor"] is None
        create_tasks_in_process(owner.token, todo, 6, "over")
        snap = await ok(c, "get_board_snapshot", {"boardId": bid, "limit": 500})
        assert snap["totalCount"] == 501
        assert len(snap["tasks"]) == 500 and snap["truncated"] is True and snap["nextCursor"] is None
        assert "500" in snap["notice"] and "list_tasks" in snap["notice"]
        # the default answer is the first page of the same 500, and says both ways on
        first = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [t["id"] for t in first["tasks"]] == [t["id"] for t in snap["tasks"]][: len(first["tasks"])]
        assert first["nextCursor"] and "nextCursor" in first["notice"] and "list_tasks" in first["notice"]
        assert [col["taskCount"] for col in first["columns"]] == [col["taskCount"] for col in snap["columns"]]
        shown = [t["id"] for t in snap["tasks"]]
        assert len(set(shown)) == 500
        assert sum(len(col["taskIds"]) for col in snap["columns"]) == 500
        order = {col["id"]: col["position"] for col in snap["columns"]}
        assert [order[t["columnId"]] for t in snap["tasks"]] == sorted(order[t["columnId"]] for t in snap["tasks"])
        # the rest is reachable with list_tasks
        seen: list[str] = []
        cursor = None
        while True:
            page = await ok(c, "list_tasks", {"boardId": bid, "limit": 200, **({"cursor": cursor} if cursor else {})})
            seen += [t["id"] for t in page["tasks"]]
            cursor = page["nextCursor"]
            if not cursor:
                break
        assert len(seen) == len(set(seen)) == 501 and set(shown) <= set(seen)
    assert time.monotonic() - started < 90


async def test_placing_a_column_between_two_tied_ranks_rebalances(server_url, owner):
    """Two columns created at the same instant can share a rank; placing a third between them re-ranks the board."""
    from domain.store.models import ColumnRow

    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Ties")
        cols = board["columns"]
        tied = ColumnRow.get(f"BOARD#{board['board']['id']}", f"C#{cols[1]['id']}")
        ColumnRow(f"BOARD#{board['board']['id']}", f"C#{cols[2]['id']}").update(
            actions=[ColumnRow.position.set(tied.position)]
        )
        order_before = [x["id"] for x in (await ok(c, "list_columns", {"boardId": board["board"]["id"]}))["columns"]]
        made = await ok(
            c,
            "manage_columns",
            {"action": "create", "boardId": board["board"]["id"], "name": "Between", "afterColumnId": order_before[1]},
        )
        order = [x["id"] for x in made["columns"]]
        assert order == [*order_before[:2], made["column"]["id"], *order_before[2:]]
        listed = [x["id"] for x in (await ok(c, "list_columns", {"boardId": board["board"]["id"]}))["columns"]]
        assert listed == order
        ranks = [ColumnRow.get(f"BOARD#{board['board']['id']}", f"C#{cid}").position for cid in listed]
        assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)


async def test_concurrent_archives_never_leave_a_board_without_columns(server_url, owner):
    import asyncio

    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Last column standing")

    async def archive(cid):
        async with mcp_client(server_url, owner.token) as c2:
            res = await c2.call_tool("manage_columns", {"action": "archive", "columnId": cid})
            return res

    results = await asyncio.gather(*(archive(col["id"]) for col in board["columns"]))
    refused = [r for r in results if r.is_error]
    assert len(refused) >= 1
    async with mcp_client(server_url, owner.token) as c:
        left = (await ok(c, "list_columns", {"boardId": board["board"]["id"]}))["columns"]
    assert len(left) == len(refused) >= 1
