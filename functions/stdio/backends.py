"""Where a request is handled once the stdio server has framed it.

* :class:`LocalBackend` — the protocol layer in this process, against the configured DynamoDB
  (the local stack's DynamoDB Local, or an explicitly allowed AWS table). The connection's
  binding sits on the :class:`~functions.protocol.Session` and the domain enforces it. The
  token is authenticated again before every method that reads or writes the store
  (:data:`functions.protocol.STORE_METHODS`: ``tools/call``, ``resources/read``), as the HTTP
  endpoint does per request, so a token revoked or expired mid-connection stops it at the next one.
* :class:`RemoteBackend` — a bridge: each message is POSTed to a remote ``/api/mcp`` with the
  token as ``Authorization: Bearer``, so the remote authorizer, rate limits and tenant checks
  apply and the desktop never holds AWS credentials. Headers follow the message's era
  (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``). The remote is stateless and cannot
  see this connection, so every request also carries the binding as ``X-MCP-Binding``
  (:func:`functions.protocol.binding_header`): the remote runs the same access policy on it as
  the in-process path (observe refusals, ``workspaceId: ""``, ids of other workspaces NOT_FOUND,
  for tools and resources alike). The bridge itself checks no arguments.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import uuid
from typing import Any
from urllib.parse import urlsplit

from domain import auth, errors, faults
from domain.auth import Principal
from domain.errors import ToolError
from domain.pipeline import CallOutcome
from functions.protocol import (
    BINDING_HEADER,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    MODERN_VERSIONS,
    STORE_METHODS,
    McpProtocol,
    Session,
    binding_header,
    tool_result,
)
from functions.stdio.binding import StartupError
from functions.stdio.framing import encode, error_response

log = logging.getLogger("jentrix.stdio")

_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
_NAMED_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class LocalBackend:
    """Handle messages with the in-process protocol layer.

    With ``token``, every request whose method reads or writes the store
    (:data:`~functions.protocol.STORE_METHODS`) first authenticates it again through
    :func:`domain.auth.authenticate` (so ``JENTRIX_TOKEN_CACHE_SECONDS`` applies, as over HTTP)
    and runs as the principal that check returned. A token that no longer authenticates gets
    :func:`token_refusal` and the request never reaches the store. The other methods
    (``initialize``, ``ping``, ``tools/list``, the resource listings) answer from the catalog,
    read nothing of the store and are not checked.
    """

    def __init__(self, session: Session, protocol: McpProtocol | None = None, *, token: str | None = None) -> None:
        self.session = session
        self.protocol = protocol or McpProtocol()
        self.token = token

    def request(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        session = self.session
        method = message.get("method")
        if self.token is not None and method in STORE_METHODS:
            try:
                principal = auth.authenticate(self.token)
            except Exception as exc:
                cid = uuid.uuid4().hex
                if faults.storage_unavailable(exc):
                    log.warning("storage unavailable while checking the token (correlation id %s): %r", cid, exc)
                    return [refusal_reply(message, faults.unavailable_error(cid))]
                if faults.throttled(exc):
                    log.warning("storage throttled while checking the token (correlation id %s): %r", cid, exc)
                    return [refusal_reply(message, faults.busy_error(cid))]
                raise
            if principal is None:
                log.warning(
                    "token %s no longer authenticates (revoked or expired); %s refused",
                    self.session.principal.token_id,
                    method,
                )
                return [token_refusal(message)]
            # A per-call copy: concurrent calls each run as the principal their own check returned.
            session = dataclasses.replace(self.session, principal=principal)
        reply = self.protocol.handle(message, headers=None, session=session)
        return [reply.message] if reply.message is not None else []

    def notify(self, message: dict[str, Any]) -> None:
        """Notifications carry nothing the stateless protocol layer keeps."""

    def close(self) -> None:
        pass


def refusal_reply(message: dict[str, Any], exc: ToolError) -> dict[str, Any]:
    """A request answered with a refusal instead of being run: for ``tools/call`` a tool error
    envelope (``isError: true``); for ``resources/read`` the -32602 error the protocol layer gives
    a refused read, the envelope and the uri in its ``data``; for other methods -32603."""
    params = message.get("params")
    if message.get("method") != "tools/call":
        envelope = exc.envelope()
        uri = params.get("uri") if isinstance(params, dict) else None
        code = (
            INVALID_PARAMS
            if message.get("method") == "resources/read" and exc.code.value == "FORBIDDEN"
            else INTERNAL_ERROR
        )
        return error_response(
            message.get("id"),
            code,
            envelope["error"]["message"],
            {"uri": uri, **envelope} if uri is not None else envelope,
        )
    result = tool_result(CallOutcome(error=exc.envelope()))
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and META_VERSION in meta:
        result["resultType"] = "complete"
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": result}


def token_refusal(message: dict[str, Any]) -> dict[str, Any]:
    """FORBIDDEN for every request once the connection's token is revoked or expired (it cannot recover)."""
    return refusal_reply(
        message,
        errors.forbidden(
            "This connection's token was revoked or has expired; nothing was done. Every further call on this connection is refused.",
            "The connection cannot recover: mint a new token (`jentrix token create`), put it in JENTRIX_TOKEN or --token-file, "
            "and restart the MCP server in your client.",
        ),
    )


