"""Creation markers: the crash-safe half of idempotent creates (docs/data-model.md, "Idempotency").

A keyed create puts a marker (:func:`domain.store.keys.creation_marker`, keyed by a digest of
user, workspace, tool and idempotencyKey) with ``attribute_not_exists`` in the same transaction
as the entity it names. A retry whose first attempt committed — even if the Powertools record
was never completed — fails on the marker, finds the earlier entity's id in the returned image
and answers with that entity instead of creating a second one.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from domain.store import db, keys
from domain.store.errors import StoreError
from domain.store.models import CreationMarkerRow

MARKER_TTL_SECONDS = 30 * 86400


class IdempotencyMismatch(StoreError):
    """The key already created an entity, with other arguments."""

    answer = "key_reused"


class Earlier(StoreError):
    """A keyed create's marker already exists with the same arguments: an earlier call with this
    key committed. ``entity_id`` names what it made; the pipeline answers with that entity
    through the spec's ``replay`` (domain.registry.ToolSpec)."""

    def __init__(self, entity_id: str) -> None:
        super().__init__(entity_id)
        self.entity_id = entity_id


def marker_digest(principal_id: str, workspace_id: str, tool: str, key: str) -> str:
    return hashlib.sha256("\x1f".join((principal_id, workspace_id, tool, key)).encode()).hexdigest()


def marker_for(
    principal_id: str, workspace_id: str, tool: str, key: str, entity_id: str, args_hash: str
) -> CreationMarkerRow:
    return CreationMarkerRow(
        *keys.creation_marker(marker_digest(principal_id, workspace_id, tool, key)),
        entityId=entity_id,
        argsHash=args_hash,
        tool=tool,
        ttl=int(time.time()) + MARKER_TTL_SECONDS,
    )


def put_marker(tx: Any, marker: CreationMarkerRow | None) -> None:
    """Add the marker to a transaction: it must not exist, and a failure returns the stored one."""
    if marker is not None:
        tx.save(marker, condition=CreationMarkerRow.PK.does_not_exist(), return_values="ALL_OLD")


def earlier_entity(failure: db.ConditionFailed, marker: CreationMarkerRow | None) -> str | None:
    """The id an earlier, committed create with the same key made; ``None`` if the transaction
    failed for another reason.

    Raises:
        IdempotencyMismatch: that earlier create had different arguments.
    """
    if marker is None or not failure.hit(marker.PK, marker.SK):
        return None
    existing = CreationMarkerRow.from_raw_data(failure.item(marker.PK, marker.SK) or {})
    if existing.argsHash != marker.argsHash:
        raise IdempotencyMismatch(existing.tool)
    return existing.entityId
