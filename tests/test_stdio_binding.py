"""How a stdio connection is bound (stdio contract "Session binding"; docs/stdio.md), one rule per test.

The adapter runs as a child process against the session's DynamoDB Local; the binding it
settles is read from its stderr log line (``bound {...}``) and, more to the point, from what
the tools then allow. Checkouts are real ``git init`` directories with an ``origin`` remote.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import pytest

from functions.stdio.checkout import CheckoutError, checkout_from_roots, normalise_remote, verify_checkout
from functions.stdio.server import ROOTS_KEY
from tests.conftest import Actor, make_actor
from tests.stdio_support import Adapter, adapter_env, error_of, git_checkout, modern_meta, run_adapter, structured_ok


# -- remotes and checkouts (no process) ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/Acme/Widgets.git", "acme/widgets"),
        ("https://github.com/acme/widgets", "acme/widgets"),
        ("https://github.com/acme/widgets/", "acme/widgets"),
        ("http://www.github.com/Acme/Widgets", "acme/widgets"),
        ("https://user:secret@github.com/Acme/Widgets.git", "acme/widgets"),
        ("git@github.com:Acme/Widgets.git", "acme/widgets"),
        ("github.com:acme/widgets", "acme/widgets"),
        ("ssh://git@github.com/Acme/Widgets.git", "acme/widgets"),
        ("ssh://git@github.com:22/Acme/Widgets", "acme/widgets"),
        ("git://github.com/acme/my.repo.git", "acme/my.repo"),
        ("https://gitlab.com/acme/widgets.git", None),
        ("git@gitlab.com:acme/widgets.git", None),
        ("https://github.com/acme", None),
        ("https://github.com/acme/widgets/tree/main", None),
        ("file:///srv/git/widgets.git", None),
        ("/srv/git/widgets.git", None),
        ("", None),
    ],
)
def test_remote_normalises_to_owner_name(url, expected):
    assert normalise_remote(url) == expected


def test_verify_checkout_accepts_a_directory_inside_a_github_checkout(tmp_path):
    repo = git_checkout(tmp_path / "widgets", "git@github.com:Acme/Widgets.git")
    (repo / "src").mkdir()
    found = verify_checkout(repo / "src")
    assert found.path == str(repo.resolve()) and found.repository == "acme/widgets"


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: (p / "file.txt").write_text("x") and p / "file.txt", "not a directory"),
        (lambda p: p, "not inside a git checkout"),
        (lambda p: git_checkout(p / "noorigin", None), "no 'origin' remote"),
        (lambda p: git_checkout(p / "lab", "https://gitlab.com/a/b.git"), "not a GitHub"),
    ],
)
def test_verify_checkout_refuses(tmp_path, setup, needle):
    with pytest.raises(CheckoutError, match=needle):
        verify_checkout(setup(tmp_path))


def test_roots_need_exactly_one_absolute_local_file_root(tmp_path):
    repo = git_checkout(tmp_path / "w")
    assert checkout_from_roots([{"uri": repo.as_uri(), "name": "w"}]).repository == "acme/widgets"
    for roots, needle in [
        ([], "no roots"),
        ([{"uri": repo.as_uri()}, {"uri": (tmp_path / "x").as_uri()}], "2 roots"),
        ([{"uri": "https://github.com/acme/widgets"}], "not a file: URI"),
        ([{"uri": "file:relative/dir"}], "not an absolute path"),
        ([{"uri": "file://fileserver/share/w"}], "another host"),
        ([{"name": "no uri"}], "no string uri"),
    ]:
        with pytest.raises(CheckoutError, match=needle):
            checkout_from_roots(roots)


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture
def repo(tmp_path) -> Path:
    return git_checkout(tmp_path / "widgets")


def start(stack, actor: Actor, *args: str, token: str | None = None) -> Adapter:
    return Adapter(list(args), adapter_env(stack, token or actor.token))


def answer_roots(a: Adapter, roots: list[dict]) -> dict:
    """Read the adapter's roots/list request and answer it with ``roots``."""
    msg = a.recv()
    assert msg.get("method") == "roots/list" and isinstance(msg.get("id"), str), msg
    a.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": roots}})
    return msg


