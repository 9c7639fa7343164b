"""The comparison baseline: the official ``mcp`` SDK's ``MCPServer`` serving the same tools.

``get_task`` and ``update_task`` are registered with the SDK's decorator and run the product's
pipeline (``domain.pipeline.call_tool``) with the same principal, so both servers make the
same DynamoDB requests for a call and differ only in what surrounds them: protocol handling,
transport and framework. The caller is authenticated the way ours is: the bearer header when
the transport has headers, else ``JENTRIX_TOKEN`` (stdio), through ``domain.auth.authenticate``
and its warm-process cache.

``JENTRIX_BENCH_SDK_MODE=direct`` (or :func:`handler_for` with ``mode="direct"``) serves a
second variant whose tools run only the tool's own handler, without our pipeline: a plain SDK
server doing the same reads, one DynamoDB request fewer (no rate window).
``JENTRIX_BENCH_SDK_MODE=bare`` serves the floor (issue 25): ``get_task`` is one GetItem of
the task's item and ``update_task`` one conditional UpdateItem, with no authentication,
membership or envelope — the least any server can do for those answers.

Three ways to serve it, matching ours:

* ``handler(event, context)`` — the SDK's streamable HTTP ASGI app (stateless, JSON responses)
  behind Mangum, for Lambda-event comparisons;
* ``python -m benchmarks.sdk_server --http PORT`` — the same app under uvicorn;
* ``python -m benchmarks.sdk_server --stdio`` — the SDK's stdio server.

Like ``functions.lambda_handler``, importing the module loads the SDK; the server object is
built on the first call.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mangum import Mangum
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

PATH = "/api/mcp"
# "pipeline" (default): the tool runs domain.pipeline.call_tool, the same requests as ours.
# "direct": the tool runs only the tool's handler (no rate window, scope check or envelope),
# a plain SDK server doing the same reads. JENTRIX_BENCH_SDK_MODE picks it for a process.
MODE = os.environ.get("JENTRIX_BENCH_SDK_MODE", "pipeline")


def _principal(ctx: Any) -> Any:
    from domain import auth

    headers = None
    try:
        headers = ctx.headers
    except Exception:  # noqa: BLE001 - no HTTP request behind this call (stdio)
        headers = None
    secret = None
    if headers:
        value = headers.get("authorization") or headers.get("Authorization") or ""
        scheme, _, rest = value.partition(" ")
        secret = rest.strip() if scheme.lower() == "bearer" else None
    else:
        secret = os.environ.get("JENTRIX_TOKEN")
    principal = auth.authenticate(secret) if secret else None
    if principal is None:
        raise PermissionError("unknown token")
    return principal


def _run(name: str, arguments: dict[str, Any], ctx: Any, mode: str) -> dict[str, Any]:
    from benchmarks._support import call_direct, spec
    from domain.pipeline import call_tool

    if mode == "direct":
        return call_direct(name, arguments, _principal(ctx))
    outcome = call_tool(spec(name), arguments, _principal(ctx))
    if outcome.error is not None:
        raise ToolError(str(outcome.error))
    return outcome.result  # type: ignore[return-value]


def _bare_get(task_id: str) -> dict[str, Any]:
    """The floor of a get_task: one GetItem of the task's item, no authentication, no membership."""
    from domain import ids
    from domain.settings import settings
    from domain.store import db, keys

    ref = ids.parse_task(task_id)
    if ref is None:
        raise ToolError("no such task")
    pk, sk = keys.task_full(ref.board_id, ref.number)
    item = db.dynamodb_client().get_item(TableName=settings.table, Key={"PK": {"S": pk}, "SK": {"S": sk}}).get("Item")
    if item is None:
        raise ToolError("no such task")
    return {
        "task": {
            k: next(iter(v.values()))
            for k, v in item.items()
            if k in ("taskId", "title", "columnId", "updatedAt", "priority")
        }
    }


