"""Credentials, scopes and workspace roles (catalog: shared contract, "Bearer auth + scopes").

A personal access token (PAT) is ``tm_`` + 36 random base62 characters + a 6-character CRC32
checksum (:mod:`domain.tokens`); PATs minted before the checksum (``tm_<43 url-safe chars>``) are
still accepted. Only a token's SHA-256 digest is stored (:func:`domain.store.keys.token`); a
token whose shape or checksum is wrong is refused before any read. Verification is pluggable: :data:`VERIFIERS` maps a token prefix
to a verifier, so the OAuth verifier (``tmo_``) slots in beside :class:`PatVerifier`.

Scopes form a ladder, ``read`` < ``write`` < ``admin``: a tool's scope class is satisfied by
that scope or a higher one. A token whose stored scopes are empty has full access (older
tokens were minted that way; rotating them is how their access narrows).
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pynamodb.exceptions import DoesNotExist

from domain import clock, ids, tokens
from domain.settings import settings
from domain.store import db, keys
from domain.store.models import EmailRow, TokenRow, UserRow

Scope = Literal["read", "write", "admin"]
SCOPES: tuple[Scope, ...] = ("read", "write", "admin")
Role = Literal["OWNER", "ADMIN", "MEMBER"]
ROLE_RANK: dict[str, int] = {"MEMBER": 1, "ADMIN": 2, "OWNER": 3}


def effective_scopes(stored: list[str]) -> list[Scope]:
    """Expand stored scopes along the ladder; empty means every scope."""
    if not stored:
        return list(SCOPES)
    top = max(SCOPES.index(s) for s in stored if s in SCOPES)
    return list(SCOPES[: top + 1])


@dataclass(frozen=True)
class Principal:
    """Who is calling: the verified credential, never the secret itself."""

    user_id: str
    token_id: str
    kind: Literal["pat", "oauth", "local"]
    stored_scopes: tuple[str, ...]
    workspace_pin: str | None
    display_name: str | None = None
    emoji: str | None = None
    expires_at: str | None = None
    user_display_name: str | None = None
    scopes: tuple[str, ...] = field(default=())
    holder: Literal["agent", "human"] = (
        "agent"  # who holds the credential (governance: agents' membership changes wait for a human)
    )
    usage_key: str | None = None  # the API Gateway key of the token's usage plan (AWS only; not a secret of the caller)
    audience: str | None = None  # OAuth: the resource (RFC 8707) the token was issued for; checked on every call
    grant_expires_at: str | None = (
        None  # OAuth: when the grant behind the token ends (the access token itself lives 1 h)
    )

    @property
    def human(self) -> bool:
        return self.holder == "human"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", tuple(effective_scopes(list(self.stored_scopes))))

    def allows(self, scope: str) -> bool:
        return scope in self.scopes


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class TokenVerifier(Protocol):
    prefix: str

    def cached(self, secret: str) -> Principal | None: ...

    def verify(self, secret: str) -> Principal | None: ...


class PatVerifier:
    """Looks a PAT up by digest (one GetItem) and caches positive answers for a few seconds."""

    prefix = "tm_"

    def __init__(self) -> None:
        self._cache: dict[str, tuple[float, Principal]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def cached(self, secret: str) -> Principal | None:
        """The principal a recent :meth:`verify` of ``secret`` found, while its cache entry and the
        token itself are unexpired; ``None`` otherwise (no read)."""
        if settings.token_cache_seconds <= 0:
            return None
        with self._lock:
            hit = self._cache.get(digest(secret))
        if hit and hit[0] > time.monotonic() and not _expired(hit[1].expires_at):
            return hit[1]
        return None

    def verify(self, secret: str) -> Principal | None:
        hit = self.cached(secret)
        if hit is not None:
            return hit
        key = digest(secret)
        ttl = settings.token_cache_seconds
        now = time.monotonic()
        principal = self.load(secret)
        if principal is None:
            return None
        if ttl > 0:
            with self._lock:
                if len(self._cache) >= 1024:  # a warm process sees few tokens; drop the stale ones
                    self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                self._cache[key] = (now + ttl, principal)
        return principal

    def load(self, secret: str) -> Principal | None:
        """The principal of ``secret`` from storage (one GetItem), uncached."""
        try:
            row = TokenRow.get(*keys.token(digest(secret)), consistent_read=True)
        except DoesNotExist:
            return None
        if row.revokedAt or _expired(row.expiresAt):
            return None
        return Principal(
            user_id=row.userId,
            token_id=row.tokenId,
            kind="pat",
            stored_scopes=tuple(row.scopes or ()),
            workspace_pin=row.workspaceId,
            display_name=row.displayName,
            emoji=row.emoji,
            expires_at=row.expiresAt,
            holder="human" if row.holder == "human" else "agent",
            usage_key=row.usageKeyValue,
        )


class OAuthVerifier(PatVerifier):
    """Looks an OAuth access token (``tmo_``) up by digest (:func:`domain.oauth.load_access`, one
    GetItem), with the same few-second cache. The principal is an agent's: an OAuth client acts
    for its user the way an agent holding a PAT does (governance, activity ``source: mcp``)."""

    prefix = "tmo_"

    def load(self, secret: str) -> Principal | None:
        from domain import oauth  # the MCP function imports it only when a tmo_ token arrives

        row = oauth.load_access(secret)
        if row is None:
            return None
        return Principal(
            user_id=row.userId,
            token_id=row.grantId,  # rate windows and activity follow the grant across refreshes
            kind="oauth",
            stored_scopes=tuple(row.scopes or ()) or ("read",),
            workspace_pin=row.workspaceId,
            display_name=row.clientName,
            expires_at=row.expiresAt,
            holder="agent",
            audience=row.audience,
            grant_expires_at=row.grantExpiresAt,
        )


def _expired(expires_at: str | None) -> bool:
    if not expires_at:
        return False
    return clock.parse_iso(expires_at) <= clock.now_ms()


PAT_VERIFIER = PatVerifier()
OAUTH_VERIFIER = OAuthVerifier()
db.on_reconfigure(PAT_VERIFIER.clear)
db.on_reconfigure(OAUTH_VERIFIER.clear)
tokens.on_revoked(OAUTH_VERIFIER.clear)
VERIFIERS: list[TokenVerifier] = [OAUTH_VERIFIER, PAT_VERIFIER]  # "tmo_" before "tm_", which is its prefix


def authenticate(secret: str | None) -> Principal | None:
    """Resolve a bearer secret to a principal, or ``None`` (missing, unknown, revoked, expired).

    A secret found in the verifier's warm cache was checked for shape when it was first read, so
    only a cache miss runs the checksum (~4 µs in a loop, ~40 µs inside a real call)."""
    if not secret:
        return None
    for verifier in VERIFIERS:
        if secret.startswith(verifier.prefix):
            hit = verifier.cached(secret)
            if hit is not None:
                return hit
            if tokens.shape(secret) == "malformed":  # a typo or a foreign string: no read
                return None
            return verifier.verify(secret)
    return None


# -- the principal as a Lambda authorizer's context ----------------------------------------
# API Gateway passes the authorizer's context to the function as flat string values; these two
# functions are the only place that encoding is spelled (functions/authorizer.py writes it,
# functions/http_app.py reads it). The function trusts it because only API Gateway can put it in
# the Lambda event; nothing a client sends over HTTP reaches it.
_CTX = "jentrix"


def authorizer_context(principal: Principal) -> dict[str, str]:
    """The principal as API Gateway authorizer context (string values only; never the secret)."""
    return {
        f"{_CTX}UserId": principal.user_id,
        f"{_CTX}TokenId": principal.token_id,
        f"{_CTX}Scopes": ",".join(principal.stored_scopes),
        f"{_CTX}WorkspaceId": principal.workspace_pin or "",
        f"{_CTX}Holder": principal.holder,
        f"{_CTX}ExpiresAt": principal.expires_at or "",
        f"{_CTX}Name": principal.display_name or "",
        f"{_CTX}Emoji": principal.emoji or "",
        f"{_CTX}Kind": principal.kind,
        f"{_CTX}Audience": principal.audience or "",
        f"{_CTX}GrantExpiresAt": principal.grant_expires_at or "",
    }


class MalformedContext(ValueError):
    """An authorizer context this app cannot read (e.g. an expiry that is not an ISO time): the
    transports answer it as a server failure in JSON, never trusting the context."""


def principal_from_context(ctx: dict[str, Any]) -> Principal | None:
    """The principal an authorizer context describes, or ``None`` when it describes none.

    A context whose token has expired since the gateway cached the answer also gives ``None``
    (the caller answers 401): the cache may outlive the expiry, never the other way round.

    Raises:
        MalformedContext: the expiry is present but not a time this app can read."""
    user_id = ctx.get(f"{_CTX}UserId")
    if not user_id:
        return None
    expires_at = str(ctx.get(f"{_CTX}ExpiresAt") or "") or None
    try:
        expired = _expired(expires_at)
    except (ValueError, TypeError, OverflowError) as exc:
        raise MalformedContext(f"the authorizer context's expiry {expires_at!r} is not an ISO-8601 time") from exc
    if expired:
        return None
    return Principal(
        user_id=str(user_id),
        token_id=str(ctx.get(f"{_CTX}TokenId") or ""),
        kind="oauth" if ctx.get(f"{_CTX}Kind") == "oauth" else "pat",
        stored_scopes=tuple(s for s in str(ctx.get(f"{_CTX}Scopes") or "").split(",") if s),
        workspace_pin=str(ctx.get(f"{_CTX}WorkspaceId") or "") or None,
        display_name=str(ctx.get(f"{_CTX}Name") or "") or None,
        emoji=str(ctx.get(f"{_CTX}Emoji") or "") or None,
        expires_at=expires_at,
        holder="human" if ctx.get(f"{_CTX}Holder") == "human" else "agent",
        audience=str(ctx.get(f"{_CTX}Audience") or "") or None,
        grant_expires_at=str(ctx.get(f"{_CTX}GrantExpiresAt") or "") or None,
    )


def mint_pat(
    user_id: str,
    *,
    scopes: list[str] | None = None,
    workspace_id: str | None = None,
    expires_at: str | None = None,
    display_name: str | None = None,
    emoji: str | None = None,
    holder: Literal["agent", "human"] = "agent",
    usage_key: tuple[str, str, str] | None = None,
    token_id: str | None = None,
) -> tuple[str, TokenRow]:
    """Create a PAT for ``user_id``; return ``(secret, row)``. The secret is shown once, never stored.

    ``holder`` says who will hold it: an agent (the default) or a human (``jentrix token create
    --human``); governed tools treat the two differently (docs/governance.md). ``usage_key`` is
    ``(api_key_id, api_key_value, usage_plan_id)`` when the token is for the AWS stack
    (``jentrix token create --aws``): the authorizer returns the value as ``usageIdentifierKey``."""
    if holder not in ("agent", "human"):
        raise ValueError(f"unknown holder {holder!r}; use agent or human")
    for s in scopes or []:
        if s not in SCOPES:
            raise ValueError(f"unknown scope {s!r}; use read, write or admin")
    secret = tokens.mint("tm_")
    token_id = token_id or ids.new_token_id()
    gsi1pk, gsi1sk = keys.user_token(user_id, token_id)
    row = TokenRow(
        *keys.token(digest(secret)),
        tokenId=token_id,
        userId=user_id,
        scopes=list(scopes or []),
        workspaceId=workspace_id,
        displayName=display_name,
        emoji=emoji,
        expiresAt=expires_at,
        holder=holder,
        usageKeyId=usage_key[0] if usage_key else None,
        usageKeyValue=usage_key[1] if usage_key else None,
        usagePlanId=usage_key[2] if usage_key else None,
        createdAt=clock.now_iso(),
        GSI1PK=gsi1pk,
        GSI1SK=gsi1sk,
    )
    row.save()
    return secret, row


def list_tokens(user_id: str) -> list[TokenRow]:
    return [
        r
        for r in TokenRow.gsi1.query(keys.user_partition(user_id), TokenRow.GSI1SK.startswith(keys.TOKENS_PREFIX))
        if isinstance(r, TokenRow)
    ]


def revoke_token(user_id: str, token_id: str) -> bool:
    for row in list_tokens(user_id):
        if row.tokenId == token_id:
            row.update(actions=[TokenRow.revokedAt.set(clock.now_iso())])
            PAT_VERIFIER.clear()
            return True
    return False


class EmailTaken(ValueError):
    """Another user already signs in with this email."""


def create_user(email: str, display_name: str, user_id: str | None = None) -> UserRow:
    """Create a user and its email pointer in one transaction.

    Raises:
        EmailTaken: the email (compared case-insensitively) already belongs to a user.
    """
    uid = user_id or ids.new_user_id()
    row = UserRow(*keys.user_profile(uid), userId=uid, email=email, displayName=display_name, createdAt=clock.now_iso())
    pointer = EmailRow(*keys.email_claim(email), userId=uid)

    def build(tx: Any) -> None:
        tx.save(row, condition=UserRow.PK.does_not_exist())
        tx.save(pointer, condition=EmailRow.PK.does_not_exist())

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(pointer.PK, pointer.SK):
            raise EmailTaken(f"a user with email {email!r} already exists") from None
        raise ValueError(f"user id {uid!r} already exists") from None
    return row


def user_by_id(user_id: str, *, consistent: bool = False) -> UserRow | None:
    """The user's profile row, or ``None`` when there is none. One GetItem."""
    try:
        return UserRow.get(*keys.user_profile(user_id), consistent_read=consistent)
    except DoesNotExist:
        return None


def user_by_email(email: str) -> UserRow | None:
    """The user who signs in with ``email`` (case-insensitive), or ``None``. Two GetItems."""
    try:
        pointer = EmailRow.get(*keys.email_claim(email), consistent_read=True)
        return UserRow.get(*keys.user_profile(pointer.userId), consistent_read=True)
    except DoesNotExist:
        return None