def write_refused(a: Adapter, **kw) -> dict:
    err = error_of(a.call("create_board", {"workspaceId": "", "name": "nope"}, **kw))
    assert err["code"] == "FORBIDDEN", err
    return err


def second_workspace(actor: Actor, name: str = "Second Space") -> str:
    from domain.store.models import UserRow
    from domain.store.workspaces import create as create_workspace_rows

    ws, _ = create_workspace_rows(UserRow.get(f"USER#{actor.user_id}", "PROFILE"), name)
    return ws.workspaceId


def board_in(actor: Actor, workspace_id: str, name: str = "Theirs") -> str:
    from domain import auth
    from domain.catalog import registry as product_registry
    from domain.pipeline import call_tool

    out = call_tool(
        product_registry().get("create_board"),
        {"workspaceId": workspace_id, "name": name},
        auth.authenticate(actor.token),
    )
    assert out.result, out.error
    return out.result["board"]["id"]


# -- workspace: flag, pin, only, several, none ---------------------------------------------------------
def test_explicit_workspace_binds_and_writes_without_any_roots(stack, owner):
    with start(stack, owner, "--workspace", owner.workspace_id) as a:
        a.initialize()
        bound = a.binding()
        assert bound["workspaceId"] == owner.workspace_id and bound["observe"] is False and bound["checkout"] is None
        board = structured_ok(a.call("create_board", {"workspaceId": "", "name": "Bound"}))
        assert board["board"]["workspaceId"] == owner.workspace_id
        assert structured_ok(a.call("get_token_context"))["boundWorkspaceId"] == owner.workspace_id


def test_the_tokens_pin_binds_the_workspace(stack, owner):
    from domain import auth

    second_workspace(owner)
    pinned, _ = auth.mint_pat(owner.user_id, workspace_id=owner.workspace_id)
    with start(stack, owner, token=pinned) as a:
        a.initialize()
        bound = a.binding()
        assert bound["workspaceId"] == owner.workspace_id and bound["observe"] is False
        structured_ok(a.call("create_board", {"workspaceId": "", "name": "Pinned"}))


def test_the_only_workspace_with_one_verified_root_enrols_the_checkout(stack, owner, repo):
    with start(stack, owner) as a:
        a.initialize(roots=True)
        answer_roots(a, [{"uri": repo.as_uri(), "name": "widgets"}])
        bound = a.binding()
        assert bound == {
            **bound,
            "workspaceId": owner.workspace_id,
            "checkout": str(repo.resolve()),
            "repository": "acme/widgets",
            "observe": False,
        }
        board = structured_ok(a.call("create_board", {"workspaceId": "", "name": "Enrolled"}))
        assert board["board"]["workspaceId"] == owner.workspace_id


def test_the_only_workspace_without_roots_is_an_observe_session_reads_work_writes_refused(stack, owner):
    with start(stack, owner) as a:
        a.initialize(roots=False)
        bound = a.binding()
        assert bound["observe"] is True and bound["workspaceId"] == owner.workspace_id
        assert "did not declare the roots capability" in bound["observeReason"]
        listed = structured_ok(a.call("list_workspaces"))
        assert [w["id"] for w in listed["workspaces"]] == [owner.workspace_id]
        ctx = structured_ok(a.call("get_token_context"))
        assert ctx["observe"] is True
        err = write_refused(a)
        assert "observe session" in err["message"] and "--workspace" in err["hint"]


