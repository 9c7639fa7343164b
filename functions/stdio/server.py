"""The stdio server loop: frames in, replies out, and the connection's binding in between.

Threads: the caller's thread reads stdin (:class:`~.framing.LineReader`), classifies each line
and answers framing errors at once, in line order; requests go to a small worker pool, so a
slow call never holds up the next line; each reply is written whole, as one line, under a
lock. Client responses (the answer to our ``roots/list``) are consumed on the reading thread,
so they get through even while every worker waits for them. At EOF the loop stops reading,
settles a binding that still waits for roots, waits for the calls in flight, and returns 0.

Binding (see :mod:`.binding`): until it is settled the session carries an observe binding
scoped to the chosen workspace, and every request that reaches the store (``tools/call``,
``resources/read``: :data:`~functions.protocol.STORE_METHODS`) first waits for the settlement:

* handshake era — after ``notifications/initialized`` (or at the first call) a client that
  declared ``capabilities.roots`` is sent ``roots/list``; calls wait for its answer up to
  ``roots_timeout`` seconds;
* 2026-07-28 era — a request whose ``_meta`` client capabilities declare ``roots`` is answered
  with an ``input_required`` result embedding ``roots/list``; the client's retry carries the
  roots in ``inputResponses`` (with the ``requestState`` we issued) and settles the binding.

Without the roots capability the binding settles from what is explicit alone.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, Protocol

from domain.context import Binding
from functions.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    MODERN_VERSIONS,
    STORE_METHODS,
    Session,
)
from functions.stdio import binding as binding_rules
from functions.stdio.checkout import Checkout, CheckoutError, checkout_from_roots
from functions.stdio.framing import (
    DEFAULT_MAX_LINE_BYTES,
    Frame,
    LineReader,
    Oversized,
    classify,
    encode,
    error_response,
    oversized_frame,
)

log = logging.getLogger("jentrix.stdio")

ROOTS_KEY = "jentrix/roots"  # our key in inputRequests / inputResponses (2026-07-28)
MAX_UNANSWERED_ASKS = 3


class Backend(Protocol):
    def request(self, message: dict[str, Any]) -> list[dict[str, Any]]: ...
    def notify(self, message: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


def roots_outcome(roots: Any) -> tuple[Checkout | None, str | None]:
    try:
        return checkout_from_roots(roots), None
    except CheckoutError as exc:
        return None, str(exc)


class BindingState:
    """The connection's binding: settled once, from explicit data and (maybe) the client's roots."""

    def __init__(
        self,
        session: Session,
        choice: binding_rules.WorkspaceChoice,
        lifetime_id: str,
        explicit_checkout: Checkout | None,
        resolver: binding_rules.Resolver | None = None,
    ) -> None:
        self.session = session
        self.resolver = resolver  # repository -> matching workspaces (rule 5 of functions.stdio.binding)
        self.choice = choice
        self.lifetime_id = lifetime_id
        self.explicit_checkout = explicit_checkout
        self.lock = threading.Lock()
        self.settled = threading.Event()
        self.client_info: dict[str, Any] | None = None
        self.handshake_roots = False  # initialize declared capabilities.roots
        self.roots_request_id: str | None = None
        self.roots_deadline = 0.0
        self.asks = 0
        self.issued_states: set[str] = set()
        session.binding = binding_rules.pending(choice, lifetime_id)

    @property
    def wants_roots(self) -> bool:
        """Roots are worth asking for: no explicit checkout, and a workspace to bind to or one the
        checkout's repository may resolve (rule 5)."""
        if self.explicit_checkout is not None:
            return False
        return self.choice.workspace_id is not None or (
            self.resolver is not None and binding_rules.resolves_from_checkout(self.choice)
        )

    def settle(self, checkout: Checkout | None = None, reason: str | None = None) -> Binding:
        with self.lock:
            if not self.settled.is_set():
                final = binding_rules.settle(
                    self.choice,
                    self.lifetime_id,
                    checkout or self.explicit_checkout,
                    reason,
                    self.client_info,
                    self.resolver,
                )
                self.session.binding = final
                self.settled.set()
                log.info("bound %s", json.dumps(binding_rules.describe(final), ensure_ascii=False))
            assert self.session.binding is not None
            return self.session.binding

    def note_client_info(self, info: Any) -> None:
        """Record clientInfo (metadata only) on the binding, settled or not."""
        if not isinstance(info, dict):
            return
        with self.lock:
            self.client_info = info
            if self.settled.is_set() and self.session.binding is not None:
                self.session.binding = dataclasses.replace(self.session.binding, client_info=info)


