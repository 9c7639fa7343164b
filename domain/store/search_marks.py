"""The store's side of the search index: the durable pending records a text write puts in its
own transaction (``keys.search_pending``, :class:`SearchPendingRow`).

Two shapes, both in the workspace's pending partition (docs/search.md, "Write path"):

- a *doc record* (sort key = the doc id) for a task, comment or artifact write: the text to
  index, its version and ``at`` (when the text was written);
- a *batch record* (sort key ``B#<id>``) for a bulk transaction, which has no room for one item
  per task: one item holding the docs of up to :data:`BATCH_BYTES` of text (more items when the
  texts are longer). :func:`expand` turns it into doc records for the query and the indexer.

Whatever is pending is evaluated by every search (read-your-write) until the indexer has
written the postings and deleted the record. The store knows nothing of postings; the records
noted on the transaction (:func:`noted`) let an after-commit hook start the work at once.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from domain import clock, ids
from domain.store import keys
from domain.store.models import CommentRow, SearchPendingRow, TaskDetailRow

NOTE = "_search_docs"
BATCH = "_search_batch"
#: the text of the docs one batch record holds, in UTF-8 bytes of its JSON: DynamoDB's item
#: limit is 400 KB; the rest is left to the keys and attribute names
BATCH_BYTES = 300_000
BATCH_PREFIX = keys.SEARCH_BATCH_PREFIX  # spelled in keys.py


def text_version(title: str = "", description: str = "", comment: str = "", body: str = "") -> str:
    """A digest of a doc's indexed text: postings carry it, so a stale one is recognised."""
    raw = (f"{title}\x00{description}\x00{comment}" + (f"\x00{body}" if body else "")).encode()
    return hashlib.blake2s(raw, digest_size=8).hexdigest()


def is_batch(marker: SearchPendingRow) -> bool:
    return marker.SK.startswith(BATCH_PREFIX)


def expand(marker: SearchPendingRow) -> list[SearchPendingRow]:
    """The doc records a pending record stands for: itself, or a batch record's docs (unsaved
    rows with the batch's key, so deleting "their" key deletes the batch)."""
    if not is_batch(marker):
        return [marker]
    out = []
    for d in json.loads(marker.batch or "[]"):
        row = SearchPendingRow(
            marker.PK,
            marker.SK,
            doc=d["doc"],
            taskId=d["taskId"],
            version=d["version"],
            title=d.get("title") or None,
            description=d.get("description") or None,
            gone=bool(d.get("gone")),
            at=d.get("at"),
        )
        out.append(row)
    return out


def newest(markers: list[SearchPendingRow]) -> dict[str, SearchPendingRow]:
    """``doc -> record`` keeping, of several records of one doc, the one with the latest ``at``
    (equal or missing ``at``: the one listed last)."""
    out: dict[str, SearchPendingRow] = {}
    for m in markers:
        held = out.get(m.doc)
        if held is None or (m.at or "") >= (held.at or ""):
            out[m.doc] = m
    return out


def pending_docs(rows: list[Any]) -> dict[str, SearchPendingRow]:
    """What a search evaluates in memory: the newest record of each doc among ``rows`` (the
    pending partition as read, batch records expanded)."""
    return newest([d for r in rows if isinstance(r, SearchPendingRow) for d in expand(r)])


def noted(tx: Any) -> list[tuple[SearchPendingRow, bool, bool]]:
    """The records ``tx`` carries, per doc: the record, "fresh" (the doc was just created) and
    "saved" (the record's key is in the transaction: the indexer deletes it after the postings)."""
    return getattr(tx, NOTE, None) or []


def _note(tx: Any, marker: SearchPendingRow, fresh: bool, *, save: bool = True) -> None:
    if save:
        tx.save(marker)
    notes = getattr(tx, NOTE, None)
    if notes is None:
        notes = []
        setattr(tx, NOTE, notes)
    notes.append((marker, fresh, True))


def _task_record(detail: TaskDetailRow, version: str, gone: bool) -> SearchPendingRow:
    ref = ids.parse_task(detail.taskId)
    doc = keys.search_doc_task(detail.taskId)
    return SearchPendingRow(
        *keys.search_pending(ref.workspace_id if ref else "", doc),
        doc=doc,
        taskId=detail.taskId,
        version=version,
        title=detail.title or None,
        description=detail.description or None,
        gone=gone,
        at=detail.updatedAt,
    )


