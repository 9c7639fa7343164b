"""The console's workspace pages over real HTTP (docs/console.md): approvals, invitations, the
read-only board view, attachment upload and workspace deletion. Each page's access rules (no
session, non-member, MEMBER, ADMIN, OWNER, CSRF token missing) and its outcome, observed in
DynamoDB Local and the local S3. The Chromium walk is tests/test_console_browser.py."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import httpx2
import pytest

from tests.conftest import make_actor
from tests.oauth_support import start_server


@pytest.fixture(scope="module")
def base(stack) -> Any:
    from functions.web.app import create_web_app

    url, server, thread = start_server(create_web_app())
    yield url
    server.should_exit = True
    thread.join(timeout=10)


def browser(base: str, user_id: str) -> httpx2.Client:
    """A signed-in cookie-keeping client (redirects not followed, so tests see each 303)."""
    from functions.cli import signin_url

    client = httpx2.Client(follow_redirects=False, timeout=30)
    r = client.get(signin_url(base, user_id))
    assert r.status_code == 303, r.text
    return client


def csrf_of(text: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', text)
    assert found, text[:400]
    return html.unescape(found.group(1))


def member(workspace_id: str, name: str, role: str) -> Any:
    """A new user with ``role`` in ``workspace_id``."""
    from domain import auth
    from domain.store import members

    user = auth.create_user(f"{name.lower()}-{uuid.uuid4().hex[:12]}@example.com", name)
    members.add(workspace_id, user, role)
    return user


def agent_call(token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a catalog tool with an agent's token through the pipeline (as /api/mcp does)."""
    from domain import auth, pipeline
    from domain.catalog import registry

    principal = auth.authenticate(token)
    assert principal is not None and not principal.human
    outcome = pipeline.call_tool(registry().get(tool), arguments, principal)
    assert outcome.result is not None, outcome.error
    return outcome.result


# -- approvals --------------------------------------------------------------------------------
def parked_invitation(actor: Any, email: str, role: str = "MEMBER") -> str:
    out = agent_call(actor.token, "invite_member", {"workspaceId": actor.workspace_id, "email": email, "role": role})
    assert out["status"] == "PENDING_APPROVAL"
    return out["approval"]["id"]


def test_approvals_page_lists_in_plain_words_and_approve_applies(base):
    """An OWNER sees the agent's parked invitation as a sentence with the asker's e-mail; Approve
    flips it to APPROVED in the table, logs the decision with source ui, and the agent's identical
    call then goes through."""
    from domain import ids
    from domain.store import governance

    owner = make_actor("Olive", workspace="Approvals Co")
    invitee = f"bea-{uuid.uuid4().hex[:12]}@example.com"
    approval_id = parked_invitation(owner, invitee)
    client = browser(base, owner.user_id)
    page = client.get(f"{base}/console/w/{owner.workspace_id}/approvals")
    assert page.status_code == 200
    assert f"Invite {invitee} to join as MEMBER" in page.text and owner.email in page.text
    r = client.post(
        f"{base}/console/w/{owner.workspace_id}/approvals/{approval_id}",
        data={"csrf": csrf_of(page.text), "decision": "approve"},
    )
    assert r.status_code == 303
    row = governance.get_approval(ids.parse_approval(approval_id))
    assert row.state == "APPROVED" and row.decidedBy == owner.user_id
    entry = governance.history(owner.workspace_id)[0]
    assert entry.type == "approval.approved" and entry.source == "ui" and entry.actorId == owner.user_id
    again = agent_call(
        owner.token, "invite_member", {"workspaceId": owner.workspace_id, "email": invitee, "role": "MEMBER"}
    )
    assert again["status"] == "APPLIED"
    assert "no-approvals" in client.get(f"{base}/console/w/{owner.workspace_id}/approvals").text


