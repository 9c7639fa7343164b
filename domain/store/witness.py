"""The freshness witness of a task's full item (docs/data-model.md, "Freshness witness").

A detailed get_task reads the task's full item eventually consistent (half a read unit) beside
the strongly consistent Query of its side items, which returns its recent item
(``keys.task_recent_activity``). Both items carry a witness: a random token that
:func:`domain.store.db.transact` stamps on the full item and on the recent item in the same
transaction, whenever the transaction puts, updates or deletes the full item. The token the
recent item holds is therefore the one the newest version of the full item carries, and an
eventually consistent read that returns an older version carries another token:
:func:`domain.store.tasks.witnessed` then reads the item again, strongly.

Which writes move the witness: every put and delete of a full item, and every update except
those touching only :data:`~domain.store.models.UNWITNESSED_TASK_FIELDS` (board order and the
search index's bookkeeping, which no answer shows; a rebalance re-ranks up to 40 neighbours in
one transaction, and a recent-item action for each would not fit the 100-action limit).
Writes outside a transaction are refused by :class:`~domain.store.models.TaskDetailRow` unless
they touch only those fields.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from domain import ids
from domain.store import keys
from domain.store.models import UNWITNESSED_TASK_FIELDS

ATTRIBUTE = "w"  # on both items (TaskDetailRow.witness, RecentActivityRow.taskWitness)
_NAME, _VALUE = "#wit", ":wit"  # placeholders PynamoDB never generates (it numbers its own)
_SET = re.compile(r"(^|\s)SET\s", re.IGNORECASE)
_NAMES = re.compile(r"#[A-Za-z0-9_]+")


def new_token() -> str:
    """A fresh witness: 16 hex characters (64 random bits; two versions of one item sharing a
    token by chance is not a risk worth a byte more on every read)."""
    return uuid.uuid4().hex[:16]


def _task_of(key: dict[str, Any]) -> str | None:
    parts = keys.task_full_of(key["PK"]["S"], key["SK"]["S"])
    return ids.task_id(*parts) if parts else None


def _touched(update: dict[str, Any]) -> set[str]:
    """The attribute names an update expression sets, adds or removes."""
    names = update.get("ExpressionAttributeNames") or {}
    return {names.get(n, n) for n in _NAMES.findall(update.get("UpdateExpression") or "")}


def add_set(update: dict[str, Any], name: str, value: str) -> None:
    """Add ``SET <name> = <value>`` (placeholders :data:`_NAME`, :data:`_VALUE`) to a raw update action."""
    update.setdefault("ExpressionAttributeNames", {})[_NAME] = name
    update.setdefault("ExpressionAttributeValues", {})[_VALUE] = {"S": value}
    expression = update.get("UpdateExpression") or ""
    clause = f"{_NAME} = {_VALUE}"
    if _SET.search(expression):
        update["UpdateExpression"] = _SET.sub(lambda m: f"{m.group(1)}SET {clause}, ", expression, count=1)
    else:
        update["UpdateExpression"] = f"SET {clause} {expression}".strip()


def stamp(tx: Any) -> dict[str, str]:
    """Stamp a fresh token on every full task item ``tx`` puts or updates (an update touching
    only unanswered fields excepted); return ``{task id: token}`` for every task whose full item
    ``tx`` writes, deleted ones included (their recent item gets a token no item carries).
    :func:`domain.store.activity.mirror` then sets each token on the task's recent item, in the
    same transaction."""
    out: dict[str, str] = {}
    for put in tx._put_items:  # noqa: SLF001 - PynamoDB keeps the serialized actions here
        task_id = _task_of(put["Item"])
        if task_id is not None:
            out[task_id] = new_token()
            put["Item"][ATTRIBUTE] = {"S": out[task_id]}
    for update in tx._update_items:  # noqa: SLF001
        task_id = _task_of(update["Key"])
        if task_id is None or _touched(update) <= UNWITNESSED_TASK_FIELDS:
            continue
        out[task_id] = new_token()
        add_set(update, ATTRIBUTE, out[task_id])
    for delete in tx._delete_items:  # noqa: SLF001
        task_id = _task_of(delete["Key"])
        if task_id is not None:
            out[task_id] = new_token()
    return out
