"""Test-only MCP servers for the official conformance suite (never deployed).

* ``--mode fixtures``: our protocol layer (``functions.protocol.McpProtocol``) and HTTP adapter
  (``functions.http_app.create_app``) serving the suite's fixture tools (``test_simple_text``,
  ``test_error_handling``, …) instead of the product's, through the real pipeline.
* ``--mode product``: the product app with the product's tools, unchanged.

The suite sends no ``Authorization`` header, so both wrap the app in an ASGI middleware that
adds ``Bearer $JENTRIX_TOKEN`` to requests that have none — what a configured client or an
API Gateway authorizer would supply. Everything else (Origin rules, 405s, both eras, header
validation) is the product's own code.

Fixture tools reach the protocol through ``McpProtocol(registry=...)`` with a registry of
the suite's fixture tools only.

Run: python -m benchmarks.conformance_server --mode fixtures --port 8931 (needs the JENTRIX_*
environment of a stack with tables and ``JENTRIX_TOKEN``).
"""

from __future__ import annotations

import argparse
import base64
import os
from typing import Any

from pydantic import BaseModel, ConfigDict

# a 1x1 red PNG and a tiny WAV header, for the content fixtures
PNG_1PX = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201f0e1d9f90000000049454e44ae426082"
    )
).decode()


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SamplingArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    prompt: str = "Hello"


class ElicitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    message: str = "Please provide your information"


class TextOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: str


def _text(value: str) -> Any:
    return lambda ctx, args: TextOut(text=value)


def _fail(ctx: Any, args: Any) -> Any:
    from domain.errors import ErrorCode, ToolError

    raise ToolError(
        ErrorCode.INVALID_INPUT,
        "This tool intentionally returns an error for testing",
        "Nothing to fix: the conformance suite expects it.",
    )


def _content(kind: str) -> Any:
    # Our protocol layer renders every result as structuredContent plus one JSON text block;
    # it has no way to emit image/audio/resource blocks, so these return what they can.
    payloads = {
        "image": {"type": "image", "data": PNG_1PX, "mimeType": "image/png"},
        "audio": {
            "type": "audio",
            "data": base64.b64encode(b"RIFF$\x00\x00\x00WAVE").decode(),
            "mimeType": "audio/wav",
        },
        "resource": {
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        },
    }
    return lambda ctx, args: TextOut(text=f"{kind} content is not supported by this server", block=payloads.get(kind))


FIXTURES: list[tuple[str, str, type[BaseModel], Any]] = [
    ("test_simple_text", "Returns simple text.", NoArgs, _text("This is a simple text response for testing.")),
    ("test_error_handling", "Always fails.", NoArgs, _fail),
    ("test_image_content", "Returns an image.", NoArgs, _content("image")),
    ("test_audio_content", "Returns audio.", NoArgs, _content("audio")),
    ("test_embedded_resource", "Returns an embedded resource.", NoArgs, _content("resource")),
    ("test_multiple_content_types", "Returns text, image and resource.", NoArgs, _content("mixed")),
    ("test_tool_with_logging", "Logs while running.", NoArgs, _text("Tool with logging executed successfully")),
    ("test_tool_with_progress", "Reports progress.", NoArgs, _text("Progress test completed")),
    ("test_sampling", "Asks the client to sample.", SamplingArgs, _text("sampling is not supported by this server")),
    (
        "test_elicitation",
        "Asks the client for input.",
        ElicitArgs,
        _text("elicitation is not supported by this server"),
    ),
]


def make_spec(name: str, description: str, input_model: type[BaseModel], handler: Any) -> Any:
    """A ToolSpec for a fixture: read-only, read scope, no workspace target."""
    from domain.registry import ToolSpec

    return ToolSpec(
        name=name,
        title=name,
        description=description,
        area="context",
        scope="read",
        read_only=True,
        idempotent=True,
        input_model=input_model,
        output_model=TextOut,
        handler=handler,
    )


def fixture_protocol() -> Any:
    """The product protocol layer serving only the suite's fixture tools."""
    from domain.registry import Registry
    from functions.protocol import McpProtocol

    return McpProtocol(registry=Registry(make_spec(*f) for f in FIXTURES))


class InjectBearer:
    """Adds ``Authorization: Bearer <token>`` to HTTP requests that carry none."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.header = (b"authorization", f"Bearer {token}".encode())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and not any(k == b"authorization" for k, _ in scope.get("headers", [])):
            scope = {**scope, "headers": [*scope.get("headers", []), self.header]}
        await self.app(scope, receive, send)


def build(mode: str) -> Any:
    from benchmarks._support import configure_store
    from functions.http_app import create_app

    configure_store()
    app = create_app(fixture_protocol()) if mode == "fixtures" else create_app()
    return InjectBearer(app, os.environ["JENTRIX_TOKEN"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Test-only MCP server for the conformance suite.")
    p.add_argument("--mode", choices=("fixtures", "product"), required=True)
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args(argv)
    import uvicorn

    uvicorn.run(
        build(args.mode), host="127.0.0.1", port=args.port, log_level="warning", access_log=False, lifespan="off"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
