"""How the read tools grow with the data: snapshots of 100/500/2,000 tasks, list_tasks paging over
2,000 tasks, list_activity over 10,000 activity rows.

One board grows to 100, 500 and then 2,000 tasks (created through ``create_task``, so every
item is what the product writes); at each size ``get_board_snapshot`` is called through the
Lambda handler with ``limit: 500`` (its whole read in one answer; the default answer is one page
of the same read) and measured: DynamoDB requests, items read, capacity, wall time (median of
``--repeat`` calls) and the tasks returned. At 2,000 tasks ``list_tasks`` pages through the
whole board (200 per page) and the board's activity log is grown to 10,000 rows by copying the
``task.created`` rows the creates wrote under new ids (a raw ``BatchWriteItem`` of the item
shape in docs/data-model.md), then ``list_activity`` is measured on its first page and paged
to the end.

Run: .venv/bin/python -m benchmarks.scale [--sizes 100,500,2000] [--activity 10000] [--repeat 3] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

from benchmarks import _support as S
from benchmarks.cost_table import LambdaCaller


def measured(meter: S.DynamoDBMeter, fn: Any, repeat: int) -> tuple[Any, dict[str, Any]]:
    walls = []
    result = None
    reqs: list[S.Request] = []
    for _ in range(repeat):
        with meter.measuring() as got:
            t0 = time.perf_counter()
            result = fn()
            walls.append(time.perf_counter() - t0)
        reqs = list(got)
    return result, {
        "requests": len(reqs),
        "round_trips": S.round_trips(reqs),
        "items": sum(r.items for r in reqs),
        "read_units": round(sum(r.read_units for r in reqs), 1),
        "write_units": round(sum(r.write_units for r in reqs), 1),
        "wall": statistics.median(walls),
        "wall_lo": min(walls),
        "wall_hi": max(walls),
    }


def grow_activity(board_id: str, target: int) -> tuple[int, int]:
    """Copy the board's activity rows under new ids until it holds ``target`` rows; returns the
    counts before and after."""
    import boto3
    from ulid import ULID

    client = boto3.client("dynamodb", endpoint_url=os.environ["JENTRIX_DYNAMODB_ENDPOINT"], region_name="us-east-1")
    table = os.environ["JENTRIX_TABLE"]
    rows: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": f"BACT#{board_id}"}},
    }
    while True:
        page = client.query(**kwargs)
        rows += page["Items"]
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    have = before = len(rows)
    batch: list[dict[str, Any]] = []
    i = 0
    while have < target:
        src = rows[i % len(rows)]
        i += 1
        aid = str(ULID())
        at = src["at"]["S"]
        item = {**src, "SK": {"S": f"{at}#{aid}"}, "activityId": {"S": f"act_{aid}"}}
        if "GSI1SK" in src:
            item["GSI1SK"] = {"S": f"{at}#{aid}"}
        batch.append({"PutRequest": {"Item": item}})
        have += 1
        if len(batch) == 25 or have == target:
            pending: dict[str, Any] = {table: batch}
            while pending:
                pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
            batch = []
    return before, have


def page_all(call: LambdaCaller, name: str, args: dict[str, Any], key: str) -> tuple[int, int]:
    pages = rows = 0
    cursor = None
    while True:
        res = call(name, {**args, **({"cursor": cursor} if cursor else {})})
        if res.get("isError"):
            raise RuntimeError(res["content"][0]["text"])
        out = res["structuredContent"]
        pages += 1
        rows += len(out[key])
        cursor = out.get("nextCursor")
        if not cursor:
            return pages, rows


def fmt(m: dict[str, Any]) -> tuple[str, ...]:
    return (
        str(m["requests"]),
        str(m["items"]),
        f"{m['read_units']:g}",
        f"{m['wall'] * 1000:.0f} ms ({m['wall_lo'] * 1000:.0f}-{m['wall_hi'] * 1000:.0f})",
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100,500,2000")
    p.add_argument("--activity", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    sizes = sorted(int(x) for x in args.sizes.split(","))
    began = time.perf_counter()
    meter = S.DynamoDBMeter(capacity=True).install()
    snap_rows, seed_seconds = [], 0.0
    with S.Stack() as stack:
        actor = stack.actor()
        call = LambdaCaller(actor.token)
        board = S.board_with_tasks(actor, 0, "Scale")
        col = board["cols"][0]
        made = 0
        for size in sizes:
            t0 = time.perf_counter()
            while made < size:
                S.call("create_task", {"columnId": col, "title": f"task {made}"}, actor.principal)
                made += 1
            seed_seconds += time.perf_counter() - t0
            res, m = measured(
                meter, lambda: call("get_board_snapshot", {"boardId": board["id"], "limit": 500}), args.repeat
            )
            out = res["structuredContent"]
            snap_rows.append(
                (size, m, len(out["tasks"]), out.get("truncated", out.get("hasMore", "")), len(json.dumps(out)))
            )
        big = sizes[-1]
        _, lt = measured(
            meter, lambda: page_all(call, "list_tasks", {"boardId": board["id"], "limit": 200}, "tasks"), 1
        )
        lt_pages, lt_rows = page_all(call, "list_tasks", {"boardId": board["id"], "limit": 200}, "tasks")
        small, act_first_small = measured(
            meter, lambda: call("list_activity", {"boardId": board["id"], "limit": 200}), args.repeat
        )
        t0 = time.perf_counter()
        act_before, act_rows = grow_activity(board["id"], args.activity)
        seed_seconds += time.perf_counter() - t0
        large, act_first = measured(
            meter, lambda: call("list_activity", {"boardId": board["id"], "limit": 200}), args.repeat
        )
        _, act_all = measured(
            meter, lambda: page_all(call, "list_activity", {"boardId": board["id"], "limit": 200}, "activity"), 1
        )
        act_pages, act_seen = page_all(call, "list_activity", {"boardId": board["id"], "limit": 200}, "activity")
    meter.uninstall()

    first, last = snap_rows[0], snap_rows[-1]
    lines = [
        S.machine_line(),
        "",
        f"One board in one workspace; wall times are medians (min-max) of {args.repeat} calls through the Lambda handler (warm token "
        "cache; the pipeline's rate-window UpdateItem and membership GetItem are included in every row).",
        "",
        S.table(
            ("get_board_snapshot", "requests", "items read", "read units", "wall", "tasks returned", "answer bytes"),
            [(f"{size:,} tasks", *fmt(m)[:3], fmt(m)[3], n, f"{nbytes:,}") for size, m, n, _trunc, nbytes in snap_rows],
        ),
        "",
        f"Growth from {first[0]:,} to {last[0]:,} tasks ({last[0] / first[0]:.0f}x the tasks): requests x{last[1]['requests'] / first[1]['requests']:.1f}, "
        f"items read x{last[1]['items'] / max(1, first[1]['items']):.1f}, read units x{last[1]['read_units'] / max(0.5, first[1]['read_units']):.1f}, "
        f"wall x{last[1]['wall'] / first[1]['wall']:.1f}; the answer holds {last[2]} tasks.",
        "",
        S.table(
            ("paging and logs", "requests", "items read", "read units", "wall", "pages / rows"),
            [
                (f"list_tasks, whole {big:,}-task board, 200 per page", *fmt(lt), f"{lt_pages} / {lt_rows:,}"),
                (
                    f"list_activity first page (200), {act_before:,} rows",
                    *fmt(act_first_small),
                    f"1 / {len(small['structuredContent']['activity'])}",
                ),
                (
                    f"list_activity first page (200), {act_rows:,} rows",
                    *fmt(act_first),
                    f"1 / {len(large['structuredContent']['activity'])}",
                ),
                (f"list_activity, all {act_rows:,} rows, 200 per page", *fmt(act_all), f"{act_pages} / {act_seen:,}"),
            ],
        ),
        "",
        f"Per page: list_tasks {lt['requests'] / lt_pages:.1f} requests, {lt['read_units'] / lt_pages:.1f} read units; list_activity "
        f"{act_all['requests'] / act_pages:.1f} requests, {act_all['read_units'] / act_pages:.1f} read units.",
        "",
        f"_The command took {time.perf_counter() - began:.0f} s, {seed_seconds:.0f} s of it seeding._",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        S.write_section("scale", "## Scale\n\n`python -m benchmarks.scale`\n\n" + text)
        if last[0] == 2000:
            m = last[1]
            S.record(
                "snapshot_2000",
                f"{m['requests']} requests reading {m['items']:,} items, {m['read_units']:g} read units, to return {last[2]} tasks",
                "benchmarks.scale",
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
