"""Races and retries against real DynamoDB Local: CAS, keyed creates, crash-safe idempotency."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from tests.rpc import call_tool, err, ok


def _board(url, actor):
    b = ok(call_tool(url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": "Race"}))
    return b["board"]["id"], [c["id"] for c in b["columns"]]


def test_ten_concurrent_updates_with_one_expected_stamp(server_url, owner):
    _, cols = _board(server_url, owner)
    task = ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "contended"}))["task"]

    def attempt(i):
        with httpx2.Client(timeout=60) as c:
            return call_tool(
                server_url,
                owner.token,
                "update_task",
                {"taskId": task["id"], "title": f"writer {i}", "expectedUpdatedAt": task["updatedAt"]},
                c,
            )

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(attempt, range(10)))
    wins = [r for r in results if not r["isError"]]
    losses = [err(r) for r in results if r["isError"]]
    assert len(wins) == 1 and len(losses) == 9
    winner = wins[0]["structuredContent"]["task"]
    for e in losses:
        assert e["code"] == "CONFLICT"
        assert e["current"]["title"] == winner["title"]
        assert e["current"]["updatedAt"] == winner["updatedAt"]
    stored = ok(call_tool(server_url, owner.token, "get_task", {"taskId": task["id"]}))["task"]
    assert stored["title"] == winner["title"]


def test_ten_concurrent_creates_with_one_key_make_one_task(server_url, owner):
    board_id, cols = _board(server_url, owner)
    key = f"k-{uuid.uuid4()}"
    args = {"columnId": cols[1], "title": "only once", "idempotencyKey": key}

    def attempt(_):
        with httpx2.Client(timeout=60) as c:
            return call_tool(server_url, owner.token, "create_task", args, c)

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(attempt, range(10)))
    created = {r["structuredContent"]["task"]["id"] for r in results if not r["isError"]}
    assert len(created) == 1
    for r in results:
        if r["isError"]:
            e = err(r)
            assert e["code"] == "CONFLICT" and e.get("retryAfterSeconds")
    snap = ok(call_tool(server_url, owner.token, "get_board_snapshot", {"boardId": board_id}))
    assert [t["id"] for t in snap["tasks"]] == list(created)


def test_concurrent_creates_without_key_get_gapless_numbers(server_url, owner):
    _, cols = _board(server_url, owner)

    def attempt(i):
        with httpx2.Client(timeout=60) as c:
            return ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": f"t{i}"}, c))[
                "task"
            ]["number"]

    with ThreadPoolExecutor(8) as pool:
        numbers = sorted(pool.map(attempt, range(16)))
    assert numbers == list(range(numbers[0], numbers[0] + 16))


def test_replay_is_identical_and_other_arguments_conflict(server_url, owner):
    _, cols = _board(server_url, owner)
    key = f"k-{uuid.uuid4()}"
    first = call_tool(
        server_url, owner.token, "create_task", {"columnId": cols[0], "title": "a", "idempotencyKey": key}
    )
    again = call_tool(
        server_url, owner.token, "create_task", {"columnId": cols[0], "title": "a", "idempotencyKey": key}
    )
    assert again["content"][0]["text"] == first["content"][0]["text"]
    other = err(
        call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "b", "idempotencyKey": key})
    )
    assert other["code"] == "CONFLICT"


def test_create_survives_a_crash_after_the_business_write(server_url, owner, monkeypatch):
    """The process 'dies' after the task is written but before Powertools records completion.

    Dying mid-call cannot be produced for real inside one test process, so the completion write
    is made to fail (the one fault injected here); the in-progress record then stays behind,
    exactly as after a crash. A retry with the same key must answer with the same task.
    """
    from aws_lambda_powertools.utilities.idempotency.persistence.dynamodb import DynamoDBPersistenceLayer

    from domain.settings import settings

    board_id, cols = _board(server_url, owner)
    key = f"crash-{uuid.uuid4()}"
    args = {"columnId": cols[0], "title": "survivor", "idempotencyKey": key}
    monkeypatch.setattr(settings, "call_budget_ms", 1500)

    def die(self, *a, **k):
        raise RuntimeError("process died before recording completion")

    with monkeypatch.context() as m:
        m.setattr(DynamoDBPersistenceLayer, "save_success", die)
        crashed = err(call_tool(server_url, owner.token, "create_task", args))
    assert crashed["code"] == "INTERNAL" and "correlation id" in crashed["message"]
    assert "Traceback" not in crashed["message"]
    snap = ok(call_tool(server_url, owner.token, "get_board_snapshot", {"boardId": board_id, "fields": ["number"]}))
    assert len(snap["tasks"]) == 1  # the business write did commit
    written = snap["tasks"][0]

    # While the orphaned in-progress record is still fresh, a retry is told to come back later ...
    early = call_tool(server_url, owner.token, "create_task", args)
    if early["isError"]:
        assert err(early)["code"] == "CONFLICT"
    else:
        assert early["structuredContent"]["task"]["id"] == written["id"]
    time.sleep(1.6)
    # ... and once it has expired, the retry runs again and finds the marker: same task.
    retried = ok(call_tool(server_url, owner.token, "create_task", args))["task"]
    assert retried["id"] == written["id"] and retried["number"] == written["number"]
    snap = ok(call_tool(server_url, owner.token, "get_board_snapshot", {"boardId": board_id}))
    assert [t["id"] for t in snap["tasks"]] == [written["id"]]


@pytest.mark.parametrize("attempts", [3])
def test_workspace_create_with_key_is_crash_safe(server_url, stack, attempts):
    from tests.conftest import make_actor

    actor = make_actor("Kim", None)
    key = f"ws-{uuid.uuid4()}"
    ids = {
        ok(call_tool(server_url, actor.token, "create_workspace", {"name": "Keyed", "idempotencyKey": key}))[
            "workspace"
        ]["id"]
        for _ in range(attempts)
    }
    assert len(ids) == 1
    listed = ok(call_tool(server_url, actor.token, "list_workspaces", {}))["workspaces"]
    assert [w["id"] for w in listed] == list(ids)


_FIRST_USE_PROBE = r"""
import json, sys, threading
sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
from domain.catalog import registry
from domain.registry import ToolInput, ToolOutput

