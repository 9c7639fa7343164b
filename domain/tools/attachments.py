"""Attachment tool: list_attachments (catalog: "Artifacts", list_attachments).

Files are attached over HTTP (``POST /api/tasks/{taskId}/attachments``) or with
``jentrix attachment upload`` (domain/attachments.py); this tool reads them back, each with a
presigned download URL valid about five minutes (``JENTRIX_DOWNLOAD_URL_SECONDS``). An archived
task's attachments stay readable.
"""

from pydantic import Field

from domain import clock, errors
from domain.access import target
from domain.attachments import AttachmentView, attachment_view
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import attachments as attachment_store
from domain.store.paging import decode_cursor, encode_cursor, list_kind, take_page
from domain.tools.args import CursorArg, LimitArg, TaskIdArg


class ListAttachmentsInput(ToolInput):
    taskId: TaskIdArg
    limit: LimitArg
    cursor: CursorArg


class ListAttachmentsOutput(ToolOutput):
    taskId: str
    attachments: list[AttachmentView] = Field(description="Oldest first.")
    totalCount: int
    nextCursor: str | None
    notice: str | None


@tool(
    "list_attachments",
    title="List attachments",
    description=(
        "A task's attached files, oldest first, with size, SHA-256, uploader and a download URL valid ~5 minutes. Files "
        "are added via the HTTP API or CLI, not MCP."
    ),
    area="artifacts",
    scope="read",
    read_only=True,
    target=target("taskId", "task"),
    min_role="MEMBER",
    reads=("task", "attachment_count"),
    input_model=ListAttachmentsInput,
    output_model=ListAttachmentsOutput,
)
def list_attachments(ctx: CallContext, args: ListAttachmentsInput) -> ListAttachmentsOutput:
    task = ctx.read.task
    if task is None:
        raise errors.not_found("task", args.taskId)
    counter = ctx.read.attachment_count
    total = int(counter.count or 0) if counter is not None else 0
    kind = list_kind("attachments", task=task.taskId)
    start = decode_cursor(kind, args.cursor, attachment_store.page_shape(task.taskId))
    page, last = take_page(attachment_store.page(task.taskId, limit=args.limit + 1, start=start), args.limit)
    rows = attachment_store.attachments_in(page)
    cursor = encode_cursor(kind, last)
    notice = f"Showing {len(rows)} of {total} attachments; pass nextCursor for the next page." if cursor else None
    now = clock.now_ms()
    return ListAttachmentsOutput(
        taskId=task.taskId,
        attachments=[attachment_view(r, now_ms=now) for r in rows],
        totalCount=total,
        nextCursor=cursor,
        notice=notice,
    )


TOOLS = (list_attachments,)
