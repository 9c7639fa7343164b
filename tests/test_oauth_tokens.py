"""OAuth access tokens (``tmo_``) on the MCP endpoint: accepted where PATs are, bound to one
audience, scoped with a 403 step-up challenge, rotated refresh tokens with reuse detection, and
revocation (docs/oauth.md). The grants are made through domain.oauth directly; the whole browser
flow through the SDK client is tests/test_oauth_flow.py."""

from __future__ import annotations

import base64
import hashlib
import secrets

import httpx2
import pytest

from domain import oauth
from tests.conftest import envelope, make_actor, mcp_client, structured


def _verifier() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def grant(
    actor, resource: str, scopes=("read", "write"), workspace_id=None, client_name="Test Client"
) -> tuple[oauth.TokenSet, str]:
    client = oauth.register_client(client_name, ["http://127.0.0.1:33418/callback"])
    verifier, challenge = _verifier()
    code = oauth.issue_code(
        oauth.Consent(
            actor.user_id,
            client.clientId,
            client_name,
            "http://127.0.0.1:33418/callback",
            challenge,
            list(scopes),
            workspace_id,
            resource,
        )
    )
    tokens = oauth.exchange_code(
        code=code,
        client_id=client.clientId,
        redirect_uri="http://127.0.0.1:33418/callback",
        code_verifier=verifier,
        resource=resource,
        expected_resource=resource,
    )
    return tokens, client.clientId


