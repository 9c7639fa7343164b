"""The search component: text processing, the query language, the index backends.

:func:`install_index_hook` lives here, not in :mod:`domain.search.writes`, so that an entry
point can register the index hook without importing the indexer (the text pipeline, the query
language and the DynamoDB backend: ~13 ms of a cold start). They are imported by the first
transaction that carries a pending search marker; a process whose first calls only read never
loads them for writing.
"""

from __future__ import annotations

from typing import Any


def install_index_hook() -> None:
    """Index the docs a transaction marked right after its commit, in this process (idempotent:
    a second call registers nothing more). See :mod:`domain.search.writes`."""
    from domain.store import db

    db.on_commit(_index_after_commit)


def _index_after_commit(tx: Any) -> None:
    from domain.store import search_marks

    if search_marks.noted(tx):
        from domain.search.writes import after_commit

        after_commit(tx)
