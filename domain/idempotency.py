"""Idempotent replays for keyed tools: Powertools' idempotency utility plus creation markers.

Two layers (docs/data-model.md, "Idempotency"; catalog: shared contract, idempotency):

1. **Replay** — Powertools ``idempotent_function`` stores the first response under a key built
   from (principal, workspace context, tool, ``idempotencyKey``) in the idempotency table;
   the same key with the same arguments returns that stored response byte for byte, and with
   other arguments raises ``IdempotencyValidationError`` -> CONFLICT.
2. **Crash safety** — Powertools' record is not written atomically with the business write.
   Every keyed create therefore also puts a creation marker with ``attribute_not_exists``
   inside its own transaction (:mod:`domain.store.idempotency_markers`); a retry after a crash
   between the two finds the marker and answers with the entity it names.

A concurrent duplicate that meets an in-progress record waits and retries for up to
:data:`WAIT_SECONDS` (never past the call's deadline), then gets CONFLICT with a retry hint. The
in-progress record's lifetime is ``JENTRIX_CALL_BUDGET_MS`` from the start of the keyed step,
or the call's remaining time (:mod:`domain.store.deadline`) when that is shorter.
"""

from __future__ import annotations

import contextvars
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from domain import errors
from domain.settings import settings
from domain.store import db, deadline
from domain.store.idempotency_markers import marker_for
from domain.store.models import CreationMarkerRow

_R = TypeVar("_R")

WAIT_SECONDS = 8.0
_lease: contextvars.ContextVar[float | None] = contextvars.ContextVar("jentrix_idempotency_lease", default=None)


class _RemainingTime:
    """Stands in for the Lambda context: remaining time of the current call, per thread/task."""

    def get_remaining_time_in_millis(self) -> int:
        lease = _lease.get()
        left = settings.call_budget_ms / 1000 if lease is None else lease - time.monotonic()
        call = deadline.remaining()  # a call never outlives its deadline, so neither need its record
        if call is not None:
            left = min(left, call)
        return max(0, int(left * 1000))


class Unfinished(Exception):  # a result, not an error
    """A keyed call that answers ``result`` but left work a retry with the same key must finish
    (a bulk whose later transaction failed after an earlier one committed). Raised through
    Powertools, which then deletes its in-progress record instead of storing the answer."""

    def __init__(self, result: Any) -> None:
        super().__init__("unfinished")
        self.result = result


def answer(ctx: Any, result: _R, *, finished: bool) -> _R:
    """``result``; for a keyed call that is not ``finished``, raised as :class:`Unfinished`."""
    if not finished and ctx.idempotency_key:
        raise Unfinished(result)
    return result


_wrapped: dict[str, tuple[Any, Callable[..., Any]]] = {}  # tool -> (the client its layer uses, wrapper)


def reset() -> None:
    """Forget the per-tool persistence layers (after the table or endpoint changes)."""
    _wrapped.clear()


db.on_reconfigure(reset)


def _run_handler(request: dict[str, Any], run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    return run()


def _wrapper(tool: str) -> Callable[..., Any]:
    client = db.dynamodb_client()
    cached = _wrapped.get(tool)
    fn = cached[1] if cached is not None and cached[0] is client else None
    if fn is None:
        # One persistence layer per config: Powertools configures a layer once, so a layer
        # shared across tools would key every tool's records with the first tool's prefix.
        # Imported on the first keyed call: Powertools' idempotency brings boto3 and jmespath
        # (~100 ms at import), which a process serving only reads and edits never needs.
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
            idempotent_function,
        )

        # Rebuilt when the store's client changed (db.configure without db.use, e.g. the HTTP app's
        # import after in-process calls), so a layer never keeps talking through a replaced client.
        store = DynamoDBPersistenceLayer(table_name=settings.idempotency_table, boto3_client=client)
        config = IdempotencyConfig(
            event_key_jmespath="scope",
            payload_validation_jmespath="args",
            expires_after_seconds=3600,
            raise_on_no_idempotency_key=True,
        )
        config.register_lambda_context(_RemainingTime())  # type: ignore[arg-type]
        fn = idempotent_function(
            _run_handler,
            data_keyword_argument="request",
            persistence_store=store,
            config=config,
            key_prefix=f"jentrix.{tool}",
        )
        _wrapped[tool] = (client, fn)
    return fn


def run(
    tool: str, scope: str, args: dict[str, Any], handler: Callable[[], dict[str, Any]], budget_ms: int | None = None
) -> dict[str, Any]:
    """Run ``handler`` at most once per ``scope`` (replaying its stored result afterwards).

    Raises:
        ToolError: CONFLICT when the key was used with other arguments, or when a concurrent
            call with the same key is still running after :data:`WAIT_SECONDS`.
    """
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyValidationError,
    )

    fn = _wrapper(tool)
    token = _lease.set(time.monotonic() + (budget_ms or settings.call_budget_ms) / 1000)
    try:
        give_up = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                return cast(dict[str, Any], fn(request={"scope": scope, "args": args}, run=handler))
            except Unfinished as partial:
                return cast(dict[str, Any], partial.result)  # answered, but not stored: a retry with the key runs again
            except IdempotencyValidationError:
                raise errors.conflict(
                    "This idempotencyKey was already used with different arguments.",
                    "Reuse a key only to retry the identical call; use a fresh key for a new request.",
                ) from None
            except IdempotencyAlreadyInProgressError:
                pause = random.uniform(0.05, 0.2)
                left = deadline.remaining()
                if time.monotonic() >= give_up or (left is not None and left - pause <= 1.0):
                    raise errors.conflict(
                        "A call with this idempotencyKey is still in progress.",
                        "Retry the identical call in a few seconds to receive its result.",
                        retry_after_seconds=2,
                    ) from None
                time.sleep(pause)
    finally:
        _lease.reset(token)


def creation_marker(ctx: Any, workspace_id: str, entity_id: str = "") -> CreationMarkerRow | None:
    """The marker a keyed create puts in its transaction, or ``None`` for a call without a key."""
    if not ctx.idempotency_key:
        return None
    return marker_for(
        ctx.principal.user_id, workspace_id, ctx.tool, ctx.idempotency_key, entity_id, ctx.args_hash or ""
    )
