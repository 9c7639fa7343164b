"""Task links: directed edges between two tasks of one workspace, and the dependency cycle check.

Keys: :func:`domain.store.keys.link_out` on the source's side partition and
:func:`domain.store.keys.link_in` on the target's — the two halves of one edge, always written
and deleted in one transaction — plus a per-task counter (:func:`~domain.store.keys.link_count`,
at most :data:`MAX_LINKS_PER_TASK`) and the workspace's link graph version
(:func:`~domain.store.keys.link_graph`). docs/data-model.md ("Task links") has the layout.

BLOCKS and DEPENDS_ON are one relation for the cycle check, "X must finish before Y"
(:func:`before`); :func:`find_cycle` walks it breadth-first from the new edge's head, one level at
a time with each level's Queries in parallel, and gives up past :data:`MAX_VISITED` tasks.
:func:`add` serialises dependency inserts per workspace: the version read before the walk is a
condition of the insert, and a lost race walks again on the graph the winner left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from domain import ids
from domain.store import boards as board_store
from domain.store import db, keys, members, parallel
from domain.store.cas import Write, compare_and_set
from domain.store.errors import StoreError
from domain.store.models import ActivityRow, BoardEntryRow, LinkCountRow, LinkGraphRow, LinkRow, Row, TaskDetailRow

KINDS = ("BLOCKS", "DEPENDS_ON", "RELATES_TO", "DUPLICATES")
DEPENDENCY_KINDS = frozenset({"BLOCKS", "DEPENDS_ON"})
MAX_LINKS_PER_TASK = 200  # edge halves per task (outgoing + incoming)
MAX_VISITED = 500  # tasks the cycle check may query for one insert


# -- failures ----------------------------------------------------------------------------------
class Exists(StoreError):
    """The edge is already stored (``stored``): adding it again changes nothing."""

    def __init__(self, stored: LinkRow) -> None:
        super().__init__(stored.SK)
        self.stored = stored


class Gone(StoreError):
    """The edge to remove is not stored (any more)."""


class Cycle(StoreError):
    """The new dependency would close a cycle; ``path`` is its task keys, first = last."""

    def __init__(self, path: list[str]) -> None:
        super().__init__(" -> ".join(path))
        self.path = path


class TooLarge(StoreError):
    """The cycle check would have to query more than :data:`MAX_VISITED` tasks."""


class TaskClosed(StoreError):
    """``task_id`` is archived (or gone): it takes no new links."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


class BoardClosed(StoreError):
    """The board of ``task_id`` is archived (or gone): its tasks are read-only."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


class Full(StoreError):
    """``task_id`` already holds :data:`MAX_LINKS_PER_TASK` edges."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


# -- the edge ----------------------------------------------------------------------------------
def before(from_task_id: str, kind: str, to_task_id: str) -> tuple[str, str]:
    """The edge as "X must finish before Y": ``A BLOCKS B`` and ``B DEPENDS_ON A`` are both (A, B)."""
    return (from_task_id, to_task_id) if kind == "BLOCKS" else (to_task_id, from_task_id)


def halves(
    *, from_task: TaskDetailRow, kind: str, to_task: TaskDetailRow, workspace_id: str, actor_id: str, at: str
) -> tuple[LinkRow, LinkRow]:
    """The two items of a new edge: outgoing on the source, incoming on the target."""
    common: dict[str, Any] = {
        "fromTaskId": from_task.taskId,
        "toTaskId": to_task.taskId,
        "linkKind": kind,
        "fromKey": from_task.key,
        "toKey": to_task.key,
        "workspaceId": workspace_id,
        "createdAt": at,
        "createdBy": actor_id,
    }
    out = LinkRow(*keys.link_out(from_task.taskId, kind, to_task.taskId), direction="OUT", **common)
    inn = LinkRow(*keys.link_in(to_task.taskId, kind, from_task.taskId), direction="IN", **common)
    return out, inn


def _board_of(task_id: str) -> str:
    ref = ids.parse_task(task_id)
    assert ref is not None, task_id
    return ref.board_id


def _number_of(task_id: str) -> int:
    ref = ids.parse_task(task_id)
    assert ref is not None, task_id
    return ref.number


def _boards_open(tx: Any, out: LinkRow) -> None:
    for board_id in dict.fromkeys((_board_of(out.fromTaskId), _board_of(out.toTaskId))):
        board_store.open_check(tx, board_id)


def _failed(failure: db.ConditionFailed, out: LinkRow, actor_id: str) -> Exception:
    """The store error for a failed link transaction (other than the edge or version conditions)."""
    if members.guard_failed(failure, out.workspaceId, actor_id):
        return db.Missing(out.workspaceId)
    for task_id in (out.fromTaskId, out.toTaskId):
        if board_store.closed(failure, _board_of(task_id)):
            return BoardClosed(task_id)
    for task_id in (out.fromTaskId, out.toTaskId):
        if failure.hit(*keys.task_full(_board_of(task_id), _number_of(task_id))):
            return TaskClosed(task_id)
    for task_id in (out.fromTaskId, out.toTaskId):
        if failure.hit(*keys.link_count(task_id)):
            return Full(task_id)
    return db.Missing("link")