def test_approvals_reject_and_access_rules(base):
    from domain import ids
    from domain.store import governance

    owner = make_actor("Orla", workspace="Approvals Rules")
    approval_id = parked_invitation(owner, f"cy-{uuid.uuid4().hex[:12]}@example.com")
    url = f"{base}/console/w/{owner.workspace_id}/approvals"
    decide = f"{url}/{approval_id}"

    def state() -> str:
        return governance.get_approval(ids.parse_approval(approval_id)).state

    # no session: GET sends to sign-in, POST is refused
    anon = httpx2.Client(follow_redirects=False)
    assert anon.get(url).status_code == 303 and "/console/signin" in anon.get(url).headers["location"]
    assert anon.post(decide, data={"decision": "approve"}).status_code == 401
    # a non-member sees no such workspace and cannot decide
    outsider = make_actor("Mallory", workspace="Elsewhere")
    out = browser(base, outsider.user_id)
    token = csrf_of(out.get(f"{base}/console/w/{outsider.workspace_id}/approvals").text)
    assert out.get(url).status_code == 404
    assert out.post(decide, data={"csrf": token, "decision": "approve"}).status_code == 404
    # a MEMBER may not list or decide
    plain = browser(base, member(owner.workspace_id, "Mo", "MEMBER").userId)
    assert plain.get(url).status_code == 403
    # CSRF token missing or wrong: nothing changes
    boss = browser(base, owner.user_id)
    good = csrf_of(boss.get(url).text)
    assert boss.post(decide, data={"decision": "approve"}).status_code == 403
    assert boss.post(decide, data={"decision": "approve", "csrf": good + "x"}).status_code == 403
    assert state() == "PENDING"
    # reject
    assert boss.post(decide, data={"decision": "reject", "csrf": good}).status_code == 303
    assert state() == "REJECTED"
    assert governance.history(owner.workspace_id)[0].type == "approval.rejected"
    # decided already: 409, unchanged
    assert boss.post(decide, data={"decision": "approve", "csrf": good}).status_code == 409
    assert state() == "REJECTED"


def test_an_admin_cannot_decide_what_needs_an_owner(base):
    """set_member_role needs OWNER: an ADMIN sees the request marked as such, and a POST is refused."""
    from domain import ids
    from domain.store import governance

    owner = make_actor("Oona", workspace="Ladder")
    admin = member(owner.workspace_id, "Ada", "ADMIN")
    target = member(owner.workspace_id, "Tim", "MEMBER")
    out = agent_call(
        owner.token,
        "set_member_role",
        {"workspaceId": owner.workspace_id, "userId": target.userId, "role": "ADMIN", "expectedRole": "MEMBER"},
    )
    approval_id = out["approval"]["id"]
    client = browser(base, admin.userId)
    page = client.get(f"{base}/console/w/{owner.workspace_id}/approvals")
    assert page.status_code == 200 and f"Change the role of {target.email} from MEMBER to ADMIN" in page.text
    assert "needs OWNER" in page.text
    r = client.post(
        f"{base}/console/w/{owner.workspace_id}/approvals/{approval_id}",
        data={"csrf": csrf_of(page.text), "decision": "approve"},
    )
    assert r.status_code == 403
    assert governance.get_approval(ids.parse_approval(approval_id)).state == "PENDING"


# -- invitations ------------------------------------------------------------------------------
def link_of(text: str) -> str:
    found = re.search(r'<code id="link">([^<]+)</code>', text)
    assert found, text[:600]
    return html.unescape(found.group(1))


