"""Repair of the search index: whatever a crash left between an entity's commit and its postings.

Two paths, both idempotent (:func:`domain.search.writes.apply_all` re-applies a marker's text):

- :func:`from_stream_records`: the DynamoDB Streams consumer (``functions/search_stream.py``)
  hands over the records; every INSERT/MODIFY of a pending marker is applied from its new image.
  A marker the request already applied is deleted by then (a REMOVE record, ignored), so the
  consumer only does work for markers that outlived their request.
- :func:`sweep`: the markers of one workspace (one Query of ``keys.search_pending_partition``
  per corpus)
  are applied; :class:`RepairLoop` runs it on a timer over a user's workspaces for the local
  stack (``jentrix dev``) and the in-process stdio adapter, which have no Streams consumer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from domain.search.writes import apply_all
from domain.store import keys, members
from domain.store.models import SearchPendingRow


def _marker(image: dict[str, Any]) -> SearchPendingRow | None:
    if (image.get("kind") or {}).get("S") != "SearchPending":
        return None
    return SearchPendingRow.from_raw_data(image)


def from_stream_records(records: list[dict[str, Any]]) -> int:
    """Apply the pending markers found in DynamoDB Streams records; returns how many."""
    markers = []
    for record in records:
        if record.get("eventName") not in ("INSERT", "MODIFY"):
            continue
        image = (record.get("dynamodb") or {}).get("NewImage") or {}
        marker = _marker(image)
        if marker is not None:
            markers.append((marker, False, True))
    if markers:
        apply_all(markers)
    return len(markers)


def sweep(workspace_id: str) -> int:
    """Apply every pending marker of the workspace (idempotent, so a marker whose request is still
    finishing is merely applied twice); returns how many."""
    markers = [(m, False, True) for corpus in (keys.SEARCH_TASKS, keys.SEARCH_ARTIFACTS)
               for m in SearchPendingRow.query(keys.search_pending_partition(workspace_id, corpus), consistent_read=True)
               if isinstance(m, SearchPendingRow)]
    if markers:
        apply_all(markers)
    return len(markers)


def sweep_for_user(user_id: str) -> int:
    """:func:`sweep` over every workspace ``user_id`` belongs to (one Query for the memberships,
    two per workspace); returns the markers applied."""
    return sum(sweep(m.workspaceId) for m in members.memberships(user_id))


log = logging.getLogger("jentrix.search")


class RepairLoop:
    """Sweeps the workspaces of ``users()`` at start and then every ``interval`` seconds, on a
    daemon thread, until :meth:`stop`. A sweep that fails (storage away for a moment) is logged
    and tried again at the next tick; the loop never takes its host down.

    The local stand-in for the Streams consumer: a marker outlives its request only if the
    process died between the entity's commit and its postings, and the next start repairs it.
    """

    def __init__(self, users: Callable[[], list[str]], interval: float = 30.0) -> None:
        self.users, self.interval = users, interval
        self.applied = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="search-repair", daemon=True)

    def start(self) -> RepairLoop:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            try:
                for user_id in self.users():
                    self.applied += sweep_for_user(user_id)
            except Exception:  # noqa: BLE001 - a background repair must outlive a storage hiccup
                log.warning("search repair sweep failed; retrying in %.0f s", self.interval, exc_info=True)
            if self._stop.wait(self.interval):
                return