# -- the bridge ----------------------------------------------------------------------------------
def check_remote_url(url: str) -> str:
    """Accept ``https://…`` anywhere and ``http://`` on loopback only (a token never crosses a network in clear)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS:
        return url
    raise StartupError(
        f"--url {url!r} must be an https:// URL (plain http is accepted for localhost only), e.g. https://example.com/api/mcp."
    )


def header_value(value: str) -> str:
    """A header-safe value: printable ASCII as is, anything else as ``=?base64?…?=``."""
    if value.isascii() and value.isprintable():
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


class RemoteBackend:
    """Forward each message to a remote MCP endpoint over HTTPS and relay its answers."""

    def __init__(self, url: str, token: str, session: Session | None = None, *, timeout: float = 60.0) -> None:
        try:
            import httpx2  # the HTTP client the MCP SDK uses; only the bridge needs it
        except ImportError:
            raise StartupError(
                "--url needs the httpx2 package: install it with `.venv/bin/pip install httpx2`."
            ) from None

        self._httpx = httpx2
        self.url = check_remote_url(url)
        self.session = session
        self.negotiated: str | None = None
        self.selection_headers: dict[str, str] = {}  # --toolsets/--tools/--read-only as X-MCP-* headers
        self.client = httpx2.Client(
            timeout=timeout,
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "User-Agent": "jentrix-mcp-stdio/0.1",
            },
        )

    # -- wire ---------------------------------------------------------------------------------
    def headers_for(self, message: dict[str, Any]) -> dict[str, str]:
        method = message.get("method")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        meta = params.get("_meta")
        headers: dict[str, str] = dict(self.selection_headers)
        binding = self.session.binding if self.session is not None else None
        if binding is not None:  # the remote applies it to every method (functions.protocol.binding_from_header)
            headers[BINDING_HEADER] = binding_header(binding)
        if isinstance(meta, dict) and isinstance(meta.get(META_VERSION), str):
            headers["MCP-Protocol-Version"] = meta[META_VERSION]
            if isinstance(method, str):
                headers["Mcp-Method"] = method
            field = _NAMED_METHODS.get(method) if isinstance(method, str) else None
            if field and isinstance(params.get(field), str):
                headers["Mcp-Name"] = header_value(params[field])
        elif self.negotiated and method != "initialize":
            headers["MCP-Protocol-Version"] = self.negotiated
        return headers

    def post(self, message: dict[str, Any]) -> Any:
        return self.client.post(self.url, content=encode(message), headers=self.headers_for(message))

    @staticmethod
    def messages_of(response: Any) -> list[dict[str, Any]]:
        """The JSON-RPC messages in a response body (JSON, or an SSE stream of JSON events)."""
        body = response.content
        if not body:
            return []
        ctype = response.headers.get("content-type", "")
        out: list[Any] = []
        if ctype.startswith("text/event-stream"):
            data: list[str] = []
            for line in [*body.decode("utf-8", "replace").splitlines(), ""]:
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif not line and data:
                    out.append(json.loads("\n".join(data)))
                    data = []
        else:
            parsed = json.loads(body)
            out.extend(parsed if isinstance(parsed, list) else [parsed])
        return [m for m in out if isinstance(m, dict)]

    # -- backend interface ----------------------------------------------------------------------
    def request(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """POST one request and return the messages to write back; the last one answers it.

        Whatever the remote sends, the pending request gets exactly one JSON-RPC answer with its
        own id: API Gateway's refusals (template.yaml's gateway responses) are JSON-RPC errors
        with ``id: null``, because the gateway cannot read the body, and get this request's id;
        a JSON body that is no JSON-RPC message, a body that is no JSON, or a reply for no such
        id becomes a -32603 error naming the HTTP status (``data.httpStatus``)."""
        id_ = message.get("id")
        try:
            response = self.post(message)
        except self._httpx.HTTPError as exc:
            return [
                error_response(
                    id_, INTERNAL_ERROR, f"The remote MCP endpoint could not be reached: {exc}.", {"url": self.url}
                )
            ]
        status = response.status_code
        try:
            parsed = self.messages_of(response)
        except (ValueError, RecursionError):  # not JSON (a proxy's HTML page, a truncated body)
            parsed = None
        messages: list[dict[str, Any]] = []
        foreign: list[dict[str, Any]] = []  # JSON, but no JSON-RPC message
        for m in parsed or []:
            if m.get("jsonrpc") == "2.0" and ("result" in m or "error" in m or "method" in m):
                if id_ is not None and m.get("id") is None and "error" in m:
                    m = {**m, "id": id_}  # the gateway's refusal of this very request
                messages.append(m)
            else:
                foreign.append(m)
        if id_ is not None and not any(m.get("id") == id_ and "method" not in m for m in messages):
            messages.append(self._no_answer(id_, status, parsed, foreign))
        if message.get("method") == "initialize":
            for m in messages:
                version = (m.get("result") or {}).get("protocolVersion") if isinstance(m.get("result"), dict) else None
                if m.get("id") == id_ and isinstance(version, str):
                    self.negotiated = version
        return messages

    @staticmethod
    def _no_answer(
        id_: Any, status: int, parsed: list[dict[str, Any]] | None, foreign: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The -32603 error standing in for an answer the remote did not give."""
        data: dict[str, Any] = {"httpStatus": status}
        if foreign:
            data["body"] = foreign[0]
        if status in (401, 403):
            text = f"The remote MCP endpoint refused the token (HTTP {status}); check JENTRIX_TOKEN or --token-file."
        elif parsed is None:
            text = f"The remote MCP endpoint answered HTTP {status} without a JSON-RPC message (the body is not JSON)."
        else:
            text = f"The remote MCP endpoint answered HTTP {status} without a JSON-RPC answer to this request."
        return error_response(id_, INTERNAL_ERROR, text, data)

    def notify(self, message: dict[str, Any]) -> None:
        try:
            self.post(message)
        except self._httpx.HTTPError as exc:
            log.warning("could not forward %s to the remote endpoint: %s", message.get("method"), exc)

    def close(self) -> None:
        self.client.close()

    # -- start-up: who is the token, which workspaces does it see ---------------------------------
    def _modern_call(self, method: str, params: dict[str, Any], id_: str) -> dict[str, Any]:
        meta = {
            META_VERSION: MODERN_VERSIONS[-1],
            META_CAPABILITIES: {},
            META_CLIENT_INFO: {"name": "jentrix-mcp-stdio-bridge", "version": "0.1.0"},
        }
        message = {"jsonrpc": "2.0", "id": id_, "method": method, "params": {**params, "_meta": meta}}
        try:
            response = self.post(message)
        except self._httpx.HTTPError as exc:
            raise StartupError(f"The remote MCP endpoint {self.url} could not be reached: {exc}.") from None
        if response.status_code == 401:
            raise StartupError(
                "The remote MCP endpoint rejected the token (HTTP 401): it is unknown, revoked or expired."
            )
        try:
            messages = self.messages_of(response)
        except ValueError:
            messages = []
        answer = next((m for m in messages if m.get("id") == id_), None)
        if answer is None or "result" not in answer:
            detail = (answer or {}).get("error", {}).get("message") if answer else f"HTTP {response.status_code}"
            raise StartupError(f"The remote MCP endpoint {self.url} did not answer {method}: {detail}.")
        return answer["result"]

    def identify(self) -> tuple[Principal, list[str]]:
        """The token's principal and the workspaces its user belongs to, asked of the remote."""
        self._modern_call("server/discover", {}, "jentrix-bridge-discover")
        ctx = self._tool("get_token_context")
        workspaces = self._tool("list_workspaces")["workspaces"]
        principal = Principal(
            user_id=ctx["userId"],
            token_id=ctx["tokenId"],
            kind=ctx.get("kind", "pat"),
            stored_scopes=tuple(ctx.get("storedScopes") or ()),
            workspace_pin=ctx.get("workspaceId"),
            display_name=ctx.get("displayName"),
            emoji=ctx.get("emoji"),
            expires_at=ctx.get("expiresAt"),
        )
        return principal, [w["id"] for w in workspaces]

    def confirm_binding(self) -> None:
        """Check, once the session carries its (pending) binding, that the remote applies it.

        A server older than ``X-MCP-Binding`` ignores the header and would answer for every
        workspace of the token's user; such a bridge must not start. The pending binding is an
        observe session, so the remote's ``get_token_context`` must report ``observe: true`` and
        the bound workspace. Cost: one request at start.

        Raises:
            StartupError: the remote does not report the binding it was sent.
        """
        binding = self.session.binding if self.session is not None else None
        if binding is None:
            return
        ctx = self._tool("get_token_context")
        if ctx.get("observe") is not binding.observe or ctx.get("boundWorkspaceId") != binding.workspace_id:
            raise StartupError(
                f"The remote MCP endpoint {self.url} does not apply this connection's binding ({BINDING_HEADER}); "
                "it is older than this adapter. Update the server, or run the adapter without --url."
            )

    def _tool(self, name: str) -> dict[str, Any]:
        result = self._modern_call("tools/call", {"name": name, "arguments": {}}, f"jentrix-bridge-{name}")
        if result.get("isError") or not isinstance(result.get("structuredContent"), dict):
            text = (result.get("content") or [{}])[0].get("text", "")
            raise StartupError(f"The remote MCP endpoint refused {name}: {text}")
        return result["structuredContent"]
