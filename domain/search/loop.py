"""The local consumer of the search index's pending records, on a thread (docs/search.md).

On AWS the DynamoDB Streams consumer applies pending records (``functions/search_stream.py``);
``jentrix dev`` and the in-process stdio adapter have no stream, so :class:`RepairLoop` sweeps
(``domain.search.repair``) and now and then verifies (``domain.search.verify``) on a daemon
thread. It sits above both modules, which do not import it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from domain.search import repair
from domain.search.verify import verify
from domain.store import members

log = logging.getLogger("jentrix.search")


class RepairLoop:
    """The local consumer of pending records (``jentrix dev``, the in-process stdio adapter),
    on a daemon thread until :meth:`stop`.

    Woken by every commit of this process that carries records (:func:`domain.search.on_pending`),
    it sweeps those workspaces at once, unless it swept on a wake less than ``settle`` seconds
    ago: then it waits out the rest of ``settle`` first, so a burst of commits (an agent editing
    one task after another) is applied by one sweep per ``settle`` instead of one per commit.
    Postings then lag a write by at most ``settle`` plus a sweep; searches do not, as they read
    the pending records themselves (docs/search.md, "Consistency and limits"). Besides, it
    sweeps every workspace of ``users()`` at start and every ``interval`` seconds (records
    written by another process). Each sweep is bounded (:data:`domain.search.repair.SWEEP_LIMIT`).
    Every ``verify_every`` seconds (and first a minute after the start) it also runs ``jentrix
    search verify --repair`` over those workspaces (:func:`domain.search.verify.verify`);
    ``None`` turns that off. A pass that fails is logged and tried again at the next tick; the
    loop never takes its host down."""

    def __init__(
        self,
        users: Callable[[], list[str]],
        interval: float = 1.0,
        verify_every: float | None = 600.0,
        settle: float = 0.5,
    ) -> None:
        self.users, self.interval, self.verify_every, self.settle = users, interval, verify_every, settle
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
        woken_at = float("-inf")
        while not self._stop.is_set():
            try:
                with self._lock:
                    waiting = bool(self._due)
                if waiting and (left := woken_at + self.settle - time.monotonic()) > 0:
                    self._stop.wait(left)  # a burst: let its later commits join this sweep
                with self._lock:
                    due, self._due = self._due, set()
                if due:
                    woken_at = time.monotonic()
                for ws in sorted(due):
                    self.applied += repair.sweep(ws)
                if time.monotonic() >= full_at:
                    full_at = time.monotonic() + self.interval
                    for user_id in self.users():
                        self.applied += repair.sweep_for_user(user_id)
                if self.verify_every is not None and time.monotonic() >= verify_at:
                    verify_at = time.monotonic() + self.verify_every
                    self._verify()
            except Exception:  # a background repair must outlive a storage hiccup
                log.warning("search repair sweep failed; retrying in %.0f s", self.interval, exc_info=True)
            self._wake.wait(max(0.0, min(self.interval, full_at - time.monotonic())))
            self._wake.clear()
