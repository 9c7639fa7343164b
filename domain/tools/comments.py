"""Comment tools: create_comment, list_comments, update_comment, delete_comment.

Comments live in their task's own partition (docs/data-model.md, "comment"); only the author
edits or deletes one; an archived task's comments stay readable and take no writes.
"""

from typing import Annotated

from pydantic import Field
from ulid import ULID

from domain import clock, errors, ids
from domain.access import target
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import boards as board_store
from domain.store import comments as comment_store
from domain.store.cas import Step, Unchanged, compare_and_set
from domain.store.db import Missing
from domain.store.paging import decode_cursor, encode_cursor, list_kind, take_page
from domain.store.reads import Comment, Task
from domain.text import has_visible
from domain.tools.args import (
    CursorArg,
    ExpectedUpdatedAtArg,
    IdempotencyKeyArg,
    LimitArg,
    Redact,
    TaskIdArg,
    null_rule,
    redactions_field,
    requested_changes,
)
from domain.tools.views import ChangedFields

BodyArg = Annotated[str, Field(min_length=1, max_length=20000, description="Markdown."), Redact]
CommentIdArg = Annotated[str, Field(min_length=1, max_length=120, description="cm_…")]


class CommentView(ToolOutput):
    id: str
    taskId: str
    authorId: str
    authorName: str = Field(description="The author's display name when the comment was written.")
    body: str
    createdAt: str
    updatedAt: str
    editedAt: str | None = Field(description="When the body was last edited; null if never.")


def comment_view(c: Comment) -> CommentView:
    return CommentView(
        id=c.commentId,
        taskId=c.taskId,
        authorId=c.authorId,
        authorName=c.authorName,
        body=c.body,
        createdAt=c.createdAt,
        updatedAt=c.updatedAt,
        editedAt=c.editedAt,
    )


def _task_item(ctx: CallContext) -> Task:
    task = ctx.read.task
    if task is None:
        where = ctx.target
        raise errors.not_found("task", ids.task_id(where.board(), where.task_ref().number))
    return task


def _closed(task_id: str) -> errors.ToolError:
    return errors.invalid(
        "taskId",
        "the task is archived: its comments can be read but not changed",
        "Archived tasks are read-only; comment on a live task instead.",
    )


def _own(ctx: CallContext, comment: Comment, verb: str) -> None:
    if comment.authorId != ctx.user_id:
        raise errors.forbidden(
            f"Only the comment's author can {verb} it; {comment.commentId} was written by {comment.authorName}.",
            "Add a new comment instead (create_comment).",
        )


# -- create_comment --------------------------------------------------------------------------
class CreateCommentInput(ToolInput):
    taskId: TaskIdArg
    body: BodyArg
    idempotencyKey: IdempotencyKeyArg


class CommentOutput(ToolOutput):
    comment: CommentView
    redactions: list[str] = redactions_field()