def test_invitation_link_from_the_page_and_accepting_it_makes_a_member(base):
    """An ADMIN produces a link (invite_member + a link secret, logged source ui); the invitee
    lands on it signed in, reads what joining gives, accepts, and is a member with the role."""
    from domain import auth, ids
    from domain.store import governance, members

    owner = make_actor("Ivy", workspace="Invite Co")
    admin = member(owner.workspace_id, "Abe", "ADMIN")
    email = f"nell-{uuid.uuid4().hex[:12]}@example.com"
    client = browser(base, admin.userId)
    page = client.get(f"{base}/console/w/{owner.workspace_id}/invitations")
    assert page.status_code == 200 and "no-pending" in page.text
    made = client.post(
        f"{base}/console/w/{owner.workspace_id}/invitations",
        data={"csrf": csrf_of(page.text), "email": email, "role": "ADMIN"},
    )
    assert made.status_code == 201, made.text[:500]
    link = link_of(made.text)
    assert link.startswith(base + "/console/invite?s=inv_")
    (row,) = [i for i in governance.pending_invitations(owner.workspace_id) if i.email == email]
    assert row.role == "ADMIN" and row.invitedBy == admin.userId and row.secretDigest
    assert {(e.type, e.source) for e in governance.history(owner.workspace_id)[:2]} == {
        ("invitation.created", "ui"),
        ("invitation.link_issued", "ui"),
    }
    assert email in client.get(f"{base}/console/w/{owner.workspace_id}/invitations").text
    assert link not in client.get(f"{base}/console/w/{owner.workspace_id}/invitations").text  # shown once

    # the invitee: not signed in -> sign in and come back to the same link
    anon = httpx2.Client(follow_redirects=False)
    r = anon.get(link)
    assert r.status_code == 303 and "next=%2Fconsole%2Finvite%3Fs%3Dinv_" in r.headers["location"]
    invitee = auth.create_user(email, "Nell")
    guest = browser(base, invitee.userId)
    landing = guest.get(link)
    assert landing.status_code == 200 and "Invite Co" in landing.text and "as <strong" in landing.text
    assert "manage members" in landing.text and admin.email in landing.text
    assert guest.post(base + "/console/invite", data={"secret": link.split("s=")[1]}).status_code == 403  # no CSRF
    assert members.get(owner.workspace_id, invitee.userId) is None
    done = guest.post(base + "/console/invite", data={"csrf": csrf_of(landing.text), "secret": link.split("s=")[1]})
    assert done.status_code == 303 and "joined=" in done.headers["location"]
    assert members.get(owner.workspace_id, invitee.userId).role == "ADMIN"
    assert governance.get_invitation(ids.parse_invitation(row.invitationId)).state == "ACCEPTED"
    assert "Invite Co" in guest.get(base + done.headers["location"]).text
    assert guest.get(link).status_code == 404  # used


def test_invitation_access_rules(base):
    from domain import auth
    from domain.store import governance, members

    owner = make_actor("Iris", workspace="Invite Rules")
    url = f"{base}/console/w/{owner.workspace_id}/invitations"
    outsider = make_actor("Mallory", workspace="Elsewhere")
    out = browser(base, outsider.user_id)
    token = csrf_of(out.get(f"{base}/console/workspaces").text)
    assert out.get(url).status_code == 404
    assert out.post(url, data={"csrf": token, "email": "x@example.com", "role": "MEMBER"}).status_code == 404
    plain = browser(base, member(owner.workspace_id, "Max", "MEMBER").userId)
    assert plain.get(url).status_code == 403
    admin = browser(base, member(owner.workspace_id, "Ann", "ADMIN").userId)
    good = csrf_of(admin.get(url).text)
    assert admin.post(url, data={"email": "y@example.com", "role": "MEMBER"}).status_code == 403  # CSRF missing
    assert admin.post(url, data={"csrf": good, "email": "y@example.com", "role": "OWNER"}).status_code == 403
    assert governance.pending_invitations(owner.workspace_id) == []
    # a new link replaces the earlier one; a person signed in with another address cannot accept
    boss = browser(base, owner.user_id)
    email = f"zed-{uuid.uuid4().hex[:12]}@example.com"
    first = link_of(boss.post(url, data={"csrf": csrf_of(boss.get(url).text), "email": email, "role": "MEMBER"}).text)
    (row,) = governance.pending_invitations(owner.workspace_id)
    second = link_of(boss.post(f"{url}/{row.invitationId}/link", data={"csrf": csrf_of(boss.get(url).text)}).text)
    assert first != second
    stranger = make_actor("Sam", workspace=None)
    s_client = browser(base, stranger.user_id)
    assert s_client.get(first).status_code == 404
    landing = s_client.get(second)
    assert landing.status_code == 200
    refused = s_client.post(
        base + "/console/invite", data={"csrf": csrf_of(landing.text), "secret": second.split("s=")[1]}
    )
    assert refused.status_code == 403 and email in refused.text
    assert members.get(owner.workspace_id, stranger.user_id) is None
    assert auth.user_by_email(email) is None


