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
from tests.rpc import call_tool as rpc_call
from tests.rpc import err, ok


class _In(ToolInput):
    workspaceId: str = Field(description="ws")


class _Out(ToolOutput):
    ok: bool


def _spec(handler, *, min_role="MEMBER", read_only=True, scope="read") -> ToolSpec:
    return ToolSpec(
        name="test_tool",
        title="Test",
        description="test only",
        area="context",
        scope=scope,
        read_only=read_only,
        target=target("workspaceId", "workspace"),
        min_role=min_role,
        input_model=_In,
        output_model=_Out,
        handler=handler,
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


def _rpc(url: str, token: str, method: str, params: dict | None = None, id_: int = 1):
    import httpx2

    body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}
    return httpx2.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _window_used(token_id: str) -> int:
    from domain import clock
    from domain.settings import settings
    from domain.store import db, keys
    from domain.store.models import RateWindowRow

    now = clock.now_ms()
    pk, sk = keys.rate_window(token_id, now - now % 60_000)
    item = (
        db.dynamodb_client()
        .get_item(TableName=settings.table, Key={"PK": {"S": pk}, "SK": {"S": sk}}, ConsistentRead=True)
        .get("Item")
    )
    return int(item[RateWindowRow.count.attr_name]["N"]) if item else 0


def test_every_request_counts_against_the_window(server_url, stack, monkeypatch):
    """initialize, ping, tools/list, resources/list, an unknown method, an unknown tool and a
    call refused for its scope each count once (a tool call once too, not twice); over the limit,
    the requests the pipeline does not answer get -32029 with the RATE_LIMITED envelope and 429."""
    from domain.settings import settings

    actor = make_actor("Cora", None)
    reader = auth.mint_pat(actor.user_id, scopes=["read"])
    principal = auth.authenticate(reader[0])
    token_id = principal.token_id
    monkeypatch.setattr(settings, "rate_limit_per_minute", 9)
    # (a window that turns over between requests would restart the count: retried below)
    for _attempt in range(3):
        start = _window_used(token_id)
        sent = [
            _rpc(
                server_url,
                reader[0],
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
            ),
            _rpc(server_url, reader[0], "ping"),
            _rpc(server_url, reader[0], "tools/list"),
            _rpc(server_url, reader[0], "resources/list"),
            _rpc(server_url, reader[0], "no/such/method"),
            _rpc(server_url, reader[0], "tools/call", {"name": "no_such_tool", "arguments": {}}),
            _rpc(
                server_url, reader[0], "tools/call", {"name": "create_workspace", "arguments": {"name": "Nope"}}
            ),  # write scope: refused
            _rpc(server_url, reader[0], "tools/call", {"name": "get_token_context", "arguments": {}}),
        ]
        if _window_used(token_id) - start == len(sent):
            break
    else:
        raise AssertionError(f"window grew by {_window_used(token_id) - start}, sent {len(sent)}")
    assert all(r.status_code == 200 for r in sent), [r.text for r in sent]
    refused = json.loads(sent[6].json()["result"]["content"][0]["text"])["error"]
    assert refused["code"] == "FORBIDDEN"
    # Fill the window, then everything is refused, each kind in its own shape.
    while _window_used(token_id) < 9:
        _rpc(server_url, reader[0], "ping")
    for method in ("ping", "tools/list", "initialize"):
        params = (
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            if method == "initialize"
            else {}
        )
        over = _rpc(server_url, reader[0], method, params, id_=77)
        assert over.status_code == 429 and int(over.headers["retry-after"]) >= 1, (method, over.text)
        body = over.json()
        assert body["id"] == 77 and body["error"]["code"] == -32029, body
        envelope = body["error"]["data"]["error"]
        assert envelope["code"] == "RATE_LIMITED" and 1 <= envelope["retryAfterSeconds"] <= 60, envelope
    unknown = _rpc(server_url, reader[0], "tools/call", {"name": "no_such_tool", "arguments": {}})
    assert unknown.status_code == 429 and unknown.json()["error"]["code"] == -32029
    call = err(rpc_call(server_url, reader[0], "get_token_context", {}))
    assert call["code"] == "RATE_LIMITED"  # a tool call keeps its envelope
    scope = err(rpc_call(server_url, reader[0], "create_workspace", {"name": "Nope"}))
    assert scope["code"] == "RATE_LIMITED"  # refused for scope, and over the window: the window speaks


def test_a_replay_answers_only_a_caller_who_may_still_make_the_call(server_url, stack):
    """A member makes a keyed create, is removed from the workspace, and repeats the identical
    call: the access policy runs before the stored answer is looked up, so the former member gets
    NOT_FOUND (worded as for any workspace they cannot see), not the stored result."""
    import uuid

    from domain.store import governance, keys, members
    from domain.store.models import UserRow
    from domain.store.workspaces import create as create_workspace_rows

    owner = make_actor("Olga", None)
    ws, _ = create_workspace_rows(UserRow.get(*keys.user_profile(owner.user_id)), "Replays")
    board = ok(rpc_call(server_url, owner.token, "create_board", {"workspaceId": ws.workspaceId, "name": "Replays"}))
    column = board["columns"][0]["id"]
    member = make_actor("Max", None)
    members.add(ws.workspaceId, UserRow.get(*keys.user_profile(member.user_id)), "MEMBER")
    args = {"columnId": column, "title": "made once", "idempotencyKey": f"replay-{uuid.uuid4()}"}
    first = ok(rpc_call(server_url, member.token, "create_task", args))
    assert ok(rpc_call(server_url, member.token, "create_task", args)) == first  # a member still: the replay
    governance.set_policy(
        ws.workspaceId, "membership", "ALLOW", actor_id=owner.user_id, source="ui"
    )  # no approval step
    removed = ok(
        rpc_call(server_url, owner.token, "remove_member", {"workspaceId": ws.workspaceId, "userId": member.user_id})
    )
    assert members.get(ws.workspaceId, member.user_id) is None, removed
    refused = err(rpc_call(server_url, member.token, "create_task", args))
    assert refused["code"] == "NOT_FOUND", refused
    assert first["task"]["id"] not in json.dumps(refused) and "made once" not in json.dumps(refused)


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
    assert call_tool(_spec(handler, min_role="ADMIN"), {"workspaceId": actor.workspace_id}, principal).result == {
        "ok": True
    }


@pytest.mark.parametrize(("read_only", "code"), [(True, None), (False, "FORBIDDEN")])
def test_observe_binding_refuses_writes_only(stack, read_only, code):
    actor = make_actor("Obi")
    principal = auth.authenticate(actor.token)
    binding = Binding(
        workspace_id=actor.workspace_id, lifetime_id="life-1", observe=True, observe_reason="no checkout root"
    )
    out = call_tool(
        _spec(lambda ctx, args: {"ok": True}, read_only=read_only), {"workspaceId": ""}, principal, binding=binding
    )
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
