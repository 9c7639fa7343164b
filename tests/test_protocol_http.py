"""The MCP endpoint's wire rules, one test per rule, spoken in raw HTTP (httpx2) so nothing is
smoothed over by a client library.

Covers docs/decisions.md "Protocol" (MCP 2025-11-25 and 2026-07-28 transports): JSON-RPC envelope errors and their HTTP statuses,
the 2026-07-28 header ladder (MCP-Protocol-Version, Mcp-Method, Mcp-Name with its base64 form),
the handshake era's version negotiation, notifications, POST-only, Origin, bearer auth, the
shape of tool results, and tools/list pagination driven directly on the protocol layer.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import httpx2
import pytest

from domain import auth, clock
from domain.catalog import registry as product_registry
from functions.protocol import McpProtocol, Session
from tests.conftest import Actor, make_actor


def default_listing():
    """What a connection that asks for no toolset lists: every tool but the opt-in toolsets' (coordination)."""
    from domain.toolsets import OPT_IN

    return [s for s in product_registry().ordered() if s.area not in OPT_IN]


MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"


@pytest.fixture(scope="module")
def owner(stack) -> Actor:
    """One caller for the module, its workspace named uniquely (slugs are unique service-wide)."""
    return make_actor("Proto", f"Protocol {uuid.uuid4().hex[:8]}")


# -- helpers -------------------------------------------------------------------------------
def post(url: str, token: str | None, body: Any, headers: Any = None) -> httpx2.Response:
    """POST ``body`` (bytes as is, anything else JSON-encoded) with an optional bearer token."""
    hdrs: list[tuple[str, str]] = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ]
    if token is not None:
        hdrs.append(("Authorization", f"Bearer {token}"))
    if isinstance(headers, dict):
        hdrs += list(headers.items())
    elif headers:
        hdrs += list(headers)
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(url, content=content, headers=hdrs, timeout=30)


def modern_meta(version: str = MODERN, *, caps: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {META_VERSION: version}
    if caps:
        meta[META_CAPS] = {}
    return meta


def modern_body(
    method: str, params: dict[str, Any] | None = None, *, id_: Any = 1, version: str = MODERN, caps: bool = True
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": method,
        "params": {**(params or {}), "_meta": modern_meta(version, caps=caps)},
    }


def modern_headers(method: str, *, version: str | None = MODERN, name: str | None = None) -> dict[str, str]:
    h = {"Mcp-Method": method}
    if version is not None:
        h["MCP-Protocol-Version"] = version
    if name is not None:
        h["Mcp-Name"] = name
    return h


def modern_post(url: str, token: str, method: str, params: dict[str, Any] | None = None, **kw: Any) -> httpx2.Response:
    name = (params or {}).get("name") if method == "tools/call" else None
    return post(url, token, modern_body(method, params), modern_headers(method, name=name, **kw))


def handshake_body(method: str, params: dict[str, Any] | None = None, id_: Any = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        body["params"] = params
    return body


def rpc_error(resp: httpx2.Response, status: int, code: int) -> dict[str, Any]:
    """Assert a JSON-RPC error with this HTTP status and code; return the whole message."""
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert resp.headers["content-type"].startswith("application/json")
    msg = resp.json()
    assert msg["jsonrpc"] == "2.0"
    assert "result" not in msg
    assert msg["error"]["code"] == code, msg
    assert isinstance(msg["error"]["message"], str) and msg["error"]["message"]
    return msg


def rpc_result(resp: httpx2.Response) -> dict[str, Any]:
    assert resp.status_code == 200, (resp.status_code, resp.text)
    assert resp.headers["content-type"].startswith("application/json")
    msg = resp.json()
    assert "error" not in msg, msg
    return msg["result"]


def b64_header(value: str) -> str:
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


# -- body decoding and the envelope ---------------------------------------------------------
def test_body_that_is_not_json_is_a_parse_error(server_url, owner):
    msg = rpc_error(post(server_url, owner.token, b'{"jsonrpc": "2.0", "id": 1, "method": '), 400, -32700)
    assert msg["id"] is None


def test_body_that_is_not_utf8_is_a_parse_error(server_url, owner):
    raw = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"caf\u00e9"}}'.encode("latin-1")
    msg = rpc_error(post(server_url, owner.token, raw), 400, -32700)
    assert msg["id"] is None


