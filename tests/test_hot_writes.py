"""Hot items: many writers on one workspace, one board or one task, every call answered.

Two kinds of test, both over HTTP against DynamoDB Local (tests/conftest.py ``server_url``):

* **On the emulator as it is** — 8 calls in flight on one task (create_subtask, toggle_subtask
  of different subtasks). Nobody sent anything stale, so every call must be answered OK and
  the task's counts must equal its subtask items.
* **With contention injected** — DynamoDB Local never cancels a transaction for a conflict, so
  ``Contention`` (benchmarks/_contention.py: a ``before-send`` hook on the real botocore client, the pattern of
  tests/test_reliability.py) plays the service's rule: a ``TransactWriteItems`` that names an
  item (put, update, delete or condition check) which another in-flight transaction also names
  is cancelled with ``TransactionConflict`` with probability ``CONFLICT_RATE`` (0.5: DynamoDB Local
  on a shared CI machine holds a transaction's items for a far larger share of a call than the
  service does, so the service's rule, p = 1, would overstate the overlaps); a single-item
  write on an item an in-flight transaction holds gets ``TransactionConflictException`` at the
  same rate; and any request is throttled (``ThrottlingException``, which botocore retries)
  with probability ``THROTTLE_RATE``. Then 32 writers create tasks in one workspace, 32 move
  tasks on one board and 16 fill one task's checklist: every call answered OK, no duplicate
  task numbers, counters equal to the items. Faking is the only way to get these faults here.

Sizes: CI-sized by default; ``JENTRIX_RELIABILITY=full`` multiplies the calls per writer.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest

from tests.rpc import call_tool, ok

FULL = os.environ.get("JENTRIX_RELIABILITY", "").lower() == "full"
ROUNDS = 4 if FULL else 1  # calls per writer in the injected-contention tests
CONFLICT_RATE = 0.5
THROTTLE_RATE = 0.02


def _calls(url: str, token: str, jobs: list[tuple[str, dict[str, Any]]], workers: int) -> list[dict[str, Any]]:
    """Run ``jobs`` (tool, arguments) on ``workers`` threads, each with its own HTTP client; the raw results in order."""
    local = threading.local()

    def one(job: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        if not hasattr(local, "http"):
            local.http = httpx2.Client(timeout=120)
        return call_tool(url, token, job[0], job[1], local.http)

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, jobs))


def _errors(results: list[dict[str, Any]]) -> list[str]:
    return [r["content"][0]["text"][:300] for r in results if r["isError"]]


def _board(url: str, token: str, workspace_id: str, name: str = "Hot") -> tuple[str, list[str]]:
    b = ok(call_tool(url, token, "create_board", {"workspaceId": workspace_id, "name": name}))
    return b["board"]["id"], [c["id"] for c in b["columns"]]


def _task_counts(url: str, token: str, task_id: str) -> tuple[int, int, int, int]:
    """(subtaskCount, subtasksDone) on the task and (items, completed items) of its checklist."""
    got = ok(call_tool(url, token, "get_task", {"taskId": task_id}))
    subs = got["subtasks"]
    return got["task"]["subtaskCount"], got["task"]["subtasksDone"], len(subs), sum(1 for s in subs if s["completed"])


# -- on the emulator as it is -----------------------------------------------------------------
def test_eight_calls_in_flight_on_one_task_are_all_answered(server_url, owner):
    """Reproduces issue 23 item 6: creates and toggles of different subtasks of one task, 8 in
    flight, used to answer CONFLICT ("kept committing") although nothing stale was sent."""
    _, cols = _board(server_url, owner.token, owner.workspace_id)
    task = ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "busy checklist"}))[
        "task"
    ]
    subs = [
        ok(call_tool(server_url, owner.token, "create_subtask", {"taskId": task["id"], "title": f"s{i}"}))["subtask"]
        for i in range(16)
    ]

    toggles = [("toggle_subtask", {"subtaskId": s["id"], "completed": True}) for s in subs]
    creates = [("create_subtask", {"taskId": task["id"], "title": f"new {i}"}) for i in range(16)]
    results = _calls(server_url, owner.token, [job for pair in zip(toggles, creates, strict=True) for job in pair], 8)
    assert not _errors(results), _errors(results)
    assert _task_counts(server_url, owner.token, task["id"]) == (32, 16, 32, 16)

    reopen = [("toggle_subtask", {"subtaskId": s["id"], "completed": False}) for s in subs[:12]]
    results = _calls(server_url, owner.token, reopen, 8)
    assert not _errors(results), _errors(results)
    assert _task_counts(server_url, owner.token, task["id"]) == (32, 4, 32, 4)


# -- with contention injected ------------------------------------------------------------------
from tests.test_reliability import botocore_retries  # noqa: E402,F401 - the fixture: botocore's retry sleeps skipped, its quota refilled


@pytest.fixture
def contention(stack, botocore_retries) -> Iterator[Any]:  # noqa: F811
    """The service's conflict rule and some throttling on the real client (benchmarks/_contention.py)."""
    from benchmarks._contention import Contention
    from domain.store import db

    model = Contention(
        conflict_rate=CONFLICT_RATE, throttle_rate=THROTTLE_RATE, seed=random.SystemRandom().randrange(1 << 32)
    )
    with model.installed(db.botocore_clients()):
        yield model


