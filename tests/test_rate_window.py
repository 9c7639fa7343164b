"""The rate window's cost and bound (issue 25): a refused call reads nothing of its target, and the
deferred window (Lambda) writes the shared counter once per ``k`` calls yet admits at most
``limit + n*k`` calls per minute across ``n`` environments. Requests are counted with botocore
events on the real DynamoDB Local (tests.rpc.RequestCounter); the server is the in-process uvicorn
of tests/conftest.py, so the limiter and settings patched here are the server's own."""

from __future__ import annotations

import uuid

import httpx2
import pytest

from domain import auth, ratelimit
from tests.rpc import RequestCounter, call_tool, err, ok

TARGET_READS = ("BatchGetItem", "GetItem", "Query")  # the token's own GetItem is subtracted below


def _counted(url, token, name, args):
    counter = RequestCounter()
    with httpx2.Client(timeout=60) as c, counter.watching():
        result = call_tool(url, token, name, args, c)
    return result, counter


def _window_writes(url, token, calls: int) -> int:
    """The window's UpdateItems over ``calls`` successful get_token_context calls of ``token``."""
    writes = 0
    for _ in range(calls):
        result, counter = _counted(url, token, "get_token_context", {})
        ok(result)
        writes += counter.ops["UpdateItem"]
    return writes


def _task(url, actor):
    board = ok(
        call_tool(
            url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": f"R {uuid.uuid4().hex[:12]}"}
        )
    )
    return ok(call_tool(url, actor.token, "create_task", {"columnId": board["columns"][0]["id"], "title": "limited"}))[
        "task"
    ]


def _reads(counter: RequestCounter) -> int:
    # the test session keeps no warm token cache (JENTRIX_TOKEN_CACHE_SECONDS=0): one GetItem is the token
    return sum(counter.ops[op] for op in TARGET_READS) - 1


def test_a_call_refused_for_its_scope_reads_nothing_of_its_target(server_url, owner):
    task = _task(server_url, owner)
    reader, _ = auth.mint_pat(owner.user_id, scopes=["read"])
    result, counter = _counted(server_url, reader, "update_task", {"taskId": task["id"], "title": "nope"})
    assert err(result)["code"] == "FORBIDDEN"
    assert _reads(counter) == 0, dict(counter.ops)
    assert counter.ops["TransactWriteItems"] == 0


@pytest.mark.parametrize("every", [1, 4], ids=["exact", "deferred"])
def test_a_call_over_the_window_reads_nothing_of_its_target(server_url, owner, monkeypatch, every):
    from domain.settings import settings

    task = _task(server_url, owner)
    token, _ = auth.mint_pat(owner.user_id)
    monkeypatch.setattr(settings, "rate_limit_per_minute", 3)
    monkeypatch.setattr(settings, "rate_sync_every", every)
    # (a minute boundary between the calls would restart the window: retried once)
    for _attempt in range(2):
        fresh, _ = auth.mint_pat(owner.user_id)
        for _ in range(3):
            ok(call_tool(server_url, fresh, "get_task", {"taskId": task["id"]}))
        result, counter = _counted(server_url, fresh, "get_task", {"taskId": task["id"]})
        if result["isError"]:
            break
    limited = err(result)
    assert limited["code"] == "RATE_LIMITED" and 1 <= limited["retryAfterSeconds"] <= 60
    assert _reads(counter) == 0, dict(counter.ops)
    # known over the limit before the call started: not even the window is written
    assert counter.total == 1, dict(counter.ops)
    del token


def test_the_deferred_window_writes_the_counter_once_per_k_calls(server_url, owner, monkeypatch):
    from domain.settings import settings

    monkeypatch.setattr(settings, "rate_sync_every", 5)
    monkeypatch.setattr(settings, "rate_sync_seconds", 600.0)
    token, _ = auth.mint_pat(owner.user_id)
    writes = _window_writes(server_url, token, 10)
    # the first call of a window syncs (this environment knows nothing of it yet), then every 5th
    assert writes in (2, 3), writes  # 3 when a minute boundary fell between the calls
    ctx = ok(call_tool(server_url, token, "get_token_context", {}))
    assert ctx["rateLimit"]["used"] >= 11 - 5, ctx


def test_the_deferred_window_bound_across_environments(stack):
    """Two environments (two limiters: separate warm processes share nothing but the table) with
    limit 6 and k 3 admit at most 6 + 2*3 calls in one window, and at least the limit."""
    token = f"tok-{uuid.uuid4().hex[:12]}"
    limit, k = 6, 3
    now = 1_800_000_000_000 + 30_000  # a fixed window, far from any other test's
    envs = [ratelimit.Limiter(), ratelimit.Limiter()]
    admitted = 0
    for i in range(60):
        admission = envs[i % 2].admit(token, limit, every=k, now_ms=now)
        window = admission.result()
        if not admission.refused:
            admitted += 1
        assert window.limit == limit
    assert limit <= admitted <= limit + len(envs) * k, admitted
    assert ratelimit.shared_count(token, now) >= limit


