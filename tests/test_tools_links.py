"""Task links through the official SDK client: edges across boards, listed from both ends with the
other end resolved; dependency cycles refused and named by key, also when two inserts race;
no-ops for stored edges and missing ones; archived tasks and boards; the per-task and walk bounds."""

from __future__ import annotations

import asyncio
import itertools
import threading
import uuid

import pytest

from tests.conftest import make_actor, mcp_client
from tests.tools_support import activity_rows, err, names_field, new_board, new_task, ok, stored_state


async def _tasks(c, workspace_id, *titles, boards=1):
    """Tasks titled ``titles``, spread round-robin over ``boards`` new boards."""
    made = [await new_board(c, workspace_id, f"Links {i} {uuid.uuid4().hex[:12]}") for i in range(boards)]
    return [await new_task(c, made[i % boards]["columns"][0]["id"], t) for i, t in enumerate(titles)]


def _link(a, kind, b):
    return {"fromTaskId": a["id"], "kind": kind, "toTaskId": b["id"]}


def _link_types(board_id):
    return [r["type"]["S"] for r in activity_rows(board_id) if r["type"]["S"].startswith("task.link")]


async def test_links_cross_boards_and_list_from_both_ends_with_current_names(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bug, deal, note = await _tasks(c, owner.workspace_id, "Fix the bug", "Close the deal", "Background", boards=3)
        added = await ok(c, "add_task_link", _link(bug, "BLOCKS", deal))
        assert added["created"] is True
        assert added["link"] | {"createdAt": None} == {
            "fromTaskId": bug["id"],
            "fromKey": bug["key"],
            "kind": "BLOCKS",
            "toTaskId": deal["id"],
            "toKey": deal["key"],
            "createdAt": None,
            "createdBy": owner.user_id,
        }
        await ok(c, "add_task_link", _link(note, "RELATES_TO", bug))
        await ok(c, "update_task", {"taskId": deal["id"], "title": "Close the big deal"})
        await ok(c, "rename_board", {"boardId": deal["boardId"], "name": "Sales"})
        mine = await ok(c, "list_task_links", {"taskId": bug["id"]})
        assert mine["taskId"] == bug["id"] and mine["key"] == bug["key"] and mine["totalCount"] == 2
        [out] = mine["outgoing"]
        assert out | {"linkedAt": None} == {
            "kind": "BLOCKS",
            "taskId": deal["id"],
            "key": deal["key"],
            "title": "Close the big deal",
            "boardId": deal["boardId"],
            "boardName": "Sales",
            "archived": False,
            "boardArchived": False,
            "linkedAt": None,
            "linkedBy": owner.user_id,
        }
        [inc] = mine["incoming"]
        assert (inc["kind"], inc["taskId"], inc["title"]) == ("RELATES_TO", note["id"], "Background")
        detailed = await ok(c, "get_task", {"taskId": bug["id"]})  # get_task shows the same links
        assert detailed["links"] == {"outgoing": mine["outgoing"], "incoming": mine["incoming"]}
        assert (await ok(c, "get_task", {"taskId": bug["id"], "response_format": "concise"}))["links"] is None
        theirs = await ok(c, "list_task_links", {"taskId": deal["id"]})
        assert theirs["outgoing"] == [] and [(x["kind"], x["key"]) for x in theirs["incoming"]] == [
            ("BLOCKS", bug["key"])
        ]
        alone = await ok(c, "list_task_links", {"taskId": (await _tasks(c, owner.workspace_id, "alone"))[0]["id"]})
        assert alone["totalCount"] == 0 and alone["outgoing"] == alone["incoming"] == []
    assert _link_types(bug["boardId"]) == ["task.link_added"]  # the source's board logs the link


async def test_a_task_of_another_workspace_is_not_found_and_nothing_is_written(server_url, owner):
    stranger = make_actor("Stranger", f"Far {uuid.uuid4().hex[:12]}")
    async with mcp_client(server_url, stranger.token) as c:
        [far] = await _tasks(c, stranger.workspace_id, "theirs")
    async with mcp_client(server_url, owner.token) as c:
        [near] = await _tasks(c, owner.workspace_id, "mine")
        before = stored_state()
        for args in (_link(near, "BLOCKS", far), _link(near, "RELATES_TO", far), _link(far, "BLOCKS", near)):
            for tool in ("add_task_link", "remove_task_link"):
                refused = await err(c, tool, args)
                assert refused["code"] == "NOT_FOUND" and far["id"] in refused["message"], (tool, refused)
        refused = await err(c, "list_task_links", {"taskId": far["id"]})
        assert refused["code"] == "NOT_FOUND"
        made_up = dict(_link(near, "BLOCKS", near), toTaskId=near["id"].rsplit("_", 1)[0] + "_99999")
        assert (await err(c, "add_task_link", made_up))["code"] == "NOT_FOUND"
        assert stored_state() == before


async def test_a_cycle_through_three_boards_is_refused_and_named_by_keys(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        a, b, d = await _tasks(c, owner.workspace_id, "design", "build", "ship", boards=3)
        await ok(c, "add_task_link", _link(a, "BLOCKS", b))  # a before b
        await ok(c, "add_task_link", _link(d, "DEPENDS_ON", b))  # b before d
        before = stored_state()
        refused = await err(c, "add_task_link", _link(d, "BLOCKS", a))  # d before a: d -> a -> b -> d
        assert names_field(refused, "toTaskId"), refused
        assert f"{d['key']} -> {a['key']} -> {b['key']} -> {d['key']}" in refused["message"], refused
        refused = await err(c, "add_task_link", _link(a, "DEPENDS_ON", d))  # also d before a, named from a
        assert f"{a['key']} -> {b['key']} -> {d['key']} -> {a['key']}" in refused["message"], refused
        refused = await err(c, "add_task_link", _link(b, "BLOCKS", a))  # the two-task cycle
        assert f"{b['key']} -> {a['key']} -> {b['key']}" in refused["message"], refused
        assert stored_state() == before
        # RELATES_TO and DUPLICATES never count; 'b DEPENDS_ON a' restates 'a BLOCKS b' (no cycle)
        for args in (_link(d, "RELATES_TO", a), _link(d, "DUPLICATES", a), _link(b, "DEPENDS_ON", a)):
            assert (await ok(c, "add_task_link", args))["created"] is True
        # after the path is cut, the same edge is accepted
        await ok(c, "remove_task_link", _link(d, "DEPENDS_ON", b))
        assert (await ok(c, "add_task_link", _link(d, "BLOCKS", a)))["created"] is True


async def _race(server_url, token, first, second):
    async with mcp_client(server_url, token) as c1, mcp_client(server_url, token) as c2:
        return await asyncio.gather(c1.call_tool("add_task_link", first), c2.call_tool("add_task_link", second))


def _edges(task_ids):
    """Stored edge halves (both directions) among ``task_ids``, read straight from the table."""
    from domain.store import links as link_store

    return sorted((r.fromTaskId, r.linkKind, r.toTaskId, r.direction) for t in task_ids for r in link_store.rows(t))


async def test_two_racing_links_that_together_close_a_cycle_exactly_one_succeeds(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        for round_ in range(10):
            if round_ % 2:
                p, q = await _tasks(c, owner.workspace_id, f"p{round_}", f"q{round_}", boards=2)
                first, second = _link(p, "BLOCKS", q), _link(p, "DEPENDS_ON", q)  # p before q / q before p
                ids_ = [p["id"], q["id"]]
            else:
                p, q, r = await _tasks(c, owner.workspace_id, f"p{round_}", f"q{round_}", f"r{round_}", boards=3)
                await ok(c, "add_task_link", _link(p, "BLOCKS", q))
                first, second = _link(q, "BLOCKS", r), _link(p, "DEPENDS_ON", r)  # q before r / r before p
                ids_ = [p["id"], q["id"], r["id"]]
            before = _edges(ids_)
            results = await _race(server_url, owner.token, first, second)
            winners = [res for res in results if not res.is_error]
            losers = [res for res in results if res.is_error]
            assert len(winners) == 1 and len(losers) == 1, [res.content[0].text for res in results]
            assert "cycle" in losers[0].content[0].text
            assert len(_edges(ids_)) == len(before) + 2  # one edge, two halves


async def test_racing_inserts_that_both_pass_the_walk_cannot_both_commit(server_url, owner, monkeypatch):
    """Forces the interleaving the version guards against: both inserts read the graph and finish
    their walk (no cycle on what they read) before either commits."""
    from domain.store import links as link_store

    real = link_store.find_cycle
    barrier = threading.Barrier(2, timeout=20)
    calls = []
    lock = threading.Lock()

    def gated(*args, **kwargs):
        found = real(*args, **kwargs)
        with lock:
            calls.append(found)
            first_two = len(calls) <= 2
        if first_two:
            barrier.wait()
        return found

    monkeypatch.setattr(link_store, "find_cycle", gated)
    async with mcp_client(server_url, owner.token) as c:
        for _ in range(3):
            barrier.reset()
            calls.clear()
            p, q = await _tasks(c, owner.workspace_id, "left", "right", boards=2)
            results = await _race(server_url, owner.token, _link(p, "BLOCKS", q), _link(q, "BLOCKS", p))
            assert sorted(res.is_error for res in results) == [False, True]
            assert calls[:2] == [None, None] and calls[2] is not None  # the loser walked again and found the cycle
            assert len(_edges([p["id"], q["id"]])) == 2


async def test_self_links_are_refused(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        [t] = await _tasks(c, owner.workspace_id, "narcissus")
        before = stored_state()
        for kind in ("BLOCKS", "RELATES_TO"):
            assert names_field(await err(c, "add_task_link", _link(t, kind, t)), "toTaskId")
        assert (await ok(c, "remove_task_link", _link(t, "BLOCKS", t)))["removed"] is False
        assert stored_state() == before


async def test_adding_a_stored_edge_is_a_noop_with_no_second_activity_row(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        a, b = await _tasks(c, owner.workspace_id, "a", "b")
        first = await ok(c, "add_task_link", _link(a, "DEPENDS_ON", b))
        before = stored_state()
        again = await ok(c, "add_task_link", _link(a, "DEPENDS_ON", b))
        assert again == {**first, "created": False}
        assert stored_state() == before
        assert _link_types(a["boardId"]) == ["task.link_added"]
        # another kind, or the reverse direction, is another edge
        assert (await ok(c, "add_task_link", _link(a, "RELATES_TO", b)))["created"] is True
        assert (await ok(c, "add_task_link", _link(b, "RELATES_TO", a)))["created"] is True
        assert (await ok(c, "list_task_links", {"taskId": a["id"]}))["totalCount"] == 3


async def test_removing_is_exact_and_removing_a_missing_edge_is_a_noop(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        a, b = await _tasks(c, owner.workspace_id, "a", "b", boards=2)
        await ok(c, "add_task_link", _link(a, "BLOCKS", b))
        before = stored_state()
        for args in (_link(b, "BLOCKS", a), _link(a, "DEPENDS_ON", b), _link(b, "DEPENDS_ON", a)):
            assert await ok(c, "remove_task_link", args) == {"removed": False, "link": None}
        assert stored_state() == before
        gone = await ok(c, "remove_task_link", _link(a, "BLOCKS", b))
        assert gone["removed"] is True and gone["link"]["toKey"] == b["key"]
        for t in (a, b):
            assert (await ok(c, "list_task_links", {"taskId": t["id"]}))["totalCount"] == 0
        assert _edges([a["id"], b["id"]]) == []
        before = stored_state()
        assert (await ok(c, "remove_task_link", _link(a, "BLOCKS", b)))["removed"] is False
        assert stored_state() == before
        assert _link_types(a["boardId"]) == ["task.link_added", "task.link_removed"]
        listed = await ok(c, "list_activity", {"boardId": a["boardId"], "type": "task.link_removed"})
        assert [x["type"] for x in listed["activity"]] == ["task.link_removed"]


async def test_archived_tasks_take_no_new_links_but_keep_and_shed_theirs(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        a, b, fresh = await _tasks(c, owner.workspace_id, "a", "b", "fresh", boards=2)
        await ok(c, "add_task_link", _link(a, "BLOCKS", b))
        await ok(c, "archive_task", {"taskId": b["id"]})
        before = stored_state()
        for args in (_link(fresh, "RELATES_TO", b), _link(b, "BLOCKS", fresh)):
            refused = await err(c, "add_task_link", args)
            field = "toTaskId" if args["toTaskId"] == b["id"] else "fromTaskId"
            assert names_field(refused, field) and "archived" in refused["message"], refused
        assert stored_state() == before
        [out] = (await ok(c, "list_task_links", {"taskId": a["id"]}))["outgoing"]
        assert out["archived"] is True and out["boardArchived"] is False
        assert (await ok(c, "list_task_links", {"taskId": b["id"]}))["totalCount"] == 1
        assert (await ok(c, "remove_task_link", _link(a, "BLOCKS", b)))["removed"] is True


async def test_tasks_of_an_archived_board_are_read_only(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        a, b, other = await _tasks(
            c, owner.workspace_id, "a", "b", "other", boards=2
        )  # a, other on board 0; b on board 1
        await ok(c, "add_task_link", _link(a, "BLOCKS", b))
        await ok(c, "archive_board", {"boardId": b["boardId"]})
        before = stored_state()
        for tool, args in (
            ("add_task_link", _link(other, "RELATES_TO", b)),
            ("remove_task_link", _link(a, "BLOCKS", b)),
        ):
            refused = await err(c, tool, args)
            assert (
                names_field(refused, "toTaskId")
                and "read-only" in refused["message"]
                and "unarchive_boards" in refused["hint"]
            ), (tool, refused)
        assert stored_state() == before
        [out] = (await ok(c, "list_task_links", {"taskId": a["id"]}))["outgoing"]
        assert out["boardArchived"] is True


async def test_a_task_holds_at_most_200_links(server_url, owner):
    from domain.store import keys
    from domain.store import links as link_store
    from domain.store.models import LinkCountRow

    async with mcp_client(server_url, owner.token) as c:
        a, b, d = await _tasks(c, owner.workspace_id, "busy", "b", "d")
        LinkCountRow(*keys.link_count(b["id"]), count=link_store.MAX_LINKS_PER_TASK).save()
        before = stored_state()
        refused = await err(c, "add_task_link", _link(a, "RELATES_TO", b))
        assert names_field(refused, "toTaskId") and "200" in refused["message"], refused
        assert stored_state() == before
        await ok(c, "add_task_link", _link(a, "RELATES_TO", d))
        assert (
            LinkCountRow.get(*keys.link_count(a["id"])).count == 1
            and LinkCountRow.get(*keys.link_count(d["id"])).count == 1
        )


def _chain(n):
    """``n + 1`` made-up task ids of one board linked ``t0 BLOCKS t1 BLOCKS … tn`` straight in the table."""
    from domain import clock
    from domain.store import keys
    from domain.store.models import LinkRow

    base = f"tk_{uuid.uuid4().hex[:12]}_{uuid.uuid4().hex[:8]}"
    tasks = [(f"{base}_{i + 1}", f"CH-{i + 1}") for i in range(n + 1)]
    for (src, sk), (dst, dk) in itertools.pairwise(tasks):
        common = {
            "fromTaskId": src,
            "toTaskId": dst,
            "linkKind": "BLOCKS",
            "fromKey": sk,
            "toKey": dk,
            "workspaceId": "ws_x",
            "createdAt": clock.now_iso(),
            "createdBy": "usr_x",
        }
        LinkRow(*keys.link_out(src, "BLOCKS", dst), direction="OUT", **common).save()
        LinkRow(*keys.link_in(dst, "BLOCKS", src), direction="IN", **common).save()
    return tasks


def test_the_walk_is_bounded_and_finds_the_shortest_path(stack):
    from domain.store import links as link_store

    tasks = _chain(6)
    assert link_store.find_cycle(tasks[0], tasks[6]) == [k for _, k in tasks]
    assert link_store.find_cycle(tasks[3], tasks[0]) is None
    with pytest.raises(link_store.TooLarge):
        link_store.find_cycle(tasks[0], ("tk_none_none_1", "NO-1"), limit=5)
    assert link_store.find_cycle(tasks[0], ("tk_none_none_1", "NO-1"), limit=7) is None
