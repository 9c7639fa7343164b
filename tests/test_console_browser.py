"""The console in a real browser: Debian's Chromium, headless, driven by Playwright's Python API
(no browser download). Sign in with a one-time link, consent to a client (workspace pinned), the
redirect with code + iss, the code exchanged for a tmo_ token that works, connected apps listed and
disconnected, personal access tokens; then an OWNER's approvals, invitation link, board view,
attachment upload and workspace deletion. One Chromium serves the module. Screenshots go to a temporary folder; with
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


@pytest.fixture(scope="module")
def chromium():
    """One Chromium for the whole module (a launch costs seconds); each test opens its own page."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


def shots_folder(tmp_path: Path) -> Path:
    folder = DOCS_SHOTS if os.environ.get("JENTRIX_UPDATE_SCREENSHOTS") == "1" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_sign_in_consent_and_connected_apps_in_chromium(base, chromium, tmp_path):
    SHOTS = shots_folder(tmp_path)

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
    context = chromium.new_context(viewport={"width": 900, "height": 760})
    page = context.new_page()
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
    context.close()


def _agent_call(token: str, tool: str, arguments: dict) -> dict:
    from domain import auth, pipeline
    from domain.catalog import registry

    outcome = pipeline.call_tool(registry().get(tool), arguments, auth.authenticate(token))
    assert outcome.result is not None, outcome.error
    return outcome.result


def test_approvals_invitations_board_upload_and_deletion_in_chromium(base, chromium, tmp_path):
    """An OWNER's walk through the workspace pages: grant operator authority to ADMINs on the
    workspaces page, approve an agent's parked invitation, make an
    invitation link, read the board (WIP counts), attach a file through the plain form, delete
    the workspace by typing its name. No page breaks its CSP; the writes are in the table."""
    import uuid

    from domain import ids
    from domain.store import attachments, governance, workspaces
    from functions.cli import signin_url

    SHOTS = shots_folder(tmp_path)
    owner = make_actor("Margaret", workspace="Lunar Module")
    ws = owner.workspace_id
    parked = _agent_call(
        owner.token,
        "invite_member",
        {"workspaceId": ws, "email": f"buzz-{uuid.uuid4().hex[:12]}@example.com", "role": "MEMBER"},
    )
    approval_id = parked["approval"]["id"]
    made = _agent_call(owner.token, "create_board", {"workspaceId": ws, "name": "Descent"})
    board_id, todo = made["board"]["id"], made["columns"][0]["id"]
    _agent_call(owner.token, "manage_columns", {"action": "rename", "columnId": todo, "name": "To do", "wipLimit": 3})
    label = _agent_call(
        owner.token, "manage_labels", {"action": "create", "boardId": board_id, "name": "guidance", "color": "#2156d9"}
    )["label"]
    titles = ["Check the 1202 alarm", "Align the platform", "Throttle down at 2 min", "Pick a landing spot"]
    tasks = [_agent_call(owner.token, "create_task", {"columnId": todo, "title": t})["task"] for t in titles]
    _agent_call(owner.token, "set_task_assignees", {"taskId": tasks[0]["id"], "userIds": [owner.user_id]})
    _agent_call(owner.token, "set_task_labels", {"taskId": tasks[0]["id"], "labelIds": [label["id"]]})

    context = chromium.new_context(viewport={"width": 1000, "height": 700})
    page = context.new_page()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(signin_url(base, owner.user_id) + "&next=" + quote(f"/console/w/{ws}/approvals", safe=""))

    # approvals: the parked call in plain words, approved with a click
    assert "Invite buzz-" in page.locator("#approvals").inner_text()
    page.screenshot(path=str(SHOTS / "approvals.png"), full_page=True)
    page.click("text=Approve")
    page.wait_for_selector("#done")
    assert governance.get_approval(ids.parse_approval(approval_id)).state == "APPROVED"

    # the workspaces page: the OWNER grants operator authority to ADMINs with the row's form
    page.goto(f"{base}/console/workspaces")
    row_form = page.locator(f"form[action='/console/w/{ws}/operator-role']")
    row_form.locator("select").select_option("ADMIN")
    row_form.locator("button").click()
    page.wait_for_selector("#operator-saved")
    assert "ADMIN" in page.locator("#operator-saved").inner_text()
    assert workspaces.get(ws).operatorRole == "ADMIN"
    page.screenshot(path=str(SHOTS / "workspaces.png"), full_page=True)

    # invitations: a link made on the page
    page.goto(f"{base}/console/w/{ws}/invitations")
    page.fill("#email", f"mike-{uuid.uuid4().hex[:12]}@example.com")
    page.select_option("#role", "ADMIN")
    page.click("#invite")
    assert "/console/invite?s=inv_" in page.locator("#link").inner_text()
    page.screenshot(path=str(SHOTS / "invitations.png"), full_page=True)

    # the board, read-only: 4 tasks against a WIP limit of 3
    page.goto(f"{base}/console/boards/{board_id}")
    assert page.locator(".wip.over").first.inner_text() == "4 / 3"
    assert "Check the 1202 alarm" in page.locator("#board").inner_text()
    page.screenshot(path=str(SHOTS / "board.png"), full_page=True)

    # attach a file through the plain form
    page.goto(f"{base}/console/tasks/{tasks[0]['id']}/attachments")
    page.set_input_files(
        "#file", files=[{"name": "alarm-notes.md", "mimeType": "text/markdown", "buffer": b"# 1202\n\nGo.\n"}]
    )
    page.click("#upload")
    page.wait_for_selector("#added")
    assert "alarm-notes.md" in page.locator("#attachments").inner_text()
    page.screenshot(path=str(SHOTS / "upload.png"), full_page=True)
    (row,) = list(attachments.page(tasks[0]["id"], limit=5, start=None))
    assert row.fileName == "alarm-notes.md" and int(row.size) == 12

    # delete the workspace by typing its name
    page.goto(f"{base}/console/w/{ws}/delete")
    page.fill("#confirm-name", "Lunar Module")
    page.screenshot(path=str(SHOTS / "delete.png"), full_page=True)
    page.click("#delete")
    page.wait_for_selector("#deleted")
    assert workspaces.get(ws) is None
    assert violations == []
    context.close()