# -- the cycle check ---------------------------------------------------------------------------
def successors(task_id: str) -> list[tuple[str, str]]:
    """``(task id, key)`` of every task ``task_id`` must finish before (one Query, all pages)."""
    lo, hi = keys.DEPENDENCY_RANGE
    out: list[tuple[str, str]] = []
    for row in Row.query(keys.task_side_partition(task_id), Row.SK.between(lo, hi), consistent_read=True):
        if not isinstance(row, LinkRow):
            continue
        if row.direction == "OUT":  # task_id BLOCKS row.toTaskId
            out.append((row.toTaskId, row.toKey))
        else:  # row.fromTaskId DEPENDS_ON task_id
            out.append((row.fromTaskId, row.fromKey))
    return out


def find_cycle(head: tuple[str, str], tail: tuple[str, str], *, limit: int = MAX_VISITED) -> list[str] | None:
    """Whether a new "tail before head" dependency closes a cycle: the task keys of a path from
    ``head`` to ``tail`` along existing dependencies, or ``None``. ``head``/``tail`` are
    ``(task id, key)``.

    Breadth-first from ``head``: each level's Queries go out together on the I/O pool, and the
    walk stops as soon as ``tail`` is found (so the path is a shortest one). Cost: one Query per
    task queried, one round trip per level (docs/data-model.md, "Task links").

    Raises:
        TooLarge: more than ``limit`` tasks would have to be queried.
    """
    head_id, tail_id = head[0], tail[0]
    parent: dict[str, str | None] = {head_id: None}
    key_of: dict[str, str] = {head_id: head[1]}
    frontier = [head_id]
    queried = 0
    while frontier:
        if queried + len(frontier) > limit:
            raise TooLarge(queried)
        queried += len(frontier)
        futures = [parallel.submit(successors, t) for t in frontier]
        level: list[str] = []
        for task_id, future in zip(frontier, futures, strict=True):
            for other, other_key in future.result():
                if other == tail_id:
                    chain = [task_id]
                    step = parent[task_id]
                    while step is not None:
                        chain.append(step)
                        step = parent[step]
                    return [key_of[t] for t in reversed(chain)] + [tail[1]]
                if other not in parent:
                    parent[other], key_of[other] = task_id, other_key
                    level.append(other)
        frontier = level
    return None


# -- writes ------------------------------------------------------------------------------------
def _insert(tx: Any, out: LinkRow, inn: LinkRow, *, actor_id: str, activity: ActivityRow) -> None:
    tx.save(out, condition=Row.PK.does_not_exist(), return_values="ALL_OLD")
    tx.save(inn, condition=Row.PK.does_not_exist())
    for task_id in (out.fromTaskId, out.toTaskId):
        counter = LinkCountRow(*keys.link_count(task_id))
        tx.update(
            counter,
            actions=[LinkCountRow.count.add(1), LinkCountRow.kind.set(LinkCountRow)],
            condition=LinkCountRow.count.does_not_exist() | (LinkCountRow.count < MAX_LINKS_PER_TASK),
        )
        tx.condition_check(
            TaskDetailRow,
            *keys.task_full(_board_of(task_id), _number_of(task_id)),
            condition=Row.PK.exists() & TaskDetailRow.archivedAt.does_not_exist(),
        )
    _boards_open(tx, out)
    members.guard(tx, out.workspaceId, actor_id)
    tx.save(activity)


def _exists(failure: db.ConditionFailed, out: LinkRow) -> Exists | None:
    if failure.hit(out.PK, out.SK):
        stored = failure.item(out.PK, out.SK)
        return Exists(LinkRow.from_raw_data(stored) if stored else out)
    return None


