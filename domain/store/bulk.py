"""Bulk task writes: the two-step bulk create, and chunked edits with per-chunk markers.

A transaction holds at most 100 actions and 4 MB, and a task is two items, so 50 tasks do not
fit one transaction with their counters and activity (docs/data-model.md, "Bulk writes").

* :func:`create_many` commits the task *set* in one transaction — the compact rows, the
  workspace counter claiming every number at once, the column and board counters, the
  membership guard, one activity row for the batch and the creation marker — and then writes
  each task's full item, number pointer and own ``task.created`` activity row together, in as
  few further transactions as 100 actions and :data:`MAX_TX_BYTES` allow (one for up to 33
  ordinary tasks, two for 50). The call retries that second step
  itself; a retry with the same ``idempotencyKey`` meets the marker and completes whatever the
  second step left undone.
* :func:`run_chunks` applies planned edits chunk by chunk (:class:`Chunk`, built by the tool's
  planner so the chunk fits the limits). A keyed call puts a :class:`~domain.store.models.BulkChunkRow`
  per chunk index in that chunk's transaction, recording what it applied; a retry with the
  same key meets the markers of the chunks already committed, takes their recorded results
  and never applies an item twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fractional_indexing import generate_n_keys_between

from domain import ids
from domain.store import boards as board_store
from domain.store import db, keys, members, search_marks
from domain.store import tasks as task_store
from domain.store.cas import Write, compare_and_set
from domain.store.errors import StoreError
from domain.store.idempotency_markers import (
    MARKER_TTL_SECONDS,
    IdempotencyMismatch,
    earlier_entity,
    marker_digest,
    put_marker,
)
from domain.store.models import (
    ActivityRow,
    BoardRow,
    BulkChunkRow,
    ColumnRow,
    CreationMarkerRow,
    Row,
    TaskDetailRow,
    TaskNumberRow,
    TaskRow,
    WorkspaceRow,
)
from domain.store.retry import ATTEMPTS, Contended, backoff

MAX_ACTIONS = 100  # DynamoDB's limit per TransactWriteItems
# DynamoDB refuses a transaction over 4 MB. Item sizes below are measured on the serialized
# JSON (attribute names, type tags and UTF-8 values: more than DynamoDB counts), and a chunk is
# closed before MAX_TX_BYTES, leaving room for keys, conditions and the request's own framing.
MAX_TX_BYTES = 3_500_000
MAX_ITEMS = 50
#: the search index's batch records ride in the task set's transaction when the tasks' texts
#: take at most this many bytes (50 tasks with 20,000-character descriptions may not: then each
#: second-step transaction carries the records of its own tasks)
FIRST_TX_TEXT_BYTES = 2_500_000
# The second step of a bulk create writes four items per task: full item, number pointer, the
# task's own creation entry (so list_activity {taskId} starts with it, as for create_task) and
# the task's recent-activity item that copies it (domain.store.activity.mirror).
SECOND_STEP_ACTIONS_PER_TASK = 4


def item_bytes(row: Row) -> int:
    """An upper bound of ``row``'s size as DynamoDB counts it (UTF-8 of the serialized item)."""
    return len(json.dumps(row.serialize(), ensure_ascii=False, separators=(",", ":")).encode())


# -- bulk create ---------------------------------------------------------------------------------
class BoardClosed(StoreError):
    """The column's board is archived (or gone): its tasks are read-only."""


@dataclass(frozen=True)
class NewTask:
    title: str
    description: str
    priority: str
    due: str | None


@dataclass
class Created:
    """The tasks of a bulk create in input order; ``column`` is the column as read (``None`` when
    an earlier keyed call made them); ``complete`` is False when the full items and number
    pointers could not all be written in this call (a retry with the same key finishes them)."""

    tasks: list[TaskDetailRow]
    column: ColumnRow | None
    complete: bool


