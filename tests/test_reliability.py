"""Reliability suites: compare-and-set races, idempotency storms, and injected DynamoDB faults.

Everything runs against DynamoDB Local through the HTTP endpoint (tests/conftest.py
``server_url``: the same FastAPI app Lambda runs, in this process) and asserts behaviour and
counts, never seconds.

* **CAS race** — many threads send random ``update_task``/``move_task`` calls with
  ``expectedUpdatedAt`` at a few tasks of one board. Every success was conditioned on the stamp
  before it, so one task's successful writes form a single chain by ``updatedAt``; replaying
  their changes in that order must give the stored task, every CONFLICT must show a state that
  is on that chain, the column counters must equal the tasks in each column, and the board's
  activity log must hold exactly one row per successful write (no lost update, no partial write).
* **Idempotency storm** — for every keyed tool of the registry (``spec.keyed``): concurrent
  identical keyed calls make exactly one entity and equal answers; a key reused with other
  arguments is CONFLICT every time.
* **Faults** — throttling (``ProvisionedThroughputExceededException``, ``ThrottlingException``,
  a transaction cancelled with ``ThrottlingError``), ``TransactionConflict``, read timeouts
  (``ReadTimeoutError``) and connection resets (``ConnectionClosedError``): bounded retries
  (botocore's standard mode with the configured attempts; the store's transaction budget), then
  a clear envelope, no partial write (a fingerprint of both tables, rate windows excluded), and
  keyed calls interrupted mid-way that a retry with the same key completes with one effect.

**Fakes.** The fault suite is the one place where DynamoDB's behaviour is faked: a
``before-send.dynamodb.<Operation>`` handler on the real botocore client
(``domain.store.db.dynamodb_client().meta.events``) raises a botocore exception or returns a
fabricated error response for chosen requests, or sends a request for real and then raises a
timeout (DynamoDB applied it, the answer was lost). Botocore's retry backoff is recorded and
set to zero and its retry quota refilled for each fault test (``botocore_retries``), so the
attempt counts are botocore's own and the suite does not sleep through real backoff.

Sizes: CI-sized by default; ``JENTRIX_RELIABILITY=full`` runs the large ones (16 threads x 500
calls for the race, 50 calls per storm). ``JENTRIX_RELIABILITY_SEED`` fixes the race's seed
(it is printed in every failure message).
"""

from __future__ import annotations

import json
import os
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

from domain.catalog import registry
from tests.conftest import make_actor
from tests.rpc import call_tool, ok
from tests.tools_support import activity_rows, stored_state

FULL = os.environ.get("JENTRIX_RELIABILITY", "").lower() == "full"
RACE_THREADS, RACE_CALLS, RACE_TASKS = (16, 500, 6) if FULL else (4, 100, 3)
STORM_CALLS = 50 if FULL else 20
SEED = int(os.environ.get("JENTRIX_RELIABILITY_SEED") or random.SystemRandom().randrange(1 << 32))


class Api:
    """One HTTP client for one thread; ``call`` returns ``(result, None)`` or ``(None, error)``."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.http = httpx2.Client(timeout=60)

    def call(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        res = call_tool(self.url, self.token, name, args, self.http)
        if res["isError"]:
            assert "structuredContent" not in res
            return None, json.loads(res["content"][0]["text"])["error"]
        return res["structuredContent"], None

    def raw(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return call_tool(self.url, self.token, name, args, self.http)

    def close(self) -> None:
        self.http.close()


@contextmanager
def api(url: str, token: str) -> Iterator[Api]:
    a = Api(url, token)
    try:
        yield a
    finally:
        a.close()


def concurrently(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """Run ``fn(0..n-1)`` on ``n`` threads released together by a barrier."""
    barrier = threading.Barrier(n)

    def run(i: int) -> Any:
        barrier.wait()
        return fn(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


def _board(url: str, token: str, workspace_id: str, name: str = "Reliability") -> tuple[str, list[str]]:
    b = ok(call_tool(url, token, "create_board", {"workspaceId": workspace_id, "name": name}))
    return b["board"]["id"], [c["id"] for c in b["columns"]]


# == CAS race =====================================================================================
FIELDS = ("title", "priority", "columnId")
PRIORITIES = ("NONE", "LOW", "MEDIUM", "HIGH", "URGENT")


@dataclass
class Sent:
    tool: str
    task: str
    args: dict[str, Any]
    result: dict[str, Any] | None
    error: dict[str, Any] | None

    @property
    def expected(self) -> str:
        return self.args["expectedUpdatedAt"]


def _fields(task: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(task[f] for f in FIELDS)


def _apply(state: tuple[Any, ...], call: Sent) -> tuple[Any, ...]:
    """The state after ``call``'s change on top of ``state`` (title, priority, column)."""
    title, priority, column = state
    if call.tool == "update_task":
        return (call.args.get("title", title), call.args.get("priority", priority), column)
    return (title, priority, call.args.get("columnId") or column)


