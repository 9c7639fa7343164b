"""Child of benchmarks.cold_start: one fresh interpreter, one cold start, one JSON line.

argv: kind (ours | sdk | floor), then for ours/sdk the token and the task id, for the floor the
modules to import. With ``BENCH_AUTHORIZER_CONTEXT`` (JSON) every event carries it as the API
Gateway authorizer's context, as behind the deployed gateway. With
``AWS_LAMBDA_INITIALIZATION_TYPE=snap-start`` the after-restore hooks init registered run between
the import and the first call, as after a SnapStart restore (``restore``: their seconds). Prints ``{"import": s, "first": s, "warm": [s, ...], "uncached": [s, ...]}`` on stdout (floor: only
``import``); ``uncached`` are warm calls of ours made after emptying the token cache, so that, like
the first call, they read the token.
"""

import json
import os
import sys
import time

T0 = time.perf_counter()
kind = sys.argv[1]


# Set by the parent for the "behind the gateway" kinds: the context our Lambda authorizer hands
# API Gateway, which passes it on in every event (the function then reads no token).
AUTHORIZER = json.loads(os.environ.get("BENCH_AUTHORIZER_CONTEXT") or "null")


def event(token: str, task_id: str, n: int) -> dict:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "get_task", "arguments": {"taskId": task_id}},
        }
    )
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
    }
    return {
        "resource": "/api/mcp",
        "path": "/api/mcp",
        "httpMethod": "POST",
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "accountId": "1",
            "apiId": "b",
            "resourceId": "r",
            "resourcePath": "/api/mcp",
            "httpMethod": "POST",
            "path": "/prod/api/mcp",
            "stage": "prod",
            "protocol": "HTTP/1.1",
            "requestId": f"r{n}",
            "requestTimeEpoch": 0,
            "identity": {"sourceIp": "127.0.0.1", "userAgent": "bench"},
            **({"authorizer": AUTHORIZER} if AUTHORIZER else {}),
        },
        "body": body,
        "isBase64Encoded": False,
    }


class Ctx:
    function_name = "bench"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:1:function:bench"
    memory_limit_in_mb = 512
    aws_request_id = "bench"
    log_group_name = "bench"
    log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 25_000


if kind == "floor":
    import importlib

    for mod in sys.argv[2:]:  # the runtime dependencies' modules (benchmarks.cold_start.floor_modules)
        importlib.import_module(mod)
    t1 = time.perf_counter()
    print(json.dumps({"import": t1 - T0}), flush=True)
    sys.exit(0)

primed: dict = {}
if kind == "ours":
    from functions.lambda_handler import PRIMED as primed
    from functions.lambda_handler import handler
else:
    from benchmarks.sdk_server import handler
t1 = time.perf_counter()
token, task_id = sys.argv[2], sys.argv[3]
restore = None
if kind == "ours" and os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":
    # What the Lambda runtime does when it resumes an environment from the snapshot of this
    # init: run the registered after-restore hooks, then hand over the first invocation.
    import snapshot_restore_py

    r0 = time.perf_counter()
    for func, args, kwargs in snapshot_restore_py.get_after_restore():
        func(*args, **kwargs)
    restore = time.perf_counter() - r0


def once(n: int) -> float:
    start = time.perf_counter()
    out = handler(event(token, task_id, n), Ctx())
    if out["statusCode"] != 200 or '"isError":true' in out["body"].replace(" ", ""):
        raise SystemExit(f"call failed: {out['statusCode']} {out['body'][:300]}")
    return time.perf_counter() - start


first = once(1)
t2 = time.perf_counter()
print(
    json.dumps({"import": t1 - T0, "first": first, "ready": t2 - T0, "primed": primed, "restore": restore}), flush=True
)
warm = [once(n) for n in range(2, 9)]
uncached = []
if kind == "ours":  # warm calls that, like the first, must look the token up (its cache emptied first)
    from domain import auth

    for n in range(9, 12):
        auth.PAT_VERIFIER.clear()
        uncached.append(once(n))
print(json.dumps({"warm": warm, "uncached": uncached}), flush=True)
