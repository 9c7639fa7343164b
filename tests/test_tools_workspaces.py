"""Behaviour of the workspace tools (list_workspaces, create_workspace, list_members,
get_token_context), the scope classes of every write tool, and ``workspaceId: ""``,
driven through the official MCP SDK client against DynamoDB Local."""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import make_actor, mcp_client
from tests.tools_support import STAMP, err, names_field, new_board, new_task, ok, stored_state, text_of


def _tag(n: int = 8) -> str:
    return "".join(random.choices(string.ascii_lowercase, k=n))


def _add_member(workspace_id: str, user_id: str, role: str) -> None:
    """Give ``user_id`` a role in ``workspace_id`` (setup only: no member tool exists yet)."""
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


# -- list_workspaces ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_list_workspaces_shows_each_membership_with_its_role(server_url, owner, outsider, mode):
    _add_member(outsider.workspace_id, owner.user_id, "MEMBER")
    async with mcp_client(server_url, owner.token, mode) as c:
        listed = (await ok(c, "list_workspaces"))["workspaces"]
    by_id = {w["id"]: w for w in listed}
    assert set(by_id) == {owner.workspace_id, outsider.workspace_id}
    assert by_id[owner.workspace_id]["role"] == "OWNER"
    assert by_id[outsider.workspace_id]["role"] == "MEMBER"
    mine = by_id[owner.workspace_id]
    assert mine["name"] == "Test Space" and mine["taskPrefix"] == "TS"
    assert mine["slug"].startswith("test-space")
    assert STAMP.match(mine["createdAt"])


async def test_list_workspaces_of_a_pinned_token_is_only_its_pin(server_url, owner, outsider):
    _add_member(outsider.workspace_id, owner.user_id, "ADMIN")
    pinned = _pat(owner.user_id, workspace_id=outsider.workspace_id)
    async with mcp_client(server_url, pinned) as c:
        listed = (await ok(c, "list_workspaces"))["workspaces"]
        assert [(w["id"], w["role"]) for w in listed] == [(outsider.workspace_id, "ADMIN")]
        # the other workspace is invisible to it, exactly like a missing one
        hidden = await err(c, "list_members", {"workspaceId": owner.workspace_id})
        assert hidden["code"] == "NOT_FOUND"
        missing = await err(c, "list_members", {"workspaceId": "ws_aaaaaaaaaaaa"})
        assert missing["code"] == "NOT_FOUND"


async def test_a_pinned_token_cannot_reach_entities_of_its_users_other_workspaces(server_url, owner, outsider):
    _add_member(outsider.workspace_id, owner.user_id, "MEMBER")
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, outsider.workspace_id, "Shared elsewhere")
        task = await new_task(c, board["columns"][0]["id"], "elsewhere")
    pinned = _pat(owner.user_id, workspace_id=owner.workspace_id)
    async with mcp_client(server_url, pinned) as c:
        before = stored_state()
        for tool, args in [
            ("list_boards", {"workspaceId": outsider.workspace_id}),
            ("create_board", {"workspaceId": outsider.workspace_id, "name": "nope"}),
            ("get_board_snapshot", {"boardId": board["board"]["id"]}),
            ("list_columns", {"boardId": board["board"]["id"]}),
            ("create_task", {"columnId": board["columns"][0]["id"], "title": "nope"}),
            ("get_task", {"taskId": task["id"]}),
            ("get_task", {"workspaceId": outsider.workspace_id, "number": task["number"]}),
            ("update_task", {"taskId": task["id"], "title": "nope"}),
            ("list_activity", {"boardId": board["board"]["id"]}),
        ]:
            assert (await err(c, tool, args))["code"] == "NOT_FOUND", tool
        assert stored_state() == before
        # its own workspace works as usual
        assert (await ok(c, "list_boards", {"workspaceId": owner.workspace_id}))["boards"] == []


async def test_list_workspaces_for_a_user_without_any(server_url, stack):
    lonely = make_actor("Lonely", None)
    async with mcp_client(server_url, lonely.token) as c:
        assert (await ok(c, "list_workspaces")) == {"workspaces": []}