Transient = Callable[
    [BaseException], bool
]  # whether a store exception is a failure to reach the store (the tool layer's domain.faults)
EntryFor = Callable[[TaskDetailRow], ActivityRow]  # a task's own creation entry (the tool words it)


def create_many(
    *,
    workspace_id: str,
    board_id: str,
    column_id: str,
    actor_id: str,
    items: Sequence[NewTask],
    activity_for: Callable[[list[TaskDetailRow], ColumnRow], ActivityRow],
    marker: CreationMarkerRow | None,
    transient: Transient,
    entry_for: EntryFor,
    first_read: dict[tuple[str, str], Any] | None = None,
    first_column: ColumnRow | None = None,
) -> Created:
    """Create ``items`` at the bottom of a column, in order, with consecutive workspace numbers.

    ``activity_for`` words the batch's row (first step); ``entry_for`` each task's own
    ``task.created`` row, written with its full item (second step), so a task whose full item
    exists always has its creation entry, whichever call wrote it. ``transient`` tells which
    exceptions of the second step are storage failures worth retrying.

    Raises:
        Missing: the column or the caller's membership is gone.
        tasks.ColumnArchived: the column is archived.
        BoardClosed: the board is archived.
        IdempotencyMismatch, Contended.
    """
    col_key = keys.column(board_id, column_id)
    pending = [first_read[col_key]] if first_read and col_key in first_read else []
    if first_column is not None:  # the column read with the membership (the spec's "column" plan)
        pending = [first_column]
    count = len(items)
    claimed: list[tuple[int, WorkspaceRow]] = []

    def plan(_: None) -> Write[None, tuple[list[TaskDetailRow], ColumnRow]]:
        column = task_store.planned_column(pending, col_key, column_id)
        if column.archivedAt:
            raise task_store.ColumnArchived(column_id)
        if not claimed:  # one block of consecutive numbers per call, kept across attempts (tasks.claim_numbers)
            claimed.append(task_store.claim_numbers(workspace_id, count))
        first, wsrow = claimed[0]
        ranks = generate_n_keys_between(column.lastRank, None, count)
        details = []
        for offset, (item, rank) in enumerate(zip(items, ranks, strict=True)):
            details.append(
                task_store.new_detail(
                    workspace_prefix=wsrow.taskPrefix,
                    board_id=board_id,
                    column_id=column_id,
                    number=first + offset,
                    rank=rank,
                    title=item.title,
                    priority=item.priority,
                    due=item.due,
                    description=item.description,
                    created_by=actor_id,
                )
            )
        stamp = details[0].createdAt
        for d in details:
            d.createdAt = d.updatedAt = stamp
        act = activity_for(details, column)
        if marker is not None:
            marker.entityId = details[0].taskId
        last_rank = column.lastRank
        texts_first = _texts_in_first(details)

        def build(tx: Any) -> None:
            put_marker(tx, marker)
            if texts_first:  # the search index's durable record of the set's texts (docs/search.md)
                for d in details:
                    search_marks.mark_task(tx, d, fresh=True, marker=False)
                search_marks.flush_batch(tx)
            col_cond = ColumnRow.archivedAt.does_not_exist() & (
                ColumnRow.lastRank == last_rank if last_rank else ColumnRow.lastRank.does_not_exist()
            )
            tx.update(
                ColumnRow(*col_key),
                actions=[ColumnRow.lastRank.set(ranks[-1]), ColumnRow.taskCount.add(count)],
                condition=col_cond & Row.PK.exists(),
                return_values="ALL_OLD",
            )
            tx.update(
                BoardRow(*keys.board_head(board_id)), actions=[BoardRow.taskCount.add(count)], condition=Row.PK.exists()
            )
            board_store.open_check(tx, board_id)
            for d in details:
                task_store.put_rows(tx, d, previous=None, part="compact")
            members.guard(tx, workspace_id, actor_id)
            tx.save(act)

        def retry(failure: db.ConditionFailed) -> None:
            earlier = earlier_entity(failure, marker)
            if earlier:
                raise task_store.Earlier(earlier)
            if board_store.closed(failure, board_id) or failure.hit(*keys.board_head(board_id)):
                raise BoardClosed(board_id)
            if members.guard_failed(failure, workspace_id, actor_id):
                raise db.Missing(column_id)
            if failure.hit(*col_key):
                stored = failure.item(*col_key)
                if not stored:
                    raise db.Missing(column_id)
                pending.append(
                    ColumnRow.from_raw_data(stored)
                )  # the last rank moved (another create won): plan on the image
            if any(failure.hit(*keys.task_compact(board_id, int(d.number))) for d in details):
                claimed.clear()  # a number is taken (a counter set back by hand): claim another block

        return Write(build=build, result=lambda: (details, column), retry=retry)

    try:
        details, column = compare_and_set("bulk_create_tasks", None, plan)
    except Exception as failed:
        if claimed:
            task_store.give_back(
                workspace_id, board_id, claimed[0][0], count, failed, definite=isinstance(failed, BoardClosed)
            )
        if not isinstance(failed, task_store.Earlier):
            raise
        earlier = failed
        details, present = _recover(earlier.task_id, items, actor_id)
        missing = set(range(len(details))) - present
        return Created(
            details,
            None,
            _second_step(details, workspace_id, known_missing=missing, transient=transient, entry_for=entry_for),
        )
    return Created(
        details,
        column,
        _second_step(
            details, workspace_id, known_missing=set(range(len(details))), transient=transient, entry_for=entry_for
        ),
    )


