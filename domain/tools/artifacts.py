"""Artifact tools: attach_artifact, get_artifact, list_artifacts (seed 002: "artifacts").

An artifact is a typed record of work (a PR, a diff, a log, a plan, findings, a trace part …)
linked to a task, project, session, run, decision or work order of one workspace. Its content is
one of: an inline text body (text kinds always carry one, bounded; redacted before storage),
an external http(s) URL, or an object uploaded through an upload grant (domain/uploads.py;
``R2_OBJECT`` is accepted as the catalog's older name of ``S3_OBJECT``). A withdrawn artifact
(``jentrix artifact withdraw``) stays as a tombstone: its record without body, URL or object.
Storage: domain/store/artifacts.py; docs/artifacts.md; docs/data-model.md "Uploads and artifacts".
"""

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from domain import clock, errors, ids, objects, uploads
from domain.access import Prefetch, Ref, target
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import artifacts as artifact_store
from domain.store import db
from domain.store.paging import decode_cursor, encode_cursor, list_kind
from domain.text import has_visible
from domain.tools.args import CursorArg, IdShape, LimitArg, SingleLine, WorkspaceIdArg

# Every kind: the file-like and run kinds, then the written ones (domain.store.artifacts; DIFF is both).
ArtifactType = Literal["EVAL_REPORT", "LOG", "PR", "RUN_SUMMARY", "SCREENSHOT", "TRACE", artifact_store.TextKind]
Storage = Literal["INLINE", "EXTERNAL_URL", "S3_OBJECT", "R2_OBJECT"]
BODY_MAX = 100_000
ArtifactIdArg = Annotated[str, Field(min_length=1, max_length=80, description="ar_…")]
_OPAQUE = r"^[A-Za-z0-9_.:\-]+$"
RunIdArg = Annotated[
    str | None, Field(default=None, min_length=1, max_length=120, pattern=_OPAQUE, description="Your run id.")
]
DecisionIdArg = Annotated[
    str | None, Field(default=None, min_length=1, max_length=120, pattern=_OPAQUE, description="Your decision id.")
]
WorkOrderIdArg = Annotated[
    str | None, Field(default=None, min_length=1, max_length=120, pattern=_OPAQUE, description="Your work order id.")
]
URI_PREFIX = "stacks://artifact/"


class ArtifactView(ToolOutput):
    id: str
    workspaceId: str
    type: str
    title: str
    storage: str = Field(description="INLINE, EXTERNAL_URL or S3_OBJECT.")
    url: str | None = Field(description="EXTERNAL_URL only; null once withdrawn.")
    hasObject: bool = Field(description="Whether stored bytes can be downloaded (get_artifact gives the URL).")
    hasBody: bool
    fileName: str | None
    contentType: str | None
    size: int | None = Field(description="Bytes of the stored object.")
    sha256: str | None
    bodyChars: int | None = Field(description="Length of the stored (redacted) body.")
    redactions: list[str] = Field(description="Rule ids of the secrets replaced before storage.")
    searchable: bool = Field(description="Whether search_artifacts indexes its body.")
    taskId: str | None
    projectId: str | None
    sessionId: str | None
    runId: str | None
    decisionId: str | None
    workOrderId: str | None
    tracePart: str | None
    createdBy: str
    createdByName: str
    createdAt: str
    withdrawn: bool = Field(description="A tombstone: the record stays, body, URL and object are gone.")
    withdrawnAt: str | None


def artifact_view(r: Any) -> ArtifactView:
    gone = bool(r.withdrawnAt)
    return ArtifactView(
        id=r.artifactId,
        workspaceId=r.workspaceId,
        type=r.type,
        title=r.title,
        storage=r.storage,
        url=None if gone else r.url,
        hasObject=bool(r.objectKey) and not gone,
        hasBody=bool(r.bodyChars is not None) and not gone,
        fileName=r.fileName,
        contentType=r.contentType,
        size=int(r.size) if r.size is not None else None,
        sha256=r.sha256,
        bodyChars=int(r.bodyChars) if r.bodyChars is not None and not gone else None,
        redactions=list(r.redactions or []),
        searchable=artifact_store.searchable(r),
        taskId=r.taskId,
        projectId=r.projectId,
        sessionId=r.sessionId,
        runId=r.runId,
        decisionId=r.decisionId,
        workOrderId=r.workOrderId,
        tracePart=r.tracePart,
        createdBy=r.createdBy,
        createdByName=r.createdByName,
        createdAt=r.createdAt,
        withdrawn=gone,
        withdrawnAt=r.withdrawnAt,
    )


def _redact(text: str) -> tuple[str, tuple[str, ...]]:
    """``(redacted text, rule ids)`` through domain.redaction (the one ingest filter)."""
    from domain.redaction import redact

    out = redact(text)
    return out.text, tuple(out.rule_ids)


