"""The whole OAuth flow through the official MCP Python SDK client (``mcp.client.auth``'s
OAuthClientProvider) against the local server (MCP app + web app on one origin, as `jentrix dev`
serves them), over real HTTP: discovery from the 401, client ID metadata document or dynamic
registration, sign-in with a one-time link, consent, PKCE, tool calls with the ``tmo_`` token,
refresh (rotated), revocation from the connected-apps page. Plus the metadata documents and the
authorization endpoint's refusals."""

from __future__ import annotations

import functools
import time
import uuid
from typing import Any

import httpx2
import pytest

from domain import oauth
from functions.web import app as web_app
from functions.web import cimd
from tests.conftest import make_actor
from tests.oauth_support import Browser, DocumentHost, callback_of, form_fields, start_server

REDIRECT = "http://127.0.0.1:43117/callback"  # nothing listens: the "browser" hands the redirect to the client


@pytest.fixture(scope="module")
def base(stack) -> Any:
    from functions.web.dev import combined_app

    url, server, thread = start_server(combined_app())
    yield url
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def doc_host() -> Any:
    host = DocumentHost()
    previous = web_app.FETCHER[0]
    # The real fetcher over real HTTPS; only the trust store (our test CA) and the address rule
    # (loopback allowed, since the test host is on this machine) differ from production.
    web_app.FETCHER[0] = functools.partial(cimd.fetch, context=host.client_context, allow=lambda a: a.is_loopback)
    yield host
    web_app.FETCHER[0] = previous
    host.stop()


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info) -> None:
        self.client = info


def provider(base: str, browser: Browser, storage: MemoryStorage, *, metadata_url: str | None = None) -> Any:
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    pending: dict[str, str] = {}

    async def redirect_handler(url: str) -> None:
        pending.update(callback_of(await browser.authorize(url)))

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=pending.pop("code"), state=pending.pop("state", None), iss=pending.pop("iss", None)
        )

    meta = OAuthClientMetadata(
        client_name="SDK test client",
        redirect_uris=[REDIRECT],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        base + "/api/mcp", meta, storage, redirect_handler, callback_handler, client_metadata_url=metadata_url
    )


async def connect_and_call(base: str, auth: Any, tool: str = "get_token_context", args: dict | None = None) -> dict:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(auth=auth, timeout=60) as http,
        Client(streamable_http_client(base + "/api/mcp", http_client=http), mode="auto") as client,
    ):
        result = await client.call_tool(tool, args or {})
        assert not result.is_error, result.content
        return result.structured_content


def raw_ping(base: str, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    return httpx2.post(
        base + "/api/mcp", json=body, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}
    ).status_code


async def test_sdk_client_full_flow_with_dynamic_registration(base):
    actor = make_actor("Dcr")
    browser = Browser(base, actor.user_id)
    storage = MemoryStorage()
    auth = provider(base, browser, storage)
    ctx = await connect_and_call(base, auth)
    assert ctx["kind"] == "oauth" and ctx["displayName"] == "SDK test client" and ctx["userId"] == actor.user_id
    assert storage.client.client_id.startswith("dcr_") and storage.tokens.access_token.startswith("tmo_")
    consent = browser.consent_pages[0]
    assert "SDK test client" in consent and "127.0.0.1" in consent and "unverified" in consent
    assert callback_of(browser.redirects[0])["iss"] == base  # RFC 9207
    first = storage.tokens

    # refresh: make the SDK see its access token as expired; it rotates the refresh token
    auth.context.token_expiry_time = time.time() - 1
    ctx = await connect_and_call(base, auth)
    assert ctx["kind"] == "oauth"
    assert storage.tokens.access_token != first.access_token and storage.tokens.refresh_token != first.refresh_token
    assert len(browser.consent_pages) == 1  # no second consent

    # revoke from the connected-apps page (cookie session + CSRF)
    apps = await browser.http.get(base + "/console/apps")
    assert apps.status_code == 200 and "SDK test client" in apps.text
    grant_id = oauth.list_grants(actor.user_id)[0].grantId
    csrf = form_fields(apps.text)["csrf"]
    done = await browser.http.post(f"{base}/console/apps/{grant_id}/revoke", data={"csrf": csrf})
    assert done.status_code == 303
    assert raw_ping(base, storage.tokens.access_token) == 401
    refused = httpx2.post(
        base + "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": storage.tokens.refresh_token,
            "client_id": storage.client.client_id,
        },
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"