def _race_worker(
    url: str,
    token: str,
    worker: int,
    tasks: list[str],
    columns: list[str],
    start: dict[str, dict[str, Any]],
    calls: int,
) -> list[Sent]:
    rng = random.Random(f"{SEED}-{worker}")
    view = {t: dict(v) for t, v in start.items()}  # this client's last knowledge of each task
    log: list[Sent] = []
    with api(url, token) as a:
        for i in range(calls):
            tid = rng.choice(tasks)
            known = view[tid]
            roll = rng.random()
            if roll < 0.1:  # what it already holds: a success that needs no write when the view is fresh
                tool, args = "update_task", {"title": known["title"], "priority": known["priority"]}
            elif roll < 0.5:
                tool, args = "update_task", {}
                if rng.random() < 0.7:
                    args["title"] = f"w{worker}-{i}"
                if not args or rng.random() < 0.5:
                    args["priority"] = rng.choice(PRIORITIES)
            elif roll < 0.85:
                tool, args = "move_task", {"columnId": rng.choice(columns)}
            else:
                anchor = rng.choice([t for t in tasks if t != tid])
                side = rng.choice(("beforeTaskId", "afterTaskId"))
                tool, args = "move_task", {"columnId": view[anchor]["columnId"], side: anchor}
            args = {"taskId": tid, **args, "expectedUpdatedAt": known["updatedAt"]}
            result, error = a.call(tool, args)
            log.append(Sent(tool, tid, args, result, error))
            if result is not None:
                view[tid] = result["task"]
            elif error["code"] == "CONFLICT" and "current" in error:
                view[tid] = error["current"]
            elif error["code"] == "INVALID_INPUT":  # the anchor left that column: look again
                anchor = args.get("beforeTaskId") or args.get("afterTaskId")
                view[anchor] = ok(a.raw("get_task", {"taskId": anchor, "response_format": "concise"}))["task"]
    return log


def test_cas_race_loses_no_update_and_stored_state_is_the_replay_of_the_successes(server_url, owner):
    """RACE_THREADS x RACE_CALLS random edits and moves with expectedUpdatedAt on RACE_TASKS tasks."""
    board_id, columns = _board(server_url, owner.token, owner.workspace_id, "Race")
    rng = random.Random(SEED)
    start = {}
    for n in range(RACE_TASKS):
        t = ok(
            call_tool(server_url, owner.token, "create_task", {"columnId": rng.choice(columns), "title": f"task {n}"})
        )["task"]
        start[t["id"]] = t
    tasks = list(start)
    logs = concurrently(
        RACE_THREADS, lambda w: _race_worker(server_url, owner.token, w, tasks, columns, start, RACE_CALLS)
    )
    log = [s for part in logs for s in part]
    where = f"(seed {SEED}; JENTRIX_RELIABILITY_SEED={SEED} replays it)"
    assert len(log) == RACE_THREADS * RACE_CALLS

    outcomes: Counter[str] = Counter()
    for s in log:
        if s.result is not None:
            outcomes["ok"] += 1
            continue
        code = s.error["code"]
        if code == "CONFLICT" and "current" in s.error:
            outcomes["conflict"] += 1
        elif code == "CONFLICT" and s.tool == "move_task" and s.error.get("retryAfterSeconds"):
            # move_task's own budget (10 attempts) spent on the destination column's lastRank
            # racing other moves: documented contention, nothing written, no stale stamp involved.
            outcomes["contended"] += 1
        elif code == "INVALID_INPUT" and ("beforeTaskId" in s.args or "afterTaskId" in s.args):
            assert "not a task in the destination column" in s.error["message"], (s, where)
            outcomes["anchor moved"] += 1
        else:
            pytest.fail(f"unexpected answer {s.error} to {s.tool} {s.args} {where}")
    assert outcomes["ok"] >= len(tasks), (outcomes, where)
    assert outcomes["conflict"] > 0, (outcomes, where)  # the race did race

    all_writes = 0
    for tid in tasks:
        mine = [s for s in log if s.task == tid]
        writes = [s for s in mine if s.result is not None and s.result["task"]["updatedAt"] != s.expected]
        noops = [s for s in mine if s.result is not None and s.result["task"]["updatedAt"] == s.expected]
        by_stamp: dict[str, Sent] = {}
        for s in writes:
            assert s.expected not in by_stamp, (
                f"two successful writes of {tid} were both conditioned on {s.expected}: a lost update {where}"
            )
            by_stamp[s.expected] = s
        stamp, state = start[tid]["updatedAt"], _fields(start[tid])
        states = {stamp: state}
        while stamp in by_stamp:
            s = by_stamp.pop(stamp)
            state = _apply(state, s)
            got = s.result["task"]
            assert _fields(got) == state, (f"{s.tool} {s.args} answered {got} on top of {states[stamp]}", where)
            assert got["updatedAt"] > stamp, where
            stamp = got["updatedAt"]
            states[stamp] = state
        assert not by_stamp, f"successful writes of {tid} off the chain: {list(by_stamp.values())[:2]} {where}"
        all_writes += len(writes)
        stored = ok(call_tool(server_url, owner.token, "get_task", {"taskId": tid, "response_format": "concise"}))[
            "task"
        ]
        assert stored["updatedAt"] == stamp and _fields(stored) == state, (stored, state, where)
        for s in noops:  # answered without a write: the task already was what the call asked for
            assert s.expected in states and _fields(s.result["task"]) == states[s.expected] == _apply(
                states[s.expected], s
            ), (s, where)
        for s in mine:
            if s.error and "current" in s.error:
                cur = s.error["current"]
                assert cur["id"] == tid and cur["updatedAt"] != s.expected, (s, where)
                assert states.get(cur["updatedAt"]) == _fields(cur), (
                    f"CONFLICT showed a state that was never stored: {cur} {where}"
                )

    snap = ok(call_tool(server_url, owner.token, "get_board_snapshot", {"boardId": board_id}))
    stored_columns = Counter(t["columnId"] for t in snap["tasks"])
    for c in snap["columns"]:
        assert c["taskCount"] == len(c["taskIds"]) == stored_columns[c["id"]], (c, where)
    assert snap["board"]["taskCount"] == snap["totalCount"] == len(tasks), where
    # One activity row per successful write, none for a refused call (no partial transaction).
    rows = Counter(r["type"]["S"] for r in activity_rows(board_id))
    assert rows["task.updated"] + rows["task.moved"] == all_writes, (rows, all_writes, where)
    print(f"CAS race {RACE_THREADS}x{RACE_CALLS} on {len(tasks)} tasks: {dict(outcomes)}, {all_writes} writes {where}")