def test_json_array_batch_is_rejected(server_url, owner):
    batch = [handshake_body("ping", id_=1), handshake_body("ping", id_=2)]
    msg = rpc_error(post(server_url, owner.token, batch), 400, -32600)
    assert msg["id"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        {"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"},
        {"jsonrpc": "2.0", "id": [1], "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 7},
        {"jsonrpc": "2.0", "id": 1, "method": None},
        {"jsonrpc": "2.0", "id": 1},
        "ping",
        42,
    ],
    ids=[
        "jsonrpc-1.0",
        "no-jsonrpc",
        "id-bool",
        "id-float",
        "id-object",
        "id-array",
        "id-null",
        "method-int",
        "method-null",
        "no-method",
        "string-body",
        "number-body",
    ],
)
def test_malformed_envelope_is_invalid_request(server_url, owner, body):
    msg = rpc_error(post(server_url, owner.token, body), 400, -32600)
    # an id we cannot trust is never echoed back
    if not (isinstance(body, dict) and isinstance(body.get("id"), (str, int)) and not isinstance(body.get("id"), bool)):
        assert msg["id"] is None


def test_posted_jsonrpc_response_is_invalid_request(server_url, owner):
    rpc_error(post(server_url, owner.token, {"jsonrpc": "2.0", "id": 9, "result": {}}), 400, -32600)


def test_string_id_is_echoed(server_url, owner):
    resp = post(server_url, owner.token, handshake_body("ping", id_="req-\u00e9-1"))
    assert resp.status_code == 200 and resp.json() == {"jsonrpc": "2.0", "id": "req-\u00e9-1", "result": {}}


# -- method and tool lookup ----------------------------------------------------------------
def test_unknown_method_in_modern_era_is_404(server_url, owner):
    msg = rpc_error(modern_post(server_url, owner.token, "tasks/explode"), 404, -32601)
    assert msg["id"] == 1


def test_unknown_method_in_handshake_era_rides_on_200(server_url, owner):
    msg = rpc_error(post(server_url, owner.token, handshake_body("tasks/explode", {})), 200, -32601)
    assert msg["id"] == 1


def test_unknown_tool_in_modern_era_is_invalid_params(server_url, owner):
    msg = rpc_error(
        modern_post(server_url, owner.token, "tools/call", {"name": "no_such_tool", "arguments": {}}), 400, -32602
    )
    assert "no_such_tool" in msg["error"]["message"]


def test_unknown_tool_in_handshake_era_is_invalid_params(server_url, owner):
    msg = rpc_error(
        post(server_url, owner.token, handshake_body("tools/call", {"name": "no_such_tool", "arguments": {}})),
        200,
        -32602,
    )
    assert "no_such_tool" in msg["error"]["message"]


# -- 2026-07-28: the header ladder -----------------------------------------------------------
def test_modern_missing_protocol_version_header(server_url, owner):
    rpc_error(modern_post(server_url, owner.token, "tools/list", version=None), 400, -32020)


def test_modern_mismatching_protocol_version_header(server_url, owner):
    rpc_error(modern_post(server_url, owner.token, "tools/list", version="2025-11-25"), 400, -32020)


def test_modern_null_version_in_meta_with_no_header_is_a_header_mismatch(server_url, owner):
    body = modern_body("tools/list")
    body["params"]["_meta"][META_VERSION] = None
    rpc_error(post(server_url, owner.token, body, {"Mcp-Method": "tools/list"}), 400, -32020)


def test_modern_missing_method_header(server_url, owner):
    rpc_error(post(server_url, owner.token, modern_body("tools/list"), {"MCP-Protocol-Version": MODERN}), 400, -32020)


def test_modern_mismatching_method_header(server_url, owner):
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}
    rpc_error(post(server_url, owner.token, modern_body("tools/list"), headers), 400, -32020)


