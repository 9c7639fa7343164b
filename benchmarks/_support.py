"""What every benchmark command shares: a throwaway stack, seeding, statistics, DynamoDB metering,
and rewriting one marked section of docs/performance.md.

Only stable entry points are used from the product: ``infra.ddb_local.DynamoDBLocal``,
``domain.auth`` (``create_user``, ``mint_pat``, ``authenticate``), ``domain.pipeline.call_tool``,
the FastAPI app factory, the Lambda handler and the stdio command. The few internals a
benchmark cannot avoid (finding a tool spec, creating the tables) are reached through the
small adapters below, so a refactor of ``domain/`` touches this file and no other.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PERF_DOC = REPO / "docs" / "performance.md"
PYTHON = sys.executable

os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


# -- adapters over domain internals (the only place that names them) -------------------------
def spec(name: str) -> Any:
    """The tool spec for ``name``, whichever registry layout the checkout has."""
    try:
        from domain import catalog  # type: ignore[attr-defined]  # after the registry refactor

        found = catalog.registry().get(name)
    except ImportError:
        from domain import registry

        found = registry.get(name)
    if found is None:
        raise KeyError(f"no tool named {name!r}")
    return found


def tool_names() -> list[str]:
    try:
        from domain import catalog  # type: ignore[attr-defined]

        reg = catalog.registry()
        return sorted(s.name for s in (reg.ordered() if hasattr(reg, "ordered") else reg))
    except ImportError:
        from domain import registry

        return [s.name for s in registry.ordered()]


def _db() -> Any:
    try:
        from domain.store import db
    except ImportError:  # pragma: no cover - layout of a later refactor
        from domain import store as db  # type: ignore[no-redef]
    return db


def configure_store() -> None:
    """Point the models and clients at the endpoint and tables the environment names."""
    from domain import settings

    settings.reload()
    _db().configure()


def _prepare_tables() -> None:
    """Point the process at the current settings and create the tables."""
    from domain import idempotency

    configure_store()
    idempotency.reset()
    _db().create_tables()


def call(name: str, args: dict[str, Any], principal: Any) -> dict[str, Any]:
    """One tool call through the product pipeline; returns the result or raises with the envelope."""
    from domain.pipeline import call_tool

    outcome = call_tool(spec(name), args, principal)
    if outcome.error is not None:
        raise RuntimeError(f"{name} failed: {json.dumps(outcome.error)[:400]}")
    return outcome.result  # type: ignore[return-value]


def call_direct(name: str, args: dict[str, Any], principal: Any) -> dict[str, Any]:
    """The tool's own work without the pipeline around it: validate the arguments, locate and
    admit the target (the membership read is part of the tool's first read now: one
    BatchGetItem with the task), run the handler, dump the output model. No scope check, rate
    window, idempotency or envelope — what a plain server doing the same reads would run. Used
    by the SDK baseline's "direct" variant."""
    import uuid as _uuid

    from pydantic import BaseModel

    from domain import access
    from domain.context import CallContext

    s = spec(name)
    ctx = CallContext(principal=principal, correlation_id=_uuid.uuid4().hex, tool=name)
    validated = s.input_model.model_validate(args)
    access.authorize(s, ctx, validated)
    out = s.handler(ctx, validated)
    if isinstance(out, BaseModel):
        return out.model_dump(mode="json", by_alias=True)
    return s.output_model.model_validate(out).model_dump(mode="json", by_alias=True)


# -- the stack -------------------------------------------------------------------------------
@dataclass
class Actor:
    user_id: str
    workspace_id: str
    token: str
    principal: Any


