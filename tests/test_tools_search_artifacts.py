"""search_artifacts through the official MCP SDK client against DynamoDB Local: the artifacts
corpus of the search component (redacted bodies only, withdrawn and TRACE excluded, apart from
the tasks corpus), its query rules, filters, cursor and hints."""

from __future__ import annotations

import pytest

from tests.conftest import make_actor, mcp_client
from tests.tools_support import err, new_board, new_task, ok, stored_state

pytestmark = pytest.mark.asyncio

SECRET = "ghp_R8uXk2Lm9QpZt4Vw7Yb1Nc3Hd6Jf0Ge5Sa2K"


async def _world(client, ws: str) -> dict[str, dict]:
    board = await new_board(client, ws, "Artifact search")
    task = await new_task(client, board["columns"][0]["id"], "Quokka census task")
    made = {"task": task}
    for name, kind, title, body in [
        (
            "findings",
            "FINDINGS",
            "Cache findings",
            f"The quokka colony cache went cold overnight; the token {SECRET} leaked in the logs.",
        ),
        ("plan", "PLAN", "Migration plan", "Move the wombat service to the new cluster, then warm the cache."),
        (
            "learning",
            "LEARNING",
            "Numbat learning",
            "Numbats prefer termites; the dataloader retries were the real fix.",
        ),
        ("trace", "TRACE", "quokka transcript", "quokka quokka quokka in a raw trace part"),
    ]:
        args = {"workspaceId": ws, "type": kind, "title": title, "body": body, "taskId": task["id"]}
        if kind == "TRACE":
            args["tracePart"] = "part-1"
        made[name] = (await ok(client, "attach_artifact", args))["artifact"]
    return made


def _ids(result) -> list[str]:
    return [r["id"] for r in result["results"]]


async def test_artifact_search_end_to_end(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        made = await _world(c, ws)
        r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "quokka"})
        # the task's own words never answer search_artifacts, nor the TRACE part's
        assert _ids(r) == [made["findings"]["id"]] and r["totalCount"] == 1 and r["hint"] is None
        row = r["results"][0]
        assert row["type"] == "FINDINGS" and row["taskId"] == made["task"]["id"] and row["matchedFields"] == ["body"]
        assert "quokka" in row["snippet"].casefold() and SECRET not in row["snippet"]
        # and artifacts never answer search_tasks
        t = await ok(c, "search_tasks", {"workspaceId": ws, "query": "colony"})
        assert t["results"] == [] and t["totalCount"] == 0
        t = await ok(c, "search_tasks", {"workspaceId": ws, "query": "quokka"})
        assert [x["id"] for x in t["results"]] == [made["task"]["id"]]
        # syntax: phrase, negation, or; title outranks body
        assert _ids(await ok(c, "search_artifacts", {"workspaceId": ws, "query": '"colony cache"'})) == [
            made["findings"]["id"]
        ]
        assert _ids(await ok(c, "search_artifacts", {"workspaceId": ws, "query": '"cache colony"'})) == []
        assert _ids(await ok(c, "search_artifacts", {"workspaceId": ws, "query": "cache -wombat"})) == [
            made["findings"]["id"]
        ]
        r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "termites or wombat"})
        assert set(_ids(r)) == {made["plan"]["id"], made["learning"]["id"]}
        r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "cache"})
        assert _ids(r)[0] == made["findings"]["id"] and "title" in r["results"][0]["matchedFields"]
        # substring inside a word of the body, rechecked on the stored body
        r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "ataloade"})
        assert _ids(r) == [made["learning"]["id"]] and r["results"][0]["matchedFields"] == ["body"]
        # filters
        assert _ids(await ok(c, "search_artifacts", {"workspaceId": ws, "query": "cache", "type": "PLAN"})) == [
            made["plan"]["id"]
        ]
        r = await ok(
            c,
            "search_artifacts",
            {"workspaceId": ws, "query": "cache", "projectId": None, "taskId": made["task"]["id"]},
        )
        assert set(_ids(r)) == {made["findings"]["id"], made["plan"]["id"]}


async def test_a_redacted_secret_is_never_indexed(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        await _world(c, ws)
        for query in (SECRET, SECRET[4:20], "R8uXk2Lm9QpZt4Vw7Yb1Nc3Hd6Jf0Ge5Sa2K"):
            r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": query})
            assert r["results"] == [], query
    stored = repr(stored_state()).casefold()
    assert SECRET.casefold() not in stored and SECRET[4:].casefold() not in stored


async def test_withdrawal_removes_the_postings(server_url, owner):
    from domain.store import artifacts as artifact_store

    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        made = await _world(c, ws)
        assert _ids(await ok(c, "search_artifacts", {"workspaceId": ws, "query": "numbat"})) == [made["learning"]["id"]]
        head = artifact_store.get(ws, made["learning"]["id"])
        artifact_store.withdraw(head, actor_id=owner.user_id, at="2099-01-01T00:00:00.000Z")
        r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "numbat"})
        assert r["results"] == [] and "numbat" in r["hint"]
    from domain.search.repair import drain

    drain(ws)  # the consumer's pass (the stream on AWS)
    stored = stored_state()
    doc = f"A#{made['learning']['id']}"
    assert not [k for k in stored if len(k) == 2 and k[1] == doc], (
        "the withdrawn artifact's postings and marker are gone"
    )


