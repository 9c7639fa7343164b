"""list_my_work's DynamoDB requests at 1,000 and 10,000 tasks in one workspace (issue 14).

A workspace grows to each size across 5 boards (bulk_create_tasks, 50 a call, through the product
pipeline). At every size the same 30 tasks are assigned to the caller — 10 of them then moved into
their board's done column — and list_my_work is called: the requests it makes (counted with
botocore events) stay the same while the workspace grows tenfold, because the GSI3 query reads only
the caller's entries (docs/data-model.md, "Work index").

Run: .venv/bin/python -m benchmarks.my_work [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any

from benchmarks import _support as S

BOARDS = 5
ASSIGNED, CLOSED = 30, 10


def count_requests(fn: Any) -> tuple[Any, Counter[str]]:
    from domain.store import db

    ops: Counter[str] = Counter()

    def on_call(model: Any = None, **_: Any) -> None:
        ops[model.name] += 1

    clients = db.botocore_clients()
    for c in clients:
        c.meta.events.register("before-call.dynamodb", on_call)
    try:
        return fn(), ops
    finally:
        for c in clients:
            c.meta.events.unregister("before-call.dynamodb", on_call)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000")
    args = p.parse_args(argv)
    sizes = sorted(int(x) for x in args.sizes.split(","))
    rows = []
    with S.Stack() as stack:
        actor = stack.actor()
        boards = [
            S.call("create_board", {"workspaceId": actor.workspace_id, "name": f"Board {i}"}, actor.principal)
            for i in range(BOARDS)
        ]
        have = 0
        assigned = False
        for size in sizes:
            t0 = time.perf_counter()
            while have < size:
                b = boards[(have // 50) % BOARDS]
                n = min(50, size - have)
                S.call(
                    "bulk_create_tasks",
                    {
                        "columnId": b["columns"][0]["id"],
                        "tasks": [
                            {"title": f"task {have + i}", "dueDate": f"2031-{1 + (have + i) % 12:02d}-10"}
                            for i in range(n)
                        ],
                    },
                    actor.principal,
                )
                have += n
            if not assigned:
                page = S.call("list_tasks", {"boardId": boards[0]["board"]["id"], "limit": ASSIGNED}, actor.principal)[
                    "tasks"
                ]
                for i, t in enumerate(page):
                    S.call("set_task_assignees", {"taskId": t["id"], "userIds": [actor.user_id]}, actor.principal)
                    if i < CLOSED:
                        S.call(
                            "move_task",
                            {"taskId": t["id"], "columnId": boards[0]["columns"][-1]["id"]},
                            actor.principal,
                        )
                assigned = True
            seeded = time.perf_counter() - t0
            result, ops = count_requests(
                lambda: S.call("list_my_work", {"workspaceId": actor.workspace_id}, actor.principal)
            )
            rows.append(
                (
                    size,
                    len(result["tasks"]),
                    sum(ops.values()),
                    ", ".join(f"{k} {v}" for k, v in sorted(ops.items())),
                    f"{seeded:.0f} s",
                )
            )
    print(
        S.table(["tasks in the workspace", "open tasks returned", "DynamoDB requests", "by operation", "seeding"], rows)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
