"""`jentrix dev --gateway` (functions/local_gateway.py): the real authorizer, then the real Lambda
handler, on REST-API events, without Docker, against the local stack (DynamoDB Local).

Driven over HTTP by the official MCP SDK client (uvicorn serving the ASGI app), and request by
request through :func:`local_gateway.invoke` for the gateway's own answers (401, 404, 500), whose
bodies come from template.yaml's GatewayResponses and must parse as JSON-RPC.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from domain import auth
from functions import local_gateway
from tests.conftest import _free_port, make_actor, mcp_client, structured

INIT = json.dumps(
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_token_context", "arguments": {}}}
).encode()
USAGE_KEY = ("k", "usage-key-value-0123456789abcdef", "plan")


def _headers(token: str | None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "host": "127.0.0.1:9",
    }
    if token:
        headers["authorization"] = f"Bearer {token}"
    return headers


def _jsonrpc_error(reply: local_gateway.Reply) -> dict[str, Any]:
    body = json.loads(reply.body)
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    return body["error"]


def test_routes_are_the_templates():
    from cfnlint.decode import cfn_yaml

    from tests.test_template_sam import ROOT

    raw = cfn_yaml.load(str(ROOT / "template.yaml"))
    events = raw["Resources"]["McpFunction"]["Properties"]["Events"].values()
    declared = {
        (e["Properties"]["Method"].upper().replace("ANY", "*"), e["Properties"]["Path"])
        for e in events
        if e["Type"] == "Api"
    }
    assert {(verb, resource) for verb, _, resource in local_gateway.ROUTES} == declared


def test_a_call_runs_the_authorizer_then_the_function(stack):
    actor = make_actor("Gate", usage_key=USAGE_KEY)
    reply = local_gateway.invoke("POST", "/api/mcp", _headers(actor.token), INIT)
    assert reply.status == 200, reply.body
    body = json.loads(reply.body)
    assert body["id"] == 7 and not body["result"]["isError"]
    # the function saw the principal the authorizer resolved (the token was read by the authorizer)
    assert actor.user_id in json.dumps(body["result"]["structuredContent"])


@pytest.mark.parametrize("token", [None, "jx_pat_not-a-real-token", "garbage"], ids=["missing", "unknown", "malformed"])
def test_a_refused_token_gets_the_gateways_401_as_json_rpc(stack, token):
    reply = local_gateway.invoke("POST", "/api/mcp", _headers(token), INIT)
    assert reply.status == 401
    error = _jsonrpc_error(reply)
    assert error["data"]["error"]["code"] == "FORBIDDEN" and error["data"]["gateway"]["responseType"] == "UNAUTHORIZED"
    assert reply.headers["WWW-Authenticate"].startswith('Bearer realm="jentrix"')


def test_with_a_public_url_the_gateways_401_names_the_protected_resource_metadata(stack, monkeypatch):
    """template.yaml: with PublicUrl set, the UNAUTHORIZED challenge carries resource_metadata
    (an OAuth client starts sign-in from it); without, it cannot (docs/oauth.md)."""
    monkeypatch.setenv("JENTRIX_PUBLIC_URL", "https://mcp.example.com/jentrix/")
    reply = local_gateway.invoke("POST", "/api/mcp", _headers(None), INIT)
    assert reply.status == 401
    challenge = reply.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer realm="jentrix", resource_metadata=')
    assert (
        'resource_metadata="https://mcp.example.com/jentrix/.well-known/oauth-protected-resource/api/mcp"' in challenge
    )
    monkeypatch.delenv("JENTRIX_PUBLIC_URL")
    assert (
        "resource_metadata"
        not in local_gateway.invoke("POST", "/api/mcp", _headers(None), INIT).headers["WWW-Authenticate"]
    )


def test_a_token_without_a_usage_plan_key_is_refused_as_on_aws(stack, monkeypatch):
    actor = make_actor("NoKey")  # what `token create` without --aws makes
    monkeypatch.delenv("JENTRIX_REQUIRE_USAGE_KEY", raising=False)
    assert local_gateway.invoke("POST", "/api/mcp", _headers(actor.token), INIT).status == 401
    monkeypatch.setenv("JENTRIX_REQUIRE_USAGE_KEY", "false")  # what the dev stack sets (no usage plans locally)
    assert local_gateway.invoke("POST", "/api/mcp", _headers(actor.token), INIT).status == 200


def test_a_revoked_token_is_refused_at_once(stack):
    """No authorizer cache locally: revocation takes effect on the next request."""
    actor = make_actor("Revoked", usage_key=USAGE_KEY)
    assert local_gateway.invoke("POST", "/api/mcp", _headers(actor.token), INIT).status == 200
    principal = auth.authenticate(actor.token)
    auth.revoke_token(principal.user_id, principal.token_id)
    assert local_gateway.invoke("POST", "/api/mcp", _headers(actor.token), INIT).status == 401


def test_a_route_the_api_lacks_is_the_gateways_404(stack):
    reply = local_gateway.invoke("POST", "/api/nothing-here", _headers(None), b"{}")
    assert reply.status == 404
    error = _jsonrpc_error(reply)
    assert (
        error["data"]["error"]["code"] == "NOT_FOUND"
        and error["data"]["gateway"]["responseType"] == "MISSING_AUTHENTICATION_TOKEN"
    )
    # GET on /api/mcp is routed (ANY) and the function answers it, not the gateway
    actor = make_actor("Getter", usage_key=USAGE_KEY)
    assert local_gateway.invoke("GET", "/api/mcp", _headers(actor.token), b"").status == 405


def test_an_authorizer_failure_is_the_gateways_500(stack, monkeypatch):
    """A fault: the token lookup raises, as it does when DynamoDB is unreachable (faking it
    here keeps the session's DynamoDB Local usable for the other tests)."""

    def outage(secret: str) -> None:
        raise ConnectionError("DynamoDB unreachable")

    monkeypatch.setattr(auth, "authenticate", outage)
    reply = local_gateway.invoke("POST", "/api/mcp", _headers("jx_pat_whatever"), INIT)
    assert reply.status == 500 and reply.headers["Retry-After"] == "5"
    error = _jsonrpc_error(reply)
    assert (
        error["data"]["error"]["code"] == "INTERNAL"
        and error["data"]["gateway"]["responseType"] == "AUTHORIZER_FAILURE"
    )
    assert error["data"]["correlationId"]


@pytest.fixture
def gateway_url(stack):
    import uvicorn

    port = _free_port()
    from functions.cli import _gateway_with_pages

    # as `jentrix dev --gateway` serves it: /api/* through the gateway, the pages beside it
    app = _gateway_with_pages(local_gateway.asgi_app())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/api/mcp"
    server.should_exit = True
    thread.join(timeout=10)


async def test_an_mcp_client_works_through_the_local_gateway(gateway_url):
    actor = make_actor("Sdk", usage_key=USAGE_KEY)
    async with mcp_client(gateway_url, actor.token) as client:
        tools = await client.list_tools()
        assert any(t.name == "create_board" for t in tools.tools)
        board = structured(
            await client.call_tool("create_board", {"workspaceId": actor.workspace_id, "name": "Through the gateway"})
        )
        assert board["board"]["name"] == "Through the gateway"
    import httpx2

    async with httpx2.AsyncClient(timeout=30) as http:
        refused = await http.post(gateway_url, content=INIT, headers={"content-type": "application/json"})
    assert refused.status_code == 401 and refused.json()["error"]["data"]["error"]["code"] == "FORBIDDEN"


async def test_the_gateway_switch_still_serves_the_oauth_pages(gateway_url):
    import httpx2

    base = gateway_url.removesuffix("/api/mcp")
    async with httpx2.AsyncClient(timeout=30) as http:
        meta = await http.get(f"{base}/.well-known/oauth-authorization-server")
    assert meta.status_code == 200 and meta.json()["issuer"].startswith(base)


def test_jentrix_dev_has_the_gateway_switch():
    from functions.cli import build_parser, cmd_dev

    args = build_parser().parse_args(["dev", "--gateway", "--stage", "v1"])
    assert args.func is cmd_dev and args.gateway is True and args.stage == "v1"
    assert build_parser().parse_args(["dev"]).gateway is False
