"""``jentrix connect``: write or remove this server's entry in MCP clients' own configuration files.

    jentrix connect [claude-code|codex|cursor|vscode|all] [--remove] [--scope user|project|local]
                    [--project DIR] [--name jentrix] [--yes | --dry-run]
                    [--url URL]                                      (the client talks HTTP to the remote)
                    [--bridge URL | --ephemeral | --endpoint URL]    (the client starts `jentrix mcp`)
                    [--workspace ws_…] [--token-file PATH] [--read-only] [--toolsets LIST] [--store-secret]

Each client's file, key and secret handling are in docs/connect.md (with the documentation each
one follows). In short: the entry is the stdio adapter (``jentrix mcp …``, docs/stdio.md) unless
``--url`` asks for the remote endpoint; the token is never written unless ``--store-secret`` says
so (then a warning names the file, and whether it is meant to be shared); each change is shown as
a unified diff and written only after a yes (or ``--yes``); a second run finds nothing to change;
everything else in the file is left as it was (JSON through functions/jsonc_edit.py, TOML through
tomlkit). ``all`` covers the clients detected on this machine (their configuration directory
exists). Writing an entry grants nothing: the token (or OAuth grant) the client presents decides.

Exit codes: 0 done (or nothing to do), 1 declined or nothing detected, 2 bad arguments or a file
that cannot be edited safely.
"""

from __future__ import annotations

import argparse
import difflib
import ipaddress
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from functions.jsonc_edit import JsoncDoc, JsoncError

CLIENTS = ("claude-code", "codex", "cursor", "vscode")
SCOPES = {
    "claude-code": ("user", "local", "project"),
    "codex": ("user", "project"),
    "cursor": ("user", "project"),
    "vscode": ("user", "project"),
}
TOKEN_ENV = "JENTRIX_TOKEN"
DEFAULT_NAME = "jentrix"
PROJECT_NOTES = {  # what each client asks before it uses a project file's servers (docs/connect.md)
    "claude-code": "Claude Code asks each person to approve the servers of a project's .mcp.json before starting them.",
    "codex": "Codex reads .codex/config.toml only in projects it trusts.",
}
DEFAULT_DYNAMODB_ENDPOINT = "http://127.0.0.1:8000"  # where `jentrix dev` runs DynamoDB Local (functions/cli.py)


class ConnectError(Exception):
    """A problem with the arguments or a file; printed as one line, exit code 2."""


# -- where each client keeps its servers ----------------------------------------------------------
@dataclass(frozen=True)
class Place:
    """One configuration file and where in it the servers live.

    ``container`` is the key path of the servers map (``("mcpServers",)``, ``("servers",)``,
    ``("mcp_servers",)`` or Claude Code's ``("projects", "<dir>", "mcpServers")``); ``shared`` is
    true for a file inside the project, which is usually committed."""

    client: str
    scope: str
    path: Path
    container: tuple[str, ...]
    shared: bool

    @property
    def toml(self) -> bool:
        return self.path.suffix == ".toml"


def codex_home(home: Path, env: dict[str, str]) -> Path:
    return Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"


def vscode_user_dir(home: Path, env: dict[str, str]) -> Path:
    """VS Code's user settings directory (the default profile's): Linux ``$XDG_CONFIG_HOME`` or
    ``~/.config``, macOS ``~/Library/Application Support``, Windows ``%APPDATA%``; then ``Code/User``."""
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    elif os.name == "nt":
        base = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "Code" / "User"


def place_for(client: str, scope: str, home: Path, project: Path, env: dict[str, str]) -> Place:
    if scope not in SCOPES[client]:
        raise ConnectError(f"{client} has no {scope!r} scope (it has: {', '.join(SCOPES[client])}).")
    if client == "claude-code":
        if scope == "project":
            return Place(client, scope, project / ".mcp.json", ("mcpServers",), True)
        container = ("mcpServers",) if scope == "user" else ("projects", str(project), "mcpServers")
        return Place(client, scope, home / ".claude.json", container, False)
    if client == "codex":
        path = project / ".codex" / "config.toml" if scope == "project" else codex_home(home, env) / "config.toml"
        return Place(client, scope, path, ("mcp_servers",), scope == "project")
    if client == "cursor":
        return Place(
            client,
            scope,
            (project if scope == "project" else home) / ".cursor" / "mcp.json",
            ("mcpServers",),
            scope == "project",
        )
    path = project / ".vscode" / "mcp.json" if scope == "project" else vscode_user_dir(home, env) / "mcp.json"
    return Place(client, scope, path, ("servers",), scope == "project")


