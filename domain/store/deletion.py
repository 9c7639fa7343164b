"""Deleting a workspace (an OWNER's act from the console; docs/console.md, "Deleting a workspace").

Two steps, both from the same request:

1. :func:`close` — one transaction: the workspace head is deleted under ``name = <the name the
   OWNER typed>``, the slug claim is deleted (the name can be taken again), and a role guard
   checks the caller is still an OWNER at commit. From then on the workspace does not exist for
   anyone (list_workspaces drops heads it cannot read; the console shows no page of it).
2. :func:`purge` — every item of the workspace, found from its keys and removed with
   BatchWriteItem (25 deletes a request, unprocessed ones retried), in this order:

   - the members and their mirrors (no access step admits anyone any more: no new write, so no
     new search record), then the search pending records of both corpora (a consumer pass
     starting from now finds nothing to index);
   - the workspace partition (board entries, task-number pointers, invitations, approvals,
     policy, projects) with the projects' slug claims and link edges; each board's partition
     (columns, labels with their name claims, tasks) and activity log; each task's side items
     (comments, subtasks, links, attachments with their used upload grants), coordination items
     and assignees' work-index entries; the members' claim and inbox items; channels (with their
     messages and promotions); artifacts (heads, bodies, and the head copies under each link);
     agent sessions (with their alignment intervals and the provider-thread binding claim, when
     it still names this workspace); the workspace log, proposed decisions, operator attention
     items and consultations;
   - last, the search index (:func:`_purge_search`): the doc states of every task, comment and
     artifact found above and of the deleted comments the index lists
     (``keys.search_removed_doc``), the word postings each state names, and both corpora's
     vocabulary words (``keys.search_vocabulary_word``) with the trigram postings each owns
     (``keys.search_word_grams``). A trigram partition cannot be reached by a workspace
     prefix; the vocabulary list is how the purge reaches it.

   Running it again finds nothing more to do. (The workspace's S3 objects go with
   :func:`domain.objects.delete_prefix`, called by :func:`domain.console_actions.delete_workspace`.)
   A consumer pass that read records before the purge and writes after it removes its own rows
   (:func:`domain.search.writes.apply_all` reads the head after its writes).

Kept (no key leads there without a Scan, and none holds the workspace's text): rate windows and
creation markers (ids, tool name, argument hash) until their TTL, upload grants never attached
(TTL), and tokens or OAuth grants pinned to the workspace (every call they make answers
NOT_FOUND; their owners revoke them). Vocabulary words indexed before the vocabulary list
existed are listed the next time a doc uses them or by ``jentrix search verify --repair``; a
word that only an earlier text held stays (docs/search.md, "Workspace deletion").
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from domain.settings import settings
from domain.store import db, keys
from domain.store.artifacts import LINKS
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
    names = {"#pk": "PK", "#sk": "SK", **{f"#f{i}": f for i, f in enumerate(fields) if f not in ("PK", "SK")}}
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


def _send(chunk: list[dict[str, Any]]) -> None:
    """One BatchWriteItem of up to 25 deletes; unprocessed ones retried with backoff."""
    client = db.dynamodb_client()
    for attempt in range(10):
        left = client.batch_write_item(RequestItems={settings.table: chunk}).get("UnprocessedItems", {})
        chunk = left.get(settings.table, [])
        if not chunk:
            return
        time.sleep(min(1.0, 0.05 * 2**attempt))
    raise RuntimeError("DynamoDB kept refusing deletes; run the deletion again")


class _Deletes:
    """Deletes gathered across partitions and sent in full BatchWriteItems of 25 (a partition of
    three items does not cost a request of its own); :meth:`flush` sends the rest."""

    def __init__(self) -> None:
        self.count = 0
        self._chunk: list[dict[str, Any]] = []
        self._seen: set[tuple[str, str]] = set()

    def add(self, item_keys: Iterable[tuple[str, str]]) -> int:
        added = 0
        for pk, sk in item_keys:
            if (pk, sk) in self._seen:
                continue  # a batch may not name one key twice
            self._seen.add((pk, sk))
            self._chunk.append({"DeleteRequest": {"Key": {"PK": {"S": pk}, "SK": {"S": sk}}}})
            added += 1
            if len(self._chunk) == BATCH:
                self.flush()
        self.count += added
        return added

    def flush(self) -> None:
        if self._chunk:
            chunk, self._chunk = self._chunk, []
            _send(chunk)

    def drop(self, pk: str, fields: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """Delete every item of partition ``pk``; the items' ``fields`` as read (strings, and
        lists of strings)."""
        items = list(_query(pk, fields))
        self.add((i["PK"]["S"], i["SK"]["S"]) for i in items)
        return [{f: _plain(i[f]) for f in fields if f in i and _plain(i[f]) is not None} for i in items]


def _plain(value: dict[str, Any]) -> Any:
    if "S" in value:
        return value["S"]
    if "L" in value:
        return [v["S"] for v in value["L"] if "S" in v]
    return None


def _batch_get(item_keys: list[tuple[str, str]], fields: str) -> list[dict[str, Any]]:
    """The items that exist among ``item_keys`` (consistent BatchGetItem, 100 a request,
    unprocessed keys retried with backoff)."""
    client = db.dynamodb_client()
    found: list[dict[str, Any]] = []
    unique = list(dict.fromkeys(item_keys))
    for start in range(0, len(unique), 100):
        request: dict[str, Any] = {
            settings.table: {
                "Keys": [{"PK": {"S": pk}, "SK": {"S": sk}} for pk, sk in unique[start : start + 100]],
                "ProjectionExpression": fields,
                "ConsistentRead": True,
            }
        }
        for attempt in range(10):
            page = client.batch_get_item(RequestItems=request)
            found += page["Responses"].get(settings.table, [])
            request = page.get("UnprocessedKeys") or {}
            if not request:
                break
            time.sleep(min(1.0, 0.05 * 2**attempt))
        if request:
            raise RuntimeError("DynamoDB kept refusing reads; run the deletion again")
    return found


def purge(workspace_id: str, member_ids: list[str]) -> int:
    """Remove what the workspace's keys lead to (see the module docstring); the count of deletes
    issued. Safe to run again."""
    ws = workspace_id
    out = _Deletes()
    out.add([keys.member(ws, u) for u in member_ids] + [keys.membership_mirror(u, ws) for u in member_ids])
    # the pending records next: a consumer pass starting from now on finds nothing to index
    for corpus in (keys.SEARCH_TASKS, keys.SEARCH_ARTIFACTS):
        out.drop(keys.search_pending_partition(ws, corpus))
    out.flush()
    entries = out.drop(keys.workspace_partition(ws), ("boardId", "projectId", "taskId", "slug"))
    boards = {i["boardId"] for i in entries if "boardId" in i}
    projects = {i["projectId"] for i in entries if "projectId" in i}
    tasks = {i["taskId"] for i in entries if "taskId" in i}  # the task-number pointers
    out.add(keys.project_slug_claim(ws, i["slug"]) for i in entries if "projectId" in i and "slug" in i)
    for board in boards:
        rows = out.drop(keys.board_partition(board), ("taskId", "labelId", "name", "assigneeIds"))
        tasks.update(r["taskId"] for r in rows if "taskId" in r)
        out.add(keys.label_name_claim(board, r["name"]) for r in rows if "labelId" in r and "name" in r)
        # the assignees' work-index entries (work.sync keeps them equal to the task's assignees)
        out.add(keys.work_item(r["taskId"], u) for r in rows if "taskId" in r for u in r.get("assigneeIds", []))
        out.drop(keys.board_activity_partition(board))
    docs = [keys.search_doc_task(t) for t in tasks]
    for task in tasks:
        side = out.drop(keys.task_side_partition(task), ("grantId", "commentId"))
        out.add(keys.upload_grant(r["grantId"]) for r in side if "grantId" in r)  # the attachments' used grants
        docs += [keys.search_doc_comment(task, r["commentId"]) for r in side if "commentId" in r]
        out.drop(keys.coordination_partition(task))
    for project in projects:
        out.drop(keys.project_link_partition(project))
    for user in member_ids:
        out.drop(keys.actor_partition(ws, user))
        for shard in range(keys.INBOX_SHARDS):
            out.drop(keys.inbox_partition(ws, user, shard))
    for channel in out.drop(keys.channels_partition(ws), ("name",)):  # each channel's messages and promotions
        if "name" in channel:
            out.drop(keys.channel_partition(ws, channel["name"]))
    for head in out.drop(keys.artifact_partition(ws), ("artifactId", *(attr for _, attr in LINKS))):
        if "artifactId" in head:  # a head (else a body)
            docs.append(keys.search_doc_artifact(head["artifactId"]))
            for link, attr in LINKS:  # the head's copies under each task, project, session... it names
                if attr in head:
                    out.drop(keys.artifact_link_partition(ws, link, head[attr]))
    for session in out.drop(keys.session_partition(ws), ("sessionId", "provider", "providerThreadId")):
        if "sessionId" in session:
            out.drop(keys.session_side_partition(session["sessionId"]))
        if "provider" in session and "providerThreadId" in session:
            claim = keys.session_binding_claim(session["provider"], session["providerThreadId"])
            held = _batch_get([claim], "PK, SK, workspaceId")  # another workspace's session may hold it now
            out.add(claim for c in held if c.get("workspaceId", {}).get("S") == ws)
    for pk in (
        keys.workspace_log_partition(ws),
        keys.decision_partition(ws),
        keys.attention_partition(ws),
        keys.consultation_partition(ws),
    ):
        out.drop(pk)
    _purge_search(ws, docs, out)
    out.flush()
    return out.count


def _purge_search(workspace_id: str, docs: list[str], out: _Deletes) -> None:
    """The workspace's search index: the doc states of ``docs`` and of the deleted comments the
    index lists (``keys.search_removed_doc``), the word postings (and earlier-layout trigram
    postings) each state names, then every vocabulary word of both corpora with the trigram
    postings it owns (``keys.search_word_grams``). Run last: the pending records went first."""
    ws = workspace_id
    docs = docs + [i["SK"] for i in out.drop(keys.search_removed_doc(ws, "")[0], ("SK",))]
    prefix = len(keys.search_doc_state(ws, "")[0])
    for state in _batch_get([keys.search_doc_state(ws, d) for d in docs], "PK, SK, t, g"):
        doc = state["PK"]["S"][prefix:]
        corpus = keys.search_corpus_of(doc)
        out.add([(state["PK"]["S"], state["SK"]["S"])])
        out.add(keys.search_term_posting(ws, t, doc, corpus) for t in state.get("t", {}).get("SS", []))
        out.add(keys.search_gram_posting(ws, g, doc, corpus) for g in state.get("g", {}).get("SS", []))
    for corpus in (keys.SEARCH_TASKS, keys.SEARCH_ARTIFACTS):
        for word in out.drop(keys.search_vocabulary_partition(ws, corpus), ("SK",)):
            out.add(keys.search_word_grams(ws, word["SK"], corpus))
