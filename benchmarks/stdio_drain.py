"""Peak memory of the stdio adapter while it drains one huge line.

Starts ``python -m functions.stdio_adapter --ephemeral`` (its own in-memory DynamoDB Local, so
nothing else is needed), answers a ping, then streams one JSON-looking line of ``--size-mib``
MiB (default 200) in 1 MiB pieces — never held whole by this script — followed by another
ping. Prints the adapter's peak RSS (``VmHWM``) before and after, the drain time, and the
reply it got for the huge line (``-32700``, ``id: null``). Exit status 1 when the peak exceeds
``--max-peak-mib`` (default 120) or a reply is wrong.

Run: .venv/bin/python benchmarks/stdio_drain.py [--size-mib 200] [--max-line-bytes N]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def vm_hwm_mib(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmHWM:\s+(\d+) kB", text, re.MULTILINE).group(1)) / 1024  # type: ignore[union-attr]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size-mib", type=int, default=200)
    p.add_argument("--max-line-bytes", type=int, default=16 * 1024 * 1024)
    p.add_argument("--max-peak-mib", type=float, default=120.0)
    args = p.parse_args()

    cmd = [
        sys.executable,
        "-m",
        "functions.stdio_adapter",
        "--ephemeral",
        "--max-line-bytes",
        str(args.max_line_bytes),
        "--log-level",
        "WARNING",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr)
    assert proc.stdin and proc.stdout

    def send(data: bytes) -> None:
        proc.stdin.write(data)  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def reply() -> dict:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise SystemExit(f"the adapter closed stdout (exit {proc.wait()})")
        return json.loads(line)

    send(b'{"jsonrpc":"2.0","id":"before","method":"ping"}\n')
    first = reply()
    baseline = vm_hwm_mib(proc.pid)

    size = args.size_mib * 1024 * 1024
    head = b'{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"pad":"'
    tail = b'"}}\n'
    piece = b"x" * (1 << 20)

    def stream() -> None:
        send(head)
        left = size - len(head) - len(tail) + 1
        while left > 0:
            n = min(left, len(piece))
            send(piece[:n])
            left -= n
        send(tail)
        send(b'{"jsonrpc":"2.0","id":"after","method":"ping"}\n')

    started = time.perf_counter()
    writer = threading.Thread(target=stream)
    writer.start()
    huge = reply()
    after = reply()
    elapsed = time.perf_counter() - started
    writer.join()
    peak = vm_hwm_mib(proc.pid)
    proc.stdin.close()
    rc = proc.wait(timeout=60)

    ok = (
        first == {"jsonrpc": "2.0", "id": "before", "result": {}}
        and huge.get("id") is None
        and huge.get("error", {}).get("code") == -32700
        and huge["error"].get("data", {}).get("lineBytes") == size
        and after == {"jsonrpc": "2.0", "id": "after", "result": {}}
        and rc == 0
        and peak < args.max_peak_mib
    )
    print(
        json.dumps(
            {
                "lineMiB": args.size_mib,
                "maxLineBytes": args.max_line_bytes,
                "peakRssMiBBeforeLine": round(baseline, 1),
                "peakRssMiB": round(peak, 1),
                "drainSeconds": round(elapsed, 2),
                "drainMiBPerSecond": round(args.size_mib / elapsed, 1) if elapsed else None,
                "hugeLineReply": huge,
                "nextLineServed": after.get("result") == {},
                "exitCode": rc,
                "ok": ok,
            },
            indent=2,
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
