"""The deadline of the current call: every DynamoDB request, back-off and retry loop checks it.

A per-request bound alone (connect + read timeout x attempts, plus botocore's back-off) does not
bound a call: a call that makes several requests one after the other can add them up past the
function's 29 s timeout, and API Gateway then answers 504 instead of the envelope. So each call
carries one deadline (docs/decisions.md, "One deadline per call"):

* :func:`bound` sets it for the duration of a ``with`` block, as ``min(outer, now + seconds)``:
  the transport bounds the whole request (on Lambda by the invocation's remaining time less
  :data:`LAMBDA_MARGIN_SECONDS`), the pipeline bounds each call by ``JENTRIX_CALL_BUDGET_MS``;
* it lives in a context variable, and :mod:`domain.store.parallel` hands it to the pool thread
  that runs a request for the call;
* :func:`install` hooks it into a botocore client: before a request is built and before each
  attempt is sent the remaining time is checked (none left: :class:`DeadlineExceeded`, the request is not sent) and caps that
  attempt's read timeout; a failed attempt whose retry back-off would end past the deadline is
  not retried;
* the store's own loops call :func:`check` before each attempt and :func:`sleep` for their
  back-off.

:class:`DeadlineExceeded` is answered like an unreachable store (``domain.faults``): the
INTERNAL "storage unavailable" envelope with ``retryAfterSeconds``. Outside any :func:`bound`
block (table administration, the CLI's own reads) nothing is checked.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from domain.store.errors import StoreError

LAMBDA_MARGIN_SECONDS = 2.0  # left for the envelope, the log line and Mangum's reply
MIN_READ_TIMEOUT_SECONDS = 0.05  # an attempt with less time than this left is not sent

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("jentrix_call_deadline", default=None)


class DeadlineExceeded(StoreError):  # named after what happened, like botocore's timeouts
    """The call's deadline passed (or would pass) before a DynamoDB request or back-off could
    finish; the request was not sent. Answered as "storage unavailable"."""


def current() -> float | None:
    """The current deadline (``time.monotonic()`` seconds), or ``None`` outside a call."""
    return _deadline.get()


def remaining() -> float | None:
    """Seconds left before the deadline (may be negative), or ``None`` outside a call."""
    at = _deadline.get()
    return None if at is None else at - time.monotonic()


@contextmanager
def bound(seconds: float) -> Iterator[float]:
    """Run the block under a deadline ``seconds`` from now, or the outer one if that is earlier;
    yields the deadline in effect."""
    at = time.monotonic() + seconds
    outer = _deadline.get()
    if outer is not None and outer < at:
        at = outer
    token = _deadline.set(at)
    try:
        yield at
    finally:
        _deadline.reset(token)


@contextmanager
def adopt(at: float | None) -> Iterator[None]:
    """Run the block under the deadline ``at`` taken from another thread (``None``: none)."""
    token = _deadline.set(at)
    try:
        yield
    finally:
        _deadline.reset(token)


def check(what: str = "the next request") -> None:
    """Raise :class:`DeadlineExceeded` when no time is left for ``what``."""
    left = remaining()
    if left is not None and left <= MIN_READ_TIMEOUT_SECONDS:
        raise DeadlineExceeded(f"the call's deadline passed before {what}")


def sleep(seconds: float) -> None:
    """``time.sleep(seconds)`` for a back-off, unless it would end past the deadline (then
    :class:`DeadlineExceeded` at once: sleeping only to give up afterwards helps nobody)."""
    left = remaining()
    if left is not None and seconds >= left - MIN_READ_TIMEOUT_SECONDS:
        raise DeadlineExceeded(f"a {seconds:.3f} s back-off would end past the call's deadline")
    time.sleep(seconds)


# -- botocore ------------------------------------------------------------------------------------
_RETRYABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionConflictException",
        "InternalServerError",
        "ServiceUnavailable",
        "LimitExceededException",
    }
)


def _before_call(**_: Any) -> None:
    """Before a request is even built: none without time left."""
    check("the request was built")


def _before_send(request: Any, **_: Any) -> None:
    """Per attempt: refuse to send without time left, and cap the read timeout to what is left
    (botocore honours ``context['read_timeout']`` per request)."""
    left = remaining()
    if left is None:
        return
    if left <= MIN_READ_TIMEOUT_SECONDS:
        raise DeadlineExceeded("the call's deadline passed before the request was sent")
    context = getattr(request, "context", None)
    if context is None:
        return
    configured = context.get("read_timeout")
    if configured is None:
        config = context.get("client_config")
        configured = getattr(config, "read_timeout", None)
    if configured is None or left < configured:
        context["read_timeout"] = left


def _retry_gate(
    attempts: int, response: Any = None, caught_exception: Any = None, request_dict: Any = None, **_: Any
) -> None:
    """Before botocore sleeps to retry a failed attempt: give up now when the longest back-off
    of standard retry mode (``2 ** (attempts - 1)`` s, capped at 20) would end past the
    deadline. Returns ``None`` in every other case, so botocore's own handler decides."""
    left = remaining()
    if left is None or isinstance(caught_exception, DeadlineExceeded):
        return
    failed = caught_exception is not None
    if not failed and response is not None:
        http, parsed = response
        code = ((parsed or {}).get("Error") or {}).get("Code") if isinstance(parsed, dict) else None
        failed = getattr(http, "status_code", 200) >= 500 or code in _RETRYABLE_CODES
    if not failed:
        return
    config = ((request_dict or {}).get("context") or {}).get("client_config")
    most = ((getattr(config, "retries", None) or {}).get("total_max_attempts")) if config is not None else None
    if most is not None and attempts >= most:
        return  # no retry left anyway: botocore raises the attempt's own error
    longest = min(2 ** max(attempts - 1, 0), 20)
    if longest >= left - MIN_READ_TIMEOUT_SECONDS:
        raise DeadlineExceeded("a retry would end past the call's deadline") from (
            caught_exception if isinstance(caught_exception, BaseException) else None
        )
    return


def install(client: Any) -> None:
    """Hook the deadline into ``client`` (a botocore DynamoDB client); once per client."""
    events = client.meta.events
    if getattr(client, "_jentrix_deadline", False):
        return
    events.register_first("before-call.dynamodb", _before_call)
    events.register_first("before-send.dynamodb", _before_send)
    events.register_first("needs-retry.dynamodb", _retry_gate)
    client._jentrix_deadline = True  # noqa: SLF001
