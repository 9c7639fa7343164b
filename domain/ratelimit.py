"""The per-token minute window (catalog: shared contract — RATE_LIMITED carries ``retryAfterSeconds``).

One counter item per token per minute (:func:`domain.store.keys.rate_window`), incremented with an
atomic ``ADD`` (UpdateItem, ``ReturnValues=UPDATED_NEW``): one request per tool call, exact
under concurrency, and keyed by time so TTL's late deletion never matters.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain import clock
from domain.store import db, keys
from domain.store.models import RateWindowRow, Row


@dataclass(frozen=True)
class Window:
    limit: int
    used: int
    window_start_ms: int

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    @property
    def reset_at(self) -> str:
        return clock.iso(self.window_start_ms + 60_000)

    def retry_after_seconds(self, now_ms: int) -> int:
        return max(1, -(-(self.window_start_ms + 60_000 - now_ms) // 1000))

    def as_dict(self) -> dict[str, object]:
        return {"limit": self.limit, "used": self.used, "remaining": self.remaining, "resetAt": self.reset_at, "windowSeconds": 60}


def hit(token_id: str, limit: int, now_ms: int | None = None) -> Window:
    """Count one call against the token's current window and return the window after it.

    Sent through PynamoDB's connection rather than ``RateWindowRow.update()``: the model method
    asks for ``ALL_NEW`` and builds a row from it, where the count alone is needed (~30-40 µs of
    every call; docs/decisions.md)."""
    now = clock.now_ms() if now_ms is None else now_ms
    start = now - now % 60_000
    pk, sk = keys.rate_window(token_id, start)
    data = db.connection().update_item(
        Row.Meta.table_name, pk, sk, actions=[RateWindowRow.count.add(1), RateWindowRow.ttl.set(start // 1000 + 180)], return_values="UPDATED_NEW")
    used = int(data["Attributes"][RateWindowRow.count.attr_name]["N"])
    return Window(limit=limit, used=used, window_start_ms=start)
