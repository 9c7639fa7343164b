"""Subtask items: a task's ordered checklist in its side partition, counted on the task's rows.

Keys: :func:`domain.store.keys.subtask` (sort key ``ST#<ulid>``: the checklist is in creation
order). Every subtask write is ONE transaction built on :func:`domain.store.tasks.write`: the
task's full item and compact row are rewritten with the new ``subtaskCount`` / ``subtasksDone``
under the task's ``updatedAt`` (and "not archived"), with the membership guard, the activity row
and the subtask's own action. Because each subtask write rewrites the task under that condition,
the writers of one task commit one at a time: the counts always equal the items, and the cap of
:data:`MAX_PER_TASK` holds however many creates race (docs/data-model.md, "subtask").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain import ids
from domain.store import db, keys
from domain.store import tasks as task_store
from domain.store.cas import Write
from domain.store.idempotency_markers import earlier_entity, put_marker
from domain.store.models import ActivityRow, CreationMarkerRow, Row, SubtaskRow, TaskDetailRow

MAX_PER_TASK = 100


class Earlier(Exception):
    """A keyed create already committed; ``subtask_id`` names the subtask it made."""

    def __init__(self, subtask_id: str) -> None:
        super().__init__(subtask_id)
        self.subtask_id = subtask_id


@dataclass(frozen=True)
class State:
    """What a toggle or delete plans against: the task and the subtask as last read."""

    task: TaskDetailRow
    subtask: SubtaskRow


def get(ref: ids.SubtaskRef) -> SubtaskRow | None:
    """The subtask (one consistent GetItem), or ``None``."""
    return _get(*keys.subtask(ref.task_id, ref.ulid))


def _get(pk: str, sk: str) -> SubtaskRow | None:
    try:
        return SubtaskRow.get(pk, sk, consistent_read=True)
    except SubtaskRow.DoesNotExist:
        return None


def of(rows: list[Row]) -> list[SubtaskRow]:
    """The subtasks among a task's side items (:func:`domain.store.tasks.sidecar`), in checklist order."""
    return [r for r in rows if isinstance(r, SubtaskRow)]


def create(
    detail: TaskDetailRow, previous: str, row: SubtaskRow, *, workspace_id: str, actor_id: str, activity: ActivityRow,
    marker: CreationMarkerRow | None, result: Callable[[], Any],
) -> Write[TaskDetailRow, Any]:
    """One create for :func:`domain.store.cas.compare_and_set`: the subtask put (new key) and the
    task's rows with the count already raised in ``detail``, under ``updatedAt = previous``.

    The retry plans again on the task image a failed condition returned.

    Raises (from the retry): Earlier (the key's marker exists), IdempotencyMismatch, Missing
    (the task or the caller's membership is gone).
    """
    if marker is not None:
        marker.entityId = row.subtaskId

    def extra(tx: Any) -> None:
        put_marker(tx, marker)
        tx.save(row, condition=Row.PK.does_not_exist())

    inner = task_store.write(detail, previous, workspace_id=workspace_id, actor_id=actor_id, activity=activity, result=result, extra=extra)

    def retry(failure: db.ConditionFailed) -> TaskDetailRow:
        earlier = earlier_entity(failure, marker)
        if earlier:
            raise Earlier(earlier)
        return inner.retry(failure)

    return Write(build=inner.build, result=result, retry=retry)


def change(
    detail: TaskDetailRow, previous: str, state: State, replacement: SubtaskRow | None, *, workspace_id: str, actor_id: str,
    activity: ActivityRow, result: Callable[[], Any],
) -> Write[State, Any]:
    """One toggle (``replacement`` is the edited subtask) or delete (``replacement=None``) for
    :func:`domain.store.cas.compare_and_set`, together with the task's rows (counts already
    adjusted in ``detail``) under ``updatedAt = previous``.

    The subtask action is conditioned on the subtask's own ``updatedAt`` as read: the task and
    the subtask come from one BatchGetItem, which is not a snapshot, so a write committed between
    the two reads is caught here rather than counted twice. The retry plans again on the task
    image and the subtask image the failure returned (a delete gets no image: the subtask is read
    again, one GetItem).

    Raises (from the retry): Missing (the subtask, the task or the caller's membership is gone).
    """
    old = state.subtask
    unchanged = SubtaskRow.updatedAt == old.updatedAt  # false for a missing item, too

    def extra(tx: Any) -> None:
        if replacement is None:
            tx.delete(SubtaskRow(old.PK, old.SK), condition=unchanged)
        else:
            tx.save(replacement, condition=unchanged, return_values="ALL_OLD")

    inner = task_store.write(detail, previous, workspace_id=workspace_id, actor_id=actor_id, activity=activity, result=result,
                             extra=extra, replan_on=state.task)

    def retry(failure: db.ConditionFailed) -> State:
        task = inner.retry(failure)  # the returned task image, or the same task if only the subtask moved
        subtask: SubtaskRow | None = old
        if failure.hit(old.PK, old.SK):
            raw = failure.item(old.PK, old.SK)
            subtask = SubtaskRow.from_raw_data(raw) if raw else _get(old.PK, old.SK)
        if subtask is None:
            raise db.Missing(old.subtaskId)
        return State(task, subtask)

    return Write(build=inner.build, result=result, retry=retry)
