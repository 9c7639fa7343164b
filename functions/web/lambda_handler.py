"""AWS Lambda entry of the web function (OAuth endpoints and console pages) behind Mangum, with
the MCP function's path rules (functions/gateway_paths.py)."""

from __future__ import annotations

from typing import Any

from mangum import Mangum

from functions.gateway_paths import route_path
from functions.web.app import app

_mangum = Mangum(app, lifespan="off", api_gateway_base_path="/")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _mangum(route_path(event), context)
