"""Line framing for the stdio transport: one JSON-RPC message per ``\\n``-terminated line.

:class:`LineReader` reads the binary stream in fixed-size chunks and never holds more than the
configured limit plus one chunk: a line that outgrows the limit is discarded as it arrives
(``drained``) until its newline, then reported as one :class:`Oversized` item, and reading goes
on with the next line. Memory therefore stays bounded whatever a line's length.

:func:`classify` turns one line into what the server does with it:

* not UTF-8, not JSON (``NaN``/``Infinity`` included), too deep or too long -> ``-32700`` with
  ``id: null``;
* a JSON value that is not an object (arrays included: batches are not served), a wrong
  ``jsonrpc``, an id that is neither a string nor an integer, a method that is not a string ->
  ``-32600`` (carrying the id when the id itself is usable);
* an object with ``result`` or ``error`` and an id, but no method -> the client's answer to a
  request the server sent (``roots/list``); never an error;
* a request (method + id) or a notification (method, no id).

Blank lines (only whitespace) are skipped without a reply: they carry no message at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from functions.jsonrpc import PARSE_ERROR, encode, error_response, inspect, valid_id  # noqa: F401 - encode, valid_id re-exported

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Oversized:
    """A line longer than the limit; ``size`` is its full length in bytes (newline excluded)."""

    size: int


class LineReader:
    """Yield each line (``bytearray`` without its newline) or :class:`Oversized`, until EOF.

    ``read(n)`` returns up to ``n`` bytes and ``b""`` at end of input (``os.read`` on a pipe,
    ``BytesIO.read``). A last line without a trailing newline is still yielded.
    """

    def __init__(
        self, read: Callable[[int], bytes], limit: int = DEFAULT_MAX_LINE_BYTES, chunk: int = CHUNK_BYTES
    ) -> None:
        if limit < 1:
            raise ValueError("the line limit must be at least one byte")
        self._read = read
        self.limit = limit
        self.chunk = chunk

    def __iter__(self) -> Iterator[bytearray | Oversized]:
        limit = self.limit
        buf = bytearray()
        draining = False
        drained = 0
        while True:
            data = self._read(self.chunk)
            if not data:
                break
            view = memoryview(data)
            start = 0
            while True:
                nl = data.find(b"\n", start)
                end = len(data) if nl < 0 else nl
                piece = view[start:end]
                if draining:
                    drained += len(piece)
                elif len(buf) + len(piece) > limit:
                    # Over the limit: forget what was kept and only count from here on.
                    draining = True
                    drained = len(buf) + len(piece)
                    buf = bytearray()
                else:
                    buf += piece
                if nl < 0:
                    break
                if draining:
                    yield Oversized(drained)
                    draining = False
                    drained = 0
                else:
                    line, buf = buf, bytearray()
                    yield line
                start = nl + 1
        if draining:
            yield Oversized(drained)
        elif buf:
            yield buf


Kind = Literal["request", "notification", "response", "invalid", "blank"]


@dataclass(frozen=True)
class Frame:
    """One classified line: ``message`` for requests, notifications and responses; ``reply``
    (an error response to write) for invalid lines."""

    kind: Kind
    message: dict[str, Any] | None = None
    reply: dict[str, Any] | None = None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def oversized_frame(item: Oversized, limit: int) -> Frame:
    return Frame(
        "invalid",
        reply=error_response(
            None,
            PARSE_ERROR,
            f"Parse error: the line is {item.size} bytes, over the {limit}-byte limit; it was discarded.",
            {"maxLineBytes": limit, "lineBytes": item.size},
        ),
    )


def classify(raw: bytes | bytearray) -> Frame:
    """Decide what one line is (see the module docstring for the rules)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Frame(
            "invalid",
            reply=error_response(None, PARSE_ERROR, f"Parse error: the line is not valid UTF-8 (byte {exc.start})."),
        )
    if not text.strip():
        return Frame("blank")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return Frame(
            "invalid",
            reply=error_response(None, PARSE_ERROR, f"Parse error: the line is not valid JSON ({_short(exc)})."),
        )
    envelope = inspect(value, what="line")
    return Frame(envelope.kind, message=envelope.message, reply=envelope.reply)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."
