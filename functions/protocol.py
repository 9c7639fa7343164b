"""The MCP protocol layer: JSON-RPC envelopes, both protocol eras, tools/list and tools/call.

Transport-neutral by construction: it takes a decoded body (or raw bytes), the request's
HTTP headers when there are any (``None`` on stdio, where header rules do not apply) and a
:class:`Session`, and returns a :class:`Reply` — an HTTP status the HTTP adapter uses and the
stdio adapter ignores, plus the JSON-RPC message to write (``None`` for notifications).

Connection binding over HTTP: a request may carry ``X-MCP-Binding`` (:func:`binding_header`,
:func:`binding_from_header`), the JSON of a stdio connection's :class:`~domain.context.Binding`.
The stdio bridge sends it with every request, so ``tools/call`` and ``resources/read`` on the
remote run under the same access policy as in process. It can only narrow what the token may
already do (one workspace, observe), so accepting it from any client widens nothing.

Resources: the ``resources`` capability with one template, ``stacks://artifact/{id}``
(``resources/templates/list``; ``resources/list`` is empty; ``resources/read`` runs get_artifact
through the same pipeline, so scope, membership and tombstones are the tool's).

Eras (MCP 2026-07-28 "Base protocol" and 2025-11-25 "Lifecycle"; docs/decisions.md), told apart per request:

* **2026-07-28** — the request's ``params._meta`` carries
  ``io.modelcontextprotocol/protocolVersion``. Stateless: no ``initialize``; ``server/discover``;
  ``_meta`` must also carry ``clientCapabilities`` (else -32602); over HTTP the
  ``MCP-Protocol-Version``, ``Mcp-Method`` and (tools/call) ``Mcp-Name`` headers must match the
  body, ``=?base64?…?=`` values decoded first (else -32020); an unserved version is -32022 with
  the supported list; every result carries ``resultType``; list results ``ttlMs``/``cacheScope``.
* **Handshake era** — ``initialize`` negotiates 2025-06-18 or 2025-11-25 (anything else gets
  our latest as the counter-offer); later requests may carry ``MCP-Protocol-Version``, which
  must then name a handshake version. Never answered with -32020.

HTTP statuses: -32700/-32600/-32602/-32020/-32022 -> 400 and -32601 -> 404 in the modern era;
in the handshake era only envelope-level failures are 400 and method errors ride on 200.

Rate window (docs/rate-limits.md): with ``metered=True`` (the HTTP app; on stdio the requests
other than tool calls never leave the user's machine, so only tool calls count there) every
JSON-RPC request counts once against its token's minute window, not only tool calls:
``initialize``, ``ping``, ``tools/list``, ``resources/list``, unknown methods, unknown tools and
malformed params too. Over the limit a request the pipeline does not answer gets the JSON-RPC error -32029 carrying the RATE_LIMITED
envelope in ``data.error`` (HTTP 429 with ``Retry-After``), the shape the gateway's usage plan
answers with; a tool call over it keeps its RATE_LIMITED envelope. The update starts with the
request and is handed to the pipeline, so each request is counted once. Notifications and the
client's answers to our own requests are not counted (they do no work and get no answer). When
the window cannot be counted (the store is down), a request that needs no storage is answered anyway.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from domain import clock, ids, ratelimit, toolsets
from domain.auth import Principal
from domain.context import Binding
from domain.errors import ErrorCode, ToolError
from domain.pipeline import CallOutcome, call_tool
from domain.registry import Registry
from functions.jsonrpc import (  # re-exported for the transports
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_VERSION,
    dumps,
    error_response,
    inspect,
)

HANDSHAKE_VERSIONS: tuple[str, ...] = ("2025-06-18", "2025-11-25")
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

LIST_TTL_MS = 60_000
SERVER_INFO = {"name": "jentrix-mcp", "title": "Jentrix", "version": "0.1.0"}
INSTRUCTIONS = (
    "Jentrix: kanban boards, tasks and their history. To orient, list_boards names a workspace's boards and "
    "get_board_snapshot answers one of them in a page of about 6k tokens: every column with its task count and the "
    "first concise task rows (nextCursor for the next page, fields for more of each row); list_my_work is the "
    "smallest start when you only need your own open tasks. update_task and move_task accept expectedUpdatedAt, the updatedAt you last read, "
    "so a concurrent change is reported as CONFLICT instead of overwritten. create_* tools accept an idempotencyKey: "
    'retrying with the same key never creates twice. workspaceId "" stands for the workspace your token or '
    "connection is bound to; with a token bound to none it stands for your only workspace, and if you belong to "
    "several it is refused with INVALID_INPUT listing their ids. get_token_context tells what this token may do."
)

RATE_LIMITED = -32029  # the code the gateway's THROTTLED/QUOTA_EXCEEDED answers carry (template.yaml)
# A missing resource is Invalid params carrying data.uri (SEP-2164; -32002 is retired).
RESOURCE_NOT_FOUND = INVALID_PARAMS
ARTIFACT_TOOL = "get_artifact"
ARTIFACT_URI_PREFIX = "stacks://artifact/"
ARTIFACT_TEMPLATE = {
    "uriTemplate": "stacks://artifact/{id}",
    "name": "artifact",
    "title": "Artifact",
    "description": "One artifact by id (ar_…): the get_artifact answer as JSON (record, redacted body, short-lived download URL; a tombstone once withdrawn).",
    "mimeType": "application/json",
}
CAPABILITIES = {"tools": {"listChanged": False}, "resources": {"listChanged": False}}
# The methods that read or write the store (they run the call pipeline): the stdio adapter
# re-checks its token before each of them (functions.stdio.backends.LocalBackend).
STORE_METHODS: frozenset[str] = frozenset({"tools/call", "resources/read"})

BINDING_HEADER = "X-MCP-Binding"
_BINDING_FIELDS = frozenset({"workspaceId", "observe", "observeReason", "repository", "lifetimeId"})
_MAX_REASON = 500  # characters of observeReason carried in the header (it words the refusal only)

_ENV = object()  # McpProtocol(server_layer=...) default: read JENTRIX_MCP_* from the environment
_MODERN_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
_B64 = re.compile(r"^=\?base64\?(.*)\?=$")


@dataclass
class Reply:
    """What to send back: ``status`` for HTTP, ``message`` (None = nothing, e.g. a notification)."""

    status: int = 200
    message: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Session:
    """The caller as the transport established it.

    ``binding`` is set by the stdio adapter; ``on_client_response`` receives messages that answer
    a request *we* sent (stdio ``roots/list``). ``client_info`` is metadata only, never authority.
    """

    principal: Principal
    transport: str = "http"
    binding: Binding | None = None
    binding_provider: Callable[[dict[str, Any], str], Binding | None] | None = None
    on_client_response: Callable[[dict[str, Any]], None] | None = None
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] | None = None
    negotiated_version: str | None = None
    # toolset / tool / read-only choices of this connection (URL, stdio flags; domain.toolsets);
    # the request headers' layer and the server-wide one are added per request.
    layers: tuple[toolsets.Layer, ...] = ()


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def decode_header_value(value: str | None) -> str | None:
    """Undo the ``=?base64?…?=`` wrapping clients use for non-ASCII header values."""
    if value is None:
        return None
    m = _B64.match(value)
    if not m:
        return value
    payload = m.group(1)
    try:
        decoded = base64.b64decode(payload, validate=True)
        # Only the canonical encoding counts (validate=True tolerates stray trailing bits), so a
        # corrupt value never matches by accident; the SDK's decoder draws the same line.
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


_error = error_response


def binding_header(binding: Binding) -> str:
    """``binding`` as the ``X-MCP-Binding`` value: compact JSON, ASCII only (``\\u`` escapes), so
    any HTTP stack carries it unchanged. The checkout path and clientInfo stay local."""
    wire: dict[str, Any] = {
        "workspaceId": binding.workspace_id,
        "observe": binding.observe,
        "lifetimeId": binding.lifetime_id,
    }
    if binding.observe:
        wire["observeReason"] = binding.observe_reason[:_MAX_REASON]
    if binding.repository:
        wire["repository"] = binding.repository
    return json.dumps(wire, separators=(",", ":"), ensure_ascii=True)


def binding_from_header(value: str, principal: Principal) -> Binding:
    """The :class:`Binding` an ``X-MCP-Binding`` header asks for.

    Accepting it from any client is safe because a binding only narrows: visibility becomes
    the one workspace (``CallContext.visible`` still applies the token's pin as well), ``observe``
    refuses writes, ``repository`` only stands in for a ``repo`` argument the caller could send.

    Raises:
        RpcError: -32602 for a value that is not that JSON object (unknown fields included: a
            newer client's narrowing is refused rather than dropped), a malformed workspace id,
            or a workspace other than the token's pin.
    """

    def bad(why: str) -> RpcError:
        return RpcError(INVALID_PARAMS, f"Invalid params: the {BINDING_HEADER} header {why}.")

    try:
        wire = json.loads(value)
    except (ValueError, RecursionError):
        raise bad("is not JSON") from None
    if not isinstance(wire, dict) or "workspaceId" not in wire or not isinstance(wire.get("observe"), bool):
        raise bad('must be a JSON object with "workspaceId" (a workspace id or null) and "observe" (true or false)')
    unknown = sorted(set(wire) - _BINDING_FIELDS)
    if unknown:
        raise bad(f"has fields this server does not apply ({', '.join(unknown)}); update the server")
    ws = wire["workspaceId"]
    if ws is not None and (not isinstance(ws, str) or not ids.parse_workspace(ws)):
        raise bad("names no workspace id in workspaceId")
    if ws is not None and principal.workspace_pin and ws != principal.workspace_pin:
        raise bad(f"binds workspace {ws}, but the token is pinned to {principal.workspace_pin}")
    repository = wire.get("repository")
    if repository is not None:
        from domain import repos  # only a bridged request bound to a checkout needs it

        repository = repos.normalise_repo(repository) if isinstance(repository, str) else None
        if repository is None:
            raise bad("names no GitHub repository (owner/name) in repository")
    reason, lifetime = wire.get("observeReason", ""), wire.get("lifetimeId", "")
    if not isinstance(reason, str) or not isinstance(lifetime, str) or len(lifetime) > 64:
        raise bad("has a non-string observeReason or lifetimeId")
    return Binding(
        workspace_id=ws,
        lifetime_id=lifetime,
        repository=repository,
        observe=wire["observe"],
        observe_reason=reason[:_MAX_REASON],
    )


def tool_result(outcome: CallOutcome) -> dict[str, Any]:
    """Render a pipeline outcome as an MCP ``CallToolResult``.

    Success: ``structuredContent`` plus the same JSON, compact, as one text block. Failure:
    ``isError: true`` and the envelope as the only text block — no ``structuredContent``,
    because some clients validate it against ``outputSchema`` even on errors.
    """
    if outcome.error is not None:
        text = dumps(outcome.error)
        return {"content": [{"type": "text", "text": text}], "isError": True}
    text = dumps(outcome.result)
    return {"content": [{"type": "text", "text": text}], "structuredContent": outcome.result, "isError": False}


class McpProtocol:
    """One instance per process; stateless apart from its registry and the tool page size.

    ``registry`` is the set of tools served (the product catalog unless another is given, e.g.
    a test registry with synthetic tools).
    """

    def __init__(
        self, *, registry: Registry | None = None, page_size: int = 100, server_layer: Any = None, metered: bool = False
    ) -> None:
        # page_size: the whole catalog (62 tools and the extras beyond it) fits one default page
        # metered: count every request against the token's window (see the module docstring);
        # off for in-process protocol objects of tests that have no store.
        self.metered = metered
        if server_layer is None:
            server_layer = _ENV
        if registry is None:
            from domain.catalog import registry as product_registry

            registry = product_registry()
        self.registry = registry
        # the listing with no selection at all: every tool but the opt-in toolsets' (domain.toolsets.OPT_IN)
        self._default_specs = [s for s in registry.ordered() if s.area not in toolsets.OPT_IN]
        self.page_size = page_size
        # The resources capability comes with get_artifact (the product catalog); a registry
        # without it (the conformance fixtures, test registries) offers tools only.
        self.serves_resources = registry.get(ARTIFACT_TOOL) is not None
        self.capabilities = CAPABILITIES if self.serves_resources else {"tools": {"listChanged": False}}
        try:
            self.server_layer = toolsets.server_layer(registry) if server_layer is _ENV else server_layer
        except toolsets.SelectionError as exc:
            raise ValueError(f"invalid server-wide tool selection: {exc}") from None

    # -- entry points ---------------------------------------------------------------------
    def handle_raw(self, raw: bytes, *, headers: Mapping[str, str] | None, session: Session) -> Reply:
        """Decode one message (strict UTF-8, then JSON) and handle it."""
        try:
            text = raw.decode("utf-8")
            message = json.loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return Reply(400, _error(None, PARSE_ERROR, "Parse error: the body is not valid UTF-8 JSON."))
        return self.handle(message, headers=headers, session=session)

    def handle(self, message: Any, *, headers: Mapping[str, str] | None, session: Session) -> Reply:
        envelope = inspect(message, what="body")
        if envelope.kind == "invalid":
            return Reply(400, envelope.reply)
        if envelope.kind == "response":
            if session.on_client_response is not None and message.get("id") is not None:
                session.on_client_response(message)
                return Reply(202, None)
            return Reply(
                400, _error(None, INVALID_REQUEST, "Invalid request: this endpoint does not accept JSON-RPC responses.")
            )
        has_id = envelope.kind == "request"
        id_ = message.get("id")
        method = message["method"]
        params = message.get("params", {})
        if params is None:
            params = {}
        if not has_id:
            if not isinstance(params, dict):
                return Reply(400, _error(None, INVALID_REQUEST, "Invalid request: params must be an object."))
            return Reply(202, None)  # notifications are acknowledged and dropped (stateless server)
        if not self.metered:
            return self._dispatch(id_, method, params, headers, session)
        # Counted once, whatever the method: the update runs while the request is served; a
        # tools/call or resources/read that reaches the pipeline hands it over (_take_window).
        pending = _PendingWindow(ratelimit.admit(session.principal.token_id))
        token = _WINDOW.set(pending)
        try:
            reply = self._dispatch(id_, method, params, headers, session)
        finally:
            _WINDOW.reset(token)
        if not pending.taken:
            limited = _settle(pending.future)
            if limited is not None:
                return self._rpc_reply(id_, limited, modern=False)
        return reply

    def _dispatch(
        self, id_: Any, method: str, params: Any, headers: Mapping[str, str] | None, session: Session
    ) -> Reply:
        if not isinstance(params, dict):
            return Reply(400, _error(id_, INVALID_PARAMS, "Invalid params: params must be an object."))
        meta = params.get("_meta")
        modern = isinstance(meta, dict) and META_VERSION in meta
        header_version = headers.get("mcp-protocol-version") if headers is not None else None
        if not modern and method != "initialize" and header_version in MODERN_VERSIONS:
            return Reply(
                400,
                _error(
                    id_,
                    INVALID_PARAMS,
                    f"Invalid params: a {header_version} request must carry params._meta with {META_VERSION!r} and {META_CAPABILITIES!r}.",
                ),
            )
        try:
            if modern:
                return Reply(
                    200, {"jsonrpc": "2.0", "id": id_, "result": self._modern(method, params, meta, headers, session)}
                )
            return Reply(
                200,
                {
                    "jsonrpc": "2.0",
                    "id": id_,
                    "result": self._handshake(method, params, header_version, session, headers),
                },
            )
        except RpcError as exc:
            return self._rpc_reply(id_, exc, modern=modern)

    @staticmethod
    def _rpc_reply(id_: Any, exc: RpcError, *, modern: bool) -> Reply:
        if exc.code == RATE_LIMITED:
            wait = ((exc.data or {}).get("error") or {}).get("retryAfterSeconds", 1)
            return Reply(429, _error(id_, exc.code, exc.message, exc.data), {"Retry-After": str(wait)})
        if modern:
            status = _MODERN_STATUS.get(exc.code, 200)
        else:
            status = 400 if exc.code in (INVALID_REQUEST, PARSE_ERROR) else 200
        return Reply(status, _error(id_, exc.code, exc.message, exc.data))

    # -- eras -----------------------------------------------------------------------------
    def _modern(
        self,
        method: str,
        params: dict[str, Any],
        meta: dict[str, Any],
        headers: Mapping[str, str] | None,
        session: Session,
    ) -> dict[str, Any]:
        if META_CAPABILITIES not in meta:
            raise RpcError(INVALID_PARAMS, f"Invalid params: params._meta is missing {META_CAPABILITIES!r}.")
        version = meta[META_VERSION]
        if headers is not None:
            header_version = headers.get("mcp-protocol-version")
            # Presence first: a null version in _meta must not "match" an absent header.
            if header_version is None or header_version != version:
                raise RpcError(
                    HEADER_MISMATCH,
                    "Header mismatch: MCP-Protocol-Version must be present and equal the version in params._meta.",
                )
            if headers.get("mcp-method") != method:
                raise RpcError(
                    HEADER_MISMATCH, "Header mismatch: Mcp-Method must be present and equal the request's method."
                )
            if method in ("tools/call", "prompts/get", "resources/read"):
                field_name = "uri" if method == "resources/read" else "name"
                body_value = params.get(field_name)
                if body_value is not None and decode_header_value(headers.get("mcp-name")) != body_value:
                    raise RpcError(
                        HEADER_MISMATCH, f"Header mismatch: Mcp-Name must be present and equal params.{field_name}."
                    )
        if not isinstance(version, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: the protocol version in params._meta must be a string.")
        if version not in MODERN_VERSIONS:
            raise RpcError(
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version {version!r}.",
                {"supported": list(MODERN_VERSIONS), "requested": version},
            )
        session.client_info = (
            meta.get(META_CLIENT_INFO) if isinstance(meta.get(META_CLIENT_INFO), dict) else session.client_info
        )
        session.client_capabilities = (
            meta.get(META_CAPABILITIES) if isinstance(meta.get(META_CAPABILITIES), dict) else {}
        )
        if method == "server/discover":
            return {
                "supportedVersions": [*HANDSHAKE_VERSIONS, *MODERN_VERSIONS],
                "capabilities": self.capabilities,
                "instructions": INSTRUCTIONS,
                "resultType": "complete",
                "ttlMs": LIST_TTL_MS,
                "cacheScope": "public",
                "_meta": {META_SERVER_INFO: SERVER_INFO},
            }
        # ping is a handshake-era utility; the stateless era removed it (conformance check
        # sep-2575-http-server-method-not-found-404-ping), so it falls through to -32601.
        if method == "tools/list":
            # a filtered listing depends on the connection's choices and token: not a public cache entry
            layers = self._layers(session, headers)
            scope = "public" if not layers and len(session.principal.scopes) == 3 else "private"
            return {
                **self._list_tools(params, session, headers),
                "resultType": "complete",
                "ttlMs": LIST_TTL_MS,
                "cacheScope": scope,
            }
        if method == "tools/call":
            return {**self._call_tool(params, session, headers), "resultType": "complete"}
        if method in ("resources/list", "resources/templates/list") and self.serves_resources:
            return {
                **self._list_resources(method, params),
                "resultType": "complete",
                "ttlMs": LIST_TTL_MS,
                "cacheScope": "public",
            }
        if method == "resources/read" and self.serves_resources:
            # the record and its download URL are the caller's and short-lived: never cached
            return {
                **self._read_resource(params, session, headers),
                "resultType": "complete",
                "ttlMs": 0,
                "cacheScope": "private",
            }
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}.")

    def _handshake(
        self,
        method: str,
        params: dict[str, Any],
        header_version: str | None,
        session: Session,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        if method == "initialize":
            requested = params.get("protocolVersion")
            if not isinstance(requested, str):
                raise RpcError(INVALID_PARAMS, "Invalid params: initialize needs params.protocolVersion (a string).")
            version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
            session.negotiated_version = version
            if isinstance(params.get("clientInfo"), dict):
                session.client_info = params["clientInfo"]
            if isinstance(params.get("capabilities"), dict):
                session.client_capabilities = params["capabilities"]
            return {
                "protocolVersion": version,
                "capabilities": self.capabilities,
                "serverInfo": SERVER_INFO,
                "instructions": INSTRUCTIONS,
            }
        if header_version is not None and header_version not in HANDSHAKE_VERSIONS:
            raise RpcError(
                INVALID_REQUEST,
                f"Unsupported MCP-Protocol-Version header {header_version!r}; supported: {', '.join(HANDSHAKE_VERSIONS)}.",
            )
        if method == "ping":
            return {}
        if method == "tools/list":
            return self._list_tools(params, session, headers)
        if method == "tools/call":
            return self._call_tool(params, session, headers)
        if method in ("resources/list", "resources/templates/list") and self.serves_resources:
            return self._list_resources(method, params)
        if method == "resources/read" and self.serves_resources:
            return self._read_resource(params, session, headers)
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}.")

    # -- methods --------------------------------------------------------------------------
    def _layers(self, session: Session, headers: Mapping[str, str] | None) -> tuple[toolsets.Layer, ...]:
        """Every selection in force for this request: server-wide first, then the connection's, then the headers'."""
        try:
            from_headers = toolsets.from_headers(self.registry, headers)
        except toolsets.SelectionError as exc:
            raise RpcError(INVALID_PARAMS, f"Invalid params: {exc}") from None
        found = (self.server_layer, *session.layers, from_headers)
        return tuple(layer for layer in found if layer is not None and not layer.empty)

    def _list_tools(
        self, params: dict[str, Any], session: Session | None = None, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        layers = self._layers(session, headers) if session is not None else ()
        scopes = tuple(session.principal.scopes) if session is not None else ("read", "write", "admin")
        if not layers and len(scopes) == 3:
            specs = self._default_specs
        else:
            specs = list(toolsets.served(self.registry, layers, scopes))
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            try:
                start = int(base64.urlsafe_b64decode(str(cursor).encode()).decode().removeprefix("tools:"))
                if not 0 <= start < len(specs):
                    raise ValueError
            except (ValueError, binascii.Error, UnicodeDecodeError):
                raise RpcError(INVALID_PARAMS, "Invalid params: unknown cursor; start again without one.") from None
        page = specs[start : start + self.page_size]
        result: dict[str, Any] = {"tools": [s.definition() for s in page]}
        if start + self.page_size < len(specs):
            result["nextCursor"] = base64.urlsafe_b64encode(f"tools:{start + self.page_size}".encode()).decode()
        return result

    def _list_resources(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """No concrete resources are listed (there would be one per artifact); one template."""
        if params.get("cursor") is not None:
            raise RpcError(INVALID_PARAMS, "Invalid params: unknown cursor; start again without one.")
        if method == "resources/list":
            return {"resources": []}
        return {"resourceTemplates": [dict(ARTIFACT_TEMPLATE)]}

    @staticmethod
    def _binding(session: Session, headers: Mapping[str, str] | None) -> Binding | None:
        """The binding this request runs under: the session's (stdio in process), else the one the
        ``X-MCP-Binding`` header asks for (the stdio bridge, or any client narrowing itself)."""
        if session.binding is not None or headers is None:
            return session.binding
        value = headers.get(BINDING_HEADER.lower())
        return binding_from_header(value, session.principal) if value is not None else None

    def _read_resource(
        self, params: dict[str, Any], session: Session, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """``stacks://artifact/{id}``: get_artifact through the same pipeline (scope, rate window,
        membership, tombstones), its result as one JSON text content. A missing or invisible
        artifact is -32602 with ``data.uri`` (SEP-2164); other refusals carry the tool's envelope in ``data``."""
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise (RpcError(INVALID_PARAMS, "Invalid params: params.uri must be a string."))
        spec = self.registry.get(ARTIFACT_TOOL)
        assert spec is not None  # serves_resources
        if not uri.startswith(ARTIFACT_URI_PREFIX) or not uri[len(ARTIFACT_URI_PREFIX) :]:
            raise (
                RpcError(
                    RESOURCE_NOT_FOUND,
                    f"Resource not found: {uri!r} (this server serves {ARTIFACT_TEMPLATE['uriTemplate']}).",
                    {"uri": uri},
                )
            )
        outcome = call_tool(
            spec,
            {"artifactId": uri[len(ARTIFACT_URI_PREFIX) :]},
            session.principal,
            binding=self._binding(session, headers),
            rate=_take_window(),
        )
        if outcome.error is not None:
            error = outcome.error["error"]
            code = INVALID_PARAMS if error["code"] in ("NOT_FOUND", "INVALID_INPUT", "FORBIDDEN") else INTERNAL_ERROR
            raise RpcError(code, error["message"], {"uri": uri, **outcome.error})
        text = dumps(outcome.result)
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}

    def _call_tool(
        self, params: dict[str, Any], session: Session, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise (RpcError(INVALID_PARAMS, "Invalid params: params.name must be the tool name (a string)."))
        spec = self.registry.get(name)
        if spec is None:
            raise (RpcError(INVALID_PARAMS, f"Unknown tool: {name}. tools/list shows the tools this server offers."))
        layers = self._layers(session, headers)
        if layers or spec.area in toolsets.OPT_IN:
            reason = toolsets.hidden_by(spec, layers)
            if reason is not None:
                raise (
                    RpcError(
                        INVALID_PARAMS,
                        f"Unknown tool: {name} is not served on this connection: {reason} hides it. tools/list shows the tools enabled here.",
                    )
                )
        binding = self._binding(session, headers)
        outcome = call_tool(
            spec,
            params.get("arguments"),
            session.principal,
            binding=binding,
            selection=toolsets.effective(self.registry, layers) if layers else None,
            rate=_take_window(),
        )
        return tool_result(outcome)


# -- the rate window of requests that do not reach the pipeline ---------------------------------
@dataclass
class _PendingWindow:
    future: Any
    taken: bool = False


_WINDOW: contextvars.ContextVar[_PendingWindow | None] = contextvars.ContextVar("jentrix_request_window", default=None)


def _take_window() -> Any:
    """The current request's window update, handed to the pipeline (which settles it and answers
    RATE_LIMITED in the envelope); ``None`` when the protocol object is not metered."""
    pending = _WINDOW.get()
    if pending is None or pending.taken:
        return None
    pending.taken = True
    return pending.future


def _limited(window: ratelimit.Window) -> RpcError:
    """The -32029 error for a request over ``window``'s limit."""
    wait = window.retry_after_seconds(clock.now_ms())
    envelope = ToolError(
        ErrorCode.RATE_LIMITED,
        f"This token made more than {window.limit} requests in the current minute.",
        "Wait for the window to reset, then retry.",
        retry_after_seconds=wait,
    ).envelope()
    return RpcError(
        RATE_LIMITED,
        f"Too many requests: this token made more than {window.limit} requests in the current minute. Nothing was done.",
        envelope,
    )


def _settle(pending: ratelimit.Admission) -> RpcError | None:
    """Settle a request's window admission; the -32029 error when it is refused. A window that
    could not be counted (the store is down) lets the request through."""
    try:
        window = pending.result()
    except Exception:  # noqa: BLE001 - these requests need no storage; the outage is answered where it matters
        return None
    return _limited(window) if pending.over() else None