def detected(client: str, home: Path, env: dict[str, str]) -> Path | None:
    """The directory (or file) showing the client has run on this machine, or None."""
    candidates = {
        "claude-code": [home / ".claude.json", home / ".claude"],
        "codex": [codex_home(home, env)],
        "cursor": [home / ".cursor"],
        "vscode": [vscode_user_dir(home, env)],
    }[client]
    return next((p for p in candidates if p.exists()), None)


# -- what the entry says ----------------------------------------------------------------------------
@dataclass
class Server:
    """What the clients should reach. ``remote``: the client speaks HTTP to ``url`` itself.
    Otherwise the client starts ``command`` with ``args`` (and ``env``): the stdio adapter.
    ``token_file``: the adapter reads the token from that file, so no client passes it.
    ``secret``: the literal token, only with ``--store-secret``."""

    remote: bool
    url: str | None = None
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    token_file: str | None = None
    secret: str | None = None
    ephemeral: bool = False  # `jentrix mcp --ephemeral` seeds its own token: none to pass


@dataclass
class Entry:
    value: dict[str, Any]
    input: dict[str, Any] | None = None  # VS Code: the promptString the entry refers to
    token_note: str = ""


def jentrix_argv() -> list[str]:
    """How a client should start this ``jentrix`` from any directory: the script beside the
    running Python (the venv's), else one on PATH, else ``python -m functions.cli``."""
    sibling = Path(sys.executable).with_name("jentrix")
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return [str(sibling)]
    found = shutil.which("jentrix")
    return [found] if found else [sys.executable, "-m", "functions.cli"]


def input_id(name: str) -> str:
    return f"{name}-token"


def entry_for(client: str, server: Server, name: str) -> Entry:
    """The entry for ``client``, in the shape its documentation gives (docs/connect.md)."""
    secret = server.secret
    if server.remote:
        bearer = {
            "claude-code": f"${{{TOKEN_ENV}}}",
            "cursor": f"${{env:{TOKEN_ENV}}}",
            "vscode": f"${{input:{input_id(name)}}}",
        }.get(client)
        if client == "codex":
            value: dict[str, Any] = {"url": server.url}
            if secret:
                value["http_headers"] = {"Authorization": f"Bearer {secret}"}
                return Entry(value, token_note="the token is written in the file (--store-secret)")
            value["bearer_token_env_var"] = TOKEN_ENV
            return Entry(value, token_note=f"Codex sends ${TOKEN_ENV} from its environment as the Bearer token")
        headers = {"Authorization": f"Bearer {secret or bearer}"}
        value = (
            {"url": server.url, "headers": headers}
            if client == "cursor"
            else {"type": "http", "url": server.url, "headers": headers}
        )
        if secret:
            return Entry(value, token_note="the token is written in the file (--store-secret)")
        if client == "vscode":
            return Entry(
                value, _vscode_input(name), "VS Code asks for the token once and keeps it in its own secret storage"
            )
        return Entry(
            value,
            token_note=f"{'Claude Code' if client == 'claude-code' else 'Cursor'} fills in ${TOKEN_ENV} from its environment",
        )
    env = dict(server.env)
    note = (
        "the ephemeral stack mints its own token"
        if server.ephemeral
        else "the adapter reads the token from --token-file"
    )
    inp = None
    extra: dict[str, Any] = {}
    if secret:
        env[TOKEN_ENV] = secret
        note = "the token is written in the file (--store-secret)"
    elif not server.token_file and not server.ephemeral:
        if client == "codex":
            extra["env_vars"] = [TOKEN_ENV]
            note = f"Codex forwards ${TOKEN_ENV} from its environment to the adapter (env_vars)"
        elif client == "cursor":
            env[TOKEN_ENV] = f"${{env:{TOKEN_ENV}}}"
            note = f"Cursor fills in ${TOKEN_ENV} from its environment"
        elif client == "vscode":
            env[TOKEN_ENV] = f"${{input:{input_id(name)}}}"
            inp = _vscode_input(name)
            note = "VS Code asks for the token once and keeps it in its own secret storage"
        else:
            note = f"the adapter inherits ${TOKEN_ENV} from Claude Code's environment"
    if client == "codex":
        value = {"command": server.command, "args": list(server.args)}
        if env:
            value["env"] = env
        value.update(extra)
    elif client == "cursor":
        value = {"command": server.command, "args": list(server.args), "env": env}
    else:
        value = {"type": "stdio", "command": server.command, "args": list(server.args), "env": env}
    return Entry(value, inp, note)


