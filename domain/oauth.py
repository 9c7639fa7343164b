"""OAuth 2.1 grants, codes and tokens on the single table (docs/oauth.md).

The authorization server's storage and rules, free of HTTP: the web function
(:mod:`functions.web`) turns requests into these calls, and the MCP function only ever calls
:func:`load_access` (through :class:`domain.auth.OAuthVerifier`), one GetItem per cache miss.

Lifetimes (each a module constant):

* authorization code: :data:`CODE_SECONDS` (60 s), single use; a replayed code revokes the grant
  its first exchange created (RFC 6749 §4.1.2).
* access token ``tmo_…``: :data:`ACCESS_SECONDS` (1 h), opaque, checksummed
  (:mod:`domain.tokens`), stored as its SHA-256 only, bound to one audience (RFC 8707).
* refresh token: rotated on every use; the grant it belongs to slides to
  :data:`GRANT_IDLE_SECONDS` (30 days) after each use, never past :data:`GRANT_MAX_SECONDS`
  (365 days) after consent. Presenting a rotated refresh token again revokes the grant.
* dynamically registered client: :data:`CLIENT_IDLE_SECONDS` (30 days) after registration or
  its last token exchange; DynamoDB's TTL removes unused ones.

Errors are :class:`OAuthError` carrying the RFC 6749 error code the endpoint answers with.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import DoesNotExist

from domain import clock, tokens
from domain.store import db, keys
from domain.store.models import (
    OAuthAccessRow,
    OAuthClientDocumentRow,
    OAuthClientRow,
    OAuthCodeRow,
    OAuthGrantRow,
    OAuthRefreshRow,
)

CODE_SECONDS = 60
ACCESS_SECONDS = 3600
GRANT_IDLE_SECONDS = 30 * 86400
GRANT_MAX_SECONDS = 365 * 86400
CLIENT_IDLE_SECONDS = 30 * 86400
TTL_GRACE_SECONDS = 86400  # DynamoDB's TTL deletes late; every read checks the expiry itself
SCOPES = ("read", "write", "admin")


class OAuthError(Exception):
    """A refusal in RFC 6749 terms: ``error`` is the code (``invalid_grant``, ...), ``status`` the HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _iso_in(seconds: int, now_ms: int | None = None) -> str:
    return clock.iso((now_ms if now_ms is not None else clock.now_ms()) + seconds * 1000)


def _expired(iso: str | None, now_ms: int | None = None) -> bool:
    if not iso:
        return False
    return clock.parse_iso(iso) <= (now_ms if now_ms is not None else clock.now_ms())


def _ttl(iso: str) -> int:
    return clock.parse_iso(iso) // 1000 + TTL_GRACE_SECONDS


def parse_scopes(raw: str | None, default: tuple[str, ...] = ("read", "write")) -> list[str]:
    """The requested scopes as a list in ladder order. Empty -> ``default``.

    Raises:
        OAuthError: ``invalid_scope`` for a scope we do not offer (``offline_access`` included:
            refresh tokens come with every grant)."""
    asked = [s for s in (raw or "").split() if s]
    unknown = sorted(set(asked) - set(SCOPES))
    if unknown:
        raise OAuthError("invalid_scope", f"unknown scope {unknown[0]!r}; this server offers {' '.join(SCOPES)}")
    chosen = set(asked) or set(default)
    return [s for s in SCOPES if s in chosen]


# -- clients (dynamic registration) ---------------------------------------------------------
def register_client(client_name: str, redirect_uris: list[str], application_type: str = "native") -> OAuthClientRow:
    """Store a public client (no secret ever); it expires :data:`CLIENT_IDLE_SECONDS` after its last use."""
    client_id = "dcr_" + secrets.token_urlsafe(18)
    expires = _iso_in(CLIENT_IDLE_SECONDS)
    row = OAuthClientRow(
        *keys.oauth_client(client_id),
        clientId=client_id,
        clientName=client_name,
        redirectUris=redirect_uris,
        applicationType=application_type,
        createdAt=clock.now_iso(),
        expiresAt=expires,
        ttl=_ttl(expires),
    )
    row.save()
    return row


def registered_client(client_id: str) -> OAuthClientRow | None:
    """The registered client, or ``None`` when unknown or expired."""
    try:
        row = OAuthClientRow.get(*keys.oauth_client(client_id), consistent_read=True)
    except DoesNotExist:
        return None
    return None if _expired(row.expiresAt) else row