def test_several_workspaces_and_none_chosen_is_an_observe_session_with_a_hint(stack, owner):
    other = second_workspace(owner)
    with start(stack, owner) as a:
        a.initialize(
            roots=False
        )  # with roots, the checkout's repository may choose (tests/test_stdio_checkout_binding.py)
        bound = a.binding()
        assert bound["workspaceId"] is None and bound["observe"] is True
        assert "2 workspaces" in bound["observeReason"] and "--workspace" in bound["observeReason"]
        listed = structured_ok(a.call("list_workspaces"))
        assert {w["id"] for w in listed["workspaces"]} == {owner.workspace_id, other}
        err = error_of(a.call("create_board", {"workspaceId": other, "name": "nope"}))
        assert err["code"] == "FORBIDDEN" and "2 workspaces" in err["message"] and "--workspace" in err["hint"]


def test_no_workspace_at_all_is_an_observe_session(stack):
    lonely = make_actor("Lonely", workspace=None)
    with start(stack, lonely) as a:
        a.initialize()
        bound = a.binding()
        assert bound["workspaceId"] is None and bound["observe"] is True
        assert "not a member of any workspace" in bound["observeReason"]
        assert structured_ok(a.call("list_workspaces"))["workspaces"] == []
        err = error_of(a.call("create_workspace", {"name": "Mine", "idempotencyKey": str(uuid.uuid4())}))
        assert err["code"] == "FORBIDDEN" and "observe session" in err["message"]


# -- later inputs cannot switch the binding --------------------------------------------------------------
def test_a_bound_connection_refuses_other_workspaces_and_hides_their_ids(stack, owner, outsider):
    mine_elsewhere = second_workspace(owner, "Owner Elsewhere")
    my_other_board = board_in(owner, mine_elsewhere)
    foreign_board = board_in(outsider, outsider.workspace_id)
    with start(stack, owner, "--workspace", owner.workspace_id) as a:
        a.initialize()
        for ws in (mine_elsewhere, outsider.workspace_id):
            err = error_of(a.call("create_board", {"workspaceId": ws, "name": "switch"}))
            assert (
                err["code"] == "FORBIDDEN"
                and owner.workspace_id in err["message"]
                and owner.workspace_id in err["hint"]
            )
        members = structured_ok(a.call("list_members", {"workspaceId": ""}))
        assert [m["userId"] for m in members["members"]] == [owner.user_id]
        for board_id in (my_other_board, foreign_board):
            err = error_of(a.call("get_board_snapshot", {"boardId": board_id}))
            assert err["code"] == "NOT_FOUND", err
        assert [w["id"] for w in structured_ok(a.call("list_workspaces"))["workspaces"]] == [owner.workspace_id]


# -- roots: what does not enrol ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make_roots", "needle"),
    [
        (lambda p: [], "no roots"),
        (lambda p: [{"uri": git_checkout(p / "a").as_uri()}, {"uri": git_checkout(p / "b").as_uri()}], "2 roots"),
        (lambda p: [{"uri": "https://github.com/acme/widgets"}], "not a file: URI"),
        (lambda p: [{"uri": "file:widgets"}], "not an absolute path"),
        (lambda p: [{"uri": (p / "gone").as_uri()}], "does not exist"),
        (lambda p: [{"uri": (p).as_uri()}], "not inside a git checkout"),
        (lambda p: [{"uri": git_checkout(p / "n", None).as_uri()}], "no 'origin' remote"),
        (lambda p: [{"uri": git_checkout(p / "g", "https://gitlab.com/acme/w.git").as_uri()}], "not a GitHub"),
    ],
    ids=["none", "two", "not-file", "relative", "missing", "not-git", "no-origin", "not-github"],
)
def test_unusable_roots_make_an_observe_session(stack, owner, tmp_path, make_roots, needle):
    roots = make_roots(tmp_path)
    with start(stack, owner) as a:
        a.initialize(roots=True)
        answer_roots(a, roots)
        bound = a.binding()
        assert bound["observe"] is True and bound["checkout"] is None and needle in bound["observeReason"], bound
        structured_ok(a.call("list_workspaces"))
        err = write_refused(a)
        assert needle in err["message"]


def test_a_roots_error_answer_makes_an_observe_session(stack, owner):
    with start(stack, owner) as a:
        a.initialize(roots=True)
        msg = a.recv()
        assert msg["method"] == "roots/list"
        a.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "roots unsupported"}})
        assert "roots unsupported" in a.binding()["observeReason"]
        write_refused(a)


