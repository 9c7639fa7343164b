"""API Gateway played locally, without Docker: the real handlers behind a REST-API event path.

``jentrix dev --gateway`` serves this instead of the FastAPI app: each HTTP request becomes the
REST-API (payload v1) events API Gateway would send, and runs the deployed code path in order

1. the route check (template.yaml's routes; anything else gets the gateway's 404 answer);
2. the Lambda authorizer, :func:`functions.authorizer.handler`, on a REQUEST authorizer event
   (no cache: every request is checked, as with ``AuthorizerCacheSeconds=0``);
3. the MCP function, :func:`functions.lambda_handler.handler`, on the proxy event carrying the
   authorizer's context and ``principalId`` as ``requestContext.authorizer``.

A refused token or a crashed authorizer gets the body, status and headers of template.yaml's
``GatewayResponses`` (UNAUTHORIZED, MISSING_AUTHENTICATION_TOKEN, DEFAULT_5XX), filled in as API
Gateway fills ``$context``. What it does not play: usage plans and stage throttling (the dev
tokens carry no usage-plan key, so ``JENTRIX_REQUIRE_USAGE_KEY`` is set to false), WAF, request
size limits, the 29 s integration timeout, and SnapStart. docs/deploy.md, "Running the handlers
locally", compares it with ``sam local start-api``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"
API_ID = "local"
ACCOUNT = "000000000000"
REGION = "us-east-1"
# template.yaml's routes (tests/test_local_gateway.py checks this list against the template).
ROUTES: tuple[tuple[str, str, str], ...] = (
    ("POST", r"/api/mcp", "/api/mcp"),
    ("*", r"/api/mcp", "/api/mcp"),
    ("POST", r"/api/mcp/(?P<selection>.+)", "/api/mcp/{selection+}"),
    ("POST", r"/api/artifacts/upload-grant", "/api/artifacts/upload-grant"),
    ("POST", r"/api/tasks/(?P<taskId>[^/]+)/attachments", "/api/tasks/{taskId}/attachments"),
)


@dataclass
class Reply:
    """What the client receives: status, headers (one value each) and the body bytes."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass
class _Context:
    """The attributes of the Lambda context object the handlers and Powertools read."""

    function_name: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return 28_000


