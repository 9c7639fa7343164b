"""Usage-plan API keys of tokens on the AWS stack (``jentrix token create|revoke --aws``).

Every token minted for the deployed stack carries an API Gateway API key of the stack's usage
plan (the ``UsagePlanId`` output). The key's value is stored on the token item; the Lambda
authorizer returns it as ``usageIdentifierKey`` so API Gateway meters and throttles by that key.
The value identifies a usage plan slot, it is not a credential: the caller never sends it
(``ApiKeySourceType: AUTHORIZER``) and it authorizes nothing by itself.

Whose key (``per``, the CLI's ``--usage-key``):

* ``token`` (default): a key of its own, named ``jentrix-<token id>``; the plan meters each
  token on its own. API Gateway allows 10,000 keys per account and Region (a hard quota), so
  this holds up to a few thousand tokens.
* ``user``: one key per user (``jentrix-user-<user id>``), shared by all of that user's tokens.
* ``plan``: one key for the whole plan (``jentrix-plan-<plan id>``): no ceiling at all; the
  plan's throttle and quota then bound all its tokens together, so size them for the tier
  (per-token limits stay with the app's window and WAF's per-token rule).

Revoking a token deletes its own key (after the token item says revoked, which is what stops
access), so the plan does not accumulate dead keys; a shared key stays for the other tokens.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any


class UsageKeyError(RuntimeError):
    """The usage plan or key could not be set up or removed (message says what to do)."""


PER = ("token", "user", "plan")
SHARED_PREFIXES = ("jentrix-user-", "jentrix-plan-")


@dataclass(frozen=True)
class UsageKey:
    key_id: str
    value: str
    usage_plan_id: str
    shared: bool = False

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.key_id, self.value, self.usage_plan_id)


def client(region: str | None) -> Any:
    import boto3

    return boto3.client("apigateway", region_name=region)


def _shared_key(api: Any, name: str, usage_plan_id: str) -> UsageKey | None:
    """The existing shared key called ``name`` (attached to the plan if it is not yet), or None."""
    found = [k for k in api.get_api_keys(nameQuery=name, includeValues=True, limit=500)["items"] if k["name"] == name]
    if not found:
        return None
    key = found[0]
    try:
        api.get_usage_plan_key(usagePlanId=usage_plan_id, keyId=key["id"])
    except api.exceptions.NotFoundException:
        api.create_usage_plan_key(usagePlanId=usage_plan_id, keyId=key["id"], keyType="API_KEY")
    return UsageKey(key_id=key["id"], value=key["value"], usage_plan_id=usage_plan_id, shared=True)


def create(
    token_id: str,
    usage_plan_id: str,
    *,
    region: str | None,
    user_email: str = "",
    per: str = "token",
    user_id: str = "",
) -> UsageKey:
    """The API key a new token meters under in ``usage_plan_id``: its own (``per="token"``,
    created and added to the plan; the key is undone if that fails) or the user's or the plan's
    shared key (``per="user"`` / ``"plan"``, created on first use and reused after).

    Raises:
        UsageKeyError: the plan does not exist in ``region``.
        ValueError: ``per`` is not one of :data:`PER` (or ``user`` without ``user_id``)."""
    if per not in PER or (per == "user" and not user_id):
        raise ValueError(f"per is one of {PER} (user needs user_id)")
    api = client(region)
    try:
        api.get_usage_plan(usagePlanId=usage_plan_id)
    except api.exceptions.NotFoundException:
        raise UsageKeyError(
            f"no usage plan {usage_plan_id!r} in {region}; pass the stack's UsagePlanId output as --usage-plan."
        ) from None
    if per != "token":
        name = f"jentrix-user-{user_id}" if per == "user" else f"jentrix-plan-{usage_plan_id}"
        existing = _shared_key(api, name, usage_plan_id)
        if existing:
            return existing
        key = api.create_api_key(
            name=name,
            description=f"jentrix shared usage key ({per})",
            enabled=True,
            value=secrets.token_urlsafe(30),
            tags={"jentrix:shared": per},
        )
        api.create_usage_plan_key(usagePlanId=usage_plan_id, keyId=key["id"], keyType="API_KEY")
        return UsageKey(key_id=key["id"], value=key["value"], usage_plan_id=usage_plan_id, shared=True)
    value = secrets.token_urlsafe(30)  # API Gateway wants 20+ characters
    key = api.create_api_key(
        name=f"jentrix-{token_id}",
        description=f"jentrix token {token_id} {user_email}".strip(),
        enabled=True,
        value=value,
        tags={"jentrix:token": token_id},
    )
    try:
        api.create_usage_plan_key(usagePlanId=usage_plan_id, keyId=key["id"], keyType="API_KEY")
    except Exception:
        api.delete_api_key(apiKey=key["id"])
        raise
    return UsageKey(key_id=key["id"], value=value, usage_plan_id=usage_plan_id)


def delete(key_id: str, usage_plan_id: str | None, *, region: str | None) -> bool:
    """Remove a token's own key from its plan and delete it (already gone is fine); a shared key
    (user's or plan's) is left alone. Returns whether a key was deleted."""
    api = client(region)
    try:
        if api.get_api_key(apiKey=key_id)["name"].startswith(SHARED_PREFIXES):
            return False
    except api.exceptions.NotFoundException:
        return False
    if usage_plan_id:
        try:
            api.delete_usage_plan_key(usagePlanId=usage_plan_id, keyId=key_id)
        except api.exceptions.NotFoundException:
            pass
    try:
        api.delete_api_key(apiKey=key_id)
    except api.exceptions.NotFoundException:
        return False
    return True
