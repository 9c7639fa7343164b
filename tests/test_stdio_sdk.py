"""Evidence: real clients drive the stdio adapter.

* the official MCP Python SDK client launches ``python -m functions.stdio_adapter`` and works a
  board in both protocol eras — ``legacy`` (initialize handshake; roots through a server
  ``roots/list`` request) and ``auto`` (2026-07-28; roots through an input-required result);
* the same against ``--ephemeral`` (its own DynamoDB Local, gone at exit);
* the same through the bridge (``--url``) to the HTTP app, where the remote checks every call;
* the MCP Inspector CLI in stdio mode, when it is installed under ``.jentrix/node``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from functions.stdio.backends import RemoteBackend
from tests.conftest import envelope, make_actor, structured
from tests.stdio_support import REPO, adapter_env, git_checkout, run_adapter

MODES = ["legacy", "auto"]
INSPECTOR = REPO / ".jentrix" / "node" / "node_modules" / ".bin" / "mcp-inspector"


@asynccontextmanager
async def sdk_client(args: list[str], env: dict[str, str], mode: str, errlog: Path, roots: list[Path] | None = None):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "functions.stdio_adapter", *args], env=env, cwd=str(REPO)
    )

    async def list_roots(ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=p.as_uri(), name=p.name) for p in roots or []])

    with errlog.open("w") as log:
        async with Client(
            stdio_client(params, errlog=log), mode=mode, list_roots_callback=list_roots if roots is not None else None
        ) as client:
            yield client


def bound(errlog: Path) -> dict[str, Any]:
    m = re.search(r" bound (\{.*\})$", errlog.read_text(), re.MULTILINE)
    assert m, errlog.read_text()
    return json.loads(m.group(1))


async def work_a_board(c: Client, workspace_id: str) -> None:
    names = {t.name for t in (await c.list_tools()).tools}
    assert {"create_board", "create_task", "get_board_snapshot"} <= names
    board = structured(await c.call_tool("create_board", {"workspaceId": "", "name": "Over stdio"}))
    assert board["board"]["workspaceId"] == workspace_id
    backlog = board["columns"][0]["id"]
    t1 = structured(await c.call_tool("create_task", {"columnId": backlog, "title": "Write the adapter"}))["task"]
    t2 = structured(await c.call_tool("create_task", {"columnId": backlog, "title": "Ship it"}))["task"]
    snap = structured(await c.call_tool("get_board_snapshot", {"boardId": board["board"]["id"]}))
    assert [t["id"] for t in snap["tasks"]] == [t1["id"], t2["id"]]
    assert [col["name"] for col in snap["columns"]] == ["Backlog", "To Do", "In Progress", "Done"]


@pytest.mark.parametrize("mode", MODES)
async def test_sdk_client_enrols_through_roots_and_works_a_board(stack, owner, tmp_path, mode):
    repo = git_checkout(tmp_path / "widgets")
    errlog = tmp_path / "stderr.log"
    async with sdk_client([], adapter_env(stack, owner.token), mode, errlog, roots=[repo]) as c:
        assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        await work_a_board(c, owner.workspace_id)
    b = bound(errlog)
    assert b["repository"] == "acme/widgets" and b["checkout"] == str(repo.resolve()) and b["observe"] is False
    assert b["workspaceId"] == owner.workspace_id and b["clientInfo"]["name"]


@pytest.mark.parametrize("mode", MODES)
async def test_sdk_client_without_roots_gets_an_observe_session(stack, owner, tmp_path, mode):
    async with sdk_client([], adapter_env(stack, owner.token), mode, tmp_path / "stderr.log") as c:
        listed = structured(await c.call_tool("list_workspaces", {}))
        assert [w["id"] for w in listed["workspaces"]] == [owner.workspace_id]
        err = envelope(await c.call_tool("create_board", {"workspaceId": "", "name": "nope"}))
        assert err["code"] == "FORBIDDEN" and "observe session" in err["message"] and "--workspace" in err["hint"]


@pytest.mark.parametrize("mode", MODES)
async def test_sdk_client_with_an_explicit_workspace(stack, owner, tmp_path, mode):
    async with sdk_client(
        ["--workspace", owner.workspace_id], adapter_env(stack, owner.token), mode, tmp_path / "stderr.log"
    ) as c:
        await work_a_board(c, owner.workspace_id)


@pytest.mark.slow
async def test_sdk_client_against_an_ephemeral_stack(tmp_path):
    errlog = tmp_path / "stderr.log"
    env = adapter_env(None)
    async with sdk_client(["--ephemeral"], env, "auto", errlog) as c:
        ws = structured(await c.call_tool("list_workspaces", {}))["workspaces"]
        assert [w["name"] for w in ws] == ["Ephemeral"]
        await work_a_board(c, ws[0]["id"])
    text = errlog.read_text()
    assert "ephemeral stack removed" in text
    port = re.search(r"DynamoDB Local at http://127\.0\.0\.1:(\d+)", text).group(1)  # type: ignore[union-attr]
    java = subprocess.run(
        ["pgrep", "-f", "--", f"DynamoDBLocal.jar -sharedDb -port {port}"], capture_output=True, text=True
    )
    assert java.returncode == 1, f"the ephemeral DynamoDB Local is still running: {java.stdout} {java.stderr}"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()


# -- the bridge ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_bridge_forwards_both_eras_and_applies_the_binding(stack, server_url, owner, outsider, tmp_path, mode):
    from domain import auth
    from domain.catalog import registry as product_registry
    from domain.pipeline import call_tool

    theirs = call_tool(
        product_registry().get("create_board"),
        {"workspaceId": outsider.workspace_id, "name": "Theirs"},
        auth.authenticate(outsider.token),
    ).result
    env = adapter_env(None, owner.token)
    async with sdk_client(
        ["--url", server_url, "--workspace", owner.workspace_id], env, mode, tmp_path / "stderr.log"
    ) as c:
        await work_a_board(c, owner.workspace_id)
        err = envelope(await c.call_tool("create_board", {"workspaceId": outsider.workspace_id, "name": "switch"}))
        assert err["code"] == "FORBIDDEN" and owner.workspace_id in err["hint"]
        err = envelope(await c.call_tool("get_board_snapshot", {"boardId": theirs["board"]["id"]}))
        assert err["code"] == "NOT_FOUND"


@pytest.mark.parametrize("mode", MODES)
async def test_bridge_observe_session_refuses_writes_before_they_leave(stack, server_url, owner, tmp_path, mode):
    async with sdk_client(["--url", server_url], adapter_env(None, owner.token), mode, tmp_path / "stderr.log") as c:
        assert structured(await c.call_tool("list_workspaces", {}))["workspaces"][0]["id"] == owner.workspace_id
        err = envelope(await c.call_tool("create_board", {"workspaceId": "", "name": "nope"}))
        assert err["code"] == "FORBIDDEN" and "observe session" in err["message"]


@pytest.mark.parametrize("mode", MODES)
async def test_bridge_enrols_through_the_clients_roots(stack, server_url, owner, tmp_path, mode):
    repo = git_checkout(tmp_path / "widgets", "git@github.com:Acme/Widgets.git")
    errlog = tmp_path / "stderr.log"
    async with sdk_client(["--url", server_url], adapter_env(None, owner.token), mode, errlog, roots=[repo]) as c:
        await work_a_board(c, owner.workspace_id)
    b = bound(errlog)
    assert b["repository"] == "acme/widgets" and b["observe"] is False and b["workspaceId"] == owner.workspace_id


def test_bridge_with_a_bad_token_or_url_fails_at_start(stack, server_url):
    done = run_adapter(["--url", server_url], adapter_env(None, "tm_" + "z" * 43))
    assert done.returncode == 2 and b"rejected the token" in done.stderr and done.stdout == b""
    done = run_adapter(["--url", "http://example.com/api/mcp"], adapter_env(None, "tm_x"))
    assert done.returncode == 2 and b"must be an https:// URL" in done.stderr


def test_bridge_headers_follow_the_era():
    b = RemoteBackend("https://example.invalid/api/mcp", "tm_x")
    try:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "créer", "_meta": meta}}
        assert b.headers_for(call) == {
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "=?base64?Y3LDqWVy?=",
        }
        read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "x://a", "_meta": meta}}
        assert b.headers_for(read)["Mcp-Name"] == "x://a"
        legacy = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
        assert b.headers_for(legacy) == {}
        b.negotiated = "2025-06-18"
        assert b.headers_for(legacy) == {"MCP-Protocol-Version": "2025-06-18"}
        assert b.headers_for({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}}) == {}
    finally:
        b.close()


# -- the Inspector CLI ---------------------------------------------------------------------------------
def inspector(env: dict[str, str], catalog: Path, *args: str) -> dict[str, Any]:
    cmd = [str(INSPECTOR), "--cli"]
    for key in (
        "JENTRIX_DYNAMODB_ENDPOINT",
        "JENTRIX_TABLE",
        "JENTRIX_IDEMPOTENCY_TABLE",
        "JENTRIX_TOKEN",
        "JENTRIX_RATE_LIMIT_PER_MINUTE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_REGION",
    ):
        if key in env:
            cmd += ["-e", f"{key}={env[key]}"]
    done = subprocess.run(
        [*cmd, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "MCP_CATALOG_PATH": str(catalog)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.skipif(
    not INSPECTOR.exists(), reason="MCP Inspector CLI not installed under .jentrix/node (scripts/setup.sh installs it)"
)
def test_inspector_cli_drives_tools_over_stdio(stack, tmp_path):
    actor = make_actor("Ines", "Inspector Space")
    env = adapter_env(
        stack, actor.token, AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local", AWS_REGION="us-east-1"
    )
    target = ["--", sys.executable, "-m", "functions.stdio_adapter", "--workspace", actor.workspace_id]
    catalog = tmp_path / "catalog.json"
    listed = inspector(env, catalog, "--method", "tools/list", *target)
    assert {"create_board", "create_task", "get_board_snapshot"} <= {t["name"] for t in listed["tools"]}
    board = inspector(
        env,
        catalog,
        "--method",
        "tools/call",
        "--tool-name",
        "create_board",
        "--tool-arg",
        f"workspaceId={actor.workspace_id}",
        "--tool-arg",
        "name=Inspected",
        *target,
    )
    assert board["isError"] is False
    board_id = board["structuredContent"]["board"]["id"]
    column = board["structuredContent"]["columns"][0]["id"]
    task = inspector(
        env,
        catalog,
        "--method",
        "tools/call",
        "--tool-name",
        "create_task",
        "--tool-arg",
        f"columnId={column}",
        "--tool-arg",
        "title=From the Inspector",
        *target,
    )
    assert task["isError"] is False
    snap = inspector(
        env,
        catalog,
        "--method",
        "tools/call",
        "--tool-name",
        "get_board_snapshot",
        "--tool-arg",
        f"boardId={board_id}",
        *target,
    )
    assert [t["title"] for t in snap["structuredContent"]["tasks"]] == ["From the Inspector"]
