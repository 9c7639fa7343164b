"""Throughput under load, ours against the official SDK: stdio and HTTP on loopback.

Two SDK variants are measured (see benchmarks/sdk_server.py): tools running our pipeline (the
same DynamoDB requests as ours) and tools running only the tool's handler.

stdio: ``python -m functions.stdio_adapter`` (in-process tools against this command's DynamoDB
Local, bound with ``--workspace``) against ``python -m benchmarks.sdk_server --stdio``. After
the handshake, ``get_task`` is called sequentially (one request in flight) and pipelined (the
whole batch written at once, replies read as they come).

HTTP: uvicorn serving ``functions.http_app:app`` against uvicorn serving the SDK's streamable
HTTP app (stateless, JSON responses), both on 127.0.0.1, driven by a small asyncio load
generator: 8 keep-alive connections, each sending ``tools/call get_task`` as soon as the
previous reply is in, for a fixed time per run. Runs alternate between the servers; the HTTP
runs together never exceed 60 s.

Then the per-token minute window: a third server of ours with a small limit receives limit+20
calls from 8 clients inside one window, and exactly ``limit`` must succeed.

Every reply is checked: an HTTP status other than 200, a JSON-RPC error or ``isError`` counts
as an error, and the command fails if there is any.

Run: .venv/bin/python -m benchmarks.load [--rounds 3] [--seconds 5] [--calls 100] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import _support as S

MAX_HTTP_SECONDS = 60.0
CLIENTS = 8


# -- stdio -------------------------------------------------------------------------------------
def adapter_command(workspace_id: str) -> list[str]:
    """Our stdio adapter bound to ``workspace_id``, quiet (what the stdio rows of load and floor run)."""
    return [S.PYTHON, "-m", "functions.stdio_adapter", "--workspace", workspace_id, "--log-level", "WARNING"]


class StdioServer:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            argv, cwd=cwd or S.REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.n = 0

    def send(self, data: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self) -> dict[str, Any]:
        assert self.proc.stdout
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: stdout closed (exit {self.proc.poll()})")
        return json.loads(line)

    def handshake(self) -> None:
        self.send(
            S.rpc(
                "initialize",
                {"protocolVersion": S.HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
                "init",
            )
            + b"\n"
        )
        reply = self.recv()
        if "result" not in reply:
            raise RuntimeError(f"{self.name}: initialize failed: {reply}")
        self.send(S.rpc("notifications/initialized", None, None) + b"\n")

    def body(self, task_id: str) -> bytes:
        self.n += 1
        return S.tool_call_body("get_task", {"taskId": task_id}, self.n) + b"\n"

    def sequential(self, task_id: str, calls: int) -> tuple[float, list[float], int]:
        lat, errors = [], 0
        start = time.perf_counter()
        for _ in range(calls):
            t0 = time.perf_counter()
            self.send(self.body(task_id))
            reply = self.recv()
            lat.append(time.perf_counter() - t0)
            errors += _is_error(reply)
        return calls / (time.perf_counter() - start), lat, errors

    def pipelined(self, task_id: str, calls: int) -> tuple[float, int]:
        payload = b"".join(self.body(task_id) for _ in range(calls))
        start = time.perf_counter()
        writer = threading.Thread(target=self.send, args=(payload,))
        writer.start()
        errors = sum(_is_error(self.recv()) for _ in range(calls))
        writer.join()
        return calls / (time.perf_counter() - start), errors

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _is_error(reply: dict[str, Any]) -> int:
    result = reply.get("result")
    return int(not isinstance(result, dict) or bool(result.get("isError")))


# -- HTTP --------------------------------------------------------------------------------------
def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server on {port} exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port} after {timeout} s")


def start_http(
    kind: str, env: dict[str, str], *, sdk_mode: str | None = None, wait_seconds: float = 30, cwd: Path | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """Start our HTTP app (``kind == "ours"``) or the SDK server in ``sdk_mode`` (default: the
    kind's own, "direct" for ``sdk-direct``) on a free port; the process is killed if it never
    listens within ``wait_seconds``."""
    from infra.ddb_local import free_port

    port = free_port()
    mode = sdk_mode or ("direct" if kind == "sdk-direct" else None)
    if mode:
        env = {**env, "JENTRIX_BENCH_SDK_MODE": mode}
    if kind == "ours":
        argv = [
            S.PYTHON,
            "-m",
            "uvicorn",
            "functions.http_app:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
            "--lifespan",
            "off",
        ]
    else:
        argv = [S.PYTHON, "-m", "benchmarks.sdk_server", "--http", str(port)]
    proc = subprocess.Popen(argv, cwd=cwd or S.REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, proc, wait_seconds)
    except RuntimeError:
        proc.kill()
        proc.wait()
        raise
    return proc, port


def request_bytes(port: int, token: str, body: bytes) -> bytes:
    head = (
        f"POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("closed")
    status = int(status_line.split()[1])
    length, chunked = None, False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.decode("latin-1").partition(":")
        k = k.strip().lower()
        if k == "content-length":
            length = int(v.strip())
        elif k == "transfer-encoding" and "chunked" in v.lower():
            chunked = True
    if chunked:
        parts = []
        while True:
            size = int((await reader.readline()).strip(), 16)
            if size == 0:
                await reader.readline()
                break
            parts.append(await reader.readexactly(size))
            await reader.readline()
        return status, b"".join(parts)
    return status, await reader.readexactly(length or 0)


async def _load(
    port: int, token: str, task_id: str, seconds: float | None, total: int | None, clients: int
) -> dict[str, Any]:
    """``clients`` connections in a closed loop, for ``seconds`` or until ``total`` calls."""
    lat: list[float] = []
    codes: list[str] = []
    errors = 0
    issued = 0
    stop_at = time.perf_counter() + seconds if seconds else None

    async def client(cid: int) -> None:
        nonlocal errors, issued
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        n = 0
        try:
            while True:
                if stop_at is not None and time.perf_counter() >= stop_at:
                    return
                if total is not None:
                    if issued >= total:
                        return
                    issued += 1
                n += 1
                writer.write(
                    request_bytes(port, token, S.tool_call_body("get_task", {"taskId": task_id}, f"{cid}-{n}"))
                )
                t0 = time.perf_counter()
                status, body = await _read_response(reader)
                lat.append(time.perf_counter() - t0)
                try:
                    reply = S.parse_reply(body)
                    result = reply["result"]
                    if status != 200 or result.get("isError"):
                        errors += 1
                        if result.get("isError"):
                            codes.append(json.loads(result["content"][0]["text"])["error"]["code"])
                    else:
                        codes.append("OK")
                except Exception:  # noqa: BLE001 - a malformed reply is an error, counted
                    errors += 1
                    codes.append(f"HTTP {status}")
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    elapsed = time.perf_counter() - start
    lat.sort()
    return {
        "rps": len(lat) / elapsed,
        "calls": len(lat),
        "p50": lat[len(lat) // 2] if lat else 0.0,
        "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else 0.0,
        "errors": errors,
        "codes": codes,
        "elapsed": elapsed,
    }


def http_run(port: int, token: str, task_id: str, seconds: float) -> dict[str, Any]:
    return asyncio.run(_load(port, token, task_id, seconds, None, CLIENTS))


def rate_window_check(stack: S.Stack, actor: S.Actor, task_id: str, limit: int) -> dict[str, Any]:
    """limit+20 calls in one minute window, with a fresh token, to a server whose limit is ``limit``."""
    token = stack.second_token(actor)
    proc, port = start_http("ours", stack.child_env(JENTRIX_RATE_LIMIT_PER_MINUTE=str(limit)))
    try:
        # The window is the wall-clock minute; start early enough in one to finish inside it.
        if time.time() % 60 > 45:
            time.sleep(60.5 - time.time() % 60)
        minute = int(time.time() // 60)
        out = asyncio.run(_load(port, token, task_id, None, limit + 20, CLIENTS))
        out["same_window"] = int(time.time() // 60) == minute
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=20)


# -- main --------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--seconds", type=float, default=5.0, help="length of one HTTP run (all HTTP runs together stay within 60 s)"
    )
    p.add_argument("--calls", type=int, default=100, help="stdio calls per run")
    p.add_argument("--rate-limit", type=int, default=100)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    seconds = min(args.seconds, MAX_HTTP_SECONDS / (3 * args.rounds))
    began = time.perf_counter()

    with S.Stack() as stack:
        actor = stack.actor()
        task_id = S.board_with_tasks(actor, 1)["tasks"][0]["id"]
        env = stack.child_env(JENTRIX_TOKEN=actor.token, JENTRIX_LOG_LEVEL="WARNING")

        # stdio
        servers = {
            "ours": StdioServer("ours", adapter_command(actor.workspace_id), env),
            "sdk": StdioServer("sdk", [S.PYTHON, "-m", "benchmarks.sdk_server", "--stdio"], env),
            "sdk-direct": StdioServer(
                "sdk-direct",
                [S.PYTHON, "-m", "benchmarks.sdk_server", "--stdio"],
                {**env, "JENTRIX_BENCH_SDK_MODE": "direct"},
            ),
        }
        stdio: dict[str, dict[str, list[float]]] = {
            k: {"seq": [], "pipe": [], "lat": [], "errors": []} for k in servers
        }
        try:
            for srv in servers.values():
                srv.handshake()
                srv.sequential(task_id, 5)  # warm-up
            for r in range(args.rounds):
                order = list(servers)[r % 3 :] + list(servers)[: r % 3]
                for name in order:
                    rate, lat, e1 = servers[name].sequential(task_id, args.calls)
                    prate, e2 = servers[name].pipelined(task_id, args.calls)
                    stdio[name]["seq"].append(rate)
                    stdio[name]["pipe"].append(prate)
                    stdio[name]["lat"] += lat
                    stdio[name]["errors"].append(e1 + e2)
        finally:
            for srv in servers.values():
                srv.close()

        # HTTP
        procs = {k: start_http(k, env) for k in ("ours", "sdk", "sdk-direct")}
        http: dict[str, list[dict[str, Any]]] = {k: [] for k in procs}
        try:
            for _, port in procs.values():  # warm-up
                asyncio.run(_load(port, actor.token, task_id, None, 16, CLIENTS))
            for r in range(args.rounds):
                order = list(procs)[r % 3 :] + list(procs)[: r % 3]
                for name in order:
                    http[name].append(http_run(procs[name][1], actor.token, task_id, seconds))
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=20)

        window = rate_window_check(stack, actor, task_id, args.rate_limit)

    lat = {k: sorted(v["lat"]) for k, v in stdio.items()}

    def pct(xs: list[float], q: float) -> float:
        return xs[min(len(xs) - 1, int(len(xs) * q))]

    seq_ratio = S.ratios_of_pairs(stdio["ours"]["seq"], stdio["sdk"]["seq"])
    pipe_ratio = S.ratios_of_pairs(stdio["ours"]["pipe"], stdio["sdk"]["pipe"])
    http_ratio = S.ratios_of_pairs([x["rps"] for x in http["ours"]], [x["rps"] for x in http["sdk"]])
    seq_d = S.ratios_of_pairs(stdio["ours"]["seq"], stdio["sdk-direct"]["seq"])
    pipe_d = S.ratios_of_pairs(stdio["ours"]["pipe"], stdio["sdk-direct"]["pipe"])
    http_d = S.ratios_of_pairs([x["rps"] for x in http["ours"]], [x["rps"] for x in http["sdk-direct"]])

    def rr(x: S.Summary) -> str:
        return f"**{x.median:.2f}x** ({x.lo:.2f}-{x.hi:.2f})"

    ok_count = window["codes"].count("OK")
    limited = window["codes"].count("RATE_LIMITED")
    window_ok = ok_count == args.rate_limit and limited == 20 and window["same_window"]
    total_errors = sum(sum(v["errors"]) for v in stdio.values()) + sum(x["errors"] for v in http.values() for x in v)

    def rs(xs: list[float]) -> str:
        s = S.summary(xs)
        return f"{s.median:.0f}/s ({s.lo:.0f}-{s.hi:.0f})"

    def http_cell(name: str, key: str) -> str:
        xs = [x[key] for x in http[name]]
        return rs(xs) if key == "rps" else S.summary(xs).ms(1)

    lines = [
        S.machine_line(),
        "",
        f"stdio: {args.rounds} interleaved rounds of {args.calls} sequential and {args.calls} pipelined `get_task` calls per server "
        "(one warm process each). Calls/s are medians (min-max) over rounds; ratios are medians (range) of per-round ratios.",
        "",
        S.table(
            (
                "stdio, get_task",
                "ours (`functions.stdio_adapter`)",
                "SDK + our pipeline (`MCPServer` stdio)",
                "SDK, handler only",
                "ours/SDK",
                "ours/SDK handler only",
            ),
            [
                (
                    "sequential calls/s",
                    rs(stdio["ours"]["seq"]),
                    rs(stdio["sdk"]["seq"]),
                    rs(stdio["sdk-direct"]["seq"]),
                    rr(seq_ratio),
                    rr(seq_d),
                ),
                (
                    "pipelined calls/s",
                    rs(stdio["ours"]["pipe"]),
                    rs(stdio["sdk"]["pipe"]),
                    rs(stdio["sdk-direct"]["pipe"]),
                    rr(pipe_ratio),
                    rr(pipe_d),
                ),
                (
                    "sequential latency p50 / p99",
                    *(
                        f"{pct(lat[k], 0.5) * 1000:.1f} / {pct(lat[k], 0.99) * 1000:.1f} ms"
                        for k in ("ours", "sdk", "sdk-direct")
                    ),
                    "",
                    "",
                ),
                ("errors", *(sum(stdio[k]["errors"]) for k in ("ours", "sdk", "sdk-direct")), "", ""),
            ],
        ),
        "",
        f"HTTP: uvicorn on loopback, {CLIENTS} keep-alive clients in a closed loop, {args.rounds} interleaved runs of {seconds:.0f} s per server.",
        "",
        S.table(
            (
                "HTTP, get_task",
                "ours (uvicorn + FastAPI)",
                "SDK + our pipeline (uvicorn, stateless JSON)",
                "SDK, handler only",
                "ours/SDK",
                "ours/SDK handler only",
            ),
            [
                (
                    "requests/s",
                    http_cell("ours", "rps"),
                    http_cell("sdk", "rps"),
                    http_cell("sdk-direct", "rps"),
                    rr(http_ratio),
                    rr(http_d),
                ),
                ("latency p50 (median of runs)", *(http_cell(k, "p50") for k in ("ours", "sdk", "sdk-direct")), "", ""),
                ("latency p99 (median of runs)", *(http_cell(k, "p99") for k in ("ours", "sdk", "sdk-direct")), "", ""),
                (
                    "calls / errors",
                    *(
                        f"{sum(x['calls'] for x in http[k])} / {sum(x['errors'] for x in http[k])}"
                        for k in ("ours", "sdk", "sdk-direct")
                    ),
                    "",
                    "",
                ),
            ],
        ),
        "",
        f"Per-token minute window: a server of ours with `JENTRIX_RATE_LIMIT_PER_MINUTE={args.rate_limit}` got {args.rate_limit + 20} calls from "
        f"{CLIENTS} clients in {window['elapsed']:.1f} s, inside one window: **{ok_count} succeeded, {limited} were RATE_LIMITED** "
        f"({'exactly the limit' if window_ok else 'NOT exactly the limit'}).",
        "",
        'Both SDK variants are described under "Warm overhead per call". All servers share one DynamoDB Local (a Java '
        "process on the same two cores), which bounds every figure here: a call costs 4-5 DynamoDB requests.",
        "",
        f"_The command took {time.perf_counter() - began:.0f} s._",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        S.write_section("load", "## Throughput: stdio and HTTP\n\n`python -m benchmarks.load`\n\n" + text)
        S.record(
            "stdio",
            f"sequential {S.summary(stdio['ours']['seq']).median:.0f} vs {S.summary(stdio['sdk']['seq']).median:.0f} calls/s (**{seq_ratio.median:.2f}x**; {seq_d.median:.2f}x the handler-only SDK), "
            f"pipelined {S.summary(stdio['ours']['pipe']).median:.0f} vs {S.summary(stdio['sdk']['pipe']).median:.0f} (**{pipe_ratio.median:.2f}x**; {pipe_d.median:.2f}x)",
            "benchmarks.load",
        )
        S.record(
            "http",
            f"{S.summary([x['rps'] for x in http['ours']]).median:.0f} vs {S.summary([x['rps'] for x in http['sdk']]).median:.0f} requests/s: "
            f"**{http_ratio.median:.2f}x the SDK** ({http_ratio.lo:.2f}-{http_ratio.hi:.2f}); {http_d.median:.2f}x the handler-only SDK",
            "benchmarks.load",
        )
    if total_errors or not window_ok:
        print(f"FAILED: {total_errors} errors; window exact: {window_ok}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
