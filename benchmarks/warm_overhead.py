"""Warm per-call overhead, ours against the official SDK, with DynamoDB time measured and taken out.

Both servers run in this process behind Mangum and receive the same API Gateway REST events:
ours through ``functions.lambda_handler.handler``, the SDK's ``MCPServer`` through
``benchmarks.sdk_server.handler``. Both tools run the same pipeline, so they send the same
DynamoDB requests; every request is timed where botocore sends it and the sum is subtracted
from the call's wall time. What remains is the protocol, transport, framework and pipeline
work around the database — the overhead this benchmark compares. Process CPU per call
(``time.process_time``, which includes botocore's own serialisation but not DynamoDB Local,
a separate process) is shown next to it.

Blocks of calls alternate between the two servers round by round (the order rotates), and
each round yields one ratio; the table gives medians and min-max over calls and the median
and range of the per-round ratios. Then end-to-end ``get_task`` and ``update_task`` on
DynamoDB Local, the same way.

Run: .venv/bin/python -m benchmarks.warm_overhead [--rounds 5] [--calls 30] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks import _support as S


def covered(reqs: list) -> float:
    """Wall time during which at least one DynamoDB request was in flight (the union of the
    request intervals): parallel requests overlap, so their durations must not be summed."""
    total, end = 0.0, float("-inf")
    for r in sorted(reqs, key=lambda r: r.start):
        if r.start > end:
            total += r.end - r.start
            end = r.end
        elif r.end > end:
            total += r.end - end
            end = r.end
    return total


class Target:
    def __init__(self, name: str, handler: Callable[[dict[str, Any], Any], dict[str, Any]], token: str) -> None:
        self.name = name
        self.handler = handler
        self.headers = {**S.JSON_HEADERS, "Authorization": f"Bearer {token}"}
        self.n = 0

    def call(self, tool: str, args: dict[str, Any]) -> None:
        self.n += 1
        out = self.handler(S.rest_event(S.tool_call_body(tool, args, self.n), self.headers), S.LambdaContext())
        if out["statusCode"] != 200:
            raise RuntimeError(f"{self.name}: HTTP {out['statusCode']}: {out['body'][:300]}")
        S.check_tool_reply(S.parse_reply(out["body"]))


class PipelineTarget(Target):
    """No transport at all: the token check and ``domain.pipeline.call_tool``, what every server
    variant here runs per call. Its overhead is the floor of any transport's (see the table)."""

    def __init__(self, token: str) -> None:
        super().__init__("pipeline", lambda event, ctx: {}, token)
        self.token = token

    def call(self, tool: str, args: dict[str, Any]) -> None:
        from domain import auth
        from domain.catalog import registry
        from domain.pipeline import call_tool

        principal = auth.authenticate(self.token)
        outcome = call_tool(registry().get(tool), args, principal)
        if outcome.error is not None:
            raise RuntimeError(f"pipeline: {outcome.error}")


def block(
    target: Target, meter: S.DynamoDBMeter, calls: int, make_args: Callable[[int], tuple[str, dict[str, Any]]]
) -> dict[str, list[float]]:
    wall, ddb, cpu, reqs_per_call = [], [], [], []
    for i in range(calls):
        tool, args = make_args(i)
        with meter.measuring() as reqs:
            c0, t0 = time.process_time(), time.perf_counter()
            target.call(tool, args)
            t1, c1 = time.perf_counter(), time.process_time()
        spent = covered(reqs)
        wall.append(t1 - t0)
        ddb.append(spent)
        cpu.append(c1 - c0)
        reqs_per_call.append(len(reqs))
    return {
        "wall": wall,
        "ddb": ddb,
        "overhead": [w - d for w, d in zip(wall, ddb, strict=True)],
        "cpu": cpu,
        "requests": reqs_per_call,
    }