# == Idempotency storm ============================================================================
@dataclass
class KeyedCase:
    """Valid arguments for one keyed tool, other valid arguments, and how to see its effect."""

    token: str
    args: dict[str, Any]
    other: dict[str, Any]
    entities: Callable[[], set[str]]  # ids of the entities of this kind where the call creates one
    id_of: Callable[[dict[str, Any]], str]  # the id of the entity a result names
    counter: Callable[[], int] | None = None  # e.g. the workspace's task counter: no number burnt


def _workspace_case(url: str) -> KeyedCase:
    actor = make_actor("Storm", None)
    tag = uuid.uuid4().hex[:8]  # its own slug: a clash would add a second transaction to the counts
    return KeyedCase(
        actor.token,
        {"name": f"Storm {tag}"},
        {"name": f"Other {tag}"},
        lambda: {w["id"] for w in ok(call_tool(url, actor.token, "list_workspaces", {}))["workspaces"]},
        lambda r: r["workspace"]["id"],
    )


def _board_case(url: str) -> KeyedCase:
    actor = make_actor("Storm")
    ws = actor.workspace_id
    return KeyedCase(
        actor.token,
        {"workspaceId": ws, "name": "Storm board"},
        {"workspaceId": ws, "name": "Storm board", "kind": "BUGS"},
        lambda: {b["id"] for b in ok(call_tool(url, actor.token, "list_boards", {"workspaceId": ws}))["boards"]},
        lambda r: r["board"]["id"],
    )


def _task_case(url: str) -> KeyedCase:
    from domain.store.models import WorkspaceRow

    actor = make_actor("Storm")
    board_id, columns = _board(url, actor.token, actor.workspace_id, "Storm")
    return KeyedCase(
        actor.token,
        {"columnId": columns[0], "title": "storm"},
        {"columnId": columns[0], "title": "storm", "priority": "HIGH"},
        lambda: {
            t["id"] for t in ok(call_tool(url, actor.token, "get_board_snapshot", {"boardId": board_id}))["tasks"]
        },
        lambda r: r["task"]["id"],
        counter=lambda: int(
            WorkspaceRow.get(f"WS#{actor.workspace_id}", "META", consistent_read=True).taskCounter or 0
        ),
    )


def _comment_case(url: str) -> KeyedCase:
    actor = make_actor("Storm")
    _, columns = _board(url, actor.token, actor.workspace_id, "Storm")
    task = ok(call_tool(url, actor.token, "create_task", {"columnId": columns[0], "title": "talked about"}))["task"]
    return KeyedCase(
        actor.token,
        {"taskId": task["id"], "body": "storm"},
        {"taskId": task["id"], "body": "another storm"},
        lambda: {
            c["id"]
            for c in ok(call_tool(url, actor.token, "list_comments", {"taskId": task["id"], "limit": 200}))["comments"]
        },
        lambda r: r["comment"]["id"],
    )


def _subtask_case(url: str) -> KeyedCase:
    actor = make_actor("Storm")
    _, columns = _board(url, actor.token, actor.workspace_id, "Storm")
    task = ok(call_tool(url, actor.token, "create_task", {"columnId": columns[0], "title": "checked off"}))["task"]
    return KeyedCase(
        actor.token,
        {"taskId": task["id"], "title": "storm"},
        {"taskId": task["id"], "title": "another storm"},
        lambda: {s["id"] for s in ok(call_tool(url, actor.token, "get_task", {"taskId": task["id"]}))["subtasks"]},
        lambda r: r["subtask"]["id"],
        counter=lambda: ok(
            call_tool(url, actor.token, "get_task", {"taskId": task["id"], "response_format": "concise"})
        )["task"]["subtaskCount"],
    )


def _bulk_create_case(url: str) -> KeyedCase:
    case = _task_case(url)
    column = case.args["columnId"]
    return KeyedCase(
        case.token,
        {"columnId": column, "tasks": [{"title": "storm"}]},
        {"columnId": column, "tasks": [{"title": "storm", "priority": "HIGH"}]},
        case.entities,
        lambda r: r["tasks"][0]["id"],
        counter=case.counter,
    )


def _bulk_edit_case(url: str, tool: str) -> KeyedCase:
    """A one-item bulk edit; its effect is the task's activity row of that edit, named by the
    ``updatedAt`` the item result carries (the row's ``at``)."""
    actor = make_actor("Storm")
    board_id, columns = _board(url, actor.token, actor.workspace_id, "Storm")
    task = ok(call_tool(url, actor.token, "create_task", {"columnId": columns[0], "title": "edited in bulk"}))["task"]
    if tool == "bulk_update_tasks":
        kind, args, other = "task.updated", {"title": "storm"}, {"title": "another storm"}
    else:
        kind, args, other = "task.moved", {"columnId": columns[1]}, {"columnId": columns[2]}

    def entities() -> set[str]:
        return {
            r["at"]["S"]
            for r in activity_rows(board_id)
            if r["type"]["S"] == kind and r.get("taskId", {}).get("S") == task["id"]
        }

    return KeyedCase(
        actor.token,
        {"items": [{"taskId": task["id"], **args}]},
        {"items": [{"taskId": task["id"], **other}]},
        entities,
        lambda r: r["results"][0]["task"]["updatedAt"],
    )


def _project_case(url: str) -> KeyedCase:
    actor = make_actor("Storm")
    ws = actor.workspace_id
    tag = uuid.uuid4().hex[:8]
    return KeyedCase(
        actor.token,
        {"workspaceId": ws, "name": f"Storm {tag}"},
        {"workspaceId": ws, "name": f"Storm {tag}", "status": "PLANNED"},
        lambda: {
            p["id"]
            for p in ok(call_tool(url, actor.token, "list_projects", {"workspaceId": ws, "limit": 200}))["projects"]
        },
        lambda r: r["project"]["id"],
    )


