"""API Gateway Lambda authorizer (REQUEST type, identity source ``Authorization``).

It runs the same token check as the app (:func:`domain.auth.authenticate`: one GetItem on the
token item by the digest of the secret) and answers API Gateway with

* ``Unauthorized`` (raised, the only way to get a 401 rather than a Deny's 403) for a missing,
  malformed, unknown, revoked or expired token, and for a token that has no usage-plan key
  (minted without ``--aws``: the usage plan could not meter it; ``JENTRIX_REQUIRE_USAGE_KEY=false``,
  set by the template only for ``sam local``, lets those through);
* otherwise an ``Allow`` policy for every method of this API stage (API Gateway caches the
  answer per Authorization header for ``AuthorizerCacheSeconds`` and reuses it on every route,
  so a policy naming only the first method would deny the others), the principal as context
  (:func:`domain.auth.authorizer_context`), and ``usageIdentifierKey``: the token's API key
  value, which selects the usage plan (``ApiKeySourceType: AUTHORIZER``).

A storage failure propagates: API Gateway answers 500 (``AUTHORIZER_FAILURE`` -> the
``DEFAULT_5XX`` gateway response, with ``Retry-After``) and does not cache it. The secret is
never logged; the token id is.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from domain import auth, observability
from domain.store import db
from functions import priming

log = observability.logger("jentrix-authorizer")
db.configure()
# Deployed with SnapStart like the MCP function (template.yaml): a restored environment reseeds
# `random` (retry jitter) and opens the one connection its GetItem uses.
RESTORE_HOOK = priming.register_restore_hooks(connections=1)


class Unauthorized(Exception):
    """API Gateway maps exactly this message to 401 (the UNAUTHORIZED gateway response)."""

    def __init__(self) -> None:
        super().__init__("Unauthorized")


def _header(event: dict[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if key.lower() == name and value:
            return str(value)
    return None


def _bearer(value: str | None) -> str | None:
    scheme, _, secret = (value or "").partition(" ")
    return secret.strip() if scheme.lower() == "bearer" and secret.strip() else None


def stage_resource(method_arn: str) -> str:
    """``arn:…:execute-api:<region>:<acct>:<api>/<stage>/*`` from the invoked method's ARN."""
    head, _, path = method_arn.partition(":execute-api:")
    region_acct_api, *rest = path.split("/")
    stage = rest[0] if rest else "*"
    return f"{head}:execute-api:{region_acct_api}/{stage}/*"


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request_id = ((event.get("requestContext") or {}).get("requestId")) or ""
    log.set_correlation_id(request_id or None)
    secret = _bearer(_header(event, "authorization"))
    if secret is None:
        log.info("denied", extra={"reason": "no bearer token"})
        raise Unauthorized()
    principal = auth.authenticate(secret)
    if principal is None:
        log.info("denied", extra={"reason": "unknown, revoked or expired token"})
        raise Unauthorized()
    if principal.kind == "oauth" and not principal.usage_key:
        # OAuth tokens share one key in the usage plan (template.yaml, OAuthClientsApiKey).
        principal = dataclasses.replace(principal, usage_key=os.environ.get("JENTRIX_OAUTH_USAGE_KEY") or None)
    if not principal.usage_key and _require_usage_key():
        log.info(
            "denied",
            extra={
                "reason": "token has no usage-plan key",
                "principal": principal.user_id,
                "token_id": principal.token_id,
            },
        )
        raise Unauthorized()
    log.info("allowed", extra={"principal": principal.user_id, "token_id": principal.token_id})
    answer: dict[str, Any] = {
        "principalId": principal.user_id,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Action": "execute-api:Invoke",
                    "Effect": "Allow",
                    "Resource": stage_resource(event.get("methodArn", "")),
                }
            ],
        },
        "context": auth.authorizer_context(principal),
    }
    if principal.usage_key:
        answer["usageIdentifierKey"] = principal.usage_key
    return answer


def _require_usage_key() -> bool:
    """Off only for ``sam local`` against the dev stack (its tokens have no usage-plan key and
    sam local emulates no usage plan); the template sets it from the DynamoDbEndpoint parameter."""
    return os.environ.get("JENTRIX_REQUIRE_USAGE_KEY", "true").lower() not in ("false", "0", "no")
