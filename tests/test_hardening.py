"""Regressions from the adversarial round: each test names the bug it pins."""

from __future__ import annotations

import base64
import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx2

from tests.rpc import call_tool, err, ok


def _board(url, actor, name="Hardening"):
    b = ok(call_tool(url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": name}))
    return b["board"]["id"], [c["id"] for c in b["columns"]]


def test_lone_surrogate_in_request_id_is_answered_not_500(server_url, owner):
    body = '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}'
    r = httpx2.post(
        server_url, content=body, headers={"Authorization": f"Bearer {owner.token}", "Content-Type": "application/json"}
    )
    assert r.status_code == 200
    assert json.loads(r.content)["id"] == "\ud800"


def test_id_with_trailing_newline_is_not_an_alias(server_url, owner):
    _, cols = _board(server_url, owner)
    task = ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "t"}))["task"]
    assert err(call_tool(server_url, owner.token, "get_task", {"taskId": task["id"] + "\n"}))["code"] == "NOT_FOUND"


def test_deeply_nested_cursor_is_invalid_input(server_url, owner):
    board_id, _ = _board(server_url, owner)
    cursor = base64.urlsafe_b64encode(("[" * 100000 + "]" * 100000).encode()).decode()[:2000]
    problem = err(call_tool(server_url, owner.token, "list_tasks", {"boardId": board_id, "cursor": cursor}))
    assert problem["code"] == "INVALID_INPUT" and problem["message"].startswith("cursor")


def test_invisible_titles_and_names_are_refused(server_url, owner):
    board_id, cols = _board(server_url, owner)
    for blank in ("\u200b\u200b", "\ufeff", "\u2800", "\u3164", "\x00", "\u202e"):
        assert (
            err(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": blank}))["code"]
            == "INVALID_INPUT"
        )
        assert (
            err(call_tool(server_url, owner.token, "rename_board", {"boardId": board_id, "name": blank}))["code"]
            == "INVALID_INPUT"
        )
    assert ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "\u200bvisible"}))


def test_a_board_holds_at_most_50_active_columns(server_url, owner):
    board_id, cols = _board(server_url, owner, "Wide")
    for i in range(50 - len(cols)):
        ok(
            call_tool(
                server_url, owner.token, "manage_columns", {"action": "create", "boardId": board_id, "name": f"c{i}"}
            )
        )
    full = err(
        call_tool(
            server_url, owner.token, "manage_columns", {"action": "create", "boardId": board_id, "name": "one too many"}
        )
    )
    assert full["code"] == "INVALID_INPUT"
    ok(call_tool(server_url, owner.token, "manage_columns", {"action": "archive", "columnId": cols[0]}))
    ok(
        call_tool(
            server_url, owner.token, "manage_columns", {"action": "create", "boardId": board_id, "name": "fits again"}
        )
    )
    ok(call_tool(server_url, owner.token, "list_tasks", {"boardId": board_id}))  # archived + 50 active: the filter fits


def test_idempotency_compares_meaning_not_spelling(server_url, owner):
    key = f"k-{uuid.uuid4()}"
    first = ok(
        call_tool(
            server_url,
            owner.token,
            "create_board",
            {"workspaceId": owner.workspace_id, "name": "Same", "idempotencyKey": key},
        )
    )
    again = ok(
        call_tool(
            server_url,
            owner.token,
            "create_board",
            {"workspaceId": owner.workspace_id, "name": "Same", "kind": "TASKS", "idempotencyKey": key},
        )
    )
    assert again["board"]["id"] == first["board"]["id"]
    _, cols = _board(server_url, owner)
    tkey = f"t-{uuid.uuid4()}"
    t1 = ok(
        call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "x", "idempotencyKey": tkey})
    )
    t2 = ok(
        call_tool(
            server_url,
            owner.token,
            "create_task",
            {"columnId": cols[0], "title": "x", "description": None, "idempotencyKey": tkey},
        )
    )
    assert t1["task"]["id"] == t2["task"]["id"]


def test_archive_without_expected_stamp_survives_a_concurrent_update(server_url, owner):
    _, cols = _board(server_url, owner)
    tasks = [
        ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": f"a{i}"}))["task"]
        for i in range(6)
    ]

    def archive(t):
        with httpx2.Client(timeout=60) as c:
            return call_tool(server_url, owner.token, "archive_task", {"taskId": t["id"]}, c)

    def update(t):
        with httpx2.Client(timeout=60) as c:
            return call_tool(server_url, owner.token, "update_task", {"taskId": t["id"], "priority": "HIGH"}, c)

    with ThreadPoolExecutor(12) as pool:
        archives = [pool.submit(archive, t) for t in tasks]
        [pool.submit(update, t) for t in tasks]
        results = [f.result() for f in archives]
    assert all(not r["isError"] and r["structuredContent"]["task"]["archivedAt"] for r in results)
