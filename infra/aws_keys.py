"""Usage-plan API keys of tokens on the AWS stack (``jentrix token create|revoke --aws``).

Every token minted for the deployed stack gets its own API Gateway API key, attached to the
stack's usage plan (the ``UsagePlanId`` output). The key's value is stored on the token item;
the Lambda authorizer returns it as ``usageIdentifierKey`` so API Gateway meters and throttles
each token on its own. The value identifies a usage plan slot, it is not a credential: the
caller never sends it (``ApiKeySourceType: AUTHORIZER``) and it authorizes nothing by itself.

Revoking a token deletes its key too (after the token item says revoked, which is what stops
access), so the plan does not accumulate dead keys.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any


class UsageKeyError(RuntimeError):
    """The usage plan or key could not be set up or removed (message says what to do)."""


@dataclass(frozen=True)
class UsageKey:
    key_id: str
    value: str
    usage_plan_id: str

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.key_id, self.value, self.usage_plan_id)


def client(region: str | None) -> Any:
    import boto3

    return boto3.client("apigateway", region_name=region)


def create(token_id: str, usage_plan_id: str, *, region: str | None, user_email: str = "") -> UsageKey:
    """Create the token's API key and add it to ``usage_plan_id``; undo the key if that fails."""
    api = client(region)
    try:
        api.get_usage_plan(usagePlanId=usage_plan_id)
    except api.exceptions.NotFoundException:
        raise UsageKeyError(f"no usage plan {usage_plan_id!r} in {region}; pass the stack's UsagePlanId output as --usage-plan.") from None
    value = secrets.token_urlsafe(30)  # API Gateway wants 20+ characters
    key = api.create_api_key(
        name=f"jentrix-{token_id}", description=f"jentrix token {token_id} {user_email}".strip(), enabled=True, value=value,
        tags={"jentrix:token": token_id},
    )
    try:
        api.create_usage_plan_key(usagePlanId=usage_plan_id, keyId=key["id"], keyType="API_KEY")
    except Exception:
        api.delete_api_key(apiKey=key["id"])
        raise
    return UsageKey(key_id=key["id"], value=value, usage_plan_id=usage_plan_id)


def delete(key_id: str, usage_plan_id: str | None, *, region: str | None) -> None:
    """Remove the key from its plan and delete it (already gone is fine)."""
    api = client(region)
    if usage_plan_id:
        try:
            api.delete_usage_plan_key(usagePlanId=usage_plan_id, keyId=key_id)
        except api.exceptions.NotFoundException:
            pass
    try:
        api.delete_api_key(apiKey=key_id)
    except api.exceptions.NotFoundException:
        pass
