"""Cold-start cost of the Lambda entry, against a baseline measured in the same run.

Prints the median wall time of `import functions.lambda_handler` in a fresh interpreter
(what a Lambda cold start pays before the first request) next to the median of `import boto3`
alone and of a bare interpreter, and the ratios. Run: .venv/bin/python benchmarks/cold_start.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 7
ENV_CODE = "import os; os.environ.setdefault('AWS_ACCESS_KEY_ID','x'); os.environ.setdefault('AWS_SECRET_ACCESS_KEY','x');"


def timed(code: str) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", ENV_CODE + code], check=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    bare = timed("pass")
    boto = timed("import boto3")
    handler = timed("import functions.lambda_handler")
    sdk = timed("import mcp")
    print(f"bare interpreter          {bare * 1000:7.1f} ms")
    print(f"import boto3 (baseline)   {boto * 1000:7.1f} ms")
    print(f"import lambda_handler     {handler * 1000:7.1f} ms   x{handler / boto:.2f} of boto3")
    print(f"import mcp (SDK, unused)  {sdk * 1000:7.1f} ms   x{sdk / boto:.2f} of boto3")
    print(f"handler import net of interpreter: {(handler - bare) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
