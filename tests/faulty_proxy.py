"""A TCP proxy that sits in front of DynamoDB Local and delays or drops responses.

Test support for fault runs: the in-process hooks (botocore ``before-send``) raise the error a
fault would cause; this proxy makes the fault itself on the wire, so botocore's own read timeout
fires on a late answer and its own retry logic meets a connection closed before the answer.
DynamoDB Local still applies a request whose answer is dropped (a lost acknowledgement), which
no in-process hook can imitate.

The proxy reads the ``X-Amz-Target`` header of each request on a connection and decides, for the
first bytes of the answer that follows, whether to forward them, hold them for ``delay_s``, or
reset the client's connection. Only requests whose operation is in ``targets`` are touched. It
runs an asyncio loop on its own thread; :meth:`start` returns the endpoint URL to use.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections import Counter
from collections.abc import Iterable

_TARGET = re.compile(rb"X-Amz-Target:\s*DynamoDB_\d+\.(\w+)", re.IGNORECASE)


class FaultyProxy:
    """``delay_rate`` / ``drop_rate``: shares of the targeted answers held past the client's read
    timeout / cut off by a connection reset; ``counts`` tells how many of each happened."""

    def __init__(
        self,
        upstream: str,
        *,
        targets: Iterable[str],
        delay_rate: float,
        drop_rate: float,
        delay_s: float,
        seed: int = 0,
    ) -> None:
        host, _, port = upstream.removeprefix("http://").rstrip("/").partition(":")
        self.upstream = (host, int(port))
        self.targets = set(targets)
        self.delay_rate, self.drop_rate, self.delay_s = delay_rate, drop_rate, delay_s
        self.rng = random.Random(seed)
        self.counts: Counter[str] = Counter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="faulty-proxy", daemon=True)
        self._thread.start()
        ready.wait(10)
        port = self._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        if self._loop is None:
            return

        async def close() -> None:
            self._server.close()  # type: ignore[union-attr]
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)  # type: ignore[union-attr]
        self._loop.close()
        self._loop = None

    def _decide(self, target: str | None) -> str:
        if target not in self.targets:
            return "forward"
        roll = self.rng.random()
        verdict = "drop" if roll < self.drop_rate else "delay" if roll < self.drop_rate + self.delay_rate else "forward"
        self.counts[verdict] += 1
        return verdict

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.transport.abort()
            return
        state: dict[str, object] = {"target": None, "fresh": False}

        async def upstream() -> None:
            while data := await client_r.read(65536):
                m = _TARGET.search(data)
                if m:
                    state["target"], state["fresh"] = m.group(1).decode(), True
                up_w.write(data)
                await up_w.drain()
            up_w.close()

        async def downstream() -> None:
            while data := await up_r.read(65536):
                if state["fresh"]:
                    state["fresh"] = False
                    verdict = self._decide(state["target"])  # type: ignore[arg-type]
                    if verdict == "drop":
                        client_w.transport.abort()  # a reset before any byte of the answer
                        up_w.transport.abort()
                        return
                    if verdict == "delay":
                        await asyncio.sleep(self.delay_s)  # past the client's read timeout
                client_w.write(data)
                await client_w.drain()
            client_w.close()

        try:
            await asyncio.gather(upstream(), downstream())
        except (OSError, asyncio.CancelledError, ConnectionError):
            pass
        finally:
            for w in (client_w, up_w):
                w.transport.abort()
