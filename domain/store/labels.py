"""Label items: a board's labels in the board partition, their name claims in their own partitions.

Keys: :func:`domain.store.keys.label` (``L#<label>``, between the columns and the tasks, so the
snapshot Query returns them) and :func:`domain.store.keys.label_name_claim` (one item per
case-insensitive name per board, written with ``attribute_not_exists`` in the same transaction
as the label it names: racing creates of "Bug" and "bug" leave one label). The board head
counts its labels (``labelCount``, at most :data:`MAX_PER_BOARD`).

A task's labels are its ``labelIds`` (both task items). :func:`set_for_task` goes through
:func:`domain.store.tasks.write` and moves each added or removed label's ``taskCount``/``rev``
in the same transaction; :func:`delete` finds the tasks carrying a label with one filtered
Query over the board's full items and detaches it in chunks of :data:`DETACH_CHUNK` tasks, at
most :data:`MAX_DETACH_PER_CALL` per call (docs/data-model.md, "Labels").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pynamodb.expressions.update import Action

from domain import clock
from domain.store import boards as board_store
from domain.store import db, keys, members
from domain.store import tasks as task_store
from domain.store.cas import R, Step, Unchanged, Write, compare_and_set
from domain.store.errors import StoreError
from domain.store.models import ActivityRow, BoardRow, LabelNameRow, LabelRow, Row, TaskDetailRow
from domain.store.retry import ATTEMPTS, Contended, backoff

MAX_PER_BOARD = board_store.MAX_LABELS
MAX_PER_TASK = 20
# 3 actions per task (full item, compact row, the recent item's freshness witness:
# domain.store.witness) + label, claim, board head, entry check, guard, activity <= 96
DETACH_CHUNK = 30
MAX_DETACH_PER_CALL = 225  # 8 transactions (the last of 15 tasks)


class NameTaken(StoreError):
    """Another label of the board already has this name (compared case-insensitively)."""

    def __init__(self, label_id: str | None) -> None:
        super().__init__(label_id)
        self.label_id = label_id


class BoardFull(StoreError):
    """The board already holds MAX_PER_BOARD labels."""


class TaskArchived(StoreError):
    """The task is archived: its labels are read-only."""


class LabelGone(StoreError):
    """A label of the planned set was deleted (or is being deleted) meanwhile."""

    def __init__(self, label_ids: list[str]) -> None:
        super().__init__(label_ids)
        self.label_ids = label_ids


def usable(label: Any) -> bool:
    """A label callers see and tasks may take: stored and not being deleted."""
    return isinstance(label, LabelRow) and not label.deletingAt


def ordered(labels: list[LabelRow]) -> list[LabelRow]:
    """The board's usable labels by name (case-insensitively), then id."""
    return sorted((lb for lb in labels if usable(lb)), key=lambda lb: (keys.label_name_key(lb.name), lb.labelId))


def get(board_id: str, label_id: str) -> LabelRow | None:
    try:
        return LabelRow.get(*keys.label(board_id, label_id), consistent_read=True)
    except LabelRow.DoesNotExist:
        return None


def of_board(board_id: str) -> list[LabelRow]:
    """Every label of the board (one Query, at most MAX_PER_BOARD items)."""
    return [
        r
        for r in Row.query(keys.board_partition(board_id), Row.SK.startswith(keys.LABELS_PREFIX), consistent_read=True)
        if isinstance(r, LabelRow)
    ]


def new_row(board_id: str, label_id: str, **fields: Any) -> LabelRow:
    """A new label row of ``board_id`` (not saved: :func:`create` writes it with its name claim)."""
    return LabelRow(*keys.label(board_id, label_id), labelId=label_id, boardId=board_id, **fields)


def claimed(board_id: str, name: str) -> str | None:
    """The id of the board's label named ``name`` (its name claim, one consistent GetItem), or None."""
    try:
        return LabelNameRow.get(*keys.label_name_claim(board_id, name), consistent_read=True).labelId
    except LabelNameRow.DoesNotExist:
        return None


def _head_count_guard() -> Any:
    return Row.PK.exists() & (BoardRow.labelCount.does_not_exist() | (BoardRow.labelCount < MAX_PER_BOARD))