def add(
    out: LinkRow,
    inn: LinkRow,
    *,
    actor_id: str,
    activity: ActivityRow,
    version: int | None = None,
    check: Callable[[], None] | None = None,
) -> None:
    """Store a new edge (both halves, both counters +1) in one transaction.

    For a dependency kind pass the link graph ``version`` read before anything else (``None``
    when the item does not exist yet) and ``check``, the cycle check; the transaction then
    advances the version under ``version = <read>``, and a lost race runs ``check`` again on
    the version the failure returned (attempt budget ``add_task_link``).

    Raises:
        Exists: the edge is stored already (e.g. a concurrent identical add won).
        Cycle, TooLarge: from ``check``. TaskClosed, BoardClosed, Full. Missing: the caller left.
        Contended: every attempt lost the version to other dependency inserts.
    """
    if out.linkKind not in DEPENDENCY_KINDS:
        try:
            db.transact(lambda tx: _insert(tx, out, inn, actor_id=actor_id, activity=activity))
        except db.ConditionFailed as failure:
            raise _exists(failure, out) or _failed(failure, out, actor_id) from None
        return
    graph_key = keys.link_graph(out.workspaceId)

    def plan(read: int | None) -> Write[int | None, None]:
        if check is not None:
            check()

        def build(tx: Any) -> None:
            _insert(tx, out, inn, actor_id=actor_id, activity=activity)
            guard = Row.PK.does_not_exist() if read is None else (LinkGraphRow.version == read)
            tx.update(
                LinkGraphRow(*graph_key),
                actions=[LinkGraphRow.version.set((read or 0) + 1), LinkGraphRow.kind.set(LinkGraphRow)],
                condition=guard,
                return_values="ALL_OLD",
            )

        def retry(failure: db.ConditionFailed) -> int | None:
            exists = _exists(failure, out)
            if exists is not None:
                raise exists
            if failure.hit(*graph_key):
                stored = failure.item(*graph_key)
                return int(LinkGraphRow.from_raw_data(stored).version) if stored else None
            raise _failed(failure, out, actor_id)

        return Write(build=build, result=lambda: None, retry=retry)

    compare_and_set("add_task_link", version, plan)


def remove(out: LinkRow, *, actor_id: str, activity: ActivityRow) -> None:
    """Delete both halves of a stored edge and uncount it on both ends, in one transaction.

    Raises:
        Gone: the edge was removed meanwhile. BoardClosed. Missing: the caller left.
    """

    def build(tx: Any) -> None:
        tx.delete(LinkRow(out.PK, out.SK), condition=Row.PK.exists())
        tx.delete(LinkRow(*keys.link_in(out.toTaskId, out.linkKind, out.fromTaskId)))
        for task_id in (out.fromTaskId, out.toTaskId):
            tx.update(LinkCountRow(*keys.link_count(task_id)), actions=[LinkCountRow.count.add(-1)])
        _boards_open(tx, out)
        members.guard(tx, out.workspaceId, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(out.PK, out.SK):
            raise Gone(out.SK) from None
        raise _failed(failure, out, actor_id) from None


# -- reads -------------------------------------------------------------------------------------
def rows(task_id: str) -> list[Row]:
    """Every edge half of the task (one Query ``SK begins_with LN#``; ≤ 200 items, one page)."""
    return list(
        Row.query(keys.task_side_partition(task_id), Row.SK.startswith(keys.LINKS_PREFIX), consistent_read=True)
    )


@dataclass(frozen=True)
class LinkEnd:
    """One link of a task seen from that task: the kind, which way it points, and the other end
    as it is now (``title``/``board_name`` are ``None`` only if that item no longer exists)."""

    kind: str
    direction: str  # "outgoing": this task <kind> the other; "incoming": the other <kind> this task
    task_id: str
    key: str
    title: str | None
    board_id: str
    board_name: str | None
    archived_at: str | None
    board_archived_at: str | None
    linked_at: str
    linked_by: str


def _sort_key(end: LinkEnd) -> tuple[int, int, str]:
    return KINDS.index(end.kind) if end.kind in KINDS else len(KINDS), _number_of(end.task_id), end.task_id


def links_of(items: Iterable[Any]) -> list[LinkEnd]:
    """The links among ``items`` — the rows of a Query over a task's side partition
    (``SIDECAR_RANGE`` for a detailed get_task, or :func:`rows`) — with the other ends resolved
    in one BatchGetItem of their full items and board entries (none when there are no links).
    Ordered by kind, then the other task's number."""
    edges = [r for r in items if isinstance(r, LinkRow)]
    if not edges:
        return []
    others = [(e.toTaskId, e.toKey) if e.direction == "OUT" else (e.fromTaskId, e.fromKey) for e in edges]
    wanted: dict[tuple[str, str], None] = {}
    for other, _ in others:
        wanted[keys.task_full(_board_of(other), _number_of(other))] = None
    for other, _ in others:
        wanted[board_store.entry_key(_board_of(other))] = None  # name and archived state
    found = {(r.PK, r.SK): r for r in Row.batch_get(list(wanted), consistent_read=True)}
    ends = []
    for edge, (other, other_key) in zip(edges, others, strict=True):
        board_id = _board_of(other)
        task = found.get(keys.task_full(board_id, _number_of(other)))
        board = found.get(board_store.entry_key(board_id))
        task = task if isinstance(task, TaskDetailRow) else None
        board = board if isinstance(board, BoardEntryRow) else None
        ends.append(
            LinkEnd(
                kind=edge.linkKind,
                direction="outgoing" if edge.direction == "OUT" else "incoming",
                task_id=other,
                key=other_key,
                title=task.title if task else None,
                board_id=board_id,
                board_name=board.name if board else None,
                archived_at=task.archivedAt if task else None,
                board_archived_at=board.archivedAt if board else None,
                linked_at=edge.createdAt,
                linked_by=edge.createdBy,
            )
        )
    return sorted(ends, key=_sort_key)
