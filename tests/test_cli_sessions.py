"""``jentrix agent launch`` and ``jentrix session attach`` in-process against the session's DynamoDB
Local: a launch whose provider command runs the session-start hook (``session attach --hook-input``
with the hook's JSON on stdin, in a child process) ends COMPLETED and bound to the hook's id; a
failing command ends INTERRUPTED with its exit status; attach outside a launch needs a project."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from functions import cli
from tests.conftest import make_actor, mcp_client
from tests.tools_support import ok


def _checkout(tmp_path: Path, repo: str) -> Path:
    path = tmp_path / f"checkout-{uuid.uuid4().hex[:12]}"
    path.mkdir()
    for argv in (["init", "-q"], ["remote", "add", "origin", f"https://github.com/{repo}.git"]):
        subprocess.run(["git", "-C", str(path), *argv], check=True, capture_output=True)
    return path


def _token_file(tmp_path: Path, secret: str) -> str:
    path = tmp_path / f"token-{uuid.uuid4().hex[:12]}"
    path.write_text(secret + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture
def launcher(stack, server_url, tmp_path, monkeypatch):
    # the provider command runs in the checkout: its hook's `python -m functions.cli` must find this tree
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    actor = make_actor("Launch")
    repo = f"acme/launch-{uuid.uuid4().hex[:12]}"
    return actor, repo, _checkout(tmp_path, repo), _token_file(tmp_path, actor.token)


async def _linked_project(server_url: str, actor, repo: str) -> str:
    async with mcp_client(server_url, actor.token) as c:
        project = (
            await ok(c, "create_project", {"workspaceId": actor.workspace_id, "name": f"Launch {uuid.uuid4().hex[:4]}"})
        )["project"]
        await ok(c, "add_project_link", {"projectId": project["id"], "targetType": "REPO", "targetId": repo})
    return project["id"]


async def _sessions(server_url: str, actor) -> list[dict]:
    async with mcp_client(server_url, actor.token) as c:
        listed = (await ok(c, "list_agent_sessions", {"workspaceId": actor.workspace_id}))["sessions"]
        return [(await ok(c, "get_agent_session", {"sessionId": s["id"]}))["session"] for s in listed]


async def test_launch_runs_the_hook_binds_its_id_and_completes_on_exit_zero(server_url, launcher, capsys):
    actor, repo, checkout, token_file = launcher
    project = await _linked_project(server_url, actor, repo)
    hook_id = f"cc-{uuid.uuid4()}"
    payload = json.dumps(
        {"session_id": hook_id, "hook_event_name": "SessionStart", "source": "startup", "cwd": str(checkout)}
    )
    hook = f"echo {shlex.quote(payload)} | {shlex.quote(sys.executable)} -m functions.cli session attach --provider claude-code --hook-input"
    code = cli.main(
        [
            "agent",
            "launch",
            "--project",
            project,
            "--provider",
            "claude-code",
            "--checkout",
            str(checkout),
            "--token-file",
            token_file,
            "--",
            "bash",
            "-c",
            hook,
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    [session] = await _sessions(server_url, actor)
    assert (
        session["status"] == "COMPLETED"
        and session["providerThreadId"] == hook_id
        and session["provider"] == "claude-code"
    )
    assert session["repository"] == repo and session["repoEnd"] is not None and session["id"] in err


async def test_launch_of_a_failing_command_ends_interrupted_with_its_status(server_url, launcher, capsys):
    actor, repo, checkout, token_file = launcher
    project = await _linked_project(server_url, actor, repo)
    code = cli.main(
        [
            "agent",
            "launch",
            "--project",
            project,
            "--checkout",
            str(checkout),
            "--token-file",
            token_file,
            "--",
            "bash",
            "-c",
            "exit 3",
        ]
    )
    assert code == 3
    [session] = await _sessions(server_url, actor)
    assert session["status"] == "INTERRUPTED" and session["providerThreadId"] is None


async def test_launch_refuses_a_project_without_the_checkouts_repo_link(server_url, launcher, capsys):
    actor, _, checkout, token_file = launcher
    project = await _linked_project(server_url, actor, "acme/elsewhere")
    code = cli.main(
        ["agent", "launch", "--project", project, "--checkout", str(checkout), "--token-file", token_file, "--", "true"]
    )
    assert code == 1 and "REPO link" in capsys.readouterr().err
    assert await _sessions(server_url, actor) == []


def test_attach_outside_a_launch_needs_a_project_and_hook_input_needs_an_id(launcher, capsys, monkeypatch):
    import io

    _actor, _, _, token_file = launcher
    monkeypatch.delenv("JENTRIX_SESSION_ID", raising=False)
    assert cli.main(["session", "attach", "--provider", "codex", "--thread-id", "t-1", "--token-file", token_file]) == 2
    assert "--project" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"cwd": "/tmp"})))
    assert cli.main(["session", "attach", "--provider", "codex", "--hook-input", "--token-file", token_file]) == 2
    assert "session_id" in capsys.readouterr().err
