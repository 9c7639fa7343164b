"""The public URLs of this deployment, as clients see them: the OAuth issuer, the MCP resource
(RFC 8707 audience) and the protected-resource metadata URL (RFC 9728).

Clients compare these byte for byte (the issuer with the URL its metadata was fetched from, the
token audience with the resource), so every place that spells one calls these functions.

The base URL (``https://host[/prefix]``, no trailing slash) is, in order:

1. ``JENTRIX_PUBLIC_URL`` when set (a custom domain, a proxy in front);
2. on Lambda (Mangum's ``aws.event`` in the ASGI scope): ``https://`` + the event's
   ``requestContext.domainName``, then ``/<stage>`` when that host is an ``execute-api`` one
   (the stage is part of every public path there), else ``JENTRIX_BASE_PATH`` (a custom
   domain's mapping);
3. otherwise (uvicorn, ``jentrix dev``): the request's scheme and ``Host`` header.

Cheap to import (standard library only): the MCP function uses it for the 401 challenge.
"""

from __future__ import annotations

import os
from typing import Any

MCP_PATH = "/api/mcp"
PRM_PATH = "/.well-known/oauth-protected-resource"


def _norm(raw: str | None) -> str:
    parts = [p for p in (raw or "").split("/") if p]
    return "/" + "/".join(parts) if parts else ""


def base_url(scope: dict[str, Any]) -> str:
    configured = os.environ.get("JENTRIX_PUBLIC_URL", "").strip().rstrip("/")
    if configured:
        return configured
    event = scope.get("aws.event")
    if isinstance(event, dict):
        ctx = event.get("requestContext") or {}
        host = str(ctx.get("domainName") or _header(scope, "host") or _server(scope)).lower()
        if ".execute-api." in host:
            stage = str(ctx.get("stage") or "")
            prefix = "" if stage in ("", "$default") else "/" + stage
        else:
            prefix = _norm(os.environ.get("JENTRIX_BASE_PATH"))
        return f"https://{host}{prefix}"
    scheme = scope.get("scheme") or "http"
    return f"{scheme}://{_header(scope, 'host') or _server(scope)}"


def _server(scope: dict[str, Any]) -> str:
    server = scope.get("server")
    if server and server[0]:
        return f"{server[0]}:{server[1]}" if server[1] else str(server[0])
    return "localhost"


def _header(scope: dict[str, Any], name: str) -> str | None:
    wanted = name.encode("latin-1")
    for key, value in scope.get("headers") or []:
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


def resource(scope: dict[str, Any]) -> str:
    """The MCP resource identifier: the one audience our tokens carry."""
    return base_url(scope) + MCP_PATH


def resource_metadata_url(scope: dict[str, Any]) -> str:
    """Where the protected-resource metadata of :func:`resource` is served (under the base URL,
    so it is reachable through an API Gateway stage too)."""
    return base_url(scope) + PRM_PATH + MCP_PATH


def issuer(scope: dict[str, Any]) -> str:
    return base_url(scope)
