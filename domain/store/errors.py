"""The root of every error the store raises.

A store function that refuses (a guard failed, a row is gone, the writers kept colliding, a
cursor does not belong to the list) raises a subclass of :class:`StoreError`; tests/test_layering.py
checks that no exception class defined under ``domain/store`` stands outside this hierarchy.

A tool may catch a store error and answer it in its own words. One that reaches the call boundary
unanswered is mapped by ``domain.pipeline.store_error`` from the class's ``answer``: the name of
a generic envelope (``"not_found"``, ``"conflict"``, ``"cursor"``, ``"board_archived"``,
``"key_reused"``), or ``None`` for an error no generic envelope describes, which the boundary
treats like any unexpected exception (INTERNAL with a correlation id, or the storage fault it
stands for). The store never imports the tool errors: the answer is a name, not an envelope.
"""

from __future__ import annotations

from typing import ClassVar, Literal

Answer = Literal["not_found", "conflict", "cursor", "board_archived", "key_reused"]


class StoreError(Exception):
    """Base of every store error. ``answer`` names the envelope the pipeline gives it when no
    tool caught it first (``None``: not a caller's problem, answered INTERNAL)."""

    answer: ClassVar[Answer | None] = None
