"""search_tasks through the official MCP SDK client against DynamoDB Local."""

from __future__ import annotations

from tests.conftest import make_actor, mcp_client
from tests.tools_support import err, ok, stored_state


async def _world(server_url, actor):
    async with mcp_client(server_url, actor.token) as c:
        b = await ok(c, "create_board", {"workspaceId": actor.workspace_id, "name": "Search board"})
        col = b["columns"][0]["id"]
        made = {}
        for title, desc in [
            ("Fix login redirect", "Users land on a blank page after signing in"),
            ("Login page redesign", "New colours for the sign-in screen"),
            ("Billing export", "CSV export of invoices, see DataLoader"),
            ("Archived login thing", "gone"),
        ]:
            made[title] = (await ok(c, "create_task", {"columnId": col, "title": title, "description": desc}))["task"]
        await ok(c, "archive_task", {"taskId": made["Archived login thing"]["id"]})
        return b, made


async def test_search_end_to_end(server_url, owner):
    if True:
        _b, made = await _world(server_url, owner)
        ws = owner.workspace_id
        async with mcp_client(server_url, owner.token) as c:
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": "login"})
            ids = [x["id"] for x in r["results"]]
            assert set(ids) == {
                made["Fix login redirect"]["id"],
                made["Login page redesign"]["id"],
            }  # archived excluded
            assert (
                r["totalCount"] == 2
                and r["results"][0]["boardName"] == "Search board"
                and r["results"][0]["columnName"]
            )
            assert all("title" in x["matchedFields"] for x in r["results"])
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": 'login -redesign "blank page"'})
            assert [x["id"] for x in r["results"]] == [made["Fix login redirect"]["id"]]
            # exact key first, any case
            key = made["Billing export"]["key"]
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": key.lower()})
            assert r["results"][0]["id"] == made["Billing export"]["id"] and "key" in r["results"][0]["matchedFields"]
            # substring, case-insensitive, rechecked on the row
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": "ataLOAD"})
            assert [x["id"] for x in r["results"]] == [made["Billing export"]["id"]]
            assert r["results"][0]["matchedFields"] == ["description"]
            # zero results carry a hint naming the word
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": "login zzyzx"})
            assert r["results"] == [] and "zzyzx" in r["hint"]
            # pagination with a cursor bound to the query
            p1 = await ok(c, "search_tasks", {"workspaceId": ws, "query": "login", "limit": 1})
            assert len(p1["results"]) == 1 and p1["nextCursor"]
            p2 = await ok(
                c, "search_tasks", {"workspaceId": ws, "query": "login", "limit": 1, "cursor": p1["nextCursor"]}
            )
            assert p2["results"][0]["id"] != p1["results"][0]["id"] and p2["nextCursor"] is None
            e = await err(c, "search_tasks", {"workspaceId": ws, "query": "billing", "cursor": p1["nextCursor"]})
            assert e["code"] == "INVALID_INPUT"
            # filters
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": "login", "priority": "URGENT"})
            assert r["results"] == [] and r["hint"]
            # read-your-write on a comment
            t = made["Billing export"]
            await ok(c, "create_comment", {"taskId": t["id"], "body": "the axolotl approves"})
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": "axolotl"})
            assert [x["id"] for x in r["results"]] == [t["id"]] and r["results"][0]["matchedFields"] == ["comment"]


async def test_filters_name_the_label_resolve_me_and_bound_due_dates_like_list_tasks(server_url, owner):
    """labelName (any case), assigneeId "me", dueBefore exclusive and dueAfter inclusive: the same
    names and bounds as list_tasks and list_my_work."""
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        b = await ok(c, "create_board", {"workspaceId": ws, "name": "Filter board"})
        col = b["columns"][0]["id"]
        mine = (await ok(c, "create_task", {"columnId": col, "title": "Quokka mine", "dueDate": "2031-05-10"}))["task"]
        other = (await ok(c, "create_task", {"columnId": col, "title": "Quokka other", "dueDate": "2031-05-11"}))[
            "task"
        ]
        label = (
            await ok(
                c,
                "manage_labels",
                {"action": "create", "boardId": b["board"]["id"], "name": "Urgent-Fix", "color": "#ff0000"},
            )
        )["label"]
        await ok(c, "set_task_labels", {"taskId": mine["id"], "labelIds": [label["id"]]})
        await ok(c, "set_task_assignees", {"taskId": mine["id"], "userIds": [owner.user_id]})

        async def found(**filters):
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": "quokka", **filters})
            return {x["id"] for x in r["results"]}

        assert await found() == {mine["id"], other["id"]}
        assert await found(labelName="urgent-fix") == {mine["id"]}
        assert await found(labelName="no such label") == set()
        assert await found(assigneeId="me") == {mine["id"]} == await found(assigneeId=owner.user_id)
        assert await found(dueAfter="2031-05-11") == {other["id"]}  # inclusive
        assert await found(dueBefore="2031-05-11") == {mine["id"]}  # exclusive
        e = await err(c, "search_tasks", {"workspaceId": ws, "query": "quokka", "label": "urgent-fix"})
        assert e["code"] == "INVALID_INPUT" and "label" in e["message"]


async def test_bad_input(server_url, owner):
    if True:
        async with mcp_client(server_url, owner.token) as c:
            for query in ("", "   ", "-foo", '""', "-foo or -bar", "(((", "the of a"):
                e = await err(c, "search_tasks", {"workspaceId": owner.workspace_id, "query": query})
                assert e["code"] == "INVALID_INPUT" and e["hint"], query
            e = await err(c, "search_tasks", {"workspaceId": owner.workspace_id, "query": "x" * 1001})
            assert e["code"] == "INVALID_INPUT" and "1000" in e["message"].replace(",", "")
            # noise never errors
            for query in [
                '"unclosed',
                "@@@ foo",
                "🚀 launch",
                "SELECT * FROM tasks; --",
                "fix or",
                "or fix",
                "x" * 1000,
            ]:
                await ok(c, "search_tasks", {"workspaceId": owner.workspace_id, "query": query})


