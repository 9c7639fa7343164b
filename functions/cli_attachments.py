"""``jentrix attachment upload FILE --task TASK_ID``: grant -> PUT -> attach, in one command.

    jentrix attachment upload FILE --task tk_… [--type MEDIA/TYPE] [--token-file F] [--url BASE] [--json]

The token is ``--token-file``'s, else ``$JENTRIX_TOKEN``. With ``--url`` (the server's base URL,
e.g. ``http://127.0.0.1:8787``) the command talks to the HTTP API: ``POST
/api/artifacts/upload-grant`` (purpose ``attachment``), the presigned PUT, ``POST
/api/tasks/{taskId}/attachments``. Without it, it calls the same domain operations in-process
(:func:`domain.uploads.issue_grant`, :func:`domain.attachments.attach`) against DynamoDB (the
usual ``--endpoint``/``--aws`` flags) and the S3 of ``--s3-endpoint``, else ``$JENTRIX_S3_ENDPOINT``,
else the dev stack's local S3 (S3 in AWS only with ``--aws``). The bytes always go straight to object storage. On a terminal the PUT shows a
progress bar; a failed PUT is retried once (the grant's URL is still valid).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import mimetypes
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from functions.cli_common import CliError, add_s3_flag, add_target_flags, connect, connect_s3, s3_unreachable

CHUNK = 64 * 1024
PUT_ATTEMPTS = 2  # the PUT and one retry
TYPE_FALLBACKS = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".diff": "text/x-diff",
    ".patch": "text/x-patch",
    ".ndjson": "application/x-ndjson",
    ".log": "text/plain",
}


class Progress:
    """A one-line progress bar on a terminal (nothing when ``stream`` is not a TTY)."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.total, self.label, self.width = max(total, 1), label, width
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = 0

    def advance(self, n: int) -> None:
        self.done = min(self.total, self.done + n)
        if self.enabled:
            self.stream.write("\r" + self.render())
            self.stream.flush()

    def render(self) -> str:
        filled = self.width * self.done // self.total
        pct = 100 * self.done // self.total
        return f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {pct:3d}% {_size(self.done)}/{_size(self.total)}"

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _chunks(path: Path, progress: Progress) -> Iterator[bytes]:
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            progress.advance(len(chunk))
            yield chunk


def put_file(
    url: str,
    headers: dict[str, str],
    path: Path,
    *,
    stream: TextIO | None = None,
    send: Callable[..., Any] | None = None,
) -> None:
    """PUT ``path`` to the presigned ``url`` with exactly the grant's ``headers``; one retry.

    Raises:
        CliError: both attempts failed (the last status or error in the message).
    """
    import httpx2

    send = send or httpx2.put
    last = ""
    for attempt in range(1, PUT_ATTEMPTS + 1):
        progress = Progress(path.stat().st_size, f"uploading {path.name}", stream)
        try:
            response = send(url, content=_chunks(path, progress), headers=headers, timeout=300)
            progress.finish()
            if 200 <= response.status_code < 300:
                return
            last = f"HTTP {response.status_code}: {response.text[:200]}"
        except httpx2.HTTPError as exc:
            progress.finish()
            last = f"{type(exc).__name__}: {exc}"
        if attempt < PUT_ATTEMPTS:
            print(f"jentrix: the upload failed ({last}); retrying once", file=sys.stderr)
            time.sleep(0.5)
    raise s3_unreachable(
        f"the upload of {path.name} failed twice ({last}); the grant expires unused, run the command again"
    )


def _declared(path: Path, media_type: str | None) -> tuple[str, int, str]:
    if not path.is_file():
        raise CliError(f"{path} is not a file", code=2)
    kind = (
        media_type
        or mimetypes.guess_type(path.name)[0]
        or TYPE_FALLBACKS.get(path.suffix.lower())
        or "application/octet-stream"
    )
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return kind, path.stat().st_size, h.hexdigest()


