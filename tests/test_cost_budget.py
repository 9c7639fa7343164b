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


def _measure(owner) -> dict:
    meter = S.DynamoDBMeter(capacity=True).install()
    try:
        return {c.scenario: c for c in run_scenarios(LambdaCaller(owner.token), owner.workspace_id, meter)}
    finally:
        meter.uninstall()


def _over(budgets: dict, measured: dict, fields: tuple[str, ...]) -> list[str]:
    return [
        f"{name}: {f} {getattr(measured[name], f)} > budget {budget[f]} ({measured[name].ops})"
        for name, budget in budgets.items()
        for f in fields
        if getattr(measured[name], f) > budget[f]
    ]


def test_every_tool_within_its_recorded_budget(stack, owner, warm_token_cache):
    budgets = json.loads(BUDGETS.read_text())
    measured = _measure(owner)
    assert sorted(measured) == sorted(budgets), "scenarios changed: re-run python -m benchmarks.cost_table"
    over = _over(budgets, measured, ("requests", "read_units", "write_units"))
    assert not over, "\n".join(over)
    # Round trips are read from timestamps: on a loaded machine two requests sent together can be
    # served one after the other and look sequential, never the other way round. A scenario over
    # its round-trip budget is measured again (twice at most) and judged by its fewest round trips.
    for _ in range(2):
        late = {name for name in budgets if measured[name].round_trips > budgets[name]["round_trips"]}
        if not late:
            break
        again = _measure(owner)
        for name in late:
            if again[name].round_trips < measured[name].round_trips:
                measured[name] = again[name]
    over = _over(budgets, measured, ("round_trips",))
    assert not over, "\n".join(over)
