"""The retry policy of every store write: one attempt budget per operation, one backoff.

Two kinds of retry exist (docs/data-model.md, "Attempt budgets"):

* **contention** — real DynamoDB cancels a transaction that races another on the same items
  (``TransactionConflict``); :func:`domain.store.db.transact` rebuilds and resends it;
* **compare-and-set** — a condition on a value just read failed because another writer got
  there first; :func:`domain.store.cas.compare_and_set` plans again on the image the failure
  returned (or on a fresh read) and writes again.

Either way the wait between attempts is :func:`backoff` ("full jitter": uniform in
``[0, min(cap, base * 2**attempt)]``), and an operation that spends its whole budget raises
:class:`Contended`, which the tool boundary answers as CONFLICT with a retry hint.
"""

from __future__ import annotations

import random

from domain.store import deadline
from domain.store.errors import StoreError

# Attempts per operation. The table is mirrored in docs/data-model.md next to the request budgets.
ATTEMPTS: dict[str, int] = {
    "transaction": 16,  # TransactionConflict resends of one TransactWriteItems (hot items: docs/decisions.md "Hot items")
    "rename_board": 5,
    "update_task": 5,
    "archive_task": 5,
    "move_task": 10,  # the destination column's lastRank is a small hot spot
    "create_task": 25,  # the column's lastRank when many create in one column (the number is claimed by ADD, outside)
    "update_comment": 5,
    "add_task_link": 10,  # a dependency insert that lost the workspace's link graph version walks again
    # Subtask writes move the task's counts by ADD under "older stamp" (and the cap): they replan
    # only when a later stamp committed first; creates can be many at once (an agent filling a
    # checklist in parallel). set_task_assignees rewrites the task under its updatedAt.
    "create_subtask": 25,
    "toggle_subtask": 10,
    "delete_subtask": 10,
    "set_task_assignees": 5,
    "update_label": 5,  # manage_labels update, on the returned label image
    "delete_label": 5,  # manage_labels delete: read the label and its tasks again after a task or the label changed
    "set_task_labels": 5,
    "unarchive_boards": 5,  # re-read the entries after one was archived or restored meanwhile
    "bulk_create_tasks": 25,  # the same lastRank race as create_task
    "bulk_update_tasks": 5,  # per chunk: re-planned on the returned images of the tasks that changed
    "bulk_move_tasks": 10,  # per chunk: as move_task (destination columns' lastRank)
    "bulk_create_second_step": 3,  # the full items and number pointers after the task set committed
    "update_workspace": 5,  # the edit, on the returned head (a concurrent rename or defaultRepo change; with expectedName: CONFLICT)
    "update_project": 5,  # the edit, on the returned project head (with expectedUpdatedAt: CONFLICT at once)
    # A role change or removal planned again on the member image a failed role condition returned.
    "set_member_role": 5,
    "remove_member": 5,
    # Session edits: a late-binding attach plans again on the returned head (an align or a second
    # binder may have moved it); align, complete and resume carry a required expectedUpdatedAt, so a
    # changed head is CONFLICT at once and their budget only covers TransactionConflict-free replans.
    "attach_agent_session": 5,
    "align_agent_session": 3,
    "complete_agent_session": 3,
    "resume_agent_session": 3,
    # A claim that lost to another claimer plans again on the head the failure returned: it is then
    # refused (overlap) or joins (shared, or a disjoint scope); many racers settle in a few rounds.
    "claim_task": 20,
}
BACKOFF_BASE_SECONDS = 0.01
BACKOFF_CAP_SECONDS = 0.1
# A TransactionConflict means another transaction holds one of the items right now: the wait
# grows further, so writers queued on one hot item (a busy board's entry, a column) spread out
# over a few of its commit times instead of colliding again (docs/decisions.md, "Hot items").
CONFLICT_BACKOFF_CAP_SECONDS = 0.8


class Contended(StoreError):
    """An operation lost every attempt of its budget to concurrent writers; nothing was written."""

    answer = "conflict"

    def __init__(self, operation: str, attempts: int) -> None:
        super().__init__(f"{operation}: lost {attempts} attempts to concurrent writers")
        self.operation = operation
        self.attempts = attempts


def backoff_seconds(attempt: int, *, cap: float = BACKOFF_CAP_SECONDS) -> float:
    """The wait before retry number ``attempt + 1`` (attempt counts from 0)."""
    return random.uniform(0.0, min(cap, BACKOFF_BASE_SECONDS * 2**attempt))


def backoff(attempt: int, *, cap: float = BACKOFF_CAP_SECONDS) -> None:
    """Sleep before the next attempt; :class:`~domain.store.deadline.DeadlineExceeded` instead
    when the wait would end past the call's deadline."""
    deadline.sleep(backoff_seconds(attempt, cap=cap))


def conflict_backoff(attempt: int) -> None:
    """The wait before resending a transaction cancelled by ``TransactionConflict``."""
    backoff(attempt, cap=CONFLICT_BACKOFF_CAP_SECONDS)