def _touch_client(client_id: str) -> None:
    if not client_id.startswith("dcr_"):
        return
    expires = _iso_in(CLIENT_IDLE_SECONDS)
    try:
        OAuthClientRow(*keys.oauth_client(client_id)).update(
            actions=[OAuthClientRow.expiresAt.set(expires), OAuthClientRow.ttl.set(_ttl(expires))],
            condition=OAuthClientRow.PK.exists(),
        )
    except Exception:  # noqa: BLE001 - a missed touch only shortens the client's idle life
        pass


# -- codes -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Consent:
    """What the user agreed to on the consent page."""

    user_id: str
    client_id: str
    client_name: str
    redirect_uri: str
    code_challenge: str
    scopes: list[str]
    workspace_id: str | None
    resource: str


def issue_code(consent: Consent) -> str:
    """A fresh authorization code (shown once in the redirect; stored as its digest)."""
    code = secrets.token_urlsafe(32)
    expires = _iso_in(CODE_SECONDS)
    OAuthCodeRow(
        *keys.oauth_code(digest(code)),
        userId=consent.user_id,
        clientId=consent.client_id,
        clientName=consent.client_name,
        redirectUri=consent.redirect_uri,
        codeChallenge=consent.code_challenge,
        scopes=consent.scopes,
        workspaceId=consent.workspace_id,
        resource=consent.resource,
        expiresAt=expires,
        ttl=_ttl(expires),
    ).save()
    return code


@dataclass(frozen=True)
class TokenSet:
    access_token: str
    refresh_token: str
    expires_in: int
    scope: str
    grant_id: str

    def body(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": self.refresh_token,
            "scope": self.scope,
        }


def s256(verifier: str) -> str:
    """The PKCE S256 challenge of ``verifier`` (RFC 7636 §4.2): BASE64URL(SHA256(ASCII(verifier)))
    without padding. Written out rather than taken from Authlib, whose install pulls
    ``cryptography`` (+21 MB in the one artifact every function ships); tests/test_oauth_tokens.py
    checks it against Authlib's ``create_s256_code_challenge``."""
    import base64

    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


def exchange_code(
    *, code: str, client_id: str, redirect_uri: str, code_verifier: str, resource: str | None, expected_resource: str
) -> TokenSet:
    """Trade a code for tokens (RFC 6749 §4.1.3 with PKCE).

    Raises:
        OAuthError: ``invalid_grant`` for an unknown, expired, reused or mismatched code, or a
            wrong verifier; ``invalid_target`` for a resource other than ours."""
    if resource is not None and resource != expected_resource:
        raise OAuthError("invalid_target", f"this server issues tokens for {expected_resource} only")
    key = keys.oauth_code(digest(code))
    try:
        row = OAuthCodeRow.get(*key, consistent_read=True)
    except DoesNotExist:
        raise OAuthError("invalid_grant", "the authorization code is unknown or expired") from None
    if row.usedAt:
        if row.grantId:
            revoke_grant(row.userId, row.grantId, reason="authorization code replayed")
        raise OAuthError("invalid_grant", "the authorization code was already used; the tokens it gave are revoked")
    if _expired(row.expiresAt):
        raise OAuthError("invalid_grant", "the authorization code has expired")
    if row.clientId != client_id or row.redirectUri != redirect_uri:
        raise OAuthError("invalid_grant", "client_id or redirect_uri differ from the authorization request")
    if row.resource != expected_resource:
        raise OAuthError("invalid_target", "the code was issued for another resource")
    if not code_verifier or not secrets.compare_digest(s256(code_verifier), row.codeChallenge):
        raise OAuthError("invalid_grant", "the PKCE code_verifier does not match the code_challenge")
    grant_id = "grt_" + secrets.token_urlsafe(12)
    try:
        row.update(
            actions=[OAuthCodeRow.usedAt.set(clock.now_iso()), OAuthCodeRow.grantId.set(grant_id)],
            condition=OAuthCodeRow.usedAt.does_not_exist(),
        )
    except Exception as exc:
        if "ConditionalCheckFailed" in repr(exc):
            raise OAuthError("invalid_grant", "the authorization code was already used") from None
        raise
    now = clock.now_ms()
    grant = OAuthGrantRow(
        *keys.oauth_grant(row.userId, grant_id),
        grantId=grant_id,
        userId=row.userId,
        clientId=row.clientId,
        clientName=row.clientName,
        clientHost=host_of(row.redirectUri),
        scopes=list(row.scopes),
        workspaceId=row.workspaceId,
        resource=row.resource,
        createdAt=clock.iso(now),
        lastUsedAt=clock.iso(now),
        expiresAt=_iso_in(GRANT_IDLE_SECONDS, now),
        absoluteExpiresAt=_iso_in(GRANT_MAX_SECONDS, now),
        accessDigests=[],
    )
    tokens_ = _mint_pair(grant, now, first=True)
    _touch_client(row.clientId)
    return tokens_


