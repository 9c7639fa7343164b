"""The call pipeline's own rules: rate window, INTERNAL with correlation id, roles, observe mode."""

from __future__ import annotations

import json

import pytest
from pydantic import Field

from domain import auth
from domain.access import target
from domain.context import Binding
from domain.pipeline import call_tool
from domain.registry import ToolInput, ToolOutput, ToolSpec
from tests.conftest import make_actor
from tests.rpc import call_tool as rpc_call, err, ok


class _In(ToolInput):
    workspaceId: str = Field(description="ws")


class _Out(ToolOutput):
    ok: bool


def _spec(handler, *, min_role="MEMBER", read_only=True, scope="read") -> ToolSpec:
    return ToolSpec(
        name="test_tool", title="Test", description="test only", area="context", scope=scope, read_only=read_only,
        target=target("workspaceId", "workspace"), min_role=min_role, input_model=_In, output_model=_Out, handler=handler,
    )


def test_rate_window_limits_and_reports_retry_after(server_url, stack, monkeypatch):
    from domain.settings import settings

    actor = make_actor("Rita")
    monkeypatch.setattr(settings, "rate_limit_per_minute", 3)
    for _ in range(3):
        ok(rpc_call(server_url, actor.token, "list_workspaces", {}))
    limited = err(rpc_call(server_url, actor.token, "list_workspaces", {}))
    assert limited["code"] == "RATE_LIMITED"
    assert 1 <= limited["retryAfterSeconds"] <= 60
    other = make_actor("Otto")  # the window is per token
    ok(rpc_call(server_url, other.token, "list_workspaces", {}))


def test_unexpected_exception_is_internal_with_correlation_id(stack, caplog):
    actor = make_actor("Ivy")
    principal = auth.authenticate(actor.token)

    def boom(ctx, args):
        raise KeyError("secret internals")

    out = call_tool(_spec(boom), {"workspaceId": actor.workspace_id}, principal, correlation_id="cid-1234")
    assert out.error["error"]["code"] == "INTERNAL"
    assert "cid-1234" in out.error["error"]["message"]
    assert "secret internals" not in json.dumps(out.error) and "Traceback" not in json.dumps(out.error)
    # the structured log has what the client must not see
    record = next(r for r in caplog.records if getattr(r, "correlation_id", None) == "cid-1234")
    assert record.exc_info and "secret internals" in str(record.exc_info[1])


def test_role_is_enforced_per_tool(stack):
    """The pipeline enforces the spec's min_role: the handler below checks nothing itself."""
    from domain.store import keys
    from domain.store.models import MemberRow

    actor = make_actor("Rolf")
    MemberRow(*keys.member(actor.workspace_id, actor.user_id)).update(actions=[MemberRow.role.set("MEMBER")])
    principal = auth.authenticate(actor.token)

    def handler(ctx, args):
        return {"ok": True}

    denied = call_tool(_spec(handler, min_role="ADMIN"), {"workspaceId": actor.workspace_id}, principal)
    assert denied.error["error"]["code"] == "FORBIDDEN" and "ADMIN" in denied.error["error"]["message"]
    MemberRow(*keys.member(actor.workspace_id, actor.user_id)).update(actions=[MemberRow.role.set("OWNER")])
    assert call_tool(_spec(handler, min_role="ADMIN"), {"workspaceId": actor.workspace_id}, principal).result == {"ok": True}


@pytest.mark.parametrize("read_only,code", [(True, None), (False, "FORBIDDEN")])
def test_observe_binding_refuses_writes_only(stack, read_only, code):
    actor = make_actor("Obi")
    principal = auth.authenticate(actor.token)
    binding = Binding(workspace_id=actor.workspace_id, lifetime_id="life-1", observe=True, observe_reason="no checkout root")
    out = call_tool(_spec(lambda ctx, args: {"ok": True}, read_only=read_only), {"workspaceId": ""}, principal, binding=binding)
    if code:
        assert out.error["error"]["code"] == code and out.error["error"]["hint"]
    else:
        assert out.result == {"ok": True}


def test_expired_and_revoked_tokens_do_not_authenticate(stack):
    from domain import clock

    user = auth.create_user("exp@example.com", "Exp")
    expired, _ = auth.mint_pat(user.userId, expires_at=clock.iso(clock.now_ms() - 1000))
    assert auth.authenticate(expired) is None
    live, row = auth.mint_pat(user.userId, scopes=["read"], workspace_id=None, display_name="bot", emoji="🤖")
    p = auth.authenticate(live)
    assert p and p.scopes == ("read",) and p.display_name == "bot"
    assert auth.revoke_token(user.userId, row.tokenId)
    assert auth.authenticate(live) is None
    assert auth.authenticate("tm_unknown") is None and auth.authenticate("not-a-token") is None