def _session_project(url: str) -> tuple[Any, str]:
    actor = make_actor("Storm")
    project = ok(
        call_tool(
            url,
            actor.token,
            "create_project",
            {"workspaceId": actor.workspace_id, "name": f"Storm {uuid.uuid4().hex[:8]}"},
        )
    )["project"]
    ok(
        call_tool(
            url,
            actor.token,
            "add_project_link",
            {"projectId": project["id"], "targetType": "REPO", "targetId": "storm/repo"},
        )
    )
    return actor, project["id"]


def _sessions_of(url: str, token: str, workspace_id: str) -> set[str]:
    return {
        s["id"]
        for s in ok(call_tool(url, token, "list_agent_sessions", {"workspaceId": workspace_id, "limit": 200}))[
            "sessions"
        ]
    }


def _create_session_case(url: str) -> KeyedCase:
    actor, project = _session_project(url)
    return KeyedCase(
        actor.token,
        {"projectId": project, "repo": "storm/repo"},
        {"projectId": project, "repo": "storm/repo", "provider": "codex"},
        lambda: _sessions_of(url, actor.token, actor.workspace_id),
        lambda r: r["session"]["id"],
    )


def _attach_session_case(url: str) -> KeyedCase:
    """attach-create: identical calls make one ACTIVE session; the other argument set names
    another provider thread."""
    actor, project = _session_project(url)
    base = {"projectId": project, "repo": "storm/repo", "provider": "claude-code"}
    return KeyedCase(
        actor.token,
        {**base, "threadId": f"storm-{uuid.uuid4()}"},
        {**base, "threadId": f"other-{uuid.uuid4()}"},
        lambda: _sessions_of(url, actor.token, actor.workspace_id),
        lambda r: r["session"]["id"],
    )


# Every keyed tool needs a builder here: the tests below fail for a keyed tool without one.
KEYED_CASES: dict[str, Callable[[str], KeyedCase]] = {
    "create_workspace": _workspace_case,
    "create_board": _board_case,
    "create_task": _task_case,
    "create_comment": _comment_case,
    "create_subtask": _subtask_case,
    "create_project": _project_case,
    "bulk_create_tasks": _bulk_create_case,
    "bulk_update_tasks": lambda url: _bulk_edit_case(url, "bulk_update_tasks"),
    "bulk_move_tasks": lambda url: _bulk_edit_case(url, "bulk_move_tasks"),
    "create_agent_session": _create_session_case,
    "attach_agent_session": _attach_session_case,
}
# The catalog's keyed tools (idempotencyKey). The opt-in coordination toolset's keyed tools take the
# spec's idempotency_key; their identical-call races are in tests/test_coordination.py (20 identical
# mj_ask calls -> one request; concurrent promotions -> one task); storm cases here are not written yet.
KEYED_TOOLS = sorted(spec.name for spec in registry() if spec.keyed and spec.area != "coordination")


def keyed_case(tool: str, url: str) -> KeyedCase:
    builder = KEYED_CASES.get(tool)
    if builder is None:
        pytest.fail(f"keyed tool {tool} has no argument builder in tests/test_reliability.py KEYED_CASES: add one")
    return builder(url)


def test_every_keyed_tool_of_the_registry_has_a_storm_case():
    assert KEYED_TOOLS, "the registry has no keyed tool"
    assert sorted(KEYED_CASES) == KEYED_TOOLS


def _in_progress(error: dict[str, Any]) -> bool:
    return (
        error["code"] == "CONFLICT" and "still in progress" in error["message"] and bool(error.get("retryAfterSeconds"))
    )


@pytest.mark.parametrize("tool", KEYED_TOOLS)
def test_identical_keyed_calls_at_once_make_one_entity_and_equal_answers(server_url, stack, tool):
    """STORM_CALLS concurrent identical calls. Accepted answers: the result (all byte-identical),
    or CONFLICT "still in progress" with retryAfterSeconds — a duplicate that waited longer than
    domain.idempotency.WAIT_SECONDS for the first call's record; it wrote nothing and its retry
    gets the same result. Nothing else."""
    case = keyed_case(tool, server_url)
    before = case.entities()
    counter = case.counter() if case.counter else None
    args = {**case.args, "idempotencyKey": f"storm-{uuid.uuid4()}"}

    def one(_: int) -> dict[str, Any]:
        with api(server_url, case.token) as a:
            return a.raw(tool, args)

    answers = concurrently(STORM_CALLS, one)
    texts = {r["content"][0]["text"] for r in answers if not r["isError"]}
    refused = [json.loads(r["content"][0]["text"])["error"] for r in answers if r["isError"]]
    assert all(_in_progress(e) for e in refused), refused
    late = call_tool(server_url, case.token, tool, args)  # a retry after the storm: the same answer
    assert not late["isError"], late
    texts.add(late["content"][0]["text"])
    assert len(texts) == 1, f"{len(texts)} different answers to one keyed call"
    made = case.entities() - before
    assert made == {case.id_of(late["structuredContent"])} and len(case.entities()) == len(before) + 1
    if counter is not None:
        assert case.counter() == counter + 1  # one number claimed, none burnt by the duplicates

    for _ in range(3):  # the key is spent on those arguments, for good
        other = call_tool(server_url, case.token, tool, {**case.other, "idempotencyKey": args["idempotencyKey"]})
        error = json.loads(other["content"][0]["text"])["error"] if other["isError"] else other
        assert error.get("code") == "CONFLICT" and "different arguments" in error["message"], error
    assert case.entities() - before == made


