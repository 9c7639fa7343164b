"""When DynamoDB is unreachable or stalls, every call still gets a JSON answer.

* The configured numbers: both DynamoDB clients (PynamoDB's and boto3's) use the same explicit
  connect timeout, read timeout and attempt count, and their worst case stays under the Lambda
  timeout in template.yaml (numbers, not a stopwatch).
* Classification: which exceptions mean "the store did not answer", bare or wrapped.
* For real: a server process on its own DynamoDB Local, which is then killed (connection
  refused) and replaced by a socket that accepts connections and never answers (read timeout).
  A tool call gets the INTERNAL storage-unavailable envelope; the authentication step gets a
  JSON-RPC error with 503 and Retry-After. Short timeouts come from the settings.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from cfnlint.decode import cfn_yaml
from pynamodb.exceptions import DoesNotExist, GetError, QueryError, TransactWriteError

from domain import faults
from domain.settings import Settings
from tests.stdio_support import Adapter, error_of

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_VARS = ("JENTRIX_DYNAMODB_CONNECT_TIMEOUT", "JENTRIX_DYNAMODB_READ_TIMEOUT", "JENTRIX_DYNAMODB_MAX_ATTEMPTS")


# -- the configured numbers -------------------------------------------------------------------
def _client_numbers(client: Any) -> tuple[float, float, int]:
    config = client.meta.config
    return config.connect_timeout, config.read_timeout, config.retries["total_max_attempts"]


def _lambda_timeout() -> int:
    template = cfn_yaml.load(str(ROOT / "template.yaml"))
    fn = next(r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::Function")
    return fn["Properties"].get("Timeout") or template["Globals"]["Function"]["Timeout"]


def test_default_numbers_fit_inside_the_lambda_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in TIMEOUT_VARS:
        monkeypatch.delenv(name, raising=False)
    cfg = Settings()
    assert (cfg.dynamodb_connect_timeout, cfg.dynamodb_read_timeout, cfg.dynamodb_max_attempts) == (2.0, 5.0, 3)
    budget = faults.request_budget_seconds(
        cfg.dynamodb_connect_timeout, cfg.dynamodb_read_timeout, cfg.dynamodb_max_attempts
    )
    assert budget == 3 * (2 + 5) + (1 + 2)
    timeout = _lambda_timeout()
    assert budget < timeout <= 29, "API Gateway gives up after 29 s, so the function must answer before"


def test_both_clients_use_the_configured_numbers(stack: dict[str, str]) -> None:
    from domain import settings as settings_module
    from domain.store import db

    custom = Settings()
    custom.dynamodb_connect_timeout, custom.dynamodb_read_timeout, custom.dynamodb_max_attempts = 0.75, 1.5, 2
    try:
        db.configure(custom)
        assert _client_numbers(db.connection().client) == (0.75, 1.5, 2)
        assert _client_numbers(db.dynamodb_client()) == (0.75, 1.5, 2)
    finally:
        db.configure(settings_module.settings)
    current = settings_module.settings
    expected = (current.dynamodb_connect_timeout, current.dynamodb_read_timeout, current.dynamodb_max_attempts)
    for client in db.botocore_clients():
        assert _client_numbers(client) == expected


def test_numbers_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JENTRIX_DYNAMODB_CONNECT_TIMEOUT", "0.5")
    monkeypatch.setenv("JENTRIX_DYNAMODB_READ_TIMEOUT", "1.25")
    monkeypatch.setenv("JENTRIX_DYNAMODB_MAX_ATTEMPTS", "0")  # at least one attempt, whatever is asked
    cfg = Settings()
    assert (cfg.dynamodb_connect_timeout, cfg.dynamodb_read_timeout, cfg.dynamodb_max_attempts) == (0.5, 1.25, 1)


# -- classification ---------------------------------------------------------------------------
URL = "http://127.0.0.1:9"
UNREACHABLE = [
    EndpointConnectionError(endpoint_url=URL),
    ConnectTimeoutError(endpoint_url=URL),
    ReadTimeoutError(endpoint_url=URL),
    ConnectionClosedError(endpoint_url=URL),
]


def _raised_from(outer: type[Exception], inner: Exception) -> Exception:
    try:
        try:
            raise inner
        except Exception as exc:
            raise outer("wrapped") from exc
    except Exception as wrapped:  # noqa: BLE001
        return wrapped


@pytest.mark.parametrize("cause", UNREACHABLE, ids=lambda e: type(e).__name__)
def test_unreachable_store_is_recognised_bare_and_wrapped(cause: Exception) -> None:
    from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyPersistenceLayerError

    assert faults.storage_unavailable(cause)
    assert faults.storage_unavailable(GetError("Failed to get item", cause))  # PynamoDB keeps it in .cause
    assert faults.storage_unavailable(QueryError("Failed to query items", cause))
    assert faults.storage_unavailable(TransactWriteError("Failed to write transaction items", cause))
    assert faults.storage_unavailable(IdempotencyPersistenceLayerError("Failed to save in progress record", cause))
    assert faults.storage_unavailable(_raised_from(RuntimeError, cause))


def test_other_failures_are_not_storage_outages() -> None:
    denied = ClientError({"Error": {"Code": "ValidationException", "Message": "bad"}}, "GetItem")
    for exc in (ValueError("bug"), KeyError("x"), DoesNotExist(), denied, GetError("Failed to get item", denied)):
        assert not faults.storage_unavailable(exc), exc


def test_the_envelope_says_storage_is_unavailable_and_when_to_retry() -> None:
    env = faults.unavailable_error("cid123").envelope()["error"]
    assert env["code"] == "INTERNAL"
    assert "unavailable" in env["message"] and "cid123" in env["message"]
    assert env["retryAfterSeconds"] == faults.RETRY_AFTER_SECONDS
    assert "Retry" in env["hint"]


# -- for real: a running server whose DynamoDB Local goes away --------------------------------
SERVER = """
import json, os, sys
import uvicorn
from domain import auth, settings
from domain.store import db
from domain.store.workspaces import create as create_workspace_rows

