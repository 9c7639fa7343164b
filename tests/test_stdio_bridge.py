"""The bridge (``--url``) sends the connection's binding to the remote, which applies and reports it.

* ``get_token_context`` relayed from the remote names this connection's bound workspace and
  observe flag, in ``structuredContent`` and in the identical text block;
* the binding reaches the remote as the ``X-MCP-Binding`` header, which only narrows what the
  token may do (any HTTP client may send it), and a server that ignores it stops the bridge at
  start; a title or a description that happens to look like an id is data, as it is in-process.
"""

from __future__ import annotations

import json

import pytest

from domain import auth
from domain.catalog import registry as product_registry
from domain.context import Binding
from domain.pipeline import call_tool
from functions.protocol import RpcError, Session, binding_from_header, binding_header
from functions.stdio.backends import RemoteBackend
from tests.stdio_support import Adapter, adapter_env, error_of, structured_ok


def same_json(result: dict) -> dict:
    """structuredContent, after checking the text block is exactly its compact JSON."""
    content = structured_ok(result)
    assert [block["type"] for block in result["content"]] == ["text"]
    assert result["content"][0]["text"] == json.dumps(content, separators=(",", ":"), ensure_ascii=False)
    return content


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
def test_bridge_get_token_context_reports_the_local_binding(stack, server_url, owner, modern):
    with Adapter(["--url", server_url, "--workspace", owner.workspace_id], adapter_env(None, owner.token)) as a:
        a.initialize()
        ctx = same_json(a.call("get_token_context", modern=modern))
        assert ctx["boundWorkspaceId"] == owner.workspace_id and ctx["observe"] is False
        assert ctx["userId"] == owner.user_id and ctx["rateLimit"]["used"] >= 1  # the rest is the remote's answer
    with Adapter(["--url", server_url], adapter_env(None, owner.token)) as a:
        a.initialize(roots=False)
        ctx = same_json(a.call("get_token_context", modern=modern))
        assert ctx["boundWorkspaceId"] == owner.workspace_id and ctx["observe"] is True


def test_bridge_and_in_process_report_the_same_binding(stack, server_url, owner):
    def context(args: list[str], env: dict) -> dict:
        with Adapter(args, env) as a:
            a.initialize()
            return same_json(a.call("get_token_context"))

    local = context(["--workspace", owner.workspace_id], adapter_env(stack, owner.token))
    bridged = context(["--url", server_url, "--workspace", owner.workspace_id], adapter_env(None, owner.token))
    keys = ("tokenId", "userId", "workspaceId", "boundWorkspaceId", "observe", "scopes")
    assert {k: bridged[k] for k in keys} == {k: local[k] for k in keys}
    assert list(bridged) == list(local)  # same field order, so the text blocks read alike


def test_bridge_accepts_id_like_titles_and_still_hides_foreign_ids(stack, server_url, owner, outsider):
    theirs = call_tool(
        product_registry().get("create_board"),
        {"workspaceId": outsider.workspace_id, "name": "Theirs"},
        auth.authenticate(outsider.token),
    ).result
    assert theirs
    foreign_column = theirs["columns"][0]["id"]
    with Adapter(["--url", server_url, "--workspace", owner.workspace_id], adapter_env(None, owner.token)) as a:
        a.initialize()
        board = structured_ok(a.call("create_board", {"workspaceId": "", "name": outsider.workspace_id}))
        assert board["board"]["name"] == outsider.workspace_id
        backlog = board["columns"][0]["id"]
        task = structured_ok(
            a.call(
                "create_task",
                {
                    "columnId": backlog,
                    "title": "ws_frbvwwljm43z",
                    "description": f"see {foreign_column} and {theirs['board']['id']}",
                },
            )
        )
        assert task["task"]["title"] == "ws_frbvwwljm43z"
        task = structured_ok(
            a.call("create_task", {"columnId": backlog, "title": theirs["board"]["id"], "description": foreign_column})
        )
        assert task["task"]["description"] == foreign_column
        err = error_of(a.call("create_task", {"columnId": foreign_column, "title": "leak?"}))
        assert err["code"] == "NOT_FOUND" and foreign_column in err["message"]


# -- the X-MCP-Binding header itself (no process) ----------------------------------------------------
BOUND = "ws_aaaaaaaaaaaa"
OTHER = "ws_bbbbbbbbbbbb"


def principal(pin: str | None = None) -> auth.Principal:
    return auth.Principal(user_id="usr_a", token_id="tok_a", kind="pat", stored_scopes=(), workspace_pin=pin)


