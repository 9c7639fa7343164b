"""Members, invitations and governance through the official SDK client: value-CAS on roles, the
last OWNER (alone and under racing demotions), removal ending access, invitations whose secret no
tool returns, and the approval round trip of an agent's membership change."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.conftest import make_actor, mcp_client
from tests.tools_support import err, names_field, new_board, ok, stored_state


def _join(workspace_id: str, role: str, name: str = "Bea", *, holder: str = "agent") -> tuple[str, str]:
    """A new user made a member with ``role``; returns (userId, token)."""
    from domain import auth
    from domain.store import keys, members
    from domain.store.models import UserRow

    user = auth.create_user(f"{name.lower()}-{uuid.uuid4().hex[:12]}@example.com", name)
    members.add(workspace_id, UserRow.get(*keys.user_profile(user.userId)), role)
    return user.userId, auth.mint_pat(user.userId, holder=holder)[0]


def _policy(workspace_id: str, actor: str, policy: str) -> None:
    from domain.store import governance

    governance.set_policy(workspace_id, "membership", policy, actor_id=actor, source="ui")


@pytest.fixture
def human(stack):
    return make_actor("Hana", "Governed Space", holder="human")


async def _roles(c, ws):
    return {m["userId"]: m["role"] for m in (await ok(c, "list_members", {"workspaceId": ws}))["members"]}


async def test_last_owner_is_never_demoted_or_removed_and_stale_roles_conflict(server_url, human):
    ws = human.workspace_id
    bea, _ = _join(ws, "ADMIN")
    async with mcp_client(server_url, human.token) as c:
        before = stored_state()
        alone = await err(c, "set_member_role", {"workspaceId": ws, "userId": human.user_id, "role": "ADMIN"})
        assert names_field(alone, "userId") and "last OWNER" in alone["message"]
        stale = await err(
            c, "set_member_role", {"workspaceId": ws, "userId": bea, "role": "MEMBER", "expectedRole": "MEMBER"}
        )
        assert stale["code"] == "CONFLICT" and stale["current"]["role"] == "ADMIN"
        stamp = await err(
            c,
            "set_member_role",
            {"workspaceId": ws, "userId": bea, "role": "MEMBER", "expectedUpdatedAt": "2026-01-01T00:00:00.000Z"},
        )
        assert names_field(stamp, "expectedUpdatedAt") and "expectedRole" in stamp["message"]
        stamp = await err(
            c, "remove_member", {"workspaceId": ws, "userId": bea, "expectedUpdatedAt": "2026-01-01T00:00:00.000Z"}
        )
        assert names_field(stamp, "expectedUpdatedAt")
        stale = await err(c, "remove_member", {"workspaceId": ws, "userId": bea, "expectedRole": "OWNER"})
        assert stale["code"] == "CONFLICT" and stale["current"]["role"] == "ADMIN"
        myself = await err(c, "remove_member", {"workspaceId": ws, "userId": human.user_id})
        assert names_field(myself, "userId")
        assert stored_state() == before
        done = await ok(
            c, "set_member_role", {"workspaceId": ws, "userId": bea, "role": "OWNER", "expectedRole": "ADMIN"}
        )
        assert done["status"] == "APPLIED" and done["member"]["role"] == "OWNER"
        same = await ok(c, "set_member_role", {"workspaceId": ws, "userId": bea, "role": "OWNER"})
        assert same["member"]["role"] == "OWNER"
        mine = await ok(
            c, "set_member_role", {"workspaceId": ws, "userId": human.user_id, "role": "ADMIN", "expectedRole": "OWNER"}
        )
        assert mine["member"]["role"] == "ADMIN"


async def test_two_owners_demoting_each_other_at_once_leave_one_owner(server_url, human):
    for _ in range(6):
        a = make_actor("Ann", "Race Space", holder="human")
        b_id, b_token = _join(a.workspace_id, "OWNER", "Bob", holder="human")
        async with mcp_client(server_url, a.token) as ca, mcp_client(server_url, b_token) as cb:
            results = await asyncio.gather(
                ca.call_tool("set_member_role", {"workspaceId": a.workspace_id, "userId": b_id, "role": "MEMBER"}),
                cb.call_tool("set_member_role", {"workspaceId": a.workspace_id, "userId": a.user_id, "role": "MEMBER"}),
            )
            assert sum(not r.is_error for r in results) >= 1
            roles = await _roles(ca, a.workspace_id) if not results[0].is_error else await _roles(cb, a.workspace_id)
            assert list(roles.values()).count("OWNER") == 1, roles
        from domain.store import workspaces

        assert workspaces.get(a.workspace_id).ownerCount == 1


async def test_racing_removals_of_two_owners_by_a_third_keep_one(server_url, human):
    ws = human.workspace_id
    b, _ = _join(ws, "OWNER", "Bob", holder="human")
    c2, c2_token = _join(ws, "OWNER", "Cid", holder="human")
    async with mcp_client(server_url, human.token) as ca, mcp_client(server_url, c2_token) as cc:
        await asyncio.gather(
            ca.call_tool("remove_member", {"workspaceId": ws, "userId": b}),
            cc.call_tool("remove_member", {"workspaceId": ws, "userId": human.user_id}),
            ca.call_tool("set_member_role", {"workspaceId": ws, "userId": c2, "role": "MEMBER"}),
        )
    from domain.store import members, workspaces

    owners = [m for m in members.list_members(ws) if m.role == "OWNER"]
    assert len(owners) >= 1 and workspaces.get(ws).ownerCount == len(owners)


async def test_removal_deletes_member_and_mirror_and_ends_access(server_url, human):
    ws = human.workspace_id
    bea, bea_token = _join(ws, "MEMBER", holder="human")
    async with mcp_client(server_url, human.token) as c:
        board = await new_board(c, ws, "Access")
        gone = await ok(c, "remove_member", {"workspaceId": ws, "userId": bea, "expectedRole": "MEMBER"})
        assert gone["status"] == "APPLIED" and gone["removed"]["userId"] == bea
        again = await err(c, "remove_member", {"workspaceId": ws, "userId": bea})
        assert again["code"] == "NOT_FOUND"
    from domain.store import members

    assert members.get(ws, bea) is None and all(m.workspaceId != ws for m in members.memberships(bea))
    async with mcp_client(server_url, bea_token) as c:
        refused = await err(c, "create_task", {"columnId": board["columns"][0]["id"], "title": "after removal"})
        assert refused["code"] == "NOT_FOUND"


async def test_admin_cannot_invite_an_owner_or_remove_one(server_url, human):
    ws = human.workspace_id
    _, admin_token = _join(ws, "ADMIN", "Adi", holder="human")
    async with mcp_client(server_url, admin_token) as c:
        before = stored_state()
        refused = await err(c, "invite_member", {"workspaceId": ws, "email": "boss@example.com", "role": "OWNER"})
        assert refused["code"] == "FORBIDDEN" and "OWNER" in refused["message"]
        refused = await err(c, "remove_member", {"workspaceId": ws, "userId": human.user_id})
        assert refused["code"] == "FORBIDDEN"
        assert stored_state() == before
        made = await ok(c, "invite_member", {"workspaceId": ws, "email": "Dev@Example.com", "role": "ADMIN"})
        assert made["status"] == "APPLIED" and made["invitation"]["email"] == "dev@example.com"


async def test_invitations_list_pending_without_secrets_revoke_and_accept(server_url, human):
    from domain import auth
    from domain.store import governance, keys
    from domain.store.models import InvitationRow, UserRow

    ws = human.workspace_id
    async with mcp_client(server_url, human.token) as c:
        one = (await ok(c, "invite_member", {"workspaceId": ws, "email": f"one-{uuid.uuid4().hex[:4]}@example.com"}))[
            "invitation"
        ]
        two = (
            await ok(
                c,
                "invite_member",
                {"workspaceId": ws, "email": f"two-{uuid.uuid4().hex[:4]}@example.com", "role": "OWNER"},
            )
        )["invitation"]
        listed = (await ok(c, "list_invitations", {"workspaceId": ws}))["invitations"]
        assert [i["id"] for i in listed] == [one["id"], two["id"]]
        assert all(
            set(i) == {"id", "workspaceId", "email", "role", "invitedBy", "createdAt", "expiresAt"} for i in listed
        )
        row = InvitationRow.get(*keys.invitation(ws, one["id"].rsplit("_", 1)[1]))
        secret = governance.issue_link(row, actor_id=human.user_id, actor_roles=("ADMIN", "OWNER"), source="ui")
        assert governance.secret_digest(secret) == InvitationRow.get(row.PK, row.SK).secretDigest
        assert await ok(c, "revoke_invitation", {"invitationId": one["id"]})
        assert (await err(c, "revoke_invitation", {"invitationId": one["id"]}))["code"] == "NOT_FOUND"
        invitee = auth.create_user(one["email"], "One")
        with pytest.raises(governance.InvitationClosed):
            governance.accept(secret, UserRow.get(*keys.user_profile(invitee.userId)))
        row2 = InvitationRow.get(*keys.invitation(ws, two["id"].rsplit("_", 1)[1]))
        old = governance.issue_link(row2, actor_id=human.user_id, actor_roles=("OWNER",), source="ui")
        new = governance.issue_link(row2, actor_id=human.user_id, actor_roles=("OWNER",), source="ui")
        boss = auth.create_user(two["email"], "Two")
        boss_row = UserRow.get(*keys.user_profile(boss.userId))
        with pytest.raises(governance.InvitationClosed):
            governance.accept(old, boss_row)  # an earlier link stops working when a new one is issued
        governance.accept(new, boss_row)
        with pytest.raises(governance.InvitationClosed):
            governance.accept(new, boss_row)  # reused
        roles = await _roles(c, ws)
        assert roles[boss.userId] == "OWNER"
        assert (await ok(c, "list_invitations", {"workspaceId": ws}))["invitations"] == []
    from domain.store import workspaces

    assert workspaces.get(ws).ownerCount == 2


async def test_agent_membership_change_is_parked_approved_once_then_parked_again(server_url, human):
    from domain import auth, ids
    from domain.store import governance, members

    ws = human.workspace_id
    bea, _ = _join(ws, "MEMBER")
    agent_token, _ = auth.mint_pat(human.user_id)  # the same user, an agent's credential
    args = {"workspaceId": ws, "userId": bea, "role": "ADMIN"}
    async with mcp_client(server_url, agent_token) as c:
        before = stored_state()
        parked = await ok(c, "set_member_role", args)
        assert parked["status"] == "PENDING_APPROVAL" and parked["member"] is None
        approval = parked["approval"]
        assert (
            approval["newRequest"]
            and approval["state"] == "PENDING"
            and "jentrix approvals approve" in approval["howToApprove"]
        )
        added = set(stored_state()) - set(before)
        assert len(added) == 1 and next(iter(added))[1].startswith("APPROVAL#")  # nothing but the request
        again = await ok(c, "set_member_role", args)
        assert again["approval"]["id"] == approval["id"] and not again["approval"]["newRequest"]
        assert members.get(ws, bea).role == "MEMBER"

        row = governance.get_approval(ids.parse_approval(approval["id"]))
        governance.decide(row, "APPROVED", actor_id=human.user_id, actor_roles=("OWNER",))
        other = await ok(c, "set_member_role", {**args, "role": "OWNER"})  # other arguments: not approved
        assert other["status"] == "PENDING_APPROVAL" and other["approval"]["id"] != approval["id"]
        done = await ok(c, "set_member_role", args)
        assert done["status"] == "APPLIED" and done["member"]["role"] == "ADMIN"
        assert governance.get_approval(ids.parse_approval(approval["id"])).state == "CONSUMED"
        replay = await ok(c, "set_member_role", args)
        assert replay["status"] == "PENDING_APPROVAL" and replay["approval"]["id"] != approval["id"]
    second_agent, _ = auth.mint_pat(human.user_id)
    row = governance.get_approval(ids.parse_approval(replay["approval"]["id"]))
    governance.decide(row, "APPROVED", actor_id=human.user_id, actor_roles=("OWNER",))
    async with mcp_client(server_url, second_agent) as c:  # another caller does not ride on it
        elsewhere = await ok(c, "set_member_role", {**args, "expectedRole": "ADMIN"})
        assert elsewhere["status"] == "PENDING_APPROVAL"
        assert (await ok(c, "set_member_role", args))["status"] == "PENDING_APPROVAL"
    log = governance.history(ws)
    assert [e.type for e in log][:1] == ["approval.approved"] and any(
        e.type == "member.role_changed" and e.source == "mcp" for e in log
    )


async def test_policy_allow_and_deny_for_agents_humans_never_parked(server_url, human):
    from domain import auth

    ws = human.workspace_id
    agent_token, _ = auth.mint_pat(human.user_id)
    async with mcp_client(server_url, agent_token) as c:
        _policy(ws, human.user_id, "DENY")
        before = stored_state()
        denied = await err(c, "invite_member", {"workspaceId": ws, "email": "no@example.com"})
        assert denied["code"] == "FORBIDDEN" and "governance set" in denied["hint"]
        assert stored_state() == before
        _policy(ws, human.user_id, "ALLOW")
        allowed = await ok(c, "invite_member", {"workspaceId": ws, "email": "yes@example.com"})
        assert allowed["status"] == "APPLIED"
    async with mcp_client(server_url, human.token) as c:
        _policy(ws, human.user_id, "DENY")
        assert (await ok(c, "invite_member", {"workspaceId": ws, "email": "human@example.com"}))["status"] == "APPLIED"


async def test_writes_with_a_human_credential_are_source_ui(server_url, human):
    from domain import auth

    agent_token, _ = auth.mint_pat(human.user_id)
    async with mcp_client(server_url, human.token) as c:
        board = await new_board(c, human.workspace_id, "Sources")
    async with mcp_client(server_url, agent_token) as c:
        await ok(c, "create_task", {"columnId": board["columns"][0]["id"], "title": "by the agent"})
        ui = await ok(c, "list_activity", {"boardId": board["board"]["id"], "source": "ui"})
        mcp = await ok(c, "list_activity", {"boardId": board["board"]["id"], "source": "mcp"})
    key = next(k for k in ui if isinstance(ui[k], list))
    assert ui[key] and all(e["source"] == "ui" for e in ui[key]) and {e["type"] for e in ui[key]} == {"board.created"}
    assert mcp[key] and {e["type"] for e in mcp[key]} == {"task.created"}


async def test_two_racing_replays_of_one_approval_apply_once(server_url, human):
    from domain import auth, ids
    from domain.store import governance

    ws = human.workspace_id
    agent_token, _ = auth.mint_pat(human.user_id)
    args = {"workspaceId": ws, "email": f"race-{uuid.uuid4().hex[:12]}@example.com"}
    async with mcp_client(server_url, agent_token) as c1, mcp_client(server_url, agent_token) as c2:
        parked = await ok(c1, "invite_member", args)
        row = governance.get_approval(ids.parse_approval(parked["approval"]["id"]))
        governance.decide(row, "APPROVED", actor_id=human.user_id, actor_roles=("ADMIN", "OWNER"))
        results = await asyncio.gather(*(c.call_tool("invite_member", args) for c in (c1, c2, c1, c2)))
    applied = [r for r in results if not r.is_error and r.structured_content["status"] == "APPLIED"]
    assert len(applied) == 1, [r.content[0].text for r in results]
    pending = [r for r in governance.pending_invitations(ws) if r.email == args["email"]]
    assert len(pending) == 1


async def test_an_agent_call_that_would_fail_is_refused_before_any_request_is_filed(server_url, human):
    from domain import auth

    ws = human.workspace_id
    bea, _ = _join(ws, "MEMBER")
    agent_token, _ = auth.mint_pat(human.user_id)
    async with mcp_client(server_url, agent_token) as c:
        before = stored_state()
        assert (await err(c, "remove_member", {"workspaceId": ws, "userId": "usr_nobodyhere00"}))["code"] == "NOT_FOUND"
        assert (
            await err(
                c, "set_member_role", {"workspaceId": ws, "userId": bea, "role": "ADMIN", "expectedRole": "ADMIN"}
            )
        )["code"] == "CONFLICT"
        assert names_field(
            await err(c, "set_member_role", {"workspaceId": ws, "userId": human.user_id, "role": "MEMBER"}), "userId"
        )
        assert names_field(await err(c, "invite_member", {"workspaceId": ws, "email": "not-an-address"}), "email")
        assert names_field(await err(c, "remove_member", {"workspaceId": ws, "userId": human.user_id}), "userId")
        assert stored_state() == before


async def test_inviting_a_member_or_a_pending_address_is_answered_and_parks_nothing(server_url, human):
    """Issue 24 item 21: an address that is already a member, or already holds a pending
    invitation, is answered CONFLICT with that member or invitation, for a human and for an
    agent alike: no second invitation, no approval request that could never succeed."""
    from domain import auth

    ws = human.workspace_id
    bea, _ = _join(ws, "MEMBER")
    bea_email = next(m["email"] for m in (await _members(server_url, human.token, ws)) if m["userId"] == bea)
    agent_token, _ = auth.mint_pat(human.user_id)
    fresh = f"Sam-{uuid.uuid4().hex[:12]}@Example.com"
    async with mcp_client(server_url, human.token) as c:
        first = (await ok(c, "invite_member", {"workspaceId": ws, "email": fresh}))["invitation"]
        before = stored_state()
        again = await err(c, "invite_member", {"workspaceId": ws, "email": fresh.lower(), "role": "ADMIN"})
        assert again["code"] == "CONFLICT" and again["current"]["id"] == first["id"] and first["id"] in again["message"]
        assert "jentrix invite link" in again["hint"] and "revoke_invitation" in again["hint"]
        member = await err(c, "invite_member", {"workspaceId": ws, "email": bea_email.upper()})
        assert (
            member["code"] == "CONFLICT"
            and member["current"]["userId"] == bea
            and "already a member" in member["message"]
        )
        assert stored_state() == before
    async with mcp_client(server_url, agent_token) as c:
        for email in (fresh, bea_email):
            refused = await err(c, "invite_member", {"workspaceId": ws, "email": email})
            assert refused["code"] == "CONFLICT"
        assert stored_state() == before, "an agent's call that cannot succeed files no approval"
    async with mcp_client(server_url, human.token) as c:
        assert [i["id"] for i in (await ok(c, "list_invitations", {"workspaceId": ws}))["invitations"]] == [first["id"]]


async def _members(url, token, ws):
    async with mcp_client(url, token) as c:
        return (await ok(c, "list_members", {"workspaceId": ws}))["members"]


async def test_approval_text_names_the_member_by_email_and_member_not_found_points_to_list_members(server_url, human):
    """Issue 24 item 21: the approval a human decides on shows the member's e-mail beside the user
    id; a NOT_FOUND for a member names list_members, where its ids are."""
    from domain import auth

    ws = human.workspace_id
    bea, _ = _join(ws, "MEMBER")
    bea_email = next(m["email"] for m in (await _members(server_url, human.token, ws)) if m["userId"] == bea)
    agent_token, _ = auth.mint_pat(human.user_id)
    async with mcp_client(server_url, agent_token) as c:
        parked = await ok(c, "remove_member", {"workspaceId": ws, "userId": bea})
        assert parked["status"] == "PENDING_APPROVAL"
        assert f"{bea} ({bea_email})" in parked["approval"]["wouldDo"]
    async with mcp_client(server_url, human.token) as c:
        missing = await err(c, "remove_member", {"workspaceId": ws, "userId": "usr_nobodyhere00"})
    assert missing["code"] == "NOT_FOUND" and "list_members" in missing["hint"] and "list_tasks" not in missing["hint"]