# -- board view -------------------------------------------------------------------------------
def test_board_view_shows_wip_counts_tasks_and_pages(base, monkeypatch):
    """Members see columns with task count / WIP limit (over the limit marked), each task's key,
    title, assignees' names and labels, and a cursor link to the next page; non-members get 404."""
    from functions.web import app as web_app

    owner = make_actor("Bo", workspace="Board Co")
    ws = owner.workspace_id
    made = agent_call(owner.token, "create_board", {"workspaceId": ws, "name": "Launch <plan>"})
    board_id = made["board"]["id"]
    first = made["columns"][0]["id"]
    agent_call(owner.token, "manage_columns", {"action": "rename", "columnId": first, "name": "Todo", "wipLimit": 2})
    label = agent_call(
        owner.token, "manage_labels", {"action": "create", "boardId": board_id, "name": "urgent", "color": "#ff0000"}
    )
    tasks = [
        agent_call(owner.token, "create_task", {"columnId": first, "title": f"Task {i}"})["task"] for i in range(4)
    ]
    agent_call(owner.token, "set_task_assignees", {"taskId": tasks[0]["id"], "userIds": [owner.user_id]})
    agent_call(owner.token, "set_task_labels", {"taskId": tasks[0]["id"], "labelIds": [label["label"]["id"]]})
    monkeypatch.setattr(web_app, "BOARD_PAGE", 3)
    client = browser(base, member(ws, "Mia", "MEMBER").userId)
    listing = client.get(f"{base}/console/w/{ws}/boards")
    assert listing.status_code == 200 and f"/console/boards/{board_id}" in listing.text
    page = client.get(f"{base}/console/boards/{board_id}")
    assert page.status_code == 200
    assert "Launch &lt;plan&gt;" in page.text and "<plan>" not in page.text  # escaped
    assert re.search(r'class="wip over"[^>]*>4 / 2<', page.text)
    assert tasks[0]["key"] in page.text and "Task 0" in page.text and "Bo" in page.text and "urgent" in page.text
    assert "Task 3" not in page.text
    nxt = re.search(r'id="next" href="([^"]+)"', page.text)
    assert nxt
    second = client.get(base + html.unescape(nxt.group(1)))
    assert second.status_code == 200 and "Task 3" in second.text and "Task 0" not in second.text
    assert 'id="next"' not in second.text
    assert client.get(f"{base}/console/boards/{board_id}?cursor=bogus").status_code == 400
    outsider = make_actor("Mallory", workspace="Elsewhere")
    out = browser(base, outsider.user_id)
    assert out.get(f"{base}/console/boards/{board_id}").status_code == 404
    assert out.get(f"{base}/console/w/{ws}/boards").status_code == 404
    assert httpx2.get(f"{base}/console/boards/{board_id}").status_code == 303  # no session: sign in first