db.create_tables()  # with the default timeouts: a cold emulator is slow to create tables
user = auth.create_user("faults@example.com", "Faults")
ws, _ = create_workspace_rows(user, "Faults")
warm, _ = auth.mint_pat(user.userId)
cold, _ = auth.mint_pat(user.userId)
os.environ.update(json.loads(sys.argv[2]))  # the fault settings of the test
settings.reload()
from functions.http_app import create_app  # its import configures the store with the short timeouts
print(json.dumps({"warm": warm, "cold": cold, "workspace": ws.workspaceId}), flush=True)
uvicorn.run(create_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SHORT_TIMEOUTS = {
    "JENTRIX_DYNAMODB_CONNECT_TIMEOUT": "0.5",
    "JENTRIX_DYNAMODB_READ_TIMEOUT": "2",
    "JENTRIX_DYNAMODB_MAX_ATTEMPTS": "1",
}


@pytest.fixture
def doomed_stack() -> Iterator[dict[str, Any]]:
    """A DynamoDB Local of its own and a uvicorn process on it (one attempt per request, short timeouts)."""
    yield from _stack(SHORT_TIMEOUTS)


# Per request up to 2 x 6 s read timeouts plus up to 1 s of back-off (about 13 s), per call 3 s.
SLOW_REQUESTS_SHORT_DEADLINE = {
    "JENTRIX_DYNAMODB_CONNECT_TIMEOUT": "1",
    "JENTRIX_DYNAMODB_READ_TIMEOUT": "6",
    "JENTRIX_DYNAMODB_MAX_ATTEMPTS": "2",
    "JENTRIX_CALL_DEADLINE_MS": "3000",
}


@pytest.fixture
def deadline_stack() -> Iterator[dict[str, Any]]:
    """As :func:`doomed_stack`, with requests that could each wait ~13 s and a 3 s call deadline."""
    yield from _stack(SLOW_REQUESTS_SHORT_DEADLINE)


def _stack(fault_env: dict[str, str]) -> Iterator[dict[str, Any]]:
    from infra.ddb_local import DynamoDBLocal

    ddb = DynamoDBLocal(in_memory=True)
    ddb.start()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JENTRIX_")}
    env.update(
        JENTRIX_DYNAMODB_ENDPOINT=ddb.endpoint,
        JENTRIX_TABLE=f"faults-{uuid.uuid4().hex[:12]}",
        JENTRIX_IDEMPOTENCY_TABLE="faults-idem",
        JENTRIX_TOKEN_CACHE_SECONDS="3600",
        AWS_ACCESS_KEY_ID="local",
        AWS_SECRET_ACCESS_KEY="local",
        POWERTOOLS_LOG_LEVEL="ERROR",
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port), json.dumps(fault_env)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "server exited"
        seed = json.loads(line)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx2.get(url + "/healthz", timeout=5)
                break
            except httpx2.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.1)
        yield {"url": url + "/api/mcp", "ddb": ddb, "env": env, **seed}
    finally:
        if ddb.process is not None and ddb.process.poll() is None:
            os.kill(ddb.process.pid, signal.SIGCONT)  # a paused emulator cannot stop
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        ddb.stop()


