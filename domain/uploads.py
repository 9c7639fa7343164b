"""Upload grants: the one way bytes get into object storage (docs/artifacts.md).

A grant is a domain operation, served over HTTP by ``POST /api/artifacts/upload-grant``
(functions/http_app.py) and called directly by the CLI and the in-process stdio adapter:

1. :func:`issue_grant` validates the declared file (name, content type from an allow-list,
   size up to ``settings.upload_max_bytes``, SHA-256) and writes a single-use grant item
   expiring with its presigned PUT (at most 15 minutes); the answer carries ``uploadGrantId``,
   ``uploadUrl``, the ``headers`` the client must send, ``expiresAt`` and ``objectKey``. The
   object key is the server's (``pending/<ws>/<grantId>``), never the client's file name.
2. The client PUTs the bytes. Real S3 refuses other bytes, length or type (they are signed).
3. The consuming call (attach_artifact, a task attachment) runs :func:`check_upload` (the grant
   is the caller's, unexpired, unused, for this purpose; HeadObject equals the grant), then
   :func:`finalize` (server-side copy to the final key), then puts :func:`claim` in its own
   transaction: the grant goes ISSUED -> USED exactly once, so of two calls racing with one
   grant only one commits. A retry of the *same* call (same user, same arguments: the same
   ``call_hash``) after a lost answer finds the grant USED by itself and answers what it stored.
4. After the commit, :func:`release_pending` deletes the pending object (best effort; the bucket's
   lifecycle rule removes ``pending/`` objects never attached).

Failures are :class:`~domain.errors.ToolError` envelopes (INVALID_INPUT naming the field,
NOT_FOUND for a grant that is not the caller's or does not exist, CONFLICT for a grant used by
another call). Requests: issue = 1 TransactWriteItems (grant + membership guard); check = 1
GetItem + 1 HeadObject (+ 1 GetObject where the store keeps no checksum).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from domain import clock, errors, ids, objects
from domain.auth import Principal
from domain.errors import ErrorCode, ToolError
from domain.settings import settings
from domain.store import db, keys, members
from domain.store.models import Row, UploadGrantRow

Purpose = Literal["artifact", "attachment"]
PURPOSES: tuple[str, ...] = ("artifact", "attachment")
GRANT_PATH = "/api/artifacts/upload-grant"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
FILE_NAME_MAX = 255
RETAIN_MS = 24 * 3600 * 1000  # a grant item outlives its expiry by a day (ttl), then DynamoDB drops it


@dataclass(frozen=True)
class Grant:
    """A grant as :func:`check_upload` read it. ``replay`` is set when the grant was already used
    by this same call (``call_hash``): the caller answers with ``entity_id`` instead of storing."""

    grant_id: str
    workspace_id: str
    user_id: str
    purpose: str
    file_name: str
    content_type: str
    size: int
    sha256: str
    object_key: str
    expires_at: str
    expires_at_ms: int
    state: str
    used_by: str | None = None
    entity_id: str | None = None
    replay: bool = False

    @classmethod
    def of(cls, row: UploadGrantRow, *, replay: bool = False) -> Grant:
        return cls(
            grant_id=row.grantId,
            workspace_id=row.workspaceId,
            user_id=row.userId,
            purpose=row.purpose,
            file_name=row.fileName,
            content_type=row.contentType,
            size=int(row.size),
            sha256=row.sha256,
            object_key=row.objectKey,
            expires_at=row.expiresAt,
            expires_at_ms=int(row.expiresAtMs),
            state=row.state,
            used_by=row.usedBy,
            entity_id=row.entityId,
            replay=replay,
        )


def call_hash(user_id: str, tool: str, arguments: dict[str, Any]) -> str:
    """The digest that identifies one consuming call: who, which operation, which arguments."""
    canonical = json.dumps(
        {"user": user_id, "tool": tool, "args": arguments}, sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


# -- validation ----------------------------------------------------------------------------------
def _file_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise errors.invalid("fileName", "is required (the file's name, 1-255 characters)")
    if len(value) > FILE_NAME_MAX:
        raise errors.invalid("fileName", f"is longer than {FILE_NAME_MAX} characters")
    if any(c in value for c in "/\\") or any(not c.isprintable() for c in value) or value in (".", ".."):
        raise errors.invalid(
            "fileName",
            "must be a bare file name: no path separators or control characters",
            "Send the base name only (report.md); the server chooses where the object is stored.",
        )
    return value


def _content_type(value: Any) -> str:
    if not isinstance(value, str) or not _MEDIA_TYPE.fullmatch(value.strip().lower()):
        raise errors.invalid("contentType", "must be a media type such as text/markdown (no parameters)")
    kind = value.strip().lower()
    if kind not in settings.upload_types:
        raise errors.invalid(
            "contentType", f"{kind} is not an accepted upload type", f"Accepted: {', '.join(settings.upload_types)}."
        )
    return kind


def _size(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise errors.invalid("size", "must be the file's size in bytes (an integer)")
    if value < 1:
        raise errors.invalid("size", "must be at least 1 byte (empty files are not stored)")
    if value > settings.upload_max_bytes:
        raise errors.invalid(
            "size",
            f"{value} bytes is over the upload limit of {settings.upload_max_bytes} bytes",
            "Split the file, compress it, or link it with EXTERNAL_URL storage instead.",
        )
    return value


def _sha256(value: Any) -> str:
    if not isinstance(value, str) or not _SHA256.fullmatch(value.strip().lower()):
        raise errors.invalid(
            "sha256", "must be the file's SHA-256 as 64 hexadecimal digits", "Compute it with sha256sum FILE."
        )
    return value.strip().lower()


def _purpose(value: Any) -> str:
    if value not in PURPOSES:
        raise errors.invalid("purpose", f"must be one of {', '.join(PURPOSES)}")
    return cast(str, value)


# -- issuing -------------------------------------------------------------------------------------
def issue_grant(
    principal: Principal,
    *,
    workspace_id: str,
    purpose: Purpose,
    file_name: str,
    content_type: str,
    size: int,
    sha256: str,
) -> dict[str, Any]:
    """Validate the declared file, record a single-use grant and presign its PUT.

    Returns ``{uploadGrantId, uploadUrl, method, headers, expiresAt, objectKey, maxBytes}``.

    Raises:
        ToolError: FORBIDDEN (a read-only token), NOT_FOUND (a workspace the caller is not a
            member of, or outside the token's pin), INVALID_INPUT naming the field.
    """
    if not principal.allows("write"):
        raise errors.forbidden(
            f"Upload grants need the 'write' scope; this token has {', '.join(principal.scopes) or 'none'}.",
            "Use a token minted with the write scope.",
        )
    if not isinstance(workspace_id, str) or ids.parse_workspace(workspace_id) is None:
        raise errors.not_found("workspace", str(workspace_id))
    if principal.workspace_pin and principal.workspace_pin != workspace_id:
        raise errors.not_found("workspace", workspace_id)
    purpose_ = _purpose(purpose)
    name = _file_name(file_name)
    kind = _content_type(content_type)
    length = _size(size)
    digest = _sha256(sha256)
    grant_id = ids.new_upload_grant_id(workspace_id)
    now = clock.now_ms()
    expires_ms = now + settings.upload_grant_seconds * 1000
    key = objects.pending_key(workspace_id, grant_id)
    row = UploadGrantRow(
        *keys.upload_grant(grant_id),
        grantId=grant_id,
        workspaceId=workspace_id,
        userId=principal.user_id,
        purpose=purpose_,
        fileName=name,
        contentType=kind,
        size=length,
        sha256=digest,
        objectKey=key,
        createdAt=clock.iso(now),
        expiresAt=clock.iso(expires_ms),
        expiresAtMs=expires_ms,
        state="ISSUED",
        ttl=(expires_ms + RETAIN_MS) // 1000,
    )

    def build(tx: Any) -> None:
        tx.save(row, condition=Row.PK.does_not_exist())
        members.guard(tx, workspace_id, principal.user_id)

    try:
        db.transact(build)
    except db.ConditionFailed:
        raise errors.not_found("workspace", workspace_id) from None
    url, headers = objects.presign_put(
        key, content_type=kind, size=length, sha256_hex=digest, expires_in=settings.upload_grant_seconds
    )
    return {
        "uploadGrantId": grant_id,
        "uploadUrl": url,
        "method": "PUT",
        "headers": headers,
        "expiresAt": row.expiresAt,
        "objectKey": key,
        "maxBytes": settings.upload_max_bytes,
    }


# -- consuming -----------------------------------------------------------------------------------
def _grant_error(message: str, hint: str, code: ErrorCode = ErrorCode.INVALID_INPUT) -> ToolError:
    if code is ErrorCode.INVALID_INPUT:
        return errors.invalid("uploadGrantId", message, hint)
    return ToolError(code, f"uploadGrantId: {message}", hint)


def get(grant_id: str) -> UploadGrantRow | None:
    try:
        return UploadGrantRow.get(*keys.upload_grant(grant_id), consistent_read=True)
    except UploadGrantRow.DoesNotExist:
        return None


def check_upload(
    grant_id: str, *, user_id: str, purpose: Purpose, call_hash: str | None = None, workspace_id: str | None = None
) -> Grant:
    """Read the grant and compare the uploaded object with it (1 GetItem + 1 HeadObject).

    A grant USED by this same call (``call_hash`` equal to the one that consumed it) comes back
    with ``replay=True`` and no object check: the caller answers with ``entity_id``.

    Raises:
        ToolError: NOT_FOUND (no such grant, another user's, another workspace's);
            INVALID_INPUT (another purpose, expired, never uploaded, other size, type or bytes);
            CONFLICT (already used by another call).
    """
    ref = ids.parse_upload_grant(grant_id) if isinstance(grant_id, str) else None
    row = get(grant_id) if ref is not None else None
    if row is None or row.userId != user_id or (workspace_id is not None and row.workspaceId != workspace_id):
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"No upload grant with id {grant_id!r} is visible to this credential.",
            f"Ask for a grant with POST {GRANT_PATH} (the same token), upload, then pass its uploadGrantId.",
        )
    if row.state == "USED":
        if call_hash is not None and row.usedBy == call_hash:
            return Grant.of(row, replay=True)
        raise _grant_error(
            "this grant was already used by another call (grants are single-use)",
            f"Ask for a new grant with POST {GRANT_PATH} and upload again.",
            ErrorCode.CONFLICT,
        )
    if row.purpose != purpose:
        raise _grant_error(
            f"this grant is for {row.purpose} uploads, not {purpose}s", f"Ask for a grant with purpose {purpose!r}."
        )
    if int(row.expiresAtMs) <= clock.now_ms():
        raise _grant_error(
            f"this grant expired at {row.expiresAt}", f"Ask for a new grant with POST {GRANT_PATH} and upload again."
        )
    grant = Grant.of(row)
    try:
        verify_object(grant)
    except Exception:
        # A twin of this very call (a client retry racing its first try) may have committed and
        # deleted the pending object between the read above and the object check: the grant,
        # read again, tells a replay (or another call's use) from a real upload problem.
        now = get(grant_id)
        if now is not None and now.state == "USED":
            if call_hash is not None and now.usedBy == call_hash:
                return Grant.of(now, replay=True)
            raise _grant_error(
                "this grant was already used by another call (grants are single-use)",
                f"Ask for a new grant with POST {GRANT_PATH} and upload again.",
                ErrorCode.CONFLICT,
            ) from None
        raise
    return grant


def verify_object(grant: Grant) -> None:
    """HeadObject (``ChecksumMode=ENABLED``) must equal the grant: size, content type, SHA-256.

    Where the store returns no checksum (the local emulator does not keep one) and
    ``settings.s3_verify_body`` is ``auto``, the stored bytes are hashed instead (bounded by the
    grant's size), so other bytes of the same length are refused there too.
    """
    stored = objects.head(grant.object_key)
    again = f"PUT the file to the grant's uploadUrl with exactly its headers, or ask for a new grant with POST {GRANT_PATH}."
    if stored is None:
        raise _grant_error("nothing was uploaded for this grant", again)
    if stored.size != grant.size:
        raise _grant_error(f"the uploaded object is {stored.size} bytes; the grant declared {grant.size}", again)
    if stored.content_type.split(";")[0].strip().lower() != grant.content_type:
        raise _grant_error(
            f"the uploaded object's type is {stored.content_type or 'unset'}; the grant declared {grant.content_type}",
            again,
        )
    if stored.sha256_b64 is not None:
        same = stored.sha256_b64 == objects.sha256_b64(grant.sha256)
    elif settings.s3_verify_body == "auto":
        same = objects.digest(grant.object_key, grant.size) == grant.sha256
    else:
        same = True
    if not same:
        raise _grant_error("the uploaded bytes do not match the grant's SHA-256", again)


def claim(tx: Any, grant: Grant, *, call_hash: str, entity_id: str | None = None) -> None:
    """Add the grant's single-use consumption to the caller's transaction.

    The update commits only while the grant is ISSUED and unexpired; a failed condition returns
    the stored grant (``ALL_OLD``) for :func:`claim_failed`.
    """
    now = clock.now_ms()
    actions = [
        UploadGrantRow.state.set("USED"),
        UploadGrantRow.usedBy.set(call_hash),
        UploadGrantRow.usedAt.set(clock.iso(now)),
    ]
    if entity_id is not None:
        actions.append(UploadGrantRow.entityId.set(entity_id))
    tx.update(
        UploadGrantRow(*keys.upload_grant(grant.grant_id)),
        actions=actions,
        condition=(UploadGrantRow.state == "ISSUED") & (UploadGrantRow.expiresAtMs > now),
        return_values="ALL_OLD",
    )


def claim_failed(failure: db.ConditionFailed, grant: Grant, *, call_hash: str) -> str | None:
    """After a transaction carrying :func:`claim` failed: the entity id when the grant was used by
    this same call (answer it), ``None`` when the grant was not what failed.

    Raises:
        ToolError: CONFLICT when another call used it; INVALID_INPUT when it expired meanwhile.
    """
    pk, sk = keys.upload_grant(grant.grant_id)
    if not failure.hit(pk, sk):
        return None
    stored = failure.item(pk, sk)
    row: UploadGrantRow | None = UploadGrantRow.from_raw_data(stored) if stored else None
    if row is not None and row.state == "USED" and row.usedBy == call_hash and row.entityId:
        return row.entityId
    if row is not None and row.state == "USED":
        raise _grant_error(
            "this grant was used by another call while this one ran (grants are single-use)",
            f"Ask for a new grant with POST {GRANT_PATH} and upload again.",
            ErrorCode.CONFLICT,
        )
    raise _grant_error(
        "this grant expired before it was used", f"Ask for a new grant with POST {GRANT_PATH} and upload again."
    )


def finalize(grant: Grant, final_key: str, *, call_hash: str | None = None) -> str | None:
    """Server-side copy of the pending object to ``final_key`` (idempotent: when the pending
    object is already gone but the final one exists, there is nothing to do).

    When the pending object is gone because a racing call consumed the grant meanwhile (and
    deleted it after its commit), returns that call's entity id if it was this same call
    (``call_hash``), else raises CONFLICT; ``None`` when the copy is in place.
    """
    from botocore.exceptions import ClientError

    try:
        objects.copy(grant.object_key, final_key)
    except ClientError:
        if objects.head(final_key) is not None:
            return None
        row = get(grant.grant_id)
        if row is not None and row.state == "USED":
            if call_hash is not None and row.usedBy == call_hash and row.entityId:
                return row.entityId
            raise _grant_error(
                "this grant was used by another call while this one ran (grants are single-use)",
                f"Ask for a new grant with POST {GRANT_PATH} and upload again.",
                ErrorCode.CONFLICT,
            ) from None
        raise
    return None


def release_pending(grant: Grant) -> None:
    """Delete the pending object after its consumption committed (best effort)."""
    try:
        objects.delete(grant.object_key)
    except Exception:  # noqa: BLE001 - the lifecycle rule removes what this leaves
        pass


def discard(final_key: str) -> None:
    """Delete a final copy whose record did not commit (best effort)."""
    try:
        objects.delete(final_key)
    except Exception:  # noqa: BLE001 - an orphan copy costs storage, never correctness
        pass
