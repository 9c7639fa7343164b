"""The official MCP Python SDK client's OAuth support with a person in a real browser: the SDK's
``OAuthClientProvider`` discovers the server from its 401, registers, and hands its authorization
URL to Debian's Chromium (headless, Playwright's async API), where the signed-in person picks a
workspace and clicks Allow on the consent page; the SDK then exchanges the code, calls a tool with
the ``tmo_`` token, refreshes it without a second consent, and is refused after the person
disconnects the app on the connected-apps page (issue 28's evidence; docs/oauth.md)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import make_actor
from tests.oauth_support import callback_of, start_server
from tests.test_console_browser import CHROMIUM, FLAGS
from tests.test_oauth_flow import MemoryStorage, connect_and_call

CALLBACK = "http://127.0.0.1:43119/callback"  # nothing listens: Chromium's request is answered by a route

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() or shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (scripts/setup.sh installs it)",
)


@pytest.fixture(scope="module")
def base(stack) -> Any:
    from functions.web.dev import combined_app

    url, server, thread = start_server(combined_app())
    yield url
    server.should_exit = True
    thread.join(timeout=10)


def _ping(base: str, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    return httpx2.post(base + "/api/mcp", json=body, headers=headers).status_code


async def test_the_sdk_client_signs_in_with_the_consent_clicked_in_chromium(base):
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata
    from playwright.async_api import async_playwright

    from functions.cli import signin_url

    actor = make_actor("Hopper", workspace="Harvard Mark I")
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = await (await chromium.new_context()).new_page()
        redirected: list[str] = []
        consents: list[str] = []

        async def answer(route: Any) -> None:
            redirected.append(route.request.url)
            await route.fulfill(status=200, body="back in the client", content_type="text/plain")

        await page.route("http://127.0.0.1:43119/**", answer)
        await page.goto(signin_url(base, actor.user_id))  # the person signs in once, before the app asks

        async def redirect_handler(url: str) -> None:
            await page.goto(url)
            consents.append(await page.locator("#client-name").inner_text())
            await page.select_option("#workspace", actor.workspace_id)
            await page.click("#allow")
            await page.wait_for_url("http://127.0.0.1:43119/**")

        async def callback_handler() -> AuthorizationCodeResult:
            back = callback_of(redirected[-1])
            return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))

        storage = MemoryStorage()
        meta = OAuthClientMetadata(
            client_name="SDK in Chromium",
            redirect_uris=[CALLBACK],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        auth = OAuthClientProvider(base + "/api/mcp", meta, storage, redirect_handler, callback_handler)

        ctx = await connect_and_call(base, auth)
        assert consents == ["SDK in Chromium"]
        assert ctx["kind"] == "oauth" and ctx["userId"] == actor.user_id and ctx["displayName"] == "SDK in Chromium"
        assert ctx["workspaceId"] == actor.workspace_id  # the pin chosen on the consent page
        assert callback_of(redirected[-1])["iss"] == base  # RFC 9207
        first = storage.tokens
        assert first.access_token.startswith("tmo_")

        # the SDK sees its access token as expired: it refreshes (rotated), no second consent
        auth.context.token_expiry_time = time.time() - 1
        again = await connect_and_call(base, auth)
        assert again["kind"] == "oauth" and consents == ["SDK in Chromium"]
        assert storage.tokens.access_token != first.access_token
        assert storage.tokens.refresh_token != first.refresh_token
        assert _ping(base, storage.tokens.access_token) == 200

        # the person disconnects the app in the browser; the SDK's token stops working
        await page.goto(base + "/console/apps")
        assert "SDK in Chromium" in await page.locator("#grants").inner_text()
        await page.click("text=Disconnect")
        await page.wait_for_selector("#no-apps")
        assert _ping(base, storage.tokens.access_token) == 401
        await chromium.close()
