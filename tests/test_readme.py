"""The README's runnable examples work as pasted.

A block is runnable when the line before it (blank lines aside) is an HTML comment starting with
``<!-- runnable``; the block is either indented by four spaces or fenced with backticks. Each
command (a line, with ``\\`` continuations joined) runs in bash from the repository root,
against a scratch DynamoDB Local of this test (``JENTRIX_DYNAMODB_ENDPOINT`` set, no other
``JENTRIX_*`` variable, default table names) seeded exactly as ``jentrix dev`` seeds its store.

Placeholders, filled before a command runs:

* ``ws_…`` — the dev workspace's id (the ``jentrix dev`` banner shows it);
* ``tok_…`` — the id of the token the same block created last.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARKER = "<!-- runnable"
TOKEN_ID = re.compile(r"\b(tok_[0-9a-z]+)\b")

SEED = """
import sys
from functions.cli import _point_at
from domain.store import db
from infra.seed import seed_dev

_point_at(sys.argv[1])
db.create_tables()
print(seed_dev().workspace.workspaceId)
"""


def runnable_blocks(text: str) -> list[list[str]]:
    """The commands of every runnable block, in order."""
    lines = text.splitlines()
    blocks: list[list[str]] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip().startswith(MARKER):
            i += 1
            continue
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        body: list[str] = []
        if i < len(lines) and lines[i].lstrip().startswith("```"):
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith("```"):
                body.append(lines[i])
                i += 1
        else:
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
        commands: list[str] = []
        pending = ""
        for raw in body:
            line = raw.rstrip()
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line.endswith("\\"):
                pending += line[:-1].rstrip() + " "
                continue
            commands.append((pending + line.strip()).strip())
            pending = ""
        assert commands, f"a runnable marker without commands before line {i}"
        blocks.append(commands)
    return blocks


@pytest.fixture(scope="module")
def scratch_stack() -> Iterator[dict[str, str]]:
    from infra.ddb_local import DynamoDBLocal

    ddb = DynamoDBLocal(in_memory=True)
    ddb.start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JENTRIX_")}
        env.pop("AWS_PROFILE", None)
        env["JENTRIX_DYNAMODB_ENDPOINT"] = ddb.endpoint
        seeded = subprocess.run(
            [sys.executable, "-c", SEED, ddb.endpoint], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert seeded.returncode == 0, seeded.stderr
        yield {"env": env, "workspace": seeded.stdout.strip().splitlines()[-1]}  # type: ignore[dict-item]
    finally:
        ddb.stop()


def test_runnable_blocks_are_found() -> None:
    blocks = runnable_blocks(README.read_text(encoding="utf-8"))
    commands = [c for b in blocks for c in b]
    for needed in ("jentrix token create", "jentrix token list", "jentrix token revoke"):
        assert any(needed in c for c in commands), f"no runnable README example of `{needed}`"
    assert all("[" not in c for c in commands), "a runnable command must not carry [optional] syntax"


def test_readme_examples_run_as_pasted(scratch_stack: dict[str, str]) -> None:
    env = scratch_stack["env"]
    for block in runnable_blocks(README.read_text(encoding="utf-8")):
        last_token: str | None = None
        for command in block:
            line = command.replace("ws_…", scratch_stack["workspace"])
            if "tok_…" in line:
                assert last_token, f"{command!r} needs a token created earlier in its block"
                line = line.replace("tok_…", last_token)
            done = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)  # type: ignore[arg-type]
            assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
            assert "Traceback" not in done.stderr, done.stderr
            if " token create" in line:
                found = TOKEN_ID.search(done.stdout)
                assert found, done.stdout
                last_token = found.group(1)
            if " token revoke" in line:
                assert f"Revoked {last_token}" in done.stdout
                listed = subprocess.run(
                    [
                        "bash",
                        "-c",
                        line.split(" token revoke")[0]
                        + " token list --json "
                        + line.split(" token revoke", 1)[1].rsplit(" ", 1)[0],
                    ],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,  # type: ignore[arg-type]
                )
                status = {t["id"]: t["status"] for t in json.loads(listed.stdout)["tokens"]}
                assert status[last_token] == "revoked", status


def test_observe_hint_agrees_with_the_readme() -> None:
    """README: an explicit --workspace alone makes a connection writable; the refusal says the same."""
    from domain.auth import Principal
    from domain.context import Binding, CallContext
    from domain.errors import ToolError

    assert "A connection writes when its workspace was chosen explicitly (`--workspace`" in README.read_text(
        encoding="utf-8"
    )
    principal = Principal(user_id="usr_x", token_id="tok_x", kind="pat", stored_scopes=(), workspace_pin=None)
    ctx = CallContext(
        principal,
        "cid",
        "create_board",
        binding=Binding(None, "lt_x", observe=True, observe_reason="no workspace chosen"),
    )
    with pytest.raises(ToolError) as refused:
        ctx.ensure_writable()
    hint = refused.value.hint
    assert "--workspace ws_… (or --checkout DIR)" in hint and "and --checkout" not in hint, hint


def _client_snippets(text: str) -> list[str]:
    """The indented code blocks of the README's "Desktop clients (stdio)" section."""
    section = text[text.index("## Desktop clients (stdio)") :]
    section = section[: section.index("\n## ", 1)]
    blocks, current = [], []
    for line in section.splitlines():
        if line.startswith("    "):
            current.append(line[4:])
        elif not line.strip() and current:
            current.append("")
        elif current:
            blocks.append("\n".join(current).strip())
            current = []
    if current:
        blocks.append("\n".join(current).strip())
    return blocks