for name in ("get_task", "create_task", "get_board_snapshot", "create_comment", "set_task_labels", "list_activity"):
    registry().get(name).handler  # the tool's module is imported; its models are still deferred
models, todo = [], [ToolInput, ToolOutput]
while todo:
    m = todo.pop()
    todo.extend(m.__subclasses__())
    if not m.__pydantic_complete__ and m not in (ToolInput, ToolOutput):
        models.append(m)

def outcome(model, how):
    try:
        model.model_validate({}) if how == "validate" else model()
        return ["ok"]
    except Exception as exc:
        errors = exc.errors() if hasattr(exc, "errors") else None
        return [type(exc).__name__, sorted(f"{e['type']}@{e['loc']}" for e in errors) if errors is not None else str(exc)]

bad = []
for model in models:
    threads, seen = 24, []
    gate = threading.Barrier(threads)
    def first_use(i, model=model):
        gate.wait()
        seen.append((i % 2, outcome(model, "validate" if i % 2 else "construct")))
    pool = [threading.Thread(target=first_use, args=(i,)) for i in range(threads)]
    [t.start() for t in pool]
    [t.join() for t in pool]
    expected = {0: outcome(model, "construct"), 1: outcome(model, "validate")}
    bad += [[model.__name__, got] for how, got in seen if got != expected[how]]
print(json.dumps({"models": len(models), "bad": bad[:5], "badCount": len(bad)}))
"""


def test_concurrent_first_use_of_deferred_models_builds_them_once():
    """Two agents calling the same tool at once on a fresh server: every tool model is built on
    first use, and with pydantic 2.13 a use racing that build failed (AttributeError on
    ``__pydantic_core_schema__``) or validated against the parent class's schema. Now every
    thread's answer equals the one a single thread gets, for each model of six tool modules."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("JENTRIX_EAGER_CATALOG", "AWS_LAMBDA_INITIALIZATION_TYPE")}
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_USE_PROBE],
        cwd=root,
        env={**env, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["models"] >= 30, found
    assert found["badCount"] == 0, found
