"""The local server of ``jentrix dev``: the MCP app and the web app in one process, on one origin
(deployed, they are two functions behind one API). The MCP routes come first; every other path
goes to the web app."""

from __future__ import annotations

from typing import Any


def combined_app(mcp_app: Any = None) -> Any:
    from functions.http_app import create_app
    from functions.web.app import create_web_app

    app = mcp_app or create_app()
    app.mount("/", create_web_app())
    return app
