"""Raw JSON-RPC over HTTP (httpx2) for tests that need threads, exact bytes or request counts."""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter
from contextlib import contextmanager
from typing import Any

import httpx2

_ids = itertools.count(1)


def call_tool(url: str, token: str, name: str, arguments: Any, client: httpx2.Client | None = None) -> dict[str, Any]:
    """tools/call in the handshake era (stateless server: no initialize needed). Returns the JSON-RPC result."""
    body = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    c = client or httpx2.Client(timeout=60)
    try:
        r = c.post(url, content=json.dumps(body), headers=headers)
    finally:
        if client is None:
            c.close()
    assert r.status_code == 200, r.text
    return r.json()["result"]


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert not result["isError"], result["content"][0]["text"]
    return result["structuredContent"]


def err(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"], result
    assert "structuredContent" not in result
    return json.loads(result["content"][0]["text"])["error"]


class RequestCounter:
    """Counts DynamoDB API calls made by every botocore client the app uses (botocore events)."""

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _on_call(self, model: Any = None, **_: Any) -> None:
        with self._lock:
            self.ops[model.name] += 1

    @property
    def total(self) -> int:
        return sum(self.ops.values())

    @contextmanager
    def watching(self):
        from domain.store import db

        clients = db.botocore_clients()
        for c in clients:
            c.meta.events.register("before-call.dynamodb", self._on_call)
        try:
            yield self
        finally:
            for c in clients:
                c.meta.events.unregister("before-call.dynamodb", self._on_call)
