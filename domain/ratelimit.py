"""The per-token minute window (catalog: shared contract — RATE_LIMITED carries ``retryAfterSeconds``).

The shared count is one counter item per token per minute (:func:`domain.store.keys.rate_window`),
raised with an atomic ``ADD`` (UpdateItem, ``ReturnValues=UPDATED_NEW``) and keyed by time, so
TTL's late deletion never matters. Each process keeps a :class:`Limiter` in front of it: the
decision for a call is made from memory, before the call sends any request, so a call refused
for volume reads nothing of its target and writes nothing (docs/rate-limits.md).

Two modes, chosen by ``every`` (``JENTRIX_RATE_SYNC_EVERY``; docs/decisions.md, "The rate
window off the hot path"):

* **exact** (``every == 1``; stdio, ``jentrix dev``, any process off Lambda by default): every
  admitted call adds 1 to the shared count, in parallel with its reads, and the pipeline refuses
  it when the answer shows the count over the limit. Across any number of processes on one token
  exactly ``limit`` calls per window are admitted. A call is refused with no request at all when
  this process already knows the window is full; only a call that another process pushed over
  the limit since this process's last count is refused after its reads (never after a write).
* **deferred** (``every == k > 1``; the Lambda function, default 10): an environment admits a
  call while its last view of the shared count plus the calls it has not yet added stays within
  the limit, and adds its calls in one ``ADD`` on the first call of a window, on every k-th call
  and when its last add is older than ``JENTRIX_RATE_SYNC_SECONDS``; that add runs in parallel
  with the call's reads and never refuses the call it rides on. Bound: an environment learns
  the shared count at the latest with its k-th unadded call, so across ``n`` warm environments
  at most ``limit + n*k`` calls per token per minute are admitted. The usage plan in API Gateway
  remains the hard per-second guard (docs/rate-limits.md).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

from domain import clock
from domain.store import db, keys
from domain.store.models import RateWindowRow, Row

WINDOW_MS = 60_000
MAX_SLOTS = 10_000  # tokens remembered per process before past windows are dropped


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
        return clock.iso(self.window_start_ms + WINDOW_MS)

    def retry_after_seconds(self, now_ms: int) -> int:
        return max(1, -(-(self.window_start_ms + WINDOW_MS - now_ms) // 1000))

    def as_dict(self) -> dict[str, object]:
        return {
            "limit": self.limit,
            "used": self.used,
            "remaining": self.remaining,
            "resetAt": self.reset_at,
            "windowSeconds": 60,
        }


def add(token_id: str, count: int, start_ms: int) -> int:
    """Add ``count`` calls to the token's shared count of the window starting at ``start_ms``;
    the count after the add (one UpdateItem).

    Sent through PynamoDB's connection rather than ``RateWindowRow.update()``: the model method
    asks for ``ALL_NEW`` and builds a row from it, where the count alone is needed."""
    pk, sk = keys.rate_window(token_id, start_ms)
    data = db.connection().update_item(
        Row.Meta.table_name,
        pk,
        sk,
        actions=[RateWindowRow.count.add(count), RateWindowRow.ttl.set(start_ms // 1000 + 180)],
        return_values="UPDATED_NEW",
    )
    return int(data["Attributes"][RateWindowRow.count.attr_name]["N"])


def shared_count(token_id: str, now_ms: int | None = None) -> int:
    """The shared count of the token's window holding ``now_ms`` (one consistent GetItem; 0 when
    none was written). For tests and operators; the pipeline never reads it."""
    now = clock.now_ms() if now_ms is None else now_ms
    pk, sk = keys.rate_window(token_id, now - now % WINDOW_MS)
    from domain.settings import settings

    item = (
        db.dynamodb_client()
        .get_item(TableName=settings.table, Key={"PK": {"S": pk}, "SK": {"S": sk}}, ConsistentRead=True)
        .get("Item")
    )
    return int(item[RateWindowRow.count.attr_name]["N"]) if item else 0


@dataclass
class _Slot:
    """One token's current window as this process knows it."""

    start: int
    shared: int = 0  # the shared count at this process's last add (every process's calls)
    unsent: int = 0  # calls admitted here and not yet added
    sending: int = 0  # calls in an add still under way
    synced_at: float | None = None  # time.monotonic() of the last add sent


@dataclass
class Admission:
    """One call's place in the window: ``refused`` is known before any request; :meth:`result`
    waits for the add riding on this call (if any) and gives the window to report."""

    limit: int
    exact: bool
    window: Window
    refused: bool = False
    _future: Future[int] | None = field(default=None, repr=False)
    _done: bool = False

    def result(self, timeout: float | None = None) -> Window:
        if self._future is not None and not self._done:
            shared = self._future.result(timeout=timeout)
            self._done = True
            self.window = Window(
                self.limit, shared if self.exact else max(shared, self.window.used), self.window.window_start_ms
            )
        return self.window

    def over(self) -> bool:
        """Whether the call is refused, once :meth:`result` has returned: refused before its
        requests, or (exact mode) the add riding on it took the shared count over the limit."""
        return self.refused or (self.exact and self.window.used > self.limit)


class Limiter:
    """A process's view of its tokens' windows (thread-safe); see the module docstring."""

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()

    def admit(
        self, token_id: str, limit: int, *, every: int = 1, sync_seconds: float = 5.0, now_ms: int | None = None
    ) -> Admission:
        """Admit or refuse one call of ``token_id`` against ``limit`` calls per minute.

        Refused: no request. Admitted: the add of this process's unsent calls starts on the
        I/O pool when it is due (always in exact mode), else nothing is sent."""
        from domain.store import parallel

        now = clock.now_ms() if now_ms is None else now_ms
        start = now - now % WINDOW_MS
        exact = every <= 1
        with self._lock:
            slot = self._slots.get(token_id)
            if slot is None or slot.start != start:
                if len(self._slots) >= MAX_SLOTS:
                    self._slots = {t: s for t, s in self._slots.items() if s.start >= start}
                slot = self._slots[token_id] = _Slot(start)
            estimate = slot.shared + slot.unsent + slot.sending + 1
            if estimate > limit:
                return Admission(limit, exact, Window(limit, estimate, start), refused=True)
            slot.unsent += 1
            mono = time.monotonic()
            due = exact or slot.synced_at is None or slot.unsent >= every or mono - slot.synced_at >= sync_seconds
            if not due:
                return Admission(limit, exact, Window(limit, estimate, start))
            count, slot.unsent = slot.unsent, 0
            slot.sending += count
            slot.synced_at = mono

        def send() -> int:
            try:
                shared = add(token_id, count, start)
            except BaseException:
                with self._lock:
                    slot.sending -= count
                    slot.unsent += count  # counted with the next add
                raise
            with self._lock:
                slot.sending -= count
                slot.shared = max(slot.shared, shared)
            return shared

        return Admission(limit, exact, Window(limit, estimate, start), _future=parallel.submit(send))

    def forget(self) -> None:
        with self._lock:
            self._slots.clear()


LIMITER = Limiter()


def admit(token_id: str, limit: int | None = None) -> Admission:
    """One call of ``token_id`` against this process's limiter, with the settings' limit and mode."""
    from domain.settings import settings

    return LIMITER.admit(
        token_id,
        settings.rate_limit_per_minute if limit is None else limit,
        every=settings.rate_sync_every,
        sync_seconds=settings.rate_sync_seconds,
    )
