"""Sign-in delegated to an OpenID Connect provider (deployed stacks; docs/oauth.md, "People").

Configured by ``JENTRIX_OIDC_ISSUER`` (the provider's issuer URL: the template sets it to its
Cognito user pool, ``https://cognito-idp.<region>.amazonaws.com/<pool id>``), ``JENTRIX_OIDC_CLIENT_ID``
and, for a confidential app client, ``JENTRIX_OIDC_CLIENT_SECRET``. Without an issuer the
console offers one-time links only (the local default).

The flow is the authorization code flow with PKCE S256, ``state`` and ``nonce``. The ID token
comes straight from the provider's token endpoint over TLS, so, as OpenID Connect Core §3.1.3.7
allows for that case, TLS authenticates it and its signature is not checked; its claims are
(``iss``, ``aud``, ``azp``, expiry, ``nonce``). That keeps a JOSE library and ``cryptography``
(+21 MB) out of the one artifact every function ships. The issuer must be ``https`` (``http``
only on loopback, for tests). A person is matched by verified e-mail; one seen for the first
time becomes a user. We store no passwords.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from domain import auth, clock, console

STATE_SECONDS = 600
TIMEOUT_SECONDS = 5


class SigninError(Exception):
    pass


@dataclass(frozen=True)
class Provider:
    issuer: str
    client_id: str
    client_secret: str | None


def configured() -> Provider | None:
    issuer = os.environ.get("JENTRIX_OIDC_ISSUER", "").strip().rstrip("/")
    client_id = os.environ.get("JENTRIX_OIDC_CLIENT_ID", "").strip()
    if not issuer or not client_id:
        return None
    return Provider(issuer, client_id, os.environ.get("JENTRIX_OIDC_CLIENT_SECRET") or None)


_DISCOVERY: dict[str, tuple[float, dict[str, Any]]] = {}


def _get_json(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    req = urllib.request.Request(url, data=data, headers={"Accept": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS) as resp:
        return json.loads(resp.read(1_000_000))


def discovery(provider: Provider) -> dict[str, Any]:
    import time
    from urllib.parse import urlsplit

    parts = urlsplit(provider.issuer)
    if parts.scheme != "https" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SigninError("the OpenID Connect issuer must be an https URL")

    hit = _DISCOVERY.get(provider.issuer)
    if hit and hit[0] > time.monotonic():
        return hit[1]
    doc = _get_json(provider.issuer + "/.well-known/openid-configuration")
    if doc.get("issuer") != provider.issuer:
        raise SigninError("the provider's discovery document names another issuer")
    _DISCOVERY[provider.issuer] = (time.monotonic() + 3600, doc)
    return doc


def callback_url(request: Any) -> str:
    from functions import public_url

    return public_url.issuer(request.scope) + "/console/oidc/callback"


def start(provider: Provider, request: Any, next_path: str) -> str:
    """The provider's authorization URL for a new sign-in (its state stored for 10 minutes)."""
    state, nonce, verifier = secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(48)
    expires = clock.now_ms() + STATE_SECONDS * 1000
    console.save_oidc_state(state, nonce=nonce, verifier=verifier, return_to=next_path, expires_ms=expires)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": callback_url(request),
        "scope": "openid email profile",
        "state": state,
        "nonce": nonce,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    return discovery(provider)["authorization_endpoint"] + "?" + urllib.parse.urlencode(query)


def finish(provider: Provider, request: Any) -> tuple[str, str]:
    """``(user id, path to return to)`` for the provider's callback.

    Raises:
        SigninError: unknown or expired state, a refused exchange, an ID token that does not verify."""
    params = request.query_params
    if params.get("error"):
        raise SigninError(f"the provider answered {params.get('error')}")
    row = console.take_oidc_state(params.get("state") or "")
    if row is None:
        raise SigninError("unknown sign-in state (start again)")
    if clock.parse_iso(row.expiresAt) <= clock.now_ms():
        raise SigninError("the sign-in took too long (start again)")
    meta = discovery(provider)
    form = {
        "grant_type": "authorization_code",
        "code": params.get("code") or "",
        "redirect_uri": callback_url(request),
        "client_id": provider.client_id,
        "code_verifier": row.codeVerifier,
    }
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if provider.client_secret:
        basic = base64.b64encode(f"{provider.client_id}:{provider.client_secret}".encode()).decode()
        headers["Authorization"] = f"Basic {basic}"
    try:
        answer = _get_json(meta["token_endpoint"], urllib.parse.urlencode(form).encode(), headers)
    except OSError as exc:
        raise SigninError("the provider refused the code exchange") from exc
    claims = verify_id_token(provider, meta, answer.get("id_token") or "", row.nonce)
    email = claims.get("email")
    if not email or claims.get("email_verified") not in (True, "true"):
        raise SigninError("the provider gave no verified e-mail address")
    user = auth.user_by_email(email) or auth.create_user(email, str(claims.get("name") or email.split("@")[0]))
    return user.userId, row.returnTo


def verify_id_token(provider: Provider, meta: dict[str, Any], id_token: str, nonce: str) -> dict[str, Any]:
    """The claims of an ID token received from the token endpoint (see the module docstring).

    Raises:
        SigninError: not a JWT, or a claim that does not match."""
    import time

    try:
        payload = id_token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError) as exc:
        raise SigninError("the provider's ID token is not a JWT") from exc
    if not isinstance(claims, dict):
        raise SigninError("the provider's ID token is not a JWT")
    aud = claims.get("aud")
    auds = aud if isinstance(aud, list) else [aud]
    now = time.time()
    if claims.get("iss") != provider.issuer:
        raise SigninError("the ID token names another issuer")
    if provider.client_id not in auds or (len(auds) > 1 and claims.get("azp") != provider.client_id):
        raise SigninError("the ID token is for another client")
    if not isinstance(claims.get("exp"), (int, float)) or claims["exp"] < now - 60:
        raise SigninError("the ID token has expired")
    if not secrets.compare_digest(str(claims.get("nonce") or ""), nonce):
        raise SigninError("the ID token's nonce does not match this sign-in")
    return claims
