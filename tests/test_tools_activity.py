"""Behaviour of list_activity (task and board logs, newest first, since/source/type filters,
paging) and the rule that every mutation writes exactly one activity row, through the official
MCP SDK client against DynamoDB Local."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tests.conftest import mcp_client
from tests.tools_support import STAMP, activity_rows, err, names_field, new_board, new_task, ok, stored_state


def _as_human(token: str, tool: str, arguments: dict) -> dict:
    """Run a tool with a human's credential of the same user (a token minted with holder
    "human"), through the whole pipeline: its writes are recorded with source 'ui'."""
    from domain import auth, pipeline
    from domain.catalog import registry as product_registry

    user_id = auth.authenticate(token).user_id
    human = auth.authenticate(auth.mint_pat(user_id, holder="human")[0])
    outcome = pipeline.call_tool(product_registry().get(tool), arguments, human)
    assert outcome.error is None, outcome.error
    return outcome.result


async def _walk(c, args: dict, limit: int) -> tuple[list[dict], list[int]]:
    """Every entry reachable from the first page by following nextCursor; and the page sizes."""
    entries: list[dict] = []
    sizes: list[int] = []
    cursor = None
    while True:
        page = await ok(c, "list_activity", {**args, "limit": limit, **({"cursor": cursor} if cursor else {})})
        entries += page["activity"]
        sizes.append(len(page["activity"]))
        cursor = page["nextCursor"]
        assert (page["notice"] is None) == (cursor is None)
        if cursor is None:
            return entries, sizes


async def test_board_and_task_logs_newest_first(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Log")
        bid, cols = made["board"]["id"], [col["id"] for col in made["columns"]]
        a = await new_task(c, cols[0], "a")
        b = await new_task(c, cols[0], "b")
        await ok(c, "update_task", {"taskId": a["id"], "title": "a2"})
        await ok(c, "move_task", {"taskId": b["id"], "columnId": cols[1]})
        await ok(c, "archive_task", {"taskId": a["id"]})
        board_log = await ok(c, "list_activity", {"boardId": bid})
        task_log = await ok(c, "list_activity", {"taskId": a["id"]})
    async with mcp_client(server_url, owner.token, "legacy") as c:
        legacy = await ok(c, "list_activity", {"boardId": bid})
    assert legacy == board_log
    entries = board_log["activity"]
    assert [(e["type"], e["taskId"]) for e in entries] == [
        ("task.archived", a["id"]),
        ("task.moved", b["id"]),
        ("task.updated", a["id"]),
        ("task.created", b["id"]),
        ("task.created", a["id"]),
        ("board.created", None),
    ]
    assert board_log["nextCursor"] is None and board_log["notice"] is None
    assert [e["at"] for e in entries] == sorted((e["at"] for e in entries), reverse=True)
    for e in entries:
        assert e["id"].startswith("act_") and STAMP.match(e["at"]) and e["summary"]
        assert e["boardId"] == bid and e["source"] == "mcp" and e["actorId"] == owner.user_id
    assert entries[2]["data"] == {"title": {"from": "a", "to": "a2"}}
    assert [e["type"] for e in task_log["activity"]] == ["task.archived", "task.updated", "task.created"]
    assert task_log["activity"] == [e for e in entries if e["taskId"] == a["id"]]


async def test_filters_since_source_and_type(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Filters")
        bid, cols = made["board"]["id"], [col["id"] for col in made["columns"]]
        task = await new_task(c, cols[0], "shared")
        mark = (await ok(c, "list_activity", {"taskId": task["id"]}))["activity"][0]["at"]
        _as_human(owner.token, "update_task", {"taskId": task["id"], "title": "edited by a person"})
        _as_human(owner.token, "move_task", {"taskId": task["id"], "columnId": cols[2]})
        await ok(c, "update_task", {"taskId": task["id"], "priority": "HIGH"})

        ui = (await ok(c, "list_activity", {"boardId": bid, "source": "ui"}))["activity"]
        assert [(e["type"], e["source"]) for e in ui] == [("task.moved", "ui"), ("task.updated", "ui")]
        mcp = (await ok(c, "list_activity", {"boardId": bid, "source": "mcp"}))["activity"]
        assert [e["type"] for e in mcp] == ["task.updated", "task.created", "board.created"]
        updates = (await ok(c, "list_activity", {"taskId": task["id"], "type": "task.updated"}))["activity"]
        assert [e["source"] for e in updates] == ["mcp", "ui"]
        both = (await ok(c, "list_activity", {"taskId": task["id"], "type": "task.updated", "source": "ui"}))[
            "activity"
        ]
        assert [e["data"]["title"]["to"] for e in both] == ["edited by a person"]
        assert (await ok(c, "list_activity", {"boardId": bid, "type": "column.renamed"}))["activity"] == []

        # since: strictly after the given instant — passing the last entry seen returns only newer ones
        newer = (await ok(c, "list_activity", {"taskId": task["id"], "since": mark}))["activity"]
        assert [e["type"] for e in newer] == ["task.updated", "task.moved", "task.updated"]
        assert all(e["at"] > mark for e in newer)
        on_board = (await ok(c, "list_activity", {"boardId": bid, "since": mark, "source": "ui"}))["activity"]
        assert [e["type"] for e in on_board] == ["task.moved", "task.updated"]
        # other spellings of an instant with a zone are accepted
        as_offset = datetime.fromisoformat(mark).astimezone(timezone(timedelta(hours=2))).isoformat()
        assert (await ok(c, "list_activity", {"taskId": task["id"], "since": as_offset}))["activity"] == newer
        future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        assert (await ok(c, "list_activity", {"boardId": bid, "since": future}))["activity"] == []
        past = await ok(c, "list_activity", {"boardId": bid, "since": "2000-01-01T00:00:00Z"})
        assert len(past["activity"]) == 5


@pytest.mark.parametrize("limit", [2, 3])
async def test_paging_walks_every_entry_once(server_url, owner, limit):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Pages")
        bid, col = made["board"]["id"], made["columns"][0]["id"]
        task = await new_task(c, col, "paged")
        for i in range(4):
            await ok(c, "update_task", {"taskId": task["id"], "title": f"paged {i}"})
        everything = (await ok(c, "list_activity", {"boardId": bid}))["activity"]
        assert len(everything) == 6
        board_walk, sizes = await _walk(c, {"boardId": bid}, limit)
        assert board_walk == everything
        assert sizes == [limit] * (6 // limit) + ([6 % limit] if 6 % limit else [])
        task_walk, task_sizes = await _walk(c, {"taskId": task["id"]}, limit)
        assert task_walk == [e for e in everything if e["taskId"] == task["id"]]
        assert 0 not in task_sizes
        filtered, _ = await _walk(c, {"boardId": bid, "type": "task.updated"}, limit)
        assert filtered == [e for e in everything if e["type"] == "task.updated"]


async def test_a_board_log_filtered_by_type_answers_full_pages(server_url, owner):
    """The type filter reads the type's own index: entries buried under many newer ones of other
    types still fill the first page, and every page is full until the log is exhausted."""
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Busy")
        bid, cols = made["board"]["id"], [col["id"] for col in made["columns"]]
        moved = [await new_task(c, cols[0], f"moved {i}") for i in range(3)]
        for t in moved:
            await ok(c, "move_task", {"taskId": t["id"], "columnId": cols[1]})
        await ok(c, "bulk_create_tasks", {"columnId": cols[0], "tasks": [{"title": f"noise {i}"} for i in range(20)]})
        task = await new_task(c, cols[0], "busy")
        for i in range(6):
            await ok(c, "update_task", {"taskId": task["id"], "priority": ["LOW", "HIGH"][i % 2]})
        first = await ok(c, "list_activity", {"boardId": bid, "type": "task.moved", "limit": 2})
        assert [e["taskId"] for e in first["activity"]] == [moved[2]["id"], moved[1]["id"]] and first["nextCursor"], (
            first
        )
        rest = await ok(
            c, "list_activity", {"boardId": bid, "type": "task.moved", "limit": 2, "cursor": first["nextCursor"]}
        )
        assert (
            [e["taskId"] for e in rest["activity"]] == [moved[0]["id"]]
            and rest["nextCursor"] is None
            and rest["notice"] is None
        )
        oldest = await ok(c, "list_activity", {"boardId": bid, "type": "board.created", "limit": 1})
        assert [e["type"] for e in oldest["activity"]] == ["board.created"] and oldest["nextCursor"] is None
        found, sizes = await _walk(c, {"boardId": bid, "type": "task.created"}, 5)
        assert len(found) == 24 and sizes == [5, 5, 5, 5, 4]  # 3 + 20 (bulk, their own entries) + 1, in full pages


async def test_list_activity_refusals(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        theirs = await new_board(c, outsider.workspace_id, "Theirs")
        their_task = await new_task(c, theirs["columns"][0]["id"], "private")
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Mine")
        bid = made["board"]["id"]
        other = (await new_board(c, owner.workspace_id, "Other"))["board"]["id"]
        task = await new_task(c, made["columns"][0]["id"], "t")
        page = await ok(c, "list_activity", {"boardId": bid, "limit": 1})
        assert page["nextCursor"]
        cases = [
            ({}, "taskId"),
            ({"boardId": bid, "taskId": task["id"]}, "taskId"),
            ({"boardId": bid, "since": "yesterday"}, "since"),
            ({"boardId": bid, "since": "2026-11-30T10:00:00"}, "since"),
            ({"boardId": bid, "source": "cli"}, "source"),
            ({"boardId": bid, "limit": 0}, "limit"),
            ({"boardId": bid, "cursor": "%%%"}, "cursor"),
            ({"boardId": other, "cursor": page["nextCursor"]}, "cursor"),
            ({"taskId": task["id"], "cursor": page["nextCursor"]}, "cursor"),
        ]
        for args, field in cases:
            problem = await err(c, "list_activity", args)
            assert names_field(problem, field), (args, problem)
        for args in ({"boardId": theirs["board"]["id"]}, {"taskId": their_task["id"]}, {"boardId": "bd_x"}):
            assert (await err(c, "list_activity", args))["code"] == "NOT_FOUND", args


# -- one activity row per mutation -------------------------------------------------------------
async def test_every_mutation_writes_exactly_one_activity_row(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        made = await new_board(c, owner.workspace_id, "Ledger")
        bid, cols = made["board"]["id"], [col["id"] for col in made["columns"]]
        assert [r["type"]["S"] for r in activity_rows(bid)] == ["board.created"]
        state: dict = {}

        async def create_task() -> dict:
            state["t"] = await new_task(c, cols[0], "ledger")
            return state["t"]

        steps = [
            (
                "rename_board",
                lambda: ok(c, "rename_board", {"boardId": bid, "name": "Ledger 2"}),
                "board.renamed",
                False,
            ),
            (
                "column create",
                lambda: ok(c, "manage_columns", {"action": "create", "boardId": bid, "name": "Extra"}),
                "column.created",
                False,
            ),
            (
                "column rename",
                lambda: ok(c, "manage_columns", {"action": "rename", "columnId": cols[1], "name": "Next"}),
                "column.renamed",
                False,
            ),
            (
                "column move",
                lambda: ok(c, "manage_columns", {"action": "move", "columnId": cols[1], "beforeColumnId": cols[0]}),
                "column.moved",
                False,
            ),
            (
                "column archive",
                lambda: ok(c, "manage_columns", {"action": "archive", "columnId": cols[3]}),
                "column.archived",
                False,
            ),
            ("create_task", create_task, "task.created", True),
            (
                "update_task",
                lambda: ok(
                    c, "update_task", {"taskId": state["t"]["id"], "title": "ledger 2", "dueDate": "2027-01-01"}
                ),
                "task.updated",
                True,
            ),
            (
                "move_task",
                lambda: ok(c, "move_task", {"taskId": state["t"]["id"], "columnId": cols[2]}),
                "task.moved",
                True,
            ),
            (
                "reorder",
                lambda: ok(c, "move_task", {"taskId": state["t"]["id"], "afterTaskId": state["u"]["id"]}),
                "task.moved",
                True,
            ),
            ("archive_task", lambda: ok(c, "archive_task", {"taskId": state["t"]["id"]}), "task.archived", True),
        ]
        for label, call, kind, about_task in steps:
            if label == "reorder":
                state["u"] = await new_task(c, cols[2], "neighbour")
            before = activity_rows(bid)
            await call()
            after = activity_rows(bid)
            assert len(after) == len(before) + 1, label
            new = [r for r in after if r not in before]
            assert len(new) == 1 and new[0]["type"]["S"] == kind, label
            assert ("taskId" in new[0] and new[0]["taskId"].get("S") == state["t"]["id"]) == about_task, label
        # keyed creates write one row too, and their replays none
        rows = len(activity_rows(bid))
        keyed = await ok(c, "create_task", {"columnId": cols[0], "title": "keyed", "idempotencyKey": "ledger-1"})
        assert len(activity_rows(bid)) == rows + 1
        assert (
            await ok(c, "create_task", {"columnId": cols[0], "title": "keyed", "idempotencyKey": "ledger-1"}) == keyed
        )
        assert len(activity_rows(bid)) == rows + 1
        # no-ops and refusals write nothing at all
        before = stored_state()
        await ok(c, "rename_board", {"boardId": bid, "name": "Ledger 2"})
        await ok(c, "update_task", {"taskId": keyed["task"]["id"], "title": "keyed"})
        await ok(c, "archive_task", {"taskId": state["t"]["id"]})
        await err(c, "update_task", {"taskId": state["t"]["id"], "title": "archived"})
        await err(c, "move_task", {"taskId": keyed["task"]["id"], "columnId": cols[3]})
        await err(c, "manage_columns", {"action": "archive", "columnId": cols[3]})
        assert stored_state() == before
        # the log as the tool shows it has every row, each once
        listed, _ = await _walk(c, {"boardId": bid}, 200)
        assert len(listed) == len(activity_rows(bid)) == len({e["id"] for e in listed})