@pytest.mark.parametrize("tool", KEYED_TOOLS)
def test_one_key_raced_with_two_argument_sets_binds_to_one_and_refuses_the_other(server_url, stack, tool):
    case = keyed_case(tool, server_url)
    before = case.entities()
    key = f"mixed-{uuid.uuid4()}"
    variants = ({**case.args, "idempotencyKey": key}, {**case.other, "idempotencyKey": key})

    def one(i: int) -> tuple[int, dict[str, Any]]:
        with api(server_url, case.token) as a:
            return i % 2, a.raw(tool, variants[i % 2])

    answers = concurrently(STORM_CALLS, one)
    winners = {v for v, r in answers if not r["isError"]}
    assert len(winners) <= 1, "both argument sets succeeded with one key"
    assert len({r["content"][0]["text"] for _, r in answers if not r["isError"]}) <= 1
    for v, r in answers:
        if r["isError"]:
            e = json.loads(r["content"][0]["text"])["error"]
            assert e["code"] == "CONFLICT" and (
                _in_progress(e) or ("different arguments" in e["message"] and v not in winners)
            ), e
    made = case.entities() - before
    assert len(made) == 1, made
    # whichever set won, its retry replays and the other set stays refused
    results = [call_tool(server_url, case.token, tool, v) for v in variants]
    good = [i for i, r in enumerate(results) if not r["isError"]]
    assert len(good) == 1 and (not winners or good == list(winners))
    assert case.id_of(results[good[0]]["structuredContent"]) in made
    assert case.entities() - before == made


# == Faults =======================================================================================
def _clients() -> list[Any]:
    from domain.store import db

    return db.botocore_clients()


@dataclass
class Retries:
    """What botocore's standard retry handler decided during a test."""

    delays: list[tuple[int, bool]] = field(default_factory=list)  # (attempt number, throttling?)

    @property
    def throttled(self) -> int:
        return sum(1 for _, t in self.delays if t)


@pytest.fixture
def botocore_retries(stack, monkeypatch) -> Retries:
    """Record botocore's retry delays and make them zero; refill its retry quota.

    The retry handler is botocore's own (standard mode, ``total_max_attempts`` from the
    settings); only its sleep is skipped, and the quota (a token bucket shared by the client)
    starts full so earlier tests cannot change how many attempts this one sees."""
    seen = Retries()
    for client in _clients():
        handler = client.meta.events._emitter._unique_id_handlers["retry-config-dynamodb"]["handler"].__self__
        quota = handler._retry_quota._quota
        monkeypatch.setattr(quota, "_available_capacity", quota._max_capacity)
        backoff = handler._retry_policy._retry_backoff
        detector = backoff._throttling_detector

        def delay(context: Any, detector: Any = detector) -> float:
            seen.delays.append((context.attempt_number, detector.is_throttling_error_from_context(context)))
            return 0.0

        monkeypatch.setattr(backoff, "delay_amount", delay)
    return seen


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def _error_response(request: Any, error_type: str, message: str, **extra: Any) -> AWSResponse:
    body = json.dumps({"__type": error_type, "message": message, **extra}).encode()
    headers = {
        "x-amzn-RequestId": "injected",
        "Content-Type": "application/x-amz-json-1.0",
        "Content-Length": str(len(body)),
    }
    return AWSResponse(request.url, 400, headers, _Body(body))


Fault = Callable[[Any, dict[str, Any]], Any]


def throttling(code: str) -> Fault:
    prefix = "com.amazon.coral.availability#" if code == "ThrottlingException" else "com.amazonaws.dynamodb.v20120810#"
    return lambda request, body: _error_response(
        request, prefix + code, "Rate of requests exceeds the allowed throughput."
    )


def cancelled(reason: str) -> Fault:
    """TransactWriteItems cancelled with ``reason`` on its first action (the rest: None)."""

    def fault(request: Any, body: dict[str, Any]) -> AWSResponse:
        reasons = [{"Code": reason, "Message": f"injected {reason}"}] + [{"Code": "None"}] * (
            len(body["TransactItems"]) - 1
        )
        return _error_response(
            request,
            "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            f"Transaction cancelled, please refer cancellation reasons for specific reasons [{reason}]",
            CancellationReasons=reasons,
        )

    return fault


def raising(exc: type[Exception]) -> Fault:
    def fault(request: Any, body: dict[str, Any]) -> None:
        raise exc(endpoint_url=request.url)

    return fault


def applied_then(exc: type[Exception]) -> Fault:
    """DynamoDB receives and applies the request; its answer is lost (``exc`` instead). A request
    DynamoDB refused gets its real answer: only applied requests lose theirs."""

    def fault(request: Any, body: dict[str, Any]) -> Any:
        response = _clients()[0]._endpoint.http_session.send(request)
        response.content  # noqa: B018 - read it all
        if response.status_code != 200:
            return response
        raise exc(endpoint_url=request.url)

    return fault


@dataclass
class Rule:
    operation: str
    fault: Fault
    times: int | None  # None: every matching request
    where: Callable[[dict[str, Any]], bool] | None
    seen: int = 0  # matching requests sent (the faulted ones included): the attempts
    hits: int = 0


class Injector:
    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self._lock = threading.Lock()

    def add(
        self,
        operation: str,
        fault: Fault,
        *,
        times: int | None = None,
        where: Callable[[dict[str, Any]], bool] | None = None,
    ) -> Rule:
        rule = Rule(operation, fault, times, where)
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules = []

    def before_send(self, request: Any, event_name: str = "", **_: Any) -> Any:
        operation = event_name.rsplit(".", 1)[-1]
        rules = [r for r in self.rules if r.operation == operation]
        if not rules:
            return None
        body = json.loads(request.body or b"{}")
        for rule in rules:
            if rule.where is not None and not rule.where(body):
                continue
            with self._lock:
                rule.seen += 1
                active = rule.times is None or rule.hits < rule.times
                rule.hits += int(active)
            if active:
                return rule.fault(request, body)
        return None


