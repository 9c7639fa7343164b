"""``jentrix artifact upload`` and ``jentrix artifact withdraw``.

    jentrix artifact upload FILE (--task TK | --project PJ | --session SE --workspace WS) --token-file F
                            [--type LOG] [--title T] [--content-type T] [--json] [--url BASE]
    jentrix artifact withdraw ARTIFACT_ID --token-file F

``upload`` runs the whole object flow in-process against the stack's DynamoDB and S3: the upload
grant (``domain.uploads.issue_grant``, the operation ``POST /api/artifacts/upload-grant`` serves),
the HTTP PUT of the bytes to the presigned URL (a progress bar on a terminal; a failed PUT is
retried once), then ``attach_artifact`` through the tool pipeline with the same token. A text
kind (``--type FINDINGS`` …) also sends the file's text as the inline body.

``withdraw`` is for a human ADMIN (``jentrix token create --human``): the object is deleted, the
record becomes a tombstone (body gone, no URL), its search postings are dropped (the withdrawal's
transaction carries the index's "gone" marker), and the ``artifacts.on_withdraw`` hooks run.

With ``--url BASE`` (a running server, local or remote) the same three steps go over HTTP: the
grant from ``POST /api/artifacts/upload-grant``, the PUT, and ``attach_artifact`` as an MCP
``tools/call`` on ``/api/mcp`` with the same bearer token; nothing runs in-process.

Like DynamoDB (``--endpoint``, else ``$JENTRIX_DYNAMODB_ENDPOINT``, else the dev stack's), the S3
endpoint is ``--s3-endpoint``, else ``$JENTRIX_S3_ENDPOINT``, else the dev stack's local S3 at
``http://127.0.0.1:8788`` (:func:`functions.cli_common.connect_s3`); S3 in AWS only with ``--aws``. A
failed upload names the endpoint it tried and the flag that changes it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import mimetypes
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from functions.cli_common import CliError, add_s3_flag, add_target_flags, connect, connect_s3, s3_unreachable, sentence

CHUNK = 64 * 1024
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _secret(args: argparse.Namespace) -> str:
    secret = None
    if args.token_file:
        try:
            secret = Path(args.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CliError(f"cannot read {args.token_file}: {exc.strerror or exc}", code=2) from None
    secret = secret or os.environ.get("JENTRIX_TOKEN")
    if not secret:
        raise CliError("pass --token-file FILE (or set JENTRIX_TOKEN) with a token of a workspace member.", code=2)
    return secret


def _token(args: argparse.Namespace) -> Any:
    from domain import auth

    principal = auth.authenticate(_secret(args))
    if principal is None:
        raise CliError("the token is unknown, revoked or expired.")
    return principal


def _workspace(args: argparse.Namespace) -> str:
    from domain import ids

    if args.task:
        ref = ids.parse_task(args.task)
        if ref is None:
            raise CliError(f"{args.task} is not a task id (tk_…).", code=2)
        ws = ref.workspace_id
    elif args.project:
        pj = ids.parse_project(args.project)
        if pj is None:
            raise CliError(f"{args.project} is not a project id (pj_…).", code=2)
        ws = pj[0]
    else:
        parse = getattr(ids, "parse_session", None)
        ref = parse(args.session) if parse is not None else None
        ws = getattr(ref, "workspace_id", None) if ref is not None else None
        ws = ws or args.workspace
        if not ws:
            raise CliError("--session needs --workspace WS (the session's workspace).", code=2)
    if args.workspace and args.workspace != ws:
        raise CliError(f"--workspace {args.workspace} is not the workspace of the linked id ({ws}).", code=2)
    return ws


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.sent = total, label, 0
        self.on = sys.stderr.isatty()

    def add(self, n: int) -> None:
        self.sent += n
        if self.on:
            width = 30
            done = int(width * self.sent / max(1, self.total))
            pct = 100 * self.sent // max(1, self.total)
            print(
                f"\r{self.label} [{'#' * done}{' ' * (width - done)}] {pct:3d}% {self.sent}/{self.total} B",
                end="",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.on:
            print(file=sys.stderr, flush=True)


def _chunks(path: Path, progress: _Progress) -> Iterator[bytes]:
    with path.open("rb") as f:
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                return
            progress.add(len(chunk))
            yield chunk


def put_file(url: str, headers: dict[str, str], path: Path, size: int, *, attempts: int = 2) -> None:
    """PUT ``path`` to a presigned URL with exactly the signed headers; one retry on failure."""
    import httpx2

    last = ""
    for attempt in range(attempts):
        progress = _Progress(size, f"uploading {path.name}" + (" (retry)" if attempt else ""))
        try:
            response = httpx2.put(url, content=_chunks(path, progress), headers=headers, timeout=120)
            progress.close()
            if 200 <= response.status_code < 300:
                return
            last = f"HTTP {response.status_code}: {response.text[:200]}"
        except httpx2.HTTPError as exc:
            progress.close()
            last = str(exc) or type(exc).__name__
    raise s3_unreachable(f"the upload of {path.name} failed twice ({last}); nothing was attached")


def _declared(args: argparse.Namespace, path: Path) -> tuple[int, str, str, str]:
    """(size, SHA-256 hex, content type, artifact kind) of the file to upload."""
    data_size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    content_type = (args.content_type or mimetypes.guess_type(path.name)[0] or "application/octet-stream").lower()
    if content_type == "application/octet-stream" and path.suffix in (".log", ".txt", ".diff", ".patch", ".md"):
        content_type = {".md": "text/markdown", ".diff": "text/x-diff", ".patch": "text/x-patch"}.get(
            path.suffix, "text/plain"
        )
    kind = args.type or ("SCREENSHOT" if content_type in IMAGE_TYPES else "LOG" if _log_like(content_type) else None)
    if kind is None:
        raise CliError(
            f"{path.name} ({content_type}) has no default kind; pass --type (e.g. TRACE for a Playwright trace.zip, EVAL_REPORT, RUN_SUMMARY).",
            code=2,
        )
    return data_size, digest.hexdigest(), content_type, kind


def _log_like(content_type: str) -> bool:
    """Text a person reads as a log (the LOG default): text/*, JSON and NDJSON; not archives or PDFs."""
    return content_type.startswith("text/") or content_type in (
        "application/json",
        "application/x-ndjson",
        "application/ndjson",
    )


def _attach_arguments(args: argparse.Namespace, path: Path, ws: str, kind: str, grant_id: str) -> dict[str, Any]:
    from domain.store import artifacts as artifact_store

    arguments: dict[str, Any] = {
        "workspaceId": ws,
        "type": kind,
        "title": args.title or path.name,
        "storage": "S3_OBJECT",
        "uploadGrantId": grant_id,
    }
    for flag, name in (("task", "taskId"), ("project", "projectId"), ("session", "sessionId")):
        if getattr(args, flag):
            arguments[name] = getattr(args, flag)
    if kind in artifact_store.TEXT_KINDS:
        try:
            arguments["body"] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise CliError(f"a {kind} carries its text inline, and {path.name} is not UTF-8 text.", code=2) from None
    return arguments


def _refused(error: dict[str, Any]) -> CliError:
    return CliError(
        "attach_artifact refused the upload: " + sentence(str(error.get("message", error)), str(error.get("hint", "")))
    )


def _upload_over_http(base: str, secret: str, args: argparse.Namespace, path: Path, ws: str) -> dict[str, Any]:
    """The same flow against a running server (``--url``): the grant from ``POST
    /api/artifacts/upload-grant``, the PUT, then ``attach_artifact`` as an MCP ``tools/call``."""
    import httpx2

    size, digest, content_type, kind = _declared(args, path)
    headers = {"Authorization": f"Bearer {secret}"}
    base = base.rstrip("/")
    grant_body = {
        "workspaceId": ws,
        "fileName": path.name,
        "contentType": content_type,
        "size": size,
        "sha256": digest,
        "purpose": "artifact",
    }
    try:
        r = httpx2.post(f"{base}/api/artifacts/upload-grant", json=grant_body, headers=headers, timeout=60)
    except httpx2.HTTPError as exc:
        raise CliError(f"nothing answers at {base} ({exc})") from None
    if r.status_code == 401:
        raise CliError("the token is unknown, revoked or expired.")
    if r.status_code != 200:
        e = r.json().get("error", {})
        raise CliError(sentence(str(e.get("message", r.text)), str(e.get("hint", ""))))
    grant = r.json()
    put_file(grant["uploadUrl"], grant["headers"], path, size)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "attach_artifact",
            "arguments": _attach_arguments(args, path, ws, kind, grant["uploadGrantId"]),
        },
    }
    r = httpx2.post(
        f"{base}/api/mcp", json=call, headers={**headers, "Accept": "application/json, text/event-stream"}, timeout=60
    )
    reply = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
    if "error" in reply:
        raise CliError(f"the server refused attach_artifact: {reply['error'].get('message')}")
    result = reply.get("result") or {}
    if result.get("isError"):  # the envelope is the text content (an error has no structuredContent)
        try:
            raise _refused(json.loads(result["content"][0]["text"])["error"])
        except (KeyError, IndexError, TypeError, ValueError):
            raise _refused({"message": r.text[:500]}) from None
    content = result.get("structuredContent") or {}
    if "artifact" not in content:
        raise _refused({"message": r.text[:500]})
    return content["artifact"]


def cmd_artifact_upload(args: argparse.Namespace) -> int:
    from domain import pipeline, uploads
    from domain.catalog import registry
    from domain.errors import ToolError

    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"{path} is not a file.", code=2)
    ws = _workspace(args)
    if getattr(args, "url", None):
        artifact = _upload_over_http(args.url, _secret(args), args, path, ws)
    else:
        connect(args)
        connect_s3(args)
        principal = _token(args)
        data_size, digest, content_type, kind = _declared(args, path)
        try:
            grant = uploads.issue_grant(
                principal,
                workspace_id=ws,
                purpose="artifact",
                file_name=path.name,
                content_type=content_type,
                size=data_size,
                sha256=digest,
            )
        except ToolError as exc:
            raise CliError(sentence(exc.message, exc.hint)) from None
        put_file(grant["uploadUrl"], grant["headers"], path, data_size)
        spec = registry().get("attach_artifact")
        assert spec is not None
        outcome = pipeline.call_tool(spec, _attach_arguments(args, path, ws, kind, grant["uploadGrantId"]), principal)
        if outcome.error is not None:
            raise _refused(outcome.error["error"])
        artifact = outcome.result["artifact"]  # type: ignore[index]
    if args.json:
        print(json.dumps(artifact))
    else:
        print(
            f"Attached {artifact['type']} {artifact['id']} ({artifact['size']} bytes, {artifact['contentType']}): {artifact['title']}"
        )
    return 0


def cmd_artifact_withdraw(args: argparse.Namespace) -> int:
    from domain import access, clock, ids, objects
    from domain.store import artifacts as artifact_store
    from domain.store import db

    connect(args)
    connect_s3(args)
    principal = _token(args)
    if not principal.human:
        raise CliError("withdrawing an artifact needs a human's token (jentrix token create --human).")
    ref = ids.parse_artifact(args.artifact_id)
    if ref is None:
        raise CliError(f"{args.artifact_id} is not an artifact id (ar_…).", code=2)
    ws = ref.workspace_id
    if principal.workspace_pin and principal.workspace_pin != ws:
        raise CliError(f"the token is pinned to {principal.workspace_pin}, not {ws}.")
    standing = access.standing(ws, principal.user_id, "ADMIN")
    if standing.role is None:
        raise CliError(f"no artifact {args.artifact_id} is visible to this token.")
    if not standing.allowed:
        raise CliError(f"withdrawing needs the ADMIN role in {ws}; the token's user is {standing.role}.")
    head = artifact_store.get(ws, args.artifact_id)
    if head is None:
        raise CliError(f"no artifact {args.artifact_id} is visible to this token.")
    if head.withdrawnAt:
        raise CliError(f"{args.artifact_id} was already withdrawn at {head.withdrawnAt}.")

    def still_admin(tx: Any) -> None:
        access.role_guard(tx, ws, principal.user_id, "ADMIN")

    try:
        done = artifact_store.withdraw(head, actor_id=principal.user_id, at=clock.now_iso(), check=still_admin)
    except (db.Missing, db.ConditionFailed):
        raise CliError(
            f"{args.artifact_id} changed meanwhile (withdrawn by someone else, or your membership or role changed); nothing was changed."
        ) from None
    if head.objectKey:
        objects.delete(head.objectKey)
    print(
        f"Withdrew {done.artifactId} ({done.type} {done.title!r}): the record stays as a tombstone; body and object are gone."
    )
    return 0


def add_parsers(sub: Any) -> None:
    art = sub.add_parser("artifact", help="upload a file as an artifact, or withdraw one")
    asub = art.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = asub.add_parser("upload", help="upload grant -> PUT -> attach_artifact, for one file")
    up.add_argument("file", metavar="FILE")
    link = up.add_mutually_exclusive_group(required=True)
    link.add_argument("--task", metavar="TASK_ID", help="link it to this task")
    link.add_argument("--project", metavar="PROJECT_ID", help="link it to this project")
    link.add_argument("--session", metavar="SESSION_ID", help="link it to this agent session (with --workspace)")
    up.add_argument("--workspace", metavar="WS_ID", help="the workspace (needed with --session)")
    up.add_argument(
        "--type",
        help="artifact kind (default: SCREENSHOT for images, LOG for text and JSON; needed for anything else, e.g. a .zip); text kinds also send the text inline",
    )
    up.add_argument("--title", help="title (default: the file name)")
    up.add_argument("--content-type", help="media type (default: guessed from the file name)")
    up.add_argument("--json", action="store_true", help="print the stored artifact as JSON")
    up.add_argument(
        "--url",
        metavar="BASE",
        help="the server's base URL (e.g. http://127.0.0.1:8787): use its HTTP API instead of calling in-process",
    )
    wd = asub.add_parser("withdraw", help="turn an artifact into a tombstone: object and body deleted (human ADMIN)")
    wd.add_argument("artifact_id", metavar="ARTIFACT_ID")
    for p, func in ((up, cmd_artifact_upload), (wd, cmd_artifact_withdraw)):
        p.add_argument("--token-file", metavar="FILE", help="file holding your token (default: $JENTRIX_TOKEN)")
        add_s3_flag(p)
        add_target_flags(p)
        p.set_defaults(func=func)
