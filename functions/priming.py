"""Init-phase priming of the Lambda function: one-time work done before the first request.

A cold function's first request pays for work no later request repeats: botocore fills its
per-operation caches (event-handler lookups, serializers, the endpoint ruleset) the first time
it sends each operation, FastAPI reads each endpoint's source location on its first request, a
host name is IDNA-encoded (importing ``encodings.idna``) when the first connection opens, and a
pydantic model with ``defer_build`` builds its validator on first use. :func:`prime` does that
work during init instead (Lambda's init phase, which SnapStart snapshots and provisioned
concurrency runs ahead of traffic):

* **always** (every Lambda init, 20-40 ms on a small machine): each DynamoDB operation the tools
  send (on demand: those every call sends, :data:`EVERY_CALL`) is run once through the real
  client with the HTTP send short-circuited — botocore's
  ``before-send`` event returns a canned empty answer, so no connection is opened and no
  request reaches DynamoDB — plus one request through the ASGI stack that the app refuses before
  any storage work (no bearer token: 401), the IDNA codec import, and last ``gc.freeze()``, so
  that the collections of early requests do not walk the heap init built;
* **pre-initialized only** (``domain.catalog.eager_init``: provisioned concurrency, SnapStart,
  or ``JENTRIX_EAGER_CATALOG=1``): the validator of every tool model (arguments, results, views)
  is built, after the registry imported every tool module. On demand these stay lazy: a cold
  start then pays for the one tool it serves, not for the catalog (docs/performance.md, "Cold
  start");
* **provisioned concurrency only**: a few keep-alive connections to DynamoDB are opened and the
  I/O pool's threads started (:func:`prime_connections`) — never during a SnapStart init, whose
  snapshot would hold dead sockets;
* **SnapStart, after each restore**: :func:`register_restore_hooks` registers :func:`after_restore`
  with the runtime's ``snapshot_restore_py`` hooks. It reseeds ``random`` (every environment
  restored from one snapshot would otherwise draw the same retry jitter) and opens those
  connections, so a restored environment's first call finds what a provisioned one does.

Restore-safe for SnapStart: nothing is connected, no thread started, nothing random is drawn,
no clock value is kept. Returns the milliseconds each step took (the benchmark prints them). A step that cannot run
(no credentials to sign with, outside Lambda) is skipped.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import random
import threading
import time
from collections.abc import Collection
from concurrent.futures import wait
from typing import Any

from botocore.awsrequest import AWSResponse

from domain.store import db

log = logging.getLogger("jentrix.http")
# Each operation the store sends, with a minimal valid request and the empty answer it gets.
_KEY = {"PK": {"S": "PRIME"}, "SK": {"S": "PRIME"}}
_OPERATIONS: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (
    ("GetItem", {"Key": _KEY}, {}),
    ("BatchGetItem", {}, {"Responses": {}, "UnprocessedKeys": {}}),
    (
        "Query",
        {"KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": "PRIME"}}},
        {"Items": [], "Count": 0, "ScannedCount": 0},
    ),
    (
        "UpdateItem",
        {
            "Key": _KEY,
            "UpdateExpression": "SET #v = :v",
            "ExpressionAttributeNames": {"#v": "v"},
            "ExpressionAttributeValues": {":v": {"N": "1"}},
        },
        {},
    ),
    ("PutItem", {"Item": _KEY}, {}),
    ("DeleteItem", {"Key": _KEY}, {}),
    ("TransactWriteItems", {}, {}),
)
# What every tool call sends: the token read, the rate window, the access BatchGetItem and the
# reads' Queries. On demand only these are primed: a write's first TransactWriteItems (or a keyed
# call's PutItem) pays its own one-time work in that call, which it would pay at init otherwise,
# so a cold start that begins with reads does not prime writes it never sends.
EVERY_CALL = ("GetItem", "BatchGetItem", "Query", "UpdateItem")


class _Body:
    """The ``raw`` of a canned :class:`AWSResponse` (botocore reads it through ``stream()``)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