def test_calls_wait_for_the_roots_answer_and_time_out_into_observe(stack, owner):
    with start(stack, owner, "--roots-timeout", "1") as a:
        a.initialize(roots=True)
        assert a.recv()["method"] == "roots/list"  # never answered
        started = time.monotonic()
        err = write_refused(a)
        assert time.monotonic() - started >= 0.9
        assert "did not answer roots/list within 1s" in err["message"]


def test_a_call_sent_before_the_roots_answer_waits_for_it(stack, owner, repo):
    with start(stack, owner) as a:
        a.initialize(roots=True)
        ask = a.recv()
        a.send(
            {
                "jsonrpc": "2.0",
                "id": "early",
                "method": "tools/call",
                "params": {"name": "create_board", "arguments": {"workspaceId": "", "name": "Early"}},
            }
        )
        a.expect_silence(0.5)  # held until the binding settles
        a.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": repo.as_uri()}]}})
        reply, _ = a.until("early")
        assert structured_ok(reply["result"])["board"]["workspaceId"] == owner.workspace_id


def test_a_flood_of_early_calls_cannot_keep_the_roots_answer_from_being_read(stack, owner, repo):
    """More calls than workers and in-flight slots wait for the binding; the answer still gets in."""
    with start(stack, owner) as a:
        a.initialize(roots=True)
        ask = a.recv()
        n = 60
        for i in range(n):
            a.send(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "get_token_context", "arguments": {}},
                }
            )
        a.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": repo.as_uri()}]}})
        replies = [a.recv() for _ in range(n)]
        assert sorted(r["id"] for r in replies) == list(range(n))
        assert all(structured_ok(r["result"])["observe"] is False for r in replies)
        assert a.binding()["repository"] == "acme/widgets"


def test_an_explicit_checkout_wins_over_roots_and_none_are_asked(stack, owner, repo, tmp_path):
    with start(stack, owner, "--checkout", str(repo)) as a:
        a.initialize(roots=True)
        a.expect_silence(0.5)  # no roots/list
        bound = a.binding()
        assert (
            bound["checkout"] == str(repo.resolve())
            and bound["repository"] == "acme/widgets"
            and bound["observe"] is False
        )
        structured_ok(a.call("create_board", {"workspaceId": "", "name": "Explicit checkout"}))


def test_client_info_is_metadata_only(stack, owner):
    info = {"name": "claude-code", "version": "9.9", "title": "Trusted Harness"}
    with start(stack, owner) as a:
        a.initialize(roots=False, client_info=info)
        bound = a.binding()
        assert bound["clientInfo"] == info and bound["observe"] is True
        write_refused(a)


def test_each_connection_gets_its_own_lifetime_id(stack, owner):
    seen = []
    for _ in range(2):
        with start(stack, owner, "--workspace", owner.workspace_id) as a:
            a.initialize()
            seen.append(a.binding()["lifetimeId"])
            assert a.close() == 0
    assert seen[0] != seen[1] and all(re.fullmatch(r"lt_[0-9a-z]{26}", s) for s in seen)


# -- the 2026-07-28 era: roots through an input-required result ------------------------------------------
def test_modern_era_asks_for_roots_through_input_required_and_enrols(stack, owner, repo):
    with start(stack, owner) as a:
        first = a.call("create_board", {"workspaceId": "", "name": "Modern"}, modern=True, roots=True)
        assert first["resultType"] == "input_required"
        assert first["inputRequests"] == {ROOTS_KEY: {"method": "roots/list"}} and isinstance(
            first["requestState"], str
        )
        forged = a.request(
            "tools/call",
            {
                "name": "create_board",
                "arguments": {"workspaceId": "", "name": "Modern"},
                "_meta": modern_meta(roots=True),
                "inputResponses": {ROOTS_KEY: {"roots": [{"uri": repo.as_uri()}]}},
                "requestState": "forged",
            },
        )
        assert forged["error"]["code"] == -32602
        done = a.call(
            "create_board",
            {"workspaceId": "", "name": "Modern"},
            modern=True,
            roots=True,
            extra={
                "inputResponses": {ROOTS_KEY: {"roots": [{"uri": repo.as_uri(), "name": "widgets"}]}},
                "requestState": first["requestState"],
            },
        )
        assert done["resultType"] == "complete" and structured_ok(done)["board"]["workspaceId"] == owner.workspace_id
        bound = a.binding()
        assert bound["repository"] == "acme/widgets" and bound["observe"] is False
        assert bound["clientInfo"] == {"name": "pytest", "version": "1"}
        again = a.call("list_workspaces", modern=True, roots=True)  # settled once: no second round
        assert again["resultType"] == "complete"


