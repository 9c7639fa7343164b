"""The bridge (``--url``) applies and reports the local binding the remote cannot see.

* ``get_token_context`` relayed from the remote names this connection's bound workspace and
  observe flag, in ``structuredContent`` and in the identical text block;
* the pre-forward checks look at the arguments that carry ids, and only those: a title or a
  description that happens to look like an id is data, as it is in-process.
"""

from __future__ import annotations

import json

import pytest

from domain import auth, ids

from domain.catalog import registry as product_registry
from domain.context import Binding
from domain.pipeline import call_tool
from functions.protocol import Session
from functions.stdio.backends import binding_guard
from tests.stdio_support import Adapter, adapter_env, error_of, structured_ok


def same_json(result: dict) -> dict:
    """structuredContent, after checking the text block is exactly its compact JSON."""
    content = structured_ok(result)
    assert [block["type"] for block in result["content"]] == ["text"]
    assert result["content"][0]["text"] == json.dumps(content, separators=(",", ":"), ensure_ascii=False)
    return content


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
def test_bridge_get_token_context_reports_the_local_binding(stack, server_url, owner, modern):
    with Adapter(["--url", server_url, "--workspace", owner.workspace_id], adapter_env(None, owner.token)) as a:
        a.initialize()
        ctx = same_json(a.call("get_token_context", modern=modern))
        assert ctx["boundWorkspaceId"] == owner.workspace_id and ctx["observe"] is False
        assert ctx["userId"] == owner.user_id and ctx["rateLimit"]["used"] >= 1  # the rest is the remote's answer
    with Adapter(["--url", server_url], adapter_env(None, owner.token)) as a:
        a.initialize(roots=False)
        ctx = same_json(a.call("get_token_context", modern=modern))
        assert ctx["boundWorkspaceId"] == owner.workspace_id and ctx["observe"] is True


def test_bridge_and_in_process_report_the_same_binding(stack, server_url, owner):
    def context(args: list[str], env: dict) -> dict:
        with Adapter(args, env) as a:
            a.initialize()
            return same_json(a.call("get_token_context"))

    local = context(["--workspace", owner.workspace_id], adapter_env(stack, owner.token))
    bridged = context(["--url", server_url, "--workspace", owner.workspace_id], adapter_env(None, owner.token))
    keys = ("tokenId", "userId", "workspaceId", "boundWorkspaceId", "observe", "scopes")
    assert {k: bridged[k] for k in keys} == {k: local[k] for k in keys}
    assert list(bridged) == list(local)  # same field order, so the text blocks read alike


def test_bridge_accepts_id_like_titles_and_still_hides_foreign_ids(stack, server_url, owner, outsider):
    theirs = call_tool(product_registry().get("create_board"), {"workspaceId": outsider.workspace_id, "name": "Theirs"}, auth.authenticate(outsider.token)).result
    assert theirs
    foreign_column = theirs["columns"][0]["id"]
    with Adapter(["--url", server_url, "--workspace", owner.workspace_id], adapter_env(None, owner.token)) as a:
        a.initialize()
        board = structured_ok(a.call("create_board", {"workspaceId": "", "name": outsider.workspace_id}))
        assert board["board"]["name"] == outsider.workspace_id
        backlog = board["columns"][0]["id"]
        task = structured_ok(a.call("create_task", {"columnId": backlog, "title": "ws_frbvwwljm43z", "description": f"see {foreign_column} and {theirs['board']['id']}"}))
        assert task["task"]["title"] == "ws_frbvwwljm43z"
        task = structured_ok(a.call("create_task", {"columnId": backlog, "title": theirs["board"]["id"], "description": foreign_column}))
        assert task["task"]["description"] == foreign_column
        err = error_of(a.call("create_task", {"columnId": foreign_column, "title": "leak?"}))
        assert err["code"] == "NOT_FOUND" and foreign_column in err["message"]


# -- binding_guard itself (no process) --------------------------------------------------------------
BOUND = "ws_aaaaaaaaaaaa"
OTHER = "ws_bbbbbbbbbbbb"


def guard(name: str, arguments: dict) -> dict | None:
    principal = auth.Principal(user_id="usr_a", token_id="tok_a", kind="pat", stored_scopes=(), workspace_pin=None)
    session = Session(principal=principal, transport="stdio", binding=Binding(workspace_id=BOUND, lifetime_id="lt_x"))
    refusal = binding_guard({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}, session)
    return json.loads(refusal["result"]["content"][0]["text"])["error"] if refusal else None


def test_guard_checks_id_fields_only():
    mine_board = ids.new_board_id(BOUND)
    other_board = ids.new_board_id(OTHER)
    other_column = ids.new_column_id(other_board)
    other_task = ids.task_id(other_board, 7)
    # free text that looks like ids of another workspace is data
    assert guard("create_task", {"columnId": ids.new_column_id(mine_board), "title": OTHER, "description": f"{other_board} {other_task}"}) is None
    assert guard("update_task", {"taskId": ids.task_id(mine_board, 1), "title": other_column, "description": OTHER}) is None
    assert guard("create_board", {"workspaceId": "", "name": other_board}) is None
    # every field that carries an id is still checked
    assert guard("list_boards", {"workspaceId": OTHER})["code"] == "FORBIDDEN"  # type: ignore[index]
    for name, field, value in [
        ("get_board_snapshot", "boardId", other_board),
        ("create_task", "columnId", other_column),
        ("update_task", "taskId", other_task),
        ("move_task", "beforeTaskId", other_task),
        ("move_task", "afterTaskId", other_task),
        ("move_column", "beforeColumnId", other_column),
        ("move_column", "afterColumnId", other_column),
    ]:
        err = guard(name, {field: value, "title": "x"})
        assert err and err["code"] == "NOT_FOUND" and value in err["message"], (field, err)
    # nested and plural id fields (no tool has them yet; the rule already covers them)
    nested = guard("future_bulk_tool", {"items": [{"taskId": ids.task_id(mine_board, 2), "note": OTHER}, {"beforeTaskId": other_task}]})
    assert nested and nested["code"] == "NOT_FOUND" and other_task in nested["message"]
    plural = guard("future_bulk_tool", {"boardIds": [mine_board, other_board]})
    assert plural and plural["code"] == "NOT_FOUND" and other_board in plural["message"]
    assert guard("future_bulk_tool", {"items": [{"note": OTHER}], "labels": [other_board], "idempotencyKey": OTHER}) is None


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
def test_bridge_keeps_workspace_level_tools_inside_the_binding(stack, server_url, owner, modern):
    """Regression: over --url, list_workspaces listed every workspace and create_workspace made a new one."""
    from domain.store.workspaces import create as create_workspace_rows
    from domain.store.models import UserRow

    user = UserRow.get(f"USER#{owner.user_id}", "PROFILE")
    create_workspace_rows(user, f"Second {modern}")  # the user now has two workspaces
    with Adapter(["--url", server_url, "--workspace", owner.workspace_id], adapter_env(None, owner.token)) as a:
        a.initialize()
        listed = same_json(a.call("list_workspaces", {}, modern=modern))
        assert [w["id"] for w in listed["workspaces"]] == [owner.workspace_id]
        refused = error_of(a.call("create_workspace", {"name": "Escape"}, modern=modern))
        assert refused["code"] == "FORBIDDEN"
    names = [w["name"] for w in call_tool(product_registry().get("list_workspaces"), {}, auth.authenticate(owner.token)).result["workspaces"]]
    assert "Escape" not in names