def _canned(answers: dict[str, bytes]) -> Any:
    def before_send(request: Any, **_: Any) -> AWSResponse:
        operation = request.headers.get("X-Amz-Target", b"")
        operation = operation.decode() if isinstance(operation, bytes) else operation
        body = answers.get(operation.rpartition(".")[2], b"{}")
        headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "x-amzn-RequestId": "prime",
            "Content-Length": str(len(body)),
        }
        return AWSResponse(request.url, 200, headers, _Body(body))

    return before_send


def prime_dynamodb(operations: Collection[str] | None = None) -> None:
    """Run each of ``operations`` (default: every operation the store sends) once through the
    shared client, answered by a canned response."""
    client = db.dynamodb_client()
    table = db.table_name()
    answers = {name: json.dumps(answer).encode() for name, _, answer in _OPERATIONS}
    handler = _canned(answers)
    client.meta.events.register_first("before-send.dynamodb", handler, unique_id="jentrix-prime")
    try:
        for name, params, _ in _OPERATIONS:
            if operations is not None and name not in operations:
                continue
            if name == "BatchGetItem":
                params = {"RequestItems": {table: {"Keys": [_KEY]}}}
            elif name == "TransactWriteItems":
                params = {
                    "TransactItems": [
                        {
                            "ConditionCheck": {
                                "TableName": table,
                                "Key": _KEY,
                                "ConditionExpression": "attribute_exists(PK)",
                            }
                        }
                    ]
                }
            else:
                params = {"TableName": table, **params}
            client._make_api_call(name, params)  # noqa: SLF001 - the path PynamoDB's Connection takes
    finally:
        client.meta.events.unregister("before-send.dynamodb", unique_id="jentrix-prime")


def prime_asgi(mangum: Any) -> None:
    """One request through Mangum, Starlette and FastAPI that the app refuses before any storage
    work (no bearer token), so routing and the endpoint's first-request setup happen now."""
    event = {
        "resource": "/api/mcp",
        "path": "/api/mcp",
        "httpMethod": "POST",
        "headers": {"Content-Type": "application/json"},
        "multiValueHeaders": {"Content-Type": ["application/json"]},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/api/mcp",
            "httpMethod": "POST",
            "path": "/api/mcp",
            "stage": "init",
            "requestId": "prime",
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": '{"jsonrpc":"2.0","id":0,"method":"ping"}',
        "isBase64Encoded": False,
    }
    reply = mangum(event, _Context())
    if reply.get("statusCode") != 401:
        raise RuntimeError(f"priming request answered {reply.get('statusCode')}, expected 401")


def prime_validators() -> int:
    """Build the validator of every tool model — arguments, results and the views handlers
    construct (every subclass of ``ToolInput``/``ToolOutput``); imports every tool module first.
    Returns how many were built."""
    from domain.catalog import eager_registry
    from domain.registry import ToolInput, ToolOutput, build_model

    eager_registry()  # every tool module imported: they declare the models
    built = 0
    todo: list[type] = [ToolInput, ToolOutput]
    while todo:
        model = todo.pop()
        todo.extend(model.__subclasses__())
        if not model.__pydantic_complete__:
            build_model(model)
            built += 1
    return built


def prime_connections(count: int = 6) -> None:
    """Open ``count`` keep-alive connections to DynamoDB (a call sends up to five requests at
    once) and start as many I/O pool threads, with reads of a key that does not exist (0.5 read
    unit each). The reads wait for each other just before they are sent (a barrier on
    botocore's ``before-send``), so each checks out a connection of its own rather than reusing
    one a faster read gave back (without it, six reads on loopback kept three connections; with
    it, six, or five on a loaded machine). Where init runs ahead of traffic and is not snapshotted
    (provisioned concurrency), and after a SnapStart restore (:func:`after_restore`): a
    snapshot taken with them open would hold dead sockets."""
    from domain.store import parallel

    client = db.dynamodb_client()
    table = db.table_name()
    together = threading.Barrier(count, timeout=2)

    def hold(**_: Any) -> None:  # returns None: botocore then sends the request itself
        try:
            together.wait()
        except threading.BrokenBarrierError:  # another read failed before sending: go on alone
            pass

    def read() -> Any:
        try:
            return client.get_item(TableName=table, Key=_KEY)
        except BaseException:
            together.abort()  # (e.g. no credentials to sign with) nobody waits for this one
            raise

    client.meta.events.register_first("before-send.dynamodb", hold, unique_id="jentrix-connect")
    try:
        futures = [parallel.submit(read) for _ in range(count)]
        wait(futures)  # all of them, failed or not, before the hook is removed
        for future in futures:
            future.result()
    finally:
        client.meta.events.unregister("before-send.dynamodb", unique_id="jentrix-connect")