# -- attach_artifact -------------------------------------------------------------------------------
class AttachArtifactInput(ToolInput):
    workspaceId: WorkspaceIdArg
    type: ArtifactType = Field(
        description="Kind; the written kinds (plans, findings, reports, diffs…) carry their text in body."
    )
    title: Annotated[str, SingleLine] = Field(min_length=1, max_length=200, description="Short title.")
    storage: Storage | None = Field(default=None, description="Default: from body, url or uploadGrantId.")
    body: str | None = Field(
        default=None, min_length=1, max_length=BODY_MAX, description="Inline text; secrets get redacted."
    )
    url: str | None = Field(default=None, min_length=1, max_length=2048, description="http(s) URL.")
    uploadGrantId: Annotated[str | None, IdShape("upload_grant")] = Field(
        default=None, min_length=1, max_length=80, description="Grant of the uploaded file."
    )
    taskId: str | None = Field(default=None, min_length=1, max_length=80, description="tk_…")
    projectId: str | None = Field(default=None, min_length=1, max_length=64, description="pj_…")
    sessionId: str | None = Field(default=None, min_length=1, max_length=120, description="ses_…")
    runId: RunIdArg
    decisionId: DecisionIdArg
    workOrderId: WorkOrderIdArg
    tracePart: str | None = Field(
        default=None, min_length=1, max_length=120, description="TRACE: its manifest part name."
    )


class ArtifactOutput(ToolOutput):
    artifact: ArtifactView


def _storage(args: AttachArtifactInput) -> str:
    storage = "S3_OBJECT" if args.storage == "R2_OBJECT" else args.storage
    if storage is None:
        storage = "S3_OBJECT" if args.uploadGrantId else "EXTERNAL_URL" if args.url else "INLINE"
    if storage != "EXTERNAL_URL" and args.url is not None:
        raise errors.invalid("url", f"goes with storage EXTERNAL_URL, not {storage}")
    if storage != "S3_OBJECT" and args.uploadGrantId is not None:
        raise errors.invalid("uploadGrantId", f"goes with storage S3_OBJECT, not {storage}")
    if storage == "EXTERNAL_URL":
        if args.url is None:
            raise errors.invalid("url", "is required with storage EXTERNAL_URL")
        if not re.fullmatch(r"https?://[^\s/?#@]+[^\s]*", args.url, flags=re.IGNORECASE):
            raise errors.invalid(
                "url", "must be an http:// or https:// URL", "Other schemes (file:, javascript:, data:) are refused."
            )
    if storage == "S3_OBJECT" and args.uploadGrantId is None:
        raise errors.invalid(
            "uploadGrantId",
            "is required with storage S3_OBJECT",
            f"Ask for a grant with POST {uploads.GRANT_PATH}, PUT the file, then pass its uploadGrantId (jentrix artifact upload does all three).",
        )
    if storage == "INLINE" and args.body is None:
        raise errors.invalid("body", "is required with storage INLINE (or send url / uploadGrantId)")
    if args.type in artifact_store.TEXT_KINDS and args.body is None:
        raise errors.invalid(
            "body", f"is required for a {args.type}: text kinds carry their text inline so it can be searched"
        )
    if args.body is not None and not has_visible(args.body):
        raise errors.invalid("body", "must contain visible characters")
    if args.tracePart is not None and args.type != "TRACE":
        raise errors.invalid("tracePart", "goes with type TRACE only")
    return storage


def _links(ctx: CallContext, args: AttachArtifactInput) -> dict[str, str]:
    links = {attr: getattr(args, attr) for _, attr in artifact_store.LINKS if getattr(args, attr) is not None}
    if not links:
        raise errors.invalid(
            "taskId", "an artifact needs a link: pass taskId, projectId, sessionId, runId, decisionId or workOrderId"
        )
    # the linked task, project and session heads rode in the membership read (reads=)
    if args.taskId is not None and ctx.read.linked_task is None:
        raise errors.not_found("task", args.taskId)
    if args.projectId is not None and ctx.read.linked_project is None:
        raise errors.not_found("project", args.projectId)
    if args.sessionId is not None and ctx.read.linked_session is None:
        raise errors.not_found("session", args.sessionId)
    return links


def _stored(ctx: CallContext, artifact_id: str) -> ArtifactOutput:
    head = artifact_store.get(ctx.target.workspace_id, artifact_id)
    if head is None:
        raise errors.not_found("artifact", artifact_id)
    return ArtifactOutput(artifact=artifact_view(head))


