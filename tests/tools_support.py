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


def _scan(table: str) -> dict[tuple[str, ...], dict[str, Any]]:
    from domain.store import db

    client = db.dynamodb_client()
    items: dict[tuple[str, ...], dict[str, Any]] = {}
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        for item in page["Items"]:
            if "PK" in item:
                key: tuple[str, ...] = (item["PK"]["S"], item["SK"]["S"])
            else:
                key = (item["id"]["S"],)
            items[key] = item
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def stored_state() -> dict[tuple[str, ...], dict[str, Any]]:
    """Every item of the application and idempotency tables, except per-minute rate counters.

    Rate windows count every authenticated call by design, so they are left out when a test
    asserts that a refused call wrote nothing.
    """
    from domain.settings import settings

    state = {k: v for k, v in _scan(settings.table).items() if not k[0].startswith("RATE#")}
    state.update({("idem",) + k: v for k, v in _scan(settings.idempotency_table).items()})
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
