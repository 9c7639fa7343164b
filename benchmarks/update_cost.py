"""Where a warm ``update_task`` spends DynamoDB Local's CPU, request by request and action by action.

DynamoDB Local is a separate JVM process; its CPU time (``/proc/<pid>/stat``, user + system) is
read before and after blocks of requests, so the figure is what the table's side costs per
request whatever else runs on the machine's cores (wall time is shown too, but moves with the
load). The benchmark makes one warm ``update_task`` through the pipeline, captures the
BatchGetItem and TransactWriteItems it sends, and replays them: the BatchGetItem as sent; the
transaction whole (its task condition kept, made to hold), with the task's condition taken
out, and with each action taken out in turn; and, for scale, one conditional UpdateItem (the
floor's whole ``update_task``, ``benchmarks/sdk_server.py``) and transactions of 1, 2 and as many
plain conditional updates as ours has actions (small items, no indexes: what the transaction
itself costs the table). Blocks of ``--calls`` requests
alternate over ``--rounds`` rounds; the table gives the median per request.

Linux only (``/proc``). Run: .venv/bin/python -m benchmarks.update_cost [--rounds 3] [--calls 100]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks import _support as S


def jvm_cpu(pid: int) -> float:
    """Seconds of CPU (user + system) the process ``pid`` has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _label(action: dict[str, Any]) -> str:
    kind = next(iter(action))
    body = action[kind]
    key = body.get("Key") or {"PK": body["Item"]["PK"], "SK": body["Item"]["SK"]}
    pk, sk = key["PK"]["S"], key["SK"]["S"]
    return f"{kind} {pk.split('#')[0]}#… / {sk.split('#')[0][:8]}…"


def measure(rounds: int, calls: int) -> list[tuple[str, float, float]]:
    import boto3
    import botocore.client

    with S.Stack(token_cache_seconds=5) as stack:
        os.environ["JENTRIX_RATE_SYNC_EVERY"] = "10"
        S.configure_store()
        actor = stack.actor()
        task_id = S.board_with_tasks(actor, 1)["tasks"][0]["id"]
        sent: dict[str, dict[str, Any]] = {}
        original = botocore.client.BaseClient._make_api_call

        def spy(client: Any, op: str, params: dict[str, Any]) -> Any:
            sent[op] = copy.deepcopy(params)
            return original(client, op, params)

        botocore.client.BaseClient._make_api_call = spy  # type: ignore[method-assign]
        try:
            for n in range(3):
                S.call("update_task", {"taskId": task_id, "title": f"captured {n}"}, actor.principal)
        finally:
            botocore.client.BaseClient._make_api_call = original  # type: ignore[method-assign]
        tx, bget = sent["TransactWriteItems"], sent["BatchGetItem"]
        table = stack.env["JENTRIX_TABLE"]
        client = boto3.client("dynamodb", endpoint_url=stack.endpoint, region_name="us-east-1")
        pid = stack._ddb.process.pid  # the benchmark's own DynamoDB Local
        # the task's full item carries the updatedAt condition: make it hold on every replay
        full = next(
            i for i, a in enumerate(tx["TransactItems"]) if "ReturnValuesOnConditionCheckFailure" in a.get("Put", {})
        )
        item = tx["TransactItems"][full]["Put"]
        for value in item["ExpressionAttributeValues"].values():
            if value.get("S", "").startswith("20"):
                value["S"] = item["Item"]["updatedAt"]["S"]
        recent_key = {"PK": {"S": f"TCOM#{task_id}"}, "SK": {"S": "RECENT"}}

        def replay(params: dict[str, Any]) -> None:
            p = copy.deepcopy(params)
            p["ClientRequestToken"] = str(uuid.uuid4())
            for a in p["TransactItems"]:
                put = a.get("Put", {}).get("Item")
                if put and put["PK"]["S"].startswith("BACT#"):  # a new activity row each time
                    put["SK"]["S"] = f"{put['SK']['S'].split('#')[0]}#{uuid.uuid4().hex}"
            try:
                client.transact_write_items(**p)
            except client.exceptions.TransactionCanceledException:  # the recent item filled up
                client.delete_item(TableName=table, Key=recent_key)
                client.transact_write_items(**p)

        def without(*drop: int) -> dict[str, Any]:
            p = copy.deepcopy(tx)
            p["TransactItems"] = [a for i, a in enumerate(p["TransactItems"]) if i not in drop]
            return p

        unconditioned = copy.deepcopy(tx)
        for k in ("ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues"):
            unconditioned["TransactItems"][full]["Put"].pop(k, None)
        unconditioned["TransactItems"][full]["Put"].pop("ReturnValuesOnConditionCheckFailure", None)
        replay(unconditioned)  # the stored item now carries the updatedAt the condition names
        floor_key = {"PK": {"S": "BENCH#floor"}, "SK": {"S": "x"}}
        client.put_item(TableName=table, Item={**floor_key, "v": {"N": "0"}})
        runs: dict[str, Callable[[], Any]] = {
            "floor: one conditional UpdateItem": lambda: client.update_item(
                TableName=table,
                Key=floor_key,
                UpdateExpression="SET v = v + :one",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues={":one": {"N": "1"}},
            ),
            "BatchGetItem (member, task, board entry)": lambda: client.batch_get_item(**bget),
            f"TransactWriteItems, all {len(tx['TransactItems'])} actions": lambda: replay(tx),
            "  without the task's updatedAt condition": lambda: replay(unconditioned),
        }
        for i, action in enumerate(tx["TransactItems"]):
            runs[f"  without {_label(action)}"] = lambda i=i: replay(without(i))
        # for scale: what a transaction costs the table by itself, on small items without indexes
        plain = [{"PK": {"S": f"BENCH#plain{i}"}, "SK": {"S": "x"}} for i in range(len(tx["TransactItems"]))]
        for key in plain:
            client.put_item(TableName=table, Item={**key, "v": {"N": "0"}})

        def plain_update(key: dict[str, Any]) -> dict[str, Any]:
            return {
                "Update": {
                    "TableName": table,
                    "Key": key,
                    "UpdateExpression": "SET v = v + :one",
                    "ConditionExpression": "attribute_exists(PK)",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }

        for n in sorted({1, 2, len(plain)}):
            runs[f"TransactWriteItems of {n} plain conditional update(s)"] = lambda n=n: client.transact_write_items(
                TransactItems=[plain_update(k) for k in plain[:n]]
            )
        for fn in runs.values():
            for _ in range(10):
                fn()
        cpu: dict[str, list[float]] = {k: [] for k in runs}
        wall: dict[str, list[float]] = {k: [] for k in runs}
        for r in range(rounds):
            names = list(runs)
            for name in names[r % len(names) :] + names[: r % len(names)]:
                c0, t0 = jvm_cpu(pid), time.perf_counter()
                for _ in range(calls):
                    runs[name]()
                cpu[name].append((jvm_cpu(pid) - c0) / calls)
                wall[name].append((time.perf_counter() - t0) / calls)
        return [(k, statistics.median(cpu[k]), statistics.median(wall[k])) for k in runs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=100)
    a = p.parse_args(argv)
    rows = measure(a.rounds, a.calls)
    print(S.machine_line())
    print(
        S.table(
            ("request", "DynamoDB Local CPU per request", "wall per request"),
            [(name, f"{c * 1000:.1f} ms", f"{w * 1000:.1f} ms") for name, c, w in rows],
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