@tool(
    "attach_artifact",
    title="Attach artifact",
    description=(
        "Stores a typed artifact linked to a task, project, session, run, decision or work order. Text kinds send body "
        "(redacted first); EXTERNAL_URL sends url; S3_OBJECT (alias R2_OBJECT) sends the uploadGrantId of a finished "
        "upload (jentrix artifact upload does it all)."
    ),
    area="artifacts",
    scope="write",
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    refs=(Ref("taskId", "task"), Ref("projectId", "project"), Ref("sessionId", "session")),
    reads=("linked_task", "linked_project", "linked_session"),
    input_model=AttachArtifactInput,
    output_model=ArtifactOutput,
)
def attach_artifact(ctx: CallContext, args: AttachArtifactInput) -> ArtifactOutput:
    ws = ctx.target.workspace_id
    storage = _storage(args)
    links = _links(ctx, args)
    digest = uploads.call_hash(ctx.user_id, "attach_artifact", {**args.model_dump(mode="json"), "workspaceId": ws})
    grant = None
    if storage == "S3_OBJECT" and args.uploadGrantId is not None:  # _storage refused one without
        grant = uploads.check_upload(
            args.uploadGrantId, user_id=ctx.user_id, purpose="artifact", call_hash=digest, workspace_id=ws
        )
        if grant.replay and grant.entity_id:
            return _stored(ctx, grant.entity_id)
    body: str | None = None
    rules: tuple[str, ...] = ()
    if args.body is not None:
        body, rules = _redact(args.body)
    title, title_rules = _redact(args.title)
    url: str | None = None
    url_rules: tuple[str, ...] = ()
    if args.url is not None:
        from domain.redaction import redact_url

        cleaned = redact_url(args.url)  # user:password@ removed, a token in the query redacted
        url, url_rules = cleaned.text, cleaned.rule_ids
    artifact_id = ids.new_artifact_id(ws)
    now = clock.now_iso()
    record = artifact_store.ArtifactRecord(
        artifact_id=artifact_id,
        workspace_id=ws,
        type=args.type,
        title=title,
        storage=storage,
        created_by=ctx.user_id,
        created_by_name=ctx.member(ws).displayName,
        created_at=now,
        url=url,
        body=body,
        redactions=tuple(sorted(set(rules) | set(title_rules) | set(url_rules))),
        links=links,
        trace_part=args.tracePart,
    )
    final = None
    if grant is not None:
        final = objects.final_key(ws, "artifact", artifact_id)
        record.object_key, record.file_name, record.content_type = final, grant.file_name, grant.content_type
        record.size, record.sha256, record.grant_id = grant.size, grant.sha256, grant.grant_id
        earlier = uploads.finalize(grant, final, call_hash=digest)
        if earlier:
            return _stored(ctx, earlier)
    activity = None
    detail = ctx.read.linked_task
    if args.taskId is not None and detail is not None:  # _links refused a task that is not there
        activity = ctx.activity(
            ws,
            detail.boardId,
            "artifact.attached",
            f"Attached {args.type} to {detail.key}",
            task_id=args.taskId,
            data={"artifactId": artifact_id, "type": args.type},
            at=now,
        )
    extra = (
        (lambda tx: uploads.claim(tx, grant, call_hash=digest, entity_id=artifact_id)) if grant is not None else None
    )
    try:
        head = artifact_store.create(record, actor_id=ctx.user_id, extra=extra, activity=activity)
    except db.ConditionFailed as failure:
        if final is not None:
            uploads.discard(final)
        earlier = uploads.claim_failed(failure, grant, call_hash=digest) if grant is not None else None
        if earlier:
            return _stored(ctx, earlier)
        raise db.Missing(ws) from None
    except Exception:
        if final is not None:
            uploads.discard(final)
        raise
    if grant is not None:
        uploads.release_pending(grant)
    return ArtifactOutput(artifact=artifact_view(head))


# -- get_artifact -----------------------------------------------------------------------------------
class GetArtifactInput(ToolInput):
    artifactId: ArtifactIdArg


class GetArtifactOutput(ToolOutput):
    artifact: ArtifactView
    body: str | None = Field(description="The stored (redacted) text; null without one or once withdrawn.")
    downloadUrl: str | None = Field(
        description="A presigned GET for the object (about 5 minutes), or the external URL; null for a tombstone."
    )
    downloadUrlExpiresAt: str | None


def read_artifact(ctx: CallContext) -> GetArtifactOutput:
    """The get_artifact answer for the located artifact (shared with the resource read)."""
    head = ctx.read.artifact
    if head is None:
        raise errors.not_found("artifact", ctx.target.ident)
    view = artifact_view(head)
    if view.withdrawn:
        return GetArtifactOutput(artifact=view, body=None, downloadUrl=None, downloadUrlExpiresAt=None)
    stored = ctx.read.artifact_body
    body = stored.body if stored is not None else None
    url, expires = None, None
    if head.objectKey:
        from domain.settings import settings

        url = objects.presign_get(head.objectKey, file_name=head.fileName)
        expires = clock.iso(clock.now_ms() + settings.download_url_seconds * 1000)
    elif head.url:
        url = head.url
    return GetArtifactOutput(artifact=view, body=body, downloadUrl=url, downloadUrlExpiresAt=expires)


