"""The path API Gateway hands a function, turned into the path its app routes on (stages and
custom-domain base paths; the rules are in functions/lambda_handler.py's docstring). Shared by
the MCP function and the web function; standard library only."""

from __future__ import annotations

import os
from typing import Any


def normalize_base_path(raw: str | None) -> str:
    """``"/jentrix"`` for any spelling of one base path; ``""`` for none."""
    parts = [p for p in (raw or "").split("/") if p]
    return "/" + "/".join(parts) if parts else ""


BASE_PATH = normalize_base_path(os.environ.get("JENTRIX_BASE_PATH"))


def _is_execute_api_host(domain: str | None) -> bool:
    host = (domain or "").lower()
    return ".execute-api." in host and host.endswith((".amazonaws.com", ".amazonaws.com.cn"))


def _drop_prefix(path: str, prefix: str) -> str | None:
    """``path`` without the leading segments ``prefix``, or ``None`` when it does not start with them."""
    if path == prefix:
        return "/"
    if path.startswith(prefix + "/"):
        return path[len(prefix) :]
    return None


def route_path(event: dict[str, Any], base_path: str = BASE_PATH) -> dict[str, Any]:
    """The event with its path rewritten to what the app routes on (see the module docstring)."""
    ctx = event.get("requestContext") or {}
    custom_domain = bool(ctx.get("domainName")) and not _is_execute_api_host(ctx.get("domainName"))
    if event.get("version") == "2.0":
        stage = ctx.get("stage")
        prefix = base_path if custom_domain else (f"/{stage}" if stage and stage != "$default" else "")
        key = "rawPath"
    else:
        prefix = base_path if custom_domain else ""
        key = "path"
    if not prefix:
        return event
    stripped = _drop_prefix(event.get(key) or "", prefix)
    if stripped is None:
        return event
    event = {**event, key: stripped}
    if key == "rawPath":
        http = dict(ctx.get("http") or {})
        inner = _drop_prefix(http.get("path", ""), prefix)
        if inner is not None:
            http["path"] = inner
            event["requestContext"] = {**ctx, "http": http}
    return event
