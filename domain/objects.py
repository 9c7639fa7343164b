"""Object storage: the S3 client, presigned URLs, HeadObject and server-side copies.

Bytes never pass through the server on the request path: clients PUT to a presigned URL
(:func:`presign_put`) and GET from one (:func:`presign_get`). The PUT signs ``Content-Type``,
``Content-Length`` and ``x-amz-checksum-sha256`` (``X-Amz-SignedHeaders`` lists them), so real
S3 refuses an upload whose type, length or bytes differ from the grant. The client is SigV4
(``signature_version="s3v4"``), path-style (the local moto server has no virtual hosts), built
on first use and then reused by the process (:func:`client`; :func:`reset` after the settings
change).

Keys: uploads land under ``pending/<ws>/<grantId>`` (:func:`pending_key`), stored objects live
under ``objects/<ws>/<kind>/<id>`` (:func:`final_key`); the lifecycle rule of the bucket removes
``pending/`` objects never attached (template.yaml).
"""

from __future__ import annotations

import base64
import hashlib
import threading
from dataclasses import dataclass
from typing import Any

from domain.settings import settings

_client: Any = None
_lock = threading.Lock()

PENDING_PREFIX = "pending/"
OBJECTS_PREFIX = "objects/"


def _build() -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=settings.s3_endpoint,
        region_name=settings.region,
        config=Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            # only the checksum we sign: no SDK-added CRC parameters in presigned URLs
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            connect_timeout=settings.dynamodb_connect_timeout,
            read_timeout=settings.dynamodb_read_timeout,
            retries={"total_max_attempts": settings.dynamodb_max_attempts, "mode": "standard"},
        ),
    )


