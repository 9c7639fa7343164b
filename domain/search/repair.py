"""Repair of the search index: the consumer of the pending records (docs/search.md).

All paths call the one idempotent indexer (:func:`domain.search.writes.apply_or_retire`):

- :func:`from_stream_records`: the DynamoDB Streams consumer (``functions/search_stream.py``).
  Every INSERT/MODIFY of a pending record (doc or batch) in the batch is applied at once, the
  newest record of each doc winning; it answers ``batchItemFailures`` naming only the records
  that still failed, so Lambda retries those (and, past its retries, sends them to the failure
  queue) while the rest of the shard moves on. A record that cannot be read is logged and
  skipped: it never blocks the shard.
- :func:`sweep`: the pending records of one workspace (one consistent Query per corpus);
  ``domain.search.loop.RepairLoop`` runs it for the local stack (``jentrix dev``) and the
  in-process stdio adapter, which have no Streams consumer.
"""

from __future__ import annotations

import logging
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
