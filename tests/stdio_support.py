"""Driving ``python -m functions.stdio_adapter`` as a child process, line by line.

:class:`Adapter` starts the adapter with the given arguments and environment, reads its stdout
on a thread (asserting every stdout line is one JSON-RPC message: nothing else may appear
there) and keeps its stderr for the log assertions.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
_BOUND = re.compile(r" bound (\{.*\})$", re.MULTILINE)


def adapter_env(stack: dict[str, str] | None, token: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JENTRIX_")}
    env.pop("AWS_PROFILE", None)
    if stack:
        env.update(stack)
    if token is not None:
        env["JENTRIX_TOKEN"] = token
    env.update(extra)
    return env


def adapter_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "functions.stdio_adapter", *args]


class Adapter:
    def __init__(self, args: list[str], env: dict[str, str], *, cwd: Path = REPO) -> None:
        self.proc = subprocess.Popen(
            adapter_command(*args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stdout_problems: list[bytes] = []
        self._stderr: list[str] = []
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()
        self._write_lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------------
    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
                if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not line.endswith(b"\n"):
                    raise ValueError
            except ValueError:
                self.stdout_problems.append(line)
                continue
            self.messages.put(msg)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line.decode("utf-8", "replace"))

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict[str, Any] | bytes | str) -> None:
        if isinstance(message, dict):
            data = json.dumps(message).encode()
        elif isinstance(message, str):
            data = message.encode()
        else:
            data = message
        self.write(data + b"\n")

    def recv(self, timeout: float = 30.0) -> dict[str, Any]:
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no message within {timeout}s; adapter rc={self.proc.poll()}; stderr:\n{self.stderr[-3000:]}"
            ) from None

    def expect_silence(self, seconds: float = 0.5) -> None:
        try:
            msg = self.messages.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected message {msg}")

    def until(self, id_: Any, timeout: float = 30.0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Read until the reply with ``id_``; return it and whatever came before it."""
        before = []
        deadline = time.monotonic() + timeout
        while True:
            msg = self.recv(max(0.1, deadline - time.monotonic()))
            if msg.get("id") == id_ and "method" not in msg:
                return msg, before
            before.append(msg)

    # -- MCP ----------------------------------------------------------------------------------
    def request(
        self, method: str, params: dict[str, Any] | None = None, id_: Any = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        id_ = id_ if id_ is not None else f"r-{time.monotonic_ns()}"
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        reply, before = self.until(id_, timeout)
        assert not before, before
        return reply

    def initialize(
        self, *, roots: bool = False, client_info: dict[str, Any] | None = None, version: str = HANDSHAKE
    ) -> dict[str, Any]:
        caps: dict[str, Any] = {"roots": {"listChanged": True}} if roots else {}
        reply = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": caps,
                "clientInfo": client_info or {"name": "pytest", "version": "1"},
            },
            id_="init",
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply["result"]

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        modern: bool = False,
        roots: bool = False,
        extra: dict[str, Any] | None = None,
        id_: Any = None,
    ) -> dict[str, Any]:
        """``tools/call`` and its result (handshake era, or 2026-07-28 with ``modern``)."""
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if modern:
            params["_meta"] = modern_meta(roots=roots)
        params.update(extra or {})
        reply = self.request("tools/call", params, id_=id_)
        assert "result" in reply, reply
        return reply["result"]

    def binding(self, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = _BOUND.search(self.stderr)
            if m:
                return json.loads(m.group(1))
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no binding logged; stderr:\n{self.stderr[-3000:]}")

    def close(self, timeout: float = 60.0) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        rc = self.proc.wait(timeout=timeout)
        self._out.join(timeout=10)
        self._err.join(timeout=10)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def vm_hwm_kib(self) -> int:
        """Peak resident set size of the adapter process so far (``VmHWM``, KiB)."""
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"^VmHWM:\s+(\d+) kB", text, re.MULTILINE).group(1))  # type: ignore[union-attr]

    def __enter__(self) -> Adapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def modern_meta(*, roots: bool = False, client_info: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}} if roots else {},
        "io.modelcontextprotocol/clientInfo": client_info or {"name": "pytest", "version": "1"},
    }


def structured_ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("isError") is False, result
    return result["structuredContent"]


def error_of(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("isError") is True and "structuredContent" not in result, result
    return json.loads(result["content"][0]["text"])["error"]


def run_adapter(
    args: list[str], env: dict[str, str], *, stdin: bytes = b"", timeout: float = 60.0
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(adapter_command(*args), input=stdin, capture_output=True, env=env, cwd=REPO, timeout=timeout)


def git_checkout(path: Path, remote: str | None = "https://github.com/Acme/Widgets.git") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path