async def test_tenant_isolation(server_url, owner):
    if True:
        await _world(server_url, owner)
        stranger = make_actor("Stranger", "Other Space")
        async with mcp_client(server_url, stranger.token) as c:
            r = await ok(c, "search_tasks", {"workspaceId": stranger.workspace_id, "query": "login"})
            assert r["results"] == [] and r["totalCount"] == 0


async def test_a_page_cut_short_by_the_limit_or_the_cap_says_so(server_url, owner, monkeypatch):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        col = (await ok(c, "create_board", {"workspaceId": ws, "name": "Many"}))["columns"][0]["id"]
        await ok(
            c, "bulk_create_tasks", {"columnId": col, "tasks": [{"title": f"wombat number {i}"} for i in range(7)]}
        )
        page = await ok(c, "search_tasks", {"workspaceId": ws, "query": "wombat", "limit": 5})
        assert page["totalCount"] == 7 and len(page["results"]) == 5 and page["nextCursor"]
        assert page["truncated"] is True and page["capped"] is False and "nextCursor" in page["notice"], page
        rest = await ok(
            c, "search_tasks", {"workspaceId": ws, "query": "wombat", "limit": 5, "cursor": page["nextCursor"]}
        )
        assert (
            len(rest["results"]) == 2
            and rest["nextCursor"] is None
            and rest["truncated"] is False
            and rest["notice"] is None
        )
        # the candidate cap (1,000 in production; 3 here, to stay fast) makes totalCount a lower bound
        # (the cap bounds the posting lists, so the consumer writes them first; pending records are
        # read whole and never capped)
        from domain.search.repair import drain
        from domain.tools import search

        drain(ws)
        monkeypatch.setattr(search, "CANDIDATE_CAP", 3)
        capped = await ok(c, "search_tasks", {"workspaceId": ws, "query": "wombat", "limit": 20})
        assert capped["capped"] is True and capped["truncated"] is True and capped["nextCursor"] is None
        assert "lower bound" in capped["notice"] and "narrow" in capped["notice"], capped


async def test_the_exact_key_of_an_archived_or_missing_task_is_named_as_such(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        col = (await ok(c, "create_board", {"workspaceId": ws, "name": "Keys"}))["columns"][0]["id"]
        task = (await ok(c, "create_task", {"columnId": col, "title": "Retired work"}))["task"]
        await ok(c, "archive_task", {"taskId": task["id"]})
        prefix = task["key"].split("-")[0]
        gone = await ok(c, "search_tasks", {"workspaceId": ws, "query": task["key"].lower()})
        assert gone["results"] == [] and f"{task['key']} is archived" in gone["hint"] and "get_task" in gone["hint"], (
            gone
        )
        assert "check the spelling" not in gone["hint"]
        shown = await ok(c, "get_task", {"workspaceId": ws, "number": task["number"]})  # where the hint points
        assert shown["task"]["id"] == task["id"]
        missing = await ok(c, "search_tasks", {"workspaceId": ws, "query": f"{prefix}-{task['number'] + 40}"})
        assert missing["results"] == [] and f"{prefix}-{task['number'] + 40} does not exist" in missing["hint"], missing
        foreign = await ok(c, "search_tasks", {"workspaceId": ws, "query": "ZZQ-3"})
        assert foreign["results"] == [] and f"{prefix}-" in foreign["hint"] and "ZZQ-3" in foreign["hint"], foreign


def _fake_aws_key_id() -> str:
    import secrets

    return "AKIA" + "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))


async def test_a_pasted_aws_key_id_is_neither_stored_nor_found_by_search(server_url, owner):
    """Issue 24 item 8: a fake AWS key id pasted into a task description and a comment is redacted
    before storage, so search_tasks with the key itself as the query finds nothing (words,
    substring or snippet), and the answers say which rule fired."""
    ws = owner.workspace_id
    key, other = _fake_aws_key_id(), _fake_aws_key_id()
    async with mcp_client(server_url, owner.token) as c:
        b = await ok(c, "create_board", {"workspaceId": ws, "name": "Keys board"})
        col = b["columns"][0]["id"]
        made = await ok(
            c,
            "create_task",
            {
                "columnId": col,
                "title": "Rotate the deploy credentials",
                "description": f"The pipeline used {key} until Friday; rotate it.",
            },
        )
        assert made["redactions"] == ["aws-access-key"]
        assert key not in made["task"]["description"] and "[REDACTED:aws-access-key]" in made["task"]["description"]
        comment = await ok(c, "create_comment", {"taskId": made["task"]["id"], "body": f"also {other} on staging"})
        assert comment["redactions"] == ["aws-access-key"] and other not in comment["comment"]["body"]
        for query in (key, key.lower(), key[4:], other):
            r = await ok(c, "search_tasks", {"workspaceId": ws, "query": query})
            assert r["results"] == [] and key not in str(r) and other not in str(r), (query, r)
        r = await ok(c, "search_tasks", {"workspaceId": ws, "query": "rotate"})
        assert [x["id"] for x in r["results"]] == [made["task"]["id"]] and key not in str(r)
        plain = await ok(c, "create_task", {"columnId": col, "title": "Nothing secret", "description": "just words"})
        assert plain["redactions"] == []
    stored = str(stored_state())
    assert key not in stored and other not in stored
