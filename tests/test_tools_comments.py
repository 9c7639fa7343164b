"""Comments through the official SDK client: markdown bodies, oldest first with authors, author-only
edits and deletes (even for admins), CAS on update, archived tasks readable and closed, counts."""

from __future__ import annotations

import uuid

from tests.conftest import make_actor, mcp_client
from tests.tools_support import err, names_field, new_board, new_task, ok, stored_state


async def _task(c, workspace_id):
    board = await new_board(c, workspace_id, f"Comments {uuid.uuid4().hex[:12]}")
    return await new_task(c, board["columns"][0]["id"], "Discuss me")


async def test_comments_are_listed_oldest_first_with_authors_and_counts(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        made = [
            (await ok(c, "create_comment", {"taskId": task["id"], "body": f"**note {i}**"}))["comment"]
            for i in range(5)
        ]
        assert all(m["authorId"] == owner.user_id and m["authorName"] == "Ada" and m["editedAt"] is None for m in made)
        first = await ok(c, "list_comments", {"taskId": task["id"], "limit": 2})
        assert first["totalCount"] == 5 and [x["id"] for x in first["comments"]] == [m["id"] for m in made[:2]]
        seen = [x["id"] for x in first["comments"]]
        cursor = first["nextCursor"]
        while cursor:
            page = await ok(c, "list_comments", {"taskId": task["id"], "limit": 2, "cursor": cursor})
            seen += [x["id"] for x in page["comments"]]
            cursor = page["nextCursor"]
        assert seen == [m["id"] for m in made]
        other = await _task(c, owner.workspace_id)
        bad = await err(c, "list_comments", {"taskId": other["id"], "cursor": first["nextCursor"]})
        assert names_field(bad, "cursor")


async def test_only_the_author_edits_or_deletes_even_an_admin_is_refused(server_url, stack, owner):
    from domain import auth
    from domain.store import keys, members
    from domain.store.models import UserRow

    admin = auth.create_user(f"adm-{uuid.uuid4().hex[:12]}@example.com", "Admin Alice")
    members.add(owner.workspace_id, UserRow.get(*keys.user_profile(admin.userId)), "ADMIN")
    admin_token, _ = auth.mint_pat(admin.userId)
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        mine = (await ok(c, "create_comment", {"taskId": task["id"], "body": "owner's words"}))["comment"]
    before = stored_state()
    async with mcp_client(server_url, admin_token) as c:
        for tool, args in (
            ("update_comment", {"commentId": mine["id"], "body": "rewritten"}),
            ("delete_comment", {"commentId": mine["id"]}),
        ):
            refused = await err(c, tool, args)
            assert refused["code"] == "FORBIDDEN" and "author" in refused["message"], refused
        assert stored_state() == before
        theirs = (await ok(c, "create_comment", {"taskId": task["id"], "body": "admin's words"}))["comment"]
        assert theirs["authorName"] == "Admin Alice"


async def test_edit_keeps_created_at_stamps_edited_and_honours_expected_updated_at(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        comment = (await ok(c, "create_comment", {"taskId": task["id"], "body": "first draft"}))["comment"]
        edited = await ok(
            c,
            "update_comment",
            {"commentId": comment["id"], "body": "second draft", "expectedUpdatedAt": comment["updatedAt"]},
        )
        assert edited["changedFields"] == ["body"]
        e = edited["comment"]
        assert (
            e["createdAt"] == comment["createdAt"]
            and e["editedAt"] == e["updatedAt"] > comment["updatedAt"]
            and e["body"] == "second draft"
        )
        stale = await err(
            c,
            "update_comment",
            {"commentId": comment["id"], "body": "third", "expectedUpdatedAt": comment["updatedAt"]},
        )
        assert stale["code"] == "CONFLICT" and stale["current"]["body"] == "second draft"
        same = await ok(c, "update_comment", {"commentId": comment["id"], "body": "second draft"})
        assert same["changedFields"] == [] and same["comment"]["updatedAt"] == e["updatedAt"]
        nothing = await err(c, "update_comment", {"commentId": comment["id"], "body": None})
        assert names_field(nothing, "body")


async def test_delete_is_final_and_uncounts(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        a = (await ok(c, "create_comment", {"taskId": task["id"], "body": "keep"}))["comment"]
        b = (await ok(c, "create_comment", {"taskId": task["id"], "body": "drop"}))["comment"]
        gone = await ok(c, "delete_comment", {"commentId": b["id"]})
        assert gone["deleted"]["id"] == b["id"]
        again = await err(c, "delete_comment", {"commentId": b["id"]})
        assert again["code"] == "NOT_FOUND"
        listed = await ok(c, "list_comments", {"taskId": task["id"]})
        assert listed["totalCount"] == 1 and [x["id"] for x in listed["comments"]] == [a["id"]]


async def test_archived_task_comments_are_readable_and_closed(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        comment = (await ok(c, "create_comment", {"taskId": task["id"], "body": "before archiving"}))["comment"]
        await ok(c, "archive_task", {"taskId": task["id"]})
        before = stored_state()
        for tool, args in (
            ("create_comment", {"taskId": task["id"], "body": "too late"}),
            ("update_comment", {"commentId": comment["id"], "body": "too late"}),
            ("delete_comment", {"commentId": comment["id"]}),
        ):
            closed = await err(c, tool, args)
            assert closed["code"] == "INVALID_INPUT" and "archived" in closed["message"], (tool, closed)
        assert stored_state() == before
        listed = await ok(c, "list_comments", {"taskId": task["id"]})
        assert [x["body"] for x in listed["comments"]] == ["before archiving"]


async def test_bodies_are_bounded_and_visible_and_nothing_is_written(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        before = stored_state()
        for body in ("x" * 20_001, "", "\u200b \u2800"):
            bad = await err(c, "create_comment", {"taskId": task["id"], "body": body})
            assert names_field(bad, "body"), bad
        assert stored_state() == before
        big = await ok(c, "create_comment", {"taskId": task["id"], "body": "é" * 20_000})
        assert len(big["comment"]["body"]) == 20_000


async def test_a_keyed_create_comment_replays(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        args = {"taskId": task["id"], "body": "once", "idempotencyKey": f"k-{uuid.uuid4()}"}
        first = await ok(c, "create_comment", args)
        second = await ok(c, "create_comment", args)
        assert first == second
        listed = await ok(c, "list_comments", {"taskId": task["id"]})
        assert listed["totalCount"] == 1
        other = await err(c, "create_comment", {**args, "body": "twice"})
        assert other["code"] == "CONFLICT"


async def test_another_workspaces_comment_is_not_found(server_url, owner, stack):
    stranger = make_actor("Stranger", f"Far {uuid.uuid4().hex[:12]}")
    async with mcp_client(server_url, stranger.token) as c:
        task = await _task(c, stranger.workspace_id)
        theirs = (await ok(c, "create_comment", {"taskId": task["id"], "body": "private"}))["comment"]
    async with mcp_client(server_url, owner.token) as c:
        for tool, args in (
            ("list_comments", {"taskId": task["id"]}),
            ("update_comment", {"commentId": theirs["id"], "body": "x"}),
            ("delete_comment", {"commentId": theirs["id"]}),
        ):
            assert (await err(c, tool, args))["code"] == "NOT_FOUND"


async def test_secrets_in_comment_bodies_are_redacted_on_create_and_update(server_url, owner):
    """Issue 24 item 8: comment bodies lose their secrets before storage (a Stripe test key, a
    mysql -p password, a Google API key in a URL), and the answers name the rules."""
    import secrets
    import string

    alnum = string.ascii_letters + string.digits
    stripe = "sk_test_" + "".join(secrets.choice(alnum) for _ in range(24))
    pw = "".join(secrets.choice(alnum) for _ in range(14))
    gkey = "AIza" + "".join(secrets.choice(alnum + "-_") for _ in range(35))
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id)
        task = await new_task(c, board["columns"][0]["id"], "Payments")
        made = await ok(c, "create_comment", {"taskId": task["id"], "body": f"use {stripe} for the sandbox"})
        assert made["redactions"] == ["stripe-key"] and stripe not in made["comment"]["body"]
        upd = await ok(
            c,
            "update_comment",
            {
                "commentId": made["comment"]["id"],
                "body": f"`mysql -u app -p{pw} pay`, map https://maps.example.com/js?key={gkey}&cb=x",
            },
        )
        assert upd["redactions"] == ["google-api-key", "mysql-password"], upd["redactions"]
        assert (
            pw not in upd["comment"]["body"]
            and gkey not in upd["comment"]["body"]
            and "&cb=x" in upd["comment"]["body"]
        )
        listed = await ok(c, "list_comments", {"taskId": task["id"]})
        assert stripe not in str(listed) and pw not in str(listed) and gkey not in str(listed)
    state = str(stored_state())
    assert stripe not in state and pw not in state and gkey not in state