def test_the_binding_header_carries_what_the_policy_needs_and_nothing_local():
    binding = Binding(
        workspace_id=BOUND,
        lifetime_id="lt_x",
        checkout="/home/me/widgets",
        repository="acme/widgets",
        observe=True,
        observe_reason="pending: roots — not answered yet",
        client_info={"name": "x"},
    )
    value = binding_header(binding)
    assert value.isascii() and value.isprintable() and "/home/me" not in value
    back = binding_from_header(value, principal())
    assert back == Binding(
        workspace_id=BOUND,
        lifetime_id="lt_x",
        repository="acme/widgets",
        observe=True,
        observe_reason=binding.observe_reason,
    )
    writable = binding_from_header(binding_header(Binding(workspace_id=None, lifetime_id="lt_y")), principal())
    assert writable.workspace_id is None and writable.observe is False


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("not json", "is not JSON"),
        ('{"workspaceId": "ws_aaaaaaaaaaaa"}', '"observe"'),
        ('{"workspaceId": "bd_x", "observe": false}', "names no workspace id"),
        ('{"workspaceId": "ws_aaaaaaaaaaaa", "observe": false, "actAs": "usr_b"}', "actAs"),
        (
            '{"workspaceId": "ws_aaaaaaaaaaaa", "observe": false, "repository": "gitlab.com/a/b"}',
            "no GitHub repository",
        ),
    ],
)
def test_a_malformed_binding_header_is_refused(value, needle):
    with pytest.raises(RpcError) as caught:
        binding_from_header(value, principal())
    assert caught.value.code == -32602 and needle in caught.value.message


def test_a_binding_header_cannot_move_a_pinned_token():
    assert (
        binding_from_header(
            binding_header(Binding(workspace_id=BOUND, lifetime_id="lt")), principal(BOUND)
        ).workspace_id
        == BOUND
    )
    with pytest.raises(RpcError, match=f"pinned to {BOUND}"):
        binding_from_header(binding_header(Binding(workspace_id=OTHER, lifetime_id="lt")), principal(BOUND))


def test_the_binding_header_only_narrows_over_plain_http(stack, server_url, owner):
    """Any HTTP client may send X-MCP-Binding: it restricts that request like a bound stdio connection."""
    import httpx2

    from tests.test_stdio_binding import board_in, second_workspace

    other = second_workspace(owner, "Header Other")
    theirs = board_in(owner, other)
    bound = {"X-MCP-Binding": binding_header(Binding(workspace_id=owner.workspace_id, lifetime_id="lt_http"))}
    observe = {
        "X-MCP-Binding": binding_header(
            Binding(workspace_id=owner.workspace_id, lifetime_id="lt_http", observe=True, observe_reason="just looking")
        )
    }

    def call(name: str, arguments: dict, headers: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        reply = httpx2.post(
            server_url, json=body, headers={"Authorization": f"Bearer {owner.token}", **headers}, timeout=30
        )
        return reply.json()["result"]

    assert (
        structured_ok(call("get_board_snapshot", {"boardId": theirs}, {}))["board"]["id"] == theirs
    )  # unbound: both workspaces
    assert error_of(call("get_board_snapshot", {"boardId": theirs}, bound))["code"] == "NOT_FOUND"
    assert error_of(call("list_boards", {"workspaceId": other}, bound))["code"] == "FORBIDDEN"
    made = structured_ok(call("create_board", {"workspaceId": "", "name": "Via header"}, bound))
    assert made["board"]["workspaceId"] == owner.workspace_id
    refused = error_of(call("create_board", {"workspaceId": "", "name": "Observed"}, observe))
    assert refused["code"] == "FORBIDDEN" and "just looking" in refused["message"]
    ctx = structured_ok(call("get_token_context", {}, observe))
    assert ctx["boundWorkspaceId"] == owner.workspace_id and ctx["observe"] is True


def test_the_bridge_refuses_to_start_against_a_server_that_ignores_the_binding(stack, owner):
    """A server older than X-MCP-Binding would answer for every workspace: the bridge stops at start."""
    import threading
    import time

    import uvicorn

    from functions.http_app import create_app
    from functions.protocol import McpProtocol
    from functions.stdio.binding import StartupError
    from tests.conftest import _free_port

    class OldProtocol(McpProtocol):
        @staticmethod
        def _binding(session, headers):
            return session.binding

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(OldProtocol()), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/api/mcp"
        backend = RemoteBackend(url, owner.token)
        backend.identify()
        backend.session = Session(
            principal=principal(),
            transport="stdio",
            binding=Binding(workspace_id=owner.workspace_id, lifetime_id="lt", observe=True, observe_reason="pending"),
        )
        with pytest.raises(StartupError, match="does not apply this connection's binding"):
            backend.confirm_binding()
        backend.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
def test_bridge_keeps_workspace_level_tools_inside_the_binding(stack, server_url, owner, modern):
    """Regression: over --url, list_workspaces listed every workspace and create_workspace made a new one."""
    from domain.store.models import UserRow
    from domain.store.workspaces import create as create_workspace_rows

    user = UserRow.get(f"USER#{owner.user_id}", "PROFILE")
    create_workspace_rows(user, f"Second {modern}")  # the user now has two workspaces
    with Adapter(["--url", server_url, "--workspace", owner.workspace_id], adapter_env(None, owner.token)) as a:
        a.initialize()
        listed = same_json(a.call("list_workspaces", {}, modern=modern))
        assert [w["id"] for w in listed["workspaces"]] == [owner.workspace_id]
        refused = error_of(a.call("create_workspace", {"name": "Escape"}, modern=modern))
        assert refused["code"] == "FORBIDDEN"
    names = [
        w["name"]
        for w in call_tool(product_registry().get("list_workspaces"), {}, auth.authenticate(owner.token)).result[
            "workspaces"
        ]
    ]
    assert "Escape" not in names


# -- what the bridge relays when the gateway (or anything in front of the app) answers ------------
class _FakeGateway:
    """A loopback HTTP server answering every POST with one canned response: what API Gateway
    sends when it answers instead of the function (the bodies are template.yaml's gateway
    responses rendered by a Velocity engine), or what a proxy in front of it might send."""

    def __init__(self) -> None:
        import http.server
        import threading

        gateway = self
        self.reply: tuple[int, str, bytes] = (200, "application/json", b"{}")

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's naming
                self.rfile.read(int(self.headers.get("content-length") or 0))
                status, ctype, body = gateway.reply
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/mcp"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def fake_gateway():
    gateway = _FakeGateway()
    backend = RemoteBackend(gateway.url, "tm_x")
    yield gateway, backend
    backend.close()
    gateway.close()


TOOL_CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "list_workspaces", "arguments": {}}}