def test_modern_duplicated_method_header(server_url, owner):
    headers = [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/list"), ("Mcp-Method", "tools/list")]
    rpc_error(post(server_url, owner.token, modern_body("tools/list"), headers), 400, -32020)


def test_modern_missing_name_header_on_tools_call(server_url, owner):
    body = modern_body("tools/call", {"name": "list_workspaces", "arguments": {}})
    rpc_error(post(server_url, owner.token, body, modern_headers("tools/call")), 400, -32020)


def test_modern_mismatching_name_header_on_tools_call(server_url, owner):
    body = modern_body("tools/call", {"name": "list_workspaces", "arguments": {}})
    rpc_error(post(server_url, owner.token, body, modern_headers("tools/call", name="list_boards")), 400, -32020)


def test_modern_base64_name_header_that_decodes_to_the_tool_is_accepted(server_url, owner):
    body = modern_body("tools/call", {"name": "list_workspaces", "arguments": {}})
    result = rpc_result(
        post(server_url, owner.token, body, modern_headers("tools/call", name=b64_header("list_workspaces")))
    )
    assert result["isError"] is False
    assert owner.workspace_id in {w["id"] for w in result["structuredContent"]["workspaces"]}


def _non_canonical_b64(value: str) -> str:
    """A base64 spelling of ``value`` whose unused trailing bits are set: lenient decoders
    return the same bytes, but it is not what any conforming client emits."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    canonical = base64.b64encode(value.encode()).decode()
    assert canonical.endswith("=") and not canonical.endswith("=="), "needs a length with 2 unused bits"
    i = len(canonical) - 2
    tweaked = canonical[:i] + alphabet[alphabet.index(canonical[i]) + 1] + canonical[i + 1 :]
    assert base64.b64decode(tweaked) == value.encode()
    return f"=?base64?{tweaked}?="


@pytest.mark.parametrize(
    "header",
    [
        b64_header("list_workspaces"),
        "=?base64?not base64!?=",
        b64_header("list_boards") + "x",
        _non_canonical_b64("list_boards"),
    ],
    ids=["other-tool", "not-base64", "trailing-junk", "non-canonical"],
)
def test_modern_base64_name_header_that_does_not_decode_to_the_tool_is_rejected(server_url, owner, header):
    body = modern_body("tools/call", {"name": "list_boards", "arguments": {"workspaceId": owner.workspace_id}})
    rpc_error(post(server_url, owner.token, body, modern_headers("tools/call", name=header)), 400, -32020)


def test_modern_base64_name_header_for_another_tool_name_is_accepted(server_url, owner):
    body = modern_body("tools/call", {"name": "list_boards", "arguments": {"workspaceId": owner.workspace_id}})
    result = rpc_result(
        post(server_url, owner.token, body, modern_headers("tools/call", name=b64_header("list_boards")))
    )
    assert result["isError"] is False and "boards" in result["structuredContent"]


def test_modern_missing_client_capabilities_is_invalid_params(server_url, owner):
    body = modern_body("tools/list", caps=False)
    msg = rpc_error(post(server_url, owner.token, body, modern_headers("tools/list")), 400, -32602)
    assert "clientCapabilities" in msg["error"]["message"]


def test_modern_header_without_meta_is_invalid_params_not_header_mismatch(server_url, owner):
    resp = post(server_url, owner.token, handshake_body("tools/list", {}), modern_headers("tools/list"))
    rpc_error(resp, 400, -32602)


def test_modern_unsupported_version_lists_what_is_supported(server_url, owner):
    body = modern_body("tools/list", version="2099-01-01")
    msg = rpc_error(
        post(server_url, owner.token, body, modern_headers("tools/list", version="2099-01-01")), 400, -32022
    )
    assert msg["error"]["data"]["supported"] == [MODERN]
    assert msg["error"]["data"]["requested"] == "2099-01-01"


def test_modern_server_discover(server_url, owner):
    resp = modern_post(server_url, owner.token, "server/discover")
    assert "mcp-session-id" not in resp.headers
    result = rpc_result(resp)
    assert MODERN in result["supportedVersions"]
    assert {"2025-06-18", "2025-11-25"} <= set(result["supportedVersions"])
    assert "tools" in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "jentrix-mcp"
    assert result["resultType"] == "complete"
    assert isinstance(result["ttlMs"], int) and result["cacheScope"]


def test_modern_results_carry_result_type(server_url, owner):
    ok = rpc_result(modern_post(server_url, owner.token, "tools/call", {"name": "list_workspaces", "arguments": {}}))
    assert ok["resultType"] == "complete" and ok["isError"] is False
    bad = rpc_result(
        modern_post(server_url, owner.token, "tools/call", {"name": "get_task", "arguments": {"taskId": "tk_missing"}})
    )
    assert bad["resultType"] == "complete" and bad["isError"] is True


def test_modern_ping_is_a_removed_method(server_url, owner):
    """Regression for the conformance check sep-2575-http-server-method-not-found-404-ping: the
    stateless era has no ping, so it is -32601 with HTTP 404 (the handshake era keeps it)."""
    resp = modern_post(server_url, owner.token, "ping")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == -32601


def test_modern_list_results_carry_cache_hints(server_url, owner):
    result = rpc_result(modern_post(server_url, owner.token, "tools/list"))
    assert result["resultType"] == "complete"
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] > 0
    assert result["cacheScope"] in ("public", "private")
    assert len(result["tools"]) == len(default_listing())


# -- handshake era -------------------------------------------------------------------------
def _initialize(url: str, token: str, version: str) -> httpx2.Response:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}}
    return post(url, token, handshake_body("initialize", params))


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_handshake_initialize_accepts_served_versions(server_url, owner, version):
    resp = _initialize(server_url, owner.token, version)
    assert "mcp-session-id" not in resp.headers  # stateless: never mint a session
    result = rpc_result(resp)
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "jentrix-mcp"
    assert "tools" in result["capabilities"]
    assert "resultType" not in result


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "1999-01-01", "not-a-version", MODERN])
def test_handshake_initialize_counter_offers_latest_for_other_versions(server_url, owner, version):
    result = rpc_result(_initialize(server_url, owner.token, version))
    assert result["protocolVersion"] == "2025-11-25"


def test_handshake_requests_are_never_answered_with_header_mismatch(server_url, owner):
    # Routing headers that disagree with the body are not an error before 2026-07-28.
    params = {"name": "list_workspaces", "arguments": {}}
    headers = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list", "Mcp-Name": "something_else"}
    result = rpc_result(post(server_url, owner.token, handshake_body("tools/call", params), headers))
    assert result["isError"] is False
    for body in (handshake_body("tools/list", {}), handshake_body("ping"), handshake_body("nope/nope", {})):
        resp = post(server_url, owner.token, body, {"Mcp-Method": "tools/call", "Mcp-Name": "x"})
        assert resp.json().get("error", {}).get("code") != -32020


def test_handshake_unsupported_protocol_version_header_is_400(server_url, owner):
    resp = post(server_url, owner.token, handshake_body("tools/list", {}), {"MCP-Protocol-Version": "2024-11-05"})
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] != -32020


def test_handshake_results_have_no_modern_fields(server_url, owner):
    result = rpc_result(
        post(server_url, owner.token, handshake_body("tools/list", {}), {"MCP-Protocol-Version": "2025-06-18"})
    )
    assert "resultType" not in result and "ttlMs" not in result
    assert len(result["tools"]) == len(default_listing())
    assert rpc_result(post(server_url, owner.token, handshake_body("ping"))) == {}


# -- notifications -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
        {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": modern_meta()}},
        {"jsonrpc": "2.0", "method": "notifications/whatever-unknown"},
    ],
    ids=["initialized", "cancelled", "modern-meta", "unknown"],
)
def test_notifications_get_202_and_no_body(server_url, owner, body):
    resp = post(server_url, owner.token, body)
    assert resp.status_code == 202
    assert resp.content == b""


# -- HTTP method, Origin, authentication -----------------------------------------------------
@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_non_post_methods_are_405_with_allow(server_url, owner, method):
    resp = httpx2.request(
        method,
        server_url,
        headers={"Authorization": f"Bearer {owner.token}", "Accept": "text/event-stream"},
        timeout=10,
    )
    assert resp.status_code == 405
    assert resp.headers["allow"] == "POST"


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "http://localhost.evil.example", "null", "http://127.0.0.2:8080"]
)
def test_foreign_origin_is_403(server_url, owner, origin):
    resp = post(server_url, owner.token, handshake_body("ping"), {"Origin": origin})
    assert resp.status_code == 403


@pytest.mark.parametrize(
    "origin", ["http://localhost:6274", "http://127.0.0.1:3000", "http://[::1]:8080", "https://localhost"]
)
def test_loopback_origin_is_allowed(server_url, owner, origin):
    assert rpc_result(post(server_url, owner.token, handshake_body("ping"), {"Origin": origin})) == {}


def test_no_origin_is_allowed(server_url, owner):
    assert rpc_result(post(server_url, owner.token, handshake_body("ping"))) == {}


def _assert_401(resp: httpx2.Response) -> None:
    assert resp.status_code == 401, (resp.status_code, resp.text)
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert "result" not in resp.json()


def test_missing_token_is_401(server_url):
    resp = post(server_url, None, handshake_body("ping"))
    _assert_401(resp)
    assert resp.headers["www-authenticate"].startswith(
        'Bearer realm="jentrix", resource_metadata="'
    )  # RFC 6750 §3.1: no error code without credentials
    assert "error=" not in resp.headers["www-authenticate"]


@pytest.mark.parametrize(
    "authorization", ["Bearer tm_not-a-real-token", "Bearer something", "Basic dXNlcjpwYXNz", "Bearer", "tm_no_scheme"]
)
def test_invalid_token_is_401(server_url, authorization):
    resp = post(server_url, None, handshake_body("ping"), {"Authorization": authorization})
    _assert_401(resp)
    sent_a_bearer_token = authorization.startswith("Bearer ")  # else no Bearer credentials were sent at all
    assert ('error="invalid_token"' in resp.headers["www-authenticate"]) is sent_a_bearer_token, resp.headers[
        "www-authenticate"
    ]


def test_revoked_token_is_401(server_url, owner):
    secret, row = auth.mint_pat(owner.user_id)
    assert rpc_result(post(server_url, secret, handshake_body("ping"))) == {}
    assert auth.revoke_token(owner.user_id, row.tokenId)
    _assert_401(post(server_url, secret, handshake_body("ping")))


def test_expired_token_is_401(server_url, owner):
    past = clock.iso(clock.now_ms() - 60_000)
    secret, _ = auth.mint_pat(owner.user_id, expires_at=past)
    _assert_401(post(server_url, secret, handshake_body("ping")))
    _assert_401(modern_post(server_url, secret, "tools/list"))


# -- the shape of tool results -----------------------------------------------------------------
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_error_result_is_the_envelope_text_without_structured_content(server_url, owner, era):
    params = {"name": "get_task", "arguments": {"taskId": "tk_does_not_exist"}}
    resp = (
        modern_post(server_url, owner.token, "tools/call", params)
        if era == "modern"
        else post(server_url, owner.token, handshake_body("tools/call", params))
    )
    result = rpc_result(resp)
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
    env = json.loads(result["content"][0]["text"])
    assert env["error"]["code"] == "NOT_FOUND"
    assert env["error"]["message"]


@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_success_result_text_equals_structured_content(server_url, owner, era):
    params = {"name": "list_boards", "arguments": {"workspaceId": owner.workspace_id}}
    resp = (
        modern_post(server_url, owner.token, "tools/call", params)
        if era == "modern"
        else post(server_url, owner.token, handshake_body("tools/call", params))
    )
    result = rpc_result(resp)
    assert result["isError"] is False
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert "boards" in result["structuredContent"]


def test_body_in_several_asgi_messages_is_read_whole(stack, owner):
    """A request body the server hands over in several ``http.request`` messages (``more_body``)
    reaches the call whole, and the reply carries an exact Content-Length. Driven on the ASGI app
    itself, because an HTTP server may join the chunks before the app reads them."""
    import asyncio

    from functions.http_app import app

    body = json.dumps(
        handshake_body("tools/call", {"name": "list_boards", "arguments": {"workspaceId": owner.workspace_id}})
    ).encode()
    pieces = [body[i : i + 9] for i in range(0, len(body), 9)]
    incoming = [{"type": "http.request", "body": p, "more_body": i < len(pieces) - 1} for i, p in enumerate(pieces)]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/mcp",
        "raw_path": b"/api/mcp",
        "root_path": "",
        "query_string": b"",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
        "headers": [(b"content-type", b"application/json"), (b"authorization", f"Bearer {owner.token}".encode())],
    }
    asyncio.run(app(scope, receive, send))
    assert not incoming  # every piece was read
    start, reply = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    assert start["status"] == 200
    assert dict(start["headers"])[b"content-length"] == str(len(reply)).encode()
    result = json.loads(reply)["result"]
    assert result["isError"] is False and "boards" in result["structuredContent"]


# -- the reply encoder ------------------------------------------------------------------------
ENCODER_SAMPLES: list[Any] = [
    {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": '{"a":1}'}], "isError": False}},
    {"text": "".join(chr(i) for i in range(0x800)) + "\u2028\u2029\ufeff\U0001f600 é ü 中文"},
    {"nested": [[], {}, [None, True, False], {"k": [1, -1, 0, 2**63, -(2**63) - 1, 10**30]}]},
    {"floats": [0.1, 1 / 3, -0.0, 2.5, 100.0, 1e16, 1e22, 5e-324, 1.5e300, 1e-7, 4.43e-7, 1e-5]},
    {"keys in order": {"z": 1, "a": 2, "m": {"y": 1, "b": 2}}},
]


@pytest.mark.parametrize("value", ENCODER_SAMPLES)
def test_reply_encoder_writes_what_the_standard_library_writes(value):
    """The fast encoder (pydantic-core) against json.dumps' compact UTF-8 form: the same bytes,
    except where a float's exponent is spelled differently, and then the same numbers."""
    from functions.jsonrpc import dumps, encode

    stdlib = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert json.loads(encode(value)) == json.loads(stdlib) == value
    assert dumps(value) == encode(value).decode("utf-8")
    if "floats" not in value:
        assert encode(value) == stdlib.encode("utf-8")


def test_reply_encoder_escapes_a_lone_surrogate_instead_of_failing():
    from functions.jsonrpc import dumps, encode

    value = {"title": "bad \ud800 half", "ok": "é"}
    assert encode(value) == json.dumps(value, separators=(",", ":")).encode("ascii")
    assert json.loads(encode({"text": dumps(value)})) == {
        "text": json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    }


# -- tools/list pagination, driven on the protocol layer ----------------------------------------
def _walk(proto: McpProtocol, session: Session, *, modern: bool) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    for _ in range(100):
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        if modern:
            params["_meta"] = modern_meta()
        reply = proto.handle(
            {"jsonrpc": "2.0", "id": len(pages) + 1, "method": "tools/list", "params": params},
            headers=None,
            session=session,
        )
        assert reply.status == 200, reply.message
        result = reply.message["result"]
        pages.append([t["name"] for t in result["tools"]])
        cursor = result.get("nextCursor")
        if cursor is None:
            return pages
        assert isinstance(cursor, str) and cursor
    raise AssertionError("the cursor walk never ended")


@pytest.fixture
def small_pages(owner) -> tuple[McpProtocol, Session]:
    principal = auth.authenticate(owner.token)
    assert principal is not None
    return McpProtocol(page_size=5), Session(principal=principal, transport="test")


@pytest.mark.parametrize("modern", [True, False], ids=["modern", "handshake"])
def test_tools_list_cursor_walk_covers_every_tool_once_in_name_order(small_pages, modern):
    proto, session = small_pages
    pages = _walk(proto, session, modern=modern)
    every = [name for page in pages for name in page]
    expected = sorted(s.name for s in default_listing())
    assert every == expected
    assert len(every) == len(set(every)) == len(default_listing())
    assert all(len(p) == 5 for p in pages[:-1]) and 1 <= len(pages[-1]) <= 5
    assert len(pages) == -(-len(expected) // 5)


def test_tools_list_order_is_stable_between_walks(small_pages):
    proto, session = small_pages
    assert (
        _walk(proto, session, modern=True) == _walk(proto, session, modern=True) == _walk(proto, session, modern=False)
    )


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        "",
        5,
        base64.urlsafe_b64encode(b"tools:999").decode(),
        base64.urlsafe_b64encode(b"tools:-1").decode(),
        base64.urlsafe_b64encode(b"tools:x").decode(),
    ],
    ids=["garbage", "empty", "number", "past-the-end", "negative", "not-a-number"],
)
@pytest.mark.parametrize("modern", [True, False], ids=["modern", "handshake"])
def test_tools_list_bad_cursor_is_invalid_params(small_pages, cursor, modern):
    proto, session = small_pages
    params: dict[str, Any] = {"cursor": cursor}
    if modern:
        params["_meta"] = modern_meta()
    reply = proto.handle(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": params}, headers=None, session=session
    )
    assert reply.message["error"]["code"] == -32602, reply.message
    assert reply.status == (400 if modern else 200)


def test_tools_list_over_http_fits_one_default_page(server_url, owner):
    result = rpc_result(post(server_url, owner.token, handshake_body("tools/list", {})))
    assert "nextCursor" not in result
    assert [t["name"] for t in result["tools"]] == sorted(s.name for s in default_listing())