def after_restore(connections: int = 6) -> dict[str, float | str]:
    """What a SnapStart environment does once restored, before its first invocation: reseed
    ``random`` from the OS (retry jitter; ids and secrets come from ``secrets``/``os.urandom``,
    which are fresh after a restore anyway), then open ``connections`` keep-alive connections
    (:func:`prime_connections`; none when 0). Never raises: a failed hook would fail the
    restore, and the first call can open its own connections. Returns ``{step: milliseconds}``
    like :func:`prime`."""
    steps: list[tuple[str, Any]] = [("reseed", random.seed)]
    if connections:
        steps.append(("connections", lambda: prime_connections(connections)))
    return _run_steps(steps)


def register_restore_hooks(connections: int = 6) -> bool:
    """Register :func:`after_restore` (with ``connections``) with the Lambda runtime's SnapStart
    hooks (``snapshot_restore_py``, part of the Python managed runtimes from 3.12; AWS Lambda
    developer guide, "Lambda SnapStart runtime hooks for Python"). Only during a SnapStart init
    (``AWS_LAMBDA_INITIALIZATION_TYPE=snap-start``); ``True`` when registered. The MCP function
    opens six (a call sends up to five requests at once), the authorizer one (one GetItem)."""
    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") != "snap-start":
        return False
    try:
        from snapshot_restore_py import register_after_restore
    except ImportError:  # not a managed runtime: nothing will restore this process
        log.info("snapshot_restore_py is not importable; no after-restore hook registered")
        return False
    register_after_restore(after_restore, connections=connections)
    return True


def _freeze() -> None:
    """Move everything init made (modules, classes, models, the registry) to the permanent
    generation, uncollected (a full collection here costs ~100 ms on a small machine; init
    leaves little garbage): later collections — the first of which would otherwise fall in an
    early request and walk the whole heap — scan only what requests allocate."""
    gc.freeze()


class _Context:
    function_name = "jentrix-mcp-init"
    aws_request_id = "prime"
    memory_limit_in_mb = 0
    invoked_function_arn = ""

    def get_remaining_time_in_millis(self) -> int:
        return 0


def prime(mangum: Any, *, validators: bool, connections: bool = False) -> dict[str, float | str]:
    """Do the first request's one-time work now; ``{step: milliseconds}``. Priming only saves
    time: a step that fails (e.g. no AWS credentials to sign with outside Lambda) is logged and
    skipped, and the first request then does that work itself."""
    steps: list[tuple[str, Any]] = [
        ("dynamodb", lambda: prime_dynamodb(None if validators else EVERY_CALL)),
        ("asgi", lambda: prime_asgi(mangum)),
        ("idna", lambda: "localhost".encode("idna")),
    ]
    if validators:
        steps.append(("validators", prime_validators))
    if connections:
        steps.append(("connections", prime_connections))
    steps.append(("gc", _freeze))
    return _run_steps(steps)


def _run_steps(steps: list[tuple[str, Any]]) -> dict[str, float | str]:
    took: dict[str, float | str] = {}
    for name, step in steps:
        start = time.perf_counter()
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - never fail an init over an optimisation
            log.info("priming step %s skipped: %s", name, type(exc).__name__)
            took[name] = f"skipped ({type(exc).__name__})"
            continue
        took[name] = round((time.perf_counter() - start) * 1000, 2)
    return took