def _token(args: argparse.Namespace) -> str:
    if args.token_file:
        try:
            return Path(args.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CliError(f"cannot read {args.token_file}: {exc.strerror or exc}", code=2) from None
    token = os.environ.get("JENTRIX_TOKEN", "").strip()
    if not token:
        raise CliError("no token: pass --token-file FILE or set JENTRIX_TOKEN", code=2)
    return token


def _failure(envelope: dict[str, Any]) -> CliError:
    e = envelope.get("error", {}) if isinstance(envelope, dict) else {}
    message = f"{e.get('code', 'ERROR')}: {e.get('message', envelope)}"
    return CliError(message + (f" ({e['hint']})" if e.get("hint") else ""))


# -- the two ways to reach the server -----------------------------------------------------------
def _over_http(
    base: str, token: str, grant_body: dict[str, Any], task_id: str, path: Path, stream: TextIO | None
) -> dict[str, Any]:
    import httpx2

    headers = {"Authorization": f"Bearer {token}"}
    base = base.rstrip("/")
    try:
        r = httpx2.post(f"{base}/api/artifacts/upload-grant", json=grant_body, headers=headers, timeout=60)
    except httpx2.HTTPError as exc:
        raise CliError(f"nothing answers at {base} ({exc})") from None
    if r.status_code == 401:
        raise CliError("the token was not accepted (unknown, revoked or expired)")
    if r.status_code != 200:
        raise _failure(r.json())
    grant = r.json()
    put_file(grant["uploadUrl"], grant["headers"], path, stream=stream)
    r = httpx2.post(
        f"{base}/api/tasks/{task_id}/attachments",
        json={"uploadGrantId": grant["uploadGrantId"]},
        headers=headers,
        timeout=60,
    )
    if r.status_code != 200:
        raise _failure(r.json())
    return r.json()["attachment"]


def _in_process(
    args: argparse.Namespace, token: str, grant_body: dict[str, Any], task_id: str, path: Path, stream: TextIO | None
) -> dict[str, Any]:
    from domain import attachments, auth, uploads
    from domain.errors import ToolError

    connect(args)
    connect_s3(args)
    principal = auth.authenticate(token)
    if principal is None:
        raise CliError("the token was not accepted (unknown, revoked or expired)")
    try:
        grant = uploads.issue_grant(
            principal,
            workspace_id=grant_body["workspaceId"],
            purpose="attachment",
            file_name=grant_body["fileName"],
            content_type=grant_body["contentType"],
            size=grant_body["size"],
            sha256=grant_body["sha256"],
        )
    except ToolError as exc:
        raise _failure(exc.envelope()) from None
    put_file(grant["uploadUrl"], grant["headers"], path, stream=stream)
    outcome = attachments.attach(principal, task_id=task_id, upload_grant_id=grant["uploadGrantId"])
    if outcome.error is not None:
        raise _failure(outcome.error)
    return outcome.result["attachment"]  # type: ignore[index]


def cmd_attachment_upload(args: argparse.Namespace, *, stream: TextIO | None = None) -> int:
    from domain import ids

    path = Path(args.file)
    task = ids.parse_task(args.task)
    if task is None:
        raise CliError(f"{args.task!r} is not a task id (tk_…)", code=2)
    token = _token(args)
    kind, size, digest = _declared(path, args.type)
    body = {
        "workspaceId": task.workspace_id,
        "fileName": path.name,
        "contentType": kind,
        "size": size,
        "sha256": digest,
        "purpose": "attachment",
    }
    if args.url:
        attachment = _over_http(args.url, token, body, args.task, path, stream)
    else:
        attachment = _in_process(args, token, body, args.task, path, stream)
    if args.json:
        print(json.dumps(attachment, indent=2))
    else:
        print(
            f"Attached {attachment['fileName']} ({attachment['size']} bytes, {attachment['contentType']}) to {attachment['taskId']} as {attachment['id']}."
        )
    return 0


def add_parsers(sub: Any) -> None:
    attachment = sub.add_parser("attachment", help="upload a file and attach it to a task")
    asub = attachment.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = asub.add_parser(
        "upload", help="grant -> PUT -> attach (progress bar on a terminal; one retry of a failed PUT)"
    )
    up.add_argument("file", metavar="FILE")
    up.add_argument("--task", required=True, metavar="TASK_ID", help="the task to attach it to (tk_…)")
    up.add_argument("--type", metavar="MEDIA/TYPE", help="content type (default: guessed from the file name)")
    up.add_argument("--token-file", metavar="FILE", help="file holding the token (default: $JENTRIX_TOKEN)")
    up.add_argument(
        "--url",
        metavar="BASE",
        help="the server's base URL (e.g. http://127.0.0.1:8787): use its HTTP API instead of calling in-process",
    )
    up.add_argument("--json", action="store_true", help="print the attachment as JSON")
    add_target_flags(up)
    add_s3_flag(up)
    up.set_defaults(func=cmd_attachment_upload)
