"""The write path of the search index after the entity's commit.

A task or comment write puts a pending marker in its own transaction
(:mod:`domain.store.search_marks`); :func:`after_commit`, run after the commit by the hook
:func:`domain.search.install_index_hook` registers, then indexes each marked doc (postings batched in 25s, in
parallel, unprocessed items retried) and deletes its marker after the postings. A crash between
the two leaves the marker: queries evaluate it in memory (read-your-write) and the stream
consumer or the marker sweep (domain/search/repair.py) finishes the job.

Nothing registers on import: every entry point that serves writes (the HTTP app and so the
Lambda handler, the in-process stdio adapter, the CLI) calls
:func:`domain.search.install_index_hook` once.
A process that never calls it still writes the markers, which the repair paths apply.
"""

from __future__ import annotations

import logging
from typing import Any

from domain.search.backend import Doc
from domain.search.dynamo import DynamoIndex
from domain.store import db, keys, search_marks
from domain.store.models import SearchPendingRow

log = logging.getLogger(__name__)
INDEX = DynamoIndex()


def doc_of(marker: SearchPendingRow) -> Doc:
    return Doc(marker.doc, marker.taskId, title=marker.title or "", description=marker.description or "", comment=marker.comment or "",
               body=marker.body or "")


def apply(marker: SearchPendingRow, *, fresh: bool = False) -> None:
    """Bring the index in line with ``marker`` and delete it (idempotent: the commit hook, the
    stream consumer and the sweep all call this)."""
    ws = keys.search_pending_workspace(marker.PK)
    done = [(marker.PK, marker.SK)]
    if marker.gone:
        INDEX.remove(ws, marker.doc, also_delete=done)
    else:
        INDEX.index(ws, doc_of(marker), fresh=fresh, also_delete=done)


def after_commit(tx: Any) -> None:
    """Index what ``tx`` marked (never raises: a failure leaves the markers for repair)."""
    notes = search_marks.noted(tx)
    if not notes:
        return
    try:
        apply_all([(marker, fresh, saved) for marker, fresh, saved in notes])
    except Exception:  # the marker stays; queries read it, the repair loop finishes it
        log.exception("search index write failed; the pending markers remain for repair")


def apply_all(markers: list[tuple[SearchPendingRow, bool, bool]]) -> None:
    """:func:`apply` for several markers in shared batches (``saved=False``: no marker item to delete)."""
    INDEX.apply_many([(keys.search_pending_workspace(m.PK), doc_of(m), bool(m.gone), fresh, [(m.PK, m.SK)] if saved else [])
                      for m, fresh, saved in markers])


