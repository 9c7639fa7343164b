"""Small helpers shared by the tests/test_tools_*.py behaviour tests.

They call tools through the official SDK client (see ``tests.conftest.mcp_client``) and read the
application table directly only to *observe* what a call wrote (a test-side Scan; no request
path of the server scans).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conftest import envelope, structured

STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


async def ok(client: Any, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call ``name`` and return its structuredContent, failing the test on an error result."""
    return structured(await client.call_tool(name, args or {}))


async def err(client: Any, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call ``name`` expecting an error result; return the ``error`` object of its envelope."""
    return envelope(await client.call_tool(name, args or {}))


def names_field(error: dict[str, Any], field: str) -> bool:
    """Whether an INVALID_INPUT error names ``field`` (the message starts with it)."""
    return error["code"] == "INVALID_INPUT" and error["message"].split(":", 1)[0].strip() == field


def _key_of(item: dict[str, Any]) -> tuple[str, ...]:
    return (item["PK"]["S"], item["SK"]["S"]) if "PK" in item else (item["id"]["S"],)


def _scan(table: str, client: Any = None) -> dict[tuple[str, ...], dict[str, Any]]:
    from domain.store import db

    client = client or db.dynamodb_client()
    items: dict[tuple[str, ...], dict[str, Any]] = {}
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        for item in page["Items"]:
            items[_key_of(item)] = item
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class _Mirror:
    """A table's items kept current from its DynamoDB stream (DynamoDB Local implements streams).

    The first read turns the stream on (the deployed table has one too: template.yaml), opens
    every shard at its oldest record, then scans once; every later read applies only the stream
    records written since, so observing "what is stored" costs what was written, not the table's
    size (a whole-table Scan per observation made the suite's late tests slow as the shared
    table grew). Records replayed over the first scan are applied in order, so each item ends at
    its last image, the one the scan saw. (DynamoDB Local refuses an iterator taken while its
    shard was empty with TrimmedDataAccessException once records arrive; the shard is then
    opened again at its oldest record and replayed, which ends at the same images.)
    """

    def __init__(self, tables: Any, streams: Any, table: str, arn: str) -> None:
        self.client, self.table, self.arn = streams, table, arn
        self.iterators: dict[str, str | None] = {}
        self.last_seen: dict[str, str] = {}  # per shard, the sequence number of the last record applied
        self._follow()
        self.items = _scan(table, tables)

    def _follow(self) -> None:
        """Start reading every shard not followed yet, from its oldest record."""
        kwargs: dict[str, Any] = {"StreamArn": self.arn}
        while True:
            desc = self.client.describe_stream(**kwargs)["StreamDescription"]
            for shard in desc["Shards"]:
                sid = shard["ShardId"]
                if sid not in self.iterators:
                    self.iterators[sid] = self._oldest(sid)
            if not desc.get("LastEvaluatedShardId"):
                return
            kwargs["ExclusiveStartShardId"] = desc["LastEvaluatedShardId"]

    def _after_last(self, shard_id: str) -> str:
        """A new iterator just past the last record applied (the oldest when none was): a shard
        iterator expires 15 minutes after it was taken (ExpiredIteratorException), and a slow
        suite can leave one unread that long."""
        last = self.last_seen.get(shard_id)
        if last is None:
            return self._oldest(shard_id)
        return str(
            self.client.get_shard_iterator(
                StreamArn=self.arn, ShardId=shard_id, ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=last
            )["ShardIterator"]
        )

    def _oldest(self, shard_id: str) -> str:
        return str(
            self.client.get_shard_iterator(StreamArn=self.arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")[
                "ShardIterator"
            ]
        )

    def current(self) -> dict[tuple[str, ...], dict[str, Any]]:
        self._follow()
        for sid, iterator in list(self.iterators.items()):
            reopened = False
            while iterator is not None:
                try:
                    page = self.client.get_records(ShardIterator=iterator, Limit=1000)
                except self.client.exceptions.TrimmedDataAccessException:
                    if reopened:
                        raise
                    iterator, reopened = self._oldest(sid), True
                    continue
                except self.client.exceptions.ExpiredIteratorException:
                    if reopened:
                        raise
                    iterator, reopened = self._after_last(sid), True
                    continue
                for record in page["Records"]:
                    change = record["dynamodb"]
                    self.last_seen[sid] = change["SequenceNumber"]
                    if record["eventName"] == "REMOVE":
                        self.items.pop(_key_of(change["Keys"]), None)
                    else:
                        self.items[_key_of(change["NewImage"])] = change["NewImage"]
                iterator = page.get("NextShardIterator")
                if not page["Records"]:
                    break  # caught up on an open shard (a closed one ends with no next iterator)
            self.iterators[sid] = iterator
        return dict(self.items)


_MIRRORS: dict[tuple[str, str, str], _Mirror] = {}
_CLIENTS: dict[tuple[str, str], tuple[Any, Any]] = {}


def _observer_clients() -> tuple[Any, Any]:
    """A DynamoDB and a DynamoDB Streams client of their own for the endpoint in use, so the
    observation never shows in the request counts taken on the app's clients."""
    import boto3

    from domain.store import db

    app = db.dynamodb_client()
    where = (app.meta.endpoint_url, app.meta.region_name)
    if where not in _CLIENTS:
        import os

        kwargs = {  # DynamoDB Local runs with -sharedDb: any key reaches the same tables
            "endpoint_url": where[0],
            "region_name": where[1],
            "aws_access_key_id": os.environ.get("AWS_ACCESS_KEY_ID", "local"),
            "aws_secret_access_key": os.environ.get("AWS_SECRET_ACCESS_KEY", "local"),
        }
        _CLIENTS[where] = (boto3.client("dynamodb", **kwargs), boto3.client("dynamodbstreams", **kwargs))
    return _CLIENTS[where]


def _table_items(table: str) -> dict[tuple[str, ...], dict[str, Any]]:
    """Every item of ``table``, read through its stream mirror (a Scan when streams are off)."""
    client, streams = _observer_clients()
    desc = client.describe_table(TableName=table)["Table"]
    if not desc.get("StreamSpecification", {}).get("StreamEnabled"):
        client.update_table(
            TableName=table, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
        )
        desc = client.describe_table(TableName=table)["Table"]
    arn = desc.get("LatestStreamArn")
    if not arn:
        return _scan(table)
    key = (client.meta.endpoint_url, table, arn)
    if key not in _MIRRORS:
        _MIRRORS[key] = _Mirror(client, streams, table, arn)
        return dict(_MIRRORS[key].items)
    return _MIRRORS[key].current()


def stored_state() -> dict[tuple[str, ...], dict[str, Any]]:
    """Every item of the application and idempotency tables, except per-minute rate counters.

    Rate windows count every authenticated call by design, so they are left out when a test
    asserts that a refused call wrote nothing. Read through each table's stream (:class:`_Mirror`);
    ``JENTRIX_STATE_SCAN=1`` scans instead and checks the mirror against the scan.
    """
    import os

    from domain.settings import settings

    def read(table: str) -> dict[tuple[str, ...], dict[str, Any]]:
        items = _table_items(table)
        if os.environ.get("JENTRIX_STATE_SCAN") == "1":
            scanned = _scan(table)
            assert items == scanned, f"the stream mirror of {table} drifted from a Scan"
        return items

    state = {k: v for k, v in read(settings.table).items() if not k[0].startswith("RATE#")}
    state.update({("idem", *k): v for k, v in read(settings.idempotency_table).items()})
    return state


def activity_rows(board_id: str) -> list[dict[str, Any]]:
    """The board's stored activity rows, read straight from the table (oldest first)."""
    from domain.settings import settings
    from domain.store import db

    client = db.dynamodb_client()
    out: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": settings.table,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": f"BACT#{board_id}"}},
        "ConsistentRead": True,
    }
    while True:
        page = client.query(**kwargs)
        out.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def text_of(result: Any) -> str:
    """Everything a CallToolResult carries as text: content blocks and structuredContent."""
    parts = [getattr(block, "text", "") or "" for block in result.content]
    parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


