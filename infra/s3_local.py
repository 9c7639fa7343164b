"""A local S3 for the dev stack and the tests: moto's S3 server as a child process on loopback.

Started and stopped like :mod:`infra.ddb_local` (the child dies with us, ``stop()`` terminates
it). Unlike DynamoDB Local it binds ``127.0.0.1`` only. ``jentrix dev`` gives it a fixed port
(:data:`DEFAULT_PORT`, ``--s3-port``) so the endpoint a client or a CLI remembers stays valid
across restarts; the tests take a free one.

Without ``data_dir`` the objects live in the server's memory and vanish when it stops. With
``data_dir`` (``jentrix dev`` passes ``<data dir>/s3``) the child runs this module's own server
(:func:`serve`): moto's WSGI application wrapped by :class:`Persisting`, which writes every
object that a successful PUT, POST or DELETE changed to disk before the answer leaves (the bytes
plus a small JSON of the headers that S3 returns: content type, ``x-amz-meta-*`` and the like)
and loads them back into a fresh emulator at start. Objects then survive a restart the way the
tasks do in DynamoDB Local's ``-dbPath``, and a download link signed before the restart still
works after it (moto checks no signature, and the port is the same).

moto 5 keeps no state of its own across restarts: its only related feature, the request
recorder (``MOTO_ENABLE_RECORDING``), appends every request with its body to one log and
replays it all at start, so a withdrawn artifact's bytes would stay on disk in that log for good
and the log would only grow. Mirroring the objects themselves keeps exactly what the emulator
holds (docs/decisions.md, "The local S3 keeps its objects in the data dir").

moto checks neither SigV4 signatures, expiry nor the signed headers of a presigned PUT
(docs/artifacts.md, "What the local S3 does not check"): the presign parameters are covered by
unit tests (tests/test_objects.py) and the server compares what was stored with the grant
(HeadObject, and a hash of the bytes where the emulator stores no checksum).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from infra.ddb_local import SetupError, _die_with_parent, check_port_free, free_port

HOST = "127.0.0.1"
DEFAULT_PORT = 8788  # next to the MCP endpoint's 8787; fixed so JENTRIX_S3_ENDPOINT survives restarts

# Headers of a stored object worth keeping (GET and HEAD answer them); the rest moto derives.
_KEPT = ("content-type", "content-encoding", "content-disposition", "content-language", "cache-control", "expires")
# moto answers anonymous object requests 403 (no ACL grants them); any well-formed SigV4
# Authorization header is accepted, since the emulator checks no signature.
_AUTH = "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"


class S3Local:
    """A moto S3 server child process; use as a context manager or call start()/stop().

    ``data_dir``: where the objects are kept across restarts (``None`` = in memory only).
    """

    def __init__(self, *, port: int | None = None, data_dir: Path | None = None) -> None:
        self.port = port or free_port()
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 30.0) -> str:
        """Start the server and wait until it answers; returns the endpoint URL.

        Raises:
            SetupError: moto is missing, the child exited, or it did not answer in time.
            PortBusy: the port is taken.
        """
        try:
            import moto.server  # noqa: F401 - present?
        except ImportError:
            raise SetupError("moto's server is required for the local S3: pip install 'moto[server]'.") from None
        check_port_free(self.port, HOST)
        if self.data_dir is None:
            command = [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)]
        else:
            self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            command = [
                sys.executable,
                "-m",
                "infra.s3_local",
                "--port",
                str(self.port),
                "--data-dir",
                str(self.data_dir),
            ]
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
            cwd=Path(__file__).resolve().parent.parent,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                code = self.process.returncode
                self.process = None
                raise SetupError(f"the local S3 (moto server) exited with code {code} (is port {self.port} free?).")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):  # loopback
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


# -- the persisting server (the child process with a data dir) --------------------------------
class Persisting:
    """WSGI middleware around moto's application: mirrors the objects to ``root`` on disk.

    Layout: ``root/<bucket>/<sha256 of the key>.bin`` (the bytes) and ``….json`` (the key and
    the kept headers), each written to a temporary file and renamed, the JSON last: a crash
    mid-write leaves either the old object or none, never a torn one. :meth:`restore` loads them
    into a fresh emulator.
    """

    def __init__(self, app: Callable[..., Any], root: Path) -> None:
        self.app = app
        self.root = root
        self._lock = threading.Lock()

    # -- talking to the wrapped emulator, in-process (werkzeug's test client: no socket)
    def _call(self, method: str, path: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
        from werkzeug.test import Client

        return Client(self.app).open(
            path, method=method, data=data, headers={"Host": HOST, "Authorization": _AUTH, **(headers or {})}
        )

    @staticmethod
    def _path(bucket: str, key: str = "") -> str:
        return "/" + quote(bucket, safe="") + ("/" + quote(key, safe="/~") if key else "")

    def _file(self, bucket: str, key: str) -> Path:
        return self.root / bucket / hashlib.sha256(key.encode()).hexdigest()

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def _save(self, bucket: str, key: str) -> None:
        got = self._call("GET", self._path(bucket, key))
        base = self._file(bucket, key)
        if got.status_code == 404:
            for suffix in (".json", ".bin"):
                base.with_suffix(suffix).unlink(missing_ok=True)
            return
        if got.status_code != 200:
            return
        headers = {
            k.lower(): v for k, v in got.headers.items() if k.lower() in _KEPT or k.lower().startswith("x-amz-meta-")
        }
        base.parent.mkdir(parents=True, exist_ok=True)
        self._write(base.with_suffix(".bin"), got.get_data())
        self._write(base.with_suffix(".json"), json.dumps({"key": key, "headers": headers}).encode())

    def _keys(self, bucket: str) -> Iterator[str]:
        import xml.etree.ElementTree as ET

        token = ""
        while True:
            listed = self._call(
                "GET",
                self._path(bucket) + "?list-type=2" + (f"&continuation-token={quote(token, safe='')}" if token else ""),
            )
            if listed.status_code != 200:
                return
            doc = ET.fromstring(listed.get_data())
            ns = doc.tag.split("}")[0] + "}" if doc.tag.startswith("{") else ""
            for item in doc.iter(f"{ns}Contents"):
                yield item.findtext(f"{ns}Key") or ""
            token = doc.findtext(f"{ns}NextContinuationToken") or ""
            if not token:
                return

    def _resync(self, bucket: str) -> None:
        """Bring ``root/<bucket>`` in line with the emulator's bucket (a request that may change many keys)."""
        present = set(self._keys(bucket))
        folder = self.root / bucket
        kept: set[str] = set()
        for meta in folder.glob("*.json") if folder.is_dir() else ():
            key = json.loads(meta.read_text(encoding="utf-8"))["key"]
            if key in present:
                kept.add(key)
            else:
                meta.unlink(missing_ok=True)
                meta.with_suffix(".bin").unlink(missing_ok=True)
        for key in present - kept:
            self._save(bucket, key)

    def after(self, method: str, path: str, query: str) -> None:
        """Mirror what a successful mutating request changed."""
        parts = path.lstrip("/").split("/", 1)
        bucket, key = parts[0], parts[1] if len(parts) > 1 else ""
        if not bucket or bucket == "moto-api":
            return
        if "partNumber=" in query:  # one part of a multipart upload: no object yet
            return
        with self._lock:
            if not key:
                if method == "DELETE":
                    for f in (self.root / bucket).glob("*"):
                        f.unlink(missing_ok=True)
                elif method == "PUT":
                    (self.root / bucket).mkdir(parents=True, exist_ok=True)
                else:  # POST: a form upload or a multi-object delete
                    self._resync(bucket)
                return
            self._save(bucket, key)

    def restore(self) -> int:
        """Create every kept bucket and put every kept object back; returns the object count."""
        count = 0
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else ():
            self._call("PUT", self._path(folder.name))
            for meta in sorted(folder.glob("*.json")):
                record = json.loads(meta.read_text(encoding="utf-8"))
                body = meta.with_suffix(".bin")
                if not body.is_file():
                    continue
                self._call(
                    "PUT",
                    self._path(folder.name, record["key"]),
                    data=body.read_bytes(),
                    headers=record.get("headers") or {},
                )
                count += 1
        return count

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        if method not in ("PUT", "POST", "DELETE"):
            return self.app(environ, start_response)
        seen: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            seen["status"] = int(status.split(" ", 1)[0])
            return (
                start_response(status, headers, exc_info) if exc_info is not None else start_response(status, headers)
            )

        answer = self.app(environ, capture)
        try:
            body = b"".join(answer)  # a mutating request's answer is small XML
        finally:
            close = getattr(answer, "close", None)
            if close is not None:
                close()
        if seen.get("status", 500) < 300:
            self.after(method, environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))
        return [body]


def serve(port: int, data_dir: Path, host: str = HOST) -> None:
    """Run moto's S3 with its objects kept in ``data_dir`` (blocks until SIGTERM)."""
    import signal

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = Persisting(DomainDispatcherApplication(create_backend_app), data_dir)
    app.restore()  # before the socket listens: the parent's readiness probe sees a complete store
    server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m infra.s3_local", description="moto's S3 with its objects kept in a directory"
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args(argv)
    serve(args.port, Path(args.data_dir))


if __name__ == "__main__":
    main()
