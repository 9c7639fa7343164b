"""Hot items: 32 writers creating tasks in one workspace against 32 writers in 32 workspaces.

Each writer is its own user (a MEMBER; its own token and rate window) calling ``create_task``
through the product pipeline in this process, one call after another, all 32 at once. Two
layouts, interleaved round by round:

* **one workspace** — the 32 writers are members of one workspace, each creating in a board of
  its own: what they share is the workspace (its task counter, its activity and search
  partitions);
* **32 workspaces** — the same, each writer in a workspace of its own.

A third layout, **one column**, has the 32 writers of one workspace create in the same column
of one board: they share the column (``lastRank``, count), the board (count, open check) too.
It is reported, not compared: a column's order and counts are one item by design, and its calls
may answer CONFLICT (counted) once a call's conflict budget is spent.

DynamoDB Local never cancels a transaction for a conflict, so the DynamoDB client runs with the
contention model of benchmarks/_contention.py (stated in the output): a transaction that names
an item another in-flight transaction names is cancelled with ``TransactionConflict`` with
probability ``--conflict-rate`` (1.0: the service's documented rule), a single write on such an
item fails likewise, and ``--throttle-rate`` of all requests are throttled (botocore retries
them with its own backoff). Every call must be answered OK and the task numbers must be
distinct, or the command fails.

Run: .venv/bin/python -m benchmarks.hot_writes [--rounds 3] [--calls 6] [--conflict-rate 1.0] [--throttle-rate 0.01] [--no-write]
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from benchmarks import _support as S
from benchmarks._contention import Contention

WRITERS = 32


def _member(owner: S.Actor, name: str) -> S.Actor:
    """A new user, a MEMBER of ``owner``'s workspace, with a token of its own."""
    from domain import auth
    from domain.store import members

    user = auth.create_user(f"{name.lower()}-{uuid.uuid4().hex[:6]}@bench.invalid", name)
    members.add(owner.workspace_id, user, "MEMBER")
    secret, _ = auth.mint_pat(user.userId, scopes=["read", "write"], display_name="benchmark")
    return S.Actor(user.userId, owner.workspace_id, secret, auth.authenticate(secret))


def _column(actor: S.Actor, name: str) -> str:
    b = S.call("create_board", {"workspaceId": actor.workspace_id, "name": name}, actor.principal)
    return b["columns"][0]["id"]


def layouts(stack: S.Stack) -> dict[str, list[tuple[S.Actor, str]]]:
    """(writer, column) pairs for each layout."""
    owner = stack.actor("Owner", workspace="Busy")
    one_ws = [owner] + [_member(owner, f"W{i}") for i in range(WRITERS - 1)]
    own_boards = [(a, _column(owner, f"Board {i}")) for i, a in enumerate(one_ws)]
    shared = _column(owner, "Shared")
    spread = [stack.actor(f"S{i}", workspace=f"Space {i}") for i in range(WRITERS)]
    return {
        "one workspace": own_boards,
        "32 workspaces": [(a, _column(a, "Own")) for a in spread],
        "one column": [(a, shared) for a in one_ws],
    }


def run(
    pairs: list[tuple[S.Actor, str]], calls: int, model: Contention, *, strict: bool
) -> tuple[float, list[tuple[str, int]], Counter[str]]:
    """All writers at once, ``calls`` creates each: (answered calls per second, (workspace, number)
    made, model stats with ``refused``: calls answered with an error, allowed only when not ``strict``)."""
    from domain.pipeline import call_tool

    spec = S.spec("create_task")
    model.stats.clear()

    def writer(pair: tuple[S.Actor, str]) -> list[tuple[str, int]]:
        actor, column = pair
        out = []
        for i in range(calls):
            outcome = call_tool(spec, {"columnId": column, "title": f"hot {uuid.uuid4().hex[:6]} {i}"}, actor.principal)
            if outcome.error is not None:
                if strict or outcome.error["error"]["code"] != "CONFLICT":
                    raise RuntimeError(f"create_task failed: {outcome.error}")
                model.stats["refused"] += 1
                continue
            out.append((actor.workspace_id, int(outcome.result["task"]["number"])))
        return out

    began = time.perf_counter()
    with ThreadPoolExecutor(len(pairs)) as pool:
        numbers = [n for ns in pool.map(writer, pairs) for n in ns]
    elapsed = time.perf_counter() - began
    return calls * len(pairs) / elapsed, numbers, Counter(model.stats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=6, help="create_task calls per writer per run")
    parser.add_argument("--conflict-rate", type=float, default=1.0)
    parser.add_argument("--throttle-rate", type=float, default=0.01)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md alone")
    args = parser.parse_args()

    with S.Stack() as stack:
        from domain.store import db

        plans = layouts(stack)
        model = Contention(conflict_rate=args.conflict_rate, throttle_rate=args.throttle_rate)
        rates: dict[str, list[float]] = {name: [] for name in plans}
        stats: dict[str, Counter[str]] = {name: Counter() for name in plans}
        with model.installed(db.botocore_clients()):
            for r in range(args.rounds):
                names = list(plans)
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    per_second, numbers, seen = run(plans[name], args.calls, model, strict=name != "one column")
                    if len(set(numbers)) != len(numbers):
                        raise SystemExit(f"{name}: duplicate task numbers")
                    rates[name].append(per_second)
                    stats[name] += seen
                    print(f"round {r + 1} {name}: {per_second:.1f} creates/s, {dict(seen)}", flush=True)

    ratio = S.ratios_of_pairs(rates["one workspace"], rates["32 workspaces"])
    column = S.ratios_of_pairs(rates["one column"], rates["32 workspaces"])
    rows = []
    for name in plans:
        s = S.summary(rates[name])
        st = stats[name]
        tx = st["transactions"] or 1
        rows.append(
            (
                name,
                f"{s.median:.1f} ({s.lo:.1f}-{s.hi:.1f})",
                f"{st['conflicts'] / tx:.1%}",
                st["throttled"],
                st["refused"],
            )
        )
    body = "\n".join(
        [
            "## Hot items: 32 writers creating tasks",
            "",
            S.machine_line(),
            "",
            f"`python -m benchmarks.hot_writes --rounds {args.rounds} --calls {args.calls} --conflict-rate {args.conflict_rate} "
            f"--throttle-rate {args.throttle_rate}`: {WRITERS} writers (one user each) call create_task {args.calls} times each, all at "
            "once, through the pipeline in one process; layouts interleaved round by round.",
            "",
            f"Contention model (benchmarks/_contention.py): {model.describe()}.",
            "",
            S.table(
                [
                    "layout",
                    "calls/s, median (range)",
                    "transactions cancelled",
                    "throttled requests",
                    "answered CONFLICT",
                ],
                rows,
            ),
            "",
            f"**One workspace / 32 workspaces: {ratio.median:.2f}x** (per-round ratios {ratio.lo:.2f}-{ratio.hi:.2f}); one shared "
            f"column / 32 workspaces: {column.median:.2f}x ({column.lo:.2f}-{column.hi:.2f}). In the two compared layouts every call "
            "was answered OK, with no duplicate task numbers.",
        ]
    )
    print(body)
    if not args.no_write:
        S.write_section("hot-writes", body)


if __name__ == "__main__":
    main()
