"""The stdio binding from the checkout: with several workspaces and none chosen, a verified
checkout's repository picks the workspace through the lookup of resolve_projects_for_repo —
exactly one match binds it (writable), none or several leave an observe session naming the
candidates. Real ``git init`` checkouts whose origin is a GitHub URL, a real adapter process."""

from __future__ import annotations

import uuid

from tests.conftest import Actor, make_actor
from tests.stdio_support import Adapter, adapter_env, error_of, git_checkout, structured_ok


def _call(actor: Actor, name: str, args: dict) -> dict:
    from domain import auth
    from domain.catalog import registry as product_registry
    from domain.pipeline import call_tool

    out = call_tool(product_registry().get(name), args, auth.authenticate(actor.token))
    assert out.result, out.error
    return out.result


def _second(actor: Actor, name: str) -> str:
    return _call(actor, "create_workspace", {"name": name})["workspace"]["id"]


def _link(actor: Actor, workspace_id: str, repo: str, name: str = "Widgets") -> str:
    project = _call(actor, "create_project", {"workspaceId": workspace_id, "name": name})["project"]
    _call(actor, "add_project_link", {"projectId": project["id"], "targetType": "REPO", "targetId": repo})
    return project["id"]


def _bound(stack, actor: Actor, checkout) -> tuple[Adapter, dict]:
    a = Adapter([], adapter_env(stack, actor.token))
    a.initialize(roots=True)
    msg = a.recv()
    assert msg.get("method") == "roots/list", msg
    a.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": [{"uri": checkout.as_uri()}]}})
    return a, a.binding()


def test_one_workspace_linking_the_repository_binds_it_writable(stack, tmp_path):
    actor = make_actor("Binder", "First Space")
    other = _second(actor, "Other Space")
    tag = uuid.uuid4().hex[:12]
    _link(actor, other, f"https://github.com/Owner/Name-{tag}.git")
    checkout = git_checkout(tmp_path / "name", f"https://github.com/Owner/Name-{tag}.git")
    a, bound = _bound(stack, actor, checkout)
    with a:
        assert (
            bound["workspaceId"] == other and bound["observe"] is False and bound["repository"] == f"owner/name-{tag}"
        )
        board = structured_ok(a.call("create_board", {"workspaceId": "", "name": "From the checkout"}))
        assert board["board"]["workspaceId"] == other


def test_a_default_repo_binds_too(stack, tmp_path):
    actor = make_actor("Defaulter", "First Space")
    other = _second(actor, "Other Space")
    tag = uuid.uuid4().hex[:12]
    _call(actor, "create_project", {"workspaceId": other, "name": "Anything"})
    _call(actor, "update_workspace", {"workspaceId": other, "defaultRepo": f"owner/dflt-{tag}"})
    a, bound = _bound(stack, actor, git_checkout(tmp_path / "d", f"git@github.com:Owner/Dflt-{tag}.git"))
    with a:
        assert bound["workspaceId"] == other and bound["observe"] is False


def test_two_matching_workspaces_observe_and_name_the_candidates(stack, tmp_path):
    actor = make_actor("Torn", "First Space")
    other = _second(actor, "Other Space")
    tag = uuid.uuid4().hex[:12]
    _link(actor, actor.workspace_id, f"owner/both-{tag}", "Here")
    _link(actor, other, f"owner/both-{tag}", "There")
    a, bound = _bound(stack, actor, git_checkout(tmp_path / "b", f"https://github.com/Owner/Both-{tag}"))
    with a:
        assert bound["workspaceId"] is None and bound["observe"] is True
        reason = bound["observeReason"]
        assert (
            "matches 2 workspaces" in reason and actor.workspace_id in reason and other in reason and "There" in reason
        )
        assert error_of(a.call("create_board", {"workspaceId": other, "name": "nope"}))["code"] == "FORBIDDEN"


def test_no_matching_workspace_observes_with_the_reason(stack, tmp_path):
    actor = make_actor("Unmatched", "First Space")
    _second(actor, "Other Space")
    a, bound = _bound(
        stack, actor, git_checkout(tmp_path / "n", f"https://github.com/Owner/None-{uuid.uuid4().hex[:12]}.git")
    )
    with a:
        assert (
            bound["workspaceId"] is None and bound["observe"] is True and "matches no project" in bound["observeReason"]
        )


def test_a_resource_read_before_the_roots_answer_waits_for_the_binding(stack, tmp_path):
    """Regression (issue 24): resources/read ran with the pending binding, which has no workspace
    while the checkout may still choose one, so it could read a workspace the binding then excludes."""
    actor = make_actor("Early Reader", "First Space")
    other = _second(actor, "Other Space")
    tag = uuid.uuid4().hex[:12]
    _link(actor, other, f"owner/early-{tag}")
    here = _call(actor, "create_project", {"workspaceId": actor.workspace_id, "name": "Unlinked"})["project"]
    elsewhere = _call(
        actor,
        "attach_artifact",
        {
            "workspaceId": actor.workspace_id,
            "type": "PR",
            "title": "not this one",
            "url": "https://example.com/pr/1",
            "projectId": here["id"],
        },
    )["artifact"]
    checkout = git_checkout(tmp_path / "early", f"https://github.com/Owner/Early-{tag}.git")
    with Adapter([], adapter_env(stack, actor.token)) as a:
        a.initialize(roots=True)
        ask = a.recv()
        assert ask.get("method") == "roots/list", ask
        uri = f"stacks://artifact/{elsewhere['id']}"
        a.send({"jsonrpc": "2.0", "id": "early-read", "method": "resources/read", "params": {"uri": uri}})
        a.expect_silence(0.5)  # held until the binding settles
        a.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": checkout.as_uri()}]}})
        reply, _ = a.until("early-read")
        assert a.binding()["workspaceId"] == other
        assert "result" not in reply, reply
        assert reply["error"]["code"] == -32602 and reply["error"]["data"]["error"]["code"] == "NOT_FOUND", reply
