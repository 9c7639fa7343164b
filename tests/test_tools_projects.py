"""Behaviour of update_workspace, the project tools and resolve_projects_for_repo, through the
official MCP SDK client against DynamoDB Local."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import make_actor, mcp_client
from tests.tools_support import err, names_field, new_board, new_task, ok, stored_state


def _add_member(workspace_id: str, user_id: str, role: str) -> None:
    from domain import clock
    from domain.store.models import MemberRow, MembershipMirrorRow, UserRow

    user = UserRow.get(f"USER#{user_id}", "PROFILE")
    now = clock.now_iso()
    MemberRow(f"WS#{workspace_id}", f"MEMBER#{user_id}", workspaceId=workspace_id, userId=user_id, role=role,
              email=user.email, displayName=user.displayName, joinedAt=now, updatedAt=now).save()
    MembershipMirrorRow(f"USER#{user_id}", f"WS#{workspace_id}", workspaceId=workspace_id, role=role).save()


def _pat(user_id: str, **kwargs) -> str:
    from domain import auth

    secret, _ = auth.mint_pat(user_id, **kwargs)
    return secret


# -- update_workspace ----------------------------------------------------------------------------
async def test_rename_with_the_name_read_and_a_stale_expected_name_is_conflict_with_current(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        listed = (await ok(c, "list_workspaces"))["workspaces"]
        name = next(w["name"] for w in listed if w["id"] == owner.workspace_id)
        done = await ok(c, "update_workspace", {"workspaceId": owner.workspace_id, "name": "Renamed Space", "expectedName": name})
        assert done["changedFields"] == ["name"] and done["workspace"]["name"] == "Renamed Space"
        assert done["workspace"]["slug"].startswith("test-space") and done["workspace"]["taskPrefix"] == "TS"
        before = stored_state()
        stale = await err(c, "update_workspace", {"workspaceId": owner.workspace_id, "name": "Again", "expectedName": name})
        assert stale["code"] == "CONFLICT" and stale["current"]["name"] == "Renamed Space" and stale["current"]["id"] == owner.workspace_id
        assert stored_state() == before
        same = await ok(c, "update_workspace", {"workspaceId": owner.workspace_id, "name": "Renamed Space"})
        assert same["changedFields"] == []


@pytest.mark.parametrize("field,value", [("expectedUpdatedAt", "2026-01-01T00:00:00.000Z"), ("slug", "other"), ("taskPrefix", "XY"), ("slug", None)])
async def test_expected_updated_at_and_write_once_fields_are_refused_unwritten(server_url, owner, field, value):
    async with mcp_client(server_url, owner.token) as c:
        before = stored_state()
        e = await err(c, "update_workspace", {"workspaceId": owner.workspace_id, "name": "Nope", field: value})
        assert names_field(e, field)
        if field == "expectedUpdatedAt":
            assert "expectedName" in e["hint"]
        assert stored_state() == before


async def test_default_repo_is_normalised_and_null_clears_it(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        done = await ok(c, "update_workspace", {"workspaceId": owner.workspace_id, "defaultRepo": "https://github.com/Owner/Name.git"})
        assert done["workspace"]["defaultRepo"] == "owner/name" and done["changedFields"] == ["defaultRepo"]
        again = await ok(c, "update_workspace", {"workspaceId": owner.workspace_id, "defaultRepo": "git@github.com:OWNER/name"})
        assert again["changedFields"] == []
        bad = await err(c, "update_workspace", {"workspaceId": owner.workspace_id, "defaultRepo": "https://gitlab.com/a/b"})
        assert names_field(bad, "defaultRepo")
        cleared = await ok(c, "update_workspace", {"workspaceId": owner.workspace_id, "defaultRepo": None})
        assert cleared["workspace"]["defaultRepo"] is None and cleared["changedFields"] == ["defaultRepo"]
    from domain.store.models import WorkspaceRow

    head = WorkspaceRow.get(f"WS#{owner.workspace_id}", "META", consistent_read=True)
    assert head.defaultRepo is None and head.GSI2PK is None


async def test_update_workspace_needs_the_admin_role(server_url, owner):
    member = make_actor("Mem", None)
    _add_member(owner.workspace_id, member.user_id, "MEMBER")
    async with mcp_client(server_url, member.token) as c:
        e = await err(c, "update_workspace", {"workspaceId": owner.workspace_id, "name": "Mine now"})
    assert e["code"] == "FORBIDDEN" and "ADMIN" in e["message"]


async def test_concurrent_renames_with_one_expected_name_commit_once(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        results = await asyncio.gather(*(c.call_tool("update_workspace", {"workspaceId": owner.workspace_id, "name": f"Racer {i}", "expectedName": "Test Space"}) for i in range(4)))
    wins = [r for r in results if not r.is_error]
    assert len(wins) == 1