def _member(workspace_id: str, name: str) -> str:
    """A new user, made a MEMBER of ``workspace_id``; its token."""
    import uuid

    from domain import auth
    from domain.store import members

    user = auth.create_user(f"{name}-{uuid.uuid4().hex[:12]}@example.com", name)
    members.add(workspace_id, user, "MEMBER")
    secret, _ = auth.mint_pat(user.userId)
    return secret


def _per_writer(
    url: str, tokens: list[str], jobs: Callable[[int], list[tuple[str, dict[str, Any]]]]
) -> list[dict[str, Any]]:
    """Writer ``i`` (its own token and HTTP client) runs ``jobs(i)`` in order; all writers at once."""

    def writer(i: int) -> list[dict[str, Any]]:
        with httpx2.Client(timeout=120) as http:
            return [call_tool(url, tokens[i], name, args, http) for name, args in jobs(i)]

    with ThreadPoolExecutor(len(tokens)) as pool:
        return [r for rs in pool.map(writer, range(len(tokens))) for r in rs]


def _stored_numbers(workspace_id: str) -> list[int]:
    """Every task number pointer of the workspace, from the table."""
    from domain.settings import settings
    from domain.store import db

    client = db.dynamodb_client()
    found, kwargs = [], {"TableName": settings.table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        found += [
            int(i["SK"]["S"].rsplit("#", 1)[-1])
            for i in page["Items"]
            if i.get("kind", {}).get("S") == "TaskNumber" and workspace_id in i["PK"]["S"]
        ]
        if "LastEvaluatedKey" not in page:
            return found
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_32_writers_create_tasks_in_one_workspace(server_url, owner, contention):
    tokens = [owner.token] + [_member(owner.workspace_id, f"w{i}") for i in range(31)]
    columns = [_board(server_url, owner.token, owner.workspace_id, f"Own {i}")[1][0] for i in range(32)]
    contention.stats.clear()

    def jobs(i: int) -> list[tuple[str, dict[str, Any]]]:
        # each writer on its own board (as each of 32 workspaces would be): what they share is the workspace
        return [("create_task", {"columnId": columns[i], "title": f"w{i} r{r}"}) for r in range(ROUNDS)]

    results = _per_writer(server_url, tokens, jobs)
    assert not _errors(results), (len(_errors(results)), _errors(results)[:3], contention.stats)
    numbers = [r["structuredContent"]["task"]["number"] for r in results]
    assert len(numbers) == 32 * ROUNDS and len(set(numbers)) == len(numbers), "duplicate task numbers"
    assert sorted(_stored_numbers(owner.workspace_id)) == sorted(numbers)
    # The workspace head is in no create transaction: nothing conflicts although all 32 share it.
    assert contention.stats["transactions"] >= 32 * ROUNDS and contention.stats["conflicts"] == 0, contention.stats


def test_32_writers_move_tasks_on_one_board(server_url, owner, contention):
    tokens = [owner.token] + [_member(owner.workspace_id, f"m{i}") for i in range(31)]
    board_id, cols = _board(server_url, owner.token, owner.workspace_id, "Moves")
    from tests.tools_support import create_tasks_in_process

    tasks = [t["id"] for t in create_tasks_in_process(owner.token, cols[0], 32, "mover")]
    contention.stats.clear()

    def jobs(i: int) -> list[tuple[str, dict[str, Any]]]:
        return [("move_task", {"taskId": tasks[i], "columnId": cols[(i + r + 1) % len(cols)]}) for r in range(ROUNDS)]

    results = _per_writer(server_url, tokens, jobs)
    assert not _errors(results), (len(_errors(results)), _errors(results)[:3], contention.stats)
    snap = ok(call_tool(server_url, owner.token, "get_board_snapshot", {"boardId": board_id}))
    where = {t["id"]: t["columnId"] for t in snap["tasks"]}
    assert where == {t: cols[(i + ROUNDS) % len(cols)] for i, t in enumerate(tasks)}
    for c in snap["columns"]:
        assert c["taskCount"] == len(c["taskIds"]) == sum(1 for v in where.values() if v == c["id"])
    assert contention.stats["conflicts"] > 0, contention.stats  # they did share items: the board's entry, the columns


def test_16_writers_fill_one_checklist(server_url, owner, contention):
    tokens = [owner.token] + [_member(owner.workspace_id, f"c{i}") for i in range(15)]
    _, cols = _board(server_url, owner.token, owner.workspace_id, "Checklist")
    task = ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "shared checklist"}))[
        "task"
    ]
    contention.stats.clear()
    made: dict[int, list[str]] = {}

    def writer(i: int) -> list[dict[str, Any]]:
        out = []
        with httpx2.Client(timeout=120) as http:
            for r in range(ROUNDS * 2):
                res = call_tool(
                    server_url, tokens[i], "create_subtask", {"taskId": task["id"], "title": f"w{i} item {r}"}, http
                )
                out.append(res)
                if not res["isError"]:
                    made.setdefault(i, []).append(res["structuredContent"]["subtask"]["id"])
                    out.append(
                        call_tool(
                            server_url,
                            tokens[i],
                            "toggle_subtask",
                            {"subtaskId": made[i][-1], "completed": r % 2 == 0},
                            http,
                        )
                    )
        return out

    with ThreadPoolExecutor(16) as pool:
        results = [r for rs in pool.map(writer, range(16)) for r in rs]
    assert not _errors(results), (len(_errors(results)), _errors(results)[:3], contention.stats)
    items = 16 * ROUNDS * 2
    assert _task_counts(server_url, owner.token, task["id"]) == (items, items // 2, items, items // 2)
    assert contention.stats["conflicts"] > 0, contention.stats  # they did share the task's rows
