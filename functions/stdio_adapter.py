"""``jentrix mcp``: MCP over stdin/stdout for desktop clients (Claude Code, Cursor, Codex, …).

Three ways to run one codebase:

* default — the tool handlers run in this process against the local stack's DynamoDB Local
  (``--endpoint`` or ``JENTRIX_DYNAMODB_ENDPOINT``). DynamoDB in AWS is used only when
  ``--aws`` says so: neither a missing endpoint nor a stray ``AWS_PROFILE`` can reach it;
* ``--url https://…/api/mcp`` — a bridge to a remote endpoint with the token as Bearer; the
  handlers, authorizer and limits run there and the desktop holds no AWS credentials;
* ``--ephemeral`` — its own in-memory DynamoDB Local, seeded with a user, a workspace and a
  token, all gone at exit (offline tests, CI of client integrations).

stdout carries JSON-RPC lines and nothing else: file descriptor 1 is re-pointed at stderr
before anything else runs, so even a stray ``print`` in a library lands in the log. Logs go to
stderr. Invalid explicit binding data (token, ``--workspace``, ``--checkout``, endpoint) stops
the adapter at start with exit code 2 and one clear line on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from functions.stdio.binding import StartupError
from functions.stdio.framing import DEFAULT_MAX_LINE_BYTES

log = logging.getLogger("jentrix.stdio")
EXIT_STARTUP = 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jentrix mcp",
        description="Serve the Jentrix MCP tools over stdin/stdout (one JSON-RPC message per line). Logs go to stderr.",
    )
    mode = p.add_argument_group("where the tools run (pick one; default: in-process against DynamoDB Local)")
    mode.add_argument(
        "--url", help="bridge to a remote MCP endpoint, e.g. https://example.com/api/mcp (the token is sent as Bearer)"
    )
    mode.add_argument(
        "--ephemeral",
        action="store_true",
        help="start a throwaway in-memory DynamoDB Local with a seeded user, workspace and token",
    )
    mode.add_argument(
        "--endpoint", help="DynamoDB endpoint for the in-process mode (default: $JENTRIX_DYNAMODB_ENDPOINT)"
    )
    mode.add_argument(
        "--aws", action="store_true", help="allow the in-process mode to use DynamoDB in AWS (never implied)"
    )
    bind = p.add_argument_group("binding (explicit values win over anything discovered)")
    bind.add_argument("--token-file", help="file holding the personal access token (default: $JENTRIX_TOKEN)")
    bind.add_argument("--workspace", help="bind the connection to this workspace id (ws_…)")
    bind.add_argument(
        "--checkout", help="bind the connection to this git checkout instead of asking the client for its roots"
    )
    pick = p.add_argument_group('which tools are served (docs/tools.md, "Toolsets"; a -name entry excludes)')
    pick.add_argument("--toolsets", help="comma list of toolsets to serve, e.g. tasks,search (default: all)")
    pick.add_argument("--tools", help="comma list of tool names to serve, e.g. get_task,update_task")
    pick.add_argument("--read-only", action="store_true", help="serve only the read-only tools (wins over --tools)")
    tune = p.add_argument_group("tuning")
    tune.add_argument(
        "--max-line-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_LINE_BYTES,
        help=f"longest accepted line in bytes (default {DEFAULT_MAX_LINE_BYTES}, 16 MiB)",
    )
    tune.add_argument(
        "--roots-timeout",
        type=float,
        default=10.0,
        help="seconds to wait for the client's roots/list answer (default 10)",
    )
    tune.add_argument("--workers", type=_positive_int, default=8, help="tool calls served concurrently (default 8)")
    tune.add_argument(
        "--log-level", default=os.environ.get("JENTRIX_LOG_LEVEL", "INFO"), help="stderr log level (default INFO)"
    )
    return p


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def quiet_duplicate_logs() -> None:
    """Keep the pipeline's structured log lines from being printed a second time.

    ``domain.pipeline`` logs through a Powertools logger with its own stderr handler. Powertools
    filters its records out of the root handlers that exist when that logger is created, but
    here it is created on import, before :func:`logging.basicConfig` adds the root handler, so
    every tool error also bubbled up and came out twice. Its handler already writes to stderr,
    so it need not propagate at all.
    """
    from domain import pipeline

    logging.getLogger(pipeline.logger.name).propagate = False  # the stdlib logger behind Powertools' Logger


def protect_stdout() -> Any:
    """Keep the real stdout for protocol lines only; everything else written to fd 1 goes to stderr."""
    out = os.fdopen(os.dup(1), "wb", buffering=1024 * 1024)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def read_token(args: argparse.Namespace) -> str:
    if args.token_file:
        path = Path(args.token_file).expanduser()
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise StartupError(f"--token-file {path}: {exc.strerror or exc}.") from None
        if not token:
            raise StartupError(f"--token-file {path} is empty.")
        return token
    token = os.environ.get("JENTRIX_TOKEN", "").strip()
    if not token:
        raise StartupError(
            "No token: set JENTRIX_TOKEN or pass --token-file (a personal access token, tm_…; "
            "`jentrix token create` mints one). Use --ephemeral for a throwaway stack that needs none."
        )
    return token


def _is_aws_endpoint(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host.endswith((".amazonaws.com", ".amazonaws.com.cn", ".api.aws"))


def configure_store(args: argparse.Namespace) -> None:
    """Point the store at DynamoDB Local, or at AWS only when ``--aws`` was given."""
    from domain.store import db

    endpoint = args.endpoint or os.environ.get("JENTRIX_DYNAMODB_ENDPOINT") or None
    if endpoint is None and not args.aws:
        raise StartupError(
            "No DynamoDB endpoint: start the local stack (`jentrix dev`) and set JENTRIX_DYNAMODB_ENDPOINT, or pass "
            "--endpoint http://127.0.0.1:<port>. To use DynamoDB in AWS, say so explicitly with --aws; to reach a "
            "deployed server, use --url https://…/api/mcp."
        )
    if endpoint and _is_aws_endpoint(endpoint) and not args.aws:
        raise StartupError(f"The endpoint {endpoint} is DynamoDB in AWS; add --aws if that is really meant.")
    cfg = db.use(endpoint)
    log.info("store: %s, table %s", endpoint or "DynamoDB in AWS (--aws)", cfg.table)


def local_identity(token: str) -> tuple[Any, list[str]]:
    """Authenticate ``token`` against the store and list its user's workspaces."""
    from botocore.exceptions import BotoCoreError, ClientError
    from pynamodb.exceptions import PynamoDBException

    from domain import auth
    from domain.settings import settings
    from domain.store import members

    try:
        principal = auth.authenticate(token)
        if principal is None:
            raise StartupError(
                "The token was not accepted: it is unknown, revoked or expired (or malformed; PATs look like tm_…)."
            )
        member_of = [r.workspaceId for r in members.memberships(principal.user_id)]
    except (PynamoDBException, BotoCoreError, ClientError) as exc:
        raise StartupError(
            f"The store at {settings.endpoint or 'AWS'} (table {settings.table}) could not be read: {exc}."
        ) from None
    return principal, member_of


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s jentrix-mcp %(levelname)s %(message)s"
    )
    out = protect_stdout()
    signal.signal(signal.SIGTERM, _stop)
    ephemeral = None
    repair = None
    if not args.url:  # in process: this process writes; its commits wake the local search consumer below
        from domain.search import install_index_hook

        install_index_hook()
    try:
        try:
            server, ephemeral = _prepare(args, out)
        except StartupError as exc:
            print(f"jentrix mcp: error: {exc}", file=sys.stderr, flush=True)
            return EXIT_STARTUP
        if (
            not args.url
        ):  # in process: no Streams consumer here, so the local one turns pending search records into postings
            from domain.search.loop import RepairLoop

            user_id = server.state.session.principal.user_id
            repair = RepairLoop(lambda: [user_id]).start()
        return server.serve()
    except KeyboardInterrupt:
        return 0
    finally:
        if repair is not None:
            repair.stop()
        if ephemeral is not None:
            ephemeral.close()


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # unwinds the read loop; calls in flight finish, --ephemeral cleans up


