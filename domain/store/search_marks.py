"""The store's side of the search index: the pending-index marker a task or comment write puts in
its own transaction (``keys.search_pending``, :class:`SearchPendingRow`).

The marker carries the text to index and its version; the doc is also noted on the transaction,
and the commit hook that :func:`domain.search.install_index_hook` registers
(:func:`domain.store.db.on_commit`)
writes the postings and deletes the marker. The store knows nothing of postings.
"""

from __future__ import annotations

import hashlib
from typing import Any

from domain import ids
from domain.store import keys
from domain.store.models import CommentRow, SearchPendingRow, TaskDetailRow

NOTE = "_search_docs"


def text_version(title: str = "", description: str = "", comment: str = "", body: str = "") -> str:
    """A digest of a doc's indexed text: postings carry it, so a stale one is recognised."""
    raw = (f"{title}\x00{description}\x00{comment}" + (f"\x00{body}" if body else "")).encode()
    return hashlib.blake2s(raw, digest_size=8).hexdigest()


def noted(tx: Any) -> list[tuple[SearchPendingRow, bool, bool]]:
    """The markers ``tx`` noted, each with "fresh" (the doc was just created) and "saved" (the
    marker item is in the transaction, so the indexer deletes it)."""
    return getattr(tx, NOTE, None) or []


def _note(tx: Any, marker: SearchPendingRow, fresh: bool, *, save: bool = True) -> None:
    if save:
        tx.save(marker)
    notes = getattr(tx, NOTE, None)
    if notes is None:
        notes = []
        setattr(tx, NOTE, notes)
    notes.append((marker, fresh, save))


def mark_task(tx: Any, detail: TaskDetailRow, *, fresh: bool, marker: bool = True) -> None:
    """Called by :func:`domain.store.tasks.put_rows` before it saves ``detail``: a marker when the
    title or description changed (``searchVersion``) or the task was archived. ``marker=False``
    (bulk writes, whose transactions are full) notes the doc for the commit hook without the item."""
    gone = bool(detail.archivedAt)
    version = text_version(detail.title or "", detail.description or "")
    if not gone and detail.searchVersion == version:
        return
    detail.searchVersion = version
    ref = ids.parse_task(detail.taskId)
    doc = keys.search_doc_task(detail.taskId)
    _note(tx, SearchPendingRow(*keys.search_pending(ref.workspace_id if ref else "", doc), doc=doc, taskId=detail.taskId,
                               version=version, title=detail.title or None, description=detail.description or None, gone=gone), fresh,
          save=marker)


def mark_artifact(tx: Any, workspace_id: str, artifact_id: str, *, title: str = "", body: str = "", gone: bool = False) -> None:
    """An artifact's text (its title and already-redacted body) enters the artifacts corpus
    (``fresh``: artifacts are written once); ``gone`` (withdrawal) removes its postings."""
    doc = keys.search_doc_artifact(artifact_id)
    _note(tx, SearchPendingRow(*keys.search_pending(workspace_id, doc), doc=doc, taskId=artifact_id,
                               version=text_version(title, body=body), title=title or None, body=body or None, gone=gone), not gone)


def mark_comment(tx: Any, row: CommentRow, *, gone: bool = False, fresh: bool = False) -> None:
    doc = keys.search_doc_comment(row.taskId, row.commentId)
    _note(tx, SearchPendingRow(*keys.search_pending(row.workspaceId, doc), doc=doc, taskId=row.taskId,
                               version=text_version(comment=row.body or ""), comment=row.body or None, gone=gone), fresh)
