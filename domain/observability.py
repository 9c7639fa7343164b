"""Logs, traces and metrics for a tool call (Powertools Logger, Tracer, Metrics).

* **Logger** — structured JSON on stderr (never stdout: on stdio that carries the protocol).
  One ``tool call`` line per call with the tool, the principal's user and token ids, the
  outcome (``OK`` or the envelope code) and the latency; the correlation id is the API Gateway
  request id when the call came through the gateway (:func:`bind_request`), else a fresh one.
  Never a secret, an argument or a body.
* **Tracer** — one subsegment per tool call (``## tool <name>``) and per DynamoDB transaction
  (``## transact``). Only on Lambda (``LAMBDA_TASK_ROOT`` set, not ``sam local``, not
  ``POWERTOOLS_TRACE_DISABLED``): elsewhere :func:`subsegment` is a no-op and the X-Ray SDK is
  never imported. botocore is not patched (no subsegment per request, no patching cost at init).
* **Metrics** — CloudWatch embedded metric format on stdout, only on Lambda (or with
  ``JENTRIX_METRICS=1``): ``ToolCalls`` and ``ToolLatency`` (dimension ``tool``), ``ToolErrors``
  (dimension ``code``: the envelope code), and ``ColdStart`` once per process (emitted by the
  Lambda entry). Namespace ``POWERTOOLS_METRICS_NAMESPACE`` (``jentrix``).

Imports of the Powertools tracer and metrics modules happen on first use, so paths that do not
use them (the CLI, the stdio adapter, uvicorn) do not pay for them.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator
from typing import Any

from aws_lambda_powertools import Logger

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("jentrix_request_id", default=None)


def logger(service: str) -> Logger:
    """A Powertools JSON logger on stderr."""
    return Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME") or service, stream=sys.stderr)


def bind_request(request_id: str | None) -> contextvars.Token[str | None]:
    """Make ``request_id`` (API Gateway's ``requestContext.requestId``) the correlation id of the
    calls made in this context."""
    return _request_id.set(request_id or None)


def request_id() -> str | None:
    return _request_id.get()


def on_lambda() -> bool:
    return bool(os.environ.get("LAMBDA_TASK_ROOT")) and not os.environ.get("AWS_SAM_LOCAL")


# -- tracing ------------------------------------------------------------------------------------
class _Tracing:
    def __init__(self) -> None:
        self._tracer: Any = None
        self._resolved = False

    def install(self, tracer: Any) -> None:
        """Use ``tracer`` (a Powertools ``Tracer``; tests pass one with a recording provider)."""
        self._tracer, self._resolved = tracer, True

    def reset(self) -> None:
        self._tracer, self._resolved = None, False

    def tracer(self) -> Any:
        if not self._resolved:
            self._resolved = True
            disabled = os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() in ("1", "true")
            if on_lambda() and not disabled:
                from aws_lambda_powertools import Tracer

                self._tracer = Tracer(
                    service=os.environ.get("POWERTOOLS_SERVICE_NAME") or "jentrix-mcp", auto_patch=False
                )
        return self._tracer


TRACING = _Tracing()


@contextlib.contextmanager
def subsegment(name: str, **annotations: str | int | bool) -> Iterator[Any]:
    """An X-Ray subsegment ``## <name>`` with annotations, or nothing off Lambda."""
    tracer = TRACING.tracer()
    if tracer is None:
        yield None
        return
    with tracer.provider.in_subsegment(name=f"## {name}") as sub:
        for key, value in annotations.items():
            sub.put_annotation(key=key, value=value)
        yield sub


# -- metrics ------------------------------------------------------------------------------------
def metrics_enabled() -> bool:
    return on_lambda() or os.environ.get("JENTRIX_METRICS", "") in ("1", "true")


def _emit(dimensions: dict[str, str], *metrics: tuple[str, str, float]) -> None:
    """One CloudWatch EMF document (printed to stdout, where Lambda's log stream carries it):
    ``metrics`` as ``(name, unit, value)``, all under ``dimensions`` plus ``service``."""
    from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "jentrix"
    service = os.environ.get("POWERTOOLS_SERVICE_NAME") or "jentrix-mcp"
    document = EphemeralMetrics(namespace=namespace, service=service)
    for key, value in dimensions.items():
        document.add_dimension(name=key, value=value)
    for name, unit, amount in metrics:
        document.add_metric(name=name, unit=MetricUnit(unit), value=amount)
    document.flush_metrics()


def record_call(tool: str, outcome: str, latency_ms: float) -> None:
    """The metrics of one tool call (``outcome`` is ``OK`` or the envelope code): ``ToolCalls``
    and ``ToolLatency`` by tool in one EMF document (two documents cost ~125 µs a call, one ~58),
    and ``ToolErrors`` by code in a second one for a failed call."""
    if not metrics_enabled():
        return
    _emit({"tool": tool}, ("ToolCalls", "Count", 1), ("ToolLatency", "Milliseconds", round(latency_ms, 3)))
    if outcome != "OK":
        _emit({"code": outcome}, ("ToolErrors", "Count", 1))


def record_cold_start(function_name: str) -> None:
    if metrics_enabled():
        _emit({"function_name": function_name}, ("ColdStart", "Count", 1))


def _transaction_span(attempt: int) -> Any:
    return subsegment("transact", attempt=attempt)


def _install_store_tracing() -> None:
    from domain.store import db

    db.trace_commits(_transaction_span)


_install_store_tracing()
