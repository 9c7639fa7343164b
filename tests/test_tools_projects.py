"""Behaviour of update_workspace, the project tools and resolve_projects_for_repo, through the
official MCP SDK client against DynamoDB Local."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.conftest import make_actor, mcp_client
from tests.tools_support import err, names_field, new_board, new_task, ok, stored_state


def _add_member(workspace_id: str, user_id: str, role: str) -> None:
    from domain import clock
    from domain.store.models import MemberRow, MembershipMirrorRow, UserRow

    user = UserRow.get(f"USER#{user_id}", "PROFILE")
    now = clock.now_iso()
    MemberRow(
        f"WS#{workspace_id}",
        f"MEMBER#{user_id}",
        workspaceId=workspace_id,
        userId=user_id,
        role=role,
        email=user.email,
        displayName=user.displayName,
        joinedAt=now,
        updatedAt=now,
    ).save()
    MembershipMirrorRow(f"USER#{user_id}", f"WS#{workspace_id}", workspaceId=workspace_id, role=role).save()


def _pat(user_id: str, **kwargs) -> str:
    from domain import auth

    secret, _ = auth.mint_pat(user_id, **kwargs)
    return secret


# -- update_workspace ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_rename_with_the_name_read_and_a_stale_expected_name_is_conflict_with_current(server_url, owner, mode):
    async with mcp_client(server_url, owner.token, mode) as c:
        listed = (await ok(c, "list_workspaces"))["workspaces"]
        name = next(w["name"] for w in listed if w["id"] == owner.workspace_id)
        done = await ok(
            c, "update_workspace", {"workspaceId": owner.workspace_id, "name": "Renamed Space", "expectedName": name}
        )
        assert done["changedFields"] == ["name"] and done["workspace"]["name"] == "Renamed Space"
        assert done["workspace"]["slug"].startswith("test-space") and done["workspace"]["taskPrefix"] == "TS"
        before = stored_state()
        stale = await err(
            c, "update_workspace", {"workspaceId": owner.workspace_id, "name": "Again", "expectedName": name}
        )
        assert (
            stale["code"] == "CONFLICT"
            and stale["current"]["name"] == "Renamed Space"
            and stale["current"]["id"] == owner.workspace_id
        )
        assert stored_state() == before
        same = await ok(c, "update_workspace", {"workspaceId": owner.workspace_id, "name": "Renamed Space"})
        assert same["changedFields"] == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("expectedUpdatedAt", "2026-01-01T00:00:00.000Z"), ("slug", "other"), ("taskPrefix", "XY"), ("slug", None)],
)
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
        done = await ok(
            c,
            "update_workspace",
            {"workspaceId": owner.workspace_id, "defaultRepo": "https://github.com/Owner/Name.git"},
        )
        assert done["workspace"]["defaultRepo"] == "owner/name" and done["changedFields"] == ["defaultRepo"]
        again = await ok(
            c, "update_workspace", {"workspaceId": owner.workspace_id, "defaultRepo": "git@github.com:OWNER/name"}
        )
        assert again["changedFields"] == []
        bad = await err(
            c, "update_workspace", {"workspaceId": owner.workspace_id, "defaultRepo": "https://gitlab.com/a/b"}
        )
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
        results = await asyncio.gather(
            *(
                c.call_tool(
                    "update_workspace",
                    {"workspaceId": owner.workspace_id, "name": f"Racer {i}", "expectedName": "Test Space"},
                )
                for i in range(4)
            )
        )
    wins = [r for r in results if not r.is_error]
    assert len(wins) == 1


# -- projects ------------------------------------------------------------------------------------
async def _board(c, ws, name):
    made = await new_board(c, ws, name)
    return made["board"]["id"], [col["id"] for col in made["columns"]]


async def _project(c, ws, name, **extra):
    return (await ok(c, "create_project", {"workspaceId": ws, "name": name, **extra}))["project"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_create_get_by_id_and_slug_and_list_with_filters_and_pages(server_url, owner, mode):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token, mode) as c:
        top = await _project(
            c,
            ws,
            "Launch 2026",
            goal="Ship it",
            constraints=["No new hires"],
            budget="3 weeks",
            milestones=[{"title": "Beta", "dueDate": "2026-12-20"}],
            risks=[{"title": "Late API", "severity": "HIGH"}],
            successMetrics=["100 users"],
        )
        assert top["slug"] == "launch-2026" and top["status"] == "ACTIVE" and top["ownerId"] == owner.user_id
        assert top["counts"] == {"children": 0, "links": 0, "milestones": 1, "risks": 1, "decisions": 0}
        child = await _project(c, ws, "Docs", parentId=top["id"], status="PLANNED")
        await _project(c, ws, "Side quest", status="PLANNED")
        by_id = await ok(c, "get_project", {"projectId": top["id"]})
        assert by_id["project"]["counts"]["children"] == 1 and by_id["links"] == []
        by_slug = await ok(c, "get_project", {"workspaceId": ws, "slug": "launch-2026"})
        assert by_slug["project"] == by_id["project"]
        taken = await err(c, "create_project", {"workspaceId": ws, "name": "Launch 2026"})
        assert taken["code"] == "CONFLICT"
        planned = await ok(c, "list_projects", {"workspaceId": ws, "status": "PLANNED", "limit": 1})
        assert planned["totalCount"] == 2 and len(planned["projects"]) == 1 and planned["nextCursor"]
        rest = await ok(
            c, "list_projects", {"workspaceId": ws, "status": "PLANNED", "limit": 1, "cursor": planned["nextCursor"]}
        )
        assert rest["nextCursor"] is None and {planned["projects"][0]["id"], rest["projects"][0]["id"]} != {child["id"]}
        kids = await ok(c, "list_projects", {"workspaceId": ws, "parentId": top["id"]})
        assert [p["id"] for p in kids["projects"]] == [child["id"]] and kids["totalCount"] == 1
        bad = await err(c, "list_projects", {"workspaceId": ws, "status": "ACTIVE", "cursor": planned["nextCursor"]})
        assert names_field(bad, "cursor")


async def test_create_project_needs_the_admin_role(server_url, owner):
    member = make_actor("Mem", None)
    _add_member(owner.workspace_id, member.user_id, "MEMBER")
    async with mcp_client(server_url, member.token) as c:
        e = await err(c, "create_project", {"workspaceId": owner.workspace_id, "name": "Nope"})
    assert e["code"] == "FORBIDDEN"


async def test_the_caller_may_name_themselves_owner_and_a_stranger_is_refused(server_url, owner, outsider):
    """ownerId may be the caller (their member item is the one the access step read) or another
    member; a user outside the workspace is INVALID_INPUT and writes nothing."""
    other = make_actor("Own", None)
    _add_member(owner.workspace_id, other.user_id, "MEMBER")
    async with mcp_client(server_url, owner.token) as c:
        mine = await ok(
            c,
            "create_project",
            {"workspaceId": owner.workspace_id, "name": f"Mine {uuid.uuid4().hex[:12]}", "ownerId": owner.user_id},
        )
        assert mine["project"]["ownerId"] == owner.user_id
        moved = await ok(c, "update_project", {"projectId": mine["project"]["id"], "ownerId": other.user_id})
        assert moved["project"]["ownerId"] == other.user_id
        back = await ok(c, "update_project", {"projectId": mine["project"]["id"], "ownerId": owner.user_id})
        assert back["project"]["ownerId"] == owner.user_id
        before = stored_state()
        e = await err(c, "update_project", {"projectId": mine["project"]["id"], "ownerId": outsider.user_id})
        assert e["code"] == "INVALID_INPUT" and "ownerId" in e["message"], e
        assert stored_state() == before


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_update_project_only_provided_fields_null_clears_and_stale_stamp_conflicts(server_url, owner, mode):
    async with mcp_client(server_url, owner.token, mode) as c:
        p = await _project(c, owner.workspace_id, "Editable", goal="g", budget="b", constraints=["c"])
        done = await ok(
            c,
            "update_project",
            {"projectId": p["id"], "goal": None, "budget": "more", "name": None, "expectedUpdatedAt": p["updatedAt"]},
        )
        assert (
            set(done["changedFields"]) == {"goal", "budget"}
            and done["project"]["goal"] is None
            and done["project"]["name"] == "Editable"
        )
        assert done["project"]["constraints"] == ["c"]
        before = stored_state()
        stale = await err(
            c, "update_project", {"projectId": p["id"], "budget": "x", "expectedUpdatedAt": p["updatedAt"]}
        )
        assert stale["code"] == "CONFLICT" and stale["current"]["budget"] == "more"
        assert stored_state() == before
        cleared = await ok(c, "update_project", {"projectId": p["id"], "constraints": None})
        assert cleared["project"]["constraints"] == [] and cleared["changedFields"] == ["constraints"]


async def test_a_parent_that_would_make_a_cycle_is_refused_unwritten(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        a = await _project(c, ws, "Cycle A")
        b = await _project(c, ws, "Cycle B", parentId=a["id"])
        cc = await _project(c, ws, "Cycle C", parentId=b["id"])
        before = stored_state()
        e = await err(c, "update_project", {"projectId": a["id"], "parentId": cc["id"]})
        assert names_field(e, "parentId") and "cycle" in e["message"]
        self_parent = await err(c, "update_project", {"projectId": a["id"], "parentId": a["id"]})
        assert names_field(self_parent, "parentId")
        assert stored_state() == before
        moved = await ok(c, "update_project", {"projectId": cc["id"], "parentId": None})
        assert moved["project"]["parentId"] is None
        assert (await ok(c, "get_project", {"projectId": b["id"]}))["project"]["counts"]["children"] == 0


async def test_racing_reparentings_into_a_cycle_do_not_both_commit(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        a = await _project(c, ws, "Race A")
        b = await _project(c, ws, "Race B")
        results = await asyncio.gather(
            c.call_tool("update_project", {"projectId": a["id"], "parentId": b["id"]}),
            c.call_tool("update_project", {"projectId": b["id"], "parentId": a["id"]}),
        )
        assert sum(not r.is_error for r in results) <= 1
        pa = (await ok(c, "get_project", {"projectId": a["id"]}))["project"]
        pb = (await ok(c, "get_project", {"projectId": b["id"]}))["project"]
    assert not (pa["parentId"] == b["id"] and pb["parentId"] == a["id"])


# -- links -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_links_add_remove_noops_and_repo_normalisation(server_url, owner, mode):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token, mode) as c:
        p = await _project(c, ws, "Linked")
        board_id, cols = await _board(c, ws, "Linked board")
        task = await new_task(c, cols[0], "Linked task")
        repo = await ok(
            c,
            "add_project_link",
            {"projectId": p["id"], "targetType": "REPO", "targetId": "https://github.com/Owner/Name.git"},
        )
        assert repo["added"] is True and repo["link"]["targetId"] == "owner/name"
        again = await ok(
            c, "add_project_link", {"projectId": p["id"], "targetType": "REPO", "targetId": "git@github.com:owner/NAME"}
        )
        assert again["added"] is False
        await ok(c, "add_project_link", {"projectId": p["id"], "targetType": "BOARD", "targetId": board_id})
        await ok(c, "add_project_link", {"projectId": p["id"], "targetType": "TASK", "targetId": task["id"]})
        await ok(c, "add_project_link", {"projectId": p["id"], "targetType": "DECISION", "targetId": "ADR-7"})
        got = await ok(c, "get_project", {"projectId": p["id"]})
        assert got["project"]["counts"]["links"] == 4 and got["project"]["counts"]["decisions"] == 1
        assert {(link["targetType"], link["targetId"]) for link in got["links"]} == {
            ("REPO", "owner/name"),
            ("BOARD", board_id),
            ("TASK", task["id"]),
            ("DECISION", "ADR-7"),
        }
        bad = await err(
            c, "add_project_link", {"projectId": p["id"], "targetType": "REPO", "targetId": "https://gitlab.com/a/b"}
        )
        assert names_field(bad, "targetId")
        gone = await ok(
            c, "remove_project_link", {"projectId": p["id"], "targetType": "REPO", "targetId": "Owner/Name"}
        )
        assert gone["removed"] is True and gone["link"] == {**repo["link"]}
        before = stored_state()
        none = await ok(
            c, "remove_project_link", {"projectId": p["id"], "targetType": "REPO", "targetId": "Owner/Name"}
        )
        assert none["removed"] is False and stored_state() == before
        # the no-op names what was asked (normalised) and invents no creation stamp or author
        assert none["link"] == {"targetType": "REPO", "targetId": "owner/name", "createdAt": None, "createdBy": None}, (
            none
        )


async def test_a_link_to_a_board_of_another_workspace_is_not_found_and_writes_nothing(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        foreign_board, cols = await _board(c, outsider.workspace_id, "Theirs")
        foreign_task = await new_task(c, cols[0], "Theirs")
    async with mcp_client(server_url, owner.token) as c:
        p = await _project(c, owner.workspace_id, "Mine")
        before = stored_state()
        e = await err(c, "add_project_link", {"projectId": p["id"], "targetType": "BOARD", "targetId": foreign_board})
        assert e["code"] == "NOT_FOUND"
        e = await err(
            c, "add_project_link", {"projectId": p["id"], "targetType": "TASK", "targetId": foreign_task["id"]}
        )
        assert e["code"] == "NOT_FOUND"
        e = await err(c, "add_project_link", {"projectId": p["id"], "targetType": "BOARD", "targetId": "bd_nothere"})
        assert e["code"] == "NOT_FOUND"
        assert stored_state() == before


# -- resolve_projects_for_repo -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_resolve_finds_linked_and_default_projects_across_workspaces(server_url, owner, mode):
    human = _pat(owner.user_id, holder="human")
    repo = f"https://github.com/Owner/Resolve-{id(owner)}.git"
    norm = f"owner/resolve-{id(owner)}"
    async with mcp_client(server_url, owner.token, mode) as c:
        second = (await ok(c, "create_workspace", {"name": "Second Space"}))["workspace"]["id"]
        linked = await _project(c, owner.workspace_id, "Linked one")
        archived = await _project(c, owner.workspace_id, "Old one", status="ARCHIVED")
        await ok(c, "add_project_link", {"projectId": linked["id"], "targetType": "REPO", "targetId": repo})
        await ok(c, "add_project_link", {"projectId": archived["id"], "targetType": "REPO", "targetId": repo})
        d1 = await _project(c, second, "Default one")
        await _project(c, second, "Default gone", status="ARCHIVED")
        await ok(c, "update_workspace", {"workspaceId": second, "defaultRepo": repo})
        await ok(
            c, "update_workspace", {"workspaceId": owner.workspace_id, "defaultRepo": repo}
        )  # has a REPO link: no fallback
    async with mcp_client(server_url, human, mode) as c:
        found = await ok(c, "resolve_projects_for_repo", {"repo": repo})
    assert found["repo"] == norm
    assert {(m["project"]["id"], m["matchedBy"]) for m in found["matches"]} == {
        (linked["id"], "link"),
        (d1["id"], "default"),
    }
    assert {m["workspaceName"] for m in found["matches"]} == {"Test Space", "Second Space"}
    async with mcp_client(server_url, owner.token) as c:  # an agent token
        e = await err(c, "resolve_projects_for_repo", {"repo": repo})
    assert e["code"] == "FORBIDDEN" and e["hint"]
    pinned = _pat(owner.user_id, holder="human", workspace_id=owner.workspace_id)
    async with mcp_client(server_url, pinned) as c:
        e = await err(c, "resolve_projects_for_repo", {"repo": repo})
    assert e["code"] == "FORBIDDEN"


async def test_resolve_leaves_out_workspaces_the_caller_is_not_in(server_url, owner, outsider):
    repo = f"someone/private-{id(outsider)}"
    async with mcp_client(server_url, outsider.token) as c:
        p = await _project(c, outsider.workspace_id, "Theirs")
        await ok(c, "add_project_link", {"projectId": p["id"], "targetType": "REPO", "targetId": repo})
    async with mcp_client(server_url, _pat(owner.user_id, holder="human")) as c:
        found = await ok(c, "resolve_projects_for_repo", {"repo": repo})
    assert found["matches"] == []
