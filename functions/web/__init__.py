"""The web function: OAuth authorization server and console pages (functions/web/app.py).
Never imported by the MCP function (tests/test_server_imports.py checks it)."""
