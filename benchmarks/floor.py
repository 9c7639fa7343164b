"""Throughput against the floor (issue 25): ours beside an official-SDK server that does the least.

Three servers, the same DynamoDB Local, one run:

* **ours**: ``functions.http_app`` under uvicorn, configured as a warm Lambda environment
  (``JENTRIX_RATE_SYNC_EVERY=10``: the deferred rate window; the 5 s token and warm caches);
  over stdio ``functions.stdio_adapter`` (exact window);
* **SDK + our pipeline**: ``benchmarks.sdk_server`` (the ``mcp`` package's ``MCPServer``) whose
  tools run ``domain.pipeline.call_tool`` with the same settings — the anchor of
  ``benchmarks.load``;
* **SDK floor**: the same ``MCPServer`` in ``bare`` mode: ``get_task`` is one GetItem of the
  task item and ``update_task`` one conditional UpdateItem, without authentication or
  membership (``JENTRIX_BENCH_SDK_MODE=bare``).

Workloads: concise ``get_task``, detailed ``get_task``, ``update_task`` (a new title; one task
per client so no two clients edit the same item). HTTP: 8 keep-alive loopback clients in a closed
loop for ``--seconds`` per run; stdio: ``--calls`` sequential calls per run. Runs interleave the
servers; figures are medians over ``--rounds`` and ratios medians of per-round ratios. Every
reply is checked (an error fails the command).

Targets (issue 25), ours / floor: concise get_task >= 0.8x, detailed >= 0.5x, update_task >= 0.5x.

``--baseline DIR`` adds a fourth server, ours as the checkout in DIR has it (e.g. ``git archive
<commit> | tar -x -C DIR``), to the same rounds: the "before" column is then that server's ratio
to the floor of the same run, an A/B on one machine state rather than two runs minutes apart.

Run: .venv/bin/python -m benchmarks.floor [--rounds 3] [--seconds 3] [--calls 200] [--json OUT] [--before JSON]
[--baseline DIR] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from benchmarks import _support as S
from benchmarks.load import CLIENTS, StdioServer, _is_error, _read_response, adapter_command, request_bytes, start_http

SERVERS = ("ours", "sdk", "floor")
BASE = "base"  # ours as a baseline checkout has it (--baseline)
LABELS = {"ours": "ours", "sdk": "SDK + our pipeline", "floor": "SDK floor (1 request)", BASE: "ours before (same run)"}
TARGETS = {"get_task concise": 0.8, "get_task detailed": 0.5, "update_task": 0.5}


def workloads(task_ids: list[str]) -> dict[str, Any]:
    """name -> (tool, arguments for (client, n))."""
    return {
        "get_task concise": ("get_task", lambda c, n: {"taskId": task_ids[0], "response_format": "concise"}),
        "get_task detailed": ("get_task", lambda c, n: {"taskId": task_ids[0], "response_format": "detailed"}),
        "update_task": (
            "update_task",
            lambda c, n: {"taskId": task_ids[1 + c % (len(task_ids) - 1)], "title": f"edit {c}-{n}"},
        ),
    }


def start(kind: str, env: dict[str, str], baseline: Path | None = None) -> tuple[Any, int]:
    """``ours``, ours from the baseline checkout (``base``), or the SDK server as the bare floor
    (``floor``) or with our pipeline."""
    if kind == "ours":
        return start_http("ours", env, wait_seconds=120)
    if kind == BASE:
        assert baseline is not None
        return start_http("ours", {**env, "PYTHONPATH": str(baseline)}, wait_seconds=120, cwd=baseline)
    return start_http("sdk", env, sdk_mode="bare" if kind == "floor" else "pipeline", wait_seconds=120)


async def _load(
    port: int, token: str, tool: str, args_for: Any, seconds: float | None, total: int | None
) -> dict[str, Any]:
    lat: list[float] = []
    errors: list[str] = []
    stop_at = time.perf_counter() + seconds if seconds else None
    issued = 0

    async def client(cid: int) -> None:
        nonlocal issued
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        n = 0
        try:
            while (stop_at is None or time.perf_counter() < stop_at) and (total is None or issued < total):
                issued += 1
                n += 1
                writer.write(request_bytes(port, token, S.tool_call_body(tool, args_for(cid, n), f"{cid}-{n}")))
                t0 = time.perf_counter()
                status, body = await _read_response(reader)
                lat.append(time.perf_counter() - t0)
                try:
                    result = S.parse_reply(body)["result"]
                    if status != 200 or result.get("isError"):
                        errors.append(str(result.get("content", [{}])[0].get("text", status))[:200])
                except Exception as exc:  # noqa: BLE001 - a malformed reply is an error, counted
                    errors.append(f"HTTP {status}: {exc}")
        finally:
            writer.close()

    began = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(CLIENTS)))
    lat.sort()
    return {
        "rps": len(lat) / (time.perf_counter() - began),
        "p50": lat[len(lat) // 2] if lat else 0.0,
        "errors": errors,
    }


def stdio_run(server: StdioServer, tool: str, args_for: Any, calls: int) -> tuple[float, list[str]]:
    errors: list[str] = []
    began = time.perf_counter()
    for n in range(calls):
        server.n += 1
        server.send(S.tool_call_body(tool, args_for(0, n), server.n) + b"\n")
        reply = server.recv()
        if _is_error(reply):
            errors.append(json.dumps(reply)[:200])
    return calls / (time.perf_counter() - began), errors


def measure(rounds: int, seconds: float, calls: int, baseline: Path | None = None) -> dict[str, Any]:
    kinds = SERVERS + ((BASE,) if baseline else ())
    out: dict[str, Any] = {"http": {}, "stdio": {}, "errors": []}
    with S.Stack() as stack:
        actor = stack.actor()
        tasks = [t["id"] for t in S.board_with_tasks(actor, 1 + CLIENTS)["tasks"]]
        loads = workloads(tasks)
        env = stack.child_env(JENTRIX_TOKEN=actor.token, JENTRIX_LOG_LEVEL="WARNING")
        http_env = {**env, "JENTRIX_RATE_SYNC_EVERY": "10", "JENTRIX_TOKEN_CACHE_SECONDS": "5"}

        adapter = adapter_command(actor.workspace_id)
        servers = {
            "ours": StdioServer("ours", adapter, env),
            "sdk": StdioServer("sdk", [S.PYTHON, "-m", "benchmarks.sdk_server", "--stdio"], env),
            "floor": StdioServer(
                "floor", [S.PYTHON, "-m", "benchmarks.sdk_server", "--stdio"], {**env, "JENTRIX_BENCH_SDK_MODE": "bare"}
            ),
        }
        if baseline:
            servers[BASE] = StdioServer(BASE, adapter, {**env, "PYTHONPATH": str(baseline)}, cwd=baseline)
        try:
            for srv in servers.values():
                srv.handshake()
            for name, (tool, args_for) in loads.items():
                out["stdio"][name] = {k: [] for k in kinds}
                for srv in servers.values():
                    stdio_run(srv, tool, args_for, 10)  # warm-up
                for r in range(rounds):
                    for k in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
                        rate, errs = stdio_run(servers[k], tool, args_for, calls)
                        out["stdio"][name][k].append(rate)
                        out["errors"] += [f"stdio {k} {name}: {e}" for e in errs]
        finally:
            for srv in servers.values():
                srv.close()

        procs: dict[str, tuple[Any, int]] = {}
        try:
            for k in kinds:  # one by one inside the try: a server that fails to start stops the others
                procs[k] = start(k, http_env, baseline)
            for name, (tool, args_for) in loads.items():
                out["http"][name] = {k: [] for k in kinds}
                for k in kinds:  # warm-up
                    asyncio.run(_load(procs[k][1], actor.token, tool, args_for, None, 32))
                for r in range(rounds):
                    for k in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
                        res = asyncio.run(_load(procs[k][1], actor.token, tool, args_for, seconds, None))
                        out["http"][name][k].append(res["rps"])
                        out["errors"] += [f"http {k} {name}: {e}" for e in res["errors"]]
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=20)
    return out


def render(after: dict[str, Any], before: dict[str, Any] | None) -> str:
    rows = []
    for transport, unit in (("http", "req/s, 8 clients"), ("stdio", "calls/s, sequential")):
        for name, target in TARGETS.items():
            got = after[transport][name]
            ratio = S.ratios_of_pairs(got["ours"], got["floor"])
            sdk = S.ratios_of_pairs(got["ours"], got["sdk"])
            prior = ""
            if BASE in got:
                prior = f"{S.ratios_of_pairs(got[BASE], got['floor']).median:.2f}x (same run)"
            elif before is not None:
                b = before[transport][name]
                prior = f"{S.ratios_of_pairs(b['ours'], b['floor']).median:.2f}x"
            rows.append(
                (
                    f"{transport}: {name} ({unit})",
                    *(f"{S.summary(got[k]).median:.0f}" for k in SERVERS),
                    prior or "-",
                    f"**{ratio.median:.2f}x** ({ratio.lo:.2f}-{ratio.hi:.2f})",
                    f"{sdk.median:.2f}x",
                    f">= {target}x: {'met' if ratio.median >= target else 'NOT met'}",
                )
            )
    return S.table(
        (
            "workload",
            *(LABELS[k] for k in SERVERS),
            "ours/floor before",
            "ours/floor after",
            "ours/SDK+pipeline after",
            "target",
        ),
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--json", help="also write the raw figures to this file")
    p.add_argument("--before", help="raw figures of a run on the code before the change (its --json)")
    p.add_argument(
        "--baseline", help="a checkout of the code before the change, run as a fourth server in the same rounds"
    )
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    began = time.perf_counter()
    baseline = Path(args.baseline).resolve() if args.baseline else None
    after = measure(args.rounds, args.seconds, args.calls, baseline)
    before = json.loads(Path(args.before).read_text(encoding="utf-8")) if args.before else None
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(after, f)
    text = "\n".join(
        [
            S.machine_line(),
            "",
            f"{args.rounds} interleaved rounds per workload; HTTP runs of {args.seconds:.0f} s with {CLIENTS} keep-alive clients (uvicorn on "
            f"loopback), stdio runs of {args.calls} sequential calls. Figures are medians of rounds; ratios medians of per-round ratios. "
            "Ours over HTTP runs as a warm Lambda environment would (deferred rate window, k = 10; 5 s token and warm caches); "
            'over stdio with the exact window. "before" is '
            + (
                "ours from the baseline checkout, in the same rounds."
                if baseline
                else "the same command on earlier code, run separately."
            ),
            "",
            render(after, before),
            "",
            f"_The command took {time.perf_counter() - began:.0f} s; {len(after['errors'])} errors._",
        ]
    )
    print(text)
    for e in after["errors"][:5]:
        print("error:", e)
    if not args.no_write:
        S.write_section(
            "floor", "## Throughput against the floor (issue 25)\n\n`python -m benchmarks.floor`\n\n" + text
        )
    return 1 if after["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