def compare(
    targets: list[Target],
    meter: S.DynamoDBMeter,
    rounds: int,
    calls: int,
    make_args: Callable[[int], tuple[str, dict[str, Any]]],
) -> dict[str, dict[str, list[float]]]:
    """Per target: every call's samples, plus the per-round medians under ``round_*``."""
    out: dict[str, dict[str, list[float]]] = {
        t.name: {
            "wall": [],
            "ddb": [],
            "overhead": [],
            "cpu": [],
            "requests": [],
            "round_overhead": [],
            "round_wall": [],
        }
        for t in targets
    }
    for t in targets:  # warm-up: first calls, lazy imports, caches
        block(t, meter, 3, make_args)
    for r in range(rounds):
        order = targets[r % len(targets) :] + targets[: r % len(targets)]
        for t in order:
            b = block(t, meter, calls, make_args)
            for k in ("wall", "ddb", "overhead", "cpu", "requests"):
                out[t.name][k] += b[k]
            out[t.name]["round_overhead"].append(statistics.median(b["overhead"]))
            out[t.name]["round_wall"].append(statistics.median(b["wall"]))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=20, help="calls per block (one block per server per round)")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    began = time.perf_counter()
    meter = S.DynamoDBMeter(capacity=False).install()
    with S.Stack() as stack:
        actor = stack.actor()
        task = S.board_with_tasks(actor, 1)["tasks"][0]
        from benchmarks.sdk_server import handler_for
        from functions.lambda_handler import handler as our_handler

        targets = [
            Target("ours", our_handler, actor.token),
            Target("sdk", handler_for("pipeline"), actor.token),
            Target("sdk-direct", handler_for("direct"), actor.token),
            PipelineTarget(actor.token),
        ]
        get = compare(targets, meter, args.rounds, args.calls, lambda i: ("get_task", {"taskId": task["id"]}))
        upd = compare(
            targets,
            meter,
            args.rounds,
            args.calls,
            lambda i: ("update_task", {"taskId": task["id"], "title": f"edited {i}"}),
        )
    meter.uninstall()

    def row(label: str, data: dict[str, dict[str, list[float]]], key: str) -> tuple[str, ...]:
        o, s, d, pl = (S.summary(data[k][key]) for k in ("ours", "sdk", "sdk-direct", "pipeline"))
        rk = "round_overhead" if key == "overhead" else "round_wall"
        cells = []
        for other in ("sdk", "sdk-direct"):
            if key in ("overhead", "wall"):
                rr = S.ratios_of_pairs(data["ours"][rk], data[other][rk])
                cells.append(f"**{rr.median:.2f}x** ({rr.lo:.2f}-{rr.hi:.2f})")
            else:
                cells.append(S.ratio(o.median, S.summary(data[other][key]).median))
        return (label, o.ms(2), s.ms(2), d.ms(2), pl.ms(2), *cells)

    header = (
        "",
        "ours",
        "SDK + our pipeline",
        "SDK, handler only",
        "our pipeline alone, no transport",
        "ours/SDK",
        "ours/SDK handler only",
    )

    def floor(data: dict[str, dict[str, list[float]]]) -> str:
        rr = S.ratios_of_pairs(data["pipeline"]["round_overhead"], data["sdk"]["round_overhead"])
        tr = statistics.median(data["ours"]["overhead"]) - statistics.median(data["pipeline"]["overhead"])
        ts = statistics.median(data["sdk"]["overhead"]) - statistics.median(data["pipeline"]["overhead"])
        return (
            f"pipeline alone / SDK + our pipeline = **{rr.median:.2f}x** ({rr.lo:.2f}-{rr.hi:.2f}): no transport, however thin, "
            f"gets the overhead ratio below that; the transports themselves add ours {tr * 1000:.2f} ms, the SDK's {ts * 1000:.2f} ms "
            f"({S.ratio(tr, ts) if ts > 0 else 'n/a'})"
        )

    n = args.rounds * args.calls
    lines = [
        S.machine_line(),
        "",
        f"In-process Lambda handlers (REST events), {args.rounds} rounds x {args.calls} calls per server per round, interleaved; "
        f"{n} calls each. Medians (min-max) per call; the ratio column is ours/SDK, the median (range) of per-round ratios for the "
        "overhead and wall rows.",
        "",
        S.table(
            ("get_task (detailed)", *header[1:]),
            [
                row("overhead: wall minus DynamoDB request time", get, "overhead"),
                row("DynamoDB time (requests in flight)", get, "ddb"),
                row("process CPU (incl. botocore)", get, "cpu"),
                row("end to end (wall)", get, "wall"),
            ],
        ),
        "",
        S.table(
            ("update_task (title)", *header[1:]),
            [
                row("overhead: wall minus DynamoDB request time", upd, "overhead"),
                row("DynamoDB time (requests in flight)", upd, "ddb"),
                row("process CPU (incl. botocore)", upd, "cpu"),
                row("end to end (wall)", upd, "wall"),
            ],
        ),
        "",
        f"The floor, get_task: {floor(get)}. update_task: {floor(upd)}.",
        "",
        '"SDK + our pipeline" runs `domain.pipeline.call_tool` inside an SDK tool, so it sends exactly our requests; '
        '"SDK, handler only" runs just the tool\'s handler (no scope check, rate window or envelope), what a plain SDK '
        f"server doing the same reads would do. DynamoDB requests per call: get_task {statistics.median(get['ours']['requests']):.0f} / "
        f"{statistics.median(get['sdk']['requests']):.0f} / {statistics.median(get['sdk-direct']['requests']):.0f}, update_task "
        f"{statistics.median(upd['ours']['requests']):.0f} / {statistics.median(upd['sdk']['requests']):.0f} / {statistics.median(upd['sdk-direct']['requests']):.0f}.",
        "",
        f"_The command took {time.perf_counter() - began:.0f} s._",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        S.write_section("warm_overhead", "## Warm overhead per call\n\n`python -m benchmarks.warm_overhead`\n\n" + text)
        rr = S.ratios_of_pairs(get["ours"]["round_overhead"], get["sdk"]["round_overhead"])
        rd = S.ratios_of_pairs(get["ours"]["round_overhead"], get["sdk-direct"]["round_overhead"])
        S.record(
            "warm_overhead",
            f"get_task: ours {statistics.median(get['ours']['overhead']) * 1000:.1f} ms vs SDK + our pipeline "
            f"{statistics.median(get['sdk']['overhead']) * 1000:.1f} ms (**{rr.median:.2f}x**, {rr.lo:.2f}-{rr.hi:.2f}) and SDK handler-only "
            f"{statistics.median(get['sdk-direct']['overhead']) * 1000:.1f} ms (**{rd.median:.2f}x**, {rd.lo:.2f}-{rd.hi:.2f}); "
            f"the pipeline alone, no transport, is {statistics.median(get['pipeline']['overhead']) * 1000:.1f} ms "
            f"({S.ratios_of_pairs(get['pipeline']['round_overhead'], get['sdk']['round_overhead']).median:.2f}x the SDK + pipeline: the floor of this ratio)",
            "benchmarks.warm_overhead",
        )
    print(json.dumps({k: statistics.median(v["overhead"]) for k, v in get.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