def client() -> Any:
    """The process's S3 client (built once, on first use)."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = _build()
    return _client


def reset() -> None:
    """Forget the client (the next call builds one from the current settings)."""
    global _client
    with _lock:
        _client = None


def ensure_bucket() -> None:
    """Create the bucket if it is absent (the local stack and the tests; AWS has the template's)."""
    s3 = client()
    try:
        s3.head_bucket(Bucket=settings.artifact_bucket)
    except Exception:  # noqa: BLE001 - absent (404) or unknown: try to create it
        s3.create_bucket(Bucket=settings.artifact_bucket)


def pending_key(workspace_id: str, grant_id: str) -> str:
    return f"{PENDING_PREFIX}{workspace_id}/{grant_id}"


def final_key(workspace_id: str, kind: str, entity_id: str) -> str:
    return f"{OBJECTS_PREFIX}{workspace_id}/{kind}/{entity_id}"


def sha256_b64(hex_digest: str) -> str:
    """The base64 form S3 uses for a SHA-256 given as 64 hex digits."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode("ascii")


def presign_put(
    key: str, *, content_type: str, size: int, sha256_hex: str, expires_in: int
) -> tuple[str, dict[str, str]]:
    """A presigned PUT for exactly these bytes: ``(url, headers the client must send)``."""
    checksum = sha256_b64(sha256_hex)
    url = client().generate_presigned_url(
        "put_object",
        Params={
            "Bucket": settings.artifact_bucket,
            "Key": key,
            "ContentType": content_type,
            "ContentLength": size,
            "ChecksumSHA256": checksum,
        },
        ExpiresIn=expires_in,
        HttpMethod="PUT",
    )
    headers = {"Content-Type": content_type, "Content-Length": str(size), "x-amz-checksum-sha256": checksum}
    return url, headers


def presign_get(key: str, *, file_name: str | None = None, expires_in: int | None = None) -> str:
    """A presigned GET (default lifetime ``settings.download_url_seconds``, about 5 minutes)."""
    params: dict[str, Any] = {"Bucket": settings.artifact_bucket, "Key": key}
    if file_name:
        safe = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in file_name)
        params["ResponseContentDisposition"] = f'attachment; filename="{safe}"'
    url: str = client().generate_presigned_url(
        "get_object", Params=params, ExpiresIn=expires_in or settings.download_url_seconds
    )
    return url


@dataclass(frozen=True)
class Stored:
    """What HeadObject says about an object (``sha256_b64`` is None when the store keeps none)."""

    size: int
    content_type: str
    sha256_b64: str | None


class AccessDenied(RuntimeError):
    """S3 refused to say whether an object exists: HeadObject answered 403 and so did the
    ListObjectsV2 that tells a missing key from a forbidden one (the function's role lacks
    ``s3:ListBucket`` on the key's prefix), or the key is listed but may not be read. A
    configuration fault of the role, never "not uploaded yet"; the pipeline answers INTERNAL."""


_MISSING = ("404", "NoSuchKey", "NotFound")
_DENIED = ("403", "AccessDenied", "Forbidden")


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code"))


def head(key: str) -> Stored | None:
    """HeadObject with ``ChecksumMode=ENABLED``; ``None`` when there is no such object.

    S3 answers a missing key with 404 only to a caller allowed to list the bucket, else 403; a
    403 is settled by :func:`listed` (one ListObjectsV2, only then), so an upload that has not
    arrived yet reads as absent whichever answer S3 gave.

    Raises:
        AccessDenied: S3 refused both the read and the listing, or lists the key but refuses it.
    """
    from botocore.exceptions import ClientError

    try:
        out = client().head_object(Bucket=settings.artifact_bucket, Key=key, ChecksumMode="ENABLED")
    except ClientError as exc:
        code = _code(exc)
        if code in _MISSING:
            return None
        if code in _DENIED:
            if not listed(key):
                return None
            raise AccessDenied(
                f"S3 refused HeadObject on {key}, an object that exists: the function's role may not read it."
            ) from exc
        raise
    return Stored(
        size=int(out["ContentLength"]),
        content_type=str(out.get("ContentType") or ""),
        sha256_b64=out.get("ChecksumSHA256"),
    )


def listed(key: str) -> bool:
    """Whether ``key`` exists, by ListObjectsV2 (``Prefix=key``, ``MaxKeys=1``: the key itself sorts first).

    Needs ``s3:ListBucket`` on the bucket for that prefix; template.yaml grants it for
    ``pending/*`` and ``objects/*`` only (McpFunctionRole, ``UploadPrefixListing``).

    Raises:
        AccessDenied: the listing was refused too.
    """
    from botocore.exceptions import ClientError

    try:
        out = client().list_objects_v2(Bucket=settings.artifact_bucket, Prefix=key, MaxKeys=1)
    except ClientError as exc:
        if _code(exc) in _DENIED:
            raise AccessDenied(
                f"S3 refused HeadObject and ListObjectsV2 for {key}: the function's role lacks s3:ListBucket on this prefix, "
                "so a missing upload cannot be told from a forbidden one (template.yaml, McpFunctionRole)."
            ) from exc
        raise
    return any(item.get("Key") == key for item in out.get("Contents", []))


def digest(key: str, limit: int) -> str | None:
    """SHA-256 (hex) of the object's bytes, read in chunks, at most ``limit`` bytes (else None).

    Only for stores whose HeadObject carries no checksum (the local emulator): real S3 verified
    the signed checksum at PUT time and returns it.
    """
    from botocore.exceptions import ClientError

    try:
        body = client().get_object(Bucket=settings.artifact_bucket, Key=key)["Body"]
    except ClientError:
        return None
    h, seen = hashlib.sha256(), 0
    for chunk in body.iter_chunks(1 << 16):
        seen += len(chunk)
        if seen > limit:
            return None
        h.update(chunk)
    return h.hexdigest()


def copy(source_key: str, dest_key: str) -> None:
    """Server-side copy within the bucket (metadata and content type kept)."""
    bucket = settings.artifact_bucket
    client().copy_object(
        Bucket=bucket, Key=dest_key, CopySource={"Bucket": bucket, "Key": source_key}, MetadataDirective="COPY"
    )


def delete(key: str) -> None:
    """Delete an object (deleting an absent one succeeds, as S3 does)."""
    client().delete_object(Bucket=settings.artifact_bucket, Key=key)


def workspace_prefixes(workspace_id: str) -> tuple[str, str]:
    """Where a workspace's objects live: its final objects and its pending uploads."""
    return f"{OBJECTS_PREFIX}{workspace_id}/", f"{PENDING_PREFIX}{workspace_id}/"


def delete_prefix(prefix: str) -> int:
    """Delete every object under ``prefix`` (ListObjectsV2 pages + DeleteObjects, 1000 a request);
    the count deleted."""
    s3 = client()
    count = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=settings.artifact_bucket, Prefix=prefix):
        found = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if found:
            s3.delete_objects(Bucket=settings.artifact_bucket, Delete={"Objects": found, "Quiet": True})
            count += len(found)
    return count
