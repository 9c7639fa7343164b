"""The MCP Inspector CLI (a TypeScript-SDK client) against our endpoint, in both protocol eras.

It is a second, independent client beside the Python SDK, and a strict one: it lints tool
schemas for portability (``--strict``) and reports error results by exit code. The server runs
behind a small recording wrapper so each test can also prove which era the CLI really spoke
(``initialize`` first in the handshake era; ``_meta`` plus the routing headers on every
request in 2026-07-28).

The CLI (``@modelcontextprotocol/inspector`` 2.x, which needs Node >= 22.19) is installed on
demand into ``.jentrix/node`` together with the ``node@22`` runtime package; the tests skip,
saying why, only when npm cannot provide it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from domain.catalog import registry as product_registry
from tests.catalog_table import CATALOG, EXTRA
from tests.conftest import Actor, make_actor


def default_listing():
    """What a connection that asks for no toolset lists: every tool but the opt-in toolsets' (coordination)."""
    from domain.toolsets import OPT_IN

    return [s for s in product_registry().ordered() if s.area not in OPT_IN]


REPO = Path(__file__).resolve().parent.parent
NODE_HOME = Path(os.environ.get("JENTRIX_HOME") or REPO / ".jentrix") / "node"
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector@2.12.0"
NODE_PACKAGE = "node@22"
LAUNCHER = (
    NODE_HOME / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
)
MODERN = "2026-07-28"
ERAS = ["legacy", "modern"]
EXIT_OK, EXIT_AUTH_REQUIRED, EXIT_TOOL_ERROR, EXIT_SCHEMA_UNPORTABLE = 0, 3, 5, 6