def _template_loader() -> type:
    import yaml

    class Loader(yaml.SafeLoader):
        """Reads CloudFormation YAML; short-form intrinsics (!Ref, !Sub, ...) become plain values."""

    def intrinsic(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_mapping(node, deep=True)

    Loader.add_multi_constructor("!", intrinsic)
    return Loader


def _header_value(value: Any) -> str:
    """A gateway-response header as CloudFormation would resolve it here: the template's only
    condition on one, ``!If [HasPublicUrl, !Sub "...${PublicUrl}...", "..."]``, follows
    ``JENTRIX_PUBLIC_URL`` (the PublicUrl parameter's value in the function's environment)."""
    if isinstance(value, list) and len(value) == 3 and value[0] == "HasPublicUrl":
        public = os.environ.get("JENTRIX_PUBLIC_URL", "").rstrip("/")
        return str(value[1]).replace("${PublicUrl}", public) if public else str(value[2])
    return str(value)


def gateway_responses(template: Path = TEMPLATE) -> dict[str, dict[str, Any]]:
    """``{response type: {"status": int | None, "headers": {name: value}, "template": str}}``
    from the template's ``McpApi`` ``GatewayResponses``."""
    import yaml

    raw = yaml.load(template.read_text(encoding="utf-8"), Loader=_template_loader())
    found = {}
    for kind, spec in raw["Resources"]["McpApi"]["Properties"]["GatewayResponses"].items():
        headers = {
            name: _header_value(value).strip("'")
            for name, value in ((spec.get("ResponseParameters") or {}).get("Headers") or {}).items()
        }
        found[kind] = {
            "status": int(spec["StatusCode"]) if "StatusCode" in spec else None,
            "headers": headers,
            "template": spec["ResponseTemplates"]["application/json"],
        }
    return found


def gateway_reply(kind: str, *, request_id: str, message: str, status: int, response_type: str | None = None) -> Reply:
    """The answer API Gateway gives for response type ``kind`` (its default status when the
    template sets none), ``$context`` filled as the gateway fills it: ``messageString`` is the
    message as a quoted JSON string; ``response_type`` is the type the gateway reports when it
    differs from the template's (AUTHORIZER_FAILURE answered with DEFAULT_5XX)."""
    spec = gateway_responses()[kind]
    values = {
        "$context.error.messageString": json.dumps(message),
        "$context.error.message": message,
        "$context.error.responseType": response_type or kind,
        "$context.requestId": request_id,
    }
    body = re.sub("|".join(re.escape(k) for k in values), lambda m: values[m.group(0)], spec["template"])
    return Reply(spec["status"] or status, {"Content-Type": "application/json", **spec["headers"]}, body.encode())


def _route(method: str, path: str) -> tuple[str, dict[str, str]] | None:
    for verb, pattern, resource in ROUTES:
        match = re.fullmatch(pattern, path)
        if match and verb in ("*", method):
            return resource, match.groupdict()
    return None


def invoke(
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    *,
    stage: str = "prod",
    source_ip: str = "127.0.0.1",
    query: dict[str, str] | None = None,
) -> Reply:
    """One request through route check, authorizer and function, as the deployed stack runs it.

    ``path`` is the request path without the stage (``/api/mcp``). Raises nothing a client
    could cause: a failing authorizer is the gateway's 500 answer, like on AWS."""
    from functions import authorizer, lambda_handler

    method = method.upper()
    request_id = str(uuid.uuid4())
    host = next((v for k, v in headers.items() if k.lower() == "host"), f"{API_ID}.execute-api.{REGION}.amazonaws.com")
    route = _route(method, path)
    if route is None:
        return gateway_reply(
            "MISSING_AUTHENTICATION_TOKEN", request_id=request_id, message="Missing Authentication Token", status=403
        )
    resource, params = route
    method_arn = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{API_ID}/{stage}/{method}{path}"
    request_context: dict[str, Any] = {
        "accountId": ACCOUNT,
        "apiId": API_ID,
        "resourcePath": resource,
        "httpMethod": method,
        "path": f"/{stage}{path}",
        "stage": stage,
        "protocol": "HTTP/1.1",
        "domainName": host,
        "requestId": request_id,
        "requestTimeEpoch": int(time.time() * 1000),
        "identity": {"sourceIp": source_ip, "userAgent": headers.get("user-agent", "")},
    }
    auth_event = {
        "type": "REQUEST",
        "methodArn": method_arn,
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": query or None,
        "pathParameters": params or None,
        "stageVariables": None,
        "requestContext": request_context,
    }
    try:
        allowed = authorizer.handler(auth_event, _Context("jentrix-authorizer"))
    except authorizer.Unauthorized:
        return gateway_reply("UNAUTHORIZED", request_id=request_id, message="Unauthorized", status=401)
    except Exception:  # noqa: BLE001 - API Gateway answers any other authorizer failure with a 500
        return gateway_reply(
            "DEFAULT_5XX",
            request_id=request_id,
            message="Internal server error",
            status=500,
            response_type="AUTHORIZER_FAILURE",
        )
    request_context["authorizer"] = {
        **allowed.get("context", {}),
        "principalId": allowed["principalId"],
        "integrationLatency": 0,
    }
    text = body.decode("utf-8", errors="replace")
    binary = text.encode("utf-8") != body
    event = {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": params or None,
        "stageVariables": None,
        "requestContext": request_context,
        "body": (base64.b64encode(body).decode() if binary else text) if body else None,
        "isBase64Encoded": binary,
    }
    out = lambda_handler.handler(event, _Context("jentrix-mcp"))
    reply_headers = {k: str(v) for k, v in (out.get("headers") or {}).items()}
    for k, values in (out.get("multiValueHeaders") or {}).items():
        reply_headers.setdefault(k, ", ".join(str(v) for v in values))
    payload = out.get("body") or ""
    data = base64.b64decode(payload) if out.get("isBase64Encoded") else payload.encode("utf-8")
    return Reply(int(out["statusCode"]), reply_headers, data)


def asgi_app(*, stage: str = "prod") -> Any:
    """An ASGI app that serves every request through :func:`invoke` (on a worker thread: the
    Lambda handler runs its own event loop). Mounted at the root: ``http://host:port/api/mcp``."""
    os.environ.setdefault("JENTRIX_REQUIRE_USAGE_KEY", "false")  # dev tokens have no usage-plan key

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        from urllib.parse import parse_qsl

        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        client = (scope.get("client") or ("127.0.0.1", 0))[0]
        reply = await asyncio.to_thread(
            invoke,
            scope["method"],
            scope["path"],
            headers,
            b"".join(chunks),
            stage=stage,
            source_ip=client,
            query=query,
        )
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [
                    (k.lower().encode("latin-1"), v.encode("latin-1"))
                    for k, v in reply.headers.items()
                    if k.lower() != "content-length"
                ]
                + [(b"content-length", str(len(reply.body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": reply.body})

    return app