# -- create_workspace --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_create_workspace_makes_caller_owner_and_derives_slug_and_prefix(server_url, owner, mode):
    tag = _tag()
    name = f"Blue Harbor {tag}"
    async with mcp_client(server_url, owner.token, mode) as c:
        ws = (await ok(c, "create_workspace", {"name": name}))["workspace"]
        assert ws["name"] == name and ws["role"] == "OWNER"
        assert ws["slug"] == f"blue-harbor-{tag}"
        assert ws["taskPrefix"] == "BH" + tag[0].upper()
        assert ws["id"].startswith("ws_") and STAMP.match(ws["createdAt"])
        listed = {w["id"]: w for w in (await ok(c, "list_workspaces"))["workspaces"]}
        assert listed[ws["id"]] == ws
        members = (await ok(c, "list_members", {"workspaceId": ws["id"]}))["members"]
        assert [(m["userId"], m["role"]) for m in members] == [(owner.user_id, "OWNER")]
        # the prefix is what task keys use in that workspace
        board = await new_board(c, ws["id"])
        task = await new_task(c, board["columns"][0]["id"], "first")
        assert task["key"] == f"{ws['taskPrefix']}-1"


async def test_duplicate_workspace_names_get_distinct_slugs(server_url, owner):
    name = f"Same Name {_tag()}"
    async with mcp_client(server_url, owner.token) as c:
        made = [(await ok(c, "create_workspace", {"name": name}))["workspace"] for _ in range(3)]
    base = made[0]["slug"]
    assert [w["slug"] for w in made] == [base, f"{base}-2", f"{base}-3"]
    assert len({w["id"] for w in made}) == 3
    first = made[0]["taskPrefix"]
    assert [w["taskPrefix"] for w in made] == [
        first,
        f"{first}2",
        f"{first}3",
    ]  # one user's task keys never repeat (issue 24)