def _recover(first_task_id: str, items: Sequence[NewTask], actor_id: str) -> tuple[list[TaskDetailRow], set[int]]:
    """The tasks an earlier call with the same key created, and the indices whose full item
    exists: those are read (without their description), the others rebuilt from their compact
    row and the arguments — identical, as the key guarantees (one BatchGetItem)."""
    ref = ids.parse_task(first_task_id)
    if ref is None:
        raise db.Missing(first_task_id)
    numbers = [ref.number + i for i in range(len(items))]
    wanted = [keys.task_full(ref.board_id, n) for n in numbers] + [keys.task_compact(ref.board_id, n) for n in numbers]
    shown = ["PK", "SK", "kind", "createdBy", "archivedAt", *task_store.COMPACT_FIELDS]
    got = {(r.PK, r.SK): r for r in Row.batch_get(wanted, consistent_read=True, attributes_to_get=shown)}
    out: list[TaskDetailRow] = []
    present: set[int] = set()
    for i, (n, item) in enumerate(zip(numbers, items, strict=True)):
        full = got.get(keys.task_full(ref.board_id, n))
        if isinstance(full, TaskDetailRow):
            full.description = item.description
            present.add(i)
            out.append(full)
            continue
        compact = got.get(keys.task_compact(ref.board_id, n))
        if not isinstance(compact, TaskRow):
            raise db.Missing(ids.task_id(ref.board_id, n))
        fields = {f: getattr(compact, f) for f in task_store.COMPACT_FIELDS}
        out.append(
            TaskDetailRow(*keys.task_full(ref.board_id, n), **fields, description=item.description, createdBy=actor_id)
        )
    return out, present


def _texts_in_first(details: list[TaskDetailRow]) -> bool:
    """Whether the search records of ``details`` go in the task set's transaction (see
    :data:`FIRST_TX_TEXT_BYTES`); decided on the texts alone, so a keyed retry decides the same."""
    return (
        sum(len(json.dumps([d.title or "", d.description or ""], ensure_ascii=False).encode()) for d in details)
        <= FIRST_TX_TEXT_BYTES
    )


