"""Console sign-in delegated to an OpenID Connect provider (the deployed path; Cognito by default):
a small provider on loopback, written here, issues RS256 ID tokens; the console runs the code flow
with PKCE, state and nonce over real HTTP, verifies the token with Authlib, and starts a session for
the verified e-mail (creating the user the first time)."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest

from domain import auth
from tests.oauth_support import start_server

CLIENT_ID = "console-client"


class Provider:
    def __init__(self) -> None:
        from authlib.jose import JsonWebKey

        self.key = JsonWebKey.generate_key("RSA", 2048, {"kid": "k1"}, is_private=True)
        self.codes: dict[str, dict[str, str]] = {}
        self.email = ""
        self.nonce_override: str | None = None
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def _json(self, body: Any, status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path == "/.well-known/openid-configuration":
                    self._json(
                        {
                            "issuer": provider.issuer,
                            "authorization_endpoint": provider.issuer + "/authorize",
                            "token_endpoint": provider.issuer + "/token",
                            "jwks_uri": provider.issuer + "/jwks",
                        }
                    )
                elif url.path == "/jwks":
                    self._json({"keys": [provider.key.as_dict(is_private=False)]})
                elif url.path == "/authorize":
                    q = {k: v[0] for k, v in parse_qs(url.query).items()}
                    code = uuid.uuid4().hex
                    provider.codes[code] = q
                    self.send_response(302)
                    self.send_header(
                        "Location", q["redirect_uri"] + "?" + urlencode({"code": code, "state": q["state"]})
                    )
                    self.end_headers()
                else:
                    self._json({}, 404)

            def do_POST(self) -> None:
                form = {
                    k: v[0] for k, v in parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode()).items()
                }
                asked = provider.codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if asked is None or challenge != asked["code_challenge"] or form.get("client_id") != CLIENT_ID:
                    self._json({"error": "invalid_grant"}, 400)
                    return
                from authlib.jose import jwt

                now = int(time.time())
                claims = {
                    "iss": provider.issuer,
                    "aud": CLIENT_ID,
                    "sub": uuid.uuid4().hex,
                    "iat": now,
                    "exp": now + 300,
                    "nonce": provider.nonce_override or asked["nonce"],
                    "email": provider.email,
                    "email_verified": True,
                    "name": "Hedy",
                }
                token = jwt.encode({"alg": "RS256", "kid": "k1"}, claims, provider.key).decode()
                self._json({"id_token": token, "access_token": "x", "token_type": "Bearer"})

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def provider() -> Any:
    p = Provider()
    yield p
    p.server.shutdown()


@pytest.fixture(scope="module")
def base(stack):
    from functions.web.dev import combined_app

    url, server, thread = start_server(combined_app())
    yield url
    server.should_exit = True
    thread.join(timeout=10)


async def _sign_in(base: str, http: Any) -> Any:
    start = await http.get(base + "/console/signin", params={"next": "/console/apps"})
    assert start.status_code == 303
    at_provider = await http.get(start.headers["location"])
    assert at_provider.status_code == 302
    return await http.get(at_provider.headers["location"])


async def test_oidc_sign_in_creates_a_session_for_the_verified_email(base, provider, monkeypatch):
    monkeypatch.setenv("JENTRIX_OIDC_ISSUER", provider.issuer)
    monkeypatch.setenv("JENTRIX_OIDC_CLIENT_ID", CLIENT_ID)
    provider.email = f"hedy-{uuid.uuid4().hex[:12]}@example.com"
    provider.nonce_override = None
    async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
        back = await _sign_in(base, http)
        assert back.status_code == 303 and back.headers["location"] == "/console/apps"
        apps = await http.get(base + "/console/apps")
        assert apps.status_code == 200 and provider.email in apps.text
    user = auth.user_by_email(provider.email)
    assert user is not None and user.displayName == "Hedy"


async def test_oidc_id_token_with_another_nonce_is_refused(base, provider, monkeypatch):
    monkeypatch.setenv("JENTRIX_OIDC_ISSUER", provider.issuer)
    monkeypatch.setenv("JENTRIX_OIDC_CLIENT_ID", CLIENT_ID)
    provider.email = f"eve-{uuid.uuid4().hex[:12]}@example.com"
    provider.nonce_override = "replayed-nonce"
    async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
        back = await _sign_in(base, http)
        assert back.status_code == 401 and "jentrix_session" not in back.headers.get("set-cookie", "")
    assert auth.user_by_email(provider.email) is None
    provider.nonce_override = None


async def test_oidc_callback_with_an_unknown_state_is_refused(base, provider, monkeypatch):
    monkeypatch.setenv("JENTRIX_OIDC_ISSUER", provider.issuer)
    monkeypatch.setenv("JENTRIX_OIDC_CLIENT_ID", CLIENT_ID)
    r = httpx2.get(base + "/console/oidc/callback", params={"code": "c", "state": "forged"})
    assert r.status_code == 401


def test_a_sign_in_state_is_taken_once_even_by_racing_callbacks(stack):
    """Two callbacks carrying one state (a double click, a replayed redirect): the conditional
    delete lets exactly one of them have it; later takes find nothing."""
    from concurrent.futures import ThreadPoolExecutor

    from domain import clock, console

    state = uuid.uuid4().hex
    console.save_oidc_state(state, nonce="n", verifier="v", return_to="/console", expires_ms=clock.now_ms() + 60_000)
    with ThreadPoolExecutor(8) as pool:
        taken = list(pool.map(lambda _: console.take_oidc_state(state), range(8)))
    winners = [row for row in taken if row is not None]
    assert len(winners) == 1 and winners[0].nonce == "n" and winners[0].returnTo == "/console"
    assert console.take_oidc_state(state) is None
    assert console.take_oidc_state("never-issued") is None
