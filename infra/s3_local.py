"""A local S3 for the dev stack and the tests: moto's S3 server as a child process on loopback.

Started and stopped like :mod:`infra.ddb_local` (a free port unless one is given, the child
dies with us, ``stop()`` terminates it). Unlike DynamoDB Local it binds ``127.0.0.1`` only.
The objects live in the server's memory: stopping it forgets every upload (records in
DynamoDB Local then point at objects that are gone — download URLs answer 404).

moto checks neither SigV4 signatures, expiry nor the signed headers of a presigned PUT
(docs/artifacts.md, "What the local S3 does not check"): the presign parameters are covered by
unit tests (tests/test_objects.py) and the server compares what was stored with the grant
(HeadObject, and a hash of the bytes where the emulator stores no checksum).
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

from infra.ddb_local import SetupError, _die_with_parent, check_port_free, free_port

HOST = "127.0.0.1"


class S3Local:
    """A moto S3 server child process; use as a context manager or call start()/stop()."""

    def __init__(self, *, port: int | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 30.0) -> str:
        """Start the server and wait until it answers; returns the endpoint URL."""
        try:
            import moto.server  # noqa: F401 - present?
        except ImportError:
            raise SetupError("moto's server is required for the local S3: pip install 'moto[server]'.") from None
        check_port_free(self.port, HOST)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                code = self.process.returncode
                self.process = None
                raise SetupError(f"the local S3 (moto server) exited with code {code} (is port {self.port} free?).")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):  # noqa: S310 - loopback
                    return self.endpoint
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise SetupError(f"the local S3 did not answer on {self.endpoint} within {timeout:.0f}s.") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> S3Local:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
