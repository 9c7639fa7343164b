"""API Gateway's gateway responses as a client receives them, rendered from template.yaml.

:func:`render` runs a mapping template through a Velocity engine (airspeed, the one moto uses)
with ``$context`` filled as API Gateway fills it; :func:`responses` reads the template's
``GatewayResponses`` as written (no SAM transform needed). Used by tests/test_template_sam.py
(every response parses as JSON-RPC) and tests/test_stdio_bridge.py (the bridge answers a
request that met one of them with the request's own id).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REQUEST_ID = "c0ffee00-0000-4000-8000-000000000001"

# Messages API Gateway may put in $context.error.message: its own wordings, and ones that carry
# what would break a hand-quoted JSON string (quotes, backslashes, newlines, a "$").
GATEWAY_MESSAGES = [
    "Internal server error",
    'Endpoint request timed out: "POST /api/mcp" took \\ too long',
    'line one\nline two\ttabbed \u2028 and "quoted" $context \\n',
]


def render(template: str, *, message: str = "Internal server error", response_type: str = "DEFAULT_5XX") -> str:
    """The body API Gateway sends for ``template``.

    ``$context.error.messageString`` is the message already quoted as a JSON string literal (AWS:
    "the quoted value of $context.error.message"), so a template must emit it bare, never inside
    quotes; ``$context.error.message`` is the raw text."""
    import airspeed

    context = {
        "requestId": REQUEST_ID,
        "error": {"message": message, "messageString": json.dumps(message), "responseType": response_type},
    }
    return airspeed.Template(template).merge({"context": context})


def responses() -> dict[str, dict[str, Any]]:
    """``{response type: {"status": int | None, "template": str}}`` from template.yaml's McpApi."""
    from cfnlint.decode import cfn_yaml

    raw = cfn_yaml.load(str(ROOT / "template.yaml"))
    gateway = raw["Resources"]["McpApi"]["Properties"]["GatewayResponses"]
    return {
        kind: {
            "status": int(spec["StatusCode"]) if "StatusCode" in spec else None,
            "template": spec["ResponseTemplates"]["application/json"],
        }
        for kind, spec in gateway.items()
    }