def _gateway_cases() -> list[tuple[str, int, dict]]:
    from tests.gateway_support import GATEWAY_MESSAGES, render, responses

    cases = []
    for kind, spec in responses().items():
        status = spec["status"] or (502 if kind.endswith("5XX") else 400)
        body = render(spec["template"], message=GATEWAY_MESSAGES[-1], response_type=kind)
        cases.append((kind, status, json.loads(body)))
    return cases


@pytest.mark.parametrize(("kind", "status", "body"), _gateway_cases(), ids=[case[0] for case in _gateway_cases()])
def test_the_bridge_answers_a_gateway_refusal_with_the_pending_id(fake_gateway, kind, status, body):
    """Regression: the gateway cannot know the JSON-RPC id and answers with id null; relayed as
    is, the desktop client never saw an answer to its request and waited for its own timeout."""
    gateway, backend = fake_gateway
    assert body["id"] is None  # what API Gateway sends
    gateway.reply = (status, "application/json", json.dumps(body).encode())
    (reply,) = backend.request(TOOL_CALL)
    assert reply["jsonrpc"] == "2.0" and reply["id"] == 7 and "result" not in reply, kind
    # the gateway's error is kept whole: code, message and the envelope in data
    assert reply["error"] == body["error"], kind


@pytest.mark.parametrize(
    ("status", "ctype", "raw", "needle"),
    [
        (
            403,
            "application/json",
            b'{"message":"Missing Authentication Token"}',
            "refused the token",
        ),  # API Gateway's stock body
        (404, "application/json", b'{"error":"not_found","error_description":"no such tool selection"}', "HTTP 404"),
        (413, "application/json", b'{"message":"Request Too Long"}', "HTTP 413"),
        (502, "text/html", b"<html><body>Bad Gateway</body></html>", "HTTP 502"),
        (200, "application/json", b'"ok"', "HTTP 200"),
        (200, "application/json", b'{"jsonrpc":"2.0","id":8,"result":{}}', "HTTP 200"),
        (202, "application/json", b"", "HTTP 202"),
    ],
    ids=["stock-403", "app-404", "stock-413", "proxy-html", "json-string", "other-id", "no-body"],
)
def test_the_bridge_answers_every_request_with_json_rpc_whatever_the_remote_sends(
    fake_gateway, status, ctype, raw, needle
):
    """JSON that is no JSON-RPC answer, or no JSON at all, still ends the pending request with a
    JSON-RPC error carrying its id (never silence, never a message with another id alone)."""
    gateway, backend = fake_gateway
    gateway.reply = (status, ctype, raw)
    replies = backend.request(TOOL_CALL)
    answers = [m for m in replies if m.get("id") == 7]
    assert len(answers) == 1, replies
    (answer,) = answers
    assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == -32603 and needle in answer["error"]["message"], (
        answer
    )
    assert answer["error"]["data"]["httpStatus"] == status
    json.dumps(replies)  # every message the adapter writes is JSON
