"""Logs, traces and metrics of tool calls (domain/observability.py), asserted on what is emitted.

Calls go through the Lambda handler with canned API Gateway events (request id and authorizer
context), as on Lambda:

* the Powertools JSON log line of each call names the tool, the principal, the outcome code and
  carries the API Gateway request id as correlation id; no secret and no argument text appear;
* the Tracer (a real Powertools ``Tracer`` with a recording provider) gets one subsegment per
  tool call and one per DynamoDB transaction, nested in it; off Lambda nothing is traced and
  the X-Ray SDK is not even imported;
* the embedded-metric-format records on stdout: ToolCalls / ToolLatency per tool, ToolErrors
  per envelope code, ColdStart once.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from aws_lambda_powertools import Tracer
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment

from domain import auth, observability
from tests.aws_events import LambdaContext, answer, mcp_headers, rest_event, tools_call
from tests.conftest import make_actor

ROOT = Path(__file__).resolve().parent.parent


class _Segment(BaseSegment):
    def __init__(self, name: str, parent: _Segment | None) -> None:
        self.name, self.parent, self.annotations = name, parent, {}

    def close(self, end_time=None): ...
    def add_subsegment(self, subsegment): ...
    def remove_subsegment(self, subsegment): ...
    def put_annotation(self, key, value):
        self.annotations[key] = value

    def put_metadata(self, key, value, namespace="default"): ...
    def add_exception(self, exception, stack, remote=False): ...


class RecordingProvider(BaseProvider):
    def __init__(self) -> None:
        self.segments: list[_Segment] = []
        self._local = threading.local()

    @contextlib.contextmanager
    def in_subsegment(self, name=None, **kwargs):
        stack = self._local.__dict__.setdefault("stack", [])
        seg = _Segment(name, stack[-1] if stack else None)
        self.segments.append(seg)
        stack.append(seg)
        try:
            yield seg
        finally:
            stack.pop()

    def in_subsegment_async(self, name=None, **kwargs):
        raise NotImplementedError

    def put_annotation(self, key, value): ...
    def put_metadata(self, key, value, namespace="default"): ...
    def patch(self, modules): ...
    def patch_all(self): ...


@pytest.fixture
def gated(stack):
    actor = make_actor("Observed", usage_key=("k", "usage-key-value-0123456789abcdef", "plan"))
    return actor, auth.authorizer_context(auth.authenticate(actor.token))


def _call(ctx, token, name, args, request_id):
    from functions.lambda_handler import handler

    event = rest_event(
        "POST", "/api/mcp", mcp_headers(token), tools_call(name, args), authorizer=ctx, request_id=request_id
    )
    status, _, body = answer(handler(event, LambdaContext()))
    assert status == 200, body
    return body["result"]


@contextlib.contextmanager
def captured_log():
    from domain.pipeline import logger

    handler = logger.registered_handler
    buffer = io.StringIO()
    old, level = handler.setStream(buffer), logger.log_level
    logger.setLevel("INFO")  # the test session runs at WARNING (conftest); Lambda at LogLevel
    try:
        yield buffer
    finally:
        handler.setStream(old)
        logger.setLevel(level)


def test_log_line_per_call_with_request_id_tool_principal_outcome_and_no_secret(gated):
    actor, ctx = gated
    marker = f"secret-name-{uuid.uuid4().hex}"
    with captured_log() as buffer:
        assert not _call(
            ctx, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": marker}, "req-ok-1"
        )["isError"]
        assert _call(ctx, actor.token, "get_task", {"taskId": "tsk_nope"}, "req-bad-2")["isError"]
    text = buffer.getvalue()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    calls = {line["correlation_id"]: line for line in lines if line.get("message") == "tool call"}
    assert set(calls) >= {"req-ok-1", "req-bad-2"}
    ok, bad = calls["req-ok-1"], calls["req-bad-2"]
    assert (ok["tool"], ok["principal"], ok["outcome"], ok["level"]) == ("create_board", actor.user_id, "OK", "INFO")
    assert (bad["tool"], bad["outcome"]) == ("get_task", "NOT_FOUND")
    assert isinstance(ok["latency_ms"], (int, float)) and ok["service"]
    assert actor.token not in text and marker not in text  # never the secret, never an argument


def test_one_subsegment_per_call_and_per_transaction(gated, monkeypatch):
    actor, ctx = gated
    provider = RecordingProvider()
    observability.TRACING.install(Tracer(service="jentrix-mcp", provider=provider, disabled=False, auto_patch=False))
    try:
        _call(ctx, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": "Traced"}, "req-t1")
        _call(ctx, actor.token, "list_boards", {"workspaceId": actor.workspace_id}, "req-t2")
    finally:
        observability.TRACING.reset()
    tools = [s for s in provider.segments if s.name.startswith("## tool ")]
    assert [s.name for s in tools] == ["## tool create_board", "## tool list_boards"]
    assert tools[0].annotations == {"tool": "create_board", "outcome": "OK"}
    transactions = [s for s in provider.segments if s.name == "## transact"]
    assert len(transactions) == 1 and transactions[0].parent is tools[0]  # list_boards writes nothing
    assert transactions[0].annotations == {"attempt": 0}


def test_off_lambda_tracing_is_off_and_the_xray_sdk_never_loads():
    code = (
        "import sys, json\n"
        "from functions import http_app\n"
        "from domain import observability\n"
        "with observability.subsegment('x') as s: pass\n"
        "print(json.dumps([s is None, observability.TRACING.tracer() is None, 'aws_xray_sdk' in sys.modules]))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "AWS_REGION": "us-east-1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, True, False]


def _emf(text: str) -> list[dict]:
    out: list[dict] = []
    documents: list[dict] = []
    for line in text.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            record = json.loads(line)
            (directive,) = record["_aws"]["CloudWatchMetrics"]
            dims = {d: record[d] for d in directive["Dimensions"][0]}
            for metric in directive["Metrics"]:  # one document may carry several metrics
                value = record[metric["Name"]]
                out.append(
                    {
                        "name": metric["Name"],
                        "unit": metric["Unit"],
                        "value": value[0] if isinstance(value, list) else value,
                        "dims": dims,
                        "ns": directive["Namespace"],
                        "document": len(documents),
                    }
                )
            documents.append(record)
    return out


def test_metrics_calls_latency_errors_by_code_and_cold_start(gated, monkeypatch, capsys):
    import functions.lambda_handler as lambda_handler

    actor, ctx = gated
    monkeypatch.setenv("JENTRIX_METRICS", "1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "jentrix-test")
    monkeypatch.setattr(lambda_handler, "_cold", True)
    capsys.readouterr()
    _call(ctx, actor.token, "list_boards", {"workspaceId": actor.workspace_id}, "req-m1")
    _call(ctx, actor.token, "get_task", {"taskId": "tsk_nope"}, "req-m2")
    records = _emf(capsys.readouterr().out)
    by_name: dict[str, list[dict]] = {}
    for r in records:
        by_name.setdefault(r["name"], []).append(r)
    assert {r["ns"] for r in records} == {"jentrix-test"}
    (cold,) = by_name["ColdStart"]  # once, on the first invocation only
    assert cold["value"] == 1 and cold["dims"]["function_name"] == "jentrix-mcp-test"
    assert [(r["dims"]["tool"], r["value"]) for r in by_name["ToolCalls"]] == [("list_boards", 1), ("get_task", 1)]
    assert [r["dims"]["tool"] for r in by_name["ToolLatency"]] == ["list_boards", "get_task"]
    assert all(r["unit"] == "Milliseconds" and r["value"] >= 0 for r in by_name["ToolLatency"])
    (error,) = by_name["ToolErrors"]
    assert error["dims"]["code"] == "NOT_FOUND" and error["value"] == 1
    # a call's count and latency share one document (its tool dimension); errors get their own
    for calls, latency in zip(by_name["ToolCalls"], by_name["ToolLatency"], strict=True):
        assert calls["document"] == latency["document"] and calls["dims"] == latency["dims"]
    assert error["document"] not in {r["document"] for r in by_name["ToolCalls"]}
    assert all(r["dims"]["service"] for r in records)


def test_no_metrics_off_lambda(gated, capsys, monkeypatch):
    actor, ctx = gated
    monkeypatch.delenv("JENTRIX_METRICS", raising=False)
    capsys.readouterr()
    _call(ctx, actor.token, "list_boards", {"workspaceId": actor.workspace_id}, "req-n1")
    assert not _emf(capsys.readouterr().out)
