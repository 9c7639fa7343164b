"""Faults DynamoDB Local cannot produce: contended transactions (TransactionConflict).

The real service cancels a transaction that collides with another in-flight one; DynamoDB
Local never does. The commit is made to fail here (the only mock in this file) to show that
the store retries with jitter and then raises its own Contended error, writing nothing.
"""

from __future__ import annotations

import pytest
from pynamodb.exceptions import CancellationReason, TransactWriteError, VerboseClientError
from pynamodb.transactions import TransactWrite

from domain.store import db
from domain.store.models import Row, SlugRow
from domain.store.retry import ATTEMPTS, Contended


def _conflict() -> TransactWriteError:
    """What PynamoDB raises when the service cancels a contended transaction."""
    cause = VerboseClientError(
        {"Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"}},
        "TransactWriteItems",
        {"request_id": "test", "table_name": "jentrix"},
        cancellation_reasons=[CancellationReason(code="TransactionConflict", message="contended")],
    )
    return TransactWriteError("Failed to write transaction items", cause)


def _put(tx: TransactWrite, pk: str) -> None:
    tx.save(SlugRow(pk, "SLUG", workspaceId="ws_x"), condition=Row.PK.does_not_exist())


def test_contended_transaction_is_retried_then_commits(stack, monkeypatch):
    real = TransactWrite._commit
    calls = {"n": 0}

    def flaky(self):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise _conflict()
        return real(self)

    monkeypatch.setattr(TransactWrite, "_commit", flaky)
    db.transact(lambda tx: _put(tx, "SLUG#contended-once"))
    assert calls["n"] == 3
    assert SlugRow.get("SLUG#contended-once", "SLUG").workspaceId == "ws_x"


def test_persistent_contention_becomes_conflict_and_writes_nothing(stack, monkeypatch):
    def always(self):
        raise _conflict()

    calls = {"n": 0}

    def counted(self):
        calls["n"] += 1
        always(self)

    monkeypatch.setattr(TransactWrite, "_commit", counted)
    with pytest.raises(Contended) as info:
        db.transact(lambda tx: _put(tx, "SLUG#never"))
    # a store error stays a store error; the tool boundary (tests/test_catalog_harness.py) maps it to CONFLICT
    assert info.value.attempts == ATTEMPTS["transaction"] == calls["n"]
    monkeypatch.undo()
    with pytest.raises(SlugRow.DoesNotExist):
        SlugRow.get("SLUG#never", "SLUG")