@dataclass
class Stack:
    """An in-memory DynamoDB Local with fresh tables, owned by this benchmark run."""

    rate_limit: int = 1_000_000
    token_cache_seconds: int = 300
    env: dict[str, str] = field(default_factory=dict)
    _ddb: Any = None

    def __enter__(self) -> Stack:
        from infra.ddb_local import DynamoDBLocal

        self._ddb = DynamoDBLocal(in_memory=True)
        endpoint = self._ddb.start()
        suffix = uuid.uuid4().hex[:8]
        self.env = {
            "JENTRIX_DYNAMODB_ENDPOINT": endpoint,
            "JENTRIX_TABLE": f"bench-{suffix}",
            "JENTRIX_IDEMPOTENCY_TABLE": f"bench-idem-{suffix}",
            "JENTRIX_RATE_LIMIT_PER_MINUTE": str(self.rate_limit),
            "JENTRIX_TOKEN_CACHE_SECONDS": str(self.token_cache_seconds),
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }
        os.environ.update(self.env)
        _prepare_tables()
        from domain.search import install_index_hook

        install_index_hook()  # tools run in this process, as in the server
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ddb is not None:
            self._ddb.stop()

    @property
    def endpoint(self) -> str:
        return self.env["JENTRIX_DYNAMODB_ENDPOINT"]

    def child_env(self, **extra: str) -> dict[str, str]:
        """Environment for a child process: this stack, this checkout first on the path."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("JENTRIX_")}
        env.pop("AWS_PROFILE", None)
        env.update(self.env)
        env["PYTHONPATH"] = str(REPO)
        env.update(extra)
        return env

    def actor(
        self,
        name: str = "Bench",
        workspace: str | None = "Bench Space",
        scopes: Sequence[str] = ("read", "write", "admin"),
    ) -> Actor:
        from domain import auth

        user = auth.create_user(f"{name.lower()}-{uuid.uuid4().hex[:6]}@bench.invalid", name)
        secret, _ = auth.mint_pat(user.userId, scopes=list(scopes), display_name="benchmark")
        principal = auth.authenticate(secret)
        ws_id = ""
        if workspace:
            ws_id = call("create_workspace", {"name": workspace}, principal)["workspace"]["id"]
        return Actor(user.userId, ws_id, secret, principal)

    def second_token(self, actor: Actor) -> str:
        """Another token of ``actor``'s user: same access, its own rate window."""
        from domain import auth

        secret, _ = auth.mint_pat(actor.user_id, scopes=["read", "write", "admin"], display_name="benchmark 2")
        return secret


def board_with_tasks(actor: Actor, tasks: int, name: str = "Bench board") -> dict[str, Any]:
    """A board with ``tasks`` tasks in its first column (created through the tools)."""
    b = call("create_board", {"workspaceId": actor.workspace_id, "name": name}, actor.principal)
    cols = [c["id"] for c in b["columns"]]
    created = [
        call("create_task", {"columnId": cols[0], "title": f"task {i}"}, actor.principal)["task"] for i in range(tasks)
    ]
    return {"id": b["board"]["id"], "cols": cols, "tasks": created}


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


# -- statistics ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Summary:
    median: float
    lo: float
    hi: float
    n: int

    def ms(self, digits: int = 1) -> str:
        return f"{self.median * 1000:.{digits}f} ms ({self.lo * 1000:.{digits}f}-{self.hi * 1000:.{digits}f})"

    def us(self) -> str:
        return f"{self.median * 1e6:.0f} µs ({self.lo * 1e6:.0f}-{self.hi * 1e6:.0f})"


def summary(samples: Sequence[float]) -> Summary:
    return Summary(statistics.median(samples), min(samples), max(samples), len(samples))


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def ratios_of_pairs(a: Sequence[float], b: Sequence[float]) -> Summary:
    """Median and range of the per-round ratios a[i]/b[i] of interleaved runs."""
    return summary([x / y for x, y in zip(a, b, strict=True) if y])


