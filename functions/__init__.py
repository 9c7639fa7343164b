"""Entry points: the MCP protocol layer, the HTTP app (uvicorn and Lambda), the stdio adapter, the CLI."""
