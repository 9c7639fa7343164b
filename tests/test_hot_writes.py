"""Hot items: many writers on one workspace, one board or one task, every call answered.

Two kinds of test, both over HTTP against DynamoDB Local (tests/conftest.py ``server_url``):

* **On the emulator as it is** — 8 calls in flight on one task (create_subtask, toggle_subtask
  of different subtasks). Nobody sent anything stale, so every call must be answered OK and
  the task's counts must equal its subtask items.
* **With contention injected** — DynamoDB Local never cancels a transaction for a conflict, so
  :class:`Contention` (a ``before-send`` hook on the real botocore client, the pattern of
  tests/test_reliability.py) plays the service's rule: a ``TransactWriteItems`` that names an
  item (put, update, delete or condition check) which another in-flight transaction also names
  is cancelled with ``TransactionConflict`` with probability ``CONFLICT_RATE``; a single-item
  write on an item an in-flight transaction holds gets ``TransactionConflictException`` at the
  same rate; and any request is throttled (``ThrottlingException``, which botocore retries)
  with probability ``THROTTLE_RATE``. Then 32 writers create tasks in one workspace, 32 move
  tasks on one board and 16 fill one task's checklist: every call answered OK, no duplicate
  task numbers, counters equal to the items. Faking is the only way to get these faults here.

Sizes: CI-sized by default; ``JENTRIX_RELIABILITY=full`` multiplies the calls per writer.
"""

from __future__ import annotations

import json
import os
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
from botocore.awsrequest import AWSResponse

from tests.conftest import make_actor
from tests.rpc import call_tool, ok

FULL = os.environ.get("JENTRIX_RELIABILITY", "").lower() == "full"
ROUNDS = 8 if FULL else 2  # calls per writer in the injected-contention tests
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
    task = ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "busy checklist"}))["task"]
    subs = [ok(call_tool(server_url, owner.token, "create_subtask", {"taskId": task["id"], "title": f"s{i}"}))["subtask"] for i in range(16)]

    toggles = [("toggle_subtask", {"subtaskId": s["id"], "completed": True}) for s in subs]
    creates = [("create_subtask", {"taskId": task["id"], "title": f"new {i}"}) for i in range(16)]
    results = _calls(server_url, owner.token, [job for pair in zip(toggles, creates, strict=True) for job in pair], 8)
    assert not _errors(results), _errors(results)
    assert _task_counts(server_url, owner.token, task["id"]) == (32, 16, 32, 16)

    reopen = [("toggle_subtask", {"subtaskId": s["id"], "completed": False}) for s in subs[:12]]
    results = _calls(server_url, owner.token, reopen, 8)
    assert not _errors(results), _errors(results)
    assert _task_counts(server_url, owner.token, task["id"]) == (32, 4, 32, 4)
