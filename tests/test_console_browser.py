"""The console in a real browser: Debian's Chromium, headless, driven by Playwright's Python API
(no browser download). Sign in with a one-time link, consent to a client (workspace pinned), the
redirect with code + iss, the code exchanged for a tmo_ token that works, connected apps listed and
disconnected, personal access tokens. Screenshots go to a temporary folder; with
JENTRIX_UPDATE_SCREENSHOTS=1 they replace docs/console/*.png (docs/console.md shows them), so an
ordinary run leaves the work tree clean."""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import shutil
from pathlib import Path
from urllib.parse import quote, urlencode

import httpx2
import pytest

from tests.conftest import make_actor
from tests.oauth_support import callback_of, start_server

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DOCS_SHOTS = Path(__file__).resolve().parent.parent / "docs" / "console"
CALLBACK = "http://127.0.0.1:43118/callback"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() or shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (scripts/setup.sh installs it)",
)


@pytest.fixture(scope="module")
def base(stack):
    from functions.web.dev import combined_app

    url, server, thread = start_server(combined_app())
    yield url
    server.should_exit = True
    thread.join(timeout=10)


def test_sign_in_consent_and_connected_apps_in_chromium(base, tmp_path):
    from playwright.sync_api import sync_playwright

    SHOTS = DOCS_SHOTS if os.environ.get("JENTRIX_UPDATE_SCREENSHOTS") == "1" else tmp_path

    from functions.cli import signin_url

    actor = make_actor("Grace", workspace="Apollo Guidance")
    reg = httpx2.post(base + "/oauth/register", json={"client_name": "Claude Code", "redirect_uris": [CALLBACK]}).json()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    authorize = "/oauth/authorize?" + urlencode(
        {
            "response_type": "code",
            "client_id": reg["client_id"],
            "redirect_uri": CALLBACK,
            "state": "st-1",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "scope": "read write",
            "resource": base + "/api/mcp",
        }
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 900, "height": 760})
        violations: list[str] = []
        page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
        redirected: list[str] = []
        page.route(
            "http://127.0.0.1:43118/**",
            lambda route: (
                redirected.append(route.request.url),
                route.fulfill(status=200, body="back in the client", content_type="text/plain"),
            ),
        )

        # not signed in: the authorization request sends the browser to the sign-in page
        page.goto(base + authorize)
        assert "/console/signin" in page.url and page.locator("h2").inner_text() == "Sign in"

        page.goto(signin_url(base, actor.user_id) + "&next=" + quote(authorize, safe=""))
        assert page.locator("#client-name").inner_text() == "Claude Code"
        assert page.locator("#redirect-host").inner_text() == "127.0.0.1"
        page.select_option("#workspace", actor.workspace_id)
        page.screenshot(path=str(SHOTS / "consent.png"), full_page=True)
        page.click("#allow")
        page.wait_for_url("http://127.0.0.1:43118/**")
        back = callback_of(redirected[-1])
        assert back["state"] == "st-1" and back["iss"] == base and back["code"]

        tokens = httpx2.post(
            base + "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": back["code"],
                "redirect_uri": CALLBACK,
                "client_id": reg["client_id"],
                "code_verifier": verifier,
                "resource": base + "/api/mcp",
            },
        ).json()
        ping = httpx2.post(
            base + "/api/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Authorization": f"Bearer {tokens['access_token']}", "Accept": "application/json"},
        )
        assert ping.status_code == 200

        page.goto(base + "/console/apps")
        assert (
            "Claude Code" in page.locator("#grants").inner_text()
            and actor.workspace_id in page.locator("#grants").inner_text()
        )
        page.screenshot(path=str(SHOTS / "connected-apps.png"), full_page=True)
        page.click("text=Disconnect")
        page.wait_for_selector("#no-apps")
        assert (
            httpx2.post(
                base + "/api/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Authorization": f"Bearer {tokens['access_token']}", "Accept": "application/json"},
            ).status_code
            == 401
        )

        # personal access tokens: created once (the secret shown on that answer only), listed
        page.goto(base + "/console/tokens")
        page.fill("#name", "CI bot")
        page.select_option("#scopes", "read")
        page.click("#create")
        secret = page.locator("#secret").inner_text()
        assert secret.startswith("tm_") and "CI bot" in page.locator("#tokens").inner_text()
        page.screenshot(path=str(SHOTS / "tokens.png"), full_page=True)
        page.goto(base + "/console/tokens")
        assert secret not in page.content()

        # the session cookie is HttpOnly and SameSite=Lax; no page broke its own CSP
        cookie = next(c for c in page.context.cookies() if c["name"] == "jentrix_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
        assert violations == []

        browser.close()
