"""The official SDK client works a board end to end in both protocol eras."""

from __future__ import annotations

import pytest

from tests.conftest import envelope, mcp_client, structured


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_work_a_board(server_url, owner, mode):
    async with mcp_client(server_url, owner.token, mode) as c:
        tools = await c.list_tools()
        assert "get_board_snapshot" in {t.name for t in tools.tools}
        board = structured(await c.call_tool("create_board", {"workspaceId": owner.workspace_id, "name": "Launch"}))
        cols = board["columns"]
        assert [x["name"] for x in cols] == ["Backlog", "To Do", "In Progress", "Done"]
        t1 = structured(await c.call_tool("create_task", {"columnId": cols[0]["id"], "title": "Write spec"}))["task"]
        t2 = structured(await c.call_tool("create_task", {"columnId": cols[0]["id"], "title": "Ship it"}))["task"]
        assert t1["key"].endswith("-1") and t2["number"] == 2
        moved = structured(await c.call_tool("move_task", {"taskId": t2["id"], "columnId": cols[2]["id"]}))["task"]
        assert moved["columnId"] == cols[2]["id"]
        upd = structured(
            await c.call_tool(
                "update_task", {"taskId": t1["id"], "title": "Write the spec", "expectedUpdatedAt": t1["updatedAt"]}
            )
        )["task"]
        assert upd["title"] == "Write the spec" and upd["updatedAt"] > t1["updatedAt"]
        stale = envelope(
            await c.call_tool("update_task", {"taskId": t1["id"], "title": "x", "expectedUpdatedAt": t1["updatedAt"]})
        )
        assert stale["code"] == "CONFLICT" and stale["current"]["title"] == "Write the spec"
        snap = structured(await c.call_tool("get_board_snapshot", {"boardId": board["board"]["id"]}))
        assert [t["id"] for t in snap["tasks"]] == [t1["id"], t2["id"]]
        acts = structured(await c.call_tool("list_activity", {"boardId": board["board"]["id"]}))["activity"]
        assert [a["type"] for a in acts][:3] == ["task.updated", "task.moved", "task.created"]
