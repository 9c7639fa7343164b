"""Subtask items: a task's ordered checklist in its side partition, counted on the task's rows.

Keys: :func:`domain.store.keys.subtask` (sort key ``ST#<ulid>``: the checklist is in creation
order). Every subtask write is ONE transaction: the subtask's own action, the counts on the
task's full item and compact row moved by ``ADD`` (``subtaskCount`` / ``subtasksDone``) with the
task's ``updatedAt`` set to the write's stamp, the membership guard, the board's open check and
the activity row.

The task's rows are NOT rewritten under ``updatedAt = <value read>``: writes to different
subtasks of one task commute (each moves the counts by its own delta), so they must not turn
each other away (docs/decisions.md, "Hot items"). What the task's full item is conditioned on is
what an invariant needs: it exists and is not archived, its stamp is older than the one written
(``updatedAt`` stays strictly increasing, hence unique per write, so the task's own
compare-and-set writers — update_task and the rest, which rewrite the whole item — still see
every subtask write as a change), and for a create ``subtaskCount < MAX_PER_TASK`` (the cap
holds however many creates race). Toggle and delete condition the subtask item on its own
``updatedAt``. A failed condition returns the stored image (``ALL_OLD``) and the write is planned
again on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain import ids
from domain.store import boards as board_store
from domain.store import db, keys, members
from domain.store.cas import Write
from domain.store.idempotency_markers import Earlier, earlier_entity, put_marker
from domain.store.models import ActivityRow, CreationMarkerRow, Row, SubtaskRow, TaskDetailRow, TaskRow

MAX_PER_TASK = 100


@dataclass(frozen=True)
class State:
    """What a toggle or delete plans against: the task and the subtask as last read."""

    task: TaskDetailRow
    subtask: SubtaskRow


@dataclass(frozen=True)
class Counts:
    """A subtask write's change to its task: the count deltas and the new ``updatedAt``."""

    added: int
    done: int
    stamp: str


def get(ref: ids.SubtaskRef) -> SubtaskRow | None:
    """The subtask (one consistent GetItem), or ``None``."""
    return _get(*keys.subtask(ref.task_id, ref.ulid))


def _get(pk: str, sk: str) -> SubtaskRow | None:
    try:
        return SubtaskRow.get(pk, sk, consistent_read=True)
    except SubtaskRow.DoesNotExist:
        return None


def new_row(task_id: str, ulid: str, **fields: Any) -> SubtaskRow:
    """A new subtask row of ``task_id`` under ``ulid`` (not saved: :func:`create` writes it)."""
    return SubtaskRow(*keys.subtask(task_id, ulid), taskId=task_id, **fields)


def copy(row: SubtaskRow) -> SubtaskRow:
    """An independent copy of ``row`` to edit (the original stays the compare-and-set base)."""
    return SubtaskRow.from_raw_data(row.serialize())


def of(rows: list[Row]) -> list[SubtaskRow]:
    """The subtasks among a task's side items (:func:`domain.store.tasks.sidecar`), in checklist order."""
    return [r for r in rows if isinstance(r, SubtaskRow)]


def applied(task: TaskDetailRow, counts: Counts) -> TaskDetailRow:
    """``task`` with ``counts`` applied (what the write leaves when nobody else wrote meanwhile)."""
    out = TaskDetailRow.from_raw_data(task.serialize())
    out.subtaskCount = int(task.subtaskCount or 0) + counts.added
    out.subtasksDone = int(task.subtasksDone or 0) + counts.done
    out.updatedAt = counts.stamp
    return out


def after(task: TaskDetailRow, counts: Counts) -> TaskDetailRow:
    """The task as it stands after a committed subtask write (one consistent GetItem; other
    writes may have landed after it), or ``applied(task, counts)`` if the read finds nothing."""
    try:
        return TaskDetailRow.get(task.PK, task.SK, consistent_read=True)
    except TaskDetailRow.DoesNotExist:
        return applied(task, counts)


def _task_actions(tx: Any, task: TaskDetailRow, counts: Counts, *, cap: bool) -> None:
    """The two task rows: counts moved by ``ADD``, ``updatedAt`` set; the full item conditioned
    on "exists, not archived, older stamp" (and the cap for a create), returning its image."""
    cond = Row.PK.exists() & TaskDetailRow.archivedAt.does_not_exist() & (TaskDetailRow.updatedAt < counts.stamp)
    if cap:
        cond = cond & (TaskDetailRow.subtaskCount.does_not_exist() | (TaskDetailRow.subtaskCount < MAX_PER_TASK))
    full_actions: list[Any] = [TaskDetailRow.updatedAt.set(counts.stamp)]
    compact_actions: list[Any] = [TaskRow.updatedAt.set(counts.stamp)]
    if counts.added:
        full_actions.append(TaskDetailRow.subtaskCount.add(counts.added))
        compact_actions.append(TaskRow.subtaskCount.add(counts.added))
    if counts.done:
        full_actions.append(TaskDetailRow.subtasksDone.add(counts.done))
        compact_actions.append(TaskRow.subtasksDone.add(counts.done))
    tx.update(TaskDetailRow(task.PK, task.SK), actions=full_actions, condition=cond, return_values="ALL_OLD")
    tx.update(
        TaskRow(*keys.task_compact(task.boardId, int(task.number))), actions=compact_actions, condition=Row.PK.exists()
    )


