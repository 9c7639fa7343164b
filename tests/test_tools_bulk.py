"""Bulk task tools through the official SDK client (and raw HTTP for the races): all-or-nothing
creates with gapless numbers, per-item results for edits and moves, chunked transactions, and
keyed calls whose later chunk failed (injected on the real botocore client) completed by a
retry without applying any item twice."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx2
from botocore.exceptions import ConnectionClosedError

from domain.store.models import WorkspaceRow
from tests import rpc
from tests.conftest import make_actor, mcp_client
from tests.tools_support import activity_rows, err, names_field, new_board, new_task, ok, stored_state


def _counter(ws: str) -> int:
    return int(WorkspaceRow.get(f"WS#{ws}", "META", consistent_read=True).taskCounter or 0)


def _together(n: int, fn: Any) -> list[Any]:
    barrier = threading.Barrier(n)

    def run(i: int) -> Any:
        barrier.wait()
        return fn(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


@contextmanager
def failing_transactions(after: int, *, times: int | None = None):
    """Every TransactWriteItems after the first ``after`` raises a connection reset (botocore's
    retries included), so a later chunk fails after earlier ones committed."""
    from domain.store import db

    seen = {"n": 0, "failed": 0}
    lock = threading.Lock()

    def before_send(request: Any, event_name: str = "", **_: Any) -> Any:
        if not event_name.endswith("TransactWriteItems"):
            return None
        with lock:
            seen["n"] += 1
            if seen["n"] <= after or (times is not None and seen["failed"] >= times):
                return None
            seen["failed"] += 1
        raise ConnectionClosedError(endpoint_url=request.url)

    clients = db.botocore_clients()
    for c in clients:
        c.meta.events.register("before-send.dynamodb", before_send)
    try:
        yield seen
    finally:
        for c in clients:
            c.meta.events.unregister("before-send.dynamodb", before_send)


def _no_retry_sleep(monkeypatch) -> None:
    from domain.store import db

    for client in db.botocore_clients():
        handler = client.meta.events._emitter._unique_id_handlers["retry-config-dynamodb"]["handler"].__self__
        quota = handler._retry_quota._quota
        monkeypatch.setattr(quota, "_available_capacity", quota._max_capacity)
        monkeypatch.setattr(handler._retry_policy._retry_backoff, "delay_amount", lambda context: 0.0)


async def _column(c, ws, name="Bulk"):
    board = await new_board(c, ws, f"{name} {uuid.uuid4().hex[:12]}")
    return board["board"]["id"], [col["id"] for col in board["columns"]]


async def test_bulk_create_is_ordered_gapless_and_complete(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board_id, cols = await _column(c, owner.workspace_id)
        first = await new_task(c, cols[0], "already there")
        made = await ok(
            c,
            "bulk_create_tasks",
            {
                "columnId": cols[0],
                "tasks": [
                    {"title": "one", "description": "**first**"},
                    {"title": " two ", "priority": "HIGH", "dueDate": "2026-08-01"},
                    {"title": "three"},
                ],
            },
        )
        tasks = made["tasks"]
        assert [t["title"] for t in tasks] == ["one", "two", "three"]
        assert [t["number"] for t in tasks] == [first["number"] + 1, first["number"] + 2, first["number"] + 3]
        assert all(t["key"].endswith(f"-{t['number']}") and t["columnName"] for t in tasks)
        snap = await ok(c, "get_board_snapshot", {"boardId": board_id})
        assert snap["columns"][0]["taskIds"] == [first["id"]] + [t["id"] for t in tasks]
        assert snap["columns"][0]["taskCount"] == 4 and snap["totalCount"] == 4
        full = await ok(c, "get_task", {"taskId": tasks[0]["id"]})
        assert full["task"]["description"] == "**first**" and full["task"]["createdBy"] == owner.user_id
        by_number = await ok(c, "get_task", {"workspaceId": owner.workspace_id, "number": tasks[1]["number"]})
        assert by_number["task"]["id"] == tasks[1]["id"] and by_number["task"]["priority"] == "HIGH"
        log = await ok(c, "list_activity", {"boardId": board_id, "type": "task.bulk_created"})
        assert len(log["activity"]) == 1 and log["activity"][0]["data"]["taskIds"] == [t["id"] for t in tasks]
        for t in tasks:  # every task has its own creation entry, as a single create_task writes it
            own = (await ok(c, "list_activity", {"taskId": t["id"]}))["activity"]
            assert [(e["type"], e["taskId"], e["actorId"]) for e in own] == [
                ("task.created", t["id"], owner.user_id)
            ], own
            assert t["key"] in own[0]["summary"] and own[0]["at"] == t["createdAt"]
        # A later single create continues the numbering.
        after = await new_task(c, cols[0], "after")
        assert after["number"] == tasks[-1]["number"] + 1


async def test_counts_outside_1_to_50_and_duplicates_are_refused_before_anything_is_written(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _column(c, owner.workspace_id)
        t = await new_task(c, cols[0], "target")
        before = stored_state()
        for n in (0, 51):
            refused = await err(
                c, "bulk_create_tasks", {"columnId": cols[0], "tasks": [{"title": f"t{i}"} for i in range(n)]}
            )
            assert names_field(refused, "tasks"), refused
            refused = await err(
                c, "bulk_update_tasks", {"items": [{"taskId": t["id"], "title": f"t{i}"} for i in range(n)]}
            )
            assert names_field(refused, "items"), refused
            refused = await err(
                c, "bulk_move_tasks", {"items": [{"taskId": t["id"], "columnId": cols[1]} for _ in range(n)]}
            )
            assert names_field(refused, "items"), refused
        dup = await err(
            c,
            "bulk_update_tasks",
            {"items": [{"taskId": t["id"], "title": "a"}, {"taskId": t["id"], "priority": "LOW"}]},
        )
        assert names_field(dup, "items") and "twice" in dup["message"], dup
        dup = await err(
            c,
            "bulk_move_tasks",
            {"items": [{"taskId": t["id"], "columnId": cols[1]}, {"taskId": t["id"], "columnId": cols[2]}]},
        )
        assert names_field(dup, "items"), dup
        blank = await err(c, "bulk_create_tasks", {"columnId": cols[0], "tasks": [{"title": "fine"}, {"title": "   "}]})
        assert names_field(blank, "tasks.1.title"), blank
        assert stored_state() == before


async def test_bulk_update_applies_the_valid_items_and_reports_each_failure(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        _, their_cols = await _column(c, outsider.workspace_id)
        foreign = await new_task(c, their_cols[0], "not yours")
    async with mcp_client(server_url, owner.token) as c:
        board_id, cols = await _column(c, owner.workspace_id)
        a, b, gone, stale = [await new_task(c, cols[0], f"task {i}") for i in range(4)]
        await ok(c, "archive_task", {"taskId": gone["id"]})
        moved = await ok(c, "update_task", {"taskId": stale["id"], "priority": "LOW"})
        before = len(activity_rows(board_id))
        out = await ok(
            c,
            "bulk_update_tasks",
            {
                "items": [
                    {"taskId": a["id"], "title": "A!", "dueDate": "2026-09-01"},
                    {"taskId": foreign["id"], "title": "nope"},
                    {"taskId": b["id"], "title": b["title"]},
                    {"taskId": gone["id"], "priority": "HIGH"},
                    {"taskId": stale["id"], "title": "late", "expectedUpdatedAt": stale["updatedAt"]},
                    {"taskId": "tk_nonsense", "title": "x"},
                    {"taskId": b["id"].rsplit("_", 1)[0] + "_99999", "priority": "HIGH"},
                ]
            },
        )
        r = out["results"]
        assert [x["status"] for x in r] == ["applied", "failed", "unchanged", "failed", "failed", "failed", "failed"]
        assert [x["index"] for x in r] == list(range(7)) and out["applied"] == 1 and out["failed"] == 5
        assert r[0]["task"]["title"] == "A!" and r[0]["changedFields"] == ["title", "dueDate"] and r[0]["error"] is None
        assert (
            r[1]["error"]["code"] == "NOT_FOUND"
            and r[5]["error"]["code"] == "NOT_FOUND"
            and r[6]["error"]["code"] == "NOT_FOUND"
        )
        assert r[2]["changedFields"] == [] and r[2]["task"]["id"] == b["id"]
        assert r[3]["error"]["code"] == "INVALID_INPUT" and "archived" in r[3]["error"]["message"]
        assert (
            r[4]["error"]["code"] == "CONFLICT" and r[4]["error"]["current"]["updatedAt"] == moved["task"]["updatedAt"]
        )
        assert "5 of 7" in out["notice"]
        got = await ok(c, "get_task", {"taskId": a["id"]})
        assert got["task"]["title"] == "A!" and got["recentActivity"][0]["type"] == "task.updated"
        assert len(activity_rows(board_id)) == before + 1  # one row per applied item, none for the others


async def test_bulk_move_appends_in_input_order_and_keeps_counts(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board_id, cols = await _column(c, owner.workspace_id)
        other_board, other_cols = await _column(c, owner.workspace_id, "Elsewhere")
        ts = [await new_task(c, cols[0], f"m{i}") for i in range(4)]
        existing = await new_task(c, cols[1], "already in doing")
        out = await ok(
            c,
            "bulk_move_tasks",
            {
                "items": [
                    {"taskId": ts[2]["id"], "columnId": cols[1]},
                    {"taskId": ts[0]["id"], "columnId": cols[1]},
                    {"taskId": ts[3]["id"], "columnId": cols[0]},
                    {"taskId": ts[1]["id"], "columnId": other_cols[0]},
                ]
            },
        )
        r = out["results"]
        assert [x["status"] for x in r] == ["applied", "applied", "unchanged", "failed"], r
        assert r[3]["error"]["code"] == "INVALID_INPUT" and r[3]["error"]["message"].startswith("columnId:")
        snap = await ok(c, "get_board_snapshot", {"boardId": board_id})
        by_col = {col["id"]: col for col in snap["columns"]}
        assert by_col[cols[1]]["taskIds"] == [existing["id"], ts[2]["id"], ts[0]["id"]]
        assert by_col[cols[0]]["taskIds"] == [ts[1]["id"], ts[3]["id"]]
        assert all(col["taskCount"] == len(col["taskIds"]) for col in snap["columns"])
        # Moving the head of a column to the same column puts it at the bottom, after the others.
        again = await ok(
            c,
            "bulk_move_tasks",
            {"items": [{"taskId": ts[1]["id"], "columnId": cols[0]}, {"taskId": ts[2]["id"], "columnId": cols[0]}]},
        )
        assert [x["status"] for x in again["results"]] == ["applied", "applied"]
        snap = await ok(c, "get_board_snapshot", {"boardId": board_id})
        by_col = {col["id"]: col for col in snap["columns"]}
        assert by_col[cols[0]]["taskIds"] == [ts[3]["id"], ts[1]["id"], ts[2]["id"]]
        assert all(col["taskCount"] == len(col["taskIds"]) for col in snap["columns"])
        moved = Counter(row["type"]["S"] for row in activity_rows(board_id))
        assert moved["task.moved"] == 4
        _ = other_board


async def test_fifty_items_take_two_transactions_and_all_apply(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board_id, cols = await _column(c, owner.workspace_id)
        made = (
            await ok(
                c,
                "bulk_create_tasks",
                {"columnId": cols[0], "tasks": [{"title": f"n{i}", "description": "d" * 2000} for i in range(50)]},
            )
        )["tasks"]
        assert len({t["number"] for t in made}) == 50 and made[-1]["number"] - made[0]["number"] == 49
        res, counter = _measure(
            server_url,
            owner.token,
            "bulk_update_tasks",
            {"items": [{"taskId": t["id"], "priority": "URGENT"} for t in made]},
        )
        assert rpc.ok(res)["applied"] == 50 and counter.ops["TransactWriteItems"] == 3
        res, counter = _measure(
            server_url,
            owner.token,
            "bulk_move_tasks",
            {"items": [{"taskId": t["id"], "columnId": cols[2]} for t in made]},
        )
        assert rpc.ok(res)["applied"] == 50 and counter.ops["TransactWriteItems"] == 3
        snap = await ok(c, "get_board_snapshot", {"boardId": board_id})
        done = next(col for col in snap["columns"] if col["id"] == cols[2])
        assert done["taskIds"] == [t["id"] for t in made] and done["taskCount"] == 50
        rows = Counter(row["type"]["S"] for row in activity_rows(board_id))
        assert rows["task.updated"] == 50 and rows["task.moved"] == 50 and rows["task.bulk_created"] == 1


def _measure(url, token, name, args):
    counter = rpc.RequestCounter()
    with httpx2.Client(timeout=60) as client, counter.watching():
        result = rpc.call_tool(url, token, name, args, client)
    return result, counter


def test_a_key_reused_with_other_items_is_conflict_and_writes_nothing(server_url, owner):
    b = rpc.ok(
        rpc.call_tool(server_url, owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": "Reuse"})
    )
    col = b["columns"][0]["id"]
    task = rpc.ok(rpc.call_tool(server_url, owner.token, "create_task", {"columnId": col, "title": "t"}))["task"]
    cases = {
        "bulk_create_tasks": (
            {"columnId": col, "tasks": [{"title": "a"}]},
            {"columnId": col, "tasks": [{"title": "a"}, {"title": "b"}]},
        ),
        "bulk_update_tasks": (
            {"items": [{"taskId": task["id"], "title": "x"}]},
            {"items": [{"taskId": task["id"], "title": "y"}]},
        ),
        "bulk_move_tasks": (
            {"items": [{"taskId": task["id"], "columnId": b["columns"][1]["id"]}]},
            {"items": [{"taskId": task["id"], "columnId": b["columns"][2]["id"]}]},
        ),
    }
    for tool, (first, other) in cases.items():
        key = f"reuse-{uuid.uuid4()}"
        rpc.ok(rpc.call_tool(server_url, owner.token, tool, {**first, "idempotencyKey": key}))
        before = stored_state()
        refused = rpc.err(rpc.call_tool(server_url, owner.token, tool, {**other, "idempotencyKey": key}))
        assert refused["code"] == "CONFLICT" and "different arguments" in refused["message"], (tool, refused)
        assert stored_state() == before, tool


def test_twenty_identical_keyed_bulk_creates_at_once_create_the_tasks_once(server_url, stack):
    actor = make_actor("Burst")
    b = rpc.ok(
        rpc.call_tool(server_url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": "Burst"})
    )
    col = b["columns"][0]["id"]
    start = _counter(actor.workspace_id)
    args = {
        "columnId": col,
        "tasks": [{"title": f"b{i}"} for i in range(10)],
        "idempotencyKey": f"burst-{uuid.uuid4()}",
    }

    def one(_: int) -> dict[str, Any]:
        with httpx2.Client(timeout=60) as client:
            return rpc.call_tool(server_url, actor.token, "bulk_create_tasks", args, client)

    answers = _together(20, one)
    texts = {a["content"][0]["text"] for a in answers if not a["isError"]}
    for a in answers:
        if a["isError"]:
            assert "still in progress" in rpc.err(a)["message"]
    late = rpc.ok(rpc.call_tool(server_url, actor.token, "bulk_create_tasks", args))
    assert len(texts) <= 1
    snap = rpc.ok(rpc.call_tool(server_url, actor.token, "get_board_snapshot", {"boardId": b["board"]["id"]}))
    assert sorted(t["id"] for t in snap["tasks"]) == sorted(t["id"] for t in late["tasks"])
    assert [t["number"] for t in late["tasks"]] == list(range(start + 1, start + 11))
    assert _counter(actor.workspace_id) == start + 10


def test_bulk_create_racing_single_creates_keeps_numbers_gapless_and_unique(server_url, stack):
    actor = make_actor("Racer")
    b = rpc.ok(
        rpc.call_tool(server_url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": "Race"})
    )
    cols = [c["id"] for c in b["columns"]]
    start = _counter(actor.workspace_id)

    def one(i: int) -> list[int]:
        with httpx2.Client(timeout=60) as client:
            if i % 3 == 0:
                r = rpc.ok(
                    rpc.call_tool(
                        server_url,
                        actor.token,
                        "bulk_create_tasks",
                        {"columnId": cols[i % 2], "tasks": [{"title": f"bulk {i}.{j}"} for j in range(7)]},
                        client,
                    )
                )
                nums = [t["number"] for t in r["tasks"]]
                assert nums == list(range(nums[0], nums[0] + 7))  # one bulk's numbers are consecutive
                return nums
            return [
                rpc.ok(
                    rpc.call_tool(
                        server_url,
                        actor.token,
                        "create_task",
                        {"columnId": cols[i % 2], "title": f"single {i}"},
                        client,
                    )
                )["task"]["number"]
            ]

    numbers = [n for part in _together(9, one) for n in part]
    assert sorted(numbers) == list(range(start + 1, start + 1 + len(numbers)))
    assert _counter(actor.workspace_id) == start + len(numbers) == start + 3 * 7 + 6
    snap = rpc.ok(rpc.call_tool(server_url, actor.token, "get_board_snapshot", {"boardId": b["board"]["id"]}))
    assert len(snap["tasks"]) == len(numbers) and all(c["taskCount"] == len(c["taskIds"]) for c in snap["columns"])


def _chunk_failure_case(server_url, owner, monkeypatch, tool: str) -> None:
    _no_retry_sleep(monkeypatch)
    b = rpc.ok(
        rpc.call_tool(
            server_url, owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": f"Chunks {tool}"}
        )
    )
    board_id, cols = b["board"]["id"], [c["id"] for c in b["columns"]]
    made = rpc.ok(
        rpc.call_tool(
            server_url,
            owner.token,
            "bulk_create_tasks",
            {"columnId": cols[0], "tasks": [{"title": f"c{i}"} for i in range(50)]},
        )
    )["tasks"]
    if tool == "bulk_update_tasks":
        items = [{"taskId": t["id"], "title": f"renamed {i}"} for i, t in enumerate(made)]
        kind = "task.updated"
    else:
        items = [{"taskId": t["id"], "columnId": cols[1]} for t in made]
        kind = "task.moved"
    args = {"items": items, "idempotencyKey": f"chunks-{uuid.uuid4()}"}
    with failing_transactions(after=1):
        first = rpc.ok(rpc.call_tool(server_url, owner.token, tool, args))
    applied = [r["index"] for r in first["results"] if r["status"] == "applied"]
    failed = [r for r in first["results"] if r["status"] == "failed"]
    assert applied and failed and len(applied) + len(failed) == 50, first["notice"]
    assert applied == list(range(len(applied)))  # the first chunk, in input order
    assert all(r["error"]["code"] == "INTERNAL" and "same idempotencyKey" in r["error"]["hint"] for r in failed)
    rows = Counter(r["type"]["S"] for r in activity_rows(board_id))
    assert rows[kind] == len(applied)  # exactly the first chunk was written
    retry = rpc.ok(rpc.call_tool(server_url, owner.token, tool, args))
    assert retry["applied"] == 50 and retry["failed"] == 0
    assert [r["task"]["id"] for r in retry["results"]] == [t["id"] for t in made]
    rows = Counter(r["type"]["S"] for r in activity_rows(board_id))
    assert rows[kind] == 50  # every item once, none twice
    replay = rpc.ok(rpc.call_tool(server_url, owner.token, tool, args))
    assert replay == retry
    snap = rpc.ok(rpc.call_tool(server_url, owner.token, "get_board_snapshot", {"boardId": board_id}))
    if tool == "bulk_move_tasks":
        col = next(c for c in snap["columns"] if c["id"] == cols[1])
        assert col["taskIds"] == [t["id"] for t in made] and col["taskCount"] == 50
    else:
        assert sorted(t["title"] for t in snap["tasks"]) == sorted(f"renamed {i}" for i in range(50))


def test_a_later_update_chunk_failing_is_reported_per_item_and_a_keyed_retry_completes_it(
    server_url, owner, monkeypatch
):
    _chunk_failure_case(server_url, owner, monkeypatch, "bulk_update_tasks")


def test_a_later_move_chunk_failing_is_reported_per_item_and_a_keyed_retry_completes_it(server_url, owner, monkeypatch):
    _chunk_failure_case(server_url, owner, monkeypatch, "bulk_move_tasks")


def test_bulk_create_whose_second_step_fails_is_finished_by_a_keyed_retry(server_url, owner, monkeypatch):
    _no_retry_sleep(monkeypatch)
    b = rpc.ok(
        rpc.call_tool(server_url, owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": "Two steps"})
    )
    board_id, col = b["board"]["id"], b["columns"][0]["id"]
    start = _counter(owner.workspace_id)
    args = {
        "columnId": col,
        "tasks": [{"title": f"s{i}", "description": f"body {i}"} for i in range(3)],
        "idempotencyKey": f"steps-{uuid.uuid4()}",
    }
    with failing_transactions(after=1):
        first = rpc.ok(rpc.call_tool(server_url, owner.token, "bulk_create_tasks", args))
    assert "same idempotencyKey" in first["notice"]
    ids_ = [t["id"] for t in first["tasks"]]
    # Meanwhile the tasks are on the board and get_task answers their compact form.
    half = rpc.ok(rpc.call_tool(server_url, owner.token, "get_task", {"taskId": ids_[0]}))
    assert half["task"]["title"] == "s0" and "description" not in half["task"]
    done = rpc.ok(rpc.call_tool(server_url, owner.token, "bulk_create_tasks", args))
    assert [t["id"] for t in done["tasks"]] == ids_ and done["notice"] is None
    assert _counter(owner.workspace_id) == start + 3
    full = rpc.ok(rpc.call_tool(server_url, owner.token, "get_task", {"taskId": ids_[2]}))
    assert full["task"]["description"] == "body 2"
    by_number = rpc.ok(
        rpc.call_tool(server_url, owner.token, "get_task", {"workspaceId": owner.workspace_id, "number": start + 2})
    )
    assert by_number["task"]["id"] == ids_[1]
    snap = rpc.ok(rpc.call_tool(server_url, owner.token, "get_board_snapshot", {"boardId": board_id}))
    assert [t["id"] for t in snap["tasks"]] == ids_
    for task_id in ids_:  # the retry wrote each missing creation entry once, with the task's full item
        own = rpc.ok(rpc.call_tool(server_url, owner.token, "list_activity", {"taskId": task_id}))["activity"]
        assert [e["type"] for e in own] == ["task.created"], own


def test_bulk_create_without_a_key_retries_its_second_step_within_the_call(server_url, owner, monkeypatch):
    _no_retry_sleep(monkeypatch)
    b = rpc.ok(
        rpc.call_tool(
            server_url, owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": "Retry within"}
        )
    )
    col = b["columns"][0]["id"]
    from domain.settings import settings

    attempts = settings.dynamodb_max_attempts
    with failing_transactions(after=1, times=attempts):  # the second step's first attempt loses every botocore try
        made = rpc.ok(
            rpc.call_tool(
                server_url,
                owner.token,
                "bulk_create_tasks",
                {"columnId": col, "tasks": [{"title": "x", "description": "kept"}]},
            )
        )
    assert made["notice"] is None
    full = rpc.ok(rpc.call_tool(server_url, owner.token, "get_task", {"taskId": made["tasks"][0]["id"]}))
    assert full["task"]["description"] == "kept"


def test_worst_case_descriptions_are_split_under_the_transaction_size_limit():
    from domain.store import bulk, keys
    from domain.store.models import TaskDetailRow

    text = "\U0001f600" * 20000  # 4 UTF-8 bytes per character: the largest description allowed
    details = [
        TaskDetailRow(
            *keys.task_full("bd_x", n),
            taskId=f"tk_x_{n}",
            number=n,
            key=f"X-{n}",
            boardId="bd_x",
            columnId="cl_x",
            rank="a0",
            title="\U0001f600" * 500,
            priority="NONE",
            createdAt="2026-01-01T00:00:00.000Z",
            updatedAt="2026-01-01T00:00:00.000Z",
            description=text,
            createdBy="usr_x",
        )
        for n in range(1, 51)
    ]
    per_task = bulk.item_bytes(details[0])
    assert per_task > 80_000 and 50 * per_task > 4_000_000  # one transaction could not hold them
    chunks = bulk._full_item_chunks(details, "ws_x", list(range(50)))
    assert len(chunks) == 2 and sorted(i for c in chunks for i in c) == list(range(50))
    assert all(sum(bulk.item_bytes(details[i]) for i in c) < bulk.MAX_TX_BYTES for c in chunks)
    plain = [TaskDetailRow(**{**d.attribute_values, "description": "d" * 2000}) for d in details]
    # four actions a task (full item, pointer, creation entry, its recent-activity item): 25 fit
    # one transaction, 50 take two
    assert [len(c) for c in bulk._full_item_chunks(plain, "ws_x", list(range(50)))] == [25, 25]
    assert len(bulk._full_item_chunks(plain, "ws_x", list(range(25)))) == 1


async def test_an_archived_board_refuses_bulk_writes_and_nothing_is_written(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board_id, cols = await _column(c, owner.workspace_id, "Archived")
        ts = [await new_task(c, cols[0], f"frozen {i}") for i in range(2)]
        await ok(c, "archive_board", {"boardId": board_id})
        before = stored_state()
        refused = await err(c, "bulk_create_tasks", {"columnId": cols[0], "tasks": [{"title": "no"}]})
        assert names_field(refused, "columnId") and "archived" in refused["message"], refused
        for tool, items in (
            ("bulk_update_tasks", [{"taskId": t["id"], "title": "no"} for t in ts]),
            ("bulk_move_tasks", [{"taskId": t["id"], "columnId": cols[1]} for t in ts]),
        ):
            out = await ok(c, tool, {"items": items})
            assert out["failed"] == 2 and all(
                r["error"]["code"] == "INVALID_INPUT" and "archived" in r["error"]["message"] for r in out["results"]
            ), out
        assert stored_state() == before


async def test_bulk_titles_and_descriptions_are_redacted(server_url, owner):
    """Issue 24 item 8: bulk_create_tasks and bulk_update_tasks carry titles and descriptions too;
    they are redacted like create_task's, and the answer names the rules."""
    import secrets

    key = "AKIA" + "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    slack = (
        "xoxb-"
        + "".join(secrets.choice("0123456789") for _ in range(12))
        + "-"
        + "".join(secrets.choice("0123456789") for _ in range(13))
        + "-"
        + uuid.uuid4().hex[:24]
    )
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _column(c, owner.workspace_id)
        made = await ok(
            c,
            "bulk_create_tasks",
            {
                "columnId": cols[0],
                "tasks": [
                    {"title": f"key {key}", "description": "first"},
                    {"title": "clean", "description": f"bot {slack}"},
                ],
            },
        )
        assert made["redactions"] == ["aws-access-key", "slack-token"], made["redactions"]
        assert made["tasks"][0]["title"] == "key [REDACTED:aws-access-key]"
        t0, t1 = made["tasks"]
        upd = await ok(
            c,
            "bulk_update_tasks",
            {
                "items": [
                    {"taskId": t1["id"], "description": f"rotated; old id was {key}"},
                    {"taskId": t0["id"], "priority": "LOW"},
                ]
            },
        )
        assert upd["redactions"] == ["aws-access-key"] and upd["applied"] == 2
        full = await ok(c, "get_task", {"taskId": t1["id"]})
        assert key not in full["task"]["description"] and "[REDACTED:aws-access-key]" in full["task"]["description"]
        moved = await ok(c, "bulk_move_tasks", {"items": [{"taskId": t0["id"], "columnId": cols[1]}]})
        assert "redactions" not in moved
    state = str(stored_state())
    assert key not in state and slack not in state