async def new_board(client: Any, workspace_id: str, name: str = "Board", kind: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"workspaceId": workspace_id, "name": name}
    if kind:
        args["kind"] = kind
    return await ok(client, "create_board", args)


async def new_task(client: Any, column_id: str, title: str, **fields: Any) -> dict[str, Any]:
    return (await ok(client, "create_task", {"columnId": column_id, "title": title, **fields}))["task"]


def seed_tasks(user_id: str, column_id: str, count: int, title: str = "seeded", shape: Any = None) -> list[str]:
    """Setup shortcut for big boards: write ``count`` tasks into a column with batch writes.

    Builds the same items create_task writes (full item, compact row via ``compact_of``, number
    pointer) and advances the workspace counter and the column/board counts to match, but in
    25-item batches instead of one transaction per task. No activity rows are written.
    ``shape(i)``, when given, returns fields to set on the i-th task (0-based): ``title``,
    ``priority``, ``dueDate``, ``assigneeIds``, ``labelIds`` (a realistic board's rows).
    Returns the new task ids in creation order.
    """
    from fractional_indexing import generate_n_keys_between

    from domain import clock, ids
    from domain.store.models import BoardRow, ColumnRow, Row, TaskDetailRow, TaskNumberRow, WorkspaceRow
    from domain.store.tasks import compact_of

    ws, board_id, _ = ids.parse_column(column_id)  # type: ignore[misc]
    wsrow = WorkspaceRow.get(f"WS#{ws}", "META", consistent_read=True)
    column = ColumnRow.get(f"BOARD#{board_id}", f"C#{column_id}", consistent_read=True)
    first = int(wsrow.taskCounter or 0) + 1
    ranks = generate_n_keys_between(column.lastRank, None, count)
    made = []
    with Row.batch_write() as batch:
        for i, rank in enumerate(ranks):
            number = first + i
            tid = ids.task_id(board_id, number)
            now = clock.now_iso()
            detail = TaskDetailRow(
                f"BOARD#{board_id}",
                f"X#{number:010d}",
                taskId=tid,
                number=number,
                key=f"{wsrow.taskPrefix}-{number}",
                boardId=board_id,
                columnId=column_id,
                rank=rank,
                title=f"{title} {i + 1}",
                priority="NONE",
                dueDate=None,
                assigneeIds=[],
                labelIds=[],
                createdAt=now,
                updatedAt=now,
                description="",
                createdBy=user_id,
            )
            for name, value in (shape(i) if shape else {}).items():
                setattr(detail, name, value)
            batch.save(detail)
            batch.save(compact_of(detail))
            batch.save(TaskNumberRow(f"WS#{ws}", f"TASKNO#{number:010d}", taskId=tid))
            made.append(tid)
    wsrow.update(actions=[WorkspaceRow.taskCounter.set(first + count - 1)])
    column.update(actions=[ColumnRow.lastRank.set(ranks[-1]), ColumnRow.taskCount.add(count)])
    BoardRow(f"BOARD#{board_id}", "#META").update(actions=[BoardRow.taskCount.add(count)])
    return made


def create_tasks_in_process(secret: str, column_id: str, count: int, title: str = "bulk") -> list[dict[str, Any]]:
    """Setup shortcut for big boards: run create_task through the same pipeline in this process.

    It is the code path the HTTP adapter runs, minus the HTTP round trip per task.
    """
    from domain import auth, pipeline
    from domain.catalog import registry as product_registry

    principal = auth.authenticate(secret)
    assert principal is not None
    spec = product_registry().get("create_task")
    assert spec is not None
    made = []
    for i in range(count):
        out = pipeline.call_tool(spec, {"columnId": column_id, "title": f"{title} {i + 1}"}, principal)
        assert out.result is not None, out.error
        made.append(out.result["task"])
    return made
