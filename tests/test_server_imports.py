"""The server path (Lambda entry, HTTP app, protocol layer) never imports the MCP SDK."""

from __future__ import annotations

import subprocess
import sys


def test_lambda_entry_does_not_import_the_sdk():
    code = (
        "import os; os.environ.setdefault('AWS_ACCESS_KEY_ID','x'); os.environ.setdefault('AWS_SECRET_ACCESS_KEY','x');"
        "import sys, functions.lambda_handler, functions.protocol, domain.catalog; domain.catalog.registry();"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.') or m.startswith('mcp_types')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
