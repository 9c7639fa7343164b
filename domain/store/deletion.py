"""Deleting a workspace (an OWNER's act from the console; docs/console.md, "Deleting a workspace").

Two steps, both from the same request:

1. :func:`close` — one transaction: the workspace head is deleted under ``name = <the name the
   OWNER typed>``, the slug claim is deleted (the name can be taken again), and a role guard
   checks the caller is still an OWNER at commit. From then on the workspace does not exist for
   anyone (list_workspaces drops heads it cannot read; the console shows no page of it).
2. :func:`purge` — every item of the workspace that its keys lead to, removed with BatchWriteItem
   (25 deletes a request, unprocessed ones retried): the members and their mirrors first (so no
   access step admits anyone any more), then the workspace partition (board entries, task-number
   pointers, invitations, approvals, policy, projects), each board's partition and activity log,
   each task's side items (comments, subtasks, links, attachments, with the attachments' used
   upload grants) and coordination items, the members' work, claim and inbox items, the workspace
   log, artifacts, sessions, channels (with their messages and promotions), proposed decisions,
   the search pending records, and each task's search doc state with the word postings it names.
   Running it again finds nothing more to do. (The workspace's S3 objects go with
   :func:`domain.objects.delete_prefix`, called by :func:`domain.console_actions.delete_workspace`.)

Not reached (no key leads there without a Scan): the search vocabulary's trigram rows
(``keys.search_gram_posting``: words without a task id), rate windows, creation markers and
upload grants never attached (they expire by TTL), and tokens or OAuth grants pinned to the workspace (they stay, and every call
they make answers NOT_FOUND; their owners revoke them).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from domain.settings import settings
from domain.store import db, keys
from domain.store.errors import StoreError
from domain.store.models import MemberRow, SlugRow, WorkspaceRow

BATCH = 25


class NameMismatch(StoreError):
    """The typed name is not the workspace's name (or the workspace is gone); the console answers it
    itself, so it carries no envelope answer."""


def close(head: WorkspaceRow, typed_name: str, *, actor_id: str) -> None:
    """Delete the head (under ``name = typed_name``) and the slug claim, the caller an OWNER at commit.

    Raises:
        NameMismatch: the name differs, or the workspace was deleted meanwhile.
        db.Missing: the caller is no longer an OWNER of it."""

    def build(tx: Any) -> None:
        tx.delete(WorkspaceRow(*keys.workspace_head(head.workspaceId)), condition=WorkspaceRow.name == typed_name)
        tx.delete(SlugRow(*keys.slug_claim(head.slug)))
        tx.condition_check(MemberRow, *keys.member(head.workspaceId, actor_id), condition=MemberRow.role.is_in("OWNER"))

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(*keys.workspace_head(head.workspaceId)):
            raise NameMismatch() from None
        raise db.Missing(head.workspaceId) from None


def _query(pk: str, fields: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    client = db.dynamodb_client()
    names = {"#pk": "PK", "#sk": "SK", **{f"#f{i}": f for i, f in enumerate(fields)}}
    kwargs: dict[str, Any] = {
        "TableName": settings.table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": pk}},
        "ExpressionAttributeNames": names,
        "ProjectionExpression": ", ".join(names),
        "ConsistentRead": True,
    }
    while True:
        page = client.query(**kwargs)
        yield from page["Items"]
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _delete(item_keys: Iterable[tuple[str, str]]) -> int:
    """Delete the items (BatchWriteItem, 25 a request; unprocessed ones retried with backoff)."""
    client = db.dynamodb_client()
    pending = [{"DeleteRequest": {"Key": {"PK": {"S": pk}, "SK": {"S": sk}}}} for pk, sk in dict.fromkeys(item_keys)]
    count = len(pending)
    while pending:
        chunk, pending = pending[:BATCH], pending[BATCH:]
        for attempt in range(10):
            left = client.batch_write_item(RequestItems={settings.table: chunk}).get("UnprocessedItems", {})
            chunk = left.get(settings.table, [])
            if not chunk:
                break
            time.sleep(min(1.0, 0.05 * 2**attempt))
        if chunk:
            raise RuntimeError("DynamoDB kept refusing deletes; run the deletion again")
    return count


def _drop(pk: str, fields: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Delete every item of partition ``pk``; the items' ``fields`` (strings) as read."""
    items = list(_query(pk, fields))
    _delete((i["PK"]["S"], i["SK"]["S"]) for i in items)
    return [{f: i[f]["S"] for f in fields if f in i and "S" in i[f]} for i in items]


def purge(workspace_id: str, member_ids: list[str]) -> int:
    """Remove what the workspace's keys lead to (see the module docstring); the count of deletes
    issued. Safe to run again."""
    ws = workspace_id
    deleted = _delete([keys.member(ws, u) for u in member_ids] + [keys.membership_mirror(u, ws) for u in member_ids])
    entries = list(_query(keys.workspace_partition(ws), ("boardId", "projectId", "taskId")))
    boards = {i["boardId"]["S"] for i in entries if "boardId" in i}
    projects = {i["projectId"]["S"] for i in entries if "projectId" in i}
    tasks = {i["taskId"]["S"] for i in entries if "taskId" in i}  # the task-number pointers
    _delete((i["PK"]["S"], i["SK"]["S"]) for i in entries)
    deleted += len(entries)
    for board in boards:
        rows = _drop(keys.board_partition(board), ("taskId",))
        tasks.update(r["taskId"] for r in rows if "taskId" in r)
        deleted += len(rows) + len(_drop(keys.board_activity_partition(board)))
    for task in tasks:
        side = _drop(keys.task_side_partition(task), ("grantId",))
        grants = [keys.upload_grant(r["grantId"]) for r in side if "grantId" in r]  # the attachments' used grants
        deleted += len(side) + _delete(grants) + len(_drop(keys.coordination_partition(task)))
        deleted += _drop_search_doc(ws, keys.search_doc_task(task))
    for project in projects:
        deleted += len(_drop(keys.project_link_partition(project)))
    for user in member_ids:
        deleted += len(_drop(keys.work_partition(ws, user))) + len(_drop(keys.actor_partition(ws, user)))
        for shard in range(keys.INBOX_SHARDS):
            deleted += len(_drop(keys.inbox_partition(ws, user, shard)))
    for channel in _drop(keys.channels_partition(ws), ("name",)):  # each channel's messages and promotions
        deleted += 1 + (len(_drop(keys.channel_partition(ws, channel["name"]))) if "name" in channel else 0)
    for pk in (
        keys.workspace_log_partition(ws),
        keys.artifact_partition(ws),
        keys.session_partition(ws),
        keys.decision_partition(ws),
        keys.search_pending_partition(ws, keys.SEARCH_TASKS),
        keys.search_pending_partition(ws, keys.SEARCH_ARTIFACTS),
    ):
        deleted += len(_drop(pk))
    return deleted


def _drop_search_doc(workspace_id: str, doc: str) -> int:
    """A doc's search state and the word postings its terms (``t``) name."""
    key = keys.search_doc_state(workspace_id, doc)
    found = db.dynamodb_client().get_item(
        TableName=settings.table, Key={"PK": {"S": key[0]}, "SK": {"S": key[1]}}, ConsistentRead=True
    )
    if "Item" not in found:
        return 0
    terms = found["Item"].get("t", {}).get("SS", [])
    return _delete([key] + [keys.search_term_posting(workspace_id, t, doc) for t in terms])
