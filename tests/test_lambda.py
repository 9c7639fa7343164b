"""The Lambda entry (functions.lambda_handler.handler) answers exactly as the HTTP server does.

Every request below is sent twice: over HTTP to the uvicorn server (``server_url``) and
in-process to the Lambda handler wrapped in canned API Gateway proxy events of each shape we
can be deployed behind:

* REST API (payload v1) — the path arrives without the stage;
* HTTP API (payload v2) on a named stage — ``rawPath`` starts with ``/prod``;
* HTTP API (payload v2) on the ``$default`` stage — no prefix.

Status, the headers that carry meaning, and the JSON bodies must be identical. Both paths use
the same DynamoDB Local tables, so a keyed create sent over HTTP is replayed, byte for byte,
when the same call arrives through Lambda.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from tests.conftest import Actor, make_actor

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
MEANINGFUL_HEADERS = (
    "content-type",
    "allow",
    "www-authenticate",
    "mcp-session-id",
    "mcp-protocol-version",
    "retry-after",
)


@dataclass
class LambdaContext:
    """The attributes of the Lambda context object that libraries read."""

    function_name: str = "jentrix-mcp-test"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:jentrix-mcp-test"
    memory_limit_in_mb: int = 512
    aws_request_id: str = ""
    log_group_name: str = "/aws/lambda/jentrix-mcp-test"
    log_stream_name: str = "2026/11/30/[$LATEST]0123456789abcdef"

    def __post_init__(self) -> None:
        self.aws_request_id = self.aws_request_id or str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 25_000


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


# -- canned events ----------------------------------------------------------------------------
def _encode(body: bytes | None, b64: bool) -> tuple[str | None, bool]:
    if body is None:
        return None, False
    if b64:
        return base64.b64encode(body).decode(), True
    return body.decode("utf-8"), False


def rest_v1_event(
    method: str, headers: dict[str, str], body: bytes | None, *, b64: bool = False, stage: str = "prod"
) -> dict[str, Any]:
    text, encoded = _encode(body, b64)
    return {
        "resource": "/api/mcp",
        "path": "/api/mcp",  # REST APIs pass the resource path without the stage
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "a1b2c3d4e5",
            "resourceId": "abc123",
            "resourcePath": "/api/mcp",
            "httpMethod": method,
            "path": f"/{stage}/api/mcp",
            "stage": stage,
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": 1_790_000_000_000,
            "identity": {"sourceIp": "203.0.113.7", "userAgent": headers.get("User-Agent", "test")},
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


def http_v2_event(
    method: str, headers: dict[str, str], body: bytes | None, *, b64: bool = False, stage: str = "prod"
) -> dict[str, Any]:
    text, encoded = _encode(body, b64)
    path = "/api/mcp" if stage == "$default" else f"/{stage}/api/mcp"
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {k.lower(): v for k, v in headers.items()},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "f6g7h8i9j0",
            "domainName": "f6g7h8i9j0.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "f6g7h8i9j0",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "test",
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": stage,
            "time": "30/Nov/2026:10:00:00 +0000",
            "timeEpoch": 1_790_000_000_000,
        },
        "isBase64Encoded": encoded,
    }
    if text is not None:
        event["body"] = text
    return event


EVENT_SHAPES = {
    "rest-v1": lambda m, h, b, b64=False: rest_v1_event(m, h, b, b64=b64),
    "http-v2-named-stage": lambda m, h, b, b64=False: http_v2_event(m, h, b, b64=b64, stage="prod"),
    "http-v2-default-stage": lambda m, h, b, b64=False: http_v2_event(m, h, b, b64=b64, stage="$default"),
}


def invoke(shape: str, method: str, headers: dict[str, str], body: bytes | None, *, b64: bool = False) -> Answer:
    from functions.lambda_handler import handler

    out = handler(EVENT_SHAPES[shape](method, headers, body, b64), LambdaContext())
    raw = out.get("body") or ""
    data = base64.b64decode(raw) if out.get("isBase64Encoded") else raw.encode("utf-8")
    merged: dict[str, str] = {k.lower(): v for k, v in (out.get("headers") or {}).items()}
    for k, values in (out.get("multiValueHeaders") or {}).items():
        merged.setdefault(k.lower(), ", ".join(values))
    return Answer(out["statusCode"], merged, data)


def over_http(url: str, method: str, headers: dict[str, str], body: bytes | None) -> Answer:
    resp = httpx2.request(method, url, headers=headers, content=body, timeout=60)
    return Answer(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, resp.content)


def comparable(answer: Answer) -> dict[str, Any]:
    """What must match between transports: status, the headers with meaning, the JSON body.

    ``content-type`` is compared only when there is a body: on HTTP API (v2) events Mangum
    labels an empty response (our 202 to a notification) ``application/json``, which says
    nothing about an empty body.
    """
    headers = {k: answer.headers.get(k) for k in MEANINGFUL_HEADERS}
    if headers.get("www-authenticate"):
        # the metadata URL names the host the request came through (functions/public_url.py), which
        # differs between the gateway's event and the local server by design
        headers["www-authenticate"] = re.sub(
            r'resource_metadata="https?://[^/"]+[^"]*/\.well-known/',
            'resource_metadata="<base>/.well-known/',
            headers["www-authenticate"],
        )
    if not answer.body:
        headers.pop("content-type")
    return {"status": answer.status, "headers": headers, "body": answer.json()}


def _headers(token: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        h["Authorization"] = f"Bearer {token}"
    return {**h, **(extra or {})}


def _body(method: str, params: dict[str, Any] | None = None, id_: Any = 1) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


def requests_for(token: str) -> dict[str, tuple[str, dict[str, str], bytes | None]]:
    """The request set: (method, headers, body) by name."""
    handshake = {"MCP-Protocol-Version": "2025-11-25"}
    return {
        "initialize": (
            "POST",
            _headers(token),
            _body(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "lambda-test", "version": "1"},
                },
            ),
        ),
        "initialized-notification": (
            "POST",
            _headers(token, handshake),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        ),
        "tools/list": ("POST", _headers(token, handshake), _body("tools/list", {}, id_="list-1")),
        "tools/call list_workspaces": (
            "POST",
            _headers(token, handshake),
            _body("tools/call", {"name": "list_workspaces", "arguments": {}}, id_=7),
        ),
        "modern tools/call list_workspaces": (
            "POST",
            _headers(
                token, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "list_workspaces"}
            ),
            _body("tools/call", {"name": "list_workspaces", "arguments": {}, "_meta": META}, id_=8),
        ),
        "modern server/discover": (
            "POST",
            _headers(token, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"}),
            _body("server/discover", {"_meta": META}, id_=9),
        ),
        "unknown tool": (
            "POST",
            _headers(token, handshake),
            _body("tools/call", {"name": "no_such_tool", "arguments": {}}, id_=10),
        ),
        "invalid arguments": (
            "POST",
            _headers(token, handshake),
            _body("tools/call", {"name": "list_boards", "arguments": {"workspaceId": 5}}, id_=11),
        ),
        "body not json": ("POST", _headers(token), b"{not json"),
        "GET is 405": ("GET", _headers(token), None),
        "DELETE is 405": ("DELETE", _headers(token), None),
        "no Authorization is 401": ("POST", _headers(None), _body("tools/list", {})),
        "unknown token is 401": ("POST", _headers("tm_" + "x" * 43), _body("tools/list", {})),
    }


REQUEST_NAMES = list(requests_for("tm_placeholder"))


@pytest.fixture(scope="module")
def owner(stack: dict[str, str]) -> Actor:
    """One owner for the module (its own workspace name, so slugs never pile up)."""
    return make_actor("Lambda", f"Lambda Space {uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("shape", list(EVENT_SHAPES))
@pytest.mark.parametrize("name", REQUEST_NAMES)
def test_lambda_answers_like_http(shape: str, name: str, owner: Actor, server_url: str) -> None:
    method, headers, body = requests_for(owner.token)[name]
    via_http = over_http(server_url, method, headers, body)
    via_lambda = invoke(shape, method, headers, body)
    assert comparable(via_lambda) == comparable(via_http)


def test_expected_outcomes_through_lambda(owner: Actor) -> None:
    """The shared answers are also the right ones (not merely equal)."""
    reqs = requests_for(owner.token)
    for shape in EVENT_SHAPES:
        init = invoke(shape, *reqs["initialize"])
        assert init.status == 200 and init.json()["result"]["protocolVersion"] == "2025-11-25"
        assert "mcp-session-id" not in init.headers  # stateless

        listed = invoke(shape, *reqs["tools/list"]).json()["result"]["tools"]
        assert "list_workspaces" in {t["name"] for t in listed}

        for name in ("tools/call list_workspaces", "modern tools/call list_workspaces"):
            result = invoke(shape, *reqs[name]).json()["result"]
            assert result["structuredContent"]["workspaces"][0]["id"] == owner.workspace_id, (shape, name)

        note = invoke(shape, *reqs["initialized-notification"])
        assert note.status == 202 and note.body == b""

        for name in ("GET is 405", "DELETE is 405"):
            refused = invoke(shape, *reqs[name])
            assert refused.status == 405 and refused.headers["allow"] == "POST", (shape, name)

        for name in ("no Authorization is 401", "unknown token is 401"):
            refused = invoke(shape, *reqs[name])
            assert refused.status == 401, (shape, name)
            assert refused.headers["www-authenticate"].startswith("Bearer "), (shape, name)

        bad = invoke(shape, *reqs["body not json"])
        assert bad.json()["error"]["code"] == -32700


@pytest.mark.parametrize("shape", list(EVENT_SHAPES))
def test_base64_encoded_body(shape: str, owner: Actor, server_url: str) -> None:
    """API Gateway may hand the body over base64-encoded (binary media types); same answer."""
    method, headers, body = requests_for(owner.token)["tools/call list_workspaces"]
    plain = invoke(shape, method, headers, body)
    encoded = invoke(shape, method, headers, body, b64=True)
    via_http = over_http(server_url, method, headers, body)
    assert comparable(encoded) == comparable(plain) == comparable(via_http)
    assert encoded.json()["result"]["structuredContent"]["workspaces"][0]["id"] == owner.workspace_id


def test_keyed_create_over_http_replays_through_lambda(owner: Actor, server_url: str) -> None:
    """Both entry points share one store: the Lambda call replays the HTTP call's stored result."""
    args = {"workspaceId": owner.workspace_id, "name": "Replayed board", "idempotencyKey": f"lambda-{uuid.uuid4().hex}"}
    body = _body("tools/call", {"name": "create_board", "arguments": args}, id_=42)
    headers = _headers(owner.token, {"MCP-Protocol-Version": "2025-11-25"})
    first = over_http(server_url, "POST", headers, body)
    assert first.status == 200 and not first.json()["result"]["isError"], first.body
    for shape in EVENT_SHAPES:
        again = invoke(shape, "POST", headers, body)
        assert comparable(again) == comparable(first), shape


