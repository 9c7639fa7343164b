"""Timestamps: ISO-8601 UTC with fixed millisecond precision and ``Z``.

``updatedAt`` doubles as the optimistic-concurrency token (docs/data-model.md, "Optimistic concurrency"): clients echo it
back byte for byte, so it is always rendered the same way, and :func:`next_stamp` makes it
strictly increasing per item even when two writes land in the same millisecond or a Lambda's
clock runs behind the previous writer's.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

_ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def now_ms() -> int:
    """Wall-clock milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def iso(ms: int) -> str:
    """Render epoch milliseconds as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def parse_iso(value: str) -> int:
    """Parse any ISO-8601 timestamp with a zone (``Z`` or offset) into epoch milliseconds.

    Raises:
        ValueError: not a timestamp, or a naive one (no zone).
    """
    dt = datetime.fromisoformat(value)
    if dt.tzinfo is None:
        raise ValueError("timestamp has no time zone")
    return int(dt.timestamp() * 1000)


def is_stamp(value: str) -> bool:
    """Whether ``value`` has the exact shape this server writes for ``updatedAt``."""
    return bool(_ISO_MS.match(value))


def next_stamp(previous: str | None, now: int | None = None) -> str:
    """The next ``updatedAt`` for an item: ``max(now, previous + 1 ms)``."""
    current = now_ms() if now is None else now
    if previous:
        current = max(current, parse_iso(previous) + 1)
    return iso(current)


def now_iso() -> str:
    return iso(now_ms())
