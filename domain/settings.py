"""Runtime settings, read from the environment once per process.

| variable | default | meaning |
| --- | --- | --- |
| ``JENTRIX_TABLE`` | ``jentrix`` | the single application table |
| ``JENTRIX_IDEMPOTENCY_TABLE`` | ``jentrix-idempotency`` | Powertools idempotency records |
| ``JENTRIX_DYNAMODB_ENDPOINT`` | unset (AWS) | e.g. ``http://127.0.0.1:8000`` for DynamoDB Local |
| ``AWS_REGION`` | ``us-east-1`` | region of the table |
| ``JENTRIX_RATE_LIMIT_PER_MINUTE`` | ``120`` | tool calls per token per minute window |
| ``JENTRIX_RATE_SYNC_EVERY`` | ``10`` on Lambda, else ``1`` | k: calls a warm environment admits from memory between adds to the shared window count; ``1`` is the exact window (domain/ratelimit.py) |
| ``JENTRIX_RATE_SYNC_SECONDS`` | ``5`` | the longest a deferred window keeps admitted calls unadded |
| ``JENTRIX_RATE_RESERVE`` | ``10`` | exact window only: the most numbers one add takes from the shared count for this process's next calls; ``1`` adds once per call (domain/ratelimit.py) |
| ``JENTRIX_TOKEN_CACHE_SECONDS`` | ``5`` | how long a warm process trusts a verified PAT |
| ``JENTRIX_CALL_BUDGET_MS`` | ``25000`` | the time a keyed call's idempotency record may stay in progress |
| ``JENTRIX_CALL_DEADLINE_MS`` | ``25000`` | the deadline of one call, all its DynamoDB requests included (on Lambda also the invocation's remaining time less 2 s) |
| ``JENTRIX_ALLOWED_ORIGINS`` | loopback origins | comma list of browser origins allowed to POST |
| ``JENTRIX_DYNAMODB_CONNECT_TIMEOUT`` | ``2`` | seconds to open a connection to DynamoDB |
| ``JENTRIX_DYNAMODB_READ_TIMEOUT`` | ``5`` | seconds to wait for DynamoDB's answer |
| ``JENTRIX_DYNAMODB_MAX_ATTEMPTS`` | ``3`` | attempts per DynamoDB request, the first included |
| ``JENTRIX_ARTIFACT_BUCKET`` | ``jentrix-artifacts`` | the S3 bucket of uploads (``pending/``) and stored objects (``objects/``) |
| ``JENTRIX_S3_ENDPOINT`` | unset (AWS) | e.g. ``http://127.0.0.1:9000`` for the local moto server |
| ``JENTRIX_UPLOAD_MAX_BYTES`` | ``26214400`` (25 MiB) | the largest size an upload grant accepts |
| ``JENTRIX_UPLOAD_TYPES`` | see ``DEFAULT_UPLOAD_TYPES`` | comma list of content types an upload grant accepts |
| ``JENTRIX_UPLOAD_GRANT_SECONDS`` | ``900`` | lifetime of a grant and of its presigned PUT (capped at 900 s) |
| ``JENTRIX_DOWNLOAD_URL_SECONDS`` | ``300`` | lifetime of a presigned download URL |
| ``JENTRIX_S3_VERIFY_BODY`` | ``auto`` | ``auto``: hash the stored bytes when HeadObject returns no SHA-256 (emulators); ``never`` |
| ``JENTRIX_BASE_PATH`` | empty | a custom domain mapping's base path (template ``BasePath``; functions/lambda_handler.py) |
| ``JENTRIX_REQUIRE_USAGE_KEY`` | ``true`` | the authorizer refuses tokens without a usage-plan key (``false`` only under ``sam local``) |
| ``JENTRIX_METRICS`` | unset | emit EMF metrics off Lambda too (domain/observability.py) |

The three DynamoDB numbers apply to both clients (PynamoDB's and boto3's). With the defaults
one request gives up after at most 3 x (2 + 5) s plus 3 s of retry back-off = 24 s, under the
29 s Lambda timeout in template.yaml (tests/test_storage_faults.py checks the sum). A call that
makes several requests is bounded as a whole by ``JENTRIX_CALL_DEADLINE_MS``
(domain/store/deadline.py): each request's read timeout is capped to the time left.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


# Content types an upload grant accepts unless JENTRIX_UPLOAD_TYPES says otherwise.
DEFAULT_UPLOAD_TYPES: tuple[str, ...] = (
    "text/plain",
    "text/markdown",
    "text/csv",
    "text/x-diff",
    "text/x-patch",
    "application/json",
    "application/x-ndjson",
    "application/pdf",
    "application/zip",
    "application/gzip",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
)
MAX_GRANT_SECONDS = 900  # a presigned PUT lives at most 15 minutes


def _types(name: str) -> tuple[str, ...]:
    raw = os.environ.get(name)
    if not raw:
        return DEFAULT_UPLOAD_TYPES
    return tuple(t.strip().lower() for t in raw.split(",") if t.strip())


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    return float(raw) if raw not in (None, "") else default


@dataclass
class Settings:
    table: str = field(default_factory=lambda: os.environ.get("JENTRIX_TABLE", "jentrix"))
    idempotency_table: str = field(
        default_factory=lambda: os.environ.get("JENTRIX_IDEMPOTENCY_TABLE", "jentrix-idempotency")
    )
    endpoint: str | None = field(default_factory=lambda: os.environ.get("JENTRIX_DYNAMODB_ENDPOINT") or None)
    region: str = field(
        default_factory=lambda: os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    )
    rate_limit_per_minute: int = field(default_factory=lambda: _int("JENTRIX_RATE_LIMIT_PER_MINUTE", 120))
    rate_sync_every: int = field(
        default_factory=lambda: max(
            1, _int("JENTRIX_RATE_SYNC_EVERY", 10 if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") else 1)
        )
    )
    rate_sync_seconds: float = field(default_factory=lambda: _float("JENTRIX_RATE_SYNC_SECONDS", 5.0))
    rate_reserve: int = field(default_factory=lambda: max(1, _int("JENTRIX_RATE_RESERVE", 10)))
    token_cache_seconds: int = field(default_factory=lambda: _int("JENTRIX_TOKEN_CACHE_SECONDS", 5))
    call_budget_ms: int = field(default_factory=lambda: _int("JENTRIX_CALL_BUDGET_MS", 25000))
    call_deadline_ms: int = field(default_factory=lambda: max(100, _int("JENTRIX_CALL_DEADLINE_MS", 25000)))
    dynamodb_connect_timeout: float = field(default_factory=lambda: _float("JENTRIX_DYNAMODB_CONNECT_TIMEOUT", 2.0))
    dynamodb_read_timeout: float = field(default_factory=lambda: _float("JENTRIX_DYNAMODB_READ_TIMEOUT", 5.0))
    dynamodb_max_attempts: int = field(default_factory=lambda: max(1, _int("JENTRIX_DYNAMODB_MAX_ATTEMPTS", 3)))
    allowed_origins: tuple[str, ...] = field(
        default_factory=lambda: tuple(
            o.strip() for o in os.environ.get("JENTRIX_ALLOWED_ORIGINS", "").split(",") if o.strip()
        )
    )
    artifact_bucket: str = field(
        default_factory=lambda: os.environ.get("JENTRIX_ARTIFACT_BUCKET") or "jentrix-artifacts"
    )
    s3_endpoint: str | None = field(default_factory=lambda: os.environ.get("JENTRIX_S3_ENDPOINT") or None)
    upload_max_bytes: int = field(default_factory=lambda: _int("JENTRIX_UPLOAD_MAX_BYTES", 25 * 1024 * 1024))
    upload_types: tuple[str, ...] = field(default_factory=lambda: _types("JENTRIX_UPLOAD_TYPES"))
    upload_grant_seconds: int = field(
        default_factory=lambda: max(1, min(MAX_GRANT_SECONDS, _int("JENTRIX_UPLOAD_GRANT_SECONDS", MAX_GRANT_SECONDS)))
    )
    download_url_seconds: int = field(
        default_factory=lambda: max(1, min(3600, _int("JENTRIX_DOWNLOAD_URL_SECONDS", 300)))
    )
    s3_verify_body: str = field(default_factory=lambda: os.environ.get("JENTRIX_S3_VERIFY_BODY") or "auto")


settings = Settings()


def reload() -> Settings:
    """Re-read the environment (tests and the dev stack change it after import)."""
    settings.__dict__.update(Settings().__dict__)  # in place: modules hold a reference to it
    return settings