def test_stage_prefix_is_stripped_only_for_the_stage() -> None:
    """A v2 path that merely starts with the stage's letters is not rewritten."""
    from functions.lambda_handler import route_path

    headers = {"content-type": "application/json"}
    named = route_path(http_v2_event("POST", headers, b"{}", stage="prod"))
    assert named["rawPath"] == "/api/mcp" and named["requestContext"]["http"]["path"] == "/api/mcp"
    other = http_v2_event("POST", headers, b"{}", stage="prod")
    other["rawPath"] = other["requestContext"]["http"]["path"] = "/production/api/mcp"
    assert route_path(other)["rawPath"] == "/production/api/mcp"
    v1 = rest_v1_event("POST", headers, b"{}")
    assert route_path(v1) is v1


# -- custom domains and base paths ------------------------------------------------------------
CUSTOM_DOMAIN = "mcp.example.com"


def custom_domain_event(shape: str, body: bytes, headers: dict[str, str], *, stage: str, path: str) -> dict[str, Any]:
    """What API Gateway sends for a request to https://mcp.example.com<path>: the custom domain
    is in ``requestContext.domainName`` and the path is exactly what the client asked for (the
    API mapping's base path included, the stage never)."""
    if shape == "rest-v1":
        event = rest_v1_event("POST", headers, body, stage=stage)
        event["path"] = path
        event["requestContext"]["domainName"] = CUSTOM_DOMAIN
        event["requestContext"]["path"] = path
        return event
    event = http_v2_event("POST", headers, body, stage=stage)
    event["rawPath"] = path
    event["requestContext"]["domainName"] = CUSTOM_DOMAIN
    event["requestContext"]["domainPrefix"] = "mcp"
    event["requestContext"]["http"]["path"] = path
    return event