@tool(
    "get_artifact",
    title="Get artifact",
    description=(
        "One artifact's record, redacted body and a download URL (presigned ~5 min, or the external URL); withdrawn "
        "ones are tombstones. Same as resource stacks://artifact/{id}."
    ),
    area="artifacts",
    scope="read",
    read_only=True,
    target=target("artifactId", "artifact"),
    min_role="MEMBER",
    reads=("artifact", "artifact_body"),
    input_model=GetArtifactInput,
    output_model=GetArtifactOutput,
)
def get_artifact(ctx: CallContext, args: GetArtifactInput) -> GetArtifactOutput:
    return read_artifact(ctx)


# -- list_artifacts ---------------------------------------------------------------------------------
class ListArtifactsInput(ToolInput):
    workspaceId: WorkspaceIdArg
    projectId: str | None = Field(default=None, min_length=1, max_length=64, description="pj_…")
    taskId: str | None = Field(default=None, min_length=1, max_length=80, description="tk_…")
    sessionId: str | None = Field(default=None, min_length=1, max_length=120, description="ses_…")
    runId: RunIdArg
    workOrderId: WorkOrderIdArg
    type: ArtifactType | None = Field(default=None, description="Kind.")
    createdBy: str | None = Field(default=None, min_length=1, max_length=64, description="Attaching userId.")
    limit: LimitArg
    cursor: CursorArg


class ListArtifactsOutput(ToolOutput):
    artifacts: list[ArtifactView] = Field(description="Newest first; withdrawn ones stay as tombstones.")
    totalCount: int = Field(description="Artifacts matching the filters, over all pages.")
    nextCursor: str | None
    notice: str | None


_LIST_LINKS = (
    ("task", "taskId"),
    ("session", "sessionId"),
    ("run", "runId"),
    ("workOrder", "workOrderId"),
    ("project", "projectId"),
)


def _list_source(where: Any, args: Any) -> tuple[str, str] | None:
    """The link partition a list reads (the most selective filter given), or None (every head)."""
    for link, attr in _LIST_LINKS:
        value = getattr(args, attr)
        if value is not None:
            return link, value
    return None


def _list_prefetch(where: Any, args: Any) -> Prefetch:
    source = _list_source(where, args)
    return Prefetch(queries=(("artifacts", lambda: artifact_store.query(where.workspace_id, source)),))


@tool(
    "list_artifacts",
    title="List artifacts",
    description=(
        "A workspace's artifact records, newest first, filtered by link, type or creator; no bodies (get_artifact reads "
        "one). Withdrawn ones stay as tombstones."
    ),
    area="artifacts",
    scope="read",
    read_only=True,
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    refs=(Ref("taskId", "task"), Ref("projectId", "project"), Ref("sessionId", "session")),
    prefetch=_list_prefetch,
    input_model=ListArtifactsInput,
    output_model=ListArtifactsOutput,
)
def list_artifacts(ctx: CallContext, args: ListArtifactsInput) -> ListArtifactsOutput:
    filters = {
        attr: getattr(args, attr)
        for attr in ("projectId", "taskId", "sessionId", "runId", "workOrderId", "type", "createdBy")
    }
    kind = list_kind("artifacts", workspace=ctx.target.workspace_id, **filters)
    after = None
    if args.cursor is not None:
        last = decode_cursor(kind, args.cursor)
        after = last.get("a") if isinstance(last, dict) else None
        if not isinstance(after, str):
            raise errors.invalid(
                "cursor",
                "is not a cursor of this list",
                "Send nextCursor from the previous page with the same filters, or omit it.",
            )
    rows = [
        r
        for r in ctx.query("artifacts")
        if all(filters[attr] is None or getattr(r, attr) == filters[attr] for attr in filters)
    ]
    rest = [r for r in rows if after is None or r.artifactId < after]
    page = rest[: args.limit]
    cursor = encode_cursor(kind, {"a": page[-1].artifactId}) if len(rest) > args.limit else None
    notice = f"Showing {len(page)} of {len(rows)} artifacts; pass nextCursor for the next page." if cursor else None
    return ListArtifactsOutput(
        artifacts=[artifact_view(r) for r in page], totalCount=len(rows), nextCursor=cursor, notice=notice
    )


TOOLS = (attach_artifact, get_artifact, list_artifacts)
