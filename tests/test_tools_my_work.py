"""list_my_work and done columns (issue 14), through the official SDK client against DynamoDB Local."""

from __future__ import annotations

import asyncio

from domain.store import keys
from domain.store.models import WorkItemRow
from tests.conftest import make_actor, mcp_client
from tests.tools_support import err, new_board, new_task, ok


def _entries(task_id: str) -> dict[str, str]:
    """user -> GSI3 sort key of the task's stored work items (test-side read)."""
    return {i.userId: i.GSI3SK for i in WorkItemRow.query(f"TWORK#{task_id}", consistent_read=True)}


async def _assign(c, task_id, *users):
    await ok(c, "set_task_assignees", {"taskId": task_id, "userIds": list(users)})


async def test_my_work_spans_boards_sorted_by_due_then_priority_and_skips_done_and_archived(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        a = await new_board(c, ws, "Alpha")
        b = await new_board(c, ws, "Beta", kind="BUGS")
        assert [col["done"] for col in a["columns"]] == [False, False, False, True]  # the final default column is done
        assert b["columns"][-1]["done"] is True and b["columns"][-1]["name"] == "Fixed"
        todo_a, done_a = a["columns"][1]["id"], a["columns"][-1]["id"]
        todo_b = b["columns"][0]["id"]
        late = await new_task(c, todo_b, "late", dueDate="2020-01-01", priority="LOW")
        soon_low = await new_task(c, todo_a, "soon low", dueDate="2030-01-01", priority="LOW")
        soon_urgent = await new_task(c, todo_b, "soon urgent", dueDate="2030-01-01", priority="URGENT")
        undated = await new_task(c, todo_a, "undated", priority="HIGH")
        finished = await new_task(c, done_a, "finished")
        gone = await new_task(c, todo_a, "archived")
        not_mine = await new_task(c, todo_a, "not mine")
        for t in (late, soon_low, soon_urgent, undated, finished, gone):
            await _assign(c, t["id"], owner.user_id)
        await ok(c, "archive_task", {"taskId": gone["id"]})
        assert _entries(gone["id"]) == {} and _entries(not_mine["id"]) == {}

        got = await ok(c, "list_my_work", {"workspaceId": ws})
        assert [t["title"] for t in got["tasks"]] == ["late", "soon urgent", "soon low", "undated"]
        assert {t["boardName"] for t in got["tasks"]} == {"Alpha", "Beta"} and got["nextCursor"] is None

        # moving into the done column closes it; marking a column done closes all its tasks
        await ok(c, "move_task", {"taskId": soon_low["id"], "columnId": done_a})
        await ok(c, "manage_columns", {"action": "rename", "columnId": todo_b, "done": True})
        got = await ok(c, "list_my_work", {"workspaceId": ws})
        assert [t["title"] for t in got["tasks"]] == ["undated"]
        await ok(c, "manage_columns", {"action": "rename", "columnId": todo_b, "done": False})
        assert [t["title"] for t in (await ok(c, "list_my_work", {"workspaceId": ws}))["tasks"]] == [
            "late",
            "soon urgent",
            "undated",
        ]
        # an archived board's tasks are not open work (its entries stay; the board entry is read with the rows)
        await ok(c, "archive_board", {"boardId": b["board"]["id"]})
        assert [t["title"] for t in (await ok(c, "list_my_work", {"workspaceId": ws}))["tasks"]] == ["undated"]


async def test_filters_paging_and_another_members_work(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, ws, "Paging")
        column = board["columns"][0]["id"]
        label = (
            await ok(
                c,
                "manage_labels",
                {"action": "create", "boardId": board["board"]["id"], "name": "Ops", "color": "#00ff00"},
            )
        )["label"]
        tasks = [
            await new_task(c, column, f"t{i}", dueDate=f"2031-01-{i + 10}", priority="HIGH" if i % 2 else "LOW")
            for i in range(5)
        ]
        for t in tasks:
            await _assign(c, t["id"], owner.user_id)
        await ok(c, "set_task_labels", {"taskId": tasks[3]["id"], "labelIds": [label["id"]]})

        first = await ok(c, "list_my_work", {"workspaceId": ws, "limit": 2, "dueAfter": "2031-01-01"})
        assert [t["title"] for t in first["tasks"]] == ["t0", "t1"] and first["nextCursor"]
        assert (
            first["totalCount"] is None and "totalCount" in first["notice"]
        )  # says why it cannot count a list it has not read
        second = await ok(
            c, "list_my_work", {"workspaceId": ws, "limit": 2, "dueAfter": "2031-01-01", "cursor": first["nextCursor"]}
        )
        assert [t["title"] for t in second["tasks"]] == ["t2", "t3"]
        third = await ok(
            c, "list_my_work", {"workspaceId": ws, "limit": 2, "dueAfter": "2031-01-01", "cursor": second["nextCursor"]}
        )
        assert [t["title"] for t in third["tasks"]] == ["t4"] and third["nextCursor"] is None
        assert (await err(c, "list_my_work", {"workspaceId": ws, "priority": "LOW", "cursor": first["nextCursor"]}))[
            "code"
        ] == "INVALID_INPUT"

        high = await ok(c, "list_my_work", {"workspaceId": ws, "priority": "HIGH", "dueAfter": "2031-01-01"})
        assert (
            [t["title"] for t in high["tasks"]] == ["t1", "t3"] and high["totalCount"] == 2 and high["notice"] is None
        )
        ops = await ok(c, "list_my_work", {"workspaceId": ws, "labelName": "ops"})
        assert [t["title"] for t in ops["tasks"]] == ["t3"]
        window = await ok(c, "list_my_work", {"workspaceId": ws, "dueAfter": "2031-01-11", "dueBefore": "2031-01-13"})
        assert [t["title"] for t in window["tasks"]] == ["t1", "t2"]
        sparse = await ok(
            c, "list_my_work", {"workspaceId": ws, "dueAfter": "2031-01-01", "limit": 1, "fields": ["key", "title"]}
        )
        assert set(sparse["tasks"][0]) == {"id", "key", "title"}

        # a due-date edit re-sorts; unassigning removes the entry (same transaction as the task write)
        await ok(c, "update_task", {"taskId": tasks[4]["id"], "dueDate": "2031-01-01"})
        assert _entries(tasks[4]["id"])[owner.user_id].startswith("2031-01-01#")
        assert (await ok(c, "list_my_work", {"workspaceId": ws, "dueAfter": "2031-01-01", "limit": 1}))["tasks"][0][
            "title"
        ] == "t4"
        await _assign(c, tasks[4]["id"])
        assert _entries(tasks[4]["id"]) == {}

        # another member's work: by userId, and "me" from that member's own token
        from domain.store import members

        bea = make_actor("Bea", workspace=None)
        members.add(ws, _user(bea.user_id), "MEMBER")
        await _assign(c, tasks[0]["id"], owner.user_id, bea.user_id)
        theirs = await ok(c, "list_my_work", {"workspaceId": ws, "assigneeId": bea.user_id})
        assert theirs["assigneeId"] == bea.user_id and [t["title"] for t in theirs["tasks"]] == ["t0"]
    async with mcp_client(server_url, bea.token) as c:
        assert [t["title"] for t in (await ok(c, "list_my_work", {"workspaceId": ws}))["tasks"]] == ["t0"]
    outsider = make_actor("Olaf", "Other place")
    async with mcp_client(server_url, outsider.token) as c:
        assert (await err(c, "list_my_work", {"workspaceId": ws}))["code"] in ("NOT_FOUND", "FORBIDDEN")


def _user(user_id: str):
    from domain.store.models import UserRow

    return UserRow.get(*keys.user_profile(user_id))


async def test_concurrent_assignee_changes_leave_the_index_equal_to_the_task(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Race")
        task = await new_task(c, board["columns"][0]["id"], "raced", dueDate="2032-02-02")
        results = await asyncio.gather(
            *(
                c.call_tool("set_task_assignees", {"taskId": task["id"], "userIds": [owner.user_id] if i % 2 else []})
                for i in range(6)
            ),
            c.call_tool("update_task", {"taskId": task["id"], "priority": "URGENT"}),
        )
        assert results
        stored = (await ok(c, "get_task", {"taskId": task["id"], "response_format": "concise"}))["task"]
        entries = _entries(task["id"])
        assert set(entries) == set(stored.get("assigneeIds") or [])
        for sort in entries.values():
            assert sort == keys.work_sort_key(stored.get("dueDate"), stored["priority"], task["id"])
