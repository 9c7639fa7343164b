"""Cursor pagination over Queries: opaque cursors that carry an ``ExclusiveStartKey``.

A cursor is url-safe base64 of ``{"k": <list kind>, "l": <last evaluated key>}``. The kind
names the list (and its subject), so a cursor of one list is refused by another; the key is
checked against the exact key shape the list's Query uses before DynamoDB sees it, so a forged
or mangled cursor is :class:`InvalidCursor` (INVALID_INPUT at the tool boundary), never a
DynamoDB validation error.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from pynamodb.exceptions import QueryError

from domain.store.errors import StoreError
from domain.store.models import Row


class InvalidCursor(StoreError, ValueError):
    """The cursor was not issued by this list (or was altered)."""

    answer = "cursor"


def list_kind(name: str, **filters: Any) -> str:
    """The kind of one list: its name plus a digest of everything that decides which rows it holds.

    Give every filter and subject argument (``None`` for an absent one) in its canonical form, so
    a cursor issued under one filter is refused under another, while arguments that only shape
    a page (its size, concise or detailed rows) are left out and carry over.
    """
    digest = hashlib.sha256(json.dumps(filters, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:20]
    return f"{name}:{digest}"


def encode_cursor(kind: str, last_key: dict[str, Any] | None) -> str | None:
    if not last_key:
        return None
    raw = json.dumps({"k": kind, "l": last_key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_cursor(kind: str, cursor: str | None, key_shape: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The ExclusiveStartKey inside ``cursor``.

    ``key_shape`` maps each key attribute the list's Query expects to a prefix its value must
    start with (the whole partition value for partition keys).

    Raises:
        InvalidCursor: not one of ours for ``kind``, or a key of another shape.
    """
    if cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
        last = data.get("l")
        if data.get("k") != kind or not isinstance(last, dict):
            raise ValueError
        if key_shape is not None:
            if set(last) != set(key_shape):
                raise ValueError
            for name, prefix in key_shape.items():
                value = last[name]
                if (
                    not isinstance(value, dict)
                    or list(value) != ["S"]
                    or not isinstance(value["S"], str)
                    or not value["S"].startswith(prefix)
                ):
                    raise ValueError
        return last
    except (ValueError, UnicodeDecodeError, AttributeError, RecursionError):
        raise InvalidCursor(kind) from None


def row_key(row: Any, index: bool | str = False) -> dict[str, Any]:
    """The ExclusiveStartKey that resumes a Query right after ``row``: base table, GSI1
    (``index=True``) or the GSI named by ``index`` (``"GSI3"``)."""
    key = {"PK": {"S": row.PK}, "SK": {"S": row.SK}}
    if index:
        name = "GSI1" if index is True else index
        key |= {f"{name}PK": {"S": getattr(row, f"{name}PK")}, f"{name}SK": {"S": getattr(row, f"{name}SK")}}
    return key


def take_page(
    result: Any, limit: int, *, index: bool | str = False, max_pages: int | None = None
) -> tuple[list[Any], dict[str, Any] | None]:
    """Up to ``limit`` items of a Query issued with ``Limit = limit + 1``, and the key to resume after them.

    Pages are pulled from ``result.page_iter`` one request at a time and typed through the
    ``kind`` discriminator. Reading one item past the page tells whether more exist, so a list
    whose length is a multiple of the page size ends with a page without a cursor rather than
    an empty last page. With a filter, pages can come back short; ``max_pages`` bounds the
    requests, and the cursor then resumes after what DynamoDB evaluated.

    Raises:
        InvalidCursor: DynamoDB refused the start key taken from a cursor.
    """
    pages = result.page_iter
    rows: list[Any] = []
    fetched = 0
    try:
        while len(rows) <= limit:
            if max_pages is not None and fetched >= max_pages:
                return rows, pages.last_evaluated_key
            try:
                page = next(pages)
            except StopIteration:
                return rows, None
            fetched += 1
            rows.extend(Row.from_raw_data(item) for item in page.get("Items", []))
            if pages.last_evaluated_key is None and len(rows) <= limit:
                return rows, None
    except QueryError as exc:
        if "starting key" in str(exc):
            raise InvalidCursor("start key") from None
        raise
    rows = rows[:limit]
    return rows, row_key(rows[-1], index)
