"""The FastAPI app serving MCP at ``POST /api/mcp`` — the same app under uvicorn and Lambda.

It also serves ``POST /api/artifacts/upload-grant`` (:func:`upload_grant_reply`) and
``POST /api/tasks/{taskId}/attachments`` (:func:`attachment_reply`): the same bearer token, JSON in and out, failures as the tools' error envelope ``{error:{code,message,hint}}``
with a matching HTTP status (docs/artifacts.md).

HTTP-only concerns live here and nowhere else: method (405 with ``Allow: POST``), ``Origin``
(403 unless allowed), bearer authentication (401 with a ``WWW-Authenticate: Bearer``
challenge), and rendering :class:`~functions.protocol.Reply` as ``application/json``.
Everything else is the protocol layer's.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from functions.fastapi_lean import import_fastapi

import_fastapi()  # FastAPI's OpenAPI models deferred: openapi_url=None never builds a document

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from domain import auth, faults, observability, toolsets
from domain.auth import Principal
from domain.search import install_index_hook
from domain.settings import settings
from domain.store import db, deadline
from domain.store.parallel import LazyPool
from functions import public_url
from functions.jsonrpc import encode
from functions.protocol import McpProtocol, Session

MCP_PATH = "/api/mcp"
UPLOAD_GRANT_PATH = "/api/artifacts/upload-grant"
ATTACHMENTS_PATH = "/api/tasks/{taskId}/attachments"
# One route serves the endpoint and its selection URLs (domain.toolsets.from_path: /readonly,
# /x/<toolsets>[/readonly]; anything else under it is 404) — one route, as cheap to build as before.
MCP_ROUTE = MCP_PATH + "{rest:path}"
log = logging.getLogger("jentrix.http")
T = TypeVar("T")
WORKERS = 40  # requests served at once by one process (uvicorn; a Lambda environment serves one)
_WORKERS = LazyPool(WORKERS, "jentrix-http")
NO_TELEMETRY: Any = {"tracing": False, "metrics": False, "logs": False}  # FastAPI's native OpenTelemetry, off
_LOOPBACK_ORIGIN = re.compile(r"^https?://(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$")


async def in_worker(fn: Callable[[], T], scope: dict[str, Any]) -> T:
    """Run the blocking ``fn`` (token check, tool call: DynamoDB I/O) off the event loop, in a
    copy of the caller's context — except in a Lambda invocation (``scope`` carries Mangum's
    ``aws.event``), where ``fn`` runs right here: a Lambda environment serves one request at a
    time, so no other request waits on this loop, and the hop would only add two thread
    switches to every call.

    A process-wide pool (:class:`~domain.store.parallel.LazyPool`: created on first use, never at
    import) rather than Starlette's ``run_in_threadpool``: anyio stops its idle worker threads
    when the event loop's root task ends, which a long-lived server (uvicorn) would otherwise pay
    for in new threads."""
    if lambda_event(scope) is not None:
        return fn()
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_WORKERS.get(), contextvars.copy_context().run, fn)


def request_deadline_seconds(scope: dict[str, Any]) -> float:
    """The time one request may take, token check and call included: ``JENTRIX_CALL_DEADLINE_MS``,
    and in a Lambda invocation (Mangum's ``aws.context``) no more than its remaining time less
    :data:`~domain.store.deadline.LAMBDA_MARGIN_SECONDS`, so the envelope is written before
    the function (and API Gateway's 29 s) times out."""
    seconds = settings.call_deadline_ms / 1000
    remaining = getattr(scope.get("aws.context"), "get_remaining_time_in_millis", None)
    if callable(remaining):
        try:
            seconds = min(seconds, remaining() / 1000 - deadline.LAMBDA_MARGIN_SECONDS)
        except (TypeError, ValueError):
            pass
    return max(seconds, deadline.MIN_READ_TIMEOUT_SECONDS)


def origin_allowed(origin: str | None) -> bool:
    """No Origin (server-to-server agents) is fine; browsers must come from an allowed origin."""
    if origin is None:
        return True
    return origin in settings.allowed_origins or bool(_LOOPBACK_ORIGIN.match(origin))


def bearer(headers: Any) -> str | None:
    value = headers.get("authorization")
    if not value:
        return None
    scheme, _, secret = value.partition(" ")
    return secret.strip() if scheme.lower() == "bearer" and secret.strip() else None


def lambda_event(scope: dict[str, Any]) -> dict[str, Any] | None:
    """The API Gateway event this request came from: only Mangum puts ``aws.event`` in the ASGI
    scope, so a request that reached uvicorn directly has none, whatever its headers say."""
    event = scope.get("aws.event")
    return event if isinstance(event, dict) else None


def authorizer_context(scope: dict[str, Any]) -> dict[str, Any] | None:
    """``requestContext.authorizer`` of the Lambda event (API Gateway REST with our authorizer)."""
    event = lambda_event(scope) or {}
    ctx = (event.get("requestContext") or {}).get("authorizer")
    return ctx if isinstance(ctx, dict) and ctx.get("jentrixUserId") else None


def principal_from_authorizer(scope: dict[str, Any]) -> Principal | None:
    """The principal the Lambda authorizer already verified (0 token reads), if any."""
    ctx = authorizer_context(scope)
    return auth.principal_from_context(ctx) if ctx else None


CHALLENGE_SCOPE = "read write"  # what a new connection asks for; admin tools step up with a 403 (below)


def _unauthorized(description: str, *, missing: bool = False, scope: dict[str, Any] | None = None) -> Response:
    """401 with a Bearer challenge naming our protected-resource metadata (RFC 9728 §5.1) and the
    scopes a connection needs. A request that sent no credentials gets no error code (RFC 6750
    §3.1); a bad token gets ``error="invalid_token"``."""
    challenge = 'Bearer realm="jentrix"'
    if scope is not None:
        challenge += f', resource_metadata="{public_url.resource_metadata_url(scope)}", scope="{CHALLENGE_SCOPE}"'
    if not missing:
        challenge += f', error="invalid_token", error_description="{description}"'
    body = {"error": "unauthorized", "error_description": description}
    return JSONResponse(body, status_code=401, headers={"WWW-Authenticate": challenge})


def _insufficient_scope(needed: str, tool: str, scope: dict[str, Any]) -> Response:
    """403 for an OAuth token that lacks a tool's scope (RFC 6750 §3.1), listing every scope the
    call needs in one challenge (the ladder up to the tool's), so the client asks once."""
    from domain.auth import SCOPES

    scopes = " ".join(SCOPES[: SCOPES.index(needed) + 1])  # type: ignore[arg-type]
    description = f"{tool} needs the {needed} scope"
    challenge = (
        f'Bearer realm="jentrix", error="insufficient_scope", scope="{scopes}", '
        f'resource_metadata="{public_url.resource_metadata_url(scope)}", error_description="{description}"'
    )
    return JSONResponse(
        {"error": "insufficient_scope", "error_description": description, "scope": scopes},
        status_code=403,
        headers={"WWW-Authenticate": challenge},
    )


def oauth_refusal(caller: Principal, raw: bytes, registry: Any, scope: dict[str, Any]) -> Response | None:
    """The HTTP refusal an OAuth token draws before the call runs, or ``None``.

    * audience (RFC 8707): the token must have been issued for this server's resource -> else 401;
    * scope: a ``tools/call`` of a tool above the token's scopes -> 403 ``insufficient_scope``,
      so the client can ask the user for more (a PAT gets the FORBIDDEN envelope instead)."""
    if caller.audience != public_url.resource(scope):
        return _unauthorized("The token was issued for another resource.", scope=scope)
    try:
        message = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if (
        not isinstance(message, dict)
        or message.get("method") != "tools/call"
        or not isinstance(message.get("params"), dict)
    ):
        return None
    name = message["params"].get("name")
    spec = registry.get(name) if isinstance(name, str) else None
    if spec is not None and not caller.allows(spec.scope):
        return _insufficient_scope(spec.scope, name, scope)
    return None


def _context_failed(exc: Exception) -> Response:
    """The REST routes' answer to an unreadable authorizer context: the INTERNAL envelope, 500."""
    from domain.pipeline import internal_error

    cid = uuid.uuid4().hex
    log.error("unreadable authorizer context (correlation id %s): %s", cid, exc)
    return JSONResponse(internal_error(cid).envelope(), status_code=500)


def _auth_failed(raw: bytes, exc: Exception) -> Response:
    """The token could not be checked: a JSON-RPC error body (503 + Retry-After when the store is
    unreachable or throttled, else 500), with the request's id when the body (``raw``) names one."""
    cid = uuid.uuid4().hex
    try:
        parsed = json.loads(raw)
        rpc_id = parsed.get("id") if isinstance(parsed, dict) and isinstance(parsed.get("id"), (str, int)) else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        rpc_id = None
    if faults.storage_unavailable(exc):
        log.warning("storage unavailable while checking a token (correlation id %s): %r", cid, exc)
        wait = faults.RETRY_AFTER_SECONDS
        message = f"The storage service is unavailable, so the token could not be checked (correlation id {cid}). Nothing was done."
        data = {"correlationId": cid, "retryAfterSeconds": wait, "hint": f"Retry in about {wait} seconds."}
        status, headers = 503, {"Retry-After": str(wait)}
    elif faults.throttled(exc):
        log.warning("storage throttled while checking a token (correlation id %s): %r", cid, exc)
        wait = faults.BUSY_RETRY_AFTER_SECONDS
        message = f"The storage service is busy (throttled), so the token could not be checked (correlation id {cid}). Nothing was done."
        data = {"correlationId": cid, "retryAfterSeconds": wait, "hint": f"Retry in about {wait} seconds."}
        status, headers = 503, {"Retry-After": str(wait)}
    else:
        log.error("token check failed (correlation id %s)", cid, exc_info=exc)
        message = f"The server failed while checking the token (correlation id {cid}). Nothing was done."
        data = {"correlationId": cid, "hint": "Retry once; if it fails again, report the correlation id."}
        status, headers = 500, {}
    body = {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -32603, "message": message, "data": data}}
    return JSONResponse(body, status_code=status, headers=headers)


_ENVELOPE_STATUS = {
    "INVALID_INPUT": 400,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "CONFLICT": 409,
    "RATE_LIMITED": 429,
    "INTERNAL": 500,
}


def upload_grant_reply(principal: Principal, body: Any) -> tuple[int, dict[str, Any]]:
    """Serve one upload-grant request for a verified principal: ``(status, JSON body)``.

    The body is ``{workspaceId, fileName, contentType, size, sha256[, purpose]}`` (purpose
    ``artifact`` by default; ``workspaceId`` ``""`` = the token's pinned workspace). The call
    counts against the token's minute window like a tool call.
    """
    from domain import clock, errors, ratelimit, uploads
    from domain.errors import ErrorCode, ToolError

    cid = uuid.uuid4().hex
    try:
        if not isinstance(body, dict):
            raise errors.invalid(
                "body", "must be a JSON object", "Send {workspaceId, fileName, contentType, size, sha256}."
            )
        unknown = sorted(set(body) - {"workspaceId", "fileName", "contentType", "size", "sha256", "purpose"})
        if unknown:
            raise errors.invalid(
                unknown[0],
                "is not a field of an upload-grant request",
                "Send workspaceId, fileName, contentType, size, sha256 and optionally purpose.",
            )
        admission = ratelimit.admit(principal.token_id)
        window = admission.result()
        if admission.over():
            raise ToolError(
                ErrorCode.RATE_LIMITED,
                f"This token made more than {window.limit} calls in the current minute.",
                "Wait for the window to reset, then retry.",
                retry_after_seconds=window.retry_after_seconds(clock.now_ms()),
            )
        ws = body.get("workspaceId")
        if ws == "" and principal.workspace_pin:
            ws = principal.workspace_pin
        grant = uploads.issue_grant(
            principal,
            workspace_id=ws,
            purpose=body.get("purpose", "artifact"),
            file_name=body.get("fileName"),
            content_type=body.get("contentType"),
            size=body.get("size"),
            sha256=body.get("sha256"),
        )
        return 200, grant
    except ToolError as exc:
        return _ENVELOPE_STATUS.get(exc.code.value, 400), exc.envelope()
    except Exception as exc:  # the boundary: an envelope, never a traceback
        if faults.storage_unavailable(exc):
            return 503, faults.unavailable_error(cid).envelope()
        if faults.throttled(exc):
            return 503, faults.busy_error(cid).envelope()
        log.exception("upload grant failed (correlation id %s)", cid)
        from domain.pipeline import internal_error

        return 500, internal_error(cid).envelope()


def attachment_reply(principal: Principal, task_id: str, body: Any) -> tuple[int, dict[str, Any]]:
    """Serve one attach request (``{uploadGrantId}``) for a verified principal: ``(status, JSON body)``.

    The operation is :func:`domain.attachments.attach` (the call pipeline: scope, rate window,
    access, the envelope); the answer is ``{attachment: {...}}``."""
    from domain import attachments, errors

    if not isinstance(body, dict):
        return 400, errors.invalid("body", "must be a JSON object", "Send {uploadGrantId}.").envelope()
    unknown = sorted(set(body) - {"uploadGrantId"})
    if unknown:
        return 400, errors.invalid(
            unknown[0], "is not a field of an attach request", "Send {uploadGrantId}; the task is in the path."
        ).envelope()
    outcome = attachments.attach(principal, task_id=task_id, upload_grant_id=body.get("uploadGrantId"))
    if outcome.error is not None:
        code = str(outcome.error.get("error", {}).get("code", "INTERNAL"))
        return _ENVELOPE_STATUS.get(code, 500), outcome.error
    return 200, outcome.result or {}


async def _json_route(request: Request, reply: Callable[[Principal, Any], tuple[int, dict[str, Any]]]) -> Response:
    """One JSON-in, JSON-out REST route on the MCP endpoint's terms (the upload grant, task
    attachments): the same Origin check, bearer token (or trusted authorizer context), worker-thread
    hop and error envelope; ``reply(caller, body)`` gives the status and payload (``body`` is
    ``None`` when the request body is not UTF-8 JSON)."""
    if not origin_allowed(request.headers.get("origin")):
        return JSONResponse(
            {"error": "forbidden_origin", "error_description": "This Origin may not call this endpoint."},
            status_code=403,
        )
    try:
        principal = principal_from_authorizer(request.scope)
    except auth.MalformedContext as exc:
        return _context_failed(exc)
    secret = bearer(request.headers) if principal is None else None
    if principal is None and secret is None:
        return _unauthorized("Send Authorization: Bearer <token>.", missing=True, scope=request.scope)
    raw = await request.body()
    budget = request_deadline_seconds(request.scope)

    def serve() -> tuple[int, dict[str, Any]] | None:
        with deadline.bound(budget):
            caller = principal or auth.authenticate(secret)
            if caller is None or (caller.kind == "oauth" and caller.audience != public_url.resource(request.scope)):
                return None
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                body = None
            return reply(caller, body)

    try:
        out = await in_worker(serve, request.scope)
    except Exception as exc:  # noqa: BLE001 - the token check failed: the same envelope
        from domain.pipeline import internal_error

        cid = uuid.uuid4().hex
        err = faults.unavailable_error(cid) if faults.storage_unavailable(exc) else internal_error(cid)
        return JSONResponse(err.envelope(), status_code=503 if faults.storage_unavailable(exc) else 500)
    if out is None:
        return _unauthorized("The token is unknown, revoked, expired or for another resource.", scope=request.scope)
    status, payload = out
    headers = (
        {"Retry-After": str(payload["error"].get("retryAfterSeconds"))} if status == 429 and "error" in payload else {}
    )
    return JSONResponse(payload, status_code=status, headers=headers)


async def read_body(receive: Receive) -> bytes:
    """The whole request body from the ASGI ``receive`` channel (``http.request`` messages until
    one says ``more_body: false``). A client that went away raises Starlette's ClientDisconnect."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def folded_headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name. A repeated header folds into one comma-joined
    value (RFC 9110 §5.3), so a duplicated routing header (MCP-Protocol-Version, Mcp-Method,
    Mcp-Name) can never equal the body's value."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


class McpEndpoint:
    """``POST /api/mcp`` (and its selection URLs) as a plain ASGI app inside the FastAPI app.

    It runs behind the app's middleware (the server-error handler among them) and router like
    any route, but skips what a FastAPI route adds per request and this endpoint never uses: the
    dependency solver, the ``Request`` object, the response class. A tool call is the hot path
    of the product, and on Lambda every microsecond here is paid once per call
    (docs/decisions.md, "Performance"; ``benchmarks.warm_overhead`` measures it).

    Per request: the selection from the path (404 for an unknown one), Origin (403), the
    principal from the gateway's authorizer context or the bearer token (401), then the
    token check and :meth:`McpProtocol.handle_raw` in one :func:`in_worker` hop; the reply is
    compact JSON (:func:`functions.jsonrpc.encode`), or an empty body (202 for a notification).
    """

    def __init__(self, protocol: McpProtocol) -> None:
        self.protocol = protocol

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.respond(scope, receive)
        if isinstance(response, Response):
            await response(scope, receive, send)
            return
        status, body, extra = response
        head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        head += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": body})

    async def respond(self, scope: Scope, receive: Receive) -> Response | tuple[int, bytes, dict[str, str]]:
        """A Starlette response for the refusals; ``(status, JSON body, headers)`` for a reply."""
        proto = self.protocol
        path = scope["path"]
        try:
            path_layer = toolsets.from_path(proto.registry, path[path.index(MCP_PATH) :])
        except toolsets.SelectionError as exc:
            return JSONResponse({"error": "not_found", "error_description": str(exc)}, status_code=404)
        headers = folded_headers(scope)
        if not origin_allowed(headers.get("origin")):
            return JSONResponse(
                {"error": "forbidden_origin", "error_description": "This Origin may not call the MCP endpoint."},
                status_code=403,
            )
        event = lambda_event(scope)
        request_id = (event.get("requestContext") or {}).get("requestId") if event else None
        try:
            principal = principal_from_authorizer(scope)
        except auth.MalformedContext as exc:  # a JSON-RPC 500 like any failed token check, never plain text
            return _auth_failed(await read_body(receive), exc)
        if principal is None and authorizer_context(scope) is not None:
            # The gateway's cached answer outlived the token's expiry.
            return _unauthorized("The token is unknown, revoked or expired.", scope=scope)
        secret = None
        if principal is None:
            secret = bearer(headers)
            if secret is None:
                return _unauthorized("Send Authorization: Bearer <token>.", missing=True, scope=scope)
        raw = await read_body(receive)
        budget = request_deadline_seconds(scope)

        def serve() -> Any:
            """The token check and the call in one worker-thread hop (both block on DynamoDB),
            under one deadline (:func:`request_deadline_seconds`)."""
            observability.bind_request(request_id)  # this thread's context: the calls' correlation id
            with deadline.bound(budget):
                caller = principal
                if caller is None:
                    try:
                        caller = auth.authenticate(secret)
                    except Exception as exc:  # noqa: BLE001 - answered as JSON-RPC, never as a bare 500
                        return exc
                    if caller is None:
                        return None
                if caller.kind == "oauth":
                    refusal = oauth_refusal(caller, raw, proto.registry, scope)
                    if refusal is not None:
                        return refusal
                layers = (path_layer,) if path_layer is not None else ()
                return proto.handle_raw(
                    raw, headers=headers, session=Session(principal=caller, transport="http", layers=layers)
                )

        reply = await in_worker(serve, scope)
        if reply is None:
            return _unauthorized("The token is unknown, revoked or expired.", scope=scope)
        if isinstance(reply, Response):
            return reply
        if isinstance(reply, Exception):
            return _auth_failed(raw, reply)
        if reply.message is None:
            return Response(status_code=reply.status, headers=reply.headers)
        return reply.status, encode(reply.message), reply.headers


def create_app(protocol: McpProtocol | None = None) -> FastAPI:
    install_index_hook()  # commits wake a local search consumer of this process, if one runs (idempotent)
    # Tracing is X-Ray through Powertools (domain.observability), per tool call; FastAPI's own
    # OpenTelemetry layer would look up three global providers on every request to learn that
    # none is configured, and would trace each request a second time where one is.
    app = FastAPI(title="jentrix-mcp", docs_url=None, redoc_url=None, openapi_url=None, telemetry=NO_TELEMETRY)
    proto = protocol or McpProtocol(metered=True)  # every request counts against the token's window

    async def mcp_other(request: Request) -> Response:
        return JSONResponse(
            {
                "error": "method_not_allowed",
                "error_description": "This MCP endpoint is stateless and accepts POST only.",
            },
            status_code=405,
            headers={"Allow": "POST"},
        )

    # A plain ASGI endpoint (McpEndpoint is no function, so Starlette routes to it as an app),
    # registered first: the router tries routes in order, and nearly every request is this one
    # (no other path starts with /api/mcp, so the order changes no match).
    app.router.add_route(MCP_ROUTE, McpEndpoint(proto), methods=["POST"], include_in_schema=False)
    app.add_api_route(MCP_ROUTE, mcp_other, methods=["GET", "DELETE", "PUT", "PATCH"])

    @app.post(UPLOAD_GRANT_PATH)
    async def upload_grant(request: Request) -> Response:
        return await _json_route(request, upload_grant_reply)

    @app.post(ATTACHMENTS_PATH)
    async def task_attachments(request: Request) -> Response:
        task_id = request.path_params["taskId"]
        return await _json_route(request, lambda caller, body: attachment_reply(caller, task_id, body))

    @app.get("/healthz")
    async def healthz() -> Response:
        return JSONResponse({"status": "ok"})

    return app


db.configure()
app = create_app()
