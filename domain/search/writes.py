"""The indexer: brings the postings in line with pending records, then deletes the records.

Every text write leaves a durable pending record in its own transaction
(:mod:`domain.store.search_marks`: one per doc, or a batch record per bulk transaction). The
indexer (:func:`apply_all`) is the one code path that turns records into postings, whoever calls
it: the stream consumer and the local poller (:mod:`domain.search.repair`), the sweep, and
``jentrix search verify --repair``. It is idempotent and total:

- records are expanded (batch records into their docs) and merged per doc, the latest ``at``
  winning, so one batch never writes one key twice and an old record never overwrites a newer
  text (the doc state remembers the ``at`` it was built from);
- a record is deleted only after its postings, and only if it was not rewritten meanwhile (a
  conditional delete on its ``at``): a newer write of the same doc keeps its record;
- a record that can never apply (DynamoDB refuses it as invalid) is retired: deleted, with an
  error log line naming it, instead of being re-read by every search and retried forever.
"""

from __future__ import annotations

import logging
from concurrent.futures import wait
from typing import Any

from botocore.exceptions import ClientError

from domain import faults
from domain.search.backend import Doc
from domain.search.dynamo import DynamoIndex, _batch_get, _batch_write, _client, _delete, _table
from domain.store import keys, parallel, search_marks
from domain.store.models import SearchPendingRow

log = logging.getLogger(__name__)
INDEX = DynamoIndex()


def doc_of(marker: SearchPendingRow) -> Doc:
    return Doc(
        marker.doc,
        marker.taskId,
        title=marker.title or "",
        description=marker.description or "",
        comment=marker.comment or "",
        body=marker.body or "",
    )


def apply(marker: SearchPendingRow, *, fresh: bool = False) -> None:
    """:func:`apply_all` of one record."""
    apply_all([(marker, fresh, True)])


def after_commit(tx: Any) -> None:
    """Index what ``tx`` carried (never raises: a failure leaves the records for the consumer)."""
    notes = search_marks.noted(tx)
    if not notes:
        return
    try:
        apply_all(list(notes))
    except Exception:  # the records stay; queries read them, the consumer finishes them
        log.exception("search index write failed; the pending records remain for repair")


def _delete_record(pk: str, sk: str, at: str | None) -> None:
    """Delete a pending record unless it was rewritten since it was read (its ``at`` moved)."""
    kwargs: dict[str, Any] = {"TableName": _table(), "Key": {"PK": {"S": pk}, "SK": {"S": sk}}}
    if at:
        kwargs |= {
            "ConditionExpression": "#at = :at",
            "ExpressionAttributeNames": {"#at": "at"},
            "ExpressionAttributeValues": {":at": {"S": at}},
        }
    elif not sk.startswith(search_marks.BATCH_PREFIX):
        kwargs |= {"ConditionExpression": "attribute_not_exists(#at)", "ExpressionAttributeNames": {"#at": "at"}}
    try:
        _client().delete_item(**kwargs)
    except ClientError as exc:
        if (exc.response.get("Error") or {}).get("Code") != "ConditionalCheckFailedException":
            raise


def _flatten(markers: list[tuple[SearchPendingRow, bool, bool]]) -> list[tuple[SearchPendingRow, bool, bool]]:
    out = []
    for m, fresh, saved in markers:
        if search_marks.is_batch(m) and m.batch is not None:
            out += [(d, fresh, saved) for d in search_marks.expand(m)]
        else:
            out.append((m, fresh, saved))
    return out


def apply_all(markers: list[tuple[SearchPendingRow, bool, bool]]) -> int:
    """Index the docs of ``markers`` (``(record, fresh, saved)``; ``saved``: the record's item
    exists and is deleted after its postings) in shared batches; returns the docs applied.

    Raises whatever the store raises; nothing is deleted for a doc whose postings failed."""
    flat = _flatten(markers)
    if not flat:
        return 0
    latest = search_marks.newest([m for m, _, _ in flat])
    fresh_of = {m.doc: fresh for m, fresh, _ in flat if latest[m.doc] is m}
    put = INDEX.apply_many(
        [
            (keys.search_pending_workspace(m.PK), doc_of(m), bool(m.gone), fresh_of.get(m.doc, False), [], m.at)
            for m in latest.values()
        ]
    )
    _undo_for_deleted(put)
    # the records, once each: a batch record's key is shared by its docs
    records: dict[tuple[str, str], str | None] = {}
    for m, _, saved in flat:
        if saved:
            key = (m.PK, m.SK)
            if m.SK.startswith(search_marks.BATCH_PREFIX):
                records[key] = None
            elif key not in records or (m.at or "") > (records[key] or ""):
                records[key] = m.at  # two images of one record: the newest is the one that may still be stored
    futures = [parallel.submit(_delete_record, pk, sk, at) for (pk, sk), at in records.items()]
    wait(futures)  # none left in flight when this raises
    for future in futures:
        future.result()
    return len(latest)


def _undo_for_deleted(put: dict[str, list[tuple[str, str]]]) -> None:
    """Delete again what this pass put for a workspace that no longer exists (one consistent
    BatchGetItem of the heads, after the writes). A workspace deleted while the pass ran is
    purged from its pending records first (:func:`domain.store.deletion.purge`); a pass that read
    them before that is still writing. Read after the writes, a head that is still there means the
    deletion's close comes later, so its purge finds what was put; a head that is gone means the
    purge may have run already, so the pass removes its own rows."""
    if not put:
        return
    heads = _batch_get([keys.workspace_head(ws) for ws in put], "PK, SK", consistent=True)
    gone = [ws for ws in put if keys.workspace_head(ws) not in heads]
    if gone:
        log.info("search: workspaces %s were deleted during the pass; its rows are removed again", gone)
        _batch_write([_delete(*k) for ws in gone for k in dict.fromkeys(put[ws])])


def apply_or_retire(markers: list[tuple[SearchPendingRow, bool, bool]]) -> tuple[int, list[tuple[str, str]]]:
    """:func:`apply_all`; when the whole set fails, each record alone, so one bad record cannot
    hold the others back. A record DynamoDB refuses as invalid (``ValidationException``: a key or
    item over its limits) can never apply: it is retired (deleted, logged). Returns the docs
    applied and the keys of the records that still fail for another reason (kept, retried later).

    Raises nothing for a record's failure."""
    if len(markers) > 1:
        try:
            return apply_all(markers), []
        except Exception:  # narrowed down record by record below
            log.warning(
                "search: a batch of %d pending records failed; applying them one by one", len(markers), exc_info=True
            )
    applied, failed = 0, []
    for item in markers:
        try:
            applied += apply_all([item])
        except Exception as exc:  # one record's failure is reported, not raised
            m = item[0]
            if faults.too_large(exc):
                log.error("search: retired pending record %s / %s: DynamoDB refuses its postings (%s)", m.PK, m.SK, exc)
                _delete_record(m.PK, m.SK, None if search_marks.is_batch(m) else m.at)
            else:
                log.warning(
                    "search: pending record %s / %s failed; it stays for the next pass", m.PK, m.SK, exc_info=True
                )
                failed.append((m.PK, m.SK))
    return applied, failed
