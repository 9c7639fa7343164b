"""Repair of the search index: the consumer of the pending records (docs/search.md).

All paths call the one idempotent indexer (:func:`domain.search.writes.apply_or_retire`):

- :func:`from_stream_records`: the DynamoDB Streams consumer (``functions/search_stream.py``).
  Every INSERT/MODIFY of a pending record (doc or batch) in the batch is applied at once, the
  newest record of each doc winning; it answers ``batchItemFailures`` naming only the records
  that still failed, so Lambda retries those (and, past its retries, sends them to the failure
  queue) while the rest of the shard moves on. A record that cannot be read is logged and
  skipped: it never blocks the shard.
- :func:`sweep`: the pending records of one workspace (one consistent Query per corpus);
  :class:`RepairLoop` runs it for the local stack (``jentrix dev``) and the in-process stdio
  adapter, which have no Streams consumer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from domain.search.writes import apply_or_retire
from domain.store import keys, members
from domain.store.models import SearchPendingRow

log = logging.getLogger("jentrix.search")


def _marker(image: dict[str, Any]) -> SearchPendingRow | None:
    if (image.get("kind") or {}).get("S") != "SearchPending":
        return None
    return SearchPendingRow.from_raw_data(image)


def from_stream_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply the pending records found in DynamoDB Streams records.

    Returns ``{"applied": docs applied, "batchItemFailures": [{"itemIdentifier": sequence
    number}, ...]}``: the records whose work failed for a reason worth retrying (Lambda's
    partial-batch response; records DynamoDB refuses outright are retired instead)."""
    markers: list[tuple[SearchPendingRow, bool, bool]] = []
    sequence: dict[tuple[str, str], list[str]] = {}
    for record in records:
        if record.get("eventName") not in ("INSERT", "MODIFY"):
            continue
        body = record.get("dynamodb") or {}
        try:
            marker = _marker(body.get("NewImage") or {})
        except Exception:  # a record we cannot read must not hold the shard
            log.exception("search stream: skipped an unreadable record %s", body.get("SequenceNumber"))
            continue
        if marker is None:
            continue
        markers.append((marker, False, True))
        sequence.setdefault((marker.PK, marker.SK), []).append(str(body.get("SequenceNumber", "")))
    applied, failed = apply_or_retire(markers) if markers else (0, [])
    failures = sorted({seq for key in failed for seq in sequence.get(key, [])}, key=lambda s: (len(s), s))
    return {"applied": applied, "batchItemFailures": [{"itemIdentifier": seq} for seq in failures]}


#: records one sweep of a workspace applies at most (per corpus): a pass stays bounded
SWEEP_LIMIT = 500


def pending(workspace_id: str, limit: int | None = None) -> list[SearchPendingRow]:
    """The workspace's pending records of both corpora, as stored (one consistent Query each, at
    most ``limit`` records each)."""
    return [
        m
        for corpus in (keys.SEARCH_TASKS, keys.SEARCH_ARTIFACTS)
        for m in SearchPendingRow.query(
            keys.search_pending_partition(workspace_id, corpus), consistent_read=True, limit=limit
        )
        if isinstance(m, SearchPendingRow)
    ]


def sweep(workspace_id: str) -> int:
    """Apply the pending records of the workspace, at most :data:`SWEEP_LIMIT` per corpus
    (idempotent, so a record another consumer is applying is merely applied twice); returns the
    docs applied."""
    markers = [(m, False, True) for m in pending(workspace_id, SWEEP_LIMIT)]
    return apply_or_retire(markers)[0] if markers else 0


def drain(workspace_id: str, passes: int = 5) -> int:
    """:func:`sweep` until the workspace has no pending record left (at most ``passes``); returns
    the docs applied. For tests and tools that need the postings themselves, not just answers."""
    total = 0
    for _ in range(passes):
        total += sweep(workspace_id)
        if not pending(workspace_id):
            break
    return total


def sweep_for_user(user_id: str) -> int:
    """:func:`sweep` over every workspace ``user_id`` belongs to (one Query for the memberships,
    two per workspace); returns the docs applied."""
    return sum(sweep(m.workspaceId) for m in members.memberships(user_id))


class RepairLoop:
    """The local consumer of pending records (``jentrix dev``, the in-process stdio adapter),
    on a daemon thread until :meth:`stop`.

    Woken by every commit of this process that carries records (:func:`domain.search.on_pending`),
    it sweeps those workspaces at once; besides, it sweeps every workspace of ``users()`` at
    start and every ``interval`` seconds (records written by another process). Each sweep is
    bounded (:data:`SWEEP_LIMIT`). Every ``verify_every`` seconds (and first a minute after the
    start) it also runs ``jentrix search verify --repair`` over those workspaces
    (:func:`domain.search.verify.verify`); ``None`` turns that off. A pass that fails is logged
    and tried again at the next tick; the loop never takes its host down."""

    def __init__(
        self, users: Callable[[], list[str]], interval: float = 1.0, verify_every: float | None = 600.0
    ) -> None:
        self.users, self.interval, self.verify_every = users, interval, verify_every
        self.applied = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._due: set[str] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="search-repair", daemon=True)

    def start(self) -> RepairLoop:
        from domain.search import on_pending

        on_pending(self.wake)
        self._thread.start()
        return self

    def wake(self, workspaces: set[str]) -> None:
        with self._lock:
            self._due |= workspaces
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        from domain.search import off_pending

        off_pending(self.wake)
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _verify(self) -> None:
        from domain.search.verify import verify

        for user_id in self.users():
            for m in members.memberships(user_id):
                report = verify(m.workspaceId, repair=True)
                if report.repaired:
                    log.warning(
                        "search verify repaired %d drifted docs in %s; %d left",
                        report.repaired,
                        m.workspaceId,
                        report.drifted,
                    )

    def _run(self) -> None:
        full_at = 0.0
        verify_at = time.monotonic() + 60.0
        while not self._stop.is_set():
            try:
                with self._lock:
                    due, self._due = self._due, set()
                for ws in sorted(due):
                    self.applied += sweep(ws)
                if time.monotonic() >= full_at:
                    full_at = time.monotonic() + self.interval
                    for user_id in self.users():
                        self.applied += sweep_for_user(user_id)
                if self.verify_every is not None and time.monotonic() >= verify_at:
                    verify_at = time.monotonic() + self.verify_every
                    self._verify()
            except Exception:  # a background repair must outlive a storage hiccup
                log.warning("search repair sweep failed; retrying in %.0f s", self.interval, exc_info=True)
            self._wake.wait(max(0.0, min(self.interval, full_at - time.monotonic())))
            self._wake.clear()
