"""``jentrix connect``: each client's real file format in a temporary home and project.

What is checked: the entry lands where each client's documentation puts it (docs/connect.md),
in its shape; unrelated entries, keys, order and comments survive byte for byte; a second run
changes nothing; ``--remove`` gives the original file back; the diff is shown before anything is
written and a "no" writes nothing; ``all`` touches only the clients detected; no token is
written unless ``--store-secret`` (which warns, and keeps the token out of the printed diff);
and, end to end, the stdio entry as written starts our adapter and answers through the
official MCP SDK client.
"""

from __future__ import annotations

import io
import json
import shlex
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from functions import cli, cli_connect
from tests.conftest import Actor, structured
from tests.stdio_support import adapter_env

FAKE_TOKEN = "tm_" + "a1b2c3d4" * 5  # looks like a token; never a real one


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for var in ("CODEX_HOME", "XDG_CONFIG_HOME", "APPDATA", "JENTRIX_TOKEN", "JENTRIX_DYNAMODB_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    return h


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    monkeypatch.chdir(p)
    return p


def connect(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str, answer: str = ""
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
    rc = cli.main(["connect", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def adapter_cmd() -> list[str]:
    return cli_connect.jentrix_argv()


# -- Claude Code -------------------------------------------------------------------------------------
CLAUDE_JSON = """{
  "numStartups": 12,
  "projects": {
    "/elsewhere": {
      "allowedTools": [],
      "mcpServers": {}
    }
  },
  "mcpServers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}
  },
  "tipsHistory": {"x": 1}
}
"""


def test_claude_code_user_scope_add_again_and_remove(home, project, capsys, monkeypatch):
    path = home / ".claude.json"
    path.write_text(CLAUDE_JSON)
    rc, out, _ = connect(
        capsys, monkeypatch, "claude-code", "--yes", "--workspace", "ws_abc", "--endpoint", "http://127.0.0.1:8000"
    )
    assert rc == 0, out
    data = json.loads(path.read_text())
    cmd = adapter_cmd()
    assert data["mcpServers"]["jentrix"] == {
        "type": "stdio",
        "command": cmd[0],
        "args": [*cmd[1:], "mcp", "--workspace", "ws_abc"],
        "env": {"JENTRIX_DYNAMODB_ENDPOINT": "http://127.0.0.1:8000"},
    }
    assert list(data) == ["numStartups", "projects", "mcpServers", "tipsHistory"]
    assert list(data["mcpServers"]) == ["github", "jentrix"]
    assert data["projects"] == json.loads(CLAUDE_JSON)["projects"] and data["tipsHistory"] == {"x": 1}
    assert '"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}' in path.read_text(), (
        "other entries keep their layout"
    )
    assert "inherits $JENTRIX_TOKEN" in out and "decides what it may do" in out

    written = path.read_bytes()
    rc, out, _ = connect(
        capsys, monkeypatch, "claude-code", "--yes", "--workspace", "ws_abc", "--endpoint", "http://127.0.0.1:8000"
    )
    assert rc == 0 and "already up to date" in out and "---" not in out
    assert path.read_bytes() == written

    rc, out, _ = connect(capsys, monkeypatch, "claude-code", "--remove", "--yes")
    assert rc == 0 and "removed" in out
    assert path.read_text() == CLAUDE_JSON
    rc, out, _ = connect(capsys, monkeypatch, "claude-code", "--remove", "--yes")
    assert rc == 0 and "nothing to remove" in out and path.read_text() == CLAUDE_JSON


def test_claude_code_project_and_local_scopes(home, project, capsys, monkeypatch):
    (home / ".claude.json").write_text(CLAUDE_JSON)
    rc, out, _ = connect(
        capsys, monkeypatch, "claude-code", "--scope", "project", "--yes", "--url", "https://mcp.example.com/api/mcp"
    )
    assert rc == 0, out
    shared = json.loads((project / ".mcp.json").read_text())
    assert shared == {
        "mcpServers": {
            "jentrix": {
                "type": "http",
                "url": "https://mcp.example.com/api/mcp",
                "headers": {"Authorization": "Bearer ${JENTRIX_TOKEN}"},
            }
        }
    }
    assert "meant to be shared" in out and "approve the servers" in out

    rc, out, _ = connect(
        capsys, monkeypatch, "claude-code", "--scope", "local", "--yes", "--bridge", "https://mcp.example.com/api/mcp"
    )
    assert rc == 0, out
    data = json.loads((home / ".claude.json").read_text())
    entry = data["projects"][str(project)]["mcpServers"]["jentrix"]
    assert entry["args"][-3:] == ["mcp", "--url", "https://mcp.example.com/api/mcp"] and entry["env"] == {}
    assert data["mcpServers"] == json.loads(CLAUDE_JSON)["mcpServers"], "the user-scope servers are not touched"
    assert data["projects"]["/elsewhere"] == {"allowedTools": [], "mcpServers": {}}


# -- Codex -----------------------------------------------------------------------------------------------
CODEX_TOML = """# Codex settings, kept by hand
model = "gpt-5-codex"  # the default model
approval_policy = "on-request"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]  # pinned elsewhere

[mcp_servers.context7.env]
MY_VAR = "value"

[projects."/work/thing"]
trust_level = "trusted"
"""


def test_codex_stdio_and_remote_entries_keep_comments(home, project, capsys, monkeypatch):
    (home / ".codex").mkdir()
    path = home / ".codex" / "config.toml"
    path.write_text(CODEX_TOML)
    rc, out, _ = connect(capsys, monkeypatch, "codex", "--yes", "--workspace", "ws_abc")
    assert rc == 0, out
    text = path.read_text()
    for line in CODEX_TOML.splitlines():
        assert line in text, f"lost: {line!r}"
    cmd = adapter_cmd()
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["jentrix"] == {
        "command": cmd[0],
        "args": [*cmd[1:], "mcp", "--workspace", "ws_abc"],
        "env": {"JENTRIX_DYNAMODB_ENDPOINT": "http://127.0.0.1:8000"},
        "env_vars": ["JENTRIX_TOKEN"],
    }
    assert parsed["mcp_servers"]["context7"] == {
        "command": "npx",
        "args": ["-y", "@upstash/context7-mcp"],
        "env": {"MY_VAR": "value"},
    }
    assert "forwards $JENTRIX_TOKEN" in out

    rc, out, _ = connect(capsys, monkeypatch, "codex", "--yes", "--workspace", "ws_abc")
    assert "already up to date" in out and path.read_text() == text

    rc, out, _ = connect(capsys, monkeypatch, "codex", "--yes", "--url", "https://mcp.example.com/api/mcp")
    assert rc == 0
    changed = tomllib.loads(path.read_text())["mcp_servers"]["jentrix"]
    assert changed == {"url": "https://mcp.example.com/api/mcp", "bearer_token_env_var": "JENTRIX_TOKEN"}

    rc, out, _ = connect(capsys, monkeypatch, "codex", "--remove", "--yes")
    assert rc == 0 and path.read_text() == CODEX_TOML


def test_codex_project_scope_and_codex_home(home, project, tmp_path, capsys, monkeypatch):
    codex_home = tmp_path / "elsewhere-codex"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    rc, out, _ = connect(capsys, monkeypatch, "all", "--yes", "--endpoint", "http://127.0.0.1:9000")
    assert rc == 0 and "Detected: codex" in out
    assert "jentrix" in tomllib.loads((codex_home / "config.toml").read_text())["mcp_servers"]
    rc, out, _ = connect(capsys, monkeypatch, "codex", "--scope", "project", "--yes")
    assert rc == 0 and "only in projects it trusts" in out
    assert tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]["jentrix"]["env_vars"] == [
        "JENTRIX_TOKEN"
    ]


# -- Cursor -------------------------------------------------------------------------------------------
def test_cursor_remote_entry_refers_to_the_environment(home, project, capsys, monkeypatch):
    monkeypatch.setenv("JENTRIX_TOKEN", FAKE_TOKEN)
    (home / ".cursor").mkdir()
    path = home / ".cursor" / "mcp.json"
    original = '{\n    "mcpServers": {\n        "playwright": {\n            "command": "npx",\n            "args": ["-y", "@playwright/mcp@latest"]\n        }\n    }\n}\n'
    path.write_text(original)
    rc, out, _ = connect(capsys, monkeypatch, "cursor", "--yes", "--url", "https://mcp.example.com/api/mcp")
    assert rc == 0, out
    text = path.read_text()
    assert FAKE_TOKEN not in text and FAKE_TOKEN not in out
    assert json.loads(text)["mcpServers"]["jentrix"] == {
        "url": "https://mcp.example.com/api/mcp",
        "headers": {"Authorization": "Bearer ${env:JENTRIX_TOKEN}"},
    }
    assert '\n        "jentrix": {\n            "url"' in text, "the file's own four-space indentation is followed"
    assert '"args": ["-y", "@playwright/mcp@latest"]' in text

    rc, out, _ = connect(capsys, monkeypatch, "cursor", "--yes")  # switch to the stdio adapter
    entry = json.loads(path.read_text())["mcpServers"]["jentrix"]
    assert entry["env"] == {
        "JENTRIX_DYNAMODB_ENDPOINT": "http://127.0.0.1:8000",
        "JENTRIX_TOKEN": "${env:JENTRIX_TOKEN}",
    }
    connect(capsys, monkeypatch, "cursor", "--remove", "--yes")
    assert path.read_text() == original


# -- VS Code ------------------------------------------------------------------------------------------
VSCODE_JSONC = """{
  // Servers for this workspace (VS Code reads comments here)
  "servers": {
    "memory": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"] /* pinned */
    },
  },
  "inputs": [
    {"type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true}
  ]
}
"""


def test_vscode_project_file_keeps_comments_and_uses_an_input(home, project, capsys, monkeypatch):
    (project / ".vscode").mkdir()
    path = project / ".vscode" / "mcp.json"
    path.write_text(VSCODE_JSONC)
    rc, out, _ = connect(capsys, monkeypatch, "vscode", "--scope", "project", "--yes", "--workspace", "ws_abc")
    assert rc == 0, out
    text = path.read_text()
    assert "// Servers for this workspace (VS Code reads comments here)" in text and "/* pinned */" in text
    data = cli_connect.JsoncDoc(text).data
    entry = data["servers"]["jentrix"]
    assert entry["type"] == "stdio" and entry["env"]["JENTRIX_TOKEN"] == "${input:jentrix-token}"
    assert data["inputs"] == [
        {"type": "promptString", "id": "gh-token", "description": "GitHub token", "password": True},
        {
            "type": "promptString",
            "id": "jentrix-token",
            "description": "jentrix-mcp personal access token (tm_…)",
            "password": True,
        },
    ]
    assert "secret storage" in out and "meant to be shared" in out

    rc, out, _ = connect(capsys, monkeypatch, "vscode", "--scope", "project", "--yes", "--workspace", "ws_abc")
    assert "already up to date" in out and path.read_text() == text

    rc, out, _ = connect(capsys, monkeypatch, "vscode", "--scope", "project", "--remove", "--yes")
    assert rc == 0 and path.read_text() == VSCODE_JSONC, "the entry and its input go; nothing else moves"


def test_vscode_user_file_remote_entry(home, project, capsys, monkeypatch):
    user_dir = home / ".config" / "Code" / "User"
    user_dir.mkdir(parents=True)
    rc, out, _ = connect(capsys, monkeypatch, "all", "--yes", "--url", "http://localhost:8787/api/mcp")
    assert rc == 0 and "Detected: vscode" in out
    data = json.loads((user_dir / "mcp.json").read_text())
    assert data["servers"]["jentrix"] == {
        "type": "http",
        "url": "http://localhost:8787/api/mcp",
        "headers": {"Authorization": "Bearer ${input:jentrix-token}"},
    }
    assert [i["id"] for i in data["inputs"]] == ["jentrix-token"]


def test_an_ephemeral_entry_asks_for_no_token(home, project, capsys, monkeypatch):
    rc, out, _ = connect(capsys, monkeypatch, "vscode", "--scope", "project", "--yes", "--ephemeral")
    assert rc == 0 and "mints its own token" in out
    data = json.loads((project / ".vscode" / "mcp.json").read_text())
    assert data == {
        "servers": {
            "jentrix": {
                "type": "stdio",
                "command": adapter_cmd()[0],
                "args": [*adapter_cmd()[1:], "mcp", "--ephemeral"],
                "env": {},
            }
        }
    }


# -- diff, confirmation, detection, secrets, refusals ---------------------------------------------------
def test_the_diff_comes_first_and_no_writes_nothing(home, project, capsys, monkeypatch):
    (home / ".cursor").mkdir()
    path = home / ".cursor" / "mcp.json"
    path.write_text('{"mcpServers": {}}\n')
    rc, out, _ = connect(capsys, monkeypatch, "cursor", "--workspace", "ws_abc", answer="n\n")
    assert rc == 1 and "skipped" in out
    assert f"--- {path}" in out and f"+++ {path}" in out and '+    "jentrix": {' in out
    assert out.index("+++") < out.index("Write "), "the diff is shown before the question"
    assert path.read_text() == '{"mcpServers": {}}\n'
    rc, out, _ = connect(capsys, monkeypatch, "cursor", "--workspace", "ws_abc", answer="")  # no answer (EOF) is a no
    assert rc == 1 and path.read_text() == '{"mcpServers": {}}\n'
    rc, out, _ = connect(capsys, monkeypatch, "cursor", "--workspace", "ws_abc", "--dry-run")
    assert rc == 0 and "+++" in out and "Write " not in out and path.read_text() == '{"mcpServers": {}}\n'
    rc, out, _ = connect(capsys, monkeypatch, "cursor", "--workspace", "ws_abc", answer="y\n")
    assert rc == 0 and "written" in out and "jentrix" in json.loads(path.read_text())["mcpServers"]


def test_all_writes_only_detected_clients(home, project, capsys, monkeypatch):
    rc, _, err = connect(capsys, monkeypatch, "all", "--yes")
    assert rc == 1 and "No MCP client detected" in err
    assert sorted(p.name for p in home.iterdir()) == []
    (home / ".codex").mkdir()
    (home / ".claude").mkdir()
    rc, out, _ = connect(capsys, monkeypatch, "all", "--yes")
    assert rc == 0 and "Detected: claude-code, codex" in out
    assert (home / ".claude.json").is_file() and (home / ".codex" / "config.toml").is_file()
    assert not (home / ".cursor").exists() and not (home / ".config").exists()
    rc, out, _ = connect(capsys, monkeypatch, "cursor", "--yes")  # named: written even though not detected
    assert rc == 0 and (home / ".cursor" / "mcp.json").is_file()


def test_store_secret_writes_the_token_with_a_warning(home, project, capsys, monkeypatch):
    monkeypatch.setenv("JENTRIX_TOKEN", FAKE_TOKEN)
    rc, out, _ = connect(
        capsys,
        monkeypatch,
        "cursor",
        "--scope",
        "project",
        "--yes",
        "--store-secret",
        "--url",
        "https://mcp.example.com/api/mcp",
    )
    assert rc == 0
    path = project / ".cursor" / "mcp.json"
    assert json.loads(path.read_text())["mcpServers"]["jentrix"]["headers"] == {"Authorization": f"Bearer {FAKE_TOKEN}"}
    assert "WARNING" in out and "clear text" in out and "committed" in out
    assert FAKE_TOKEN not in out, "the printed diff hides the token"
    assert path.stat().st_mode & 0o777 == 0o600
    monkeypatch.delenv("JENTRIX_TOKEN")
    rc, _, err = connect(capsys, monkeypatch, "codex", "--yes", "--store-secret")
    assert rc == 2 and "JENTRIX_TOKEN" in err


def test_refuses_files_it_cannot_edit_safely_and_bad_arguments(home, project, capsys, monkeypatch):
    (home / ".cursor").mkdir()
    path = home / ".cursor" / "mcp.json"
    path.write_text('{"mcpServers": {"a": 1,,}}')
    rc, _, err = connect(capsys, monkeypatch, "cursor", "--yes")
    assert rc == 2 and "nothing was written" in err and path.read_text() == '{"mcpServers": {"a": 1,,}}'
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text("mcp_servers = 3\n")
    rc, _, err = connect(capsys, monkeypatch, "codex", "--yes")
    assert rc == 2 and "not a table" in err
    rc, _, err = connect(capsys, monkeypatch, "codex", "--scope", "local", "--yes")
    assert rc == 2 and "no 'local' scope" in err
    rc, _, err = connect(capsys, monkeypatch, "cursor", "--yes", "--url", "http://mcp.example.com/api/mcp")
    assert rc == 2 and "https://" in err
    rc, _, err = connect(
        capsys, monkeypatch, "cursor", "--yes", "--url", "https://x.example/api/mcp", "--workspace", "ws_a"
    )
    assert rc == 2 and "do not apply" in err
    token_file = project / "token"
    token_file.write_text(FAKE_TOKEN)
    rc, _, err = connect(
        capsys, monkeypatch, "cursor", "--yes", "--url", "https://x.example/api/mcp", "--token-file", str(token_file)
    )
    assert rc == 2 and "--store-secret" in err
    assert not (home / ".cursor" / "mcp.json").read_text().count("jentrix")


def test_dev_banner_offers_connect(home, project, tmp_path, capsys, monkeypatch):
    (home / ".cursor").mkdir()
    token_file = tmp_path / "dev-token"
    token_file.write_text(FAKE_TOKEN)
    seed = SimpleNamespace(
        user=SimpleNamespace(email="dev@jentrix.local", userId="usr_x"),
        workspace=SimpleNamespace(name="Dev Workspace", workspaceId="ws_x"),
        token_reused=True,
    )
    banner = cli.dev_banner(
        url="http://127.0.0.1:8787/api/mcp",
        token=FAKE_TOKEN,
        endpoint="http://127.0.0.1:8000",
        data_dir=tmp_path,
        seed=seed,
        token_file=token_file,
    )
    line = next(raw for raw in banner.splitlines() if " connect " in raw)
    argv = shlex.split(line)
    at = argv.index("connect")
    assert (
        argv[at + 1] == "all"
        and ["--workspace", "ws_x"] == argv[argv.index("--workspace") : argv.index("--workspace") + 2]
    )
    rc, out, _ = connect(capsys, monkeypatch, *argv[at + 1 :], "--dry-run")
    assert rc == 0 and "Detected: cursor" in out and '"--token-file",' in out and FAKE_TOKEN not in out
    assert not (home / ".cursor" / "mcp.json").exists(), "the banner's command is printed, never run"


# -- end to end: the written entry starts our adapter -----------------------------------------------------
async def test_the_written_stdio_entry_starts_the_adapter_for_the_sdk_client(
    home, project, tmp_path, capsys, monkeypatch, stack, owner: Actor
):
    token_file = tmp_path / "token"
    token_file.write_text(owner.token)
    endpoint = stack["JENTRIX_DYNAMODB_ENDPOINT"]
    rc, out, _ = connect(
        capsys,
        monkeypatch,
        "claude-code",
        "--scope",
        "project",
        "--yes",
        "--endpoint",
        endpoint,
        "--token-file",
        str(token_file),
        "--workspace",
        owner.workspace_id,
    )
    assert rc == 0, out
    entry: dict[str, Any] = json.loads((project / ".mcp.json").read_text())["mcpServers"]["jentrix"]
    assert owner.token not in json.dumps(entry)
    # What Claude Code does: its own environment (here without a token or a DynamoDB endpoint:
    # those must come from the entry) plus the entry's env, the command and args as written.
    base = adapter_env({k: v for k, v in stack.items() if k != "JENTRIX_DYNAMODB_ENDPOINT"})
    base.pop("JENTRIX_DYNAMODB_ENDPOINT", None)
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**base, **entry["env"]}, cwd=str(project)
    )
    with (tmp_path / "stderr.log").open("w") as log:
        async with Client(stdio_client(params, errlog=log)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"create_board", "list_workspaces", "get_token_context"} <= names
            listed = structured(await client.call_tool("list_workspaces", {}))
            assert [w["id"] for w in listed["workspaces"]] == [owner.workspace_id]
