"""``jentrix invite``, ``jentrix approvals`` and ``jentrix governance`` in-process against the session's
DynamoDB Local, with the agent's side through the official SDK client: the approval round trip end
to end (agent call -> parked -> CLI approve -> the retry passes once -> a second retry is parked
again), invitation links printed once and accepted (revoked ones refused), and the human-token rule."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from domain import auth
from functions import cli
from tests.conftest import make_actor, mcp_client
from tests.tools_support import err, ok


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, error = capsys.readouterr()
    return code, out, error


@pytest.fixture
def human(stack):
    return make_actor("Hugo", f"Gov CLI {uuid.uuid4().hex[:12]}", holder="human")


def _token_file(tmp_path: Path, secret: str) -> str:
    path = tmp_path / f"token-{uuid.uuid4().hex[:12]}"
    path.write_text(secret + "\n", encoding="utf-8")
    return str(path)


async def test_approval_round_trip_end_to_end(capsys, tmp_path, server_url, dynamodb_endpoint, human):
    ws = human.workspace_id
    human_file = _token_file(tmp_path, human.token)
    agent_token, _ = auth.mint_pat(human.user_id, scopes=["admin"])
    args = {"workspaceId": ws, "email": f"new-{uuid.uuid4().hex[:12]}@example.com", "role": "ADMIN"}
    async with mcp_client(server_url, agent_token) as c:
        parked = await ok(c, "invite_member", args)
        assert parked["status"] == "PENDING_APPROVAL"
        approval_id = parked["approval"]["id"]
        code, out, _ = run_cli(
            capsys, "approvals", "list", "--workspace", ws, "--token-file", human_file, "--endpoint", dynamodb_endpoint
        )
        assert code == 0 and approval_id in out and "invite_member" in out
        assert f"by {human.email} ({human.user_id})" in out  # the caller by address (issue 24 item 21)
        # an agent's token cannot approve, even the same user's
        code, _, error = run_cli(
            capsys,
            "approvals",
            "approve",
            approval_id,
            "--token-file",
            _token_file(tmp_path, agent_token),
            "--endpoint",
            dynamodb_endpoint,
        )
        assert code == 1 and "human" in error
        code, out, _ = run_cli(
            capsys, "approvals", "approve", approval_id, "--token-file", human_file, "--endpoint", dynamodb_endpoint
        )
        assert code == 0 and "Approved" in out
        code, _, error = run_cli(
            capsys, "approvals", "approve", approval_id, "--token-file", human_file, "--endpoint", dynamodb_endpoint
        )
        assert code == 1 and "not pending" in error
        other = await ok(c, "invite_member", {**args, "role": "MEMBER"})  # other arguments are not approved
        assert other["status"] == "PENDING_APPROVAL" and other["approval"]["id"] != approval_id
        done = await ok(c, "invite_member", args)
        assert done["status"] == "APPLIED" and done["invitation"]["email"] == args["email"]
        # the same address again is answered with its pending invitation: nothing to approve (issue 24)
        pending = await err(c, "invite_member", args)
        assert pending["code"] == "CONFLICT" and pending["current"]["id"] == done["invitation"]["id"]
        again = await ok(c, "invite_member", {**args, "email": f"other-{uuid.uuid4().hex[:12]}@example.com"})
        assert (
            again["status"] == "PENDING_APPROVAL"
            and again["approval"]["newRequest"]
            and again["approval"]["id"] != approval_id
        )
        code, out, _ = run_cli(
            capsys,
            "approvals",
            "reject",
            again["approval"]["id"],
            "--token-file",
            human_file,
            "--endpoint",
            dynamodb_endpoint,
        )
        assert code == 0 and "Rejected" in out
        invitations = (await ok(c, "list_invitations", {"workspaceId": ws}))["invitations"]
        assert [i["email"] for i in invitations] == [args["email"]]
    code, out, _ = run_cli(
        capsys,
        "approvals",
        "list",
        "--workspace",
        ws,
        "--history",
        "--token-file",
        human_file,
        "--endpoint",
        dynamodb_endpoint,
    )
    assert code == 0
    for expected in ("CONSUMED", "REJECTED", "approval.approved", "approval.rejected", "invitation.created"):
        assert expected in out, (expected, out)
    assert " mcp invitation.created" in out and " ui  approval.approved" in out


async def test_invite_link_printed_once_and_accepted_revoked_refused(
    capsys, tmp_path, server_url, dynamodb_endpoint, human
):
    ws = human.workspace_id
    human_file = _token_file(tmp_path, human.token)
    email = f"joiner-{uuid.uuid4().hex[:12]}@example.com"
    async with mcp_client(server_url, human.token) as c:
        inv = (await ok(c, "invite_member", {"workspaceId": ws, "email": email, "role": "ADMIN"}))["invitation"]
        gone = (await ok(c, "invite_member", {"workspaceId": ws, "email": f"gone-{email}"}))["invitation"]
        code, out, _ = run_cli(
            capsys, "invite", "link", inv["id"], "--token-file", human_file, "--endpoint", dynamodb_endpoint
        )
        assert code == 0
        secret = next(line for line in out.splitlines() if line.startswith(inv["id"] + "."))
        listed = await ok(c, "list_invitations", {"workspaceId": ws})
        assert secret.split(".", 1)[1] not in str(listed)
        code, out, _ = run_cli(
            capsys, "invite", "accept", "--secret", secret, "--display-name", "Joiner", "--endpoint", dynamodb_endpoint
        )
        assert code == 0 and "joined" in out and "Created user" in out
        code, _, error = run_cli(capsys, "invite", "accept", "--secret", secret, "--endpoint", dynamodb_endpoint)
        assert code == 1 and "not valid" in error
        members = {m["email"]: m["role"] for m in (await ok(c, "list_members", {"workspaceId": ws}))["members"]}
        assert members[email] == "ADMIN"
        code, out, _ = run_cli(
            capsys, "invite", "link", gone["id"], "--token-file", human_file, "--endpoint", dynamodb_endpoint
        )
        gone_secret = next(line for line in out.splitlines() if line.startswith(gone["id"] + "."))
        await ok(c, "revoke_invitation", {"invitationId": gone["id"]})
        code, _, error = run_cli(capsys, "invite", "accept", "--secret", gone_secret, "--endpoint", dynamodb_endpoint)
        assert code == 1 and "not valid" in error
        assert (await err(c, "list_invitations", {"workspaceId": "ws_aaaaaaaaaaaa"}))["code"] == "NOT_FOUND"
    from domain.store import governance

    log = [e.type for e in governance.history(ws)]
    assert "member.joined" in log and "invitation.revoked" in log and "invitation.link_issued" in log


async def test_governance_set_needs_a_human_owner_and_applies(capsys, tmp_path, server_url, dynamodb_endpoint, human):
    from domain.store import keys, members
    from domain.store.models import UserRow

    ws = human.workspace_id
    admin = auth.create_user(f"adm-{uuid.uuid4().hex[:12]}@example.com", "Adm")
    members.add(ws, UserRow.get(*keys.user_profile(admin.userId)), "ADMIN")
    admin_file = _token_file(tmp_path, auth.mint_pat(admin.userId, holder="human")[0])
    code, _, error = run_cli(
        capsys,
        "governance",
        "set",
        "--workspace",
        ws,
        "--policy",
        "DENY",
        "--token-file",
        admin_file,
        "--endpoint",
        dynamodb_endpoint,
    )
    assert code == 1 and "OWNER" in error
    code, out, _ = run_cli(
        capsys,
        "governance",
        "set",
        "--workspace",
        ws,
        "--policy",
        "DENY",
        "--token-file",
        _token_file(tmp_path, human.token),
        "--endpoint",
        dynamodb_endpoint,
    )
    assert code == 0 and "DENY" in out
    agent_token, _ = auth.mint_pat(human.user_id)
    async with mcp_client(server_url, agent_token) as c:
        denied = await err(c, "remove_member", {"workspaceId": ws, "userId": admin.userId})
        assert denied["code"] == "FORBIDDEN"


def test_workspace_operator_role_is_set_and_cleared_by_a_human_owner(
    capsys, tmp_path, monkeypatch, dynamodb_endpoint, human
):
    """``jentrix workspace operator-role``: a human OWNER's token sets ADMIN and clears it, each a
    workspace log entry with source ``cli``; an ADMIN's human token and the OWNER's agent token are
    refused with nothing written; the flags are one of --role / --clear."""
    from domain.store import governance, keys, members, workspaces
    from domain.store.models import UserRow

    monkeypatch.setenv("HOME", str(tmp_path))  # nothing of the real home is read or written
    ws = human.workspace_id
    admin = auth.create_user(f"adm-{uuid.uuid4().hex[:12]}@example.com", "Adm")
    members.add(ws, UserRow.get(*keys.user_profile(admin.userId)), "ADMIN")
    owner_file = _token_file(tmp_path, human.token)

    def switch(token_file: str, *flags: str) -> tuple[int, str, str]:
        return run_cli(
            capsys,
            "workspace",
            "operator-role",
            "--workspace",
            ws,
            *flags,
            "--token-file",
            token_file,
            "--endpoint",
            dynamodb_endpoint,
        )

    admin_file = _token_file(tmp_path, auth.mint_pat(admin.userId, holder="human")[0])
    code, _, error = switch(admin_file, "--role", "ADMIN")
    assert code == 1 and "OWNER" in error
    code, _, error = switch(_token_file(tmp_path, auth.mint_pat(human.user_id)[0]), "--role", "ADMIN")
    assert code == 1 and "human" in error  # the OWNER's agent token
    for flags in ((), ("--role", "ADMIN", "--clear"), ("--role", "MEMBER")):
        with pytest.raises(SystemExit) as usage:
            switch(owner_file, *flags)
        assert usage.value.code == 2
    capsys.readouterr()
    assert workspaces.get(ws).operatorRole is None
    code, out, _ = switch(owner_file, "--role", "ADMIN")
    assert code == 0 and "ADMIN" in out and workspaces.get(ws).operatorRole == "ADMIN"
    code, out, _ = switch(owner_file, "--clear")
    assert code == 0 and "OWNERs only" in out and workspaces.get(ws).operatorRole is None
    logged = [e for e in governance.history(ws) if e.type == "workspace.operator_role_set"]
    assert [(e.source, e.actorId, e.data["operatorRole"]) for e in logged] == [
        ("cli", human.user_id, None),
        ("cli", human.user_id, "ADMIN"),
    ]