def _retry_task(failure: db.ConditionFailed, task: TaskDetailRow, workspace_id: str, actor_id: str) -> TaskDetailRow:
    """The task state to plan the next attempt on, or the error that ends the call."""
    if board_store.closed(failure, task.boardId):
        raise board_store.BoardArchived(task.boardId)
    if members.guard_failed(failure, workspace_id, actor_id):
        raise db.Missing(task.taskId)
    if failure.hit(task.PK, task.SK):
        stored = failure.item(task.PK, task.SK)
        if not stored:
            raise db.Missing(task.taskId)
        return TaskDetailRow.from_raw_data(stored)
    if failure.hit(*keys.task_compact(task.boardId, int(task.number))):
        raise db.Missing(task.taskId)  # the compact row is gone only with the task (archive deletes it)
    return task


def create(
    task: TaskDetailRow,
    counts: Counts,
    row: SubtaskRow,
    *,
    workspace_id: str,
    actor_id: str,
    activity: ActivityRow,
    marker: CreationMarkerRow | None,
    result: Callable[[], Any],
) -> Write[TaskDetailRow, Any]:
    """One create for :func:`domain.store.cas.compare_and_set`: the subtask put (new key), the
    task's counts +1 (under the cap), guard, open check, activity[, marker].

    The retry plans again on the task image a failed condition returned (the cap is then
    checked by the plan).

    Raises (from the retry): Earlier (the key's marker exists), IdempotencyMismatch, Missing
    (the task or the caller's membership is gone), BoardArchived.
    """
    if marker is not None:
        marker.entityId = row.subtaskId

    def build(tx: Any) -> None:
        put_marker(tx, marker)
        tx.save(row, condition=Row.PK.does_not_exist())
        _task_actions(tx, task, counts, cap=True)
        members.guard(tx, workspace_id, actor_id)
        board_store.open_check(tx, task.boardId)
        tx.save(activity)

    def retry(failure: db.ConditionFailed) -> TaskDetailRow:
        earlier = earlier_entity(failure, marker)
        if earlier:
            raise Earlier(earlier)
        return _retry_task(failure, task, workspace_id, actor_id)

    return Write(build=build, result=result, retry=retry)


def change(
    state: State,
    counts: Counts,
    replacement: SubtaskRow | None,
    *,
    workspace_id: str,
    actor_id: str,
    activity: ActivityRow,
    result: Callable[[], Any],
) -> Write[State, Any]:
    """One toggle (``replacement`` is the edited subtask) or delete (``replacement=None``) for
    :func:`domain.store.cas.compare_and_set`, with the task's counts moved by ``counts``.

    The subtask action is conditioned on the subtask's own ``updatedAt`` as read: the task and
    the subtask come from one BatchGetItem, which is not a snapshot, so a write committed between
    the two reads is caught here rather than counted twice. The retry plans again on the task
    image and the subtask image the failure returned (a delete gets no image: the subtask is read
    again, one GetItem).

    Raises (from the retry): Missing (the subtask, the task or the caller's membership is gone),
    BoardArchived.
    """
    old, task = state.subtask, state.task
    unchanged = SubtaskRow.updatedAt == old.updatedAt  # false for a missing item, too

    def build(tx: Any) -> None:
        if replacement is None:
            tx.delete(SubtaskRow(old.PK, old.SK), condition=unchanged)
        else:
            tx.save(replacement, condition=unchanged, return_values="ALL_OLD")
        _task_actions(tx, task, counts, cap=False)
        members.guard(tx, workspace_id, actor_id)
        board_store.open_check(tx, task.boardId)
        tx.save(activity)

    def retry(failure: db.ConditionFailed) -> State:
        now = _retry_task(failure, task, workspace_id, actor_id)
        subtask: SubtaskRow | None = old
        if failure.hit(old.PK, old.SK):
            raw = failure.item(old.PK, old.SK)
            subtask = SubtaskRow.from_raw_data(raw) if raw else _get(old.PK, old.SK)
        if subtask is None:
            raise db.Missing(old.subtaskId)
        return State(now, subtask)

    return Write(build=build, result=result, retry=retry)