def _node_version(node: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
        return tuple(int(p) for p in out.lstrip("v").split("."))
    except (OSError, ValueError, subprocess.SubprocessError):
        return ()


def _find_node() -> str | None:
    """A Node >= 22.19 binary: the npm-installed one under .jentrix/node, else the system's."""
    for candidate in (str(NODE_HOME / "node_modules" / "node" / "bin" / "node"), shutil.which("node")):
        if candidate and Path(candidate).exists() and _node_version(candidate) >= (22, 19):
            return candidate
    return None


def ensure_inspector() -> tuple[str, Path]:
    """Return ``(node, launcher)``, installing both into .jentrix/node when missing."""
    node = _find_node()
    if node and LAUNCHER.exists():
        return node, LAUNCHER
    npm = shutil.which("npm")
    if not npm:
        pytest.skip("npm is not installed, so the MCP Inspector CLI cannot be fetched (apt-get install -y nodejs npm)")
    NODE_HOME.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(NODE_HOME),
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            NODE_PACKAGE,
            INSPECTOR_PACKAGE,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    node = _find_node()
    if proc.returncode != 0 or not node or not LAUNCHER.exists():
        pytest.skip(
            f"npm could not install {INSPECTOR_PACKAGE} with {NODE_PACKAGE}: {(proc.stderr or proc.stdout).strip()[-400:]}"
        )
    return node, LAUNCHER


# -- a server that records what the client sent -----------------------------------------------
@dataclass
class Recorder:
    """ASGI wrapper remembering each POST's JSON-RPC body and routing headers."""

    app: Any
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        status: dict[str, int] = {}

        async def recording_receive() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
            return message

        async def recording_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        await self.app(scope, recording_receive, recording_send)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            body = json.loads(b"".join(chunks) or b"null")
        except ValueError:
            body = None
        self.seen.append({"http": scope["method"], "headers": headers, "body": body, "status": status.get("code")})

    def methods(self) -> list[str]:
        return [r["body"]["method"] for r in self.seen if isinstance(r["body"], dict) and "method" in r["body"]]


@pytest.fixture(scope="module")
def recorded(stack) -> Any:
    import uvicorn

    from functions.http_app import create_app
    from tests.conftest import _free_port

    rec = Recorder(create_app())
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(rec, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield rec, f"http://127.0.0.1:{port}/api/mcp"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def inspector(tmp_path_factory) -> Any:
    node, launcher = ensure_inspector()
    home = tmp_path_factory.mktemp("inspector-home")  # keep its catalog/state out of the real home

    def run(url: str, token: str, *args: str, era: str | None = None) -> tuple[int, dict[str, Any] | None, str]:
        cmd = [
            node,
            str(launcher),
            "--cli",
            url,
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {token}",
            "--format",
            "json",
        ]
        if era:
            cmd += ["--protocol-era", era]
        cmd += list(args)
        env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json"), "NO_COLOR": "1"}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=str(home))
        out = proc.stdout.strip()
        return proc.returncode, (json.loads(out.splitlines()[-1]) if out else None), proc.stderr

    return run


@pytest.fixture(scope="module")
def me(stack) -> Actor:
    return make_actor("Inspector", f"Inspected {uuid.uuid4().hex[:8]}")


def _assert_era(rec: Recorder, era: str) -> None:
    """Prove from the recorded traffic which protocol era the CLI spoke."""
    posts = [r for r in rec.seen if r["http"] == "POST" and isinstance(r["body"], dict)]
    assert posts, "the CLI sent nothing"
    assert all(r["status"] in (200, 202) for r in posts), [(r["body"].get("method"), r["status"]) for r in posts]
    assert all("mcp-session-id" not in r["headers"] for r in posts)
    requests = [r for r in posts if "id" in r["body"]]
    if era == "modern":
        assert "initialize" not in rec.methods()
        for r in requests:
            meta = (r["body"].get("params") or {}).get("_meta") or {}
            assert meta.get("io.modelcontextprotocol/protocolVersion") == MODERN, r["body"]
            assert r["headers"].get("mcp-protocol-version") == MODERN
            assert r["headers"].get("mcp-method") == r["body"]["method"]
    else:
        assert rec.methods()[0] == "initialize"
        negotiated = requests[0]["body"]["params"]["protocolVersion"]
        assert not any(
            "io.modelcontextprotocol/protocolVersion" in ((r["body"].get("params") or {}).get("_meta") or {})
            for r in requests
        )
        assert negotiated


# -- the tests ------------------------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
def test_tools_list_shows_every_tool(inspector, recorded, me, era):
    rec, url = recorded
    rec.seen.clear()
    rc, out, err = inspector(url, me.token, "--method", "tools/list", era=era)
    assert rc == EXIT_OK, err
    names = [t["name"] for t in out["result"]["tools"]]
    assert names == [s.name for s in default_listing()]
    assert len(names) == len(CATALOG) + len(EXTRA)
    _assert_era(rec, era)


def _nullable_output(finding: dict[str, Any], tools: dict[str, dict[str, Any]], tool_name: str) -> bool:
    """A ``type-union`` warning on an outputSchema node typed ``[X, "null"]``: the one finding the
    server accepts (docs/decisions.md, "Output schemas state their types"). Issue 24 asks every
    output property to state its type; a nullable answer can only say so with a type array (the
    CLI's own note: no spelling of null is portable to every dialect). Input schemas stay free of it."""
    if (finding.get("rule"), finding.get("severity"), finding.get("schema")) != (
        "type-union",
        "warning",
        "outputSchema",
    ):
        return False
    node: Any = tools[tool_name]["outputSchema"]
    for part in re.findall(r"[^.\[\]]+", finding["path"]):
        node = node[int(part)] if isinstance(node, list) else node[part]
    kind = node.get("type")
    return isinstance(kind, list) and len(kind) == 2 and kind[1] == "null"


def _assert_strict_clean(out: dict[str, Any], err: str) -> None:
    """Nothing the strict lint reports but nullable output types; no error at all."""
    tools = {t["name"]: t for t in out["result"]["tools"]}
    findings = [(r["toolName"], f) for r in out.get("schemaFindings", []) for f in r["findings"]]
    unexpected = [(name, f) for name, f in findings if not _nullable_output(f, tools, name)]
    assert not unexpected, json.dumps(unexpected, indent=1)[:2000]
    assert "Error:" not in err, err[:2000]
    assert err.count("Warning:") == len(findings), err[:2000]


@pytest.mark.parametrize("era", ERAS)
def test_strict_schema_lint_finds_nothing(inspector, recorded, me, era):
    _, url = recorded
    rc, out, err = inspector(url, me.token, "--method", "tools/list", "--strict", era=era)
    assert rc == EXIT_OK, err
    assert rc != EXIT_SCHEMA_UNPORTABLE
    _assert_strict_clean(out, err)


@pytest.mark.parametrize("era", ERAS)
def test_call_list_workspaces(inspector, recorded, me, era):
    rec, url = recorded
    rec.seen.clear()
    rc, out, err = inspector(url, me.token, "--method", "tools/call", "--tool-name", "list_workspaces", era=era)
    assert rc == EXIT_OK, err
    result = out["result"]
    assert result["isError"] is False
    assert me.workspace_id in [w["id"] for w in result["structuredContent"]["workspaces"]]
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    _assert_era(rec, era)
    call = next(r for r in rec.seen if isinstance(r["body"], dict) and r["body"].get("method") == "tools/call")
    if era == "modern":
        assert call["headers"]["mcp-name"] == "list_workspaces"


@pytest.mark.parametrize("era", ERAS)
def test_call_create_board_with_json_arguments(inspector, recorded, me, era):
    _, url = recorded
    name = f"Roadmap via {era} {uuid.uuid4().hex[:12]}"
    args = json.dumps({"workspaceId": me.workspace_id, "name": name, "kind": "ROADMAP"})
    rc, out, err = inspector(
        url, me.token, "--method", "tools/call", "--tool-name", "create_board", "--tool-args-json", args, era=era
    )
    assert rc == EXIT_OK, err
    board = out["result"]["structuredContent"]
    assert board["board"]["name"] == name and board["board"]["workspaceId"] == me.workspace_id
    assert board["columns"]
    rc, out, err = inspector(
        url,
        me.token,
        "--method",
        "tools/call",
        "--tool-name",
        "list_boards",
        "--tool-arg",
        f"workspaceId={me.workspace_id}",
        era=era,
    )
    assert rc == EXIT_OK, err
    assert board["board"]["id"] in [b["id"] for b in out["result"]["structuredContent"]["boards"]]


def test_call_with_key_value_arguments(inspector, recorded, me):
    _, url = recorded
    rc, out, err = inspector(
        url,
        me.token,
        "--method",
        "tools/call",
        "--tool-name",
        "create_board",
        "--tool-arg",
        f"workspaceId={me.workspace_id}",
        "name=Plain board",
        era="modern",
    )
    assert rc == EXIT_OK, err
    assert out["result"]["structuredContent"]["board"]["name"] == "Plain board"


@pytest.mark.parametrize("era", ERAS)
def test_error_result_is_reported_as_a_tool_error(inspector, recorded, me, era):
    """NOT_FOUND arrives as isError with the envelope as text and no structuredContent; the
    TypeScript client, which knows get_task's outputSchema, reports it as a tool error rather
    than failing to validate the result."""
    rec, url = recorded
    rec.seen.clear()
    missing = f"tk_{me.workspace_id[3:]}_aaaaaaaa_42"
    rc, out, err = inspector(
        url,
        me.token,
        "--method",
        "tools/call",
        "--tool-name",
        "get_task",
        "--tool-args-json",
        json.dumps({"taskId": missing}),
        era=era,
    )
    assert rc == EXIT_TOOL_ERROR, (rc, out, err)
    result = out["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result
    envelope = json.loads(result["content"][0]["text"])
    assert envelope["error"]["code"] == "NOT_FOUND" and missing in envelope["error"]["message"]
    assert "tool_is_error" in err
    # the client listed the tools (and so held get_task's outputSchema) before calling it
    methods = rec.methods()
    assert "tools/list" in methods and methods.index("tools/list") < methods.index("tools/call"), methods
    for word in ("outputSchema", "structured content", "structuredContent", "validat"):
        assert word not in err, err
    _assert_era(rec, era)


@pytest.mark.parametrize("era", ERAS)
def test_invalid_arguments_are_a_tool_error_not_a_protocol_failure(inspector, recorded, me, era):
    _, url = recorded
    rc, out, err = inspector(
        url,
        me.token,
        "--method",
        "tools/call",
        "--tool-name",
        "create_board",
        "--tool-args-json",
        json.dumps({"workspaceId": me.workspace_id, "name": "x" * 121}),
        era=era,
    )
    assert rc == EXIT_TOOL_ERROR, (rc, out, err)
    envelope = json.loads(out["result"]["content"][0]["text"])
    assert envelope["error"]["code"] == "INVALID_INPUT" and envelope["error"]["message"].startswith("name")


def test_unknown_tool_is_refused_without_a_result(inspector, recorded, me):
    """The CLI resolves the tool against tools/list before calling, so an unknown name ends
    with its own tool_not_found error and no result at all (the server's -32602 for an unknown
    tool is covered over raw HTTP in test_protocol_http.py)."""
    _, url = recorded
    rc, out, err = inspector(url, me.token, "--method", "tools/call", "--tool-name", "no_such_tool", era="modern")
    assert rc != EXIT_OK and out is None, (rc, out, err)
    assert "no_such_tool" in err


def test_bad_token_is_reported_as_an_auth_failure(inspector, recorded):
    _, url = recorded
    rc, out, err = inspector(url, "tm_not-a-token", "--method", "tools/list", "--stored-auth-only", era="modern")
    assert rc == EXIT_AUTH_REQUIRED and out is None, (rc, out, err)
    assert "auth_required" in err and "401" in err


# -- toolsets and read-only mode (issue 14) ----------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
def test_read_only_url_is_strict_clean_and_hides_writes(inspector, recorded, me, era):
    _, url = recorded
    rc, out, err = inspector(url + "/readonly", me.token, "--method", "tools/list", "--strict", era=era)
    assert rc == EXIT_OK, err
    _assert_strict_clean(out, err)
    names = [t["name"] for t in out["result"]["tools"]]
    assert names == [s.name for s in default_listing() if s.read_only]
    rc, out, err = inspector(
        url + "/readonly",
        me.token,
        "--method",
        "tools/call",
        "--tool-name",
        "create_board",
        "--tool-arg",
        f"workspaceId={me.workspace_id}",
        "--tool-arg",
        "name=Nope",
        era=era,
    )
    # resolved against the filtered tools/list: the CLI finds no such tool on this connection
    assert rc == EXIT_TOOL_ERROR and "tool_not_found" in err, (rc, out, err)


@pytest.mark.parametrize("era", ERAS)
def test_toolset_header_connection_is_strict_clean(inspector, recorded, me, era):
    _, url = recorded
    rc, out, err = inspector(
        url, me.token, "--header", "X-MCP-Toolsets: tasks,search", "--method", "tools/list", "--strict", era=era
    )
    assert rc == EXIT_OK, err
    _assert_strict_clean(out, err)
    names = [t["name"] for t in out["result"]["tools"]]
    assert names == [s.name for s in default_listing() if s.area in ("tasks", "search")]
    rc, out, err = inspector(
        url + "/x/tasks", me.token, "--method", "tools/call", "--tool-name", "get_token_context", era=era
    )
    assert rc == EXIT_TOOL_ERROR and "tool_not_found" in err, (rc, out, err)
