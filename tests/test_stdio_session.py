"""The in-process connection over its lifetime: the token is checked on every call, and the
log says each thing once.

The adapter authenticates its token at start; a connection then lives as long as the desktop
client keeps it open. A token revoked (``jentrix token revoke``) or expired in the meantime must
stop the connection from acting, just as the HTTP endpoint refuses it on the next request.
"""

from __future__ import annotations

import json
import time

import pytest

from domain import clock
from functions.protocol import Session
from functions.stdio.backends import LocalBackend
from tests.conftest import Actor
from tests.stdio_support import Adapter, adapter_env, error_of, structured_ok


def tasks_on(actor: Actor, board_id: str) -> list[str]:
    """The task titles on a board, read in this process with a token of ``actor``."""
    from domain import auth
    from domain.catalog import registry as product_registry
    from domain.pipeline import call_tool

    secret, _ = auth.mint_pat(actor.user_id)
    out = call_tool(product_registry().get("get_board_snapshot"), {"boardId": board_id}, auth.authenticate(secret))
    assert out.result, out.error
    return [t["title"] for t in out.result["tasks"]]


def assert_token_refused(result: dict) -> None:
    err = error_of(result)
    assert err["code"] == "FORBIDDEN", err
    assert "revoked or has expired" in err["message"], err
    assert "restart" in err["hint"] and "jentrix token create" in err["hint"], err


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
def test_a_token_revoked_mid_session_refuses_the_next_call_and_writes_nothing(stack, owner, modern):
    from domain import auth

    secret, row = auth.mint_pat(owner.user_id)
    env = adapter_env(stack, secret, JENTRIX_TOKEN_CACHE_SECONDS="0")
    with Adapter(["--workspace", owner.workspace_id], env) as a:
        a.initialize()
        board = structured_ok(a.call("create_board", {"workspaceId": "", "name": "Before revoke"}, modern=modern))
        backlog = board["columns"][0]["id"]
        structured_ok(a.call("create_task", {"columnId": backlog, "title": "allowed"}, modern=modern))

        assert auth.revoke_token(owner.user_id, row.tokenId)

        assert_token_refused(a.call("create_task", {"columnId": backlog, "title": "after revoke"}, modern=modern))
        assert_token_refused(a.call("get_board_snapshot", {"boardId": board["board"]["id"]}, modern=modern))
        assert a.close() == 0
    assert tasks_on(owner, board["board"]["id"]) == ["allowed"]
    assert "no longer authenticates" in a.stderr and row.tokenId in a.stderr


def test_a_token_that_expires_mid_session_refuses_writes(stack, owner):
    from domain import auth

    # the adapter must start and create the board before the token expires: on a loaded machine
    # that can take longer than the first lifetime tried, so a longer one is tried next
    for lifetime_ms in (6000, 15000, 30000):
        expires = clock.iso(clock.now_ms() + lifetime_ms)
        secret, _ = auth.mint_pat(owner.user_id, expires_at=expires)
        with Adapter(["--workspace", owner.workspace_id], adapter_env(stack, secret)) as a:
            a.initialize()
            created = a.call("create_board", {"workspaceId": "", "name": "Short-lived"})
            if created.get("isError"):
                assert clock.now_ms() > clock.parse_iso(expires), created  # refused only for being late
                continue
            board = structured_ok(created)
            while clock.now_ms() <= clock.parse_iso(expires):
                time.sleep(0.2)
            assert_token_refused(a.call("create_task", {"columnId": board["columns"][0]["id"], "title": "too late"}))
        break
    else:
        raise AssertionError("the adapter never got a call in before the token expired")
    assert tasks_on(owner, board["board"]["id"]) == []


# -- the backend itself (no process) ----------------------------------------------------------------
class RecordingProtocol:
    def __init__(self) -> None:
        self.principals: list = []

    def handle(self, message, *, headers, session):
        from functions.protocol import Reply

        self.principals.append(session.principal)
        return Reply(200, {"jsonrpc": "2.0", "id": message.get("id"), "result": {}})


def test_the_backend_runs_each_call_as_the_principal_just_verified(monkeypatch):
    from domain import auth

    started = auth.Principal(user_id="usr_a", token_id="tok_a", kind="pat", stored_scopes=(), workspace_pin=None)
    fresh = [
        auth.Principal(user_id="usr_a", token_id="tok_a", kind="pat", stored_scopes=("read",), workspace_pin=None)
        for _ in range(2)
    ]
    seen: list[str | None] = []

    def authenticate(secret):
        seen.append(secret)
        return fresh[len(seen) - 1] if len(seen) <= len(fresh) else None

    monkeypatch.setattr(auth, "authenticate", authenticate)
    proto = RecordingProtocol()
    session = Session(principal=started, transport="stdio")
    backend = LocalBackend(session, proto, token="tm_secret")  # type: ignore[arg-type]
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_workspaces", "arguments": {}}}
    backend.request(call)
    backend.request({**call, "id": 2})
    assert proto.principals[0] is fresh[0] and proto.principals[1] is fresh[1]
    assert seen == ["tm_secret", "tm_secret"]

    backend.request({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})  # lists are not calls: no check
    assert seen == ["tm_secret", "tm_secret"]

    [refused] = backend.request({**call, "id": 4})
    assert len(proto.principals) == 3 and refused["id"] == 4
    assert json.loads(refused["result"]["content"][0]["text"])["error"]["code"] == "FORBIDDEN"
    assert refused["result"]["isError"] is True and "resultType" not in refused["result"]
    modern = {
        **call,
        "id": 5,
        "params": {**call["params"], "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    }
    assert backend.request(modern)[0]["result"]["resultType"] == "complete"


# -- logging ----------------------------------------------------------------------------------------
def test_a_tool_error_is_logged_once(stack, owner):
    env = adapter_env(stack, owner.token, POWERTOOLS_LOG_LEVEL="INFO")
    with Adapter(["--workspace", owner.workspace_id], env) as a:
        a.initialize()
        assert error_of(a.call("get_board_snapshot", {"boardId": "bd_nonsense"}))["code"] in (
            "NOT_FOUND",
            "INVALID_INPUT",
        )
        assert a.close() == 0
    lines = [line for line in a.stderr.splitlines() if "tool error" in line]
    assert len(lines) == 1, a.stderr
    assert json.loads(lines[0])["tool"] == "get_board_snapshot"
