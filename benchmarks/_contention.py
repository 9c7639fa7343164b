"""A stand-in for DynamoDB's write contention, for DynamoDB Local (which never produces any).

DynamoDB cancels a ``TransactWriteItems`` with ``TransactionConflict`` when one of its items is
part of another transaction still in progress, and refuses a single-item write
(``PutItem``/``UpdateItem``/``DeleteItem``) on an item an in-progress transaction holds with
``TransactionConflictException``. Two single-item writes to one item never conflict: the
service orders them. It also throttles (``ThrottlingException``) now and then under load.

:class:`Contention` plays that rule on the real botocore client through a ``before-send``
handler (the pattern of tests/test_reliability.py): it sends each transaction to DynamoDB Local
itself and, while the request is in flight, counts every key the transaction names (puts,
updates, deletes and condition checks alike). Then:

* a transaction naming a key that an in-flight transaction names is cancelled with
  ``TransactionConflict`` with probability ``conflict_rate`` (the reason on the overlapping
  actions, ``None`` on the others), and is not sent;
* a single-item write on a key an in-flight transaction names gets
  ``TransactionConflictException`` with the same probability;
* any request is answered ``ThrottlingException`` with probability ``throttle_rate`` (botocore
  retries those by itself).

So the conflicts a write meets grow with how many writers share an item with it and how long
their transactions take, as on the service; a write whose items nobody else touches meets none.
``conflict_rate=1.0`` is the service's rule as documented; lower rates model a service whose
transactions hold their items for a shorter share of the call than DynamoDB Local's do.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.awsrequest import AWSResponse

SINGLE_WRITES = ("PutItem", "UpdateItem", "DeleteItem")


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def _error(request: Any, error_type: str, message: str, **extra: Any) -> AWSResponse:
    body = json.dumps({"__type": error_type, "message": message, **extra}).encode()
    headers = {
        "x-amzn-RequestId": "injected",
        "Content-Type": "application/x-amz-json-1.0",
        "Content-Length": str(len(body)),
    }
    return AWSResponse(request.url, 400, headers, _Body(body))


def _key(item: dict[str, Any]) -> tuple[str, str, str]:
    return (
        item.get("TableName", ""),
        item["Key"]["PK"]["S"] if "Key" in item else item["Item"]["PK"]["S"],
        (item["Key"]["SK"]["S"] if "Key" in item else item["Item"]["SK"]["S"]),
    )


def transaction_keys(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(table, PK, SK) of every action of a TransactWriteItems body, in order."""
    out = []
    for action in body.get("TransactItems", []):
        (item,) = action.values()
        out.append(_key(item))
    return out


def _kind(key: tuple[str, str, str]) -> str:
    """A key's shape without its ids (``BOARD#…/COL#…``): what kind of item met a conflict."""

    def shape(part: str) -> str:
        return part.split("#", 1)[0] if "#" in part else part[:12]

    return f"{shape(key[1])}/{shape(key[2])}"


class Contention:
    """The ``before-send`` handler; ``stats`` counts what it did (requests, conflicts, throttles)."""

    def __init__(self, *, conflict_rate: float, throttle_rate: float, seed: int | None = None) -> None:
        self.conflict_rate, self.throttle_rate = conflict_rate, throttle_rate
        self.rng = random.Random(seed)
        self.held: Counter[tuple[str, str, str]] = Counter()  # key -> in-flight transactions naming it
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._client: Any = None

    def describe(self) -> str:
        return (
            f"a transaction sharing an item with an in-flight transaction is cancelled (TransactionConflict) with p={self.conflict_rate}; "
            f"a single write to an item an in-flight transaction holds fails (TransactionConflictException) with p={self.conflict_rate}; "
            f"any request is throttled (ThrottlingException, retried by botocore) with p={self.throttle_rate}"
        )

    def before_send(self, request: Any, event_name: str = "", **_: Any) -> Any:
        operation = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self.stats["requests"] += 1
            throttled = self.rng.random() < self.throttle_rate
            if throttled:
                self.stats["throttled"] += 1
        if throttled:
            return _error(
                request,
                "com.amazon.coral.availability#ThrottlingException",
                "Rate of requests exceeds the allowed throughput.",
            )
        if operation not in ("TransactWriteItems", *SINGLE_WRITES):
            return None
        body = json.loads(request.body or b"{}")
        if operation != "TransactWriteItems":
            with self._lock:
                key = _key(body)
                if self.held[key] and self.rng.random() < self.conflict_rate:
                    self.stats["single_conflicts"] += 1
                    return _error(
                        request,
                        "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
                        "Transaction is ongoing for the item",
                    )
            return None
        keys = transaction_keys(body)
        with self._lock:
            self.stats["transactions"] += 1
            shared = [bool(self.held[k]) for k in keys]
            if any(shared) and self.rng.random() < self.conflict_rate:
                self.stats["conflicts"] += 1
                for k, s in zip(keys, shared, strict=True):
                    if s:
                        self.stats[f"conflict on {_kind(k)}"] += 1
                reasons = [
                    {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
                    if s
                    else {"Code": "None"}
                    for s in shared
                ]
                return _error(
                    request,
                    "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                    "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",
                    CancellationReasons=reasons,
                )
            for k in keys:
                self.held[k] += 1
        try:
            response = self._client._endpoint.http_session.send(
                request
            )  # send it for real, holding the items meanwhile
            response.content  # noqa: B018 - read it all before the items are let go
            return response
        finally:
            with self._lock:
                for k in keys:
                    self.held[k] -= 1
                    if not self.held[k]:
                        del self.held[k]

    @contextmanager
    def installed(self, clients: list[Any]) -> Iterator[Contention]:
        """Register on ``clients`` (all share one endpoint) for the duration of the block."""
        self._client = clients[0]
        for client in clients:
            client.meta.events.register("before-send.dynamodb", self.before_send)
        try:
            yield self
        finally:
            for client in clients:
                client.meta.events.unregister("before-send.dynamodb", self.before_send)
