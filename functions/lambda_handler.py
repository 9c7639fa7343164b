"""AWS Lambda entry: the FastAPI app behind Mangum (``lifespan="off"``).

API Gateway REST (v1) events carry the resource path without the stage; HTTP API (v2) events
on a named stage carry ``/<stage>`` in ``rawPath``, which is stripped here so both reach
``/api/mcp``. A custom-domain base path is removed by Mangum via ``JENTRIX_BASE_PATH``.
Clients are created at import (cold start), never per invocation.
"""

from __future__ import annotations

import os
from typing import Any

from mangum import Mangum

from functions.http_app import app

_mangum = Mangum(app, lifespan="off", api_gateway_base_path=os.environ.get("JENTRIX_BASE_PATH", "/"))


def _strip_stage(event: dict[str, Any]) -> dict[str, Any]:
    if event.get("version") != "2.0":
        return event
    stage = (event.get("requestContext") or {}).get("stage")
    raw = event.get("rawPath") or ""
    if stage and stage != "$default" and (raw == f"/{stage}" or raw.startswith(f"/{stage}/")):
        event = {**event, "rawPath": raw[len(stage) + 1 :] or "/"}
        http = dict((event.get("requestContext") or {}).get("http") or {})
        if http.get("path", "").startswith(f"/{stage}/"):
            http["path"] = http["path"][len(stage) + 1 :]
            event["requestContext"] = {**event["requestContext"], "http": http}
    return event


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _mangum(_strip_stage(event), context)
