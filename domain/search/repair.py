"""Repair of the search index: whatever a crash left between an entity's commit and its postings.

Two paths, both idempotent (:func:`domain.search.writes.apply_all` re-applies a marker's text):

- :func:`from_stream_records`: the DynamoDB Streams consumer (``functions/search_stream.py``)
  hands over the records; every INSERT/MODIFY of a pending marker is applied from its new image.
  A marker the request already applied is deleted by then (a REMOVE record, ignored), so the
  consumer only does work for markers that outlived their request.
- :func:`sweep`: the markers of one workspace (one Query of ``keys.search_pending_partition``)
  are applied; ``jentrix dev`` / the stdio adapter can run it on a timer (not wired yet).
"""

from __future__ import annotations

from typing import Any

from domain.search.writes import apply_all
from domain.store import keys
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
    markers = [(m, False, True) for m in SearchPendingRow.query(keys.search_pending_partition(workspace_id), consistent_read=True)
               if isinstance(m, SearchPendingRow)]
    if markers:
        apply_all(markers)
    return len(markers)