def _call(url: str, token: str, name: str, arguments: dict[str, Any], id_: Any = 1) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return httpx2.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _assert_outage_answers(stack: dict[str, Any], label: str) -> None:
    # The warm token is cached by the server, so the call reaches the tool and the store.
    answer = _call(stack["url"], stack["warm"], "list_boards", {"workspaceId": stack["workspace"]}, id_=f"{label}-tool")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json", (label, answer.text)
    result = answer.json()["result"]
    assert result["isError"] is True, (label, result)
    error = json.loads(result["content"][0]["text"])["error"]
    assert error["code"] == "INTERNAL" and "storage" in error["message"] and "unavailable" in error["message"], (
        label,
        error,
    )
    assert error["retryAfterSeconds"] == faults.RETRY_AFTER_SECONDS and "Retry" in error["hint"], (label, error)

    # The cold token must be looked up: the authentication step cannot finish.
    refused = _call(
        stack["url"], stack["cold"], "list_boards", {"workspaceId": stack["workspace"]}, id_=f"{label}-auth"
    )
    assert refused.status_code == 503, (label, refused.status_code, refused.text)
    assert refused.headers["content-type"] == "application/json" and refused.headers["retry-after"] == str(
        faults.RETRY_AFTER_SECONDS
    )
    body = refused.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == f"{label}-auth", body
    assert body["error"]["code"] == -32603 and "storage" in body["error"]["message"], body
    assert body["error"]["data"]["retryAfterSeconds"] == faults.RETRY_AFTER_SECONDS


@pytest.mark.slow
def test_killed_then_stalled_dynamodb_gets_json_answers(doomed_stack: dict[str, Any]) -> None:
    stack = doomed_stack
    ok = _call(stack["url"], stack["warm"], "list_workspaces", {})
    assert (
        ok.status_code == 200 and ok.json()["result"]["structuredContent"]["workspaces"][0]["id"] == stack["workspace"]
    )

    # An in-process stdio adapter on the same store, re-checking its token on every call.
    adapter = Adapter(
        ["--workspace", stack["workspace"]],
        {
            **stack["env"],
            "JENTRIX_TOKEN": stack["warm"],
            "JENTRIX_TOKEN_CACHE_SECONDS": "0",
            "JENTRIX_DYNAMODB_CONNECT_TIMEOUT": "0.5",
            "JENTRIX_DYNAMODB_READ_TIMEOUT": "2",
            "JENTRIX_DYNAMODB_MAX_ATTEMPTS": "1",
        },
    )
    try:
        adapter.initialize()
        ddb = stack["ddb"]
        port = ddb.port
        ddb.process.kill()  # as abrupt as it gets: connections are refused from now on
        ddb.process.wait()
        error = error_of(adapter.call("list_boards", {"workspaceId": ""}, id_="stdio"))
        assert error["code"] == "INTERNAL" and "unavailable" in error["message"], error
        assert error["retryAfterSeconds"] == faults.RETRY_AFTER_SECONDS
    finally:
        adapter.close()
    _assert_outage_answers(stack, "refused")

    # A store that accepts connections and never answers: the read timeout must fire.
    with socket.socket() as silent:
        silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        silent.bind(("127.0.0.1", port))
        silent.listen(64)
        _assert_outage_answers(stack, "stalled")