def interleave(runs: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Run each measurement once per round, rotating the order, and collect the samples."""
    names = list(runs)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            out[n].append(runs[n]())
    return out


# -- DynamoDB metering ------------------------------------------------------------------------
CAPACITY_OPS = {
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactWriteItems",
    "TransactGetItems",
}


@dataclass
class Request:
    op: str
    start: float
    end: float
    read_units: float = 0.0
    write_units: float = 0.0
    items: int = 0  # items DynamoDB read (Query ScannedCount, GetItem found, BatchGetItem returned)


class DynamoDBMeter:
    """Records every DynamoDB request of this process: operation, start/end, consumed capacity.

    Installed by wrapping ``botocore.client.BaseClient._make_api_call``, the one method both
    PynamoDB's connection and boto3 clients send through, so it sees every client however the
    product creates it. With ``capacity=True`` it adds ``ReturnConsumedCapacity=TOTAL`` to the
    requests that accept it (a benchmark-only change: the product never asks for it) and sums
    the ``ConsumedCapacity`` DynamoDB returns.
    """

    def __init__(self, capacity: bool = True) -> None:
        self.capacity = capacity
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._orig: Any = None
        self.active = False

    def install(self) -> DynamoDBMeter:
        from botocore.client import BaseClient

        meter = self
        orig = self._orig = BaseClient._make_api_call

        def _make_api_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            if not meter.active or client.meta.service_model.service_name != "dynamodb":
                return orig(client, operation_name, api_params)
            if meter.capacity and operation_name in CAPACITY_OPS and "ReturnConsumedCapacity" not in api_params:
                api_params = {**api_params, "ReturnConsumedCapacity": "TOTAL"}
            from domain.store import parallel

            # A request the product sent from its I/O pool counts from when it was submitted.
            start = parallel.take_issued() or time.perf_counter()
            resp: Any = None
            try:
                resp = orig(client, operation_name, api_params)
                return resp
            except Exception as exc:  # a cancelled transaction still consumed capacity
                resp = getattr(exc, "response", None)
                raise
            finally:
                end = time.perf_counter()
                req = Request(operation_name, start, end)
                if isinstance(resp, dict):
                    if "ScannedCount" in resp:
                        req.items = int(resp["ScannedCount"])
                    elif "Item" in resp:
                        req.items = 1
                    elif "Responses" in resp and isinstance(resp["Responses"], dict):
                        req.items = sum(len(v) for v in resp["Responses"].values())
                cc = (resp or {}).get("ConsumedCapacity") if isinstance(resp, dict) else None
                for entry in [cc] if isinstance(cc, dict) else cc or []:
                    req.read_units += float(entry.get("ReadCapacityUnits") or 0)
                    req.write_units += float(entry.get("WriteCapacityUnits") or 0)
                    if (
                        not entry.get("ReadCapacityUnits")
                        and not entry.get("WriteCapacityUnits")
                        and entry.get("CapacityUnits")
                    ):
                        # GetItem/Query report only CapacityUnits; writes say WriteCapacityUnits
                        if operation_name in ("GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"):
                            req.read_units += float(entry["CapacityUnits"])
                        else:
                            req.write_units += float(entry["CapacityUnits"])
                with meter._lock:
                    meter.requests.append(req)

        BaseClient._make_api_call = _make_api_call  # type: ignore[method-assign]
        return self

    def uninstall(self) -> None:
        if self._orig is not None:
            from botocore.client import BaseClient

            BaseClient._make_api_call = self._orig  # type: ignore[method-assign]
            self._orig = None

    @contextlib.contextmanager
    def measuring(self) -> Iterator[list[Request]]:
        """Collect the requests made inside the block (returned list fills as they happen)."""
        with self._lock:
            self.requests = []
        self.active = True
        try:
            yield self.requests
        finally:
            self.active = False


def round_trips(requests: Sequence[Request]) -> int:
    """Sequential round trips: requests that did not overlap in time with the one before."""
    trips = 0
    horizon = float("-inf")
    for r in sorted(requests, key=lambda r: r.start):
        if r.start >= horizon:
            trips += 1
        horizon = max(horizon, r.end)
    return trips


def ops_text(requests: Sequence[Request]) -> str:
    """``GetItem, UpdateItem, …`` in the order they were sent (``||`` joins overlapping ones)."""
    parts: list[str] = []
    horizon = float("-inf")
    for r in sorted(requests, key=lambda r: r.start):
        if parts and r.start < horizon:
            parts[-1] += f" ‖ {r.op}"
        else:
            parts.append(r.op)
        horizon = max(horizon, r.end)
    return " → ".join(parts)


# -- docs/performance.md sections ---------------------------------------------------------
def write_section(name: str, body: str) -> None:
    """Replace the text between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``
    (appending the pair at the end when missing); leaves every other section alone."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = PERF_DOC.read_text(encoding="utf-8") if PERF_DOC.exists() else "# Performance\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _m: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    PERF_DOC.write_text(text, encoding="utf-8")


def compile_bytecode() -> None:
    """Compile our packages to ``.pyc`` (timestamp-checked, as the site-packages are), as
    ``jentrix package`` ships them: a cold-start figure must not include compiling our sources,
    which a checkout run with ``PYTHONDONTWRITEBYTECODE`` would otherwise do in every child."""
    import compileall

    for package in ("domain", "functions", "benchmarks"):
        compileall.compile_dir(str(REPO / package), quiet=1)


@contextlib.contextmanager
def deployed_botocore() -> Iterator[Path]:
    """A directory holding botocore as ``jentrix package`` ships it (infra.package.slim_botocore:
    five model directories, endpoints.json cut to their entries), compiled; put it first on a
    child's ``PYTHONPATH`` and every side of a cold-start comparison imports the same botocore
    Lambda runs. The copy skips the model directories it would delete; removed on exit."""
    import compileall
    import shutil
    import tempfile

    import botocore

    from infra import package

    full = Path(botocore.__file__).parent
    data = full / "data"

    def skip(folder: str, names: list[str]) -> list[str]:
        dropped = [n for n in names if Path(folder) == data and (data / n).is_dir() and n not in package.SDK_SERVICES]
        return dropped + [n for n in names if n == "__pycache__"]

    with tempfile.TemporaryDirectory(prefix="deployed-botocore-") as root:
        shutil.copytree(full, Path(root) / "botocore", ignore=skip)
        package.slim_botocore(Path(root))
        compileall.compile_dir(str(Path(root) / "botocore"), quiet=1)
        yield Path(root)


def machine_line() -> str:
    import platform

    return (
        f"_Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()} Linux, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs shared with other work, DynamoDB Local in memory._"
    )


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# -- Lambda events ---------------------------------------------------------------------------
class LambdaContext:
    function_name = "jentrix-bench"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:jentrix-bench"
    memory_limit_in_mb = 512
    log_group_name = "/aws/lambda/jentrix-bench"
    log_stream_name = "bench"

    def __init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 25_000


def rest_event(body: bytes, headers: dict[str, str], path: str = "/api/mcp") -> dict[str, Any]:
    """An API Gateway REST (payload v1) proxy event for ``POST path``."""
    return {
        "resource": path,
        "path": path,
        "httpMethod": "POST",
        "headers": dict(headers),
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "bench",
            "resourceId": "r",
            "resourcePath": path,
            "httpMethod": "POST",
            "path": f"/prod{path}",
            "stage": "prod",
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": 1_790_000_000_000,
            "identity": {"sourceIp": "127.0.0.1", "userAgent": "bench"},
        },
        "body": body.decode("utf-8"),
        "isBase64Encoded": False,
    }


