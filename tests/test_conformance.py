"""The official MCP conformance suite passes, apart from the failures its baselines explain.

Runs ``python -m benchmarks.conformance --no-write`` in a child process (it starts its own
DynamoDB Local and servers, so this session's stack is untouched): both suite lines against the
fixture server and the product server, each judged by the suite against
``conformance/baseline-*.yml``. A new failure fails, and so does a baselined check that now
passes (remove it from the baseline). About a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.conformance import missing

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_conformance_suite_matches_its_baselines():
    why = missing()
    if why:
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JENTRIX_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.conformance", "--no-write"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
