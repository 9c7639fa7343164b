"""Activity rows: a board's log (its own partition), through GSI1 each task's log, and through
GSI3 the board's rows of one type.

Keys: :func:`domain.store.keys.activity`, :func:`domain.store.keys.task_activity`,
:func:`domain.store.keys.activity_type_index`. A row is written in the same transaction as the
mutation it records; lists read newest first.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, NamedTuple

from ulid import ULID

from domain import clock
from domain.store import keys, witness
from domain.store.models import ActivityRow, RecentActivityRow, Row

RECENT_KEEP = 10  # the entries a detailed get_task shows
RECENT_CAP = 16  # entries the recent item may hold before a write trims it back to RECENT_KEEP
_ENTRY_FIELDS = ("activityId", "type", "source", "actorId", "at", "summary")


def new_row(
    *,
    workspace_id: str,
    board_id: str,
    type_: str,
    summary: str,
    actor_id: str,
    source: str,
    task_id: str | None = None,
    data: dict[str, Any] | None = None,
    at: str | None = None,
) -> ActivityRow:
    """A new activity row for the board's log (and the task's, when ``task_id`` is given)."""
    when = at or clock.now_iso()
    aid = str(ULID()).lower()
    row = ActivityRow(
        *keys.activity(board_id, when, aid),
        activityId=f"act_{aid}",
        workspaceId=workspace_id,
        boardId=board_id,
        taskId=task_id,
        type=type_,
        source=source,
        actorId=actor_id,
        at=when,
        summary=summary,
        data=data,
    )
    if task_id:
        row.GSI1PK, row.GSI1SK = keys.task_activity(task_id, when, aid)
    row.GSI3PK, row.GSI3SK = keys.activity_type_index(board_id, type_, when, aid)
    return row


# -- the task's recent item (issue 25): its newest entries beside its links and subtasks ---------
_ID_PREFIX = "act_"


def _entry_json(item: dict[str, Any]) -> str:
    """The compact JSON of one activity item as a transaction puts it (DynamoDB JSON): an array
    of the :data:`_ENTRY_FIELDS` values in that order (the id without its ``act_``), then
    ``data`` when the row has any. An array instead of an object saves the field names, ~60 of
    the ~270 bytes of an entry, so the item (up to :data:`RECENT_CAP` entries) stays under the
    4 KB a consistent read unit covers beside a few subtasks (docs/decisions.md, "Lighter
    recent entries")."""
    values = [item.get(f, {}).get("S") for f in _ENTRY_FIELDS]
    if values[0] is not None:
        values[0] = values[0].removeprefix(_ID_PREFIX)
    data = item.get("data", {}).get("S")
    if data:
        values.append(json.loads(data))
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def _parse(entry: str) -> dict[str, Any]:
    """One stored entry as a dict of :data:`_ENTRY_FIELDS` and ``data``: the array form, or the
    object form items written before it still hold."""
    raw = json.loads(entry)
    if isinstance(raw, dict):
        return raw
    out: dict[str, Any] = dict(zip(_ENTRY_FIELDS, raw, strict=False))
    if out.get("activityId") is not None:
        out["activityId"] = _ID_PREFIX + out["activityId"]
    out["data"] = raw[len(_ENTRY_FIELDS)] if len(raw) > len(_ENTRY_FIELDS) else None
    return out


def _order(entry: str) -> tuple[str, str]:
    e = _parse(entry)
    return e.get("at") or "", e.get("activityId") or ""  # the GSI1 sort key's order: <at>#<ulid>


class _Held(NamedTuple):
    """A recent item as this process last wrote it: its ``v``, ``since`` and entries."""

    version: int
    since: str
    entries: list[str]


HELD_MAX = 1024  # tasks whose recent item this process remembers (~4 KB each at most)
_held: OrderedDict[tuple[str, str], _Held] = OrderedDict()
_held_lock = threading.Lock()


def _held_get(key: tuple[str, str]) -> _Held | None:
    with _held_lock:
        return _held.get(key)


def committed(tx: Any) -> None:
    """Remember the recent items ``tx`` wrote, as planned by :func:`mirror` (call after a commit).

    Why a remembered item can never trim wrongly: a trim planned from it is conditioned on its
    ``v`` and ``since``. ``v`` grows by one on every write and ``since`` is fixed when the item
    is made, so they match only when no write (of any process) came between, and then the
    remembered entries are the stored ones. A memory that is behind (another process wrote, or
    a commit's outcome was lost) fails that condition: the item comes back with ``ALL_OLD`` and
    the transaction is sent again, as without the memory. A memory is only ever written after a
    commit, so it is never ahead of the table."""
    plans: dict[tuple[str, str], _Held | None] = getattr(tx, "_recent_plans", {})
    with _held_lock:
        for key, plan in plans.items():
            if plan is None:
                _held.pop(key, None)
                continue
            _held[key] = plan
            _held.move_to_end(key)
        while len(_held) > HELD_MAX:
            _held.popitem(last=False)


def forget_held() -> None:
    """Drop every remembered recent item (tests). A stale memory is safe without it (see committed())."""
    with _held_lock:
        _held.clear()


def mirror(
    tx: Any, known: dict[tuple[str, str], dict[str, Any] | None], witnesses: dict[str, str] | None = None
) -> set[tuple[str, str]]:
    """Add to the transaction ``tx`` one update of ``keys.task_recent_activity`` for every task
    whose activity rows ``tx`` puts; return the keys of those updates.

    ``witnesses`` (``{task id: token}``, from :func:`domain.store.witness.stamp`) are the tasks
    whose full item ``tx`` writes: each token is set on the task's recent item by that same
    update, or, for a task ``tx`` puts no activity row of, by an update of its own that sets the
    token (and the item's kind) alone, unconditioned (so writers of one task still commute).

    The update appends the entries (no read, so concurrent writers of one task commute) under
    the condition that the item then holds at most :data:`RECENT_CAP`, and asks for ``ALL_OLD``
    when that fails. ``known`` holds the items such a failure returned (:func:`domain.store.db.transact`
    retries with them): for those the update writes the newest :data:`RECENT_KEEP` of the old
    and new entries, under the item's ``version`` as read. An entry is only ever removed when
    at least ``RECENT_KEEP`` newer ones stay, so the item's newest ``RECENT_KEEP`` always equal
    the task's GSI1 log's, in the same transaction as the log (tests/test_recent_activity.py).

    Without ``known``, an item this process wrote last (:func:`committed`) tells whether the
    append would overflow it: then the update trims at once, under the remembered ``v`` and
    ``since``, instead of failing first. A task written from one process then never pays the
    failed attempt and resend a full item otherwise costs every seventh write."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    log_prefix = keys.task_activity_partition("")
    for put in tx._put_items:  # noqa: SLF001 - PynamoDB keeps the serialized actions here
        item = put["Item"]
        partition = item.get("GSI1PK", {}).get("S", "")
        if item.get("kind", {}).get("S") == "Activity" and partition.startswith(log_prefix):
            by_task.setdefault(partition.removeprefix(log_prefix), []).append(item)
    out: set[tuple[str, str]] = set()
    plans: dict[tuple[str, str], _Held | None] = {}
    witnesses = witnesses or {}
    for task_id, items in by_task.items():
        pk, sk = keys.task_recent_activity(task_id)
        new = [_entry_json(i) for i in items]
        names = {"#k": "kind", "#s": "since", "#e": "e", "#v": "v"}
        values: dict[str, Any] = {
            ":k": {"S": "RecentActivity"},
            ":s": {"S": min(i["at"]["S"] for i in items)},
            ":one": {"N": "1"},
        }
        first_at = values[":s"]["S"]
        held = None if (pk, sk) in known else _held_get((pk, sk))
        if held is not None:
            old: dict[str, Any] | None = {
                "e": {"L": [{"S": e} for e in held.entries]},
                "v": {"N": str(held.version)},
                "since": {"S": held.since},
            }
        else:
            old = known.get((pk, sk))
        old_entries = [v["S"] for v in (old or {}).get("e", {}).get("L", [])]
        old_version = int((old or {}).get("v", {}).get("N") or 0)
        old_since = (old or {}).get("since", {}).get("S")
        if old is None or len(old_entries) + len(new) <= RECENT_CAP:
            values[":new"] = {"L": [{"S": e} for e in new]}
            values[":none"] = {"L": []}
            values[":room"] = {"N": str(RECENT_CAP - len(new))}
            expression = (
                "SET #k = :k, #s = if_not_exists(#s, :s), #e = list_append(if_not_exists(#e, :none), :new) ADD #v :one"
            )
            condition = "attribute_not_exists(#e) OR size(#e) <= :room"
            # After an append the item is known only when it was known before (an absent one
            # included: ALL_OLD returned nothing); unconditioned on v, another writer may have
            # come between, and then the plan is behind the table (see committed()).
            if old is not None:
                plans[(pk, sk)] = _Held(old_version + 1, old_since or first_at, old_entries + new)
            elif (pk, sk) in known:
                plans[(pk, sk)] = _Held(1, first_at, new)
            else:
                plans[(pk, sk)] = None
        else:
            kept = sorted(old_entries + new, key=_order, reverse=True)[:RECENT_KEEP]
            values[":all"] = {"L": [{"S": e} for e in kept]}
            expression = "SET #k = :k, #s = if_not_exists(#s, :s), #e = :all ADD #v :one"
            seen = (old or {}).get("v", {}).get("N")
            if seen is None:
                condition = "attribute_not_exists(#v)"
            else:
                values[":seen"] = {"N": seen}
                condition = "#v = :seen"
            if held is not None:
                values[":since"] = {"S": held.since}
                condition += " AND #s = :since"
            plans[(pk, sk)] = _Held(old_version + 1, old_since or first_at, kept)
        update: dict[str, Any] = {
            "TableName": RecentActivityRow.Meta.table_name,
            "Key": {"PK": {"S": pk}, "SK": {"S": sk}},
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if task_id in witnesses:
            witness.add_set(update, witness.ATTRIBUTE, witnesses[task_id])
        tx._update_items.append(update)  # noqa: SLF001 - a raw update: list_append and if_not_exists together
        out.add((pk, sk))
    for task_id, token in witnesses.items():
        if task_id in by_task:
            continue
        pk, sk = keys.task_recent_activity(task_id)
        # The witness alone: no entries, no ``since`` (recent_of() trusts an item without one
        # only once it holds RECENT_KEEP entries), ``v`` unmoved (the entries a process
        # remembers stay the stored ones, so its planned trims stay valid).
        only: dict[str, Any] = {
            "TableName": RecentActivityRow.Meta.table_name,
            "Key": {"PK": {"S": pk}, "SK": {"S": sk}},
            "UpdateExpression": "SET #k = :k",
            "ExpressionAttributeNames": {"#k": "kind"},
            "ExpressionAttributeValues": {":k": {"S": "RecentActivity"}},
        }
        witness.add_set(only, witness.ATTRIBUTE, token)
        tx._update_items.append(only)  # noqa: SLF001
    tx._recent_plans = plans  # noqa: SLF001 - read back by committed() after the commit
    return out


def recent_of(rows: list[Row], *, created_at: str | None) -> list[dict[str, Any]] | None:
    """The newest :data:`RECENT_KEEP` entries of a task (newest first, as dicts with the
    :data:`_ENTRY_FIELDS` and ``data``) from its side items (:func:`domain.store.tasks.sidecar`),
    or ``None`` when they cannot tell: no recent item, or one started after the task was created
    (a task written before the item existed) still holding fewer than :data:`RECENT_KEEP`; then
    :func:`recent_for_task` answers."""
    item = next((r for r in rows if isinstance(r, RecentActivityRow)), None)
    if item is None:
        return None
    entries = [_parse(str(e)) for e in item.entries or []]
    if len(entries) < RECENT_KEEP and (created_at is None or item.since is None or item.since > created_at):
        return None
    entries.sort(key=lambda e: (e.get("at") or "", e.get("activityId") or ""), reverse=True)
    return entries[:RECENT_KEEP]


def recent_for_task(task_id: str, limit: int = 10) -> list[ActivityRow]:
    """The task's newest ``limit`` rows (one GSI1 Query)."""
    rows = ActivityRow.gsi1.query(keys.task_activity_partition(task_id), scan_index_forward=False, limit=limit)
    return [a for a in rows if isinstance(a, ActivityRow)][:limit]


def entries_in(rows: Any) -> list[ActivityRow]:
    """The activity rows of a :func:`query_log` page (a partition may carry other rows)."""
    return [r for r in rows if isinstance(r, ActivityRow)]


def query_log(
    *,
    board_id: str | None = None,
    task_id: str | None = None,
    since: str | None = None,
    source: str | None = None,
    type_: str | None = None,
    limit: int,
    start: dict[str, Any] | None,
) -> Any:
    """The Query result of a board's or a task's log, newest first, strictly after ``since``.

    A board's log filtered by type reads the type's own index (GSI3 ``ACTT#<board>#<type>``), so
    every page is full unless the log is exhausted; GSI3 is eventually consistent, so an entry
    written a moment ago may show a moment later. The task log (small) and ``source`` filter."""
    filt = None
    if source:
        filt = ActivityRow.source == source
    after = keys.activity_after(since) if since else None
    if type_ and not task_id:
        assert board_id is not None
        cond = ActivityRow.GSI3SK > after if after else None
        return ActivityRow.gsi3.query(
            keys.activity_type_partition(board_id, type_),
            cond,
            filter_condition=filt,
            scan_index_forward=False,
            limit=limit,
            last_evaluated_key=start,
        )
    if type_:
        filt = (ActivityRow.type == type_) if filt is None else filt & (ActivityRow.type == type_)
    if task_id:
        cond = ActivityRow.GSI1SK > after if after else None
        return ActivityRow.gsi1.query(
            keys.task_activity_partition(task_id),
            cond,
            filter_condition=filt,
            scan_index_forward=False,
            limit=limit,
            last_evaluated_key=start,
        )
    assert board_id is not None
    cond = ActivityRow.SK > after if after else None
    return ActivityRow.query(
        keys.board_activity_partition(board_id),
        cond,
        filter_condition=filt,
        scan_index_forward=False,
        limit=limit,
        last_evaluated_key=start,
        consistent_read=True,
    )


def log_key_shape(*, board_id: str, task_id: str | None, type_: str | None = None) -> dict[str, str]:
    """The ExclusiveStartKey shape of :func:`query_log` (for cursor checks)."""
    if type_ and not task_id:
        return {
            "GSI3PK": keys.activity_type_partition(board_id, type_),
            "GSI3SK": "",
            "PK": keys.board_activity_partition(board_id),
            "SK": "",
        }
    if task_id:
        return {
            "GSI1PK": keys.task_activity_partition(task_id),
            "GSI1SK": "",
            "PK": keys.board_activity_partition(board_id),
            "SK": "",
        }
    return {"PK": keys.board_activity_partition(board_id), "SK": ""}


def subject_exists(*, board_id: str, task_number: int | None) -> bool:
    """Whether the board (or its task ``task_number``) exists: one BatchGetItem."""
    key = keys.task_full(board_id, task_number) if task_number is not None else keys.board_head(board_id)
    return any(True for _ in Row.batch_get([key], consistent_read=True))