@pytest.fixture
def inject(botocore_retries) -> Iterator[Injector]:
    injector = Injector()
    for client in _clients():
        client.meta.events.register("before-send.dynamodb", injector.before_send)
    try:
        yield injector
    finally:
        for client in _clients():
            client.meta.events.unregister("before-send.dynamodb", injector.before_send)


def on_table(name: Callable[[], str]) -> Callable[[dict[str, Any]], bool]:
    return lambda body: body.get("TableName") == name()


def _app_table() -> str:
    from domain.settings import settings

    return settings.table


def _idem_table() -> str:
    from domain.settings import settings

    return settings.idempotency_table


def _max_attempts() -> int:
    return _clients()[0].meta.config.retries["total_max_attempts"]


@contextmanager
def nothing_written() -> Iterator[None]:
    before = stored_state()
    yield
    after = stored_state()
    added = [k for k in after if k not in before]
    removed = [k for k in before if k not in after]
    changed = [k for k in after if k in before and after[k] != before[k]]
    assert not added and not removed and not changed, f"a failed call wrote: +{added[:3]} -{removed[:3]} ~{changed[:3]}"


def _task_fixture(url: str, actor: Any) -> tuple[str, list[str], dict[str, Any]]:
    board_id, columns = _board(url, actor.token, actor.workspace_id, "Faults")
    task = ok(call_tool(url, actor.token, "create_task", {"columnId": columns[0], "title": "steady"}))["task"]
    return board_id, columns, task


def _snapshot_ids(url: str, token: str, board_id: str) -> list[str]:
    return [t["id"] for t in ok(call_tool(url, token, "get_board_snapshot", {"boardId": board_id}))["tasks"]]


TRANSIENT = {
    "ProvisionedThroughputExceeded": (throttling("ProvisionedThroughputExceededException"), True),
    "ThrottlingException": (throttling("ThrottlingException"), True),
    "ReadTimeout": (raising(ReadTimeoutError), False),
    "ConnectionReset": (raising(ConnectionClosedError), False),
}


@pytest.mark.parametrize("kind", list(TRANSIENT))
def test_transient_store_faults_are_retried_by_botocore_and_the_call_writes_once(
    server_url, owner, inject, botocore_retries, kind
):
    fault, is_throttling = TRANSIENT[kind]
    board_id, columns, _ = _task_fixture(server_url, owner)
    before = _snapshot_ids(server_url, owner.token, board_id)
    rule = inject.add("TransactWriteItems", fault, times=_max_attempts() - 1)
    with api(server_url, owner.token) as a:
        result, error = a.call("create_task", {"columnId": columns[1], "title": f"through {kind}"})
    assert error is None, error
    assert rule.seen == _max_attempts() and rule.hits == _max_attempts() - 1
    assert len(botocore_retries.delays) == _max_attempts() - 1
    assert botocore_retries.throttled == (len(botocore_retries.delays) if is_throttling else 0)
    inject.clear()
    after = _snapshot_ids(server_url, owner.token, board_id)
    assert sorted(after) == sorted([*before, result["task"]["id"]])


def _unavailable(error: dict[str, Any]) -> bool:
    return (
        error["code"] == "INTERNAL"
        and "unavailable" in error["message"]
        and error.get("retryAfterSeconds")
        and "correlation id" in error["message"]
    )


def _busy(error: dict[str, Any]) -> bool:
    from domain import faults

    return (
        error["code"] == "INTERNAL"
        and "busy" in error["message"]
        and "correlation id" in error["message"]
        and error.get("retryAfterSeconds") == faults.BUSY_RETRY_AFTER_SECONDS
        and "Retry in" in error["hint"]
    )


PERSISTENT = {
    "ProvisionedThroughputExceeded": (throttling("ProvisionedThroughputExceededException"), _busy),
    "ThrottlingException": (throttling("ThrottlingException"), _busy),
    "ReadTimeout": (raising(ReadTimeoutError), _unavailable),
    "ConnectionReset": (raising(ConnectionClosedError), _unavailable),
}


@pytest.mark.parametrize("keyed", [False, True], ids=["update_task", "keyed create_task"])
@pytest.mark.parametrize("kind", list(PERSISTENT))
def test_persistent_store_faults_answer_a_clear_envelope_after_the_configured_attempts_and_write_nothing(
    server_url,
    owner,
    inject,
    botocore_retries,
    kind,
    keyed,
):
    fault, expected = PERSISTENT[kind]
    board_id, columns, task = _task_fixture(server_url, owner)
    if keyed:
        tool, args = "create_task", {"columnId": columns[0], "title": "keyed", "idempotencyKey": f"k-{uuid.uuid4()}"}
    else:
        tool, args = "update_task", {"taskId": task["id"], "title": "never", "expectedUpdatedAt": task["updatedAt"]}
    rule = inject.add("TransactWriteItems", fault)
    with nothing_written(), api(server_url, owner.token) as a:
        result, error = a.call(tool, args)
    assert result is None and expected(error), error
    assert "Traceback" not in json.dumps(error)
    assert rule.seen == _max_attempts(), "botocore's standard mode: the configured attempts, no more"
    inject.clear()
    # Once the store answers again the same call goes through, with one effect.
    with api(server_url, owner.token) as a:
        result, error = a.call(tool, args)
        assert error is None, error
        if keyed:
            again, _ = a.call(tool, args)
            assert again == result
    ids_now = _snapshot_ids(server_url, owner.token, board_id)
    assert len(ids_now) == (2 if keyed else 1)


@pytest.mark.parametrize("kind", ["ProvisionedThroughputExceeded", "ReadTimeout"])
def test_persistent_faults_on_a_read_answer_the_same_envelopes(server_url, owner, inject, kind):
    fault, expected = PERSISTENT[kind]
    board_id, _, _ = _task_fixture(server_url, owner)
    rule = inject.add("Query", fault, where=on_table(_app_table))
    with api(server_url, owner.token) as a:
        result, error = a.call("get_board_snapshot", {"boardId": board_id})
    assert result is None and expected(error), error
    assert rule.seen == _max_attempts()


