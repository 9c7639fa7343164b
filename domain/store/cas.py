"""Compare-and-set: read, plan, conditional write, and retry on the image the failure returned.

Every edit of a stored entity follows the same loop (docs/data-model.md, "Optimistic
concurrency"): the caller has a state (usually the item just read), ``plan(state)`` decides what
to write and returns a :class:`Write` (or :class:`Unchanged` when there is nothing to do), the
write's transaction carries a condition on the value it was planned against, and when that
condition fails the :class:`Write`'s ``retry`` turns the failure into the next state — usually
the item returned through ``ALL_OLD``, so the retry needs no read — or raises to stop. The
attempts per operation and the backoff between them come from :mod:`domain.store.retry`.

Example::

    def plan(board):
        if board.name == name:
            return Unchanged(board)
        return Write(build=..., result=lambda: renamed, retry=lambda failure: image_or_raise(failure))

    board = compare_and_set("rename_board", board, plan)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from domain.store.db import ConditionFailed, transact
from domain.store.retry import ATTEMPTS, Contended, backoff

S = TypeVar("S")
R = TypeVar("R")


@dataclass(frozen=True)
class Unchanged(Generic[R]):
    """Nothing to write: the stored state already is what the caller asked for."""

    result: R


@dataclass(frozen=True)
class Write(Generic[S, R]):
    """One conditional transaction.

    ``build`` adds the actions; ``result()`` is called after the commit; ``retry(failure)``
    returns the state to plan against next, or raises (e.g. NOT_FOUND when the item is gone,
    CONFLICT when the caller's ``expectedUpdatedAt`` no longer holds).
    """

    build: Callable[[Any], None]
    result: Callable[[], R]
    retry: Callable[[ConditionFailed], S]


# What a plan returns for state ``S`` and answer ``R`` (a handler's plan: ``-> Step[Task, TaskOutput]``).
Step: TypeAlias = Write[S, R] | Unchanged[R]


def compare_and_set(operation: str, state: S, plan: Callable[[S], Step[S, R]]) -> R:
    """Run ``plan`` and its write until one commits, within ``ATTEMPTS[operation]`` attempts.

    Raises:
        Contended: every attempt lost a race (nothing was written).
        Whatever ``plan`` or ``retry`` raise (tool errors pass through untouched).
    """
    attempts = ATTEMPTS[operation]
    for attempt in range(attempts):
        step = plan(state)
        if isinstance(step, Unchanged):
            return step.result
        try:
            transact(step.build)
        except ConditionFailed as failure:
            state = step.retry(failure)
            if attempt + 1 < attempts:
                backoff(attempt)
            continue
        return step.result()
    raise Contended(operation, attempts)