@tool(
    "create_comment",
    title="Create comment",
    description=("Adds a markdown comment to a task that is not archived."),
    area="collaboration",
    scope="write",
    keyed=True,
    target=target("taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    reads=("task",),
    replay=lambda ctx, entity_id: _replay_comment(ctx, entity_id),
    input_model=CreateCommentInput,
    output_model=CommentOutput,
)
def create_comment(ctx: CallContext, args: CreateCommentInput) -> CommentOutput:
    if not has_visible(args.body):
        raise errors.invalid("body", "must contain visible characters")
    where = ctx.target
    task = _task_item(ctx)
    if task.archivedAt:
        raise _closed(task.taskId)
    now = clock.now_iso()
    ulid = str(ULID()).lower()
    comment_id = ids.new_comment_id(where.task_ref(), ulid)
    member = ctx.member(where.workspace_id)
    row = comment_store.new_row(
        task.taskId,
        ulid,
        commentId=comment_id,
        workspaceId=where.workspace_id,
        authorId=ctx.user_id,
        authorName=member.displayName,
        body=args.body,
        createdAt=now,
        updatedAt=now,
    )
    act = ctx.activity(
        where.workspace_id,
        where.board(),
        "comment.created",
        f"Commented on {task.key}",
        task_id=task.taskId,
        data={"commentId": comment_id},
        at=now,
    )
    try:
        comment_store.create(
            row,
            where.task_ref(),
            actor_id=ctx.user_id,
            activity=act,
            marker=ctx.marker,
        )
    except comment_store.TaskClosed:
        raise _closed(task.taskId) from None
    except board_store.BoardArchived:
        raise errors.board_archived("taskId" if ctx.target.kind == "task" else "commentId") from None
    except Missing:
        raise errors.not_found("task", task.taskId) from None
    return CommentOutput(comment=comment_view(row))


def _replay_comment(ctx: CallContext, comment_id: str) -> CommentOutput:
    """The comment an earlier call with the same idempotencyKey made (its marker named it)."""
    ref = ids.parse_comment(comment_id)
    found = comment_store.get(ref) if ref else None
    if found is None:
        raise errors.not_found("comment", comment_id)
    return CommentOutput(comment=comment_view(found))


# -- list_comments ---------------------------------------------------------------------------
class ListCommentsInput(ToolInput):
    taskId: TaskIdArg
    limit: LimitArg
    cursor: CursorArg


class ListCommentsOutput(ToolOutput):
    taskId: str
    comments: list[CommentView] = Field(description="Oldest first.")
    totalCount: int
    nextCursor: str | None
    notice: str | None


@tool(
    "list_comments",
    title="List comments",
    description=("A task's comments oldest first, with author names."),
    area="collaboration",
    scope="read",
    read_only=True,
    fields_of="comments",
    target=target("taskId", "task"),
    min_role="MEMBER",
    reads=("task", "comment_count"),
    input_model=ListCommentsInput,
    output_model=ListCommentsOutput,
)
def list_comments(ctx: CallContext, args: ListCommentsInput) -> ListCommentsOutput:
    task = _task_item(ctx)
    counter = ctx.read.comment_count
    total = int(counter.count or 0) if counter is not None else 0
    kind = list_kind("comments", task=task.taskId)
    start = decode_cursor(kind, args.cursor, comment_store.page_shape(task.taskId))
    page, last = take_page(comment_store.page(task.taskId, limit=args.limit + 1, start=start), args.limit)
    rows = comment_store.comments_in(page)
    cursor = encode_cursor(kind, last)
    notice = f"Showing {len(rows)} of {total} comments; pass nextCursor for the next page." if cursor else None
    return ListCommentsOutput(
        taskId=task.taskId, comments=[comment_view(r) for r in rows], totalCount=total, nextCursor=cursor, notice=notice
    )


# -- update_comment --------------------------------------------------------------------------
class UpdateCommentInput(ToolInput):
    commentId: CommentIdArg
    body: Annotated[str | None, Field(default=None, min_length=1, max_length=20000, description="Markdown."), Redact]
    expectedUpdatedAt: ExpectedUpdatedAtArg


class UpdateCommentOutput(ToolOutput):
    comment: CommentView
    changedFields: ChangedFields
    redactions: list[str] = redactions_field()


@tool(
    "update_comment",
    title="Update comment",
    description="Replaces the body of your own comment (others' are FORBIDDEN). " + null_rule([], ["body"]),
    area="collaboration",
    scope="write",
    idempotent=True,
    target=target("commentId", "comment"),
    min_role="MEMBER",
    open_board=True,
    reads=("comment", "task"),
    cas="expectedUpdatedAt",
    input_model=UpdateCommentInput,
    output_model=UpdateCommentOutput,
)
def update_comment(ctx: CallContext, args: UpdateCommentInput) -> UpdateCommentOutput:
    changes = requested_changes(args, clear_to={}, not_values=("commentId", "expectedUpdatedAt"))
    if not changes:
        raise errors.invalid("body", "is required (null is ignored: a comment cannot be empty)", "Send the new body.")
    if not has_visible(changes["body"]):
        raise errors.invalid("body", "must contain visible characters")
    where = ctx.target
    current = ctx.read.comment
    if current is None:
        raise errors.not_found("comment", args.commentId)
    _own(ctx, current, "edit")
    task = _task_item(ctx)
    if task.archivedAt:
        raise _closed(task.taskId)

    def plan(current: Comment) -> Step[Comment, UpdateCommentOutput]:
        ctx.still_current("comment", current.updatedAt, lambda: comment_view(current).model_dump(mode="json"))
        if current.body == changes["body"]:
            return Unchanged(UpdateCommentOutput(comment=comment_view(current), changedFields=[]))
        stamp = clock.next_stamp(current.updatedAt)
        edited = comment_store.copy(current)
        edited.body, edited.updatedAt, edited.editedAt = changes["body"], stamp, stamp
        act = ctx.activity(
            where.workspace_id,
            where.board(),
            "comment.updated",
            f"Edited a comment on {task.key}",
            task_id=task.taskId,
            data={"commentId": args.commentId},
            at=stamp,
        )
        return comment_store.edit(
            edited,
            current.updatedAt,
            where.task_ref(),
            actor_id=ctx.user_id,
            activity=act,
            result=lambda: UpdateCommentOutput(comment=comment_view(edited), changedFields=["body"]),
        )

    try:
        return compare_and_set("update_comment", current, plan)
    except comment_store.TaskClosed:
        raise _closed(task.taskId) from None
    except board_store.BoardArchived:
        raise errors.board_archived("taskId" if ctx.target.kind == "task" else "commentId") from None
    except Missing:
        raise errors.not_found("comment", args.commentId) from None


# -- delete_comment --------------------------------------------------------------------------
class DeleteCommentInput(ToolInput):
    commentId: CommentIdArg


class DeleteCommentOutput(ToolOutput):
    deleted: CommentView = Field(description="The comment as it was before it was deleted.")


@tool(
    "delete_comment",
    title="Delete comment",
    description=("Deletes one of your comments for good (others' are FORBIDDEN); again is NOT_FOUND."),
    area="collaboration",
    scope="write",
    destructive=True,
    target=target("commentId", "comment"),
    min_role="MEMBER",
    open_board=True,
    reads=("comment", "task"),
    input_model=DeleteCommentInput,
    output_model=DeleteCommentOutput,
)
def delete_comment(ctx: CallContext, args: DeleteCommentInput) -> DeleteCommentOutput:
    where = ctx.target
    current = ctx.read.comment
    if current is None:
        raise errors.not_found("comment", args.commentId)
    _own(ctx, current, "delete")
    task = _task_item(ctx)
    if task.archivedAt:
        raise _closed(task.taskId)
    act = ctx.activity(
        where.workspace_id,
        where.board(),
        "comment.deleted",
        f"Deleted a comment on {task.key}",
        task_id=task.taskId,
        data={"commentId": args.commentId},
    )
    try:
        comment_store.delete(current, where.task_ref(), actor_id=ctx.user_id, activity=act)
    except comment_store.TaskClosed:
        raise _closed(task.taskId) from None
    except board_store.BoardArchived:
        raise errors.board_archived("taskId" if ctx.target.kind == "task" else "commentId") from None
    except Missing:
        raise errors.not_found("comment", args.commentId) from None
    return DeleteCommentOutput(deleted=comment_view(current))


TOOLS = (create_comment, list_comments, update_comment, delete_comment)