def _spawn_ephemeral() -> Any:
    """Launch the ephemeral stack's DynamoDB Local before anything else, so the JVM boots while
    the rest of the adapter is imported. Missing Java or DynamoDB Local is a one-line StartupError."""
    from functions.stdio.ephemeral import EphemeralStack
    from infra.ddb_local import SetupError

    stack = EphemeralStack()
    try:
        stack.spawn()
    except SetupError as exc:
        raise StartupError(f"--ephemeral needs DynamoDB Local: {exc}") from None
    except OSError as exc:
        raise StartupError(f"--ephemeral could not start DynamoDB Local: {exc}.") from None
    return stack


def _prepare(args: argparse.Namespace, out: Any) -> tuple[Any, Any]:
    if args.url and (args.ephemeral or args.endpoint or args.aws):
        raise StartupError(
            "--url runs the tools remotely; it cannot be combined with --ephemeral, --endpoint or --aws."
        )
    if args.ephemeral and (args.endpoint or args.aws or args.workspace):
        raise StartupError("--ephemeral seeds its own store and workspace; drop --endpoint, --aws and --workspace.")
    ephemeral = _spawn_ephemeral() if args.ephemeral else None
    try:
        return _prepare_rest(args, out, ephemeral)
    except BaseException:
        if ephemeral is not None:
            ephemeral.close()
        raise


