"""The log filter: every record our loggers write loses its secrets before a handler formats it.

:class:`RedactingFilter` runs :func:`domain.redaction.redact` over a record's rendered message,
its ``extra`` fields and its exception message. The redaction module (its ``regex`` patterns and
the detect-secrets plugins) is imported by the first record that needs a scan, not with this
module: the pipeline installs the filter at import, and the per-call line of a tool call (a
lowercase message with server-made fields, :func:`_plain`) never needs one, so a cold start
does not pay for the detectors it will not use.
"""

from __future__ import annotations

import logging
import re
from typing import Any


def _redact(text: str) -> str:
    from domain.redaction import redact_text  # deferred: see the module docstring

    return redact_text(text)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _redact(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub(v) for v in value)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return _redact(repr(value) if isinstance(value, BaseException) else str(value))


_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
# ``extra`` fields whose values the server makes itself (tool names from the registry, envelope
# codes, ids it minted, API Gateway request ids, numbers): never caller text, never scanned.
SERVER_FIELDS = frozenset({"tool", "outcome", "code", "principal", "token_id", "correlation_id", "latency_ms"})
# Lowercase letters and spaces only: no rule can match such text (every secret shape needs a
# digit, a capital, ``_``, ``-``, ``:``, ``=`` or ``/``), so a message like "tool call" is not scanned.
_PLAIN_TEXT = re.compile(r"[a-z ]*")


def _plain(record: logging.LogRecord) -> bool:
    """Whether ``record`` holds nothing that could be a secret (the fast path of every call's log line)."""
    if record.args or record.exc_info or not isinstance(record.msg, str) or not _PLAIN_TEXT.fullmatch(record.msg):
        return False
    for name, value in record.__dict__.items():
        if name in _STANDARD or name.startswith("_") or name in SERVER_FIELDS:
            continue
        if isinstance(value, str) and not _PLAIN_TEXT.fullmatch(value):
            return False
        if not isinstance(value, (str, int, float, bool)) and value is not None:
            return False
    return True


class RedactingFilter(logging.Filter):
    """A :class:`logging.Filter` that redacts a record before any handler formats it.

    It renders the message with its arguments and redacts the result, redacts the string values
    of ``extra`` fields (Powertools puts them in the JSON line), and replaces an exception's
    message with a redacted copy (a traceback's frames hold code, its message may hold input).
    It never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:  # the logging API's name
        if _plain(record):  # e.g. the pipeline's per-call "tool call" line: nothing to scan
            return True
        if isinstance(record.msg, dict) and not record.args:  # Powertools logs dict messages as JSON
            record.msg = _scrub(record.msg)
        else:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a broken format string (any error): keep what there is, redacted
                message = f"{record.msg!r} {record.args!r}"
            record.msg, record.args = _redact(message), ()
        for name, value in list(record.__dict__.items()):
            if name not in _STANDARD and not name.startswith("_"):
                record.__dict__[name] = _scrub(value)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text = str(exc)
            cleaned = _redact(text)
            if cleaned != text:
                record.exc_info = (
                    record.exc_info[0],
                    _RedactedError(f"{type(exc).__name__}: {cleaned}"),
                    record.exc_info[2],
                )
                record.exc_text = None
        return True


class _RedactedError(Exception):
    """Stands in for an exception whose message held a secret."""


_FILTER = RedactingFilter()
# Every logger we write through: the pipeline's Powertools logger (its service name), the
# transports', the search component's.
LOGGERS = (
    "jentrix-mcp",
    "jentrix.http",
    "jentrix.stdio",
    "jentrix.search",
    "domain.search.text",
    "domain.search.writes",
    "jentrix.cli",
)


def install(*loggers: logging.Logger | str) -> RedactingFilter:
    """Attach the shared filter to ``loggers`` (default: ours) and to their handlers.

    A filter on a logger sees only records logged through that very logger, not its children's,
    so each logger we write through is named; handlers also get it, which covers children that
    propagate into them. Idempotent."""
    targets = loggers or LOGGERS
    for item in targets:
        logger = logging.getLogger(item) if isinstance(item, str) else item
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
    return _FILTER
