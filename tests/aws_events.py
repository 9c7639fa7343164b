"""Canned API Gateway REST (payload v1) events, as the gateway sends them behind our authorizer.

Self-contained (standard library only) so the packaging test can hand the same events to a
clean interpreter that imports nothing from the repository.
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass
from typing import Any

_ids = itertools.count(1)
API_ID = "a1b2c3d4e5"
METHOD_ARN = f"arn:aws:execute-api:us-east-1:123456789012:{API_ID}/prod/POST/api/mcp"


@dataclass
class LambdaContext:
    """The attributes of the Lambda context object that libraries read."""

    function_name: str = "jentrix-mcp-test"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:jentrix-mcp-test"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = ""
    log_group_name: str = "/aws/lambda/jentrix-mcp-test"
    log_stream_name: str = "2026/12/01/[$LATEST]0123456789abcdef"

    def __post_init__(self) -> None:
        self.aws_request_id = self.aws_request_id or str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 25_000


def tools_call(name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    ).encode()


def mcp_headers(token: str | None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Host": f"{API_ID}.execute-api.us-east-1.amazonaws.com",
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def rest_event(
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None,
    *,
    authorizer: dict[str, Any] | None = None,
    request_id: str | None = None,
    resource: str | None = None,
    path_parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A REST API proxy event; ``authorizer`` is what our Lambda authorizer returned as context
    (API Gateway adds ``principalId`` and ``integrationLatency``)."""
    ctx: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": API_ID,
        "resourceId": "abc123",
        "resourcePath": resource or path,
        "httpMethod": method,
        "path": f"/prod{path}",
        "stage": "prod",
        "protocol": "HTTP/1.1",
        "domainName": f"{API_ID}.execute-api.us-east-1.amazonaws.com",
        "requestId": request_id or str(uuid.uuid4()),
        "requestTimeEpoch": 1_790_000_000_000,
        "identity": {"sourceIp": "203.0.113.7", "userAgent": "test", "apiKey": "usage-key", "apiKeyId": "k1"},
    }
    if authorizer is not None:
        ctx["authorizer"] = {**authorizer, "principalId": authorizer.get("jentrixUserId", ""), "integrationLatency": 12}
    return {
        "resource": resource or path,
        "path": path,
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": ctx,
        "body": body.decode() if body is not None else None,
        "isBase64Encoded": False,
    }


def authorizer_event(token: str | None, *, method_arn: str = METHOD_ARN) -> dict[str, Any]:
    """The REQUEST authorizer's input event."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return {
        "type": "REQUEST",
        "methodArn": method_arn,
        "resource": "/api/mcp",
        "path": "/api/mcp",
        "httpMethod": "POST",
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "requestContext": {"requestId": str(uuid.uuid4()), "stage": "prod", "apiId": API_ID},
    }


def answer(out: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    """``(status, lower-cased headers, parsed JSON body)`` of a proxy response."""
    headers = {k.lower(): v for k, v in (out.get("headers") or {}).items()}
    for k, vs in (out.get("multiValueHeaders") or {}).items():
        headers.setdefault(k.lower(), ", ".join(vs))
    body = out.get("body") or ""
    return out["statusCode"], headers, json.loads(body) if body else None
