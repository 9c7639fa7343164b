"""Shared fixtures: a real DynamoDB Local (in memory, free port) for the whole session, the
tables, a uvicorn server running the same FastAPI app Lambda runs, seeded users and tokens,
and the official MCP Python SDK client pointed at it.

No service is started by hand: the session fixture starts DynamoDB Local and stops it at exit.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


@pytest.fixture(scope="session")
def dynamodb_endpoint() -> Iterator[str]:
    from infra.ddb_local import DynamoDBLocal

    external = os.environ.get("JENTRIX_TEST_DYNAMODB_ENDPOINT")
    if external:
        yield external
        return
    ddb = DynamoDBLocal(in_memory=True)
    ddb.start()
    try:
        yield ddb.endpoint
    finally:
        ddb.stop()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The local S3 (moto server on a free loopback port) for the whole session, its bucket
    created; ``JENTRIX_TEST_S3_ENDPOINT`` points at a running one instead."""
    from infra.s3_local import S3Local

    external = os.environ.get("JENTRIX_TEST_S3_ENDPOINT")
    server = None
    if not external:
        server = S3Local()
        server.start()
    endpoint = external or server.endpoint  # type: ignore[union-attr]
    os.environ["JENTRIX_S3_ENDPOINT"] = endpoint
    os.environ.setdefault("JENTRIX_ARTIFACT_BUCKET", f"jentrix-test-{uuid.uuid4().hex[:8]}")
    from domain import objects, settings

    settings.reload()
    objects.reset()
    objects.ensure_bucket()
    try:
        yield endpoint
    finally:
        if server is not None:
            server.stop()


@pytest.fixture(scope="session")
def stack(dynamodb_endpoint: str, s3_endpoint: str) -> Iterator[dict[str, str]]:
    """Point the app at DynamoDB Local (fresh tables) and the local S3 for this test session."""
    from domain import idempotency  # noqa: F401 - registers its reset with the store
    from domain.search import install_index_hook
    from domain.store import db

    install_index_hook()  # as every entry point does (tests call the store and tools in process)

    suffix = uuid.uuid4().hex[:8]
    env = {
        "JENTRIX_DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "JENTRIX_TABLE": f"jentrix-{suffix}",
        "JENTRIX_IDEMPOTENCY_TABLE": f"jentrix-idem-{suffix}",
        "JENTRIX_RATE_LIMIT_PER_MINUTE": "100000",
        # one window add per call, so request counts do not depend on the calls before
        # (tests/test_request_budget.py); the blocks themselves: tests/test_rate_window.py
        "JENTRIX_RATE_RESERVE": "1",
        "JENTRIX_TOKEN_CACHE_SECONDS": "0",
        "AWS_REGION": "us-east-1",
    }
    os.environ.update(env)
    db.use(
        dynamodb_endpoint,
        table=env["JENTRIX_TABLE"],
        idempotency_table=env["JENTRIX_IDEMPOTENCY_TABLE"],
        region="us-east-1",
    )
    db.create_tables()
    return env


@dataclass
class Actor:
    user_id: str
    email: str
    workspace_id: str
    token: str


def make_actor(name: str = "Ada", workspace: str | None = "Test Space", **token_kwargs: Any) -> Actor:
    from domain import auth
    from domain.store.workspaces import create as create_workspace_rows

    user = auth.create_user(f"{name.lower()}-{uuid.uuid4().hex[:12]}@example.com", name)
    ws_id = ""
    if workspace:
        ws, _ = create_workspace_rows(user, workspace)
        ws_id = ws.workspaceId
    secret, _ = auth.mint_pat(user.userId, **token_kwargs)
    return Actor(user.userId, user.email, ws_id, secret)


@pytest.fixture
def warm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A warm Lambda-like process: the token and warm caches on (5 s), the deferred rate window
    (tests/test_warm_facts.py, tests/test_task_witness.py). Yields the settings."""
    from domain.settings import settings
    from domain.store import warm as warm_store

    monkeypatch.setattr(settings, "token_cache_seconds", 5)
    monkeypatch.setattr(settings, "rate_sync_every", 1000)
    monkeypatch.setattr(settings, "rate_sync_seconds", 600.0)
    warm_store.MEMBERS.clear()
    warm_store.COLUMNS.clear()
    yield settings
    warm_store.MEMBERS.clear()
    warm_store.COLUMNS.clear()


@pytest.fixture
def owner(stack: dict[str, str]) -> Actor:
    return make_actor()


@pytest.fixture
def outsider(stack: dict[str, str]) -> Actor:
    return make_actor("Mallory", "Elsewhere")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server_url(stack: dict[str, str]) -> Iterator[str]:
    """uvicorn serving functions.http_app:app on a free loopback port."""
    import uvicorn

    from functions.http_app import create_app

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/api/mcp"
    server.should_exit = True
    thread.join(timeout=10)


@asynccontextmanager
async def mcp_client(url: str, token: str, mode: str = "auto") -> AsyncIterator[Any]:
    """The official MCP Python SDK client over streamable HTTP with a bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def structured(result: Any) -> dict[str, Any]:
    """structuredContent of a successful CallToolResult (asserting it succeeded)."""
    assert not result.is_error, result.content[0].text if result.content else result
    return result.structured_content


def envelope(result: Any) -> dict[str, Any]:
    """The error envelope of a failed CallToolResult (asserting it failed, with no structuredContent)."""
    import json

    assert result.is_error, result
    assert result.structured_content is None
    return json.loads(result.content[0].text)["error"]