def _full_item_chunks(
    details: list[TaskDetailRow],
    workspace_id: str,
    wanted: list[int],
    entries: dict[int, ActivityRow] | None = None,
    *,
    records: bool = False,
) -> list[list[int]]:
    """Indices of ``details`` grouped into transactions of at most 100 actions (full item,
    pointer and creation entry per task: :data:`SECOND_STEP_ACTIONS_PER_TASK`; with ``records``
    the search batch records of their texts, one per :data:`search_marks.BATCH_BYTES`) and
    :data:`MAX_TX_BYTES`."""
    chunks: list[list[int]] = []
    size = text = 0
    for i in wanted:
        d = details[i]
        pointer = TaskNumberRow(*keys.task_number(workspace_id, int(d.number)), taskId=d.taskId)
        cost = item_bytes(d) + item_bytes(pointer) + (item_bytes(entries[i]) if entries and i in entries else 0)
        entry = search_marks.entry_bytes(d) if records else 0
        batch_items = (text + entry) // search_marks.BATCH_BYTES + 2 if records else 0  # an upper bound of the records
        if (
            not chunks
            or SECOND_STEP_ACTIONS_PER_TASK * (len(chunks[-1]) + 1) + batch_items > MAX_ACTIONS
            or size + cost + entry > MAX_TX_BYTES
        ):
            chunks.append([])
            size = text = 0
        chunks[-1].append(i)
        size += cost + entry
        text += entry
    return chunks


def _existing_full_items(details: list[TaskDetailRow]) -> set[int]:
    """Indices whose full item exists (one BatchGetItem of keys only)."""
    wanted = {keys.task_full(d.boardId, int(d.number)): i for i, d in enumerate(details)}
    got = Row.batch_get(list(wanted), consistent_read=True, attributes_to_get=["PK", "SK", "kind"])
    return {wanted[(r.PK, r.SK)] for r in got}


def _second_step(
    details: list[TaskDetailRow],
    workspace_id: str,
    *,
    known_missing: set[int],
    transient: Transient,
    entry_for: EntryFor,
) -> bool:
    """Write the full items, number pointers and creation entries that do not exist yet; True
    when all exist.

    Each transaction puts a task's full item and pointer together under "must not exist", with
    its creation entry, so a transaction that fails its conditions was (partly) written by a
    concurrent retry (and the entries with it): the missing set is read again. Storage failures
    are retried ``ATTEMPTS["bulk_create_second_step"]`` times on top of botocore's own retries;
    after that the caller reports the step unfinished.
    """
    missing = set(known_missing)
    records = not _texts_in_first(details)  # else the task set's transaction holds them
    entries = {i: entry_for(details[i]) for i in missing}
    attempts = ATTEMPTS["bulk_create_second_step"]
    for attempt in range(attempts):
        try:
            for chunk in _full_item_chunks(details, workspace_id, sorted(missing), entries, records=records):

                def build(tx: Any, chunk: list[int] = chunk) -> None:
                    for i in chunk:
                        d = details[i]
                        task_store.put_rows(tx, d, previous=None, part="full")
                        tx.save(
                            TaskNumberRow(*keys.task_number(workspace_id, int(d.number)), taskId=d.taskId),
                            condition=Row.PK.does_not_exist(),
                        )
                        tx.save(entries[i])
                    if records:
                        search_marks.flush_batch(tx)

                db.transact(build)
                missing -= set(chunk)
            return True
        except db.ConditionFailed:
            missing = set(range(len(details))) - _existing_full_items(details)
        except Exception as exc:  # storage faults: retried, then reported unfinished
            if not (transient(exc) or isinstance(exc, Contended)):
                raise
            if attempt + 1 == attempts:
                return False
            backoff(attempt)
    return not missing


# -- chunked edits -------------------------------------------------------------------------------
@dataclass
class Chunk:
    """One transaction of a bulk edit, built by the tool's planner within the limits.

    ``indices`` are the input positions it applies; ``applied`` their answers as recorded in the
    chunk marker (``{"i": index, ...}``); ``build`` adds every action but the marker."""

    indices: list[int]
    applied: list[dict[str, Any]]
    build: Callable[[Any], None]
    actions: int
    context: Any = None  # the planner's own bookkeeping for :meth:`Planner.committed` / :meth:`Planner.failed`


