"""How long `jentrix mcp --ephemeral` takes to answer its first tools/call, and where it goes.

    .venv/bin/python benchmarks/ephemeral_start.py [runs]

Each run spawns the adapter, sends initialize and a list_workspaces call at once, and times
the reply to that call from the spawn. The adapter's stderr lines are shown with their offset
from the spawn, so the phases (JVM, tables, seed) can be read off the slowest run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one_run() -> tuple[float, list[tuple[float, str]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JENTRIX_")}
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "functions.stdio_adapter", "--ephemeral"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err: list[tuple[float, str]] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append((time.monotonic() - start, line.rstrip()))

    threading.Thread(target=pump, daemon=True).start()
    assert proc.stdin is not None and proc.stdout is not None
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_workspaces", "arguments": {}}},
    ]
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in msgs))
    proc.stdin.flush()
    elapsed = None
    for line in proc.stdout:
        if json.loads(line).get("id") == 2:
            elapsed = time.monotonic() - start
            break
    proc.stdin.close()
    proc.wait(timeout=60)
    assert elapsed is not None, "\n".join(line for _, line in err)
    return elapsed, err


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    results = [one_run() for _ in range(runs)]
    times = [t for t, _ in results]
    print(
        "first tools/call answered after: "
        + ", ".join(f"{t:.1f} s" for t in times)
        + f" (median {statistics.median(times):.1f} s)"
    )
    slowest = max(results, key=lambda r: r[0])[1]
    for offset, line in slowest:
        print(f"  {offset:6.2f}s  {line[:150]}")


if __name__ == "__main__":
    main()