async def test_create_workspace_name_rules(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        accented = (await ok(c, "create_workspace", {"name": f"Café Zoë {_tag()}"}))["workspace"]
        assert accented["slug"].startswith("cafe-zoe-") and accented["taskPrefix"].startswith("CZ")
        single = (await ok(c, "create_workspace", {"name": "Jentrix"}))["workspace"]
        assert single["taskPrefix"] == "JEN" and single["slug"].startswith("jentrix")
        non_latin = (await ok(c, "create_workspace", {"name": "日本語チーム"}))["workspace"]
        assert non_latin["taskPrefix"] == "WS" and non_latin["slug"].startswith("workspace")
        before = stored_state()
        blank = await err(c, "create_workspace", {"name": "   "})
        assert names_field(blank, "name")
        empty = await err(c, "create_workspace", {"name": ""})
        assert names_field(empty, "name")
        too_long = await err(c, "create_workspace", {"name": "x" * 81})
        assert names_field(too_long, "name")
        assert stored_state() == before


async def test_create_workspace_refused_for_a_pinned_token_and_nothing_written(server_url, owner):
    pinned = _pat(owner.user_id, workspace_id=owner.workspace_id)
    async with mcp_client(server_url, pinned) as c:
        before = stored_state()
        refused = await err(c, "create_workspace", {"name": f"Sneaky {_tag()}"})
        assert refused["code"] == "FORBIDDEN"
        keyed = await err(c, "create_workspace", {"name": f"Sneaky {_tag()}", "idempotencyKey": "k-1"})
        assert keyed["code"] == "FORBIDDEN"
        assert stored_state() == before
        assert [w["id"] for w in (await ok(c, "list_workspaces"))["workspaces"]] == [owner.workspace_id]


async def test_create_workspace_idempotency_key(server_url, owner):
    name = f"Keyed {_tag()}"
    async with mcp_client(server_url, owner.token) as c:
        first = await ok(c, "create_workspace", {"name": name, "idempotencyKey": "ws-key-1"})
        again = await ok(c, "create_workspace", {"name": name, "idempotencyKey": "ws-key-1"})
        assert again == first
        other = await err(c, "create_workspace", {"name": name + " b", "idempotencyKey": "ws-key-1"})
        assert other["code"] == "CONFLICT"
        mine = [w for w in (await ok(c, "list_workspaces"))["workspaces"] if w["name"].startswith(name)]
        assert [w["id"] for w in mine] == [first["workspace"]["id"]]


# -- list_members ------------------------------------------------------------------------------
async def test_list_members(server_url, owner, outsider):
    _add_member(owner.workspace_id, outsider.user_id, "MEMBER")
    async with mcp_client(server_url, owner.token) as c:
        members = (await ok(c, "list_members", {"workspaceId": owner.workspace_id}))["members"]
    by_user = {m["userId"]: m for m in members}
    assert set(by_user) == {owner.user_id, outsider.user_id}
    assert by_user[owner.user_id]["role"] == "OWNER" and by_user[owner.user_id]["email"] == owner.email
    assert by_user[owner.user_id]["displayName"] == "Ada"
    assert by_user[outsider.user_id]["role"] == "MEMBER" and by_user[outsider.user_id]["displayName"] == "Mallory"
    assert all(STAMP.match(m["joinedAt"]) for m in members)


async def test_list_members_of_a_foreign_workspace_is_not_found(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        foreign = await err(c, "list_members", {"workspaceId": owner.workspace_id})
        missing = await err(c, "list_members", {"workspaceId": "ws_zzzzzzzzzzzz"})
    assert foreign["code"] == missing["code"] == "NOT_FOUND"
    assert owner.workspace_id in foreign["message"]


# -- workspaceId "" --------------------------------------------------------------------------
async def test_empty_workspace_id_means_the_pinned_workspace(server_url, owner):
    pinned = _pat(owner.user_id, workspace_id=owner.workspace_id)
    async with mcp_client(server_url, pinned) as c:
        members = (await ok(c, "list_members", {"workspaceId": ""}))["members"]
        assert [m["userId"] for m in members] == [owner.user_id]
        board = await new_board(c, "", "Pinned board")
        assert board["board"]["workspaceId"] == owner.workspace_id
        boards = (await ok(c, "list_boards", {"workspaceId": ""}))["boards"]
        assert board["board"]["id"] in [b["id"] for b in boards]
        task = await new_task(c, board["columns"][0]["id"], "by number")
        got = await ok(c, "get_task", {"workspaceId": "", "number": task["number"]})
        assert got["task"]["id"] == task["id"]


async def test_empty_workspace_id_with_an_unpinned_token_is_the_callers_only_workspace(server_url, owner):
    """Issue 24 item 20: over HTTP an unpinned token's "" resolves to its user's only workspace."""
    async with mcp_client(server_url, owner.token) as c:
        members = (await ok(c, "list_members", {"workspaceId": ""}))["members"]
        assert [m["userId"] for m in members] == [owner.user_id]
        board = await new_board(c, "", "Only workspace")
        assert board["board"]["workspaceId"] == owner.workspace_id
        task = await new_task(c, board["columns"][0]["id"], "by number")
        got = await ok(c, "get_task", {"workspaceId": "", "number": task["number"]})
        assert got["task"]["id"] == task["id"]


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        ("list_members", {}),
        ("list_boards", {}),
        ("create_board", {"name": "Nowhere"}),
        ("get_task", {"number": 1}),
    ],
)
async def test_empty_workspace_id_of_an_unpinned_token_with_several_workspaces_lists_them(
    server_url, owner, outsider, tool, extra
):
    _add_member(outsider.workspace_id, owner.user_id, "MEMBER")
    async with mcp_client(server_url, owner.token) as c:
        before = stored_state()
        problem = await err(c, tool, {"workspaceId": "", **extra})
        assert problem["code"] == "INVALID_INPUT" and names_field(problem, "workspaceId"), problem
        assert owner.workspace_id in problem["message"] and outsider.workspace_id in problem["message"]
        assert stored_state() == before