def _invoke_event(event: dict[str, Any], base_path: str) -> Answer:
    from functions.lambda_handler import _mangum, route_path

    out = _mangum(route_path(event, base_path), LambdaContext())
    raw = out.get("body") or ""
    data = base64.b64decode(raw) if out.get("isBase64Encoded") else raw.encode("utf-8")
    return Answer(out["statusCode"], {k.lower(): v for k, v in (out.get("headers") or {}).items()}, data)


@pytest.mark.parametrize("shape", ["rest-v1", "http-v2"])
@pytest.mark.parametrize(
    ("stage", "base_path", "path"),
    [
        ("prod", "", "/api/mcp"),
        ("api", "", "/api/mcp"),  # a stage named like the first route segment is not in a custom domain's path
        ("prod", "/jentrix", "/jentrix/api/mcp"),
        ("api", "/jentrix", "/jentrix/api/mcp"),
        ("prod", "/tools/v1", "/tools/v1/api/mcp"),
    ],
)
def test_custom_domain_reaches_the_endpoint(shape: str, stage: str, base_path: str, path: str, owner: Actor) -> None:
    _method, headers, body = requests_for(owner.token)["tools/call list_workspaces"]
    answer = _invoke_event(custom_domain_event(shape, body or b"", headers, stage=stage, path=path), base_path)
    assert answer.status == 200, (answer.status, answer.body)
    assert answer.json()["result"]["structuredContent"]["workspaces"][0]["id"] == owner.workspace_id