# -- one deadline per call --------------------------------------------------------------------
@pytest.mark.slow
def test_a_paused_store_is_answered_within_the_call_deadline(deadline_stack: dict[str, Any]) -> None:
    """The emulator is paused (SIGSTOP): connections open, nothing answers. Each request could
    wait ~13 s with these settings (two 6 s read timeouts and a back-off), and a call makes
    several; the call's 3 s deadline caps them, so both the tool call and the cold token's check
    answer in JSON well before a single attempt would have timed out. (The bound on the elapsed
    time is the behaviour under test: API Gateway answers 504 at 29 s, whatever the function
    was doing.)"""
    stack = deadline_stack
    for _ in range(10):  # a cold emulator on a loaded machine may miss the short deadline at first
        ok = _call(stack["url"], stack["warm"], "list_workspaces", {})
        if ok.status_code == 200 and not ok.json()["result"]["isError"]:
            break
    assert ok.status_code == 200 and not ok.json()["result"]["isError"], ok.text
    java = stack["ddb"].process
    os.kill(java.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        answer = _call(
            stack["url"], stack["warm"], "list_boards", {"workspaceId": stack["workspace"]}, id_="paused-tool"
        )
        tool_seconds = time.monotonic() - started
        started = time.monotonic()
        refused = _call(
            stack["url"], stack["cold"], "list_boards", {"workspaceId": stack["workspace"]}, id_="paused-auth"
        )
        auth_seconds = time.monotonic() - started
    finally:
        os.kill(java.pid, signal.SIGCONT)
    assert answer.status_code == 200, answer.text
    error = json.loads(answer.json()["result"]["content"][0]["text"])["error"]
    assert error["code"] == "INTERNAL" and "unavailable" in error["message"], error
    assert error["retryAfterSeconds"] == faults.RETRY_AFTER_SECONDS
    assert (
        refused.status_code == 503
        and refused.json()["error"]["data"]["retryAfterSeconds"] == faults.RETRY_AFTER_SECONDS
    ), refused.text
    # 3 s deadline; one attempt alone would have waited 6 s, one request ~13 s.
    assert tool_seconds < 5.9, tool_seconds
    assert auth_seconds < 5.9, auth_seconds
    # Resumed, the same server answers again: nothing was left stuck.
    for _ in range(10):
        again = _call(stack["url"], stack["warm"], "list_boards", {"workspaceId": stack["workspace"]})
        if again.status_code == 200 and not again.json()["result"]["isError"]:
            break
    assert again.status_code == 200 and not again.json()["result"]["isError"], again.text


class _LambdaContext:
    """Stands in for the Lambda context object (only its remaining time is read)."""

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_a_request_deadline_stays_under_the_invocations_remaining_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from domain.settings import settings
    from domain.store import deadline
    from functions.http_app import request_deadline_seconds

    monkeypatch.setattr(settings, "call_deadline_ms", 25000)
    assert request_deadline_seconds({}) == 25.0  # uvicorn: the configured deadline
    assert request_deadline_seconds({"aws.context": _LambdaContext(29000)}) == 25.0
    assert request_deadline_seconds({"aws.context": _LambdaContext(10000)}) == 10.0 - deadline.LAMBDA_MARGIN_SECONDS
    assert 0 < request_deadline_seconds({"aws.context": _LambdaContext(500)}) < 0.5
    assert _lambda_timeout() * 1000 > settings.call_deadline_ms + deadline.LAMBDA_MARGIN_SECONDS * 1000


def test_a_request_after_the_deadline_is_not_sent(stack: dict[str, str]) -> None:
    """In process, on the shared emulator: inside an expired deadline no request leaves (a
    botocore counter sees none), and the call answers "storage unavailable"."""
    from domain import auth, pipeline
    from domain.catalog import registry
    from domain.store import deadline
    from tests.conftest import make_actor
    from tests.rpc import RequestCounter

    actor = make_actor("Late")
    principal = auth.authenticate(actor.token)
    counter = RequestCounter()
    with deadline.bound(0.0), counter.watching():
        outcome = pipeline.call_tool(registry().get("list_boards"), {"workspaceId": actor.workspace_id}, principal)
    assert outcome.error is not None and outcome.error["error"]["code"] == "INTERNAL", outcome
    assert "unavailable" in outcome.error["error"]["message"]
    assert counter.total == 0, dict(counter.ops)
