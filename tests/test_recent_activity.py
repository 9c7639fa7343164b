"""A task's recent item (issue 25; domain/store/activity.py): the newest activity entries kept
in the task's side partition, in the same transaction as the log, so a detailed get_task reads
task, links, subtasks and activity in one round trip of two requests.

Drift is what these tests look for: after many writes of every kind (more than the item holds,
so it is trimmed several times), and after concurrent writers, get_task's recentActivity must
equal the newest entries of the task's own log (list_activity {taskId}, GSI1)."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import httpx2

from domain.store import activity as activity_store
from tests.conftest import make_actor, mcp_client
from tests.rpc import RequestCounter
from tests.rpc import call_tool as rpc_call
from tests.rpc import ok as rpc_ok
from tests.tools_support import new_board, ok


def _ids(entries: list[dict]) -> list[str]:
    return [e["id"] for e in entries]


async def _log(client, task_id: str) -> list[dict]:
    return (await ok(client, "list_activity", {"taskId": task_id, "limit": activity_store.RECENT_KEEP}))["activity"]


async def _recent(client, task_id: str) -> list[dict]:
    return (await ok(client, "get_task", {"taskId": task_id}))["recentActivity"]


async def test_recent_activity_equals_the_log_after_every_kind_of_write(server_url):
    owner = make_actor("Rita", "Recent Space", holder="human")
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Recent")
        cols = [col["id"] for col in board["columns"]]
        task = (await ok(c, "create_task", {"columnId": cols[0], "title": "watched"}))["task"]
        other = (await ok(c, "create_task", {"columnId": cols[0], "title": "other"}))["task"]
        tid = task["id"]
        assert _ids(await _recent(c, tid)) == _ids(await _log(c, tid))  # the creation entry alone
        for i in range(6):
            await ok(c, "update_task", {"taskId": tid, "title": f"watched {i}"})
            await ok(c, "create_comment", {"taskId": tid, "body": f"note {i}"})
            sub = (await ok(c, "create_subtask", {"taskId": tid, "title": f"step {i}"}))["subtask"]
            await ok(c, "toggle_subtask", {"subtaskId": sub["id"], "completed": True})
            await ok(c, "move_task", {"taskId": tid, "columnId": cols[(i + 1) % len(cols)]})
        await ok(c, "add_task_link", {"fromTaskId": tid, "kind": "BLOCKS", "toTaskId": other["id"]})
        await ok(c, "bulk_update_tasks", {"items": [{"taskId": tid, "priority": "HIGH"}]})
        recent, log = await _recent(c, tid), await _log(c, tid)
        assert len(recent) == activity_store.RECENT_KEEP
        assert recent == log
        # the other end of the link got its entry too
        assert _ids(await _recent(c, other["id"])) == _ids(await _log(c, other["id"]))


async def test_concurrent_writers_leave_no_drift(server_url):
    owner = make_actor("Cora", "Busy Space", holder="human")
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Busy")
        tid = (await ok(c, "create_task", {"columnId": board["columns"][0]["id"], "title": "hot"}))["task"]["id"]

    async def writer(n: int) -> None:
        async with mcp_client(server_url, owner.token) as w:
            for i in range(8):
                await ok(w, "create_comment", {"taskId": tid, "body": f"w{n} c{i}"})

    await asyncio.gather(*(writer(n) for n in range(4)))  # 32 entries from 4 clients at once
    async with mcp_client(server_url, owner.token) as c:
        assert await _recent(c, tid) == await _log(c, tid)
    from domain.store import keys
    from domain.store.models import RecentActivityRow

    item = RecentActivityRow.get(*keys.task_recent_activity(tid), consistent_read=True)
    assert activity_store.RECENT_KEEP <= len(item.entries) <= activity_store.RECENT_CAP


async def test_a_task_without_its_recent_item_reads_its_log(server_url):
    """Tasks written before the item existed: get_task answers from the log (one more request)
    until the item holds enough entries to tell on its own."""
    from domain.store import keys
    from domain.store.models import RecentActivityRow

    owner = make_actor("Lena", "Legacy Space", holder="human")
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Legacy")
        tid = (await ok(c, "create_task", {"columnId": board["columns"][0]["id"], "title": "old"}))["task"]["id"]
        for i in range(3):
            await ok(c, "update_task", {"taskId": tid, "title": f"old {i}"})
        RecentActivityRow(*keys.task_recent_activity(tid)).delete()  # as before the item existed
        assert len(await _recent(c, tid)) == 4 and await _recent(c, tid) == await _log(c, tid)
        await ok(c, "update_task", {"taskId": tid, "title": "newer"})  # the item starts again, late
        assert len(await _recent(c, tid)) == 5 and await _recent(c, tid) == await _log(c, tid)
        for i in range(activity_store.RECENT_KEEP):
            await ok(c, "create_comment", {"taskId": tid, "body": f"c{i}"})
        assert await _recent(c, tid) == await _log(c, tid)
    counter = RequestCounter()
    with httpx2.Client(timeout=60) as h, counter.watching():
        rpc_ok(rpc_call(server_url, owner.token, "get_task", {"taskId": tid}, h))
    assert "Query" in counter.ops and counter.ops["Query"] == 2, dict(counter.ops)  # header ‖ side items; no log Query


def test_detailed_get_task_is_one_round_trip_of_two_requests(server_url, monkeypatch):
    """Cold (no warm member or columns, exact window): the rate window ‖ task with the membership
    ‖ header ‖ side items; the log Query is gone. Warm (deferred window, warm facts): 2."""
    from domain.settings import settings
    from domain.store import warm as warm_store

    actor = make_actor("Tara", holder="human")
    board = rpc_ok(rpc_call(server_url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": "T"}))
    task = rpc_ok(
        rpc_call(server_url, actor.token, "create_task", {"columnId": board["columns"][0]["id"], "title": "t"})
    )
    tid = task["task"]["id"]
    counter = RequestCounter()
    with httpx2.Client(timeout=60) as h, counter.watching():
        got = rpc_ok(rpc_call(server_url, actor.token, "get_task", {"taskId": tid}, h))
    assert [a["type"] for a in got["recentActivity"]] == ["task.created"]
    # token, rate window, member + task BatchGetItem, header Query, side items Query
    assert counter.total == 5 and counter.ops["Query"] == 2, dict(counter.ops)

    monkeypatch.setattr(settings, "token_cache_seconds", 5)
    monkeypatch.setattr(settings, "rate_sync_every", 1000)
    monkeypatch.setattr(settings, "rate_sync_seconds", 600.0)
    warm_store.MEMBERS.clear()
    warm_store.COLUMNS.clear()
    try:
        rpc_ok(rpc_call(server_url, actor.token, "get_task", {"taskId": tid}))
        counter = RequestCounter()
        with httpx2.Client(timeout=60) as h, counter.watching():
            rpc_ok(rpc_call(server_url, actor.token, "get_task", {"taskId": tid}, h))
        assert counter.total == 2 and counter.ops == {"BatchGetItem": 1, "Query": 1}, dict(counter.ops)
    finally:
        warm_store.MEMBERS.clear()
        warm_store.COLUMNS.clear()


async def test_entries_are_stored_as_arrays_and_items_in_the_older_object_form_still_read(server_url):
    """Entries are compact arrays (no field names; docs/decisions.md, "Lighter recent entries").
    An item written before holds objects: rewritten here to that form, it reads the same, and a
    trim that mixes both forms keeps the newest entries in log order."""
    import json

    from domain.store import keys
    from domain.store.models import RecentActivityRow

    owner = make_actor("Olive", "Forms Space", holder="human")
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Forms")
        tid = (await ok(c, "create_task", {"columnId": board["columns"][0]["id"], "title": "forms"}))["task"]["id"]
        for i in range(4):
            await ok(c, "update_task", {"taskId": tid, "title": f"forms {i}"})
        key = keys.task_recent_activity(tid)
        item = RecentActivityRow.get(*key, consistent_read=True)
        stored = [json.loads(e) for e in item.entries]
        assert all(isinstance(e, list) for e in stored), item.entries
        assert not any(e[0].startswith("act_") for e in stored)
        before = await _recent(c, tid)
        as_objects = [json.dumps(activity_store._parse(e)) for e in item.entries]  # the older form
        RecentActivityRow(*key).update(actions=[RecentActivityRow.entries.set(as_objects)])
        assert await _recent(c, tid) == before == await _log(c, tid)
        for i in range(activity_store.RECENT_CAP):  # past the cap: a trim over both forms
            await ok(c, "update_task", {"taskId": tid, "title": f"forms again {i}"})
        assert await _recent(c, tid) == await _log(c, tid)


def test_a_task_written_from_one_process_trims_its_full_item_without_a_failed_attempt(server_url):
    """The process remembers the recent item it last wrote (domain.store.activity.committed), so
    once it has seen the item, a write that would overflow it trims at once: 40 edits send 41
    transactions (the first overflow still fails once: nothing is remembered before it), where
    every seventh edit used to send two. The entries still equal the log."""
    actor = make_actor("Sol", holder="human")
    board = rpc_ok(rpc_call(server_url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": "S"}))
    tid = rpc_ok(
        rpc_call(server_url, actor.token, "create_task", {"columnId": board["columns"][0]["id"], "title": "solo"})
    )["task"]["id"]
    activity_store.forget_held()
    counter = RequestCounter()
    with httpx2.Client(timeout=60) as h, counter.watching():
        for n in range(40):
            rpc_ok(rpc_call(server_url, actor.token, "update_task", {"taskId": tid, "title": f"solo {n}"}, h))
    assert counter.ops["TransactWriteItems"] == 41, dict(counter.ops)
    recent = rpc_ok(rpc_call(server_url, actor.token, "get_task", {"taskId": tid}))["recentActivity"]
    log = rpc_ok(rpc_call(server_url, actor.token, "list_activity", {"taskId": tid, "limit": 10}))["activity"]
    assert recent == log and recent[0]["data"]["title"]["to"] == "solo 39"


def test_a_remembered_item_that_another_process_moved_on_is_read_again(server_url):
    """Another process's write (simulated: an entry appended straight to the table, v + 1) makes
    this process's memory of a full item stale: the trim planned from that memory fails its v
    condition and the transaction is sent again on the item as stored, so the other writer's
    entry is kept."""
    import json

    from domain.store import keys
    from domain.store.models import RecentActivityRow

    actor = make_actor("Ode", holder="human")
    board = rpc_ok(rpc_call(server_url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": "O"}))
    tid = rpc_ok(
        rpc_call(server_url, actor.token, "create_task", {"columnId": board["columns"][0]["id"], "title": "odd"})
    )["task"]["id"]
    for n in range(activity_store.RECENT_CAP + 2):  # past one trim: the item is remembered
        rpc_ok(rpc_call(server_url, actor.token, "update_task", {"taskId": tid, "title": f"odd {n}"}))
    key = keys.task_recent_activity(tid)
    while len(RecentActivityRow.get(*key, consistent_read=True).entries) < activity_store.RECENT_CAP:
        rpc_ok(rpc_call(server_url, actor.token, "update_task", {"taskId": tid, "title": f"odd again {uuid4()}"}))
    held = activity_store._held_get(key)
    assert held is not None and len(held.entries) == activity_store.RECENT_CAP  # the next write trims from memory
    foreign = [
        "zzzzzzzzzzzzzzzzzzzzzzzzzz",
        "task.updated",
        "ui",
        actor.user_id,
        "2999-01-01T00:00:00.000Z",
        "elsewhere",
    ]
    RecentActivityRow(*key).update(
        actions=[
            RecentActivityRow.entries.set(RecentActivityRow.entries.append([json.dumps(foreign)])),
            RecentActivityRow.version.add(1),
        ]
    )
    counter = RequestCounter()
    with httpx2.Client(timeout=60) as h, counter.watching():
        rpc_ok(rpc_call(server_url, actor.token, "update_task", {"taskId": tid, "title": "after"}, h))
    assert counter.ops["TransactWriteItems"] == 2, dict(counter.ops)  # the stale trim, then the resend
    item = RecentActivityRow.get(*key, consistent_read=True)
    assert len(item.entries) == activity_store.RECENT_KEEP
    assert any(json.loads(e)[0] == foreign[0] for e in item.entries)
