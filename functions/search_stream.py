"""AWS Lambda entry for the search index repair: the DynamoDB Streams consumer of the table.

Wired to the table's stream (NEW_AND_OLD_IMAGES) by an event source mapping; each batch's pending
markers are re-applied (domain/search/repair.py). Errors propagate, so Lambda retries the batch.
"""

from __future__ import annotations

from typing import Any

from domain.search import repair


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    return repair.from_stream_records(event.get("Records") or [])
