"""Every tool stays within the DynamoDB budget `python -m benchmarks.cost_table` recorded.

The scenarios are the benchmark's own (benchmarks/cost_table.py), run here through the Lambda
handler against the session's DynamoDB Local. For each one the number of requests, of
sequential round trips, and the read and write capacity DynamoDB reports must not exceed the
figures in benchmarks/budgets.json. Spending less is fine (re-run the command to record the
improvement); spending more fails and names the requests made.
"""

from __future__ import annotations

import json

import pytest

from benchmarks import _support as S
from benchmarks.cost_table import BUDGETS, LambdaCaller, run_scenarios


@pytest.fixture
def warm_token_cache(monkeypatch):
    # The budgets are for a warm container, where the token check is served from the cache.
    from domain.settings import settings

    monkeypatch.setattr(settings, "token_cache_seconds", 300)


def test_every_tool_within_its_recorded_budget(stack, owner, warm_token_cache):
    budgets = json.loads(BUDGETS.read_text())
    meter = S.DynamoDBMeter(capacity=True).install()
    try:
        costs = run_scenarios(LambdaCaller(owner.token), owner.workspace_id, meter)
    finally:
        meter.uninstall()
    measured = {c.scenario: c for c in costs}
    assert sorted(measured) == sorted(budgets), "scenarios changed: re-run python -m benchmarks.cost_table"
    over = []
    for name, budget in budgets.items():
        c = measured[name]
        for fieldname in ("requests", "round_trips", "read_units", "write_units"):
            if getattr(c, fieldname) > budget[fieldname]:
                over.append(f"{name}: {fieldname} {getattr(c, fieldname)} > budget {budget[fieldname]} ({c.ops})")
    assert not over, "\n".join(over)