def _prepare_rest(args: argparse.Namespace, out: Any, ephemeral: Any) -> tuple[Any, Any]:
    quiet_duplicate_logs()  # imports the pipeline (the heavy part), after --ephemeral's JVM is launched
    from domain.toolsets import OPT_IN_ON, as_headers
    from functions.protocol import Session
    from functions.stdio.backends import LocalBackend, RemoteBackend
    from functions.stdio.binding import choose_workspace, new_lifetime_id
    from functions.stdio.checkout import CheckoutError, verify_checkout
    from functions.stdio.server import BindingState, StdioServer
    from infra.ddb_local import SetupError

    token = None if args.ephemeral else read_token(args)
    checkout = None
    if args.checkout:
        try:
            checkout = verify_checkout(Path(args.checkout).expanduser().resolve())
        except CheckoutError as exc:
            raise StartupError(f"--checkout {args.checkout}: {exc}.") from None
    ephemeral_ws = None
    backend: Any
    if args.url:
        backend = RemoteBackend(args.url, token or "")
        principal, member_of = backend.identify()
    else:
        if ephemeral is not None:
            if os.environ.get("JENTRIX_TOKEN"):
                log.info("--ephemeral: JENTRIX_TOKEN is ignored; the seeded token is used")
            try:
                seed = ephemeral.start()
            except SetupError as exc:
                raise StartupError(f"--ephemeral: {exc}") from None
            token, ephemeral_ws = seed.token, seed.workspace_id
        else:
            configure_store(args)
        principal, member_of = local_identity(token or "")
    choice = choose_workspace(args.workspace, principal.workspace_pin, member_of, ephemeral=ephemeral_ws)
    picked = selection_layer(args)
    # jentrix mcp serves the opt-in toolsets (coordination) by default; --toolsets still narrows
    session = Session(
        principal=principal, transport="stdio", layers=(OPT_IN_ON, picked) if picked is not None else (OPT_IN_ON,)
    )
    state = BindingState(
        session, choice, new_lifetime_id(), checkout, None if args.url else repo_resolver(principal.user_id)
    )
    if args.url:
        backend.session = session  # from now on every request carries the binding (X-MCP-Binding)
        backend.confirm_binding()  # before the selection headers: they may hide get_token_context
        # the remote server applies the flags as X-MCP-* headers, and serves the opt-in toolsets as jentrix mcp does
        backend.selection_headers = {**as_headers(OPT_IN_ON), **as_headers(picked)}
    else:
        backend = LocalBackend(session, token=token)
        # a local process has no gateway in front: mj_wait_request may wait longer (domain/tools/coordination.py)
        os.environ.setdefault("JENTRIX_WAIT_CAP_SECONDS", "55")
    log.info(
        "serving MCP on stdio (%s); token %s of user %s; workspace %s (%s)",
        "bridge to " + args.url if args.url else "in-process",
        principal.token_id,
        principal.user_id,
        choice.workspace_id or "none",
        choice.source,
    )
    server = StdioServer(
        backend,
        state,
        out=out,
        max_line_bytes=args.max_line_bytes,
        workers=args.workers,
        roots_timeout=args.roots_timeout,
    )
    return server, ephemeral


def selection_layer(args: argparse.Namespace) -> Any:
    """The --toolsets / --tools / --read-only layer (domain.toolsets), or None; a bad name is a StartupError."""
    from domain import toolsets
    from domain.catalog import registry

    try:
        return toolsets.from_flags(registry(), toolsets=args.toolsets, tools=args.tools, read_only=bool(args.read_only))
    except toolsets.SelectionError as exc:
        raise StartupError(str(exc)) from None


def repo_resolver(user_id: str) -> Any:
    """The in-process repository lookup for rule 5 of the binding (functions.stdio.binding): the
    workspaces whose projects link a repository, or whose defaultRepo it is — the same lookup as
    resolve_projects_for_repo (domain.store.projects.lookup)."""

    def resolve(repo: str) -> list[tuple[str, str]]:
        from domain.store import projects

        found, names = projects.lookup(user_id, repo)
        return [(p.workspaceId, f"{names.get(p.workspaceId, p.workspaceId)}: {p.name}") for p, _ in found]

    return resolve


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
