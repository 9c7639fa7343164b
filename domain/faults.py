"""Telling "DynamoDB could not be reached" apart from every other failure.

When the store is down or too slow, a call has not failed because of anything the caller sent
or anything wrong in our code: it is worth retrying in a moment. The transports use
:func:`storage_unavailable` to give such calls their own answer (a tool call: INTERNAL with
:func:`unavailable_error`; the HTTP authentication step: 503 with ``Retry-After``) instead of the
generic INTERNAL.

The botocore errors that mean "no answer from the endpoint" are connection refused or DNS
failure (``EndpointConnectionError``), a connect or read timeout, and a connection dropped
mid-response; so does the call's deadline stopping a request (``DeadlineExceeded``). PynamoDB wraps them in its own exceptions (``cause``), Powertools idempotency in
its persistence-layer errors (``__cause__`` or an argument), so the whole chain is searched.

Throttling is the other failure worth retrying as-is: DynamoDB answered, but refused the request
for capacity (``ProvisionedThroughputExceededException``, ``ThrottlingException``,
``RequestLimitExceeded``, or a transaction cancelled with ``ThrottlingError``) after botocore's
own retries. :func:`throttled` recognises it and :func:`busy_error` words it: INTERNAL saying
the store is busy, with ``retryAfterSeconds`` (the HTTP authentication step: 503 with
``Retry-After``).
"""

from __future__ import annotations

from botocore.exceptions import (
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from domain.errors import ErrorCode, ToolError
from domain.store.deadline import DeadlineExceeded

# DeadlineExceeded: the call's own deadline (domain/store/deadline.py) stopped a request, a
# retry or a back-off; to the caller it is the same as a store that did not answer in time.
UNREACHABLE = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError, DeadlineExceeded)
RETRY_AFTER_SECONDS = 5
THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "ThrottlingError"}
)
BUSY_RETRY_AFTER_SECONDS = 2


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it wraps, each once."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo and len(seen) < 32:
        cur = todo.pop()
        if any(cur is s for s in seen):
            continue
        seen.append(cur)
        for nxt in (getattr(cur, "cause", None), cur.__cause__, cur.__context__, *getattr(cur, "args", ())):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return seen


def storage_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` is (or wraps) a failure to get any answer from DynamoDB."""
    return any(isinstance(e, UNREACHABLE) for e in _chain(exc))


def unavailable_error(correlation_id: str) -> ToolError:
    """The INTERNAL envelope of a tool call that could not reach the store."""
    return ToolError(
        ErrorCode.INTERNAL,
        f"The storage service (DynamoDB) is unavailable: it did not answer in time (correlation id {correlation_id}). "
        "The call did not complete.",
        f"Retry in about {RETRY_AFTER_SECONDS} seconds. A call that creates something is safe to retry with the same "
        "idempotencyKey; if this keeps happening, report the correlation id.",
        retry_after_seconds=RETRY_AFTER_SECONDS,
    )


def request_budget_seconds(connect_timeout: float, read_timeout: float, attempts: int) -> float:
    """The longest one DynamoDB request may take with these settings, retries included.

    Every attempt may wait the full connect and read timeouts; between attempts botocore's
    standard retry mode sleeps at most ``2**(n-1)`` seconds before the n-th retry (jittered
    below that). The sum must stay under the Lambda timeout so a slow store still gets an answer.
    """
    backoff: int = sum(min(2 ** (n - 1), 20) for n in range(1, attempts))
    return attempts * (connect_timeout + read_timeout) + backoff


def _error_code(e: BaseException) -> str | None:
    """The DynamoDB error code a botocore ``ClientError`` carries (``None`` for anything else).

    PynamoDB's ``cause_response_code`` is not used: it raises ``AttributeError`` when the cause
    is a timeout (botocore's ``HTTPClientError.response`` is ``None``); its ``cause`` is searched
    by :func:`_chain` anyway."""
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        code = (response.get("Error") or {}).get("Code")
        return code if isinstance(code, str) else None
    return None


def too_large(exc: BaseException) -> bool:
    """Whether DynamoDB refused a request as invalid for its limits (an item over 400 KB, a key
    over its size, a transaction over 4 MB): a ``ValidationException`` anywhere in the chain."""
    return any(_error_code(e) == "ValidationException" for e in _chain(exc))


def throttled(exc: BaseException) -> bool:
    """Whether DynamoDB refused ``exc``'s request for capacity (after botocore's retries): a
    throttling error code, or a transaction cancelled with ``ThrottlingError``, in the chain."""
    for e in _chain(exc):
        if _error_code(e) in THROTTLING_CODES:
            return True
        reasons = e.__dict__.get("cancellation_reasons")  # VerboseClientError's list (a property elsewhere)
        if any(getattr(r, "code", None) in THROTTLING_CODES for r in reasons or ()):
            return True
    return False


def busy_error(correlation_id: str) -> ToolError:
    """The INTERNAL envelope of a tool call the store refused for capacity (throttling)."""
    return ToolError(
        ErrorCode.INTERNAL,
        f"The storage service (DynamoDB) is busy: it throttled this call's requests (correlation id {correlation_id}). "
        "The call did not complete.",
        f"Retry in about {BUSY_RETRY_AFTER_SECONDS} seconds. A call that creates something is safe to retry with the same "
        "idempotencyKey; if this keeps happening, report the correlation id.",
        retry_after_seconds=BUSY_RETRY_AFTER_SECONDS,
    )


def too_large_error() -> ToolError:
    """INVALID_INPUT for a write DynamoDB refused for its size limits; nothing was written."""
    return ToolError(
        ErrorCode.INVALID_INPUT,
        "arguments: the change is larger than the store accepts (DynamoDB limits an item to 400 KB and a key to "
        "2 KB/1 KB); nothing was written.",
        "Shorten the longest text fields and call again.",
    )
