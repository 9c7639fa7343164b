"""The search component: text processing, the query language, the index backends.

Indexing is not part of a write request (docs/search.md, "Write path"): a write commits its
entity and a durable pending record, and the consumer turns records into postings (the
DynamoDB Streams consumer on AWS; :class:`domain.search.loop.RepairLoop` locally).
:func:`install_index_hook` only tells a local consumer in this process that records are
waiting, so it applies them at once instead of at its next poll. It lives here, not in
:mod:`domain.search.writes`, so an entry point registers it without importing the indexer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_listeners: list[Callable[[set[str]], None]] = []
_lock = threading.Lock()


def install_index_hook() -> None:
    """After each commit that carried pending records, wake the local consumers registered with
    :func:`on_pending` (idempotent; with none registered, as in Lambda, it does nothing)."""
    from domain.store import db

    db.on_commit(_wake_after_commit)


def on_pending(listener: Callable[[set[str]], None]) -> None:
    """Call ``listener(workspace ids)`` after each commit carrying pending records (it must be
    quick and must not raise: it runs on the writer's thread)."""
    with _lock:
        if listener not in _listeners:
            _listeners.append(listener)


def off_pending(listener: Callable[[set[str]], None]) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def _wake_after_commit(tx: Any) -> None:
    if not _listeners:
        return
    from domain.store import keys, search_marks

    notes = search_marks.noted(tx)
    if not notes:
        return
    workspaces = {keys.search_pending_workspace(m.PK) for m, _, _ in notes}
    for listener in list(_listeners):
        listener(workspaces)