def test_the_exact_window_admits_exactly_the_limit_across_processes(stack):
    """Two exact limiters (stdio, jentrix dev) on one token: the shared count decides, so the pair
    admits exactly the limit, wherever the calls came from."""
    token = f"tok-{uuid.uuid4().hex[:12]}"
    now = 1_800_000_060_000 + 30_000
    envs = [ratelimit.Limiter(), ratelimit.Limiter()]
    admitted = 0
    for i in range(20):
        admission = envs[i % 2].admit(token, 7, every=1, now_ms=now)
        window = admission.result()
        if not admission.refused and window.used <= window.limit:
            admitted += 1
    assert admitted == 7


def test_one_exact_process_takes_its_numbers_in_blocks_and_stops_at_the_limit(stack):
    """One exact limiter with blocks of 10 (stdio's default) and limit 25: exactly 25 calls are
    admitted, each reporting its own count, from 4 adds (10, 10, then 2 and 1 near the limit,
    where blocks shrink to half of what is left), and the 26th is refused with no request."""
    token = f"tok-{uuid.uuid4().hex[:12]}"
    now = 1_800_000_120_000 + 30_000
    env = ratelimit.Limiter()
    counter = RequestCounter()
    reported = []
    with counter.watching():
        for _ in range(25):
            admission = env.admit(token, 25, every=1, reserve=10, now_ms=now)
            window = admission.result()
            assert not admission.over(), window
            reported.append(window.used)
        adds = counter.ops["UpdateItem"]
        refused = env.admit(token, 25, every=1, reserve=10, now_ms=now)
        assert refused.refused and refused.over()
        assert counter.ops["UpdateItem"] == adds  # known full: nothing sent
    assert reported == list(range(1, 26))
    assert adds < 25 / 4, adds
    assert ratelimit.shared_count(token, now) == 25


def test_exact_blocks_never_admit_past_the_limit_across_processes(stack):
    """Two exact limiters with blocks of 4 on one token, limit 40, calls alternating: never more
    than the limit, and a refusal leaves at most reserve - 1 unused numbers in the other process."""
    token = f"tok-{uuid.uuid4().hex[:12]}"
    now = 1_800_000_180_000 + 30_000
    limit, reserve = 40, 4
    envs = [ratelimit.Limiter(), ratelimit.Limiter()]
    admitted = [0, 0]
    counter = RequestCounter()
    with counter.watching():
        for i in range(80):
            admission = envs[i % 2].admit(token, limit, every=1, reserve=reserve, now_ms=now)
            admission.result()
            if not admission.over():
                admitted[i % 2] += 1
    assert limit - (reserve - 1) <= sum(admitted) <= limit, admitted
    assert min(admitted) >= limit // 2 - reserve, admitted  # alternating calls share the window
    assert counter.ops["UpdateItem"] <= sum(admitted) // 2, dict(counter.ops)
    assert ratelimit.shared_count(token, now) >= sum(admitted)


def test_concurrent_exact_calls_in_one_process_stay_within_the_limit(stack):
    """Calls admitted from 8 threads at once, blocks of 3, limit 30: the numbers handed out are
    each used once, so exactly 30 calls pass (one process: nothing is held elsewhere)."""
    from concurrent.futures import ThreadPoolExecutor

    token = f"tok-{uuid.uuid4().hex[:12]}"
    now = 1_800_000_240_000 + 30_000
    env = ratelimit.Limiter()

    def one(_: int) -> bool:
        admission = env.admit(token, 30, every=1, reserve=3, now_ms=now)
        admission.result()
        return not admission.over()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(60)))
    assert sum(results) == 30, sum(results)
    assert ratelimit.shared_count(token, now) >= 30


def test_the_server_adds_once_per_block_and_reports_the_exact_count(server_url, owner, monkeypatch):
    """Through the server with stdio's default block (10): 20 calls of a fresh token send 2 window
    adds, and get_token_context reports exactly the calls made (its own included)."""
    from domain.settings import settings

    monkeypatch.setattr(settings, "rate_sync_every", 1)
    monkeypatch.setattr(settings, "rate_reserve", 10)
    # (a minute boundary between the calls would restart the window: retried once)
    for _attempt in range(2):
        token, _ = auth.mint_pat(owner.user_id)
        adds = _window_writes(server_url, token, 20)
        ctx = ok(call_tool(server_url, token, "get_token_context", {}))
        if ctx["rateLimit"]["used"] == 21:
            break
    assert adds == 2, adds
    assert ctx["rateLimit"]["used"] == 21 and ctx["rateLimit"]["remaining"] == ctx["rateLimit"]["limit"] - 21, ctx