class Planner(Protocol):
    def next_chunk(self, reserved: int) -> Chunk | None:
        """The next transaction (at most ``MAX_ACTIONS - reserved`` actions), or ``None`` when
        no pending item needs a write (items that need none are resolved on the way)."""

    def committed(self, chunk: Chunk) -> None: ...

    def failed(self, chunk: Chunk, failure: db.ConditionFailed) -> None:
        """Re-plan after a failed condition: new states from the returned images, errors for
        items that can no longer be applied."""

    def recorded(self, applied: list[dict[str, Any]]) -> None:
        """Items an earlier call with the same key applied (from its chunk marker)."""

    def give_up(self, indices: list[int], error: Any) -> None:
        """Resolve ``indices`` (and, for a halt, every pending item) with ``error``."""

    def pending(self) -> list[int]: ...


@dataclass
class ChunkMarkers:
    """The chunk markers of one keyed bulk call (``None`` digest: a call without a key)."""

    digest: str | None
    tool: str
    args_hash: str
    seen: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, user_id: str, workspace_id: str, tool: str, key: str | None, args_hash: str) -> ChunkMarkers:
        return cls(marker_digest(user_id, workspace_id, tool, key) if key else None, tool, args_hash)

    def row(self, chunk: int, applied: list[dict[str, Any]]) -> BulkChunkRow | None:
        if self.digest is None:
            return None
        return BulkChunkRow(
            *keys.bulk_chunk_marker(self.digest, chunk),
            argsHash=self.args_hash,
            tool=self.tool,
            applied=applied,
            ttl=int(time.time()) + MARKER_TTL_SECONDS,
        )

    def stored(self, failure: db.ConditionFailed, row: BulkChunkRow | None) -> list[dict[str, Any]] | None:
        """The applied items of an earlier call's marker at this index, if that is what failed."""
        if row is None or not failure.hit(row.PK, row.SK):
            return None
        existing = BulkChunkRow.from_raw_data(failure.item(row.PK, row.SK) or {})
        if existing.argsHash != self.args_hash:
            raise IdempotencyMismatch(existing.tool)
        return list(existing.applied or [])

    def read_all(self, limit: int = MAX_ITEMS) -> list[list[dict[str, Any]]]:
        """Every marker of this key (one BatchGetItem): for a retry that found nothing to write."""
        if self.digest is None:
            return []
        wanted = [keys.bulk_chunk_marker(self.digest, i) for i in range(limit)]
        found = [r for r in BulkChunkRow.batch_get(wanted, consistent_read=True) if isinstance(r, BulkChunkRow)]
        for r in found:
            if r.argsHash != self.args_hash:
                raise IdempotencyMismatch(r.tool)
        return [list(r.applied or []) for r in found]


@dataclass
class Run:
    """How a chunked run ended: ``transactions`` committed by this call; ``halted`` is the store
    failure that stopped it after something committed (its items are resolved with it)."""

    transactions: int = 0
    halted: BaseException | None = None