def test_desktop_client_snippets_bind_a_workspace_and_parse() -> None:
    """Issue 24 item 19: every stdio snippet for Claude Code, Cursor and Codex passes --workspace
    (without it the adapter opens a read-only observe session), each config parses as its client
    reads it, and Codex has a snippet for the remote URL as well."""
    import tomllib

    blocks = _client_snippets(README.read_text(encoding="utf-8"))
    stdio = [b for b in blocks if "jentrix mcp" in b or '"mcp"' in b]
    assert len(stdio) >= 3, blocks
    for block in stdio:
        for line in block.splitlines():
            if ("jentrix mcp" in line and not line.lstrip().startswith("#")) or '["mcp"' in line:
                assert "--workspace" in line or line.rstrip().endswith("\\"), line
    cursor = next(b for b in blocks if b.startswith('{"mcpServers"'))
    args = json.loads(cursor)["mcpServers"]["jentrix"]["args"]
    assert args[args.index("--workspace") + 1] == "ws_…"
    codex = [tomllib.loads(b)["mcp_servers"]["jentrix"] for b in blocks if b.startswith("[mcp_servers.jentrix]")]
    assert any("--workspace" in c.get("args", []) for c in codex)
    remote = next(c for c in codex if "url" in c)
    assert (
        remote["url"].endswith("/api/mcp")
        and remote["bearer_token_env_var"] == "JENTRIX_TOKEN"
        and "command" not in remote
    )


def test_setup_script_names_each_step_and_its_time(tmp_path: Path) -> None:
    """Issue 24 item 18: scripts/setup.sh says what it is doing, step by step, with each step's
    time and the total, instead of minutes of silence. Run on a copy whose tools are stand-ins
    (they print nothing and succeed), so the test reads the script's own output."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "setup.sh").write_text((ROOT / "scripts" / "setup.sh").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = "#!/usr/bin/env bash\nexit 0\n"
    for tool in ("node", "npm", "git"):
        (bin_dir / tool).write_text(stub)
    (bin_dir / "java").write_text("#!/usr/bin/env bash\necho 'openjdk version \"17.0.9\"' >&2\n")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").write_text(stub)
    for f in [*bin_dir.iterdir(), root / ".venv" / "bin" / "python"]:
        f.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", str(root / "scripts" / "setup.sh")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    started = [line for line in lines if line.startswith("setup: ") and line.endswith(" ...")]
    finished = [line for line in lines if re.fullmatch(r"setup: .+ done \(\d+ s\)", line)]
    assert len(started) == len(finished) >= 4, done.stdout
    for needed in ("pip", "DynamoDB Local", "Inspector", "conformance"):
        assert any(needed in line for line in started), (needed, done.stdout)
    assert re.fullmatch(r"setup: finished in \d+ s", lines[-1]), done.stdout


def test_readme_says_how_long_the_suite_takes_and_that_test_sh_passes_pytest_arguments() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Two commands") : text.index("## Running locally")]
    assert re.search(r"\b\d+ minutes\b", section), "the README gives the suite's duration"
    assert "scripts/test.sh" in section and "pytest" in section and "-k" in section, (
        "the README says test.sh hands its arguments to pytest"
    )
    assert '"$@"' in (ROOT / "scripts" / "test.sh").read_text(), "and the script does"
