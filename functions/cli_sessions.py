"""``jentrix agent launch`` and ``jentrix session attach``: the trusted paths of connected sessions.

    jentrix agent launch --project PJ [--provider claude-code] [--checkout DIR] -- COMMAND [ARGS…]
    jentrix session attach --provider claude-code (--hook-input | --thread-id ID | --thread-id -)

Both authenticate with ``--token-file F`` (else ``$JENTRIX_TOKEN_FILE``, else ``$JENTRIX_TOKEN``)
and run the same tool pipeline the MCP endpoint runs, in this process, against the table
``--endpoint`` / ``$JENTRIX_DYNAMODB_ENDPOINT`` names (like the other commands).

``agent launch`` creates the session (STARTING) with a fresh launch nonce as its idempotencyKey,
runs COMMAND in the checkout with ``JENTRIX_SESSION_ID`` (and the token file's path) in its
environment, and completes the session when COMMAND exits: COMPLETED on status 0, INTERRUPTED
otherwise (a signal included). Its own exit status is COMMAND's.

``session attach`` is what a provider's session-start hook runs (docs/sessions.md). It binds the
provider's own session/thread id — read from the hook's JSON on stdin (``--hook-input`` or
``--thread-id -``; the ``session_id`` field) or given by the hook command line — to the session
``$JENTRIX_SESSION_ID`` names (set by ``agent launch``), or, outside a launch, creates an ACTIVE
session for ``--project``. The id never comes from anything a model wrote: the hook runs in the
provider process before the model's first turn, and a binding, once made, never changes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from functions.cli_common import CliError, add_target_flags, connect

SESSION_ENV = "JENTRIX_SESSION_ID"
TOKEN_FILE_ENV = "JENTRIX_TOKEN_FILE"
TOKEN_ENV = "JENTRIX_TOKEN"
THREAD_FIELDS = ("session_id", "thread_id", "thread-id")  # Claude Code and Codex hook inputs name it session_id


def _secret(args: argparse.Namespace) -> str:
    path = args.token_file or os.environ.get(TOKEN_FILE_ENV)
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}", code=2) from None
    secret = os.environ.get(TOKEN_ENV, "").strip()
    if not secret:
        raise CliError(f"no token: pass --token-file F, or set ${TOKEN_FILE_ENV} or ${TOKEN_ENV}.", code=2)
    return secret


def _principal(args: argparse.Namespace) -> Any:
    from domain import auth

    principal = auth.authenticate(_secret(args))
    if principal is None:
        raise CliError("the token is unknown, revoked or expired.")
    return principal


def call(principal: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call through the pipeline; a failure becomes a CliError carrying the envelope's text."""
    from domain import pipeline
    from domain.catalog import registry

    spec = registry().get(tool)
    assert spec is not None, tool
    out = pipeline.call_tool(spec, arguments, principal)
    if out.error is not None:
        e = out.error["error"]
        raise CliError(
            f"{tool}: {e['code']}{' ' + e['reason'] if e.get('reason') else ''}: {e['message']} {e.get('hint', '')}".strip()
        )
    assert out.result is not None
    return out.result