HANDSHAKE = "2025-11-25"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def rpc(method: str, params: dict[str, Any] | None = None, id_: int | str | None = 1) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        msg["id"] = id_
    if params is not None:
        msg["params"] = params
    return json.dumps(msg, separators=(",", ":")).encode()


def tool_call_body(name: str, arguments: dict[str, Any], id_: int | str = 1) -> bytes:
    return rpc("tools/call", {"name": name, "arguments": arguments}, id_)


def parse_reply(body: bytes | str) -> dict[str, Any]:
    """A JSON-RPC reply from a JSON body or from the first ``data:`` line of an SSE body."""
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    text = text.strip()
    if text.startswith("{"):
        return json.loads(text)
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    raise ValueError(f"no JSON-RPC message in {text[:200]!r}")


def check_tool_reply(reply: dict[str, Any]) -> dict[str, Any]:
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise RuntimeError(f"tool call failed: {json.dumps(reply)[:400]}")
    return result


# -- the summary table (figures from several commands) -----------------------------------------
FIGURES = REPO / "docs" / "performance-figures.json"
SUMMARY_ROWS: list[tuple[str, str]] = [
    ("cold_init", "cold init (import + first tools/call get_task, REST event)"),
    ("first_call", "first call after import"),
    ("warm_overhead", "warm protocol + pipeline overhead per call (DynamoDB time subtracted)"),
    ("ddb_get_task", "DynamoDB requests per detailed get_task"),
    ("stdio", "stdio calls/s, get_task, pipelined and sequential"),
    ("http", "HTTP requests/s on loopback, 8 clients"),
    ("snapshot_2000", "get_board_snapshot on a 2,000-task board (answer capped at 500)"),
]
GOALS = {
    "cold_init": "<= 0.5x the SDK, <= 1.2x the floor",
    "first_call": "within 1.2x of a warm call",
    "warm_overhead": "<= 0.3x the SDK",
    "ddb_get_task": "one parallel round trip",
    "stdio": ">= 1x the SDK",
    "http": ">= 1x the SDK",
    "snapshot_2000": "reads what it returns",
}


def record(key: str, text: str, source: str) -> None:
    """Store one measured figure of the summary table and re-render the summary section.

    The first figure ever recorded for a row stays as its "before" (the baseline the
    optimisations are judged against); later runs update "now".
    """
    data = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    prev = data.get(key) or {}
    before = prev.get("before") or prev.get("measured") or text
    data[key] = {"before": before, "measured": text, "by": source, "at": time.strftime("%Y-%m-%d", time.gmtime())}
    FIGURES.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    render_summary(data)


def render_summary(data: dict[str, Any]) -> None:
    rows = []
    for k, label in SUMMARY_ROWS:
        entry = data.get(k)
        if entry is None:
            rows.append((label, "not measured yet", "", GOALS[k], ""))
            continue
        rows.append((label, entry.get("before", entry["measured"]), entry["measured"], GOALS[k], f"`{entry['by']}`"))
    write_section("summary", table(("figure", "before", "now", "goal", "command"), rows))
