"""The per-token minute window (catalog: shared contract — RATE_LIMITED carries ``retryAfterSeconds``).

The shared count is one counter item per token per minute (:func:`domain.store.keys.rate_window`),
raised with an atomic ``ADD`` (UpdateItem, ``ReturnValues=UPDATED_NEW``) and keyed by time, so
TTL's late deletion never matters. Each process keeps a :class:`Limiter` in front of it: the
decision for a call is made from memory, before the call sends any request, so a call refused
for volume reads nothing of its target and writes nothing (docs/rate-limits.md).

Two modes, chosen by ``every`` (``JENTRIX_RATE_SYNC_EVERY``; docs/decisions.md, "The rate
window off the hot path"):

* **exact** (``every == 1``; stdio, ``jentrix dev``, any process off Lambda by default): no call
  is admitted past the limit, across any number of processes on one token. A process takes
  calls from the shared count in blocks of up to ``reserve`` (``JENTRIX_RATE_RESERVE``, default
  10): one ``ADD`` of the block, whose answer says which of its numbers fall within the limit,
  then that many calls admitted from memory with no request. A block is only taken when the
  process holds no number, by the call that needs one, in parallel with that call's reads; near
  the limit blocks shrink (at most half of what the process saw left), so the last calls go one
  by one. A call is refused with no request when this process already knows the window is
  full; only a call whose block came back empty (other processes took the rest since this
  process's last add) is refused after its reads, never after a write. The window a call
  reports counts this process's unused numbers as unused, so one process alone sees exactly
  its calls. Bound: a process can be refused while each other process on the token still holds
  at most ``reserve - 1`` unused numbers of the window (docs/decisions.md, "The exact window
  takes its numbers in blocks"). ``reserve == 1`` is one ``ADD`` per call.
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
    free: int = 0  # exact mode: numbers this process took within the limit and has not used
    claiming: int = 0  # exact mode: blocks whose add is under way


@dataclass
class Admission:
    """One call's place in the window: ``refused`` is known before any request; :meth:`result`
    waits for the request riding on this call (if any) and gives the window to report.

    ``_future`` is a deferred add (the shared count after it); ``_claim`` an exact call's block
    (its ``used`` count, or ``None`` when no number within the limit was left for it)."""

    limit: int
    window: Window
    refused: bool = False
    _future: Future[int] | None = field(default=None, repr=False)
    _claim: Future[int | None] | None = field(default=None, repr=False)
    _done: bool = False

    def result(self, timeout: float | None = None) -> Window:
        if self._done:
            return self.window
        start = self.window.window_start_ms
        if self._claim is not None:
            used = self._claim.result(timeout=timeout)
            self._done = True
            if used is None:
                self.refused = True
                self.window = Window(self.limit, max(self.limit + 1, self.window.used), start)
            else:
                self.window = Window(self.limit, used, start)
        elif self._future is not None:
            shared = self._future.result(timeout=timeout)
            self._done = True
            self.window = Window(self.limit, max(shared, self.window.used), start)
        return self.window

    def over(self) -> bool:
        """Whether the call is refused, once :meth:`result` has returned: refused before its
        requests, or (exact mode) its block came back with no number within the limit."""
        return self.refused


class Limiter:
    """A process's view of its tokens' windows (thread-safe); see the module docstring."""

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # a block's add came back

    def admit(
        self,
        token_id: str,
        limit: int,
        *,
        every: int = 1,
        sync_seconds: float = 5.0,
        reserve: int = 1,
        now_ms: int | None = None,
    ) -> Admission:
        """Admit or refuse one call of ``token_id`` against ``limit`` calls per minute.

        Refused: no request. Admitted: in exact mode (``every == 1``) the call uses a number this
        process holds, or takes a block of up to ``reserve`` on the I/O pool; in deferred mode
        the add of this process's unsent calls starts when it is due, else nothing is sent."""
        now = clock.now_ms() if now_ms is None else now_ms
        start = now - now % WINDOW_MS
        with self._lock:
            slot = self._slots.get(token_id)
            if slot is None or slot.start != start:
                if len(self._slots) >= MAX_SLOTS:
                    self._slots = {t: s for t, s in self._slots.items() if s.start >= start}
                slot = self._slots[token_id] = _Slot(start)
            if every <= 1:
                return self._admit_exact(token_id, slot, limit, max(1, reserve))
            estimate = slot.shared + slot.unsent + slot.sending + 1
            if estimate > limit:
                return Admission(limit, Window(limit, estimate, start), refused=True)
            slot.unsent += 1
            mono = time.monotonic()
            due = slot.synced_at is None or slot.unsent >= every or mono - slot.synced_at >= sync_seconds
            if not due:
                return Admission(limit, Window(limit, estimate, start))
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

        from domain.store import parallel

        return Admission(limit, Window(limit, estimate, start), _future=parallel.submit(send))

    def _admit_exact(self, token_id: str, slot: _Slot, limit: int, reserve: int) -> Admission:
        """The exact window's admission (``self._lock`` held): a held number, a known-full
        refusal, or a block taken for this call (see the module docstring)."""
        start = slot.start
        if slot.free > 0:
            slot.free -= 1
            return Admission(limit, Window(limit, slot.shared - slot.free, start))
        if slot.shared >= limit:
            return Admission(limit, Window(limit, slot.shared + 1, start), refused=True)
        size = min(reserve, max(1, (limit - slot.shared) // 2))

        def claim() -> int | None:
            with self._lock:
                slot.claiming += 1
            try:
                shared = add(token_id, size, start)
            except BaseException:
                with self._settled:
                    slot.claiming -= 1
                    self._settled.notify_all()
                raise
            # the add gave this process the numbers shared-size+1 .. shared; those <= limit are its
            within = max(0, min(shared, limit) - (shared - size))
            with self._settled:
                slot.claiming -= 1
                slot.shared = max(slot.shared, shared)
                slot.free += within
                self._settled.notify_all()
                # a block added before this one may still be on its way back with numbers within
                # the limit: wait for it rather than refuse a call this process could admit
                while slot.free == 0 and slot.claiming > 0:
                    self._settled.wait(timeout=1.0)
                if slot.free == 0:
                    return None
                slot.free -= 1
                return slot.shared - slot.free

        from domain.store import parallel

        return Admission(limit, Window(limit, slot.shared + 1, start), _claim=parallel.submit(claim))

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
        reserve=settings.rate_reserve,
    )