async def test_sdk_client_uses_a_client_id_metadata_document(base, doc_host):
    actor = make_actor("Cimd")
    path = f"/clients/{uuid.uuid4().hex[:12]}.json"
    url = doc_host.url(path)
    doc_host.document(
        path,
        {
            "client_id": url,
            "client_name": "Metadata Doc Client",
            "redirect_uris": ["http://127.0.0.1/callback"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        },
        headers={"Cache-Control": "max-age=600"},
    )
    browser = Browser(base, actor.user_id, workspace=actor.workspace_id)
    storage = MemoryStorage()
    ctx = await connect_and_call(base, provider(base, browser, storage, metadata_url=url))
    assert storage.client.client_id == url  # no registration happened
    assert ctx["displayName"] == "Metadata Doc Client" and ctx["workspaceId"] == actor.workspace_id
    assert "localhost" in browser.consent_pages[0] and "Metadata Doc Client" in browser.consent_pages[0]
    hits = doc_host.hits.count(path)
    # the host goes down: the cached copy keeps the client working
    doc_host.routes.pop(path)
    browser2 = Browser(base, actor.user_id)
    await connect_and_call(base, provider(base, browser2, MemoryStorage(), metadata_url=url))
    assert doc_host.hits.count(path) == hits  # fresh copy, not refetched


def test_metadata_documents(base):
    prm = httpx2.get(base + "/.well-known/oauth-protected-resource/api/mcp").json()
    assert prm == {
        "resource": base + "/api/mcp",
        "authorization_servers": [base],
        "scopes_supported": ["read", "write", "admin"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Jentrix",
    }
    assert httpx2.get(base + "/.well-known/oauth-protected-resource").json() == prm
    meta = httpx2.get(base + "/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == base and meta["code_challenge_methods_supported"] == ["S256"]
    assert (
        "none" in meta["token_endpoint_auth_methods_supported"]
        and meta["authorization_response_iss_parameter_supported"] is True
    )
    assert meta["client_id_metadata_document_supported"] is True and "offline_access" not in meta["scopes_supported"]
    assert httpx2.get(base + "/.well-known/openid-configuration").json() == meta


def test_issuer_follows_the_gateway_stage():
    """Behind an execute-api host the stage is part of every public URL, so of the issuer too."""
    from functions import public_url

    scope = {
        "aws.event": {"requestContext": {"domainName": "abc.execute-api.eu-west-1.amazonaws.com", "stage": "prod"}},
        "headers": [],
    }
    assert public_url.issuer(scope) == "https://abc.execute-api.eu-west-1.amazonaws.com/prod"
    assert public_url.resource(scope) == "https://abc.execute-api.eu-west-1.amazonaws.com/prod/api/mcp"
    assert (
        public_url.resource_metadata_url(scope)
        == "https://abc.execute-api.eu-west-1.amazonaws.com/prod/.well-known/oauth-protected-resource/api/mcp"
    )


async def _register(base: str, redirect: str = REDIRECT) -> str:
    r = httpx2.post(
        base + "/oauth/register",
        json={"client_name": "Neg", "redirect_uris": [redirect], "token_endpoint_auth_method": "none"},
    )
    assert r.status_code == 201, r.text
    return r.json()["client_id"]


async def test_redirect_uri_must_match_exactly_except_loopback_port(base):
    actor = make_actor("Redir")
    client_id = await _register(base, "http://127.0.0.1:5555/cb")
    browser = Browser(base, actor.user_id)
    await browser.sign_in()
    q = {
        "response_type": "code",
        "client_id": client_id,
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
        "state": "s",
    }
    other_port = await browser.http.get(
        base + "/oauth/authorize", params={**q, "redirect_uri": "http://127.0.0.1:6000/cb"}
    )
    assert other_port.status_code == 200  # RFC 8252 §7.3: any loopback port
    for bad in ("http://127.0.0.1:5555/other", "https://evil.example/cb", "http://127.0.0.1.evil.example:5555/cb"):
        r = await browser.http.get(base + "/oauth/authorize", params={**q, "redirect_uri": bad})
        assert r.status_code == 400 and "location" not in r.headers, bad
    plain = await browser.http.get(
        base + "/oauth/authorize",
        params={**q, "redirect_uri": "http://127.0.0.1:5555/cb", "code_challenge_method": "plain"},
    )
    assert plain.status_code == 303 and callback_of(plain.headers["location"])["error"] == "invalid_request"


async def test_consent_post_needs_the_csrf_token_and_a_live_session(base):
    actor = make_actor("Csrf")
    client_id = await _register(base)
    browser = Browser(base, actor.user_id)
    await browser.sign_in()
    q = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": "y" * 43,
        "code_challenge_method": "S256",
        "state": "s",
    }
    page = await browser.http.get(base + "/oauth/authorize", params=q)
    fields = {**form_fields(page.text), "decision": "allow", "workspace": ""}
    assert "default-src 'none'" in page.headers["content-security-policy"]
    missing = await browser.http.post(base + "/oauth/authorize", data={k: v for k, v in fields.items() if k != "csrf"})
    assert missing.status_code == 403 and "location" not in missing.headers
    from domain import console

    console.expire_session_now(browser.http.cookies.get("jentrix_session"))
    expired = await browser.http.post(base + "/oauth/authorize", data=fields)
    assert expired.status_code == 401 and "location" not in expired.headers


async def test_signin_link_works_once(base):
    from functions.cli import signin_url

    actor = make_actor("Once")
    link = signin_url(base, actor.user_id)
    async with httpx2.AsyncClient(follow_redirects=False) as http:
        first = await http.get(link)
        assert (
            first.status_code == 303
            and "httponly" in first.headers["set-cookie"].lower()
            and "samesite=lax" in first.headers["set-cookie"].lower()
        )
        assert "secure" not in first.headers["set-cookie"].lower()  # loopback: no TLS here
        again = await http.get(link)
        assert again.status_code == 401


@pytest.mark.parametrize("case", ["too_big", "wrong_client_id", "redirect", "secret_client", "slow"])
def test_metadata_document_refusals(stack, doc_host, case, monkeypatch):
    path = f"/bad/{case}-{uuid.uuid4().hex[:12]}.json"
    url = doc_host.url(path)
    doc = {"client_id": url, "client_name": "Bad", "redirect_uris": ["http://127.0.0.1/cb"]}
    if case == "too_big":
        doc["padding"] = "x" * (cimd.MAX_BYTES + 10)
        doc_host.document(path, doc)
    elif case == "wrong_client_id":
        doc_host.document(path, {**doc, "client_id": doc_host.url("/someone-else.json")})
    elif case == "redirect":
        doc_host.document(path, doc, status=302, headers={"Location": doc_host.url("/elsewhere.json")})
    elif case == "secret_client":
        doc_host.document(path, {**doc, "token_endpoint_auth_method": "client_secret_basic"})
    else:
        monkeypatch.setattr(cimd, "TIMEOUT_SECONDS", 1.0)
        doc_host.document(path, doc, delay=2.5)
    with pytest.raises(cimd.DocumentError):
        cimd.resolve(url, web_app.FETCHER[0])


def test_metadata_document_on_a_private_address_is_refused(stack):
    """The production rule (no ``allow``): loopback and private addresses are refused before any connection."""
    for url in (
        "https://localhost/client.json",
        "https://127.0.0.1/client.json",
        "https://10.0.0.1/c.json",
        "https://[::ffff:127.0.0.1]/c.json",
    ):
        with pytest.raises(cimd.DocumentError, match="non-public"):
            cimd.fetch(url)
    for url in ("http://example.com/c.json", "https://example.com/", "https://u:p@example.com/c.json"):
        with pytest.raises(cimd.DocumentError):
            cimd.check_url(url)


def test_token_endpoint_tells_unknown_clients_to_register_again(base):
    r = httpx2.post(
        base + "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": "dcr_gone"}
    )
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"


async def test_personal_access_token_page_creates_once_lists_and_revokes(base):
    """The PAT page: the secret appears in the creation answer only; the token works on /api/mcp
    at once; revoking it from the page stops it; every form needs the CSRF token."""
    actor = make_actor("Pat")
    browser = Browser(base, actor.user_id)
    await browser.sign_in()
    page = await browser.http.get(base + "/console/tokens")
    assert page.status_code == 200 and 'id="no-tokens"' not in page.text  # make_actor minted one already
    csrf = form_fields(page.text)["csrf"]
    refused = await browser.http.post(base + "/console/tokens", data={"name": "ci", "scopes": "read"})
    assert refused.status_code == 403
    made = await browser.http.post(
        base + "/console/tokens",
        data={"csrf": csrf, "name": "ci bot", "scopes": "read", "workspace": actor.workspace_id},
    )
    assert made.status_code == 201
    import re

    secret = re.search(r'<code id="secret">(tm_[A-Za-z0-9]+)</code>', made.text).group(1)
    assert raw_ping(base, secret) == 200
    again = await browser.http.get(base + "/console/tokens")
    assert secret not in again.text and "ci bot" in again.text
    from domain import auth

    row = next(t for t in auth.list_tokens(actor.user_id) if t.displayName == "ci bot")
    assert row.scopes == ["read"] and row.workspaceId == actor.workspace_id and row.holder == "agent"
    done = await browser.http.post(f"{base}/console/tokens/{row.tokenId}/revoke", data={"csrf": csrf})
    assert done.status_code == 303
    auth.PAT_VERIFIER.clear()
    assert raw_ping(base, secret) == 401