def _bare_update(task_id: str, title: str | None) -> dict[str, Any]:
    """The floor of an update_task: one conditional UpdateItem of the task's item."""
    from domain import clock, ids
    from domain.settings import settings
    from domain.store import db, keys

    ref = ids.parse_task(task_id)
    if ref is None:
        raise ToolError("no such task")
    pk, sk = keys.task_full(ref.board_id, ref.number)
    data = db.dynamodb_client().update_item(
        TableName=settings.table,
        Key={"PK": {"S": pk}, "SK": {"S": sk}},
        UpdateExpression="SET #t = :t, #u = :u",
        ConditionExpression="attribute_exists(PK)",
        ExpressionAttributeNames={"#t": "title", "#u": "updatedAt"},
        ExpressionAttributeValues={":t": {"S": title or "x"}, ":u": {"S": clock.iso(clock.now_ms())}},
        ReturnValues="ALL_NEW",
    )
    return {
        "task": {
            k: next(iter(v.values())) for k, v in data["Attributes"].items() if k in ("taskId", "title", "updatedAt")
        }
    }


def build(mode: str | None = None) -> Any:
    """The ``MCPServer`` with ``get_task`` and ``update_task`` (``mode``: pipeline, direct or
    bare: one GetItem / one conditional UpdateItem, the least a server can do for the answer)."""
    mode = mode or MODE
    from benchmarks._support import configure_store

    configure_store()
    server = MCPServer("jentrix-sdk-baseline", version="0.0.0", log_level="WARNING")
    if mode == "bare":

        @server.tool(name="get_task", description="Fetch one task (benchmark floor: one GetItem).")
        def bare_get_task(taskId: str, response_format: str = "detailed") -> dict[str, Any]:
            return _bare_get(taskId)

        @server.tool(name="update_task", description="Edit a task (benchmark floor: one conditional UpdateItem).")
        def bare_update_task(taskId: str, title: str | None = None) -> dict[str, Any]:
            return _bare_update(taskId, title)

        return server

    @server.tool(name="get_task", description="Fetch one task (benchmark baseline).")
    def get_task(ctx: Context, taskId: str, response_format: str = "detailed") -> dict[str, Any]:
        return _run("get_task", {"taskId": taskId, "response_format": response_format}, ctx, mode)

    @server.tool(name="update_task", description="Edit a task (benchmark baseline).")
    def update_task(
        ctx: Context, taskId: str, title: str | None = None, description: str | None = None
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"taskId": taskId}
        if title is not None:
            args["title"] = title
        if description is not None:
            args["description"] = description
        return _run("update_task", args, ctx, mode)

    return server


def asgi_app(server: Any | None = None) -> Any:
    """The SDK's streamable HTTP app (stateless, JSON) at ``/api/mcp``, lifespan included."""
    server = server or build()
    return server.streamable_http_app(
        streamable_http_path=PATH,
        json_response=True,
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


class _RunningSessionManager:
    """ASGI wrapper for Mangum (``lifespan="off"``): the SDK's session manager must be running
    (its ``run()`` may be entered once per instance), so the first request enters it in a task
    that stays alive on Mangum's event loop for the life of the process, as it would in a warm
    Lambda."""

    def __init__(self, server: Any) -> None:
        self.app = asgi_app(server)
        self.manager = server.session_manager
        self._ready: Any = None
        self._task: Any = None

    async def _keep_running(self) -> None:
        import asyncio

        async with self.manager.run():
            self._ready.set()
            await asyncio.Event().wait()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import asyncio

        if self._task is None:
            self._ready = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._keep_running())
            await self._ready.wait()
        await self.app(scope, receive, send)


def handler_for(mode: str | None = None) -> Any:
    """A Lambda handler with its own server: the SDK app behind Mangum (``lifespan="off"``)."""
    state: dict[str, Any] = {}

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "mangum" not in state:
            state["mangum"] = Mangum(_RunningSessionManager(build(mode)), lifespan="off")
        return state["mangum"](event, context)

    return lambda_handler


_default_handler: Any = None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry for the baseline (``JENTRIX_BENCH_SDK_MODE`` picks the variant)."""
    global _default_handler
    if _default_handler is None:
        _default_handler = handler_for(MODE)
    return _default_handler(event, context)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="The official MCP SDK serving get_task/update_task (benchmark baseline).")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--stdio", action="store_true")
    g.add_argument("--http", type=int, metavar="PORT")
    args = p.parse_args(argv)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    if args.stdio:
        build().run("stdio")
        return 0
    import uvicorn

    uvicorn.run(asgi_app(), host="127.0.0.1", port=args.http, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
