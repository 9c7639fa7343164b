"""Who a browser is: one-time sign-in links (local stacks) and console sessions (docs/oauth.md).

* A sign-in link carries a secret valid for :data:`LINK_SECONDS` (15 min) and one use; only its
  SHA-256 is stored. ``jentrix dev`` prints one for the dev user, ``jentrix signin-link`` for
  any local user. Deployed stacks sign people in through OpenID Connect instead.
* A session is a random cookie value (stored as its digest) with its own CSRF token, valid for
  :data:`SESSION_SECONDS` (12 h) from sign-in; signing out deletes it.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from pynamodb.exceptions import DoesNotExist

from domain import clock
from domain.store import keys
from domain.store.models import OidcStateRow, SigninLinkRow, WebSessionRow

LINK_SECONDS = 15 * 60
SESSION_SECONDS = 12 * 3600
TTL_GRACE_SECONDS = 86400


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def mint_signin_link(user_id: str) -> str:
    """The secret of a new one-time link for ``user_id`` (the URL is ``/console/signin/link?t=<secret>``)."""
    secret = secrets.token_urlsafe(32)
    expires = clock.now_ms() + LINK_SECONDS * 1000
    SigninLinkRow(
        *keys.signin_link(_digest(secret)),
        userId=user_id,
        expiresAt=clock.iso(expires),
        ttl=expires // 1000 + TTL_GRACE_SECONDS,
    ).save()
    return secret


def consume_signin_link(secret: str) -> str | None:
    """The user of a live, unused link, marking it used (conditionally: two clicks, one sign-in); else ``None``."""
    try:
        row = SigninLinkRow.get(*keys.signin_link(_digest(secret)), consistent_read=True)
    except DoesNotExist:
        return None
    if row.usedAt or clock.parse_iso(row.expiresAt) <= clock.now_ms():
        return None
    try:
        row.update(actions=[SigninLinkRow.usedAt.set(clock.now_iso())], condition=SigninLinkRow.usedAt.does_not_exist())
    except Exception as exc:
        if "ConditionalCheckFailed" in repr(exc):
            return None
        raise
    return row.userId


def create_session(user_id: str) -> str:
    """A new session for ``user_id``; returns the cookie value."""
    secret = secrets.token_urlsafe(32)
    now = clock.now_ms()
    expires = now + SESSION_SECONDS * 1000
    WebSessionRow(
        *keys.web_session(_digest(secret)),
        userId=user_id,
        csrf=secrets.token_urlsafe(24),
        createdAt=clock.iso(now),
        expiresAt=clock.iso(expires),
        ttl=expires // 1000 + TTL_GRACE_SECONDS,
    ).save()
    return secret


def load_session(secret: str | None) -> WebSessionRow | None:
    if not secret:
        return None
    try:
        row = WebSessionRow.get(*keys.web_session(_digest(secret)), consistent_read=True)
    except DoesNotExist:
        return None
    return None if clock.parse_iso(row.expiresAt) <= clock.now_ms() else row


def end_session(secret: str | None) -> None:
    if secret:
        WebSessionRow(*keys.web_session(_digest(secret))).delete()


def expire_session_now(secret: str) -> Any:
    """Test and operator helper: make a session expire immediately."""
    WebSessionRow(*keys.web_session(_digest(secret))).update(
        actions=[WebSessionRow.expiresAt.set(clock.iso(clock.now_ms() - 1000))]
    )


# -- the OpenID Connect sign-in's pending state (functions/web/oidc.py) ---------------------------
def save_oidc_state(state: str, *, nonce: str, verifier: str, return_to: str, expires_ms: int) -> None:
    """Keep a started sign-in's ``nonce``, PKCE ``verifier`` and return path under the digest of
    its ``state`` until ``expires_ms`` (epoch milliseconds; the item's TTL a day later)."""
    OidcStateRow(
        *keys.oidc_state(_digest(state)),
        nonce=nonce,
        codeVerifier=verifier,
        returnTo=return_to,
        expiresAt=clock.iso(expires_ms),
        ttl=expires_ms // 1000 + 86400,
    ).save()


def take_oidc_state(state: str) -> OidcStateRow | None:
    """The pending sign-in for ``state``, removed as it is taken: the delete is conditioned on the
    item read, so of two callbacks carrying one state only one gets it. ``None`` when the state
    is unknown or was taken already. The caller checks ``expiresAt``."""
    key = keys.oidc_state(_digest(state))
    try:
        row = OidcStateRow.get(*key, consistent_read=True)
    except DoesNotExist:
        return None
    try:
        OidcStateRow(*key).delete(condition=OidcStateRow.nonce == row.nonce)
    except Exception as exc:
        if "ConditionalCheckFailed" in repr(exc):
            return None
        raise
    return row