def test_modern_era_without_the_roots_capability_settles_without_asking(stack, owner):
    with start(stack, owner) as a:
        result = a.call("create_board", {"workspaceId": "", "name": "x"}, modern=True, roots=False)
        assert result["resultType"] == "complete"
        err = error_of(result)
        assert err["code"] == "FORBIDDEN" and "observe session" in err["message"]


# -- invalid explicit binding data fails at start ---------------------------------------------------------
def fails_at_start(args: list[str], env: dict[str, str], needle: str) -> None:
    done = run_adapter(args, env, stdin=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert done.stdout == b"", done.stdout  # nothing but JSON-RPC ever goes to stdout
    assert "jentrix mcp: error:" in err and needle in err, err


def test_no_token_fails_at_start(stack):
    fails_at_start([], adapter_env(stack), "No token")


def test_an_invalid_token_fails_at_start(stack):
    fails_at_start([], adapter_env(stack, "tm_" + "x" * 43), "not accepted")


def test_a_token_file_is_read_and_an_empty_one_refused(stack, owner, tmp_path):
    good = tmp_path / "token"
    good.write_text(owner.token + "\n")
    done = run_adapter(
        ["--token-file", str(good), "--workspace", owner.workspace_id],
        adapter_env(stack),
        stdin=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
    )
    assert done.returncode == 0 and done.stdout.strip() == b'{"jsonrpc":"2.0","id":1,"result":{}}', done.stderr.decode()
    empty = tmp_path / "empty"
    empty.write_text("")
    fails_at_start(["--token-file", str(empty)], adapter_env(stack), "is empty")


@pytest.mark.parametrize(
    ("workspace", "needle"),
    [
        ("not-a-workspace", "is not a workspace id"),
        ("ws_" + "a" * 12, "does not exist or the token's user is not a member"),
    ],
)
def test_an_unknown_or_malformed_workspace_fails_at_start(stack, owner, workspace, needle):
    fails_at_start(["--workspace", workspace], adapter_env(stack, owner.token), needle)


def test_a_workspace_the_token_cannot_see_fails_at_start(stack, owner, outsider):
    from domain import auth

    fails_at_start(["--workspace", outsider.workspace_id], adapter_env(stack, owner.token), "not a member")
    other = second_workspace(owner)
    pinned, _ = auth.mint_pat(owner.user_id, workspace_id=owner.workspace_id)
    fails_at_start(["--workspace", other], adapter_env(stack, pinned), f"pinned to workspace {owner.workspace_id}")


def test_a_checkout_that_does_not_exist_or_is_no_github_checkout_fails_at_start(stack, owner, tmp_path):
    fails_at_start(["--checkout", str(tmp_path / "nowhere")], adapter_env(stack, owner.token), "does not exist")
    fails_at_start(["--checkout", str(tmp_path)], adapter_env(stack, owner.token), "not inside a git checkout")


def test_aws_is_never_implicit(stack, owner):
    env = adapter_env(None, owner.token, AWS_PROFILE="production", AWS_REGION="us-east-1")
    fails_at_start([], env, "No DynamoDB endpoint")
    fails_at_start(["--endpoint", "https://dynamodb.us-east-1.amazonaws.com"], env, "add --aws")