async def test_read_your_write_before_the_postings(server_url, owner, monkeypatch):
    """With no commit hook (a crash right after the commit), the marker answers the next search."""
    from domain.store import db

    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        task = await new_task(c, (await new_board(c, ws, "Pending"))["columns"][0]["id"], "Holder")
        monkeypatch.setattr(db, "_commit_hooks", [])
        made = (
            await ok(
                c,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "DECISION",
                    "title": "Axolotl decision",
                    "body": "We keep the axolotl tank at 18 degrees.",
                    "taskId": task["id"],
                },
            )
        )["artifact"]
        r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "axolotl tank"})
        assert _ids(r) == [made["id"]] and r["results"][0]["snippet"].startswith("We keep")


async def test_bad_input_cursor_and_paging(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        task = await new_task(c, (await new_board(c, ws, "Pages"))["columns"][0]["id"], "Pages")
        for i in range(5):
            await ok(
                c,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "REPORT",
                    "title": f"Report {i}",
                    "body": f"platypus report number {i}",
                    "taskId": task["id"],
                },
            )
        first = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "platypus", "limit": 2})
        assert first["totalCount"] == 5 and len(first["results"]) == 2 and first["nextCursor"]
        assert first["truncated"] is True and first["capped"] is False and "nextCursor" in first["notice"], first
        seen = _ids(first)
        cursor = first["nextCursor"]
        while cursor:
            page = await ok(
                c, "search_artifacts", {"workspaceId": ws, "query": "platypus", "limit": 2, "cursor": cursor}
            )
            seen += _ids(page)
            cursor = page["nextCursor"]
        assert len(seen) == len(set(seen)) == 5
        assert page["truncated"] is False and page["notice"] is None  # the last page holds the rest
        e = await err(
            c, "search_artifacts", {"workspaceId": ws, "query": "report", "limit": 2, "cursor": first["nextCursor"]}
        )
        assert e["code"] == "INVALID_INPUT" and "cursor" in e["message"]
        e = await err(
            c,
            "search_artifacts",
            {"workspaceId": ws, "query": "platypus", "type": "PLAN", "cursor": first["nextCursor"]},
        )
        assert e["code"] == "INVALID_INPUT"
        for query in ("", "   ", "-platypus", "the"):
            e = await err(c, "search_artifacts", {"workspaceId": ws, "query": query})
            assert e["code"] == "INVALID_INPUT" and e["hint"], query
        e = await err(c, "search_artifacts", {"workspaceId": ws, "query": "x" * 1001})
        assert e["code"] == "INVALID_INPUT" and "1000" in (e["message"] + (e.get("hint") or "")).replace(",", "")
        for query in (
            '"unclosed platypus',
            "a@b -- or OR platypus",
            "🦫 ' ; DROP TABLE platypus",
            "((( platypus",
            "platypus OR",
            "(((",
            "or",
        ):
            result = await c.call_tool(
                "search_artifacts", {"workspaceId": ws, "query": query}
            )  # an answer or INVALID_INPUT, never a fault
            if result.is_error:
                assert '"INVALID_INPUT"' in result.content[0].text and '"hint"' in result.content[0].text, query
        r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "platypus zebra"})
        assert r["results"] == [] and "zebra" in r["hint"]


async def test_tenant_isolation(server_url, owner):
    other = make_actor("Mallory", "Elsewhere")
    async with mcp_client(server_url, other.token) as c:
        await _world(c, other.workspace_id)
    async with mcp_client(server_url, owner.token) as c:
        r = await ok(c, "search_artifacts", {"workspaceId": owner.workspace_id, "query": "quokka colony"})
        assert r["results"] == []
        e = await err(c, "search_artifacts", {"workspaceId": other.workspace_id, "query": "quokka"})
        assert e["code"] in ("FORBIDDEN", "NOT_FOUND")


async def test_a_bare_aws_secret_key_in_prose_is_not_indexed_nor_shown(server_url, owner):
    """Issue 24 item 7: a 40-character AWS secret access key written in prose, with no keyword near
    it, is redacted before storage, so neither the body, the index nor a snippet holds it."""
    import secrets

    from domain import redaction

    while True:  # a fake key: 40 random base64 characters, as AWS makes them
        key = "".join(
            secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(40)
        )
        if redaction._bare_aws_secret(key):
            break
    ws = owner.workspace_id
    body = f"The wombat migration notes: the old worker signed with {key} and nobody rotated it."
    async with mcp_client(server_url, owner.token) as c:
        project = (await ok(c, "create_project", {"workspaceId": ws, "name": "Wombat"}))["project"]
        made = (
            await ok(
                c,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "FINDINGS",
                    "title": "Wombat notes",
                    "body": body,
                    "projectId": project["id"],
                },
            )
        )["artifact"]
        assert made["redactions"] == ["aws-secret-key-shape"]
        r = await ok(c, "search_artifacts", {"workspaceId": ws, "query": "wombat"})
        assert (
            _ids(r) == [made["id"]]
            and key not in r["results"][0]["snippet"]
            and "[REDACTED:" in r["results"][0]["snippet"]
        )
        assert (await ok(c, "search_artifacts", {"workspaceId": ws, "query": key}))["results"] == []
    assert key not in str(stored_state())