def _vscode_input(name: str) -> dict[str, Any]:
    return {
        "type": "promptString",
        "id": input_id(name),
        "description": "jentrix-mcp personal access token (tm_…)",
        "password": True,
    }


# -- editing one file ---------------------------------------------------------------------------------
def edit(place: Place, text: str, name: str, entry: Entry | None) -> str:
    """The file's new text with the entry set (``entry``) or removed (None); ``text`` when
    nothing changes. Raises ConnectError when the file cannot be read or edited safely."""
    try:
        return _edit_toml(place, text, name, entry) if place.toml else _edit_json(place, text, name, entry)
    except JsoncError as exc:
        raise ConnectError(f"{place.path}: {exc}; nothing was written.") from None


def _edit_json(place: Place, text: str, name: str, entry: Entry | None) -> str:
    doc = JsoncDoc(text)
    path = [*place.container, name]
    if entry is None:
        referenced = doc.get(path)
        doc.delete(path)
        if place.client == "vscode" and referenced is not None:
            _drop_unused_input(doc, name)
        return doc.text
    if doc.get(path) != entry.value:
        doc.set(path, entry.value)
    if entry.input is not None:
        inputs = doc.get(["inputs"], [])
        if not isinstance(inputs, list):
            raise ConnectError(f'{place.path}: "inputs" is not a list; nothing was written.')
        ids = [i.get("id") if isinstance(i, dict) else None for i in inputs]
        if entry.input["id"] in ids:
            at = ids.index(entry.input["id"])
            if inputs[at] != entry.input:
                doc.delete(["inputs", at])
                doc.append(["inputs"], entry.input)
        else:
            doc.append(["inputs"], entry.input)
    elif place.client == "vscode":
        _drop_unused_input(doc, name)
    return doc.text


def _drop_unused_input(doc: JsoncDoc, name: str) -> None:
    """Remove our promptString from ``inputs`` unless another server still refers to it."""
    ref = f"${{input:{input_id(name)}}}"
    if ref in json.dumps(doc.get(["servers"], {})):
        return
    inputs = doc.get(["inputs"], [])
    for i, item in enumerate(inputs if isinstance(inputs, list) else []):
        if isinstance(item, dict) and item.get("id") == input_id(name):
            doc.delete(["inputs", i])
            return


def _edit_toml(place: Place, text: str, name: str, entry: Entry | None) -> str:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConnectError(f"{place.path}: not valid TOML ({exc}); nothing was written.") from None
    key = place.container[0]
    servers = doc.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise ConnectError(f"{place.path}: {key} is not a table; nothing was written.")
    current = servers.get(name) if servers is not None else None
    if entry is None:
        if current is None:
            return text
        del servers[name]  # type: ignore[union-attr]
        if not servers:
            del doc[key]
        return tomlkit.dumps(doc)
    if current is not None and _plain(current) == entry.value:
        return text
    table = tomlkit.table()
    for k, v in entry.value.items():
        if isinstance(v, dict):
            inline = tomlkit.inline_table()
            inline.update(v)
            table[k] = inline
        else:
            table[k] = v
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc[key] = servers
    table.add(tomlkit.nl())  # a blank line before whatever table follows
    servers[name] = table
    out = tomlkit.dumps(doc)
    if out.endswith("\n\n") and not text.endswith("\n\n"):
        out = out.rstrip("\n") + "\n"
    return out


