"""Comment items: a task's comments in their own partition, with a counter item before them.

Keys: :func:`domain.store.keys.comment` (sort key ``CM#<ulid>``: creation order) and
:func:`domain.store.keys.comment_count`. Every write is one transaction with a ConditionCheck on
the task's full item (it exists and is not archived: comments of an archived task are readable
and closed to writes), :func:`domain.store.boards.open_check` (an archived board's tasks are
read-only), the membership guard and the activity row. The task's own items are not
touched, so comments never race with task edits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain import ids
from domain.store import boards as board_store
from domain.store import db, keys, members, search_marks
from domain.store.cas import Write
from domain.store.errors import StoreError
from domain.store.idempotency_markers import Earlier, earlier_entity, put_marker
from domain.store.models import ActivityRow, CommentCountRow, CommentRow, CreationMarkerRow, Row, TaskDetailRow


class TaskClosed(StoreError):
    """The task is archived (or gone): its comments take no writes."""


def get(ref: ids.CommentRef) -> CommentRow | None:
    try:
        return CommentRow.get(*keys.comment(ref.task_id, ref.ulid), consistent_read=True)
    except CommentRow.DoesNotExist:
        return None


def _task_open(tx: Any, task: ids.TaskRef) -> None:
    tx.condition_check(
        TaskDetailRow,
        *keys.task_full(task.board_id, task.number),
        condition=Row.PK.exists() & TaskDetailRow.archivedAt.does_not_exist(),
    )
    board_store.open_check(tx, task.board_id)


def _failed(failure: db.ConditionFailed, task: ids.TaskRef, workspace_id: str, actor_id: str) -> Exception:
    if members.guard_failed(failure, workspace_id, actor_id):
        return db.Missing(workspace_id)
    if board_store.closed(failure, task.board_id):
        return board_store.BoardArchived(task.board_id)
    if failure.hit(*keys.task_full(task.board_id, task.number)):
        return TaskClosed(task.board_id)
    return db.Missing("comment")


def create(
    row: CommentRow, task: ids.TaskRef, *, actor_id: str, activity: ActivityRow, marker: CreationMarkerRow | None
) -> None:
    """Put the comment and count it, in one transaction.

    Raises:
        TaskClosed: the task is archived or gone. Missing: the caller left the workspace.
        Earlier: a keyed create with the same key committed before. IdempotencyMismatch.
    """
    if marker is not None:
        marker.entityId = row.commentId

    def build(tx: Any) -> None:
        put_marker(tx, marker)
        tx.save(row, condition=Row.PK.does_not_exist())
        search_marks.mark_comment(tx, row, fresh=True)
        tx.update(
            CommentCountRow(*keys.comment_count(row.taskId)),
            actions=[CommentCountRow.count.add(1), CommentCountRow.kind.set(CommentCountRow)],
        )
        _task_open(tx, task)
        members.guard(tx, row.workspaceId, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        earlier = earlier_entity(failure, marker)
        if earlier:
            raise Earlier(earlier) from None
        raise _failed(failure, task, row.workspaceId, actor_id) from None


def edit(
    row: CommentRow,
    previous: str,
    task: ids.TaskRef,
    *,
    actor_id: str,
    activity: ActivityRow,
    result: Callable[[], Any],
) -> Write[CommentRow, Any]:
    """One conditional comment edit for :func:`domain.store.cas.compare_and_set`: the comment
    replaced under ``updatedAt = previous``; a failed condition plans again on the stored comment
    (``ALL_OLD``).

    Raises (from the retry): Missing when the comment is gone or the caller left; TaskClosed;
    BoardArchived.
    """

    def build(tx: Any) -> None:
        tx.save(row, condition=(CommentRow.updatedAt == previous), return_values="ALL_OLD")
        search_marks.mark_comment(tx, row)
        _task_open(tx, task)
        members.guard(tx, row.workspaceId, actor_id)
        tx.save(activity)

    def retry(failure: db.ConditionFailed) -> CommentRow:
        if failure.hit(row.PK, row.SK):
            stored = failure.item(row.PK, row.SK)
            if not stored:
                raise db.Missing(row.commentId)
            return CommentRow.from_raw_data(stored)
        raise _failed(failure, task, row.workspaceId, actor_id)

    return Write(build=build, result=result, retry=retry)


def delete(row: CommentRow, task: ids.TaskRef, *, actor_id: str, activity: ActivityRow) -> None:
    """Delete the comment and uncount it (it must still exist).

    Raises:
        Missing: already deleted, or the caller left the workspace. TaskClosed.
    """

    def build(tx: Any) -> None:
        tx.delete(CommentRow(row.PK, row.SK), condition=Row.PK.exists())
        search_marks.mark_comment(tx, row, gone=True)
        tx.update(CommentCountRow(*keys.comment_count(row.taskId)), actions=[CommentCountRow.count.add(-1)])
        _task_open(tx, task)
        members.guard(tx, row.workspaceId, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        raise _failed(failure, task, row.workspaceId, actor_id) from None


def page(task_id: str, *, limit: int, start: dict[str, Any] | None) -> Any:
    """A Query over the task's comments, oldest first."""
    return Row.query(
        keys.task_side_partition(task_id),
        Row.SK.startswith(keys.COMMENTS_PREFIX),
        limit=limit,
        last_evaluated_key=start,
        consistent_read=True,
    )


def new_row(task_id: str, ulid: str, **fields: Any) -> CommentRow:
    """A new comment row of ``task_id`` under ``ulid`` (not saved: :func:`create` writes it)."""
    return CommentRow(*keys.comment(task_id, ulid), taskId=task_id, **fields)


def copy(row: CommentRow) -> CommentRow:
    """An independent copy of ``row`` to edit (the original stays the compare-and-set base)."""
    return CommentRow.from_raw_data(row.serialize())


def comments_in(rows: Any) -> list[CommentRow]:
    """The comment rows of a :func:`page` (a page may carry other rows of the partition)."""
    return [r for r in rows if isinstance(r, CommentRow)]


def page_shape(task_id: str) -> dict[str, str]:
    return {"PK": keys.task_side_partition(task_id), "SK": keys.COMMENTS_PREFIX}
