"""The Lambda authorizer and the app's trust in its context (template.yaml, functions/authorizer.py).

* The authorizer runs the app's own token check: unknown, revoked, expired or keyless tokens
  raise ``Unauthorized`` (API Gateway's 401), valid ones return an Allow for the whole stage,
  the principal as context and the token's API key as ``usageIdentifierKey``.
* The MCP function trusts that context (no token read: tests/test_request_budget.py pins it)
  only when it arrives inside a Lambda event; a request that reaches the app over HTTP with the
  same Authorization header is authenticated from the token, and a bogus one gets 401.
"""

from __future__ import annotations

import json

import httpx2
import pytest

from domain import auth, clock
from tests.aws_events import LambdaContext, answer, authorizer_event, mcp_headers, rest_event, tools_call
from tests.conftest import make_actor

KEY = ("k-test", "usage-key-value-0123456789abcdef", "plan-test")


@pytest.fixture
def aws_actor(stack):
    return make_actor("Aws", usage_key=KEY, scopes=["write"], display_name="Bot", emoji="🤖")


def _authorize(token: str | None) -> dict:
    from functions.authorizer import handler

    return handler(authorizer_event(token), LambdaContext())


def test_valid_token_is_allowed_with_context_and_usage_key(aws_actor):
    out = _authorize(aws_actor.token)
    assert out["principalId"] == aws_actor.user_id
    assert out["usageIdentifierKey"] == KEY[1]
    (statement,) = out["policyDocument"]["Statement"]
    # The whole stage: API Gateway reuses a cached answer on every route and method.
    assert statement == {
        "Action": "execute-api:Invoke",
        "Effect": "Allow",
        "Resource": "arn:aws:execute-api:us-east-1:123456789012:a1b2c3d4e5/prod/*",
    }
    ctx = out["context"]
    assert all(isinstance(v, str) for v in ctx.values())  # API Gateway context values are flat
    assert aws_actor.token not in json.dumps(out)
    principal = auth.principal_from_context(ctx)
    assert (principal.user_id, principal.stored_scopes, principal.scopes, principal.display_name, principal.emoji) == (
        aws_actor.user_id,
        ("write",),
        ("read", "write"),
        "Bot",
        "🤖",
    )


@pytest.mark.parametrize("case", ["missing", "not bearer", "unknown", "revoked", "expired", "no usage key"])
def test_bad_tokens_are_unauthorized_not_denied(stack, case):
    from functions.authorizer import Unauthorized

    if case == "missing":
        token = None
    elif case == "not bearer":
        token = None
        event = authorizer_event(None)
        event["headers"] = {"authorization": "Basic dXNlcjpwdw=="}
    elif case == "unknown":
        token = "tm_" + "x" * 43
    elif case == "no usage key":
        token = make_actor("Plain").token
    else:
        actor = make_actor(
            "Gone", usage_key=KEY, expires_at=clock.iso(clock.now_ms() - 1000) if case == "expired" else None
        )
        token = actor.token
        if case == "revoked":
            (row,) = auth.list_tokens(actor.user_id)
            auth.revoke_token(actor.user_id, row.tokenId)
    from functions.authorizer import handler

    event = event if case == "not bearer" else authorizer_event(token)
    with pytest.raises(Unauthorized) as raised:
        handler(event, LambdaContext())
    assert str(raised.value) == "Unauthorized"  # the exact message API Gateway maps to 401


def test_app_trusts_the_authorizer_context_inside_a_lambda_event(aws_actor):
    from functions.lambda_handler import handler

    ctx = _authorize(aws_actor.token)["context"]
    # No Authorization header at all: the context alone identifies the caller.
    event = rest_event("POST", "/api/mcp", mcp_headers(None), tools_call("get_token_context", {}), authorizer=ctx)
    status, _, body = answer(handler(event, LambdaContext()))
    assert status == 200, body
    result = body["result"]["structuredContent"]
    assert json.dumps(result).count(aws_actor.user_id) >= 1


