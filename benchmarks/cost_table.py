"""The DynamoDB cost of every tool: requests, sequential round trips and consumed capacity per call.

Each scenario is one ``tools/call`` sent as an API Gateway REST event to the Lambda handler in
this process (a warm Lambda: the token is in the warm-process cache, as it is for every call
but the first of a container). Every DynamoDB request is recorded with its start and end time
and the capacity DynamoDB reports for it (``ReturnConsumedCapacity=TOTAL`` is added by the
benchmark's meter; the product never asks for it). Round trips are requests that did not
overlap the one before: today everything is sequential, so round trips equal requests.

The command rewrites the "DynamoDB cost per tool" section of docs/performance.md and
``benchmarks/budgets.json``, the recorded budget that ``tests/test_cost_budget.py`` holds
every tool to (a tool that needs more requests, round trips or capacity than recorded fails).

Run: .venv/bin/python -m benchmarks.cost_table [--no-write]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import _support as S

BUDGETS = Path(__file__).with_name("budgets.json")


@dataclass
class Cost:
    scenario: str
    tool: str
    requests: int
    round_trips: int
    read_units: float
    write_units: float
    ops: str
    is_error: bool

    def as_budget(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "round_trips": self.round_trips,
            "read_units": self.read_units,
            "write_units": self.write_units,
        }


class LambdaCaller:
    """``tools/call`` through ``functions.lambda_handler.handler`` with REST events."""

    def __init__(self, token: str) -> None:
        from functions.lambda_handler import handler

        self.handler = handler
        self.headers = {**S.JSON_HEADERS, "Authorization": f"Bearer {token}"}
        self.n = 0

    def __call__(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        out = self.handler(S.rest_event(S.tool_call_body(name, args, self.n), self.headers), S.LambdaContext())
        if out["statusCode"] != 200:
            raise RuntimeError(f"{name}: HTTP {out['statusCode']} {out['body'][:300]}")
        return json.loads(out["body"])["result"]


def ok(result: dict[str, Any]) -> dict[str, Any]:
    if result.get("isError"):
        raise RuntimeError(result["content"][0]["text"])
    return result["structuredContent"]


def run_scenarios(
    call: Callable[[str, dict[str, Any]], dict[str, Any]], workspace_id: str, meter: S.DynamoDBMeter
) -> list[Cost]:
    """Set up a board, then measure one call per scenario. ``call(name, args)`` returns the
    CallToolResult; ``workspace_id`` is a workspace the caller owns."""
    costs: list[Cost] = []

    def measure(scenario: str, name: str, args: dict[str, Any], *, error: bool = False) -> dict[str, Any]:
        with meter.measuring() as reqs:
            result = call(name, args)
        if bool(result.get("isError")) != error:
            raise RuntimeError(
                f"{scenario}: expected {'an error' if error else 'success'}, got {json.dumps(result)[:300]}"
            )
        reqs = list(reqs)
        costs.append(
            Cost(
                scenario,
                name,
                len(reqs),
                S.round_trips(reqs),
                round(sum(r.read_units for r in reqs), 1),
                round(sum(r.write_units for r in reqs), 1),
                S.ops_text(reqs),
                error,
            )
        )
        return result

    call("get_token_context", {})  # warm the token cache, as in a warm container
    ws = workspace_id
    board = ok(measure("create_board", "create_board", {"workspaceId": ws, "name": "Costed"}))
    board_id = board["board"]["id"]
    cols = [c["id"] for c in board["columns"]]
    t1 = ok(
        measure(
            "create_task", "create_task", {"columnId": cols[0], "title": "first", "description": "A short description."}
        )
    )["task"]
    t2 = ok(call("create_task", {"columnId": cols[0], "title": "second"}))["task"]
    key = f"k-{uuid.uuid4()}"
    measure(
        "create_task keyed (first run)", "create_task", {"columnId": cols[0], "title": "keyed", "idempotencyKey": key}
    )
    measure("create_task keyed (replay)", "create_task", {"columnId": cols[0], "title": "keyed", "idempotencyKey": key})

    measure("list_workspaces", "list_workspaces", {})
    measure("get_token_context", "get_token_context", {})
    measure("list_members", "list_members", {"workspaceId": ws})
    measure("list_boards", "list_boards", {"workspaceId": ws})
    measure("list_columns", "list_columns", {"boardId": board_id})
    measure("get_board_snapshot (3 tasks)", "get_board_snapshot", {"boardId": board_id})
    measure("get_task concise", "get_task", {"taskId": t1["id"], "response_format": "concise"})
    measure("get_task detailed", "get_task", {"taskId": t1["id"]})
    measure("get_task by number", "get_task", {"workspaceId": ws, "number": t1["number"]})
    measure("list_tasks (board)", "list_tasks", {"boardId": board_id})
    measure("list_tasks (column, detailed)", "list_tasks", {"columnId": cols[0], "response_format": "detailed"})
    measure("list_activity (board)", "list_activity", {"boardId": board_id})
    measure("list_activity (task)", "list_activity", {"taskId": t1["id"]})
    project = ok(call("create_project", {"workspaceId": ws, "name": f"Costed project {uuid.uuid4().hex[:12]}"}))[
        "project"
    ]
    ok(call("add_project_link", {"projectId": project["id"], "targetType": "BOARD", "targetId": board_id}))
    measure("get_project", "get_project", {"projectId": project["id"]})  # its links ride on the head
    sub = ok(measure("create_subtask", "create_subtask", {"taskId": t2["id"], "title": "a step"}))["subtask"]
    measure("toggle_subtask", "toggle_subtask", {"subtaskId": sub["id"], "completed": True})
    measure("toggle_subtask (no change)", "toggle_subtask", {"subtaskId": sub["id"], "completed": True})
    measure("delete_subtask", "delete_subtask", {"subtaskId": sub["id"]})
    comment = ok(
        measure("create_comment", "create_comment", {"taskId": t1["id"], "body": "Checked the short description."})
    )["comment"]
    measure("update_comment", "update_comment", {"commentId": comment["id"], "body": "Checked the description again."})
    me = ok(call("get_token_context", {}))["userId"]
    measure("set_task_assignees", "set_task_assignees", {"taskId": t2["id"], "userIds": [me]})

    measure("rename_board", "rename_board", {"boardId": board_id, "name": "Costed 2"})
    measure("manage_columns create", "manage_columns", {"action": "create", "boardId": board_id, "name": "QA"})
    measure(
        "manage_columns rename",
        "manage_columns",
        {"action": "rename", "boardId": board_id, "columnId": cols[3], "name": "Shipped"},
    )
    upd = ok(
        measure(
            "update_task",
            "update_task",
            {"taskId": t1["id"], "title": "first, edited", "expectedUpdatedAt": t1["updatedAt"]},
        )
    )["task"]
    measure(
        "update_task CONFLICT (stale stamp)",
        "update_task",
        {"taskId": t1["id"], "title": "x", "expectedUpdatedAt": t1["updatedAt"]},
        error=True,
    )
    measure("move_task (append)", "move_task", {"taskId": t2["id"], "columnId": cols[2]})
    measure(
        "move_task (before a task)",
        "move_task",
        {"taskId": t1["id"], "columnId": cols[2], "beforeTaskId": t2["id"], "expectedUpdatedAt": upd["updatedAt"]},
    )
    measure("archive_task", "archive_task", {"taskId": t2["id"]})
    measure("manage_columns archive", "manage_columns", {"action": "archive", "boardId": board_id, "columnId": cols[1]})
    measure("create_workspace", "create_workspace", {"name": f"Costed {uuid.uuid4().hex[:6]}"})
    return costs


def render(costs: list[Cost]) -> str:
    rows = [
        (
            f"`{c.scenario}`" + (" (error)" if c.is_error else ""),
            c.requests,
            c.round_trips,
            f"{c.read_units:g}",
            f"{c.write_units:g}",
            c.ops,
        )
        for c in costs
    ]
    return S.table(
        ("scenario", "requests", "sequential round trips", "read units", "write units", "requests in order"), rows
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-write", action="store_true", help="print only; leave docs and budgets alone")
    args = p.parse_args(argv)
    began = time.perf_counter()
    meter = S.DynamoDBMeter(capacity=True).install()
    with S.Stack() as stack:
        actor = stack.actor()
        costs = run_scenarios(LambdaCaller(actor.token), actor.workspace_id, meter)
    meter.uninstall()
    text = "\n".join(
        [
            S.machine_line(),
            "",
            "One call per scenario through the Lambda handler (REST event) with a warm token cache; a cold container adds "
            "one token GetItem (1 read unit) to its first call. Capacity is what DynamoDB Local reports with "
            "`ReturnConsumedCapacity=TOTAL` (the same rules as on-demand DynamoDB: 4 KB per read unit, half for eventually "
            "consistent reads, 1 KB per write unit, doubled inside transactions). `→` separates requests that ran one after "
            "the other, `‖` requests that overlapped.",
            "",
            render(costs),
            "",
            f"_The command took {time.perf_counter() - began:.0f} s. `benchmarks/budgets.json` holds these figures as the budget "
            "`tests/test_cost_budget.py` enforces._",
        ]
    )
    print(text)
    if not args.no_write:
        BUDGETS.write_text(json.dumps({c.scenario: c.as_budget() for c in costs}, indent=2) + "\n")
        S.write_section("cost_table", "## DynamoDB cost per tool\n\n`python -m benchmarks.cost_table`\n\n" + text)
        detailed = next(c for c in costs if c.scenario == "get_task detailed")
        ops = [op for step in detailed.ops.split(" → ") for op in step.split(" ‖ ")]
        writes = sum(1 for op in ops if op in ("UpdateItem", "PutItem", "TransactWriteItems"))
        trips = "round trip" if detailed.round_trips == 1 else "sequential round trips"
        S.record(
            "ddb_get_task",
            f"{detailed.requests} requests in {detailed.round_trips} {trips}, {writes} a write ({detailed.ops}); "
            f"{detailed.read_units:g} read + {detailed.write_units:g} write units",
            "benchmarks.cost_table",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