@pytest.mark.parametrize("shape", ["rest-v1", "http-v2"])
def test_base_path_is_removed_only_as_whole_segments(shape: str, owner: Actor) -> None:
    _, headers, body = requests_for(owner.token)["tools/call list_workspaces"]
    event = custom_domain_event(shape, body or b"", headers, stage="prod", path="/jentrixx/api/mcp")
    assert _invoke_event(event, "/jentrix").status == 404


def test_http_api_stage_named_api_through_execute_api(owner: Actor) -> None:
    """On the execute-api hostname the stage is in the path and is removed once."""
    _, headers, body = requests_for(owner.token)["tools/call list_workspaces"]
    event = http_v2_event("POST", headers, body, stage="api")
    assert event["rawPath"] == "/api/api/mcp"
    answer = _invoke_event(event, "/jentrix")  # a base path never applies to execute-api requests
    assert (
        answer.status == 200
        and answer.json()["result"]["structuredContent"]["workspaces"][0]["id"] == owner.workspace_id
    )


def test_base_path_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from functions import lambda_handler

    assert [lambda_handler.normalize_base_path(v) for v in ("jentrix", "/jentrix/", "//jentrix", "", "/", None)] == [
        "/jentrix",
        "/jentrix",
        "/jentrix",
        "",
        "",
        "",
    ]
    monkeypatch.setenv("JENTRIX_BASE_PATH", "jentrix/")
    try:
        assert importlib.reload(lambda_handler).BASE_PATH == "/jentrix"
    finally:
        monkeypatch.delenv("JENTRIX_BASE_PATH")
        assert importlib.reload(lambda_handler).BASE_PATH == ""


