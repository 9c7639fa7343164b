"""``jentrix mcp --ephemeral`` start-up: progress on stderr, one line without Java, the fast-start
JVM flags, and tables that match the ones ``db.create_tables`` builds.

(The SDK and Inspector drive an ephemeral stack end to end in tests/test_stdio_sdk.py.)
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import boto3
from botocore.config import Config

from infra.ddb_local import FAST_START_FLAGS
from tests.stdio_support import Adapter, adapter_command, adapter_env

PROGRESS = "jentrix mcp --ephemeral: "


def test_without_java_it_fails_in_one_line(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = adapter_env(None, PATH=str(bin_dir))  # no java (the Python is called by its full path)
    done = subprocess.run(adapter_command("--ephemeral"), env=env, input=b"", capture_output=True, timeout=120)
    err = done.stderr.decode()
    assert done.returncode == 2 and done.stdout == b""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("jentrix mcp: error: --ephemeral needs DynamoDB Local: Java 17+ is required"), lines[0]
    assert "openjdk-17-jre-headless" in lines[0]


def _ddb_cmdline(port: str) -> list[str]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        decoded = [a.decode(errors="replace") for a in args if a]
        if "DynamoDBLocal.jar" in " ".join(decoded) and port in decoded:
            return decoded
    raise AssertionError(f"no DynamoDB Local on port {port}")


def _shape(client: object, table: str) -> tuple[object, ...]:
    desc = client.describe_table(TableName=table)["Table"]  # type: ignore[attr-defined]
    ttl = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]  # type: ignore[attr-defined]
    indexes = sorted(
        (g["IndexName"], str(g["KeySchema"]), g["Projection"]["ProjectionType"])
        for g in desc.get("GlobalSecondaryIndexes", [])
    )
    attrs = sorted((a["AttributeName"], a["AttributeType"]) for a in desc["AttributeDefinitions"])
    return str(desc["KeySchema"]), attrs, indexes, ttl.get("AttributeName"), ttl.get("TimeToLiveStatus")


def test_progress_fast_start_flags_and_tables(stack: dict[str, str]) -> None:
    from domain.store import db

    adapter = Adapter(["--ephemeral"], adapter_env(None))
    try:
        adapter.initialize()
        result = adapter.call("list_workspaces", {})
        assert [w["name"] for w in result["structuredContent"]["workspaces"]] == ["Ephemeral"]
        err = adapter.stderr
        steps = [line.split(PROGRESS, 1)[1] for line in err.splitlines() if PROGRESS in line]
        assert [s.split(" ")[0] for s in steps] == ["starting", "DynamoDB", "ready"], steps
        assert re.match(r"DynamoDB Local answered after \d+\.\d s", steps[1]) and re.match(
            r"ready after \d+\.\d s", steps[2]
        ), steps

        port = re.search(r"DynamoDB Local at http://127\.0\.0\.1:(\d+)", err).group(1)  # type: ignore[union-attr]
        cmdline = _ddb_cmdline(port)
        assert set(FAST_START_FLAGS) <= set(cmdline[: cmdline.index("-jar")]), cmdline
        assert "-disableTelemetry" in cmdline

        # The ephemeral tables, created side by side, have the shape db.create_tables gives them.
        ephemeral = boto3.client(
            "dynamodb",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=Config(retries={"total_max_attempts": 2}),
        )
        session = db.dynamodb_client()
        assert _shape(ephemeral, "jentrix-ephemeral") == _shape(session, stack["JENTRIX_TABLE"])
        assert _shape(ephemeral, "jentrix-ephemeral-idempotency") == _shape(session, stack["JENTRIX_IDEMPOTENCY_TABLE"])
    finally:
        assert adapter.close() == 0