def host_of(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or url


def _mint_pair(grant: OAuthGrantRow, now: int, *, first: bool, used_refresh: OAuthRefreshRow | None = None) -> TokenSet:
    """Write a new access + refresh token for ``grant`` in one transaction (the grant row updated with it)."""
    access = tokens.mint("tmo_")
    refresh = tokens.mint("tmo_")
    access_expires_ms = now + ACCESS_SECONDS * 1000
    grant_expires = min(now + GRANT_IDLE_SECONDS * 1000, clock.parse_iso(grant.absoluteExpiresAt))
    live = [d for d in grant.accessDigests or [] if int(d.split(" ")[1]) > now]
    live.append(f"{digest(access)} {access_expires_ms}")
    grant.accessDigests = live
    grant.expiresAt = clock.iso(grant_expires)
    grant.lastUsedAt = clock.iso(now)
    grant.ttl = _ttl(grant.expiresAt)
    access_row = OAuthAccessRow(
        *keys.oauth_access(digest(access)),
        grantId=grant.grantId,
        userId=grant.userId,
        clientId=grant.clientId,
        clientName=grant.clientName,
        scopes=list(grant.scopes),
        workspaceId=grant.workspaceId,
        audience=grant.resource,
        expiresAt=clock.iso(access_expires_ms),
        grantExpiresAt=grant.expiresAt,
        ttl=_ttl(clock.iso(access_expires_ms)),
    )
    refresh_row = OAuthRefreshRow(
        *keys.oauth_refresh(digest(refresh)),
        grantId=grant.grantId,
        userId=grant.userId,
        clientId=grant.clientId,
        ttl=_ttl(grant.expiresAt),
    )

    def build(tx: Any) -> None:
        if first:
            tx.save(grant, condition=OAuthGrantRow.PK.does_not_exist())
        else:
            tx.save(grant, condition=OAuthGrantRow.revokedAt.does_not_exist())
        tx.save(access_row)
        tx.save(refresh_row)
        if used_refresh is not None:
            tx.update(
                used_refresh,
                actions=[OAuthRefreshRow.usedAt.set(clock.iso(now))],
                condition=OAuthRefreshRow.usedAt.does_not_exist(),
            )

    try:
        db.transact(build)
    except db.ConditionFailed:
        raise OAuthError("invalid_grant", "the grant was revoked or the refresh token was already used") from None
    return TokenSet(access, refresh, ACCESS_SECONDS, " ".join(grant.scopes), grant.grantId)


def refresh(*, refresh_token: str, client_id: str, resource: str | None, expected_resource: str) -> TokenSet:
    """Rotate a refresh token: a new access and refresh token; the presented one is spent.

    Raises:
        OAuthError: ``invalid_grant`` for an unknown or expired token, a grant that is revoked
            or expired, another client's token, or a reused (already rotated) token, which also
            revokes the whole grant."""
    if resource is not None and resource != expected_resource:
        raise OAuthError("invalid_target", f"this server issues tokens for {expected_resource} only")
    try:
        row = OAuthRefreshRow.get(*keys.oauth_refresh(digest(refresh_token)), consistent_read=True)
    except DoesNotExist:
        raise OAuthError("invalid_grant", "the refresh token is unknown or expired") from None
    if row.clientId != client_id:
        raise OAuthError("invalid_grant", "the refresh token belongs to another client")
    if row.usedAt:
        revoke_grant(row.userId, row.grantId, reason="refresh token reused")
        raise OAuthError("invalid_grant", "the refresh token was already used; the grant is revoked, sign in again")
    grant = grant_of(row.userId, row.grantId)
    if grant is None or grant.revokedAt or _expired(grant.expiresAt):
        raise OAuthError("invalid_grant", "the grant is revoked or expired; sign in again")
    try:
        tokens_ = _mint_pair(grant, clock.now_ms(), first=False, used_refresh=row)
    except OAuthError:
        fresh = OAuthRefreshRow.get(*keys.oauth_refresh(digest(refresh_token)), consistent_read=True)
        if fresh.usedAt:  # lost a race with another use of the same token: that is reuse too
            revoke_grant(row.userId, row.grantId, reason="refresh token reused")
        raise
    _touch_client(client_id)
    return tokens_


def grant_of(user_id: str, grant_id: str) -> OAuthGrantRow | None:
    try:
        return OAuthGrantRow.get(*keys.oauth_grant(user_id, grant_id), consistent_read=True)
    except DoesNotExist:
        return None


def list_grants(user_id: str) -> list[OAuthGrantRow]:
    """The user's live grants (connected apps), newest first. One Query."""
    now = clock.now_ms()
    rows = OAuthGrantRow.query(
        keys.user_partition(user_id), OAuthGrantRow.SK.startswith(keys.OAUTH_GRANTS_PREFIX), consistent_read=True
    )
    live = [r for r in rows if isinstance(r, OAuthGrantRow) and not r.revokedAt and not _expired(r.expiresAt, now)]
    return sorted(live, key=lambda r: r.createdAt, reverse=True)


def revoke_grant(user_id: str, grant_id: str, *, reason: str = "revoked by the user") -> bool:
    """Revoke a grant: mark it and delete its live access tokens in one transaction, so no call
    made after this returns is served with them (past a warm process's few-second cache).
    Returns False when there was no such live grant."""
    grant = grant_of(user_id, grant_id)
    if grant is None or grant.revokedAt:
        return False
    digests = [d.split(" ")[0] for d in grant.accessDigests or []][-90:]

    def build(tx: Any) -> None:
        tx.update(
            grant,
            actions=[
                OAuthGrantRow.revokedAt.set(clock.now_iso()),
                OAuthGrantRow.revokedReason.set(reason),
                OAuthGrantRow.accessDigests.set([]),
            ],
        )
        for d in digests:
            tx.delete(OAuthAccessRow(*keys.oauth_access(d)))

    db.transact(build)
    tokens.revoked()  # this process's token caches forget the grant's access tokens
    return True


def revoke_token(token: str, client_id: str | None = None) -> None:
    """RFC 7009: revoke the grant behind an access or refresh token. Unknown tokens are not an
    error (the endpoint answers 200 either way)."""
    d = digest(token)
    for model, key in ((OAuthAccessRow, keys.oauth_access(d)), (OAuthRefreshRow, keys.oauth_refresh(d))):
        try:
            row = model.get(*key, consistent_read=True)
        except DoesNotExist:
            continue
        if client_id and row.clientId != client_id:
            return
        revoke_grant(row.userId, row.grantId, reason="revoked by the client")
        return


def load_access(secret: str) -> OAuthAccessRow | None:
    """The live access-token row of ``secret`` (one GetItem), or ``None`` (unknown, revoked, expired)."""
    try:
        row = OAuthAccessRow.get(*keys.oauth_access(digest(secret)), consistent_read=True)
    except DoesNotExist:
        return None
    return None if _expired(row.expiresAt) else row


# -- client ID metadata documents: the kept copies (functions/web/cimd.py) ---------------------
@dataclass(frozen=True)
class KeptDocument:
    """A client's metadata document as last fetched: ``document`` (JSON text), and until when it
    is fresh and usable when stale (epoch milliseconds)."""

    document: str
    fresh_until_ms: int
    stale_until_ms: int


def kept_client_document(url: str) -> KeptDocument | None:
    """The kept copy of the document at ``url``, or ``None``. One consistent GetItem."""
    try:
        row = OAuthClientDocumentRow.get(*keys.oauth_client_document(_sha(url)), consistent_read=True)
    except DoesNotExist:
        return None
    return KeptDocument(row.document, clock.parse_iso(row.freshUntil), clock.parse_iso(row.staleUntil))


def keep_client_document(url: str, document: str, *, fetched_ms: int, fresh_until_ms: int, stale_until_ms: int) -> None:
    """Keep a good copy of the document at ``url`` (the item expires by TTL at ``stale_until_ms``)."""
    OAuthClientDocumentRow(
        *keys.oauth_client_document(_sha(url)),
        url=url,
        document=document,
        fetchedAt=clock.iso(fetched_ms),
        freshUntil=clock.iso(fresh_until_ms),
        staleUntil=clock.iso(stale_until_ms),
        ttl=stale_until_ms // 1000,
    ).save()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