def _plain(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


# -- the command --------------------------------------------------------------------------------------
def _check_url(url: str, flag: str) -> str:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    loopback = host == "localhost"
    try:
        loopback = loopback or ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if (parts.scheme == "https" and host) or (parts.scheme == "http" and loopback):
        return url
    raise ConnectError(f"{flag} must be an https:// URL (plain http:// only for localhost), not {url!r}.")


def build_server(args: argparse.Namespace, env: dict[str, str]) -> Server:
    secret = None
    if args.store_secret:
        secret = env.get(TOKEN_ENV) or (Path(args.token_file).read_text().strip() if args.token_file else None)
        if not secret:
            raise ConnectError(
                f"--store-secret writes the token into the file: set {TOKEN_ENV} (or pass --token-file) so there is one to write."
            )
    if args.url:
        if args.bridge or args.ephemeral or args.endpoint or args.workspace or args.read_only or args.toolsets:
            raise ConnectError(
                "--url makes the client talk to the remote itself; the adapter flags (--bridge, --ephemeral, --endpoint, --workspace, --read-only, --toolsets) do not apply."
            )
        if args.token_file and not args.store_secret:
            raise ConnectError(
                "--token-file is read by the adapter; with --url the client sends the token itself (from JENTRIX_TOKEN, or the file's content with --store-secret)."
            )
        return Server(remote=True, url=_check_url(args.url, "--url"), secret=secret)
    argv = jentrix_argv()
    mcp_args = [*argv[1:], "mcp"]
    server_env: dict[str, str] = {}
    if sum(bool(x) for x in (args.bridge, args.ephemeral, args.endpoint)) > 1:
        raise ConnectError("pick one of --bridge, --ephemeral and --endpoint.")
    if args.bridge:
        mcp_args += ["--url", _check_url(args.bridge, "--bridge")]
    elif args.ephemeral:
        mcp_args.append("--ephemeral")
    else:
        server_env["JENTRIX_DYNAMODB_ENDPOINT"] = (
            args.endpoint or env.get("JENTRIX_DYNAMODB_ENDPOINT") or DEFAULT_DYNAMODB_ENDPOINT
        )
    token_file = None
    if args.token_file and not secret:
        token_file = str(Path(args.token_file).expanduser().resolve())
        if not Path(token_file).is_file():
            raise ConnectError(f"--token-file {args.token_file}: no such file.")
        mcp_args += ["--token-file", token_file]
    if args.workspace:
        mcp_args += ["--workspace", args.workspace]
    if args.toolsets:
        mcp_args += ["--toolsets", args.toolsets]
    if args.read_only:
        mcp_args.append("--read-only")
    return Server(
        remote=False,
        command=argv[0],
        args=mcp_args,
        env=server_env,
        token_file=token_file,
        secret=secret,
        ephemeral=args.ephemeral,
    )


def _mask(text: str, secret: str | None) -> str:
    return text.replace(secret, secret[:3] + "…(hidden)") if secret else text


def _write(path: Path, text: str, *, private: bool) -> None:
    """Replace the file atomically (a temporary file beside it, then rename), keeping its mode;
    a new file holding a secret is created readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else (0o600 if private else None)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _confirm(question: str) -> bool:
    print(f"{question} [y/N] ", end="", flush=True)
    answer = sys.stdin.readline()
    if not answer:
        print()
    return answer.strip().lower() in ("y", "yes")


def cmd_connect(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    home = Path.home()
    project = Path(args.project or os.getcwd()).expanduser().resolve()
    name = args.name
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ConnectError(f"--name {name!r}: use letters, digits, '-' and '_' only.")
    if args.client == "all":
        clients = [c for c in CLIENTS if detected(c, home, env)]
        if not clients:
            print(
                f"No MCP client detected under {home} (looked for ~/.claude.json or ~/.claude, ~/.codex, ~/.cursor and VS Code's "
                "user settings directory); name one to write its file anyway.",
                file=sys.stderr,
            )
            return 1
        print(f"Detected: {', '.join(clients)}")
    else:
        clients = [args.client]
    places = [place_for(client, args.scope or "user", home, project, env) for client in clients]
    server = None if args.remove else build_server(args, env)
    declined = False
    for place in places:
        before = place.path.read_text(encoding="utf-8") if place.path.exists() else ""
        entry = None if server is None else entry_for(place.client, server, name)
        after = edit(place, before, name, entry)
        where = f"{place.client} ({place.scope}): {place.path}"
        if after == before:
            print(
                f"{where}: {'no ' + repr(name) + ' entry; nothing to remove' if server is None else 'already up to date'}."
            )
            continue
        diff = difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=str(place.path) if before else "/dev/null",
            tofile=str(place.path),
        )
        print(f"{where}:")
        sys.stdout.write(
            _mask("".join(d if d.endswith("\n") else d + "\n" for d in diff), server.secret if server else None)
        )
        if entry is not None:
            print(f"  token: {entry.token_note}.")
            if server and server.secret:
                shared = (
                    "it lives in the project and is meant to be committed: anyone with the repository gets the token"
                    if place.shared
                    else "it is readable by your user account and by whatever runs as you"
                )
                print(f"  WARNING: {place.path} will hold the token in clear text; {shared}.")
            elif place.shared:
                print("  This file is meant to be shared: it names no secret, only where the token comes from.")
            if place.shared and place.client in PROJECT_NOTES:
                print(f"  {PROJECT_NOTES[place.client]}")
        if args.dry_run:
            continue
        if not args.yes and not _confirm(f"{'Remove the entry from' if server is None else 'Write'} {place.path}?"):
            print("  skipped.")
            declined = True
            continue
        _write(place.path, after, private=bool(server and server.secret))
        print(f"  {'removed' if server is None else 'written'}.")
    if server is not None and not args.dry_run:
        print(
            "The entry only tells the client how to reach the server; the token (or OAuth grant) it presents decides what it may do."
        )
    return 1 if declined else 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "connect",
        help="write (or --remove) this server's entry in MCP clients' configuration files (docs/connect.md)",
        description="Write or remove this server's entry in the configuration file of Claude Code, Codex, Cursor or VS Code. "
        "Shows a diff first and asks; never writes the token unless --store-secret. docs/connect.md lists what goes where.",
    )
    p.add_argument(
        "client", nargs="?", default="all", choices=[*CLIENTS, "all"], help="which client (default: all detected ones)"
    )
    p.add_argument("--remove", action="store_true", help="remove the entry instead of writing it")
    p.add_argument(
        "--scope",
        choices=["user", "project", "local"],
        help="user file (default), the project's file, or Claude Code's per-project entry in ~/.claude.json (local)",
    )
    p.add_argument(
        "--project", metavar="DIR", help="project directory for --scope project/local (default: the current directory)"
    )
    p.add_argument("--name", default=DEFAULT_NAME, help=f"the server's name in the client (default {DEFAULT_NAME})")
    where = p.add_argument_group("what the client reaches (default: `jentrix mcp` in-process against DynamoDB Local)")
    where.add_argument(
        "--url",
        help="the remote endpoint, e.g. https://…/api/mcp: the client speaks HTTP to it with the token as Bearer",
    )
    where.add_argument(
        "--bridge",
        metavar="URL",
        help="the client starts `jentrix mcp --url URL` (the stdio adapter bridging to the remote)",
    )
    where.add_argument(
        "--ephemeral", action="store_true", help="the client starts `jentrix mcp --ephemeral` (a throwaway local stack)"
    )
    where.add_argument(
        "--endpoint",
        help=f"DynamoDB endpoint for the in-process adapter (default $JENTRIX_DYNAMODB_ENDPOINT, else {DEFAULT_DYNAMODB_ENDPOINT})",
    )
    adapter = p.add_argument_group("adapter options (written into the entry's arguments)")
    adapter.add_argument("--workspace", metavar="WS_ID", help="bind the connection to this workspace (writes allowed)")
    adapter.add_argument(
        "--token-file",
        metavar="PATH",
        help="the adapter reads the token from this file (its path is written, not the token)",
    )
    adapter.add_argument("--read-only", action="store_true", help="serve only read-only tools")
    adapter.add_argument("--toolsets", help="comma list of toolsets to serve")
    p.add_argument(
        "--store-secret",
        action="store_true",
        help=f"write the token itself (from ${TOKEN_ENV} or --token-file) into the file; a warning says where",
    )
    go = p.add_mutually_exclusive_group()
    go.add_argument("--yes", "-y", action="store_true", help="write without asking")
    go.add_argument("--dry-run", action="store_true", help="show the diffs only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return cmd_connect(args)
    except ConnectError as exc:
        print(f"jentrix connect: {exc}", file=sys.stderr)
        return 2
