"""JSON-RPC 2.0 for both transports: error codes, the envelope rules, error objects, encoding.

One module, used by the HTTP protocol layer (:mod:`functions.protocol`) and the stdio framing
(:mod:`functions.stdio.framing`), so the two transports judge a message the same way
(JSON-RPC 2.0 §4-5; MCP 2025-11-25 "Base protocol"):

* a value that is not an object (arrays included: batches are not served), a wrong ``jsonrpc``,
  an id that is neither a string nor an integer, a method that is not a string -> ``-32600``,
  carrying the id when the id itself is usable;
* an object with ``result`` or ``error`` and an id, but no method -> a *response* (the
  client's answer to a request the server sent, e.g. stdio ``roots/list``);
* a method and an id -> a *request*; a method and no id -> a *notification*.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_core import PydanticSerializationError, to_json

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022


def error_response(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response object."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": err}


def valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


Kind = Literal["request", "notification", "response", "invalid"]


@dataclass(frozen=True)
class Envelope:
    """What a decoded message is: ``message`` for valid ones, ``reply`` (an error response) for invalid ones."""

    kind: Kind
    message: dict[str, Any] | None = None
    reply: dict[str, Any] | None = None


def inspect(value: Any, *, what: str = "message") -> Envelope:
    """Apply the envelope rules of the module docstring to one decoded JSON value."""
    if not isinstance(value, dict):
        shape = (
            "a batch (JSON array); send one message at a time"
            if isinstance(value, list)
            else f"a JSON {type(value).__name__}, not an object"
        )
        return Envelope(
            "invalid", reply=error_response(None, INVALID_REQUEST, f"Invalid request: the {what} holds {shape}.")
        )
    has_id = "id" in value
    id_ = value.get("id")
    id_ok = valid_id(id_)
    echo = id_ if id_ok else None
    if value.get("jsonrpc") != "2.0":
        return Envelope(
            "invalid", reply=error_response(echo, INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0".')
        )
    if "method" not in value:
        if has_id and ("result" in value or "error" in value):
            if id_ok or (id_ is None and "error" in value):
                return Envelope("response", message=value)
            return Envelope(
                "invalid",
                reply=error_response(
                    None, INVALID_REQUEST, "Invalid request: a response id must be a string or an integer."
                ),
            )
        return Envelope("invalid", reply=error_response(echo, INVALID_REQUEST, 'Invalid request: "method" is missing.'))
    if not isinstance(value["method"], str):
        return Envelope(
            "invalid", reply=error_response(echo, INVALID_REQUEST, 'Invalid request: "method" must be a string.')
        )
    if not has_id:
        return Envelope("notification", message=value)
    if not id_ok:
        return Envelope(
            "invalid",
            reply=error_response(None, INVALID_REQUEST, 'Invalid request: "id" must be a string or an integer.'),
        )
    return Envelope("request", message=value)


def encode(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON (RFC 8259) of a message: the bytes a transport sends.

    Written by pydantic-core's serializer (``pydantic_core.to_json``, Rust; ~3x the standard
    library's speed on a tool result, and every reply passes here). Its output equals
    ``json.dumps(message, separators=(",", ":"), ensure_ascii=False)`` byte for byte except in
    the spelling of some float exponents (``1e-7`` for ``1e-07``: the same number;
    tests/test_protocol_http.py compares the two). A lone surrogate echoed from a request (valid
    as a JSON escape, not as UTF-8) falls back to ASCII escapes instead of failing the reply."""
    try:
        return to_json(message)
    except PydanticSerializationError:
        return json.dumps(message, separators=(",", ":")).encode("ascii")


def dumps(value: Any) -> str:
    """:func:`encode` as text (a tool result's JSON text block). A lone surrogate is kept as
    the standard library keeps it, so :func:`encode` escapes it when the reply is written."""
    try:
        return to_json(value).decode("utf-8")
    except PydanticSerializationError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