def _git(directory: str, *argv: str) -> str | None:
    done = subprocess.run(["git", "-C", directory, *argv], capture_output=True, text=True, timeout=20, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def repo_state(directory: str) -> dict[str, Any]:
    """Branch, HEAD commit and dirtiness of the checkout (what git reports; absent parts left out)."""
    state: dict[str, Any] = {}
    branch = _git(directory, "rev-parse", "--abbrev-ref", "HEAD")
    if branch and branch != "HEAD":
        state["branch"] = branch[:255]
    commit = _git(directory, "rev-parse", "HEAD")
    if commit:
        state["commit"] = commit.lower()
    porcelain = _git(directory, "status", "--porcelain")
    if porcelain is not None:
        state["dirty"] = bool(porcelain)
    return state


def _checkout(directory: str | None) -> Any:
    from functions.stdio.checkout import CheckoutError, verify_checkout

    try:
        return verify_checkout(Path(directory or os.getcwd()).expanduser().resolve())
    except CheckoutError as exc:
        raise CliError(
            f"{directory or 'the current directory'}: {exc}; run inside a git checkout of a GitHub repository, or pass --checkout DIR.",
            code=2,
        ) from None


# -- agent launch ------------------------------------------------------------------------------
def cmd_agent_launch(args: argparse.Namespace) -> int:
    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError(
            "nothing to launch: put the provider command after --, e.g. jentrix agent launch --project pj_… -- claude",
            code=2,
        )
    principal = _principal_connected(args)
    checkout = _checkout(args.checkout)
    create: dict[str, Any] = {
        "projectId": args.project,
        "repo": checkout.repository,
        "repoState": repo_state(checkout.path),
        "idempotencyKey": f"launch-{uuid.uuid4()}",
    }
    if args.provider:
        create["provider"] = args.provider
    if args.continues:
        create["continuesSessionId"] = args.continues
    session = call(principal, "create_agent_session", create)["session"]
    print(
        f"jentrix: session {session['id']} ({session['projectName']}, {session['repository']}) is STARTING",
        file=sys.stderr,
    )
    env = dict(os.environ, **{SESSION_ENV: session["id"]})
    if args.token_file:
        env[TOKEN_FILE_ENV] = str(Path(args.token_file).resolve())
    status = _run(command, checkout.path, env)
    outcome = "COMPLETED" if status == 0 else "INTERRUPTED"
    done = complete(principal, session["id"], outcome, repo_state(checkout.path))
    print(f"jentrix: session {done['id']} {done['status']} (command exited {status})", file=sys.stderr)
    return status


def _principal_connected(args: argparse.Namespace) -> Any:
    connect(args)
    return _principal(args)


def _run(command: list[str], cwd: str, env: dict[str, str]) -> int:
    """Run the provider command in the foreground; Ctrl-C goes to it (it shares our process group)
    and we keep waiting, so the session is completed after it exits. A signal death is 128 + n."""
    try:
        child = subprocess.Popen(command, cwd=cwd, env=env)
    except OSError as exc:
        raise CliError(f"cannot run {command[0]}: {exc.strerror or exc}", code=127) from None
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code


def complete(principal: Any, session_id: str, outcome: str, end_state: dict[str, Any]) -> dict[str, Any]:
    """Complete the session under the updatedAt just read (the hook's binding or an alignment
    moved it meanwhile); one more read and try if it moved again in between."""
    for attempt in range(3):
        current = call(principal, "get_agent_session", {"sessionId": session_id})["session"]
        if current["status"] not in ("STARTING", "ACTIVE"):
            return current
        try:
            return call(
                principal,
                "complete_agent_session",
                {
                    "sessionId": session_id,
                    "outcome": outcome,
                    "expectedUpdatedAt": current["updatedAt"],
                    "repoState": end_state,
                },
            )["session"]
        except CliError as exc:
            if "CONFLICT" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


# -- session attach ----------------------------------------------------------------------------
def _thread_id(args: argparse.Namespace, stdin: Any) -> str:
    if args.hook_input or args.thread_id == "-":
        raw = stdin.read()
        try:
            data = json.loads(raw or "{}")
        except json.JSONDecodeError:
            raise CliError(
                "the hook input on stdin is not JSON (the provider passes its hook payload there).", code=2
            ) from None
        value = next(
            (
                data.get(k)
                for k in THREAD_FIELDS
                if isinstance(data, dict) and isinstance(data.get(k), str) and data.get(k)
            ),
            None,
        )
        if not value:
            raise CliError(f"the hook input has no {' / '.join(THREAD_FIELDS)} field.", code=2)
        return value
    if not args.thread_id:
        raise CliError("pass --hook-input (the provider's hook JSON on stdin) or --thread-id ID.", code=2)
    return args.thread_id


def cmd_session_attach(args: argparse.Namespace, stdin: Any = None) -> int:
    thread = _thread_id(args, stdin or sys.stdin)
    principal = _principal_connected(args)
    session_id = args.session or os.environ.get(SESSION_ENV)
    # The key names this binding (session or project, provider, thread): a hook that fires twice
    # replays the first answer; a later launch binding the same thread is a new call.
    nonce = hashlib.sha256(
        "\x1f".join((session_id or "", args.project or "", args.provider, thread)).encode()
    ).hexdigest()[:40]
    arguments: dict[str, Any] = {"provider": args.provider, "threadId": thread, "idempotencyKey": f"attach-{nonce}"}
    if session_id:
        arguments["sessionId"] = session_id
    else:
        if not args.project:
            raise CliError(
                f"no session to attach: run under `jentrix agent launch` (it sets ${SESSION_ENV}), or pass --project to create one.",
                code=2,
            )
        checkout = _checkout(args.checkout)
        arguments.update(projectId=args.project, repo=checkout.repository, repoState=repo_state(checkout.path))
    out = call(principal, "attach_agent_session", arguments)
    print(f"jentrix: session {out['session']['id']} {out['attached']} ({args.provider})", file=sys.stderr)
    return 0


def add_parsers(sub: Any) -> None:
    agent = sub.add_parser("agent", help="launch a coding agent inside a connected session")
    asub = agent.add_subparsers(dest="action", metavar="ACTION", required=True)
    launch = asub.add_parser(
        "launch", help="create a session, run the provider command, complete the session when it exits"
    )
    launch.add_argument(
        "--project",
        required=True,
        metavar="PJ_ID",
        help="the project the session works for (fixed for the session's life)",
    )
    launch.add_argument(
        "--provider", choices=["claude-code", "codex", "cursor", "other"], help="the provider being launched"
    )
    launch.add_argument(
        "--checkout", metavar="DIR", help="the git checkout to work in (default: the current directory)"
    )
    launch.add_argument("--continues", metavar="SES_ID", help="an earlier session this one deliberately continues")
    launch.add_argument("--token-file", help=f"file holding the token (default ${TOKEN_FILE_ENV}, else ${TOKEN_ENV})")
    launch.add_argument("command", nargs=argparse.REMAINDER, help="-- then the provider command and its arguments")
    add_target_flags(launch)
    launch.set_defaults(func=cmd_agent_launch)

    session = sub.add_parser("session", help="connected-session commands run by provider hooks")
    ssub = session.add_subparsers(dest="action", metavar="ACTION", required=True)
    attach = ssub.add_parser("attach", help="bind the provider's session/thread id (from its hook) to the open session")
    attach.add_argument("--provider", required=True, choices=["claude-code", "codex", "cursor", "other"])
    attach.add_argument(
        "--thread-id", metavar="ID", help="the provider's session/thread id; '-' reads the hook JSON on stdin"
    )
    attach.add_argument(
        "--hook-input", action="store_true", help="read the provider's hook JSON on stdin and take its session_id"
    )
    attach.add_argument(
        "--session", metavar="SES_ID", help=f"the session to bind (default ${SESSION_ENV}, set by jentrix agent launch)"
    )
    attach.add_argument("--project", metavar="PJ_ID", help="outside a launch: create an ACTIVE session in this project")
    attach.add_argument(
        "--checkout", metavar="DIR", help="with --project: the checkout (default: the current directory)"
    )
    attach.add_argument("--token-file", help=f"file holding the token (default ${TOKEN_FILE_ENV}, else ${TOKEN_ENV})")
    add_target_flags(attach)
    attach.set_defaults(func=cmd_session_attach)