def test_a_transaction_cancelled_for_throttling_answers_busy_and_writes_nothing(server_url, owner, inject):
    _, _columns, task = _task_fixture(server_url, owner)
    rule = inject.add("TransactWriteItems", cancelled("ThrottlingError"))
    with nothing_written(), api(server_url, owner.token) as a:
        result, error = a.call("update_task", {"taskId": task["id"], "priority": "HIGH"})
    assert result is None and _busy(error), error
    assert rule.seen >= 1


def test_throttled_token_check_answers_503_with_retry_after(server_url, owner, inject):
    from domain import faults

    inject.add(
        "GetItem",
        throttling("ProvisionedThroughputExceededException"),
        where=lambda b: b.get("Key", {}).get("PK", {}).get("S", "").startswith("TOKEN#"),
    )
    body = {
        "jsonrpc": "2.0",
        "id": "busy-auth",
        "method": "tools/call",
        "params": {"name": "list_workspaces", "arguments": {}},
    }
    r = httpx2.post(server_url, json=body, headers={"Authorization": f"Bearer {owner.token}"}, timeout=60)
    assert r.status_code == 503, r.text
    assert r.headers["retry-after"] == str(faults.BUSY_RETRY_AFTER_SECONDS)
    reply = r.json()
    assert reply["id"] == "busy-auth" and "busy" in reply["error"]["message"], reply
    assert reply["error"]["data"]["retryAfterSeconds"] == faults.BUSY_RETRY_AFTER_SECONDS


def _client_error(code: str, operation: str = "GetItem") -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": "injected"}}, operation)


@pytest.mark.parametrize(
    "code", ["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"]
)
def test_throttling_is_recognised_bare_and_wrapped_and_is_not_an_outage(code):
    from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyPersistenceLayerError
    from pynamodb.exceptions import GetError, TransactWriteError

    from domain import faults

    bare = _client_error(code)
    for exc in (
        bare,
        GetError("Failed to get item", bare),
        TransactWriteError("Failed to write transaction items", bare),
        IdempotencyPersistenceLayerError("Failed to save in progress record", bare),
    ):
        assert faults.throttled(exc) and not faults.storage_unavailable(exc) and not faults.too_large(exc), exc
    assert not faults.throttled(_client_error("ValidationException")) and not faults.throttled(
        ReadTimeoutError(endpoint_url="x")
    )
    envelope = faults.busy_error("cid42").envelope()["error"]
    assert _busy(envelope) and "cid42" in envelope["message"]


@pytest.mark.parametrize("exc", [ReadTimeoutError, ConnectionClosedError])
def test_a_transaction_that_gets_no_answer_raises_the_store_error_not_an_attribute_error(stack, inject, exc):
    """Regression: db.transact read PynamoDB's ``cause_response_code``, which raises
    AttributeError for a timeout or reset cause (``HTTPClientError.response`` is None), so the
    TransactWriteError was replaced by an AttributeError (classified only through __context__)."""
    from pynamodb.exceptions import TransactWriteError

    from domain import faults
    from domain.store import db
    from domain.store.models import Row, SlugRow

    rule = inject.add("TransactWriteItems", raising(exc))
    with pytest.raises(TransactWriteError) as info:
        db.transact(
            lambda tx: tx.save(
                SlugRow(f"SLUG#noanswer-{uuid.uuid4().hex}", "SLUG", workspaceId="ws_x"),
                condition=Row.PK.does_not_exist(),
            )
        )
    assert isinstance(info.value.cause, exc) and faults.storage_unavailable(info.value)
    assert rule.seen == _max_attempts()


def test_throttled_token_check_on_stdio_answers_the_busy_envelope(stack, owner, inject):
    from domain import auth
    from functions.protocol import Session
    from functions.stdio.backends import LocalBackend

    principal = auth.authenticate(owner.token)
    backend = LocalBackend(Session(principal=principal, transport="stdio"), token=owner.token)
    inject.add(
        "GetItem",
        throttling("ThrottlingException"),
        where=lambda b: b.get("Key", {}).get("PK", {}).get("S", "").startswith("TOKEN#"),
    )
    [reply] = backend.request(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "list_workspaces", "arguments": {}}}
    )
    assert reply["id"] == 7 and reply["result"]["isError"] is True
    assert _busy(json.loads(reply["result"]["content"][0]["text"])["error"]), reply


# -- TransactionConflict: the store's own budget --------------------------------------------------
def test_transient_transaction_conflict_is_retried_by_the_store_and_commits_once(server_url, owner, inject):
    board_id, columns, task = _task_fixture(server_url, owner)
    rule = inject.add("TransactWriteItems", cancelled("TransactionConflict"), times=2)
    with api(server_url, owner.token) as a:
        result, error = a.call(
            "update_task", {"taskId": task["id"], "title": "after contention", "expectedUpdatedAt": task["updatedAt"]}
        )
        assert error is None, error
        assert rule.seen == 3  # two cancelled, the third commits
        _made, error = a.call("create_task", {"columnId": columns[0], "title": "contended create"})
        assert error is None, error
    inject.clear()
    assert result["task"]["title"] == "after contention"
    rows = Counter(r["type"]["S"] for r in activity_rows(board_id))
    assert rows["task.updated"] == 1 and rows["task.created"] == 2
    assert len(_snapshot_ids(server_url, owner.token, board_id)) == 2