def mark_task(tx: Any, detail: TaskDetailRow, *, fresh: bool, marker: bool = True) -> None:
    """Called by :func:`domain.store.tasks.put_rows` before it saves ``detail``: a record when the
    title or description changed (``searchVersion``) or the task was archived.

    ``marker=False`` (bulk writes, whose transactions hold no room for one item per task) keeps
    the doc on the transaction for :func:`flush_batch`, which the bulk code calls before the
    commit: the doc then travels in a batch record of the same transaction."""
    gone = bool(detail.archivedAt)
    version = text_version(detail.title or "", detail.description or "")
    # the version the row had before this write: a transaction retried after a conflict builds
    # again on the same row, whose searchVersion this call already moved
    base = detail.__dict__.setdefault("_search_base", detail.searchVersion)
    if not gone and base == version:
        return
    detail.searchVersion = version
    record = _task_record(detail, version, gone)
    if marker:
        _note(tx, record, fresh)
        return
    batch = getattr(tx, BATCH, None)
    if batch is None:
        batch = []
        setattr(tx, BATCH, batch)
    batch.append((record, fresh))


def _entry(m: SearchPendingRow) -> dict[str, Any]:
    entry = {
        "doc": m.doc,
        "taskId": m.taskId,
        "version": m.version,
        "title": m.title,
        "description": m.description,
        "gone": m.gone,
        "at": m.at,
    }
    return {k: v for k, v in entry.items() if v not in (None, "", False)}


def entry_bytes(detail: TaskDetailRow) -> int:
    """What one task adds to a batch record (UTF-8 bytes of its JSON entry, an upper bound)."""
    return len(json.dumps(_entry(_task_record(detail, "0" * 16, False)), ensure_ascii=False).encode()) + 2


def flush_batch(tx: Any) -> int:
    """Put the docs :func:`mark_task` kept with ``marker=False`` into batch records of this
    transaction (one per workspace and :data:`BATCH_BYTES` of text); returns how many items."""
    kept: list[tuple[SearchPendingRow, bool]] = getattr(tx, BATCH, None) or []
    setattr(tx, BATCH, [])
    groups: list[tuple[str, list[tuple[SearchPendingRow, bool]], int]] = []
    for record, fresh in kept:
        size = len(json.dumps(_entry(record), ensure_ascii=False).encode()) + 2
        open_ = next((g for g in groups if g[0] == record.PK and g[2] + size <= BATCH_BYTES), None)
        if open_ is None:
            groups.append((record.PK, [(record, fresh)], size))
        else:
            groups[groups.index(open_)] = (open_[0], [*open_[1], (record, fresh)], open_[2] + size)
    for pk, members_, _ in groups:
        sk = f"{keys.SEARCH_BATCH_PREFIX}{uuid.uuid4().hex}"
        at = max((m.at or "" for m, _ in members_), default="") or clock.now_iso()
        row = SearchPendingRow(
            pk,
            sk,
            doc=sk,
            taskId="-",
            version="batch",
            at=at,
            batch=json.dumps([_entry(m) for m, _ in members_], ensure_ascii=False, separators=(",", ":")),
        )
        tx.save(row)
        for record, fresh in members_:
            record.PK, record.SK = pk, sk
            _note(tx, record, fresh, save=False)
    return len(groups)


def mark_artifact(
    tx: Any, workspace_id: str, artifact_id: str, *, title: str = "", body: str = "", gone: bool = False
) -> None:
    """An artifact's text (its title and already-redacted body) enters the artifacts corpus
    (``fresh``: artifacts are written once); ``gone`` (withdrawal) removes its postings."""
    doc = keys.search_doc_artifact(artifact_id)
    _note(
        tx,
        SearchPendingRow(
            *keys.search_pending(workspace_id, doc),
            doc=doc,
            taskId=artifact_id,
            at=clock.now_iso(),
            version=text_version(title, body=body),
            title=title or None,
            body=body or None,
            gone=gone,
        ),
        not gone,
    )


def mark_comment(tx: Any, row: CommentRow, *, gone: bool = False, fresh: bool = False) -> None:
    doc = keys.search_doc_comment(row.taskId, row.commentId)
    at = clock.next_stamp(row.updatedAt) if gone else (row.updatedAt or clock.now_iso())
    _note(
        tx,
        SearchPendingRow(
            *keys.search_pending(row.workspaceId, doc),
            doc=doc,
            taskId=row.taskId,
            at=at,
            version=text_version(comment=row.body or ""),
            comment=row.body or None,
            gone=gone,
        ),
        fresh,
    )