def test_expired_context_from_a_stale_gateway_cache_is_refused(aws_actor):
    from functions.lambda_handler import handler

    ctx = {**_authorize(aws_actor.token)["context"], "jentrixExpiresAt": clock.iso(clock.now_ms() - 1000)}
    event = rest_event(
        "POST", "/api/mcp", mcp_headers(aws_actor.token), tools_call("get_token_context", {}), authorizer=ctx
    )
    status, headers, _ = answer(handler(event, LambdaContext()))
    assert status == 401 and headers["www-authenticate"].startswith("Bearer ")


@pytest.mark.parametrize("expiry", ["tomorrow", "2026-13-45T99:00:00Z", "9" * 40])
def test_a_context_with_an_unreadable_expiry_is_answered_in_json(aws_actor, expiry):
    """An expiry the app cannot parse is a server-side fault: a JSON-RPC error (500, correlation
    id, the request's id) on the MCP endpoint and the INTERNAL envelope on the REST routes; never
    a plain-text 500, and the context is not trusted."""
    from functions.lambda_handler import handler

    ctx = {**_authorize(aws_actor.token)["context"], "jentrixExpiresAt": expiry}
    request = tools_call("get_token_context", {})
    event = rest_event("POST", "/api/mcp", mcp_headers(None), request, authorizer=ctx)
    status, headers, body = answer(handler(event, LambdaContext()))
    assert status == 500 and headers["content-type"].startswith("application/json"), body
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == -32603, body
    assert body["error"]["data"]["correlationId"] in body["error"]["message"]
    assert body["id"] == json.loads(request)["id"]
    event = rest_event("POST", "/api/artifacts/upload-grant", mcp_headers(None), b"{}", authorizer=ctx)
    status, headers, body = answer(handler(event, LambdaContext()))
    assert status == 500 and headers["content-type"].startswith("application/json"), body
    assert body["error"]["code"] == "INTERNAL" and "correlation id" in body["error"]["message"], body


def test_a_direct_http_request_cannot_borrow_the_authorizer_path(server_url, aws_actor):
    """uvicorn has no Lambda event: whatever the client sends, the token itself is checked."""
    body = tools_call("get_token_context", {})
    ctx = _authorize(aws_actor.token)["context"]
    ascii_ctx = {k: v for k, v in ctx.items() if v.isascii()}
    forged = {
        **mcp_headers("tm_" + "y" * 43),
        "x-amzn-requestcontext": json.dumps({"authorizer": ascii_ctx}),
        **ascii_ctx,
    }
    r = httpx2.post(server_url, content=body, headers=forged, timeout=30)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer ")
    # And the genuine token still works there, read from the table.
    r = httpx2.post(
        server_url, content=tools_call("get_token_context", {}), headers=mcp_headers(aws_actor.token), timeout=30
    )
    assert r.status_code == 200 and not r.json()["result"]["isError"]


def test_a_lambda_event_without_authorizer_context_checks_the_token(aws_actor):
    """sam local or a misconfigured route: no context means the app reads the token itself."""
    from functions.lambda_handler import handler

    event = rest_event("POST", "/api/mcp", mcp_headers("tm_" + "z" * 43), tools_call("get_token_context", {}))
    status, _, _ = answer(handler(event, LambdaContext()))
    assert status == 401


def test_sam_local_lets_dev_tokens_through_without_a_usage_key(stack, monkeypatch):
    """The template sets JENTRIX_REQUIRE_USAGE_KEY=false only with a local DynamoDB endpoint."""
    monkeypatch.setenv("JENTRIX_REQUIRE_USAGE_KEY", "false")
    out = _authorize(make_actor("Local").token)
    assert "usageIdentifierKey" not in out and out["policyDocument"]["Statement"][0]["Effect"] == "Allow"
