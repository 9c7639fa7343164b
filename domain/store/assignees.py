"""A task's assignees: the ``assigneeIds`` list on the task's two rows, guarded by membership.

set_task_assignees writes through :func:`domain.store.tasks.write` (compact row and full item
together, under the task's ``updatedAt``), adding one ConditionCheck per assignee on their member
item (:func:`domain.store.keys.member`), so a user removed from the workspace between the read
and the write is never stored as an assignee (docs/data-model.md, "set_task_assignees").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.store import db, members
from domain.store import tasks as task_store
from domain.store.cas import Write
from domain.store.errors import StoreError
from domain.store.models import ActivityRow, TaskDetailRow

MAX_ASSIGNEES = 20


class NotMembers(StoreError):
    """These users are not (or no longer) members of the task's workspace."""

    def __init__(self, user_ids: list[str]) -> None:
        super().__init__(", ".join(user_ids))
        self.user_ids = user_ids


def write(
    detail: TaskDetailRow,
    previous: str,
    *,
    workspace_id: str,
    actor_id: str,
    activity: ActivityRow,
    result: Callable[[], Any],
) -> Write[TaskDetailRow, Any]:
    """One assignee write for :func:`domain.store.cas.compare_and_set` (``detail`` carries the new
    ``assigneeIds``). The caller's own member item is already guarded by the task write, so it is
    not checked twice (one action per item per transaction).

    Raises (from the retry): NotMembers (an assignee's member item is gone), Missing (the task or
    the caller's membership is gone).
    """
    others = [u for u in detail.assigneeIds or [] if u != actor_id]

    def extra(tx: Any) -> None:
        for user_id in others:
            members.guard(tx, workspace_id, user_id)

    inner = task_store.write(
        detail, previous, workspace_id=workspace_id, actor_id=actor_id, activity=activity, result=result, extra=extra
    )

    def retry(failure: db.ConditionFailed) -> TaskDetailRow:
        gone = [u for u in others if members.guard_failed(failure, workspace_id, u)]
        if gone:
            raise NotMembers(gone)
        return inner.retry(failure)

    return Write(build=inner.build, result=result, retry=retry)