@pytest.mark.parametrize("state", ["unset", "closed"])
def test_handler_works_when_the_thread_has_no_usable_event_loop(state: str, owner: Actor) -> None:
    """Regression: Mangum runs on the thread's current loop and creates one only when it is
    built; after something unset or closed it (pytest-asyncio does, after an async test), every
    invocation failed with "no current event loop"."""
    import asyncio

    if state == "unset":
        asyncio.set_event_loop(None)
    else:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.close()
    answer = invoke(
        "rest-v1", "POST", _headers(owner.token), _body("tools/call", {"name": "list_workspaces", "arguments": {}})
    )
    assert answer.status == 200
    asyncio.set_event_loop(None)  # the adapter itself, as the custom-domain tests call it
    _method, headers, body = requests_for(owner.token)["tools/call list_workspaces"]
    assert (
        _invoke_event(custom_domain_event("rest-v1", body or b"", headers, stage="prod", path="/api/mcp"), "").status
        == 200
    )


def test_read_only_selection_url_through_the_gateway_route(owner: Actor) -> None:
    """template.yaml routes /api/mcp/{selection+} to the function: /api/mcp/readonly lists the
    read tools only, through a REST event shaped like that route's."""
    from functions.lambda_handler import handler

    event = rest_v1_event("POST", _headers(owner.token), _body("tools/list"))
    event["resource"] = "/api/mcp/{selection+}"
    event["path"] = "/api/mcp/readonly"
    event["pathParameters"] = {"selection": "readonly"}
    event["requestContext"].update(resourcePath="/api/mcp/{selection+}", path="/prod/api/mcp/readonly")
    out = handler(event, LambdaContext())
    assert out["statusCode"] == 200, out
    names = {t["name"] for t in json.loads(out["body"])["result"]["tools"]}
    assert "get_task" in names and "create_task" not in names and "update_task" not in names


def test_a_lambda_invocation_serves_the_call_on_its_own_thread(owner: Actor, monkeypatch: pytest.MonkeyPatch) -> None:
    """One request per Lambda environment: the token check and the tool call run on the
    invoking thread (no hop to the HTTP worker pool, whose threads would add two switches to
    every call); the same app over plain HTTP (no Lambda event in the scope) still hops."""
    import threading

    from domain import pipeline

    seen: list[str] = []
    real = pipeline.call_tool
    assert real is __import__("functions.protocol", fromlist=["call_tool"]).call_tool

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return real(*args, **kwargs)

    import functions.protocol as protocol_module

    monkeypatch.setattr(protocol_module, "call_tool", spy)  # the protocol layer's own reference
    for shape in EVENT_SHAPES:
        assert invoke(shape, *requests_for(owner.token)["tools/call list_workspaces"]).status == 200
    assert seen == [threading.current_thread().name] * len(EVENT_SHAPES)

    from starlette.testclient import TestClient

    from functions.http_app import create_app

    seen.clear()
    with TestClient(create_app(), base_url="http://127.0.0.1") as client:
        _method, headers, body = requests_for(owner.token)["tools/call list_workspaces"]
        assert client.post("/api/mcp", headers=headers, content=body).status_code == 200
    assert len(seen) == 1 and seen[0].startswith("jentrix-http"), seen


def test_the_mcp_route_is_the_first_the_router_tries() -> None:
    """Nearly every request is a POST to /api/mcp; the router tries routes in order, so that
    route comes first (no other path starts with /api/mcp, so no match changes). The other
    methods on it still reach the 405 route, and the REST routes still match."""
    from starlette.routing import Match

    from functions.http_app import McpEndpoint, create_app

    app = create_app()
    first = app.router.routes[0]
    assert isinstance(first.app, McpEndpoint) and first.methods == {"POST"}

    def scope(method: str, path: str) -> dict:
        return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}

    def matched(method: str, path: str) -> list[str]:
        return [
            f"{r.path} {sorted(r.methods or [])}"
            for r in app.router.routes
            if r.matches(scope(method, path))[0] is Match.FULL
        ]

    assert matched("POST", "/api/mcp") == ["/api/mcp{rest:path} ['POST']"]
    assert matched("GET", "/api/mcp") == ["/api/mcp{rest:path} ['DELETE', 'GET', 'PATCH', 'PUT']"]
    assert matched("POST", "/api/artifacts/upload-grant") == ["/api/artifacts/upload-grant ['POST']"]
    assert matched("POST", "/api/tasks/T-1/attachments") == ["/api/tasks/{taskId}/attachments ['POST']"]