async def test_empty_workspace_id_of_a_user_without_a_workspace_is_invalid(server_url, stack):
    loner = make_actor("Lone", None)
    async with mcp_client(server_url, loner.token) as c:
        problem = await err(c, "list_boards", {"workspaceId": ""})
    assert (
        problem["code"] == "INVALID_INPUT"
        and names_field(problem, "workspaceId")
        and "create_workspace" in problem["hint"]
    )


# -- get_token_context ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_token_context_reports_scopes_pin_identity_and_expiry(server_url, owner, mode):
    expires = (datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    secret = _pat(
        owner.user_id,
        scopes=["write"],
        workspace_id=owner.workspace_id,
        display_name="Build bot",
        emoji="🤖",
        expires_at=expires,
    )
    async with mcp_client(server_url, secret, mode) as c:
        result = await c.call_tool("get_token_context", {})
        ctx = await ok(c, "get_token_context")
    assert secret not in text_of(result)
    assert secret[3:] not in text_of(result)
    assert ctx["kind"] == "pat" and ctx["userId"] == owner.user_id and ctx["tokenId"].startswith("tok_")
    assert ctx["scopes"] == ["read", "write"]
    assert ctx["storedScopes"] == ["write"]
    assert ctx["fullAccess"] is False
    assert ctx["workspaceId"] == owner.workspace_id
    assert ctx["displayName"] == "Build bot" and ctx["emoji"] == "🤖"
    assert ctx["expiresAt"] == expires
    window = ctx["rateLimit"]
    assert window["windowSeconds"] == 60 and window["limit"] >= window["used"] >= 1
    assert window["remaining"] == window["limit"] - window["used"]
    assert STAMP.match(window["resetAt"])


async def test_token_context_of_an_unscoped_token_is_full_access(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        result = await c.call_tool("get_token_context", {})
    assert owner.token not in text_of(result)
    ctx = result.structured_content
    assert ctx["storedScopes"] == [] and ctx["fullAccess"] is True
    assert ctx["scopes"] == ["read", "write", "admin"]
    assert ctx["workspaceId"] is None and ctx["boundWorkspaceId"] is None
    assert ctx["displayName"] is None and ctx["emoji"] is None and ctx["expiresAt"] is None
    assert ctx["observe"] is False
    assert ctx["holder"] == "agent"  # tokens are an agent's unless minted for a human


async def test_token_context_says_a_human_token_is_held_by_a_human(server_url, owner):
    from domain import auth

    secret, _ = auth.mint_pat(owner.user_id, holder="human")
    async with mcp_client(server_url, secret) as c:
        ctx = await ok(c, "get_token_context")
    assert ctx["holder"] == "human"
    with pytest.raises(ValueError, match="unknown holder 'robot'"):
        auth.mint_pat(owner.user_id, holder="robot")  # type: ignore[arg-type]


async def test_token_context_of_a_read_token(server_url, owner):
    secret = _pat(owner.user_id, scopes=["read"])
    async with mcp_client(server_url, secret) as c:
        ctx = await ok(c, "get_token_context")
    assert ctx["scopes"] == ["read"] and ctx["storedScopes"] == ["read"] and ctx["fullAccess"] is False


def test_token_context_rate_window_counts_calls(server_url, owner):
    # Raw JSON-RPC: every request counts over HTTP (docs/rate-limits.md), and the SDK client sends
    # tools/list on its own, so the count between the two reads would depend on the client.
    from tests.rpc import call_tool
    from tests.rpc import ok as rpc_ok

    secret = _pat(owner.user_id)
    for _ in range(3):  # a minute boundary between two calls restarts the count: retry then
        first = rpc_ok(call_tool(server_url, secret, "get_token_context", {}))["rateLimit"]
        rpc_ok(call_tool(server_url, secret, "list_workspaces", {}))
        second = rpc_ok(call_tool(server_url, secret, "get_token_context", {}))["rateLimit"]
        if first["resetAt"] == second["resetAt"]:
            break
    assert first["resetAt"] == second["resetAt"]
    assert second["used"] == first["used"] + 2
    assert second["remaining"] == first["remaining"] - 2


# -- scope classes ----------------------------------------------------------------------------
async def _write_calls(c, ws: str) -> list[tuple[str, dict]]:
    """One plausible call of every write tool, against real entities made with a full token."""
    board = await new_board(c, ws, "Scoped")
    cols = board["columns"]
    t1 = await new_task(c, cols[0]["id"], "one")
    t2 = await new_task(c, cols[0]["id"], "two")
    return [
        ("create_workspace", {"name": f"Scoped {_tag()}"}),
        ("create_board", {"workspaceId": ws, "name": "Another"}),
        ("rename_board", {"boardId": board["board"]["id"], "name": "Renamed"}),
        ("manage_columns", {"action": "create", "boardId": board["board"]["id"], "name": "Extra"}),
        ("manage_columns", {"action": "rename", "columnId": cols[1]["id"], "name": "Ready"}),
        ("manage_columns", {"action": "move", "columnId": cols[3]["id"], "beforeColumnId": cols[0]["id"]}),
        ("manage_columns", {"action": "archive", "columnId": cols[2]["id"]}),
        ("create_task", {"columnId": cols[0]["id"], "title": "three"}),
        ("update_task", {"taskId": t1["id"], "title": "one, edited", "expectedUpdatedAt": t1["updatedAt"]}),
        ("move_task", {"taskId": t2["id"], "columnId": cols[1]["id"]}),
        ("archive_task", {"taskId": t1["id"]}),
    ]


async def test_read_token_is_refused_every_write_tool_and_nothing_is_written(server_url, owner):
    read_only = _pat(owner.user_id, scopes=["read"])
    async with mcp_client(server_url, owner.token) as full:
        calls = await _write_calls(full, owner.workspace_id)
    assert {name for name, _ in calls} == {
        "create_workspace",
        "create_board",
        "rename_board",
        "manage_columns",
        "create_task",
        "update_task",
        "move_task",
        "archive_task",
    }
    before = stored_state()
    async with mcp_client(server_url, read_only) as c:
        for name, args in calls:
            refused = await err(c, name, args)
            assert refused["code"] == "FORBIDDEN", (name, refused)
            assert "write" in refused["message"] and refused["hint"]
        keyed = await err(c, "create_task", {**calls[7][1], "idempotencyKey": "read-key"})
        assert keyed["code"] == "FORBIDDEN"
        assert stored_state() == before
        # reading is what it is for
        assert (await ok(c, "list_boards", {"workspaceId": owner.workspace_id}))["boards"]


async def test_write_token_can_run_every_write_tool(server_url, owner):
    writer = _pat(owner.user_id, scopes=["write"])
    async with mcp_client(server_url, owner.token) as full:
        calls = await _write_calls(full, owner.workspace_id)
    async with mcp_client(server_url, writer) as c:
        for name, args in calls:
            await ok(c, name, args)
        assert (await ok(c, "get_token_context"))["scopes"] == ["read", "write"]


async def test_two_workspaces_of_the_same_name_get_different_task_key_prefixes(server_url, stack):
    """Issue 24 item 21: a second workspace named like one of yours numbers its tasks apart
    (TS2-1 beside TS-1), so a task key names one task among your workspaces."""
    actor = make_actor("Twin", "Twin Space")
    async with mcp_client(server_url, actor.token) as c:
        second = (await ok(c, "create_workspace", {"name": "Twin Space"}))["workspace"]
        third = (await ok(c, "create_workspace", {"name": "twin space"}))["workspace"]
        listed = {w["id"]: w["taskPrefix"] for w in (await ok(c, "list_workspaces"))["workspaces"]}
        board = await new_board(c, second["id"], "Keys")
        task = await new_task(c, board["columns"][0]["id"], "numbered apart")
    assert listed[actor.workspace_id] == "TS"
    assert second["taskPrefix"] == "TS2" and third["taskPrefix"] == "TS3"
    assert task["key"] == "TS2-1"