# -- attachment upload ------------------------------------------------------------------------
def board_with_task(owner: Any) -> tuple[str, dict[str, Any]]:
    made = agent_call(owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": "Files"})
    task = agent_call(owner.token, "create_task", {"columnId": made["columns"][0]["id"], "title": "Needs a file"})
    return made["board"]["id"], task["task"]


def test_upload_form_stores_the_file_in_s3_and_records_the_attachment(base):
    """A member's multipart post: grant, presigned PUT into the local S3, attach; the attachment
    row, the object's bytes and the activity row (source ui) are there; the page lists it."""
    from domain import objects
    from domain.settings import settings
    from domain.store import attachments
    from tests.tools_support import activity_rows

    owner = make_actor("Uma", workspace="Upload Co")
    board_id, task = board_with_task(owner)
    client = browser(base, member(owner.workspace_id, "Mel", "MEMBER").userId)
    url = f"{base}/console/tasks/{task['id']}/attachments"
    page = client.get(url)
    assert page.status_code == 200 and "no-attachments" in page.text and "text/markdown" in page.text
    body = b"# Findings\n\nThe build is green.\n"
    r = client.post(
        url,
        data={"csrf": csrf_of(page.text)},
        files={"file": ("notes.md", body, "application/octet-stream")},
    )
    assert r.status_code == 303, r.text[:500]
    (row,) = list(attachments.page(task["id"], limit=10, start=None))
    assert row.fileName == "notes.md" and row.contentType == "text/markdown" and int(row.size) == len(body)
    assert objects.client().get_object(Bucket=settings.artifact_bucket, Key=row.objectKey)["Body"].read() == body
    added = [a for a in activity_rows(board_id) if a["type"]["S"] == "attachment.added"]
    assert len(added) == 1 and added[0]["source"]["S"] == "ui"
    listed = client.get(base + r.headers["location"])
    assert "notes.md" in listed.text and 'id="added"' in listed.text


def test_upload_refusals(base, monkeypatch):
    from domain import console_actions
    from domain.store import attachments

    owner = make_actor("Uli", workspace="Upload Rules")
    _, task = board_with_task(owner)
    url = f"{base}/console/tasks/{task['id']}/attachments"
    outsider = make_actor("Mallory", workspace="Elsewhere")
    out = browser(base, outsider.user_id)
    token = csrf_of(out.get(f"{base}/console/workspaces").text)
    assert out.get(url).status_code == 404
    assert out.post(url, data={"csrf": token}, files={"file": ("a.txt", b"x", "text/plain")}).status_code == 404
    client = browser(base, owner.user_id)
    good = csrf_of(client.get(url).text)
    assert client.post(url, files={"file": ("a.txt", b"x", "text/plain")}).status_code == 403  # CSRF missing
    bad_type = client.post(url, data={"csrf": good}, files={"file": ("a.exe", b"MZ", "application/x-msdownload")})
    assert bad_type.status_code == 400 and "not an accepted upload type" in bad_type.text
    monkeypatch.setattr(console_actions, "CONSOLE_UPLOAD_MAX", 8)
    big = client.post(url, data={"csrf": good}, files={"file": ("a.txt", b"123456789", "text/plain")})
    assert big.status_code == 413
    assert list(attachments.page(task["id"], limit=10, start=None)) == []


# -- workspace deletion -----------------------------------------------------------------------
def items_naming(workspace_id: str) -> list[tuple[str, str]]:
    """Every item whose keys name the workspace (a test-side Scan, to observe the deletion)."""
    from domain.settings import settings
    from domain.store import db

    hex12 = workspace_id[3:]
    found: list[tuple[str, str]] = []
    kwargs: dict[str, Any] = {"TableName": settings.table, "ProjectionExpression": "PK, SK"}
    while True:
        page = db.dynamodb_client().scan(**kwargs)
        found += [(i["PK"]["S"], i["SK"]["S"]) for i in page["Items"] if hex12 in i["PK"]["S"] or hex12 in i["SK"]["S"]]
        if "LastEvaluatedKey" not in page:
            return found
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_owner_deletes_the_workspace_by_typing_its_name(base):
    """Only an OWNER, only with the exact name and the CSRF token; then the workspace's items
    (members, boards, tasks, comments, attachments, activity, log, search postings, channels and
    proposed decisions) and its S3
    objects are gone, its agent token reaches nothing, and its slug is free."""
    from domain import objects
    from domain.settings import settings
    from domain.store import workspaces

    owner = make_actor("Dee", workspace="Doomed <Co>")
    ws = owner.workspace_id
    _, task = board_with_task(owner)
    agent_call(owner.token, "create_comment", {"taskId": task["id"], "body": "remember the milk"})
    posted = agent_call(
        owner.token, "mj_post", {"workspace": ws, "idempotency_key": "k1", "channel": "ideas", "text": "Drop it"}
    )
    agent_call(
        owner.token,
        "mj_promote_message",
        {
            "workspace": ws,
            "idempotency_key": "k2",
            "channel": "ideas",
            "message_id": posted["messageId"],
            "target": "decision",
        },
    )  # a channel, its message, the promotion and a proposed decision
    admin = browser(base, member(ws, "Adm", "ADMIN").userId)
    client = browser(base, owner.user_id)
    up = client.get(f"{base}/console/tasks/{task['id']}/attachments")
    assert (
        client.post(
            f"{base}/console/tasks/{task['id']}/attachments",
            data={"csrf": csrf_of(up.text)},
            files={"file": ("a.txt", b"bytes", "text/plain")},
        ).status_code
        == 303
    )
    final, _ = objects.workspace_prefixes(ws)
    assert objects.client().list_objects_v2(Bucket=settings.artifact_bucket, Prefix=final)["KeyCount"] == 1
    url = f"{base}/console/w/{ws}/delete"
    outsider = make_actor("Mallory", workspace="Elsewhere")
    out = browser(base, outsider.user_id)
    assert out.get(url).status_code == 404
    assert (
        out.post(
            url, data={"csrf": csrf_of(out.get(f"{base}/console/workspaces").text), "name": "Doomed <Co>"}
        ).status_code
        == 404
    )
    assert admin.get(url).status_code == 403
    assert (
        admin.post(
            url, data={"csrf": csrf_of(admin.get(f"{base}/console/workspaces").text), "name": "Doomed <Co>"}
        ).status_code
        == 403
    )
    page = client.get(url)
    assert page.status_code == 200 and "Doomed &lt;Co&gt;" in page.text
    assert client.post(url, data={"name": "Doomed <Co>"}).status_code == 403  # CSRF missing
    wrong = client.post(url, data={"csrf": csrf_of(page.text), "name": "doomed <co>"})
    assert wrong.status_code == 400
    assert workspaces.get(ws) is not None and len(items_naming(ws)) > 10
    done = client.post(url, data={"csrf": csrf_of(page.text), "name": "Doomed <Co>"})
    assert done.status_code == 303 and "deleted=" in done.headers["location"]
    assert workspaces.get(ws) is None
    left = items_naming(ws)
    assert left == [], left  # the search vocabulary too (tests/test_workspace_purge.py: every attribute)
    assert objects.client().list_objects_v2(Bucket=settings.artifact_bucket, Prefix=final)["KeyCount"] == 0
    assert client.get(f"{base}/console/w/{ws}/boards").status_code == 404
    assert ws not in client.get(f"{base}/console/workspaces").text
    assert 'id="deleted"' in client.get(base + done.headers["location"]).text
    from domain import auth, pipeline
    from domain.catalog import registry

    gone = pipeline.call_tool(registry().get("list_boards"), {"workspaceId": ws}, auth.authenticate(owner.token))
    assert gone.error["error"]["code"] == "NOT_FOUND"
    again = make_actor("Dee2", workspace="Doomed <Co>")
    assert workspaces.get(again.workspace_id).slug == "doomed-co"


def _operator_cell(text: str, workspace_id: str) -> str:
    """The operator-authority cell of one workspace's row on /console/workspaces."""
    row = next(r for r in text.split("<tr>") if workspace_id in r)
    return row.split("<td>")[3]


def test_owner_sets_the_operator_role_on_the_workspaces_page(base):
    """The OWNER's row has the form (CSRF-protected); an ADMIN sees the value read-only and is
    refused if it posts anyway, an outsider gets 404; each change is one log entry (source ui)."""
    from domain.store import governance, workspaces

    owner = make_actor("Opal", workspace="Ops <Co>")
    ws = owner.workspace_id
    admin_user = member(ws, "Adm", "ADMIN")
    client, admin = browser(base, owner.user_id), browser(base, admin_user.userId)
    url = f"{base}/console/w/{ws}/operator-role"
    page = client.get(f"{base}/console/workspaces")
    cell = _operator_cell(page.text, ws)
    assert f'action="/console/w/{ws}/operator-role"' in cell and '<option value="" selected>' in cell
    seen = _operator_cell(admin.get(f"{base}/console/workspaces").text, ws)
    assert "<form" not in seen and "OWNERs only" in seen  # read-only for a non-owner
    assert client.post(url, data={"role": "ADMIN"}).status_code == 403  # CSRF missing
    admin_csrf = csrf_of(admin.get(f"{base}/console/workspaces").text)
    assert admin.post(url, data={"csrf": admin_csrf, "role": "ADMIN"}).status_code == 403
    outsider = browser(base, make_actor("Mallory", workspace="Elsewhere").user_id)
    out_csrf = csrf_of(outsider.get(f"{base}/console/workspaces").text)
    assert outsider.post(url, data={"csrf": out_csrf, "role": "ADMIN"}).status_code == 404
    assert client.post(url, data={"csrf": csrf_of(page.text), "role": "MEMBER"}).status_code == 400
    assert workspaces.get(ws).operatorRole is None
    done = client.post(url, data={"csrf": csrf_of(page.text), "role": "ADMIN"})
    assert done.status_code == 303 and workspaces.get(ws).operatorRole == "ADMIN"
    shown = client.get(base + done.headers["location"]).text
    assert 'id="operator-saved"' in shown and "OWNERs and ADMINs" in shown
    assert '<option value="ADMIN" selected>' in _operator_cell(shown, ws)
    assert "OWNERs and ADMINs" in _operator_cell(admin.get(f"{base}/console/workspaces").text, ws)
    cleared = client.post(url, data={"csrf": csrf_of(page.text), "role": ""})
    assert cleared.status_code == 303 and workspaces.get(ws).operatorRole is None
    logged = [e for e in governance.history(ws) if e.type == "workspace.operator_role_set"]
    assert [(e.source, e.actorId, e.data["operatorRole"]) for e in logged] == [
        ("ui", owner.user_id, None),
        ("ui", owner.user_id, "ADMIN"),
    ]


def test_each_person_has_their_own_console_rate_window():
    """The console's credential is per person: the pipeline keys rate windows by token id, so a
    shared id would let one busy person exhaust everybody's console calls."""
    from domain import console_actions

    a, b = console_actions.principal("usr_a"), console_actions.principal("usr_b")
    assert a.token_id != b.token_id and a.human and b.human


def test_the_web_function_takes_a_binary_upload_as_the_gateway_sends_it(stack):
    """Behind API Gateway (template: ``multipart/form-data`` is a binary media type) the form
    arrives base64-encoded; the web function's handler stores the exact bytes, non-UTF-8 ones too."""
    import base64

    from cfnlint.decode import cfn_yaml

    from domain import console, objects
    from domain.settings import settings
    from domain.store import attachments
    from functions.web.lambda_handler import handler
    from tests.aws_events import API_ID, LambdaContext, rest_event
    from tests.test_template import TEMPLATE

    api = cfn_yaml.load(str(TEMPLATE))["Resources"]["McpApi"]["Properties"]
    assert "multipart~1form-data" in api["BinaryMediaTypes"]
    owner = make_actor("Bin", workspace="Binary Co")
    _, task = board_with_task(owner)
    cookie = console.create_session(owner.user_id)
    csrf = console.load_session(cookie).csrf
    png = b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + bytes(range(256))
    boundary = "jentrixboundary42"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{csrf}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="dot.png"\r\n'
            "Content-Type: image/png\r\n\r\n"
        ).encode()
        + png
        + f"\r\n--{boundary}--\r\n".encode()
    )
    path = f"/console/tasks/{task['id']}/attachments"
    event = rest_event(
        "POST",
        path,
        {
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Content-Length": str(len(body)),
            "Cookie": f"jentrix_session={cookie}",
            "Host": f"{API_ID}.execute-api.us-east-1.amazonaws.com",
        },
        None,
    )
    event.update(body=base64.b64encode(body).decode(), isBase64Encoded=True)
    out = handler(event, LambdaContext())
    assert out["statusCode"] == 303, out.get("body", "")[:400]
    (row,) = list(attachments.page(task["id"], limit=5, start=None))
    assert row.contentType == "image/png"
    assert objects.client().get_object(Bucket=settings.artifact_bucket, Key=row.objectKey)["Body"].read() == png