class StdioServer:
    def __init__(
        self,
        backend: Backend,
        state: BindingState,
        *,
        infd: int = 0,
        out: BinaryIO | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        workers: int = 8,
        max_in_flight: int = 32,
        roots_timeout: float = 10.0,
    ) -> None:
        self.backend = backend
        self.state = state
        self.infd = infd
        self.out = out if out is not None else open(1, "wb", closefd=False)  # noqa: SIM115
        self.max_line_bytes = max_line_bytes
        self.roots_timeout = roots_timeout
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mcp-call")
        self.in_flight = threading.BoundedSemaphore(max_in_flight)
        self.write_lock = threading.Lock()
        self.closed = False
        self.lines = 0
        if not state.wants_roots:
            state.settle()

    # -- output -----------------------------------------------------------------------------
    def write(self, message: dict[str, Any]) -> None:
        data = encode(message) + b"\n"
        with self.write_lock:
            if self.closed:
                return
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.closed = True
                log.info("stdout closed by the client; replies are dropped from now on")

    # -- main loop ---------------------------------------------------------------------------
    def serve(self) -> int:
        reader = LineReader(lambda n: os.read(self.infd, n), self.max_line_bytes)
        try:
            for item in reader:
                self.lines += 1
                frame = oversized_frame(item, self.max_line_bytes) if isinstance(item, Oversized) else classify(item)
                del item
                self.on_frame(frame)
                if self.closed:
                    break
        finally:
            self.shutdown()
        return 0

    def shutdown(self) -> None:
        with self.state.lock:
            waiting = self.state.roots_request_id is not None and not self.state.settled.is_set()
        if waiting:
            self.state.settle(None, "the input ended before the client answered roots/list")
        self.pool.shutdown(wait=True)
        self.backend.close()

    def on_frame(self, frame: Frame) -> None:
        if frame.kind == "invalid":
            assert frame.reply is not None
            self.write(frame.reply)
        elif frame.kind == "response":
            assert frame.message is not None
            self.on_client_response(frame.message)
        elif frame.kind == "notification":
            assert frame.message is not None
            self.on_notification(frame.message)
        elif frame.kind == "request":
            assert frame.message is not None
            message = frame.message
            if message["method"] == "initialize":
                self.on_initialize(message)
            self.pool.submit(self._run_request, message, self._slot())

    # -- client → server traffic that shapes the binding ----------------------------------------
    def on_initialize(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if not isinstance(params, dict):
            return
        caps = params.get("capabilities")
        self.state.handshake_roots = isinstance(caps, dict) and isinstance(caps.get("roots"), dict)
        self.state.note_client_info(params.get("clientInfo"))

    def on_notification(self, message: dict[str, Any]) -> None:
        method = message["method"]
        if method == "notifications/initialized":
            self.request_roots()
        elif method == "notifications/roots/list_changed":
            log.info("the client's roots changed; the binding of a connection is fixed, so it stays as it is")
        self.pool.submit(self._run_notification, message, self._slot())

    def request_roots(self) -> bool:
        """Send ``roots/list`` once (handshake era); True when an answer is (or will be) awaited."""
        st = self.state
        with st.lock:
            if st.settled.is_set():
                return False
            if st.roots_request_id is not None:
                return True
            if not (st.wants_roots and st.handshake_roots):
                reason = "the client did not declare the roots capability"
                ask = False
            else:
                st.roots_request_id = f"jentrix-roots-{secrets.token_hex(4)}"
                st.roots_deadline = time.monotonic() + self.roots_timeout
                ask = True
        if not ask:
            st.settle(None, reason)
            return False
        self.write({"jsonrpc": "2.0", "id": st.roots_request_id, "method": "roots/list"})
        return True

    def on_client_response(self, message: dict[str, Any]) -> None:
        st = self.state
        if st.roots_request_id is None or message.get("id") != st.roots_request_id:
            log.info("ignored a response to a request this server did not send (id %r)", message.get("id"))
            return
        if "error" in message:
            err = message.get("error")
            detail = err.get("message") if isinstance(err, dict) else err
            st.settle(None, f"the client answered roots/list with an error ({detail})")
            return
        result = message.get("result")
        roots = result.get("roots") if isinstance(result, dict) else None
        st.settle(*roots_outcome(roots))

    # -- requests ---------------------------------------------------------------------------
    def _slot(self) -> bool:
        """Take an in-flight slot (back-pressure on the reader). While the binding is unsettled
        the reader never blocks here: calls may be waiting for the roots answer that only the
        reader can deliver. Returns whether a slot was taken."""
        if self.state.settled.is_set():
            self.in_flight.acquire()
            return True
        return self.in_flight.acquire(blocking=False)

    def _run_notification(self, message: dict[str, Any], slot: bool) -> None:
        try:
            self.backend.notify(message)
        except Exception:  # a notification has nobody to tell
            log.exception("notification %s failed", message.get("method"))
        finally:
            if slot:
                self.in_flight.release()

    def _run_request(self, message: dict[str, Any], slot: bool) -> None:
        try:
            replies = self.handle_request(message)
        except Exception:  # the boundary: the client gets an error, never a traceback
            log.exception("request %s failed", message.get("method"))
            replies = [
                error_response(
                    message.get("id"),
                    INTERNAL_ERROR,
                    "Internal error while handling the request; see the adapter's stderr.",
                )
            ]
        finally:
            if slot:
                self.in_flight.release()
        for reply in replies:
            self.write(reply)

    def handle_request(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        # Not only calls: a read run under the pending binding (no workspace yet, while the
        # checkout may still choose one) could see a workspace the final binding excludes.
        if message["method"] in STORE_METHODS and not self.state.settled.is_set():
            early, message = self.bind_before_call(message)
            if early is not None:
                return [early]
        return self.backend.request(message)

    def bind_before_call(self, message: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """Settle the binding before the first call runs; maybe answer with an input round first."""
        st = self.state
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and META_VERSION in meta:
            if meta.get(META_VERSION) not in MODERN_VERSIONS or not isinstance(meta.get(META_CAPABILITIES), dict):
                return None, message  # the protocol layer refuses it; the pending binding stays
            return self._modern_round(message, params, meta)  # type: ignore[arg-type]
        if self.request_roots():
            remaining = st.roots_deadline - time.monotonic()
            if not st.settled.wait(max(0.0, remaining)):
                st.settle(None, f"the client did not answer roots/list within {self.roots_timeout:g}s")
        return None, message

    def _modern_round(
        self, message: dict[str, Any], params: dict[str, Any], meta: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        st = self.state
        st.note_client_info(meta.get(META_CLIENT_INFO))
        caps = meta[META_CAPABILITIES]
        if not (st.wants_roots and isinstance(caps.get("roots"), dict)):
            st.settle(None, "the client did not declare the roots capability")
            return None, message
        responses = params.get("inputResponses")
        if isinstance(responses, dict) and ROOTS_KEY in responses:
            if params.get("requestState") not in st.issued_states:
                return error_response(
                    message["id"],
                    INVALID_PARAMS,
                    "Invalid params: requestState was not issued by this connection; call again without inputResponses.",
                ), message
            answer = responses[ROOTS_KEY]
            st.settle(*roots_outcome(answer.get("roots") if isinstance(answer, dict) else None))
            clean = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
            return None, {**message, "params": clean}
        with st.lock:
            st.asks += 1
            give_up = st.asks > MAX_UNANSWERED_ASKS
            state = secrets.token_urlsafe(18)
            st.issued_states.add(state)
        if give_up:
            st.settle(None, f"the client declared roots but did not answer {MAX_UNANSWERED_ASKS} requests for them")
            return None, message
        result = {
            "resultType": "input_required",
            "inputRequests": {ROOTS_KEY: {"method": "roots/list"}},
            "requestState": state,
        }
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}, message
