"""``jentrix artifact upload`` / ``withdraw`` in-process against the session's DynamoDB Local and
local S3, with the reading side through the official SDK client: the file reaches S3 by a real
HTTP PUT, the attached artifact downloads byte for byte, a failed PUT is retried once, and a
human ADMIN's withdrawal leaves a tombstone (no URL, object gone, the on_withdraw hook run)."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx2
import pytest

from functions import cli, cli_artifacts, cli_common
from tests.conftest import make_actor, mcp_client
from tests.tools_support import new_board, new_task, ok

pytestmark = pytest.mark.asyncio


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, error = capsys.readouterr()
    return code, out, error


@pytest.fixture
def human(stack):
    return make_actor("Hana", f"Artifact CLI {uuid.uuid4().hex[:12]}", holder="human")


def _file(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


async def test_upload_attach_download_withdraw(capsys, tmp_path, server_url, dynamodb_endpoint, human):
    token_file = _file(tmp_path, "token", human.token.encode())
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    seen = []
    from domain.store import artifacts as artifact_store

    artifact_store.on_withdraw(seen.append)
    try:
        async with mcp_client(server_url, human.token) as client:
            board = await new_board(client, human.workspace_id, "CLI")
            task = await new_task(client, board["columns"][0]["id"], "screenshot it")
            code, out, error = run_cli(
                capsys,
                "artifact",
                "upload",
                _file(tmp_path, "after.png", data),
                "--task",
                task["id"],
                "--token-file",
                token_file,
                "--endpoint",
                dynamodb_endpoint,
                "--json",
            )
            assert code == 0, error
            import json

            made = json.loads(out)
            assert made["type"] == "SCREENSHOT" and made["size"] == len(data) and made["taskId"] == task["id"]
            got = await ok(client, "get_artifact", {"artifactId": made["id"]})
            assert httpx2.get(got["downloadUrl"], timeout=30).content == data

            code, out, error = run_cli(
                capsys,
                "artifact",
                "upload",
                _file(tmp_path, "notes.md", b"# Findings\n\nall good\n"),
                "--task",
                task["id"],
                "--type",
                "FINDINGS",
                "--token-file",
                token_file,
                "--endpoint",
                dynamodb_endpoint,
            )
            assert code == 0 and "Attached FINDINGS" in out, error

            agent_file = _file(
                tmp_path, "agent", __import__("domain.auth", fromlist=["mint_pat"]).mint_pat(human.user_id)[0].encode()
            )
            code, _, error = run_cli(
                capsys, "artifact", "withdraw", made["id"], "--token-file", agent_file, "--endpoint", dynamodb_endpoint
            )
            assert code == 1 and "human" in error
            code, out, error = run_cli(
                capsys, "artifact", "withdraw", made["id"], "--token-file", token_file, "--endpoint", dynamodb_endpoint
            )
            assert code == 0 and "tombstone" in out, error
            assert [r.artifactId for r in seen] == [made["id"]]
            gone = await ok(client, "get_artifact", {"artifactId": made["id"]})
            assert (
                gone["artifact"]["withdrawn"]
                and gone["downloadUrl"] is None
                and gone["body"] is None
                and not gone["artifact"]["hasObject"]
            )
            import json as _json

            read = await client.read_resource(f"stacks://artifact/{made['id']}", cache_mode="bypass")
            assert _json.loads(read.contents[0].text)["downloadUrl"] is None
            listed = await ok(client, "list_artifacts", {"workspaceId": human.workspace_id, "taskId": task["id"]})
            assert {a["id"]: a["withdrawn"] for a in listed["artifacts"]}[made["id"]] is True and listed[
                "totalCount"
            ] == 2
            from domain import objects

            assert objects.head(f"objects/{human.workspace_id}/artifact/{made['id']}") is None
            code, _, error = run_cli(
                capsys, "artifact", "withdraw", made["id"], "--token-file", token_file, "--endpoint", dynamodb_endpoint
            )
            assert code == 1 and "already withdrawn" in error
    finally:
        artifact_store._withdraw_hooks.remove(seen.append)


async def test_withdraw_needs_admin(capsys, tmp_path, server_url, dynamodb_endpoint, human):
    from domain.store import keys, members
    from domain.store.models import UserRow

    member = make_actor("Mo", None, holder="human")
    members.add(human.workspace_id, UserRow.get(*keys.user_profile(member.user_id)), "MEMBER")
    async with mcp_client(server_url, human.token) as client:
        project = (await ok(client, "create_project", {"workspaceId": human.workspace_id, "name": "W"}))["project"]
        made = (
            await ok(
                client,
                "attach_artifact",
                {
                    "workspaceId": human.workspace_id,
                    "type": "PR",
                    "title": "x",
                    "url": "https://example.com",
                    "projectId": project["id"],
                },
            )
        )["artifact"]
    code, _, error = run_cli(
        capsys,
        "artifact",
        "withdraw",
        made["id"],
        "--token-file",
        _file(tmp_path, "m", member.token.encode()),
        "--endpoint",
        dynamodb_endpoint,
    )
    assert code == 1 and "ADMIN" in error


async def test_a_failed_put_is_retried_once(tmp_path, monkeypatch):
    calls = []

    class Flaky:
        def __init__(self, code):
            self.status_code, self.text = code, "no"

    def fake_put(url, content, headers, timeout):
        b"".join(content)
        calls.append(url)
        return Flaky(500 if len(calls) == 1 else 200)

    monkeypatch.setattr(httpx2, "put", fake_put)
    path = tmp_path / "f.txt"
    path.write_bytes(b"abc")
    cli_artifacts.put_file("http://s3/x", {}, path, 3)
    assert len(calls) == 2
    calls.clear()
    monkeypatch.setattr(httpx2, "put", lambda url, content, headers, timeout: (calls.append(url), Flaky(503))[1])
    with pytest.raises(cli.CliError):
        cli_artifacts.put_file("http://s3/x", {}, path, 3)
    assert len(calls) == 2


async def test_dev_banner_prints_the_local_s3_and_the_server_starts_on_loopback(stack):
    from types import SimpleNamespace

    from infra.s3_local import S3Local

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
        s3_endpoint="http://127.0.0.1:45678",
    )
    assert any(line.strip().startswith("Local S3:        http://127.0.0.1:45678") for line in banner.splitlines())
    with S3Local() as s3:
        assert (
            s3.endpoint.startswith("http://127.0.0.1:")
            and httpx2.get(s3.endpoint + "/moto-api/", timeout=10).status_code == 200
        )
    assert s3.process is None


async def test_upload_over_http_with_url(capsys, tmp_path, server_url, human):
    """--url: grant over REST, PUT, attach_artifact as an MCP tools/call — nothing in-process."""
    import json

    base = server_url.removesuffix("/api/mcp")
    token_file = _file(tmp_path, "token", human.token.encode())
    data = b"step 1 ok\nstep 2 ok\n" * 50
    async with mcp_client(server_url, human.token) as client:
        board = await new_board(client, human.workspace_id, "CLI over HTTP")
        task = await new_task(client, board["columns"][0]["id"], "log it")
        code, out, error = run_cli(
            capsys,
            "artifact",
            "upload",
            _file(tmp_path, "run.log", data),
            "--task",
            task["id"],
            "--token-file",
            token_file,
            "--url",
            base,
            "--json",
        )
        assert code == 0, error
        made = json.loads(out)
        assert made["type"] == "LOG" and made["size"] == len(data) and made["taskId"] == task["id"]
        got = await ok(client, "get_artifact", {"artifactId": made["id"]})
        assert httpx2.get(got["downloadUrl"], timeout=30).content == data
        # a refusal from attach_artifact (a foreign project id) is printed, and nothing is stored
        before = (await ok(client, "list_artifacts", {"workspaceId": human.workspace_id}))["totalCount"]
        code, _, error = run_cli(
            capsys,
            "artifact",
            "upload",
            _file(tmp_path, "b.log", b"x\n"),
            "--project",
            f"pj_{human.workspace_id[3:]}_zzzzzzzz",
            "--token-file",
            token_file,
            "--url",
            base,
        )
        assert code != 0 and error
        assert (await ok(client, "list_artifacts", {"workspaceId": human.workspace_id}))["totalCount"] == before
    bad = _file(tmp_path, "bad-token", b"tm_" + b"x" * 43)
    code, _, error = run_cli(
        capsys,
        "artifact",
        "upload",
        _file(tmp_path, "c.log", b"y\n"),
        "--task",
        task["id"],
        "--token-file",
        bad,
        "--url",
        base,
    )
    assert code == 1 and "unknown, revoked or expired" in error


async def test_local_s3_has_a_fixed_default_port_and_keeps_objects_in_a_data_dir(tmp_path):
    """Issue 24 item 16: `jentrix dev` puts its local S3 on a fixed port (so JENTRIX_S3_ENDPOINT
    and signed links stay valid), and with a data dir an object and its headers outlive a restart;
    a deleted object stays deleted."""
    import boto3
    from botocore.config import Config

    from infra.ddb_local import free_port
    from infra.s3_local import DEFAULT_PORT, S3Local

    assert cli.build_parser().parse_args(["dev"]).s3_port == DEFAULT_PORT == cli.DEFAULT_S3_PORT
    assert cli_common.DEFAULT_S3_ENDPOINT == f"http://127.0.0.1:{DEFAULT_PORT}"

    def client(endpoint):
        return boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
        )

    port, data = free_port(), tmp_path / "s3"
    with S3Local(port=port, data_dir=data) as s3:
        c = client(s3.endpoint)
        c.create_bucket(Bucket="kept-bucket")
        put = c.generate_presigned_url(
            "put_object",
            Params={"Bucket": "kept-bucket", "Key": "pending/ws/a", "ContentType": "text/plain"},
            ExpiresIn=600,
            HttpMethod="PUT",
        )
        assert (
            httpx2.put(put, content=b"kept bytes\n", headers={"Content-Type": "text/plain"}, timeout=30).status_code
            == 200
        )
        c.copy_object(
            Bucket="kept-bucket",
            Key="objects/ws/LOG/ar_1",
            CopySource={"Bucket": "kept-bucket", "Key": "pending/ws/a"},
            MetadataDirective="COPY",
        )
        c.delete_object(Bucket="kept-bucket", Key="pending/ws/a")
        link = c.generate_presigned_url(
            "get_object", Params={"Bucket": "kept-bucket", "Key": "objects/ws/LOG/ar_1"}, ExpiresIn=600
        )
    with S3Local(port=port, data_dir=data) as s3:
        got = httpx2.get(link, timeout=30)
        assert got.status_code == 200 and got.content == b"kept bytes\n" and got.headers["content-type"] == "text/plain"
        listed = client(s3.endpoint).list_objects_v2(Bucket="kept-bucket").get("Contents", [])
        assert [o["Key"] for o in listed] == ["objects/ws/LOG/ar_1"]
    with S3Local(port=free_port()) as s3:  # without a data dir nothing is kept
        assert client(s3.endpoint).list_buckets()["Buckets"] == []


async def test_uploads_default_to_the_dev_stacks_s3_and_a_failure_names_the_endpoint_and_flag(
    capsys, tmp_path, server_url, dynamodb_endpoint, human
):
    """Issue 24 item 15: without --s3-endpoint or JENTRIX_S3_ENDPOINT an in-process upload goes to the
    dev stack's local S3 (as the token commands go to its DynamoDB), never to AWS; when nothing
    answers there, the one-line error names the endpoint tried and the flag to change."""
    import os

    from domain import objects
    from domain import settings as settings_module
    from infra.ddb_local import free_port

    dead = f"http://127.0.0.1:{free_port()}"  # the dev stack's default, with no stack listening
    token_file = _file(tmp_path, "token", human.token.encode())
    async with mcp_client(server_url, human.token) as client:
        board = await new_board(client, human.workspace_id, "Default S3")
        task = await new_task(client, board["columns"][0]["id"], "upload without flags")
    saved = os.environ.pop("JENTRIX_S3_ENDPOINT", None)
    default = cli_common.DEFAULT_S3_ENDPOINT
    cli_common.DEFAULT_S3_ENDPOINT = dead
    try:
        for command in ("artifact", "attachment"):
            code, out, error = run_cli(
                capsys,
                command,
                "upload",
                _file(tmp_path, "run.log", b"line\n"),
                "--task",
                task["id"],
                "--token-file",
                token_file,
                "--endpoint",
                dynamodb_endpoint,
            )
            assert code == 1 and out == "", error
            line = error.strip().splitlines()[-1]
            assert dead in line and "--s3-endpoint" in line and "jentrix dev" in line, line
            assert "amazonaws" not in error
    finally:
        cli_common.DEFAULT_S3_ENDPOINT = default
        if saved is not None:
            os.environ["JENTRIX_S3_ENDPOINT"] = saved
        settings_module.reload()
        objects.reset()


async def test_upload_messages_read_as_sentences_archives_need_a_type_and_no_json_logs(
    tmp_path, server_url, dynamodb_endpoint, s3_endpoint, human
):
    """Issue 24 item 21, the CLI's part: a refused content type reads "… upload type. Accepted: …",
    a .zip gets no LOG default (it asks for --type), and an in-process upload prints no JSON log
    line on the terminal (run as a user runs it: a separate process)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    token_file = _file(tmp_path, "token", human.token.encode())
    async with mcp_client(server_url, human.token) as client:
        board = await new_board(client, human.workspace_id, "Messages")
        task = await new_task(client, board["columns"][0]["id"], "sentences")

    def upload(*extra: str) -> subprocess.CompletedProcess[str]:
        env = dict(__import__("os").environ)  # the session stack's table names and endpoints,
        env.pop("POWERTOOLS_LOG_LEVEL", None)  # but Powertools' own default level, as a user has it
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "functions.cli",
                "artifact",
                "upload",
                *extra,
                "--task",
                task["id"],
                "--token-file",
                token_file,
                "--endpoint",
                dynamodb_endpoint,
                "--s3-endpoint",
                s3_endpoint,
            ],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = upload(_file(tmp_path, "run.log", b"ok\n" * 20))
    assert done.returncode == 0, done.stderr
    assert not [line for line in done.stderr.splitlines() if line.lstrip().startswith("{")], done.stderr
    archive = upload(_file(tmp_path, "trace.zip", b"PK\x03\x04" + b"\x00" * 40))
    assert archive.returncode == 2 and "--type" in archive.stderr and "TRACE" in archive.stderr, archive.stderr
    odd = upload(_file(tmp_path, "data.bin", b"\x00\x01"), "--content-type", "application/x-odd", "--type", "TRACE")
    assert odd.returncode == 1 and "upload type. Accepted: " in odd.stderr, odd.stderr
