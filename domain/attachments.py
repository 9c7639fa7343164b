"""Task attachments: a file uploaded with an upload grant, recorded on a task (docs/artifacts.md).

One domain operation, :func:`attach`, serves ``POST /api/tasks/{taskId}/attachments``
(functions/http_app.py) and ``jentrix attachment upload`` (functions/cli_attachments.py). It runs
through the call pipeline like a tool (scope ``write``, the rate window, input validation, the
access step: the task's workspace membership with at least MEMBER, its board open, the task's
full item read with the membership), but it is not in the MCP catalog: ``list_attachments``
(domain/tools/attachments.py) is the tool side.

The steps: the task must be live (archived -> INVALID_INPUT); :func:`domain.uploads.check_upload`
checks the grant and the uploaded object (the caller's, purpose ``attachment``, unexpired,
unused, HeadObject equal to the grant); :func:`domain.uploads.finalize` copies the object to
``objects/<ws>/attachment/<id>``; then ONE transaction records the attachment (name, size, type,
uploader, time), counts it, checks the task and board, guards the membership, writes the
``attachment.added`` activity row and claims the grant (single use). The same caller retrying the
same call with the same grant after a lost answer gets the stored attachment back; any other use
of a used grant is CONFLICT. A failure stores nothing (a copied object whose record did not
commit is deleted; the pending object stays for the lifecycle rule).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from ulid import ULID

from domain import clock, errors, ids, objects, pipeline, uploads
from domain.access import Prefetch, target
from domain.auth import Principal
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.settings import settings
from domain.store import attachments as attachment_store
from domain.store import boards as board_store
from domain.store import db, keys
from domain.store.models import AttachmentRow, TaskDetailRow

OPERATION = "attach_task_file"  # the pipeline's name for the operation (logs, call digest); not an MCP tool
ROUTE = "/api/tasks/{taskId}/attachments"

UploadGrantIdArg = Annotated[
    str, Field(min_length=1, max_length=80, description="Upload grant id (ug_…) whose object was PUT.")
]


class AttachmentView(ToolOutput):
    id: str = Field(description="Attachment id (at_…).")
    taskId: str
    fileName: str
    contentType: str
    size: int = Field(description="Bytes.")
    sha256: str = Field(description="SHA-256 of the bytes, 64 hex digits.")
    uploadedBy: str = Field(description="User id of the uploader.")
    uploadedByName: str = Field(description="The uploader's display name at upload time.")
    uploadedAt: str
    downloadUrl: str = Field(description="Presigned GET, valid until downloadUrlExpiresAt.")
    downloadUrlExpiresAt: str


def attachment_view(row: AttachmentRow, *, now_ms: int | None = None) -> AttachmentView:
    """The stored attachment with a fresh presigned download URL (computed locally: no request)."""
    now = clock.now_ms() if now_ms is None else now_ms
    return AttachmentView(
        id=row.attachmentId,
        taskId=row.taskId,
        fileName=row.fileName,
        contentType=row.contentType,
        size=int(row.size),
        sha256=row.sha256,
        uploadedBy=row.uploadedBy,
        uploadedByName=row.uploadedByName,
        uploadedAt=row.uploadedAt,
        downloadUrl=objects.presign_get(row.objectKey, file_name=row.fileName),
        downloadUrlExpiresAt=clock.iso(now + settings.download_url_seconds * 1000),
    )


class AttachInput(ToolInput):
    taskId: Annotated[str, Field(min_length=1, max_length=80, description="Task id (tk_…).")]
    uploadGrantId: UploadGrantIdArg


class AttachOutput(ToolOutput):
    attachment: AttachmentView


def _closed() -> errors.ToolError:
    return errors.invalid(
        "taskId", "the task is archived: it takes no new attachments", "Attach the file to a live task."
    )


@tool(
    OPERATION,
    title="Attach a file to a task",
    description="Records an uploaded file (an upload grant with purpose attachment) on a task. Served by POST /api/tasks/{taskId}/attachments and the CLI, not by MCP.",
    area="artifacts",
    scope="write",
    target=target("taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    prefetch=lambda where, args: Prefetch(items=(keys.task_full(where.board_id, where.task.number),)),
    input_model=AttachInput,
    output_model=AttachOutput,
)
def _attach(ctx: CallContext, args: AttachInput) -> AttachOutput:
    where = ctx.target
    task = ctx.item(keys.task_full(where.board(), where.task_ref().number))
    if not isinstance(task, TaskDetailRow):
        raise errors.not_found("task", args.taskId)
    if task.archivedAt:
        raise _closed()
    digest = uploads.call_hash(ctx.user_id, OPERATION, {"taskId": task.taskId, "uploadGrantId": args.uploadGrantId})
    grant = uploads.check_upload(
        args.uploadGrantId, user_id=ctx.user_id, purpose="attachment", call_hash=digest, workspace_id=where.workspace_id
    )
    if grant.replay:
        return _stored(grant.entity_id)
    now = clock.now_iso()
    ulid = str(ULID()).lower()
    attachment_id = ids.new_attachment_id(where.task_ref(), ulid)
    final = objects.final_key(where.workspace_id, "attachment", attachment_id)
    row = AttachmentRow(
        *keys.attachment(task.taskId, ulid),
        attachmentId=attachment_id,
        taskId=task.taskId,
        workspaceId=where.workspace_id,
        fileName=grant.file_name,
        contentType=grant.content_type,
        size=grant.size,
        sha256=grant.sha256,
        objectKey=final,
        grantId=grant.grant_id,
        uploadedBy=ctx.user_id,
        uploadedByName=ctx.member(where.workspace_id).displayName,
        uploadedAt=now,
    )
    act = ctx.activity(
        where.workspace_id,
        where.board(),
        "attachment.added",
        f"Attached {grant.file_name} to {task.key}",
        task_id=task.taskId,
        data={"attachmentId": attachment_id, "fileName": grant.file_name, "size": grant.size},
        at=now,
    )
    try:
        uploads.finalize(grant, final)
    except Exception:
        # The pending object is gone: a racing call consumed the grant and released it. Read the
        # grant again: this same call answers what it stored; another call's use is CONFLICT.
        again = uploads.check_upload(
            args.uploadGrantId,
            user_id=ctx.user_id,
            purpose="attachment",
            call_hash=digest,
            workspace_id=where.workspace_id,
        )
        if again.replay:
            return _stored(again.entity_id)
        raise
    try:
        attachment_store.create(
            row,
            where.task_ref(),
            actor_id=ctx.user_id,
            activity=act,
            extra=lambda tx: uploads.claim(tx, grant, call_hash=digest, entity_id=attachment_id),
        )
    except db.ConditionFailed as failure:  # the grant's claim failed
        uploads.discard(final)
        earlier = uploads.claim_failed(failure, grant, call_hash=digest)
        if earlier is None:
            raise
        return _stored(earlier)
    except attachment_store.TaskClosed:
        uploads.discard(final)
        raise _closed() from None
    except board_store.BoardArchived:
        uploads.discard(final)
        raise errors.board_archived("taskId") from None
    except db.Missing:
        uploads.discard(final)
        raise errors.not_found("task", args.taskId) from None
    except BaseException:
        uploads.discard(final)
        raise
    uploads.release_pending(grant)
    return AttachOutput(attachment=attachment_view(row))


def _stored(attachment_id: str | None) -> AttachOutput:
    found = attachment_store.get(attachment_id) if attachment_id else None
    if found is None:
        raise errors.not_found("attachment", str(attachment_id))
    return AttachOutput(attachment=attachment_view(found))


ATTACH = _attach  # the ToolSpec (not listed in any TOOLS: no MCP surface)


def attach(
    principal: Principal, *, task_id: Any, upload_grant_id: Any, correlation_id: str | None = None
) -> pipeline.CallOutcome:
    """Record an uploaded file on a task for ``principal``; see the module docstring.

    Returns the pipeline's :class:`~domain.pipeline.CallOutcome`: ``result`` is
    ``{attachment: {...}}``; ``error`` the envelope (NOT_FOUND for a task or grant the caller
    cannot see, FORBIDDEN for a read-only token or too low a role, INVALID_INPUT for an archived
    task or board and for a grant that does not fit, CONFLICT for a grant used by another call).
    """
    return pipeline.call_tool(
        ATTACH, {"taskId": task_id, "uploadGrantId": upload_grant_id}, principal, correlation_id=correlation_id
    )
