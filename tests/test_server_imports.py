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


def test_mcp_function_does_not_import_the_web_function():
    """The OAuth server and console run in their own function: the MCP function's cold start
    carries none of their modules (Jinja2, Authlib, cryptography, functions.web, domain.oauth
    until a tmo_ token arrives)."""
    code = (
        "import os; os.environ.setdefault('AWS_ACCESS_KEY_ID','x'); os.environ.setdefault('AWS_SECRET_ACCESS_KEY','x');"
        "import sys, functions.lambda_handler, functions.authorizer;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jinja2', 'authlib', 'cryptography')"
        " or m.startswith('functions.web') or m in ('domain.oauth', 'domain.console')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