# -- create ------------------------------------------------------------------------------------
def create(label: LabelRow, *, workspace_id: str, actor_id: str, activity: ActivityRow) -> tuple[LabelRow, bool]:
    """Put the label, its name claim and the board's count in one transaction.

    Returns ``(label, created)``: when the name is already claimed (also by a create racing this
    one), the existing label and ``False``.

    Raises:
        BoardFull, BoardArchived, Missing (the caller left the workspace, or the claim names a
        label being deleted).
    """
    board_id = label.boardId
    claim = LabelNameRow(*keys.label_name_claim(board_id, label.name), labelId=label.labelId)

    def build(tx: Any) -> None:
        tx.save(label, condition=Row.PK.does_not_exist())
        tx.save(claim, condition=Row.PK.does_not_exist())
        tx.update(
            BoardRow(*keys.board_head(board_id)), actions=[BoardRow.labelCount.add(1)], condition=_head_count_guard()
        )
        board_store.open_check(tx, board_id)
        members.guard(tx, workspace_id, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if members.guard_failed(failure, workspace_id, actor_id):
            raise db.Missing(workspace_id) from None
        if board_store.closed(failure, board_id):
            raise board_store.BoardArchived(board_id) from None
        if failure.hit(claim.PK, claim.SK):
            existing_id = claimed(board_id, label.name)
            existing = get(board_id, existing_id) if existing_id else None
            if not usable(existing):
                raise db.Missing(existing_id or label.name) from None
            return existing, False  # type: ignore[return-value]
        if failure.hit(*keys.board_head(board_id)):
            raise BoardFull(board_id) from None
        raise db.Missing(board_id) from None
    return label, True


def existing_named(labels: list[LabelRow], name: str) -> LabelRow | None:
    """The board's label with ``name``, compared case-insensitively (from a read list)."""
    wanted = keys.label_name_key(name)
    return next((lb for lb in labels if keys.label_name_key(lb.name) == wanted), None)


# -- update ------------------------------------------------------------------------------------
def update(
    current: LabelRow,
    *,
    name: str | None,
    color: str | None,
    workspace_id: str,
    actor_id: str,
    activity_for: Callable[[LabelRow, dict[str, Any]], ActivityRow],
) -> tuple[LabelRow, list[str]]:
    """Rename and/or recolour under ``updatedAt`` (compare-and-set, replanned on the returned
    image). A new name moves the claim (old claim deleted, new one put with
    ``attribute_not_exists``) in the same transaction; a change of case keeps the claim.

    Returns ``(label, changed field names)``.

    Raises:
        NameTaken, BoardArchived, Missing (the label is gone or being deleted, or the caller left).
    """
    board_id = current.boardId

    def plan(state: LabelRow) -> Write[LabelRow, tuple[LabelRow, list[str]]] | Unchanged[tuple[LabelRow, list[str]]]:
        if state.deletingAt:
            raise db.Missing(state.labelId)
        changes: dict[str, Any] = {}
        if name is not None and name != state.name:
            changes["name"] = {"from": state.name, "to": name}
        if color is not None and color != state.color:
            changes["color"] = {"from": state.color, "to": color}
        if not changes:
            return Unchanged((state, []))
        previous = state.updatedAt
        edited = LabelRow.from_raw_data(state.serialize())
        edited.name = name if name is not None else state.name
        edited.color = color if color is not None else state.color
        edited.updatedAt = clock.next_stamp(previous)
        old_claim = keys.label_name_claim(board_id, state.name)
        new_claim = keys.label_name_claim(board_id, edited.name)
        moves_claim = old_claim != new_claim
        act = activity_for(edited, changes)

        def build(tx: Any) -> None:
            tx.save(
                edited,
                condition=(LabelRow.updatedAt == previous) & LabelRow.deletingAt.does_not_exist(),
                return_values="ALL_OLD",
            )
            if moves_claim:
                tx.delete(LabelNameRow(*old_claim), condition=LabelNameRow.labelId == state.labelId)
                tx.save(LabelNameRow(*new_claim, labelId=state.labelId), condition=Row.PK.does_not_exist())
            board_store.open_check(tx, board_id)
            members.guard(tx, workspace_id, actor_id)
            tx.save(act)

        def retry(failure: db.ConditionFailed) -> LabelRow:
            if members.guard_failed(failure, workspace_id, actor_id):
                raise db.Missing(workspace_id)
            if board_store.closed(failure, board_id):
                raise board_store.BoardArchived(board_id)
            if failure.hit(state.PK, state.SK):
                stored = failure.item(state.PK, state.SK)
                if not stored:
                    raise db.Missing(state.labelId)
                return LabelRow.from_raw_data(stored)
            if moves_claim and failure.hit(*new_claim):
                raise NameTaken(claimed(board_id, edited.name))
            raise db.Missing(state.labelId)

        return Write(build=build, result=lambda: (edited, list(changes)), retry=retry)

    return compare_and_set("update_label", current, plan)


# -- delete ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Deleted:
    """What one delete call did: ``detached`` task ids; ``remaining`` tasks still to detach
    (then the label is marked deleting and a later delete call finishes it)."""

    detached: list[str]
    remaining: int


def carriers(board_id: str, label_id: str) -> list[TaskDetailRow]:
    """The board's tasks (archived ones included) whose labels hold ``label_id``: one Query over
    the full items, filtered server-side; 1 request per MB of the board's full items."""
    return [
        r
        for r in TaskDetailRow.query(
            keys.board_partition(board_id),
            Row.SK.startswith(keys.TASK_ITEMS_PREFIX),
            filter_condition=TaskDetailRow.labelIds.contains(label_id),
            consistent_read=True,
        )
        if isinstance(r, TaskDetailRow)
    ]


def _detach(tx: Any, task: TaskDetailRow, label_id: str) -> None:
    """Rewrite one task without ``label_id`` under ``updatedAt = <value read>``."""
    detail = task_store.copy(task)
    detail.labelIds = [x for x in (task.labelIds or []) if x != label_id]
    detail.updatedAt = clock.next_stamp(task.updatedAt)
    if task.archivedAt:
        # An archived task has no compact row (put_rows refuses archived tasks): its full item alone.
        tx.save(detail, condition=TaskDetailRow.updatedAt == task.updatedAt, return_values="ALL_OLD")
    else:
        task_store.put_rows(tx, detail, previous=task.updatedAt)


def delete(
    label: LabelRow, *, workspace_id: str, actor_id: str, activity_for: Callable[[list[str], int], ActivityRow]
) -> Deleted:
    """Delete the label and take it off every task carrying it.

    Each attempt: the label (the first attempt uses the one read with the membership), then —
    strictly after it, never in parallel — the carrying tasks (:func:`carriers`), then transactions of :data:`DETACH_CHUNK` tasks. With at
    most one chunk, one transaction detaches the tasks and deletes the label, its claim and the
    board's count, conditioned on the label's ``rev`` read before the Query (a task labelled
    meanwhile fails it, and the attempt starts again). With more, the first transaction also
    marks the label deleting (no task can take it from then on), the last one deletes it, and a
    call stops after :data:`MAX_DETACH_PER_CALL` tasks (``remaining`` > 0: call again).
    ``activity_for(task_ids, remaining)`` builds the call's one activity row (first transaction).

    Raises:
        Missing (the label is gone, or the caller left), BoardArchived, Contended.
    """
    board_id = label.boardId
    state: LabelRow | None = label
    attempts = ATTEMPTS["delete_label"]
    for attempt in range(attempts):
        if state is None:
            state = get(board_id, label.labelId)
            if state is None:
                raise db.Missing(label.labelId)
        tasks = carriers(board_id, label.labelId)
        todo = tasks[:MAX_DETACH_PER_CALL]
        remaining = len(tasks) - len(todo)
        chunks = [todo[i : i + DETACH_CHUNK] for i in range(0, len(todo), DETACH_CHUNK)] or [[]]
        stamp = clock.now_iso()
        act = activity_for([t.taskId for t in todo], remaining)
        rev = int(state.rev or 0)
        label_key = (state.PK, state.SK)
        try:
            for i, chunk in enumerate(chunks):
                first, last = i == 0, i == len(chunks) - 1 and remaining == 0

                def build(
                    tx: Any,
                    chunk: list[TaskDetailRow] = chunk,
                    first: bool = first,
                    last: bool = last,
                    rev: int = rev,
                    label_key: tuple[str, str] = label_key,
                    state: LabelRow = state,
                    stamp: str = stamp,
                    act: Any = act,
                ) -> None:  # everything bound now: the closure must not see the next attempt's values
                    for task in chunk:
                        _detach(tx, task, label.labelId)
                    cond = (Row.PK.exists() & (LabelRow.rev == rev)) if first else Row.PK.exists()
                    if last:
                        tx.delete(LabelRow(*label_key), condition=cond)
                        tx.delete(
                            LabelNameRow(*keys.label_name_claim(board_id, state.name)),
                            condition=LabelNameRow.labelId == label.labelId,
                        )
                        tx.update(
                            BoardRow(*keys.board_head(board_id)),
                            actions=[BoardRow.labelCount.add(-1)],
                            condition=Row.PK.exists(),
                        )
                    else:
                        actions: list[Action] = [LabelRow.taskCount.add(-len(chunk))]
                        if first and not state.deletingAt:
                            actions.append(LabelRow.deletingAt.set(stamp))
                        tx.update(LabelRow(*label_key), actions=actions, condition=cond)
                    board_store.open_check(tx, board_id)
                    members.guard(tx, workspace_id, actor_id)
                    if first:
                        tx.save(act)

                db.transact(build)
        except db.ConditionFailed as failure:
            if members.guard_failed(failure, workspace_id, actor_id):
                raise db.Missing(workspace_id) from None
            if board_store.closed(failure, board_id):
                raise board_store.BoardArchived(board_id) from None
            # A task changed, or the label did (labelled meanwhile, or renamed): read both again.
            # Chunks that committed stay done; their tasks no longer carry the label.
            state = None
            if attempt + 1 < attempts:
                backoff(attempt)
            continue
        return Deleted([t.taskId for t in todo], remaining)
    raise Contended("delete_label", attempts)


# -- a task's labels ---------------------------------------------------------------------------
def set_for_task(
    current: TaskDetailRow,
    wanted: list[str],
    *,
    workspace_id: str,
    actor_id: str,
    activity_for: Callable[[TaskDetailRow, list[str], list[str]], ActivityRow],
    result: Callable[[TaskDetailRow, list[str]], R],
) -> R:
    """Replace the task's labels with ``wanted`` (ids already checked against the board's labels).

    A compare-and-set through :func:`domain.store.tasks.write` (so an archived board refuses
    it): each added label is updated (``taskCount`` +1, ``rev`` +1) under "exists and not being
    deleted", each removed one (``taskCount`` -1, ``rev`` +1) under "exists". A label deleted
    meanwhile fails its condition: an added one raises :class:`LabelGone`, a removed one is
    simply dropped on the next attempt. The same set (in any order) writes nothing;
    ``result(task, previous ids)`` builds the answer either way.

    Raises:
        LabelGone, TaskArchived, BoardArchived, Missing, Contended.
    """
    gone: set[str] = set()
    board_id = current.boardId

    def plan(state: TaskDetailRow) -> Step[TaskDetailRow, R]:
        if state.archivedAt:
            raise TaskArchived(state.taskId)
        before = list(state.labelIds or [])
        if set(before) == set(wanted):
            return Unchanged(result(state, before))
        added = [x for x in wanted if x not in before]
        removed = [x for x in before if x not in wanted and x not in gone]
        detail = task_store.copy(state)
        detail.labelIds = list(wanted)
        detail.updatedAt = clock.next_stamp(state.updatedAt)
        act = activity_for(detail, added, [x for x in before if x not in wanted])

        def extra(tx: Any) -> None:
            for x in added:
                tx.update(
                    LabelRow(*keys.label(board_id, x)),
                    actions=[LabelRow.taskCount.add(1), LabelRow.rev.add(1)],
                    condition=Row.PK.exists() & LabelRow.deletingAt.does_not_exist(),
                )
            for x in removed:
                tx.update(
                    LabelRow(*keys.label(board_id, x)),
                    actions=[LabelRow.taskCount.add(-1), LabelRow.rev.add(1)],
                    condition=Row.PK.exists(),
                )

        step = task_store.write(
            detail,
            state.updatedAt,
            workspace_id=workspace_id,
            actor_id=actor_id,
            activity=act,
            result=lambda: result(detail, before),
            extra=extra,
            replan_on=state,
        )

        def retry(failure: db.ConditionFailed) -> TaskDetailRow:
            lost = [x for x in added if failure.hit(*keys.label(board_id, x))]
            if lost:
                raise LabelGone(lost)
            dropped = [x for x in removed if failure.hit(*keys.label(board_id, x))]
            gone.update(dropped)
            return step.retry(failure)

        return Write(build=step.build, result=step.result, retry=retry)

    return task_store.edit("set_task_labels", current, plan)