# -- every form POST goes through the same guard ------------------------------------------------
def _form_posts() -> list[str]:
    """Every POST route of the web app that a signed-in person's form sends (the console and the
    consent screen); the OAuth token, registration and revocation endpoints take no session."""
    from functions.web.app import create_web_app

    paths = [
        r.path
        for r in create_web_app().routes
        if "POST" in getattr(r, "methods", ()) and (r.path.startswith("/console/") or r.path == "/oauth/authorize")
    ]
    assert len(paths) >= 10, paths  # the walk sees the app's routes, not an empty list
    return sorted(paths)


@pytest.fixture(scope="module")
def guard_actor(base) -> Any:
    actor = make_actor("Guard")
    return actor, browser(base, actor.user_id)


@pytest.mark.parametrize("path", _form_posts())
def test_every_form_post_refuses_without_a_session_or_a_csrf_token(base, guard_actor, path):
    """No session: 401 (sign-out: 403, there is nothing to end); a live session without this
    session's CSRF token: 403. Both pages say nothing happened; no redirect is followed."""
    actor, person = guard_actor
    filled = re.sub(r"\{workspace_id\}", actor.workspace_id, path)
    filled = re.sub(r"\{[a-z_]+\}", "x_" + uuid.uuid4().hex[:12], filled)
    anonymous = httpx2.post(base + filled, data={"decision": "approve"}, timeout=30, follow_redirects=False)
    assert anonymous.status_code == (403 if path == "/console/signout" else 401), anonymous.text[:300]
    assert "location" not in anonymous.headers
    forged = person.post(base + filled, data={"decision": "approve", "csrf": "not-this-session"})
    assert forged.status_code == 403 and "CSRF" in forged.text, forged.text[:300]
    assert "location" not in forged.headers
