"""Task attachment items: files on a task, in the task's side partition with a counter.

Keys: :func:`domain.store.keys.attachment` (``TCOM#<task> / AT#<ulid>``: upload order) and
:func:`domain.store.keys.attachment_count`. Recording one is one transaction: the attachment
(``attribute_not_exists``), the counter +1, a ConditionCheck on the task's full item (present,
not archived), :func:`domain.store.boards.open_check`, the membership guard, the activity row and
the caller's extra actions (the upload grant's single-use claim). The task's own items are not
touched, so an attachment never races with a task edit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain import ids
from domain.store import boards as board_store
from domain.store import db, keys, members
from domain.store.errors import StoreError
from domain.store.models import ActivityRow, AttachmentCountRow, AttachmentRow, Row, TaskDetailRow


class TaskClosed(StoreError):
    """The task is archived (or gone): it takes no new attachments."""


def get(attachment_id: str) -> AttachmentRow | None:
    ref = ids.parse_attachment(attachment_id)
    if ref is None:
        return None
    try:
        return AttachmentRow.get(*keys.attachment(ref.task_id, ref.ulid), consistent_read=True)
    except AttachmentRow.DoesNotExist:
        return None


def _failed(failure: db.ConditionFailed, task: ids.TaskRef, workspace_id: str, actor_id: str) -> Exception:
    if members.guard_failed(failure, workspace_id, actor_id):
        return db.Missing(workspace_id)
    if board_store.closed(failure, task.board_id):
        return board_store.BoardArchived(task.board_id)
    if failure.hit(*keys.task_full(task.board_id, task.number)):
        return TaskClosed(task.board_id)
    return db.Missing("attachment")


def create(
    row: AttachmentRow, task: ids.TaskRef, *, actor_id: str, activity: ActivityRow, extra: Callable[[Any], None]
) -> None:
    """Record the attachment and count it, with ``extra(tx)`` in the same transaction.

    Raises:
        db.ConditionFailed: only when ``extra``'s own item failed (the caller maps it).
        TaskClosed: the task is archived or gone. BoardArchived. Missing: the caller left.
    """

    def build(tx: Any) -> None:
        tx.save(row, condition=Row.PK.does_not_exist())
        tx.update(
            AttachmentCountRow(*keys.attachment_count(row.taskId)),
            actions=[AttachmentCountRow.count.add(1), AttachmentCountRow.kind.set(AttachmentCountRow)],
        )
        tx.condition_check(
            TaskDetailRow,
            *keys.task_full(task.board_id, task.number),
            condition=Row.PK.exists() & TaskDetailRow.archivedAt.does_not_exist(),
        )
        board_store.open_check(tx, task.board_id)
        members.guard(tx, row.workspaceId, actor_id)
        tx.save(activity)
        extra(tx)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        mapped = _failed(failure, task, row.workspaceId, actor_id)
        if isinstance(mapped, db.Missing) and not failure.hit(row.PK, row.SK):
            raise  # not ours: the caller's extra item (the grant) failed
        raise mapped from None


def page(task_id: str, *, limit: int, start: dict[str, Any] | None) -> Any:
    """A Query over the task's attachments, oldest first."""
    return Row.query(
        keys.task_side_partition(task_id),
        Row.SK.startswith(keys.ATTACHMENTS_PREFIX),
        limit=limit,
        last_evaluated_key=start,
        consistent_read=True,
    )


def attachments_in(rows: Any) -> list[AttachmentRow]:
    """The attachment rows of a :func:`page` (a page may carry other rows of the partition)."""
    return [r for r in rows if isinstance(r, AttachmentRow)]


def page_shape(task_id: str) -> dict[str, str]:
    return {"PK": keys.task_side_partition(task_id), "SK": keys.ATTACHMENTS_PREFIX}