def ping(url: str, token: str | None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    return httpx2.post(url, json=body, headers=headers, timeout=30)


def call(url: str, token: str, tool: str, args: dict) -> httpx2.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
    return httpx2.post(url, json=body, headers=headers, timeout=30)


async def test_oauth_token_works_like_a_pat_and_reports_itself(server_url, stack):
    actor = make_actor("Olga")
    tokens, _ = grant(actor, server_url, client_name="Claude Code")
    assert tokens.access_token.startswith("tmo_") and tokens.expires_in == 3600
    async with mcp_client(server_url, tokens.access_token) as c:
        ctx = structured(await c.call_tool("get_token_context", {}))
        assert ctx["kind"] == "oauth" and ctx["displayName"] == "Claude Code" and ctx["holder"] == "agent"
        assert ctx["scopes"] == ["read", "write"] and ctx["userId"] == actor.user_id
        g = oauth.grant_of(actor.user_id, tokens.grant_id)
        assert (
            ctx["expiresAt"] == g.expiresAt and ctx["tokenId"] == tokens.grant_id
        )  # the grant's expiry, not the hour of the access token
        board = structured(await c.call_tool("create_board", {"workspaceId": actor.workspace_id, "name": "Via OAuth"}))
        assert board["board"]["name"] == "Via OAuth"


def test_missing_credentials_challenge_names_the_metadata(server_url, stack):
    resp = ping(server_url, None)
    assert resp.status_code == 401
    base = server_url.removesuffix("/api/mcp")
    assert resp.headers["www-authenticate"] == (
        f'Bearer realm="jentrix", resource_metadata="{base}/.well-known/oauth-protected-resource/api/mcp", scope="read write"'
    )


def test_a_valid_pat_never_draws_a_401(server_url, owner):
    resp = ping(server_url, owner.token)
    assert resp.status_code == 200 and "www-authenticate" not in resp.headers


def test_token_for_another_audience_is_refused(server_url, stack):
    actor = make_actor("Aud")
    tokens, _ = grant(actor, "https://elsewhere.example/api/mcp")
    resp = ping(server_url, tokens.access_token)
    assert resp.status_code == 401 and 'error="invalid_token"' in resp.headers["www-authenticate"]
    good, _ = grant(actor, server_url)
    assert ping(server_url, good.access_token).status_code == 200


def test_missing_scope_is_a_403_step_up_listing_every_scope(server_url, stack):
    actor = make_actor("Reader")
    tokens, _ = grant(actor, server_url, scopes=("read",))
    resp = call(server_url, tokens.access_token, "create_board", {"workspaceId": actor.workspace_id, "name": "No"})
    assert resp.status_code == 403
    challenge = resp.headers["www-authenticate"]
    assert (
        'error="insufficient_scope"' in challenge
        and 'scope="read write"' in challenge
        and "resource_metadata=" in challenge
    )
    admin = call(
        server_url, tokens.access_token, "delete_workspace", {"workspaceId": actor.workspace_id, "confirmName": "x"}
    )
    if admin.status_code == 403:
        assert 'scope="read write admin"' in admin.headers["www-authenticate"]
    assert call(server_url, tokens.access_token, "get_token_context", {}).status_code == 200


async def test_a_pat_without_the_scope_still_gets_the_envelope(server_url, stack):
    reader = make_actor("PatReader", scopes=["read"])
    async with mcp_client(server_url, reader.token) as c:
        env = envelope(await c.call_tool("create_board", {"workspaceId": reader.workspace_id, "name": "No"}))
        assert env["code"] == "FORBIDDEN"


def test_refresh_rotates_and_reuse_revokes_the_grant(server_url, stack):
    actor = make_actor("Rot")
    first, client_id = grant(actor, server_url)
    second = oauth.refresh(
        refresh_token=first.refresh_token, client_id=client_id, resource=server_url, expected_resource=server_url
    )
    assert second.refresh_token != first.refresh_token and second.access_token != first.access_token
    assert ping(server_url, second.access_token).status_code == 200
    with pytest.raises(oauth.OAuthError) as reused:
        oauth.refresh(
            refresh_token=first.refresh_token, client_id=client_id, resource=server_url, expected_resource=server_url
        )
    assert reused.value.error == "invalid_grant"
    assert ping(server_url, second.access_token).status_code == 401  # the whole grant went with it
    with pytest.raises(oauth.OAuthError):
        oauth.refresh(
            refresh_token=second.refresh_token, client_id=client_id, resource=server_url, expected_resource=server_url
        )
    assert oauth.grant_of(actor.user_id, first.grant_id).revokedReason == "refresh token reused"


def test_code_is_single_use_and_pkce_checked(server_url, stack):
    actor = make_actor("Pkce")
    client = oauth.register_client("Pkce", ["http://127.0.0.1:5000/cb"])
    verifier, challenge = _verifier()
    consent = oauth.Consent(
        actor.user_id, client.clientId, "Pkce", "http://127.0.0.1:5000/cb", challenge, ["read"], None, server_url
    )
    code = oauth.issue_code(consent)
    kwargs = {
        "client_id": client.clientId,
        "redirect_uri": "http://127.0.0.1:5000/cb",
        "resource": server_url,
        "expected_resource": server_url,
    }
    with pytest.raises(oauth.OAuthError, match="code_verifier"):
        oauth.exchange_code(code=code, code_verifier="wrong-" + verifier, **kwargs)
    with pytest.raises(oauth.OAuthError, match="redirect_uri"):
        oauth.exchange_code(
            code=code, code_verifier=verifier, **{**kwargs, "redirect_uri": "http://127.0.0.1:5000/other"}
        )
    with pytest.raises(oauth.OAuthError) as target:
        oauth.exchange_code(code=code, code_verifier=verifier, **{**kwargs, "resource": "https://evil.example/api/mcp"})
    assert target.value.error == "invalid_target"
    tokens = oauth.exchange_code(code=code, code_verifier=verifier, **kwargs)
    assert ping(server_url, tokens.access_token).status_code == 200
    with pytest.raises(oauth.OAuthError, match="already used"):
        oauth.exchange_code(code=code, code_verifier=verifier, **kwargs)
    assert ping(server_url, tokens.access_token).status_code == 401  # a replayed code revokes what it gave


def test_revocation_stops_the_access_token(server_url, stack):
    actor = make_actor("Rev")
    tokens, client_id = grant(actor, server_url)
    assert [g.grantId for g in oauth.list_grants(actor.user_id)] == [tokens.grant_id]
    oauth.revoke_token(tokens.refresh_token, client_id)
    assert ping(server_url, tokens.access_token).status_code == 401
    assert oauth.list_grants(actor.user_id) == []


def test_pinned_grant_answers_for_its_workspace(server_url, stack):
    actor = make_actor("Pin")
    tokens, _ = grant(actor, server_url, workspace_id=actor.workspace_id)
    resp = call(server_url, tokens.access_token, "get_token_context", {})
    assert resp.status_code == 200 and f'"workspaceId":"{actor.workspace_id}"' in resp.text.replace(" ", "")


def test_unknown_scope_is_refused():
    with pytest.raises(oauth.OAuthError) as err:
        oauth.parse_scopes("read offline_access")
    assert err.value.error == "invalid_scope"
    assert oauth.parse_scopes("write read") == ["read", "write"] and oauth.parse_scopes("") == ["read", "write"]


def test_lambda_authorizer_passes_oauth_tokens_with_the_shared_usage_key(stack, monkeypatch):
    """Deployed, the gateway's authorizer checks tmo_ tokens too: they carry no key of their own, so
    they get the stack's shared OAuth key (template.yaml), and the context keeps kind and audience
    for the app's per-call audience check."""
    from domain import auth
    from functions import authorizer

    monkeypatch.setenv("JENTRIX_OAUTH_USAGE_KEY", "jentrix-oauth-test-key")
    actor = make_actor("Gw")
    tokens, _ = grant(actor, "https://abc.execute-api.eu-west-1.amazonaws.com/prod/api/mcp")
    event = {
        "headers": {"Authorization": f"Bearer {tokens.access_token}"},
        "methodArn": "arn:aws:execute-api:eu-west-1:123456789012:abc/prod/POST/api/mcp",
        "requestContext": {"requestId": "r1"},
    }
    answer = authorizer.handler(event, None)
    assert answer["usageIdentifierKey"] == "jentrix-oauth-test-key"
    principal = auth.principal_from_context(answer["context"])
    assert (
        principal.kind == "oauth"
        and principal.audience == "https://abc.execute-api.eu-west-1.amazonaws.com/prod/api/mcp"
    )
    assert principal.token_id == tokens.grant_id and principal.grant_expires_at


def test_s256_matches_authlib():
    """Our PKCE S256 (domain.oauth.s256) against Authlib's implementation."""
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    for _ in range(20):
        v = secrets.token_urlsafe(48)
        assert oauth.s256(v) == create_s256_code_challenge(v)