@pytest.mark.parametrize("keyed", [False, True], ids=["update_task", "keyed create_task"])
def test_persistent_transaction_conflict_answers_conflict_with_retry_after_once_the_budget_is_spent(
    server_url, owner, inject, keyed
):
    from domain.store.retry import ATTEMPTS

    board_id, columns, task = _task_fixture(server_url, owner)
    if keyed:
        tool, args = "create_task", {"columnId": columns[0], "title": "keyed", "idempotencyKey": f"k-{uuid.uuid4()}"}
    else:
        tool, args = "update_task", {"taskId": task["id"], "title": "never", "expectedUpdatedAt": task["updatedAt"]}
    rule = inject.add("TransactWriteItems", cancelled("TransactionConflict"))
    with nothing_written(), api(server_url, owner.token) as a:
        result, error = a.call(tool, args)
    assert result is None and error["code"] == "CONFLICT" and error.get("retryAfterSeconds"), error
    assert "current" not in error and "nothing was written" in error["message"]
    assert rule.seen == ATTEMPTS["transaction"], (
        "TransactionCanceledException is not retried by botocore: one request per store attempt"
    )
    inject.clear()
    with api(server_url, owner.token) as a:
        _, error = a.call(tool, args)
    assert error is None, error
    assert len(_snapshot_ids(server_url, owner.token, board_id)) == (2 if keyed else 1)


# -- interrupted keyed calls --------------------------------------------------------------------
@pytest.mark.parametrize("tool", KEYED_TOOLS)
def test_keyed_call_whose_completion_record_failed_is_retried_to_the_same_single_entity(
    server_url, stack, inject, monkeypatch, tool
):
    """The business transaction commits, then Powertools' "completed" UpdateItem fails on every
    attempt (connection reset): the in-progress record stays behind as after a crash. A retry
    with the same key waits for that record to lapse (call budget shortened), runs again, meets
    the creation marker and answers with the entity already made."""
    from domain.settings import settings

    case = keyed_case(tool, server_url)
    before = case.entities()
    args = {**case.args, "idempotencyKey": f"done-{uuid.uuid4()}"}
    monkeypatch.setattr(settings, "call_budget_ms", 1000)
    rule = inject.add("UpdateItem", raising(ConnectionClosedError), where=on_table(_idem_table))
    with api(server_url, case.token) as a:
        result, error = a.call(tool, args)
    assert result is None and _unavailable(error), error
    assert rule.seen == _max_attempts()
    made = case.entities() - before
    assert len(made) == 1  # the business write did commit
    inject.clear()
    with api(server_url, case.token) as a:
        result, error = a.call(tool, args)
        assert error is None, error
        replay = a.raw(tool, args)
    assert {case.id_of(result)} == made == case.entities() - before
    assert replay["structuredContent"] == result


@pytest.mark.parametrize("tool", KEYED_TOOLS)
def test_keyed_call_whose_applied_transaction_timed_out_is_retried_to_the_same_single_entity(
    server_url, stack, inject, tool
):
    """DynamoDB applies the create's transaction, every answer is lost (read timeouts; botocore's
    retries resend it with the same ClientRequestToken). The call answers "unavailable"; a retry
    with the same key finds the creation marker: the same entity, still one."""
    case = keyed_case(tool, server_url)
    before = case.entities()
    counter = case.counter() if case.counter else None
    args = {**case.args, "idempotencyKey": f"lost-{uuid.uuid4()}"}
    rule = inject.add("TransactWriteItems", applied_then(ReadTimeoutError))
    with api(server_url, case.token) as a:
        result, error = a.call(tool, args)
    assert result is None and _unavailable(error), error
    assert rule.seen == _max_attempts()
    made = case.entities() - before
    assert len(made) == 1
    inject.clear()
    with api(server_url, case.token) as a:
        result, error = a.call(tool, args)
    assert error is None, error
    assert {case.id_of(result)} == made == case.entities() - before
    if counter is not None:
        assert case.counter() == counter + 1


def test_a_transaction_applied_before_its_timeout_is_not_applied_again_by_botocore_retry(server_url, owner, inject):
    """Without any idempotencyKey: the resend carries the ClientRequestToken botocore generated
    for the call, so DynamoDB answers the retry without applying the transaction twice."""
    from domain.store.models import WorkspaceRow

    board_id, columns, _ = _task_fixture(server_url, owner)
    counter = int(WorkspaceRow.get(f"WS#{owner.workspace_id}", "META", consistent_read=True).taskCounter)
    rule = inject.add("TransactWriteItems", applied_then(ReadTimeoutError), times=1)
    with api(server_url, owner.token) as a:
        result, error = a.call("create_task", {"columnId": columns[0], "title": "sent twice"})
    assert error is None, error
    assert rule.seen == 2
    inject.clear()
    assert len(_snapshot_ids(server_url, owner.token, board_id)) == 2
    assert int(WorkspaceRow.get(f"WS#{owner.workspace_id}", "META", consistent_read=True).taskCounter) == counter + 1
    assert result["task"]["number"] == counter + 1


def test_keyed_call_whose_in_progress_record_write_timed_out_after_it_was_applied_completes_once(
    server_url, owner, inject, monkeypatch
):
    """Powertools' in-progress PutItem is applied but its answer lost; botocore's resend then
    meets the call's own record (ConditionalCheckFailed) and the call waits as for a concurrent
    duplicate until that record's in-progress lease (the call budget) lapses, then runs once."""
    from domain.settings import settings

    case = keyed_case("create_task", server_url)
    before = case.entities()
    monkeypatch.setattr(settings, "call_budget_ms", 1000)
    args = {**case.args, "idempotencyKey": f"put-{uuid.uuid4()}"}
    rule = inject.add("PutItem", applied_then(ReadTimeoutError), times=1, where=on_table(_idem_table))
    with api(server_url, case.token) as a:
        result, error = a.call("create_task", args)
    inject.clear()
    assert rule.hits == 1
    assert error is None, error
    assert case.entities() - before == {case.id_of(result)}
