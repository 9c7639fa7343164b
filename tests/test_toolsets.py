"""Toolsets, read-only mode and sparse results (issue 14; domain.toolsets, domain.projection).

Driven by the official SDK client over HTTP (URL and X-MCP-* header selections), by the stdio
adapter's flag parsing, and by the protocol layer directly for the exact JSON-RPC answers.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import pytest

from domain import toolsets
from domain.auth import Principal
from domain.catalog import registry as product_registry
from domain.registry import AREAS
from functions.protocol import McpProtocol, Session
from tests.conftest import make_actor
from tests.tools_support import err, new_board, new_task, ok

# what a connection lists when it asks for nothing: the opt-in coordination toolset is left out
REG = [s for s in product_registry() if s.area not in toolsets.OPT_IN]
READ_ONLY = sorted(s.name for s in REG if s.read_only)
EVERYDAY = ("boards", "tasks", "collaboration", "search", "context")


@asynccontextmanager
async def client(url: str, token: str, headers: dict[str, str] | None = None):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **(headers or {})}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as c,
    ):
        yield c


async def _names(c: Any) -> list[str]:
    return sorted(t.name for t in (await c.list_tools()).tools)


async def _hidden_call(c: Any, name: str, args: dict[str, Any]) -> str:
    """The -32602 message of calling a hidden tool (the SDK raises it as an MCP error)."""
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError) as caught:
        await c.call_tool(name, args)
    assert caught.value.error.code == -32602
    return caught.value.error.message


# -- over HTTP, through the SDK client ---------------------------------------------------------------
async def test_read_only_url_lists_only_read_tools_and_hides_writes(server_url, owner):
    async with client(server_url + "/readonly", owner.token) as c:
        assert await _names(c) == READ_ONLY
        message = await _hidden_call(
            c, "create_board", {"workspaceId": owner.workspace_id, "name": "X", "kind": "TASKS"}
        )
        assert "create_board" in message and "/api/mcp/readonly" in message and "read-only" in message
        context = await ok(c, "get_token_context")
        assert context["readOnly"] is True and "tasks" in context["toolsets"]
        boards = await ok(c, "list_boards", {"workspaceId": owner.workspace_id})
        assert boards["boards"] == []


async def test_toolset_header_limits_the_listing_and_names_the_header(server_url, owner):
    async with client(server_url, owner.token, {"X-MCP-Toolsets": "tasks,context"}) as c:
        names = await _names(c)
        assert names == sorted(s.name for s in REG if s.area in ("tasks", "context"))
        message = await _hidden_call(c, "list_boards", {"workspaceId": owner.workspace_id})
        assert "X-MCP-Toolsets" in message and "boards toolset" in message
        context = await ok(c, "get_token_context")
        assert context["toolsets"] == ["tasks", "context"] and context["readOnly"] is False


async def test_toolset_url_with_read_only_header_and_tool_list(server_url, owner):
    headers = {"X-MCP-Readonly": "true", "X-MCP-Tools": "get_task,create_task,list_tasks,-list_tasks,get_token_context"}
    async with client(server_url + "/x/tasks", owner.token, headers) as c:
        # every layer must let a tool through: the URL keeps the tasks toolset (not get_token_context,
        # which is context), the header's exclusion wins over its inclusion of list_tasks, and
        # read-only wins over the explicit create_task
        assert await _names(c) == ["get_task"]
        assert "X-MCP-Readonly" in await _hidden_call(c, "create_task", {"columnId": "cl_x", "title": "t"})
        assert "X-MCP-Tools" in await _hidden_call(c, "list_tasks", {"boardId": "bd_x"})
        assert "/api/mcp/x/tasks" in await _hidden_call(c, "get_token_context", {})


async def test_read_scope_token_lists_no_write_tools_but_calling_one_is_forbidden(server_url, stack):
    reader = make_actor("Rita", scopes=["read"])
    async with client(server_url, reader.token) as c:
        names = await _names(c)
        assert names == sorted(s.name for s in REG if s.scope == "read")
        error = await err(c, "create_board", {"workspaceId": reader.workspace_id, "name": "Nope", "kind": "TASKS"})
        assert error["code"] == "FORBIDDEN"


async def test_unknown_toolset_is_invalid_params_and_unknown_url_is_404(server_url, owner):
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    auth = {"Authorization": f"Bearer {owner.token}", "MCP-Protocol-Version": "2025-11-25"}
    async with httpx2.AsyncClient(timeout=30) as http:
        bad = await http.post(server_url, json=body, headers={**auth, "X-MCP-Toolsets": "tasks,nope"})
        assert bad.json()["error"]["code"] == -32602 and "'nope'" in bad.json()["error"]["message"]
        missing = await http.post(server_url + "/x/nope", json=body, headers=auth)
        assert missing.status_code == 404


async def test_fields_projects_rows_and_refuses_unknown_names(server_url, owner):
    async with client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id)
        column = board["columns"][0]["id"]
        await ok(c, "create_task", {"columnId": column, "title": "Sparse"})
        rows = (await ok(c, "list_tasks", {"boardId": board["board"]["id"], "fields": ["key", "title", "columnName"]}))[
            "tasks"
        ]
        assert rows and set(rows[0]) == {"id", "key", "title", "columnName"}
        plain = (await ok(c, "list_tasks", {"boardId": board["board"]["id"]}))["tasks"][0]
        assert "dueDate" not in plain and "assigneeIds" not in plain  # concise rows drop empty values
        asked = (await ok(c, "list_tasks", {"boardId": board["board"]["id"], "fields": ["dueDate", "labelIds"]}))[
            "tasks"
        ][0]
        assert asked == {"id": plain["id"], "dueDate": None, "labelIds": []}  # named fields stay, even empty
        error = await err(c, "list_tasks", {"boardId": board["board"]["id"], "fields": ["key", "colour"]})
        assert error["code"] == "INVALID_INPUT" and "colour" in error["message"]
        boards = (await ok(c, "list_boards", {"workspaceId": owner.workspace_id, "fields": ["name"]}))["boards"]
        assert boards and all(set(b) == {"id", "name"} for b in boards)


# -- the protocol layer and the stdio flags ----------------------------------------------------------
def _session(scopes: tuple[str, ...] = (), layers: tuple[toolsets.Layer, ...] = ()) -> Session:
    principal = Principal(user_id="usr_x", token_id="tok_x", kind="pat", stored_scopes=scopes, workspace_pin=None)
    return Session(principal=principal, transport="stdio", layers=layers)


def _list(proto: McpProtocol, session: Session, headers: dict[str, str] | None = None) -> list[str]:
    reply = proto.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, headers=headers, session=session
    )
    return [t["name"] for t in reply.message["result"]["tools"]]


def test_server_wide_setting_is_an_upper_bound_headers_cannot_widen():
    server = toolsets.server_layer(
        product_registry(), {"JENTRIX_MCP_READONLY": "1", "JENTRIX_MCP_TOOLSETS": "tasks,search"}
    )
    proto = McpProtocol(server_layer=server, page_size=500)
    names = _list(proto, _session(), {"x-mcp-readonly": "false", "x-mcp-toolsets": "boards,tasks"})
    assert names == sorted(s.name for s in REG if s.area == "tasks" and s.read_only)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_tasks", "arguments": {}}}
    reply = proto.handle(call, headers={"x-mcp-toolsets": "boards,tasks"}, session=_session())
    assert reply.message["error"]["code"] == -32602 and "X-MCP-Toolsets" in reply.message["error"]["message"]
    reply = proto.handle({**call, "params": {"name": "create_task", "arguments": {}}}, headers=None, session=_session())
    assert "JENTRIX_MCP_READONLY" in reply.message["error"]["message"]


def test_stdio_flags_make_a_layer_and_bad_names_stop_the_adapter():
    from functions.stdio.binding import StartupError
    from functions.stdio_adapter import build_parser, selection_layer

    layer = selection_layer(
        build_parser().parse_args(["--toolsets", "tasks,-boards", "--tools", "search_tasks", "--read-only"])
    )
    proto = McpProtocol(server_layer=toolsets.Layer(), page_size=500)
    names = _list(proto, _session(layers=(layer,)))
    assert names == sorted(s.name for s in REG if s.read_only and (s.area == "tasks" or s.name == "search_tasks"))
    reply = proto.handle(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_boards", "arguments": {}}},
        headers=None,
        session=_session(layers=(layer,)),
    )
    assert "--toolsets" in reply.message["error"]["message"]
    assert toolsets.as_headers(layer) == {
        "X-MCP-Toolsets": "tasks,-boards",
        "X-MCP-Tools": "search_tasks",
        "X-MCP-Readonly": "true",
    }
    with pytest.raises(StartupError, match="unknown toolset 'nope'"):
        selection_layer(build_parser().parse_args(["--toolsets", "nope"]))


def test_no_selection_serves_the_prebuilt_list_unchanged():
    proto = McpProtocol(server_layer=toolsets.Layer(), page_size=500)
    reply = proto.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, headers=None, session=_session()
    )
    assert reply.message["result"]["tools"] == [s.definition() for s in REG]
    assert all(a in AREAS for a in EVERYDAY)


def test_every_tool_declares_a_toolset_and_fields_names_come_from_the_output_model():
    for spec in REG:
        assert spec.area in AREAS, spec.name
        if spec.fields_of is not None:
            props = spec.definition()["inputSchema"]["properties"]
            assert "fields" in props and spec.read_only
            assert spec.allowed_fields


# -- list_tasks structured filters -----------------------------------------------------------------
async def test_list_tasks_filters_combine_and_count_exactly(server_url, owner):
    async with client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Filters")
        board_id, column = board["board"]["id"], board["columns"][0]["id"]
        label = (
            await ok(c, "manage_labels", {"action": "create", "boardId": board_id, "name": "Bug", "color": "#ff0000"})
        )["label"]
        mine = [await new_task(c, column, f"mine {i}", priority="HIGH", dueDate=f"2020-01-0{i + 1}") for i in range(3)]
        other = await new_task(c, column, "not mine", priority="HIGH", dueDate="2099-01-01")
        await new_task(c, column, "plain")
        for t in mine:
            await ok(c, "set_task_assignees", {"taskId": t["id"], "userIds": [owner.user_id]})
        await ok(c, "set_task_labels", {"taskId": mine[0]["id"], "labelIds": [label["id"]]})
        await ok(c, "set_task_labels", {"taskId": other["id"], "labelIds": [label["id"]]})

        got = await ok(c, "list_tasks", {"boardId": board_id, "assigneeId": "me", "limit": 2})
        assert (
            got["totalCount"] == 3 and [t["title"] for t in got["tasks"]] == ["mine 0", "mine 1"] and got["nextCursor"]
        )
        rest = await ok(
            c, "list_tasks", {"boardId": board_id, "assigneeId": "me", "limit": 2, "cursor": got["nextCursor"]}
        )
        assert [t["title"] for t in rest["tasks"]] == ["mine 2"] and rest["nextCursor"] is None
        wrong = await err(c, "list_tasks", {"boardId": board_id, "priority": "LOW", "cursor": got["nextCursor"]})
        assert wrong["code"] == "INVALID_INPUT"  # a cursor belongs to its filters

        labelled = await ok(c, "list_tasks", {"boardId": board_id, "labelName": "bug", "assigneeId": owner.user_id})
        assert [t["title"] for t in labelled["tasks"]] == ["mine 0"] and labelled["totalCount"] == 1
        assert (await ok(c, "list_tasks", {"columnId": column, "labelName": "no such"}))["totalCount"] == 0
        assert (await ok(c, "list_tasks", {"boardId": board_id, "overdue": True}))["totalCount"] == 3
        assert (await ok(c, "list_tasks", {"boardId": board_id, "priority": "HIGH", "dueAfter": "2050-01-01"}))[
            "totalCount"
        ] == 1
        assert (await ok(c, "list_tasks", {"boardId": board_id, "dueBefore": "2020-01-02"}))["totalCount"] == 1
        assert (await ok(c, "list_tasks", {"boardId": board_id, "updatedSince": "2000-01-01T00:00:00Z"}))[
            "totalCount"
        ] == 5
        assert (await ok(c, "list_tasks", {"boardId": board_id, "updatedSince": "2999-01-01T00:00:00Z"}))[
            "totalCount"
        ] == 0
        missing = await err(c, "list_tasks", {"assigneeId": "me"})
        assert missing["code"] == "INVALID_INPUT"  # boardId or columnId is still required


# -- over stdio, through the SDK client (the adapter as a subprocess) ---------------------------------
async def test_stdio_flags_in_process_and_over_the_bridge(stack, server_url, owner, tmp_path):
    from mcp.shared.exceptions import MCPError

    from tests.stdio_support import adapter_env
    from tests.test_stdio_sdk import sdk_client

    flags = ["--workspace", owner.workspace_id, "--toolsets", "tasks,context", "--read-only"]
    expected = sorted(s.name for s in REG if s.read_only and s.area in ("tasks", "context"))
    runs = (
        (flags, adapter_env(stack, owner.token)),  # in process
        (["--url", server_url, *flags], adapter_env(None, owner.token)),  # bridge: the flags travel as X-MCP-* headers
    )
    for args, env in runs:
        async with sdk_client(args, env, "legacy", tmp_path / "stderr.log") as c:
            assert sorted(t.name for t in (await c.list_tools()).tools) == expected
            context = await ok(c, "get_token_context")
            assert context["toolsets"] == ["tasks", "context"] and context["readOnly"] is True
            with pytest.raises(MCPError) as caught:
                await c.call_tool("create_task", {"columnId": "cl_x", "title": "t"})
            assert caught.value.error.code == -32602
            assert "--read-only" in caught.value.error.message or "X-MCP-Readonly" in caught.value.error.message