def run_chunks(
    planner: Planner,
    markers: ChunkMarkers,
    *,
    operation: str,
    transient: Transient,
    halt_error: Callable[[BaseException], Any],
    conflict_error: Any,
) -> Run:
    """Apply the planner's chunks one transaction at a time; see the module docstring.

    A failed condition re-plans the chunk (up to ``ATTEMPTS[operation]`` attempts, then its
    items get ``conflict_error``); a chunk marker of an earlier call is taken as that call's
    results and the next index is tried. A store failure before anything committed raises (the
    call fails and nothing was written); after a commit, the remaining items are resolved with
    ``halt_error(exc)`` and the run stops.
    """
    run = Run()
    chunk_index = 0
    reserved = 1 if markers.digest else 0
    discovered = False
    while True:
        attempts = 0
        while True:
            chunk = planner.next_chunk(reserved)
            if chunk is None:
                if markers.digest and (discovered or run.transactions == 0):
                    # A retry: earlier calls with this key may have applied items this call
                    # found nothing to do for; their markers say so (one BatchGetItem).
                    for applied in markers.read_all():
                        planner.recorded(applied)
                return run
            marker = markers.row(chunk_index, chunk.applied)

            def build(tx: Any, chunk: Chunk = chunk, marker: BulkChunkRow | None = marker) -> None:
                if marker is not None:
                    tx.save(marker, condition=BulkChunkRow.PK.does_not_exist(), return_values="ALL_OLD")
                chunk.build(tx)

            try:
                db.transact(build)
            except db.ConditionFailed as failure:
                earlier = markers.stored(failure, marker)
                if earlier is not None:
                    planner.recorded(earlier)
                    discovered = True
                    chunk_index += 1
                    continue
                attempts += 1
                planner.failed(chunk, failure)
                if attempts >= ATTEMPTS[operation]:
                    planner.give_up(chunk.indices, conflict_error)
                    break
                backoff(attempts - 1)
                continue
            except Contended:
                planner.give_up(chunk.indices, conflict_error)
                break
            except Exception as exc:
                if not transient(exc) or run.transactions == 0:
                    raise
                run.halted = exc
                planner.give_up(planner.pending(), halt_error(exc))
                return run
            planner.committed(chunk)
            run.transactions += 1
            chunk_index += 1
            break


def guards(tx: Any, *, user_id: str, workspaces: set[str], boards: set[str]) -> None:
    """The membership guard of each workspace and the board-open check of each board a chunk touches."""
    from domain.store import boards as board_store

    for ws in sorted(workspaces):
        members.guard(tx, ws, user_id)
    for b in sorted(boards):
        board_store.open_check(tx, b)


# -- the bulk edits' transactions (bulk_update_tasks, bulk_move_tasks) --------------------------
def task_image(failure: db.ConditionFailed, ref: ids.TaskRef) -> tuple[bool, TaskDetailRow | None]:
    """What a failed chunk says of one task's full item: ``(hit, stored)``, whether the failure
    names the item, and the item as stored now (``None`` when the failure returned no image:
    the task is gone if ``hit``, else the transaction failed elsewhere)."""
    key = keys.task_full(ref.board_id, ref.number)
    stored = failure.item(*key)
    return failure.hit(*key), (TaskDetailRow.from_raw_data(stored) if stored else None)


def column_copies(columns: dict[str, dict[str, ColumnRow]]) -> dict[str, dict[str, ColumnRow]]:
    """Detached copies of board -> column id -> column (a chunk plans on them; the originals stay
    as committed until the chunk commits)."""
    return {b: {c: ColumnRow.from_raw_data(row.serialize()) for c, row in cs.items()} for b, cs in columns.items()}


def column_hit(failure: db.ConditionFailed, board_id: str, column_id: str) -> bool:
    """Whether a failed chunk's condition on this column failed (its lastRank moved, or it was archived)."""
    return failure.hit(*keys.column(board_id, column_id))


def update_columns(tx: Any, writes: Sequence[tuple[str, str, int, str | None, str | None]]) -> None:
    """bulk_move_tasks' column updates in a chunk's transaction. Each write is ``(board id,
    column id, count change, lastRank as read, new lastRank or None)``: the count moves by the
    change; a new lastRank is set only if the column is live and its lastRank is still the one
    read (absent when ``None`` was read); every column must still exist."""
    for b, c, n, last_read, new_last in writes:
        actions: list[Any] = []
        cond = ColumnRow.PK.exists()
        if new_last is not None:
            actions.append(ColumnRow.lastRank.set(new_last))
            cond = (
                cond
                & ColumnRow.archivedAt.does_not_exist()
                & (ColumnRow.lastRank == last_read if last_read else ColumnRow.lastRank.does_not_exist())
            )
        if n:
            actions.append(ColumnRow.taskCount.add(n))
        tx.update(ColumnRow(*keys.column(b, c)), actions=actions, condition=cond)
