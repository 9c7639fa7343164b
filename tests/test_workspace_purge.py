"""Deleting a workspace leaves none of its data in the table (docs/console.md, "Deleting a
workspace"; docs/search.md, "Workspace deletion").

A workspace is filled through the catalog tools (boards, tasks with titles and descriptions, an
edited title, a bulk import, comments (one deleted), a checklist, labels, assignees, links,
projects, an agent session bound to a thread and aligned, artifacts with text, an invitation,
coordination claims, questions, posts, a channel promotion and an attention item), the consumer indexes everything, and the workspace is deleted the way
the console does it (:func:`domain.console_actions.delete_workspace`). A whole-table Scan then
looks for the workspace's id anywhere in any item: keys, GSI keys and every attribute value.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx2
import pytest

from tests.conftest import make_actor

#: Items that may name a deleted workspace, and why they stay (docs/console.md, "What stays"):
#: the caller's personal access token is the user's, not the workspace's (its record names no
#: workspace unless it was pinned to one, and then it reaches nothing: every access step answers
#: NOT_FOUND). Rate windows (``RATE#``) hold only counters and expire by TTL within minutes.
#: Creation markers (``IDEM#<digest of caller and idempotency key>``) hold the created entity's id,
#: the tool name and a hash of the arguments, no text; no key leads to them from the workspace
#: and their TTL removes them after 30 days (domain/store/idempotency_markers.py). Nothing else.
KEPT_PREFIXES = ("RATE#", "IDEM#")


@pytest.fixture
def own_tables(stack):
    """Fresh tables for one test: its whole-table Scans then read what this test wrote, not the
    tens of thousands of items the session's other tests left (34 s a test late in a full run)."""
    from domain.store import db

    suffix = uuid.uuid4().hex[:8]
    endpoint = stack["JENTRIX_DYNAMODB_ENDPOINT"]
    db.use(endpoint, table=f"jentrix-purge-{suffix}", idempotency_table=f"jentrix-purge-idem-{suffix}")
    db.create_tables()
    try:
        yield
    finally:
        db.use(endpoint, table=stack["JENTRIX_TABLE"], idempotency_table=stack["JENTRIX_IDEMPOTENCY_TABLE"])


def call(token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a catalog tool with ``token`` through the pipeline (as /api/mcp does); its result."""
    from domain import auth, pipeline
    from domain.catalog import registry

    principal = auth.authenticate(token)
    assert principal is not None
    outcome = pipeline.call_tool(registry().get(tool), arguments, principal)
    assert outcome.result is not None, (tool, outcome.error)
    return dict(outcome.result)


def items_mentioning(text: str) -> list[dict[str, Any]]:
    """Every item of the table whose keys or attribute values contain ``text`` (a test-side
    Scan, consistent, to observe what the deletion left)."""
    from domain.settings import settings
    from domain.store import db

    found: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": settings.table, "ConsistentRead": True}
    while True:
        page = db.dynamodb_client().scan(**kwargs)
        found += [i for i in page["Items"] if text in json.dumps(i)]
        if "LastEvaluatedKey" not in page:
            return found
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def fill(owner: Any, peer: Any) -> dict[str, Any]:
    """A workspace touched by every kind of write that keeps data of it; the ids made."""
    from ulid import ULID

    from domain import clock
    from domain.search import repair
    from domain.store import keys
    from domain.store.models import AttentionRow

    ws = owner.workspace_id
    t = owner.token
    bound = {"provider": "claude-code", "threadId": f"th-{uuid.uuid4().hex[:12]}"}
    board = call(t, "create_board", {"workspaceId": ws, "name": "Doomed board"})
    cols = [c["id"] for c in board["columns"]]
    one = call(t, "create_task", {"columnId": cols[0], "title": "Zanzibar quokka", "description": "Marmalade fjord"})[
        "task"
    ]
    two = call(t, "create_task", {"columnId": cols[0], "title": "Second narwhal", "description": "kumquat tundra"})[
        "task"
    ]
    repair.drain(ws)  # "quokka" is indexed; the edit below leaves it in the vocabulary only
    call(t, "update_task", {"taskId": one["id"], "title": "Zanzibar platypus"})
    bulk = [{"title": f"Bulk gnocchi {i}", "description": f"wombat xylophone {i}"} for i in range(3)]
    imported = call(t, "bulk_create_tasks", {"columnId": cols[1], "tasks": bulk})
    call(t, "archive_task", {"taskId": two["id"]})
    comment = call(t, "create_comment", {"taskId": one["id"], "body": "remember the saffron"})["comment"]
    call(t, "update_comment", {"commentId": comment["id"], "body": "remember the cardamom"})
    dropped = call(t, "create_comment", {"taskId": one["id"], "body": "ephemeral pistachio"})["comment"]
    repair.drain(ws)
    call(t, "delete_comment", {"commentId": dropped["id"]})  # its doc state stays as a tombstone
    call(t, "create_subtask", {"taskId": one["id"], "title": "buy quinoa"})
    label = call(
        t, "manage_labels", {"action": "create", "boardId": board["board"]["id"], "name": "Urgent", "color": "#d73a4a"}
    )["label"]
    call(t, "set_task_labels", {"taskId": one["id"], "labelIds": [label["id"]]})
    call(t, "set_task_assignees", {"taskId": one["id"], "userIds": [owner.user_id, peer.userId]})
    other = imported["tasks"][0]
    call(t, "add_task_link", {"fromTaskId": one["id"], "kind": "BLOCKS", "toTaskId": other["id"]})
    project = call(t, "create_project", {"workspaceId": ws, "name": "Doomed project"})["project"]
    call(t, "add_project_link", {"projectId": project["id"], "targetType": "REPO", "targetId": "doomed/repo"})
    session = call(
        t,
        "create_agent_session",
        {"projectId": project["id"], "repo": "doomed/repo", "idempotencyKey": uuid.uuid4().hex},
    )["session"]
    call(t, "attach_agent_session", {**bound, "sessionId": session["id"], "idempotencyKey": uuid.uuid4().hex})
    session = call(t, "get_agent_session", {"sessionId": session["id"]})["session"]
    call(
        t,
        "align_agent_session",
        {"sessionId": session["id"], "taskId": one["id"], "expectedUpdatedAt": session["updatedAt"]},
    )
    call(
        t,
        "attach_artifact",
        {
            "workspaceId": ws,
            "type": "DECISION",
            "title": "Axolotl decision",
            "body": "We keep the axolotl tank at 18 degrees.",
            "taskId": one["id"],
        },
    )
    call(t, "invite_member", {"workspaceId": ws, "email": f"late-{uuid.uuid4().hex[:12]}@example.com"})
    call(t, "mj_begin", {"workspace": ws, "idempotency_key": uuid.uuid4().hex, "task_id": one["id"], "scope": ["src"]})
    call(
        t,
        "mj_ask",
        {
            "workspace": ws,
            "idempotency_key": uuid.uuid4().hex,
            "task_id": one["id"],
            "assignee_actor_id": peer.userId,
            "question": "Which lagoon?",
        },
    )
    call(t, "mj_post", {"workspace": ws, "idempotency_key": uuid.uuid4().hex, "to_actor_id": peer.userId, "text": "Hi"})
    posted = call(
        t, "mj_post", {"workspace": ws, "idempotency_key": uuid.uuid4().hex, "channel": "ideas", "text": "Go"}
    )
    call(
        t,
        "mj_promote_message",
        {
            "workspace": ws,
            "idempotency_key": uuid.uuid4().hex,
            "channel": "ideas",
            "message_id": posted["messageId"],
            "target": "decision",
        },
    )
    # an operator-attention item as mj_consult leaves one (written directly, as
    # tests/test_coordination.py does, so that no consultation needs a sampling client)
    AttentionRow(
        *keys.attention(ws, str(ULID()).lower()),
        attentionId=f"at_{uuid.uuid4().hex[:12]}",
        workspaceId=ws,
        attentionKind="consultation.prepared",
        subjectId="cs_test",
        text="Look at the lagoon",
        fromId=owner.user_id,
        fromKind="agent",
        at=clock.now_iso(),
    ).save()
    return {"task": one["id"], "session": session["id"]}


def attach_file(owner: Any, task_id: str) -> None:
    """An attachment as the console uploads one: grant, PUT to S3, attach."""
    from domain import console_actions

    data = b"bytes of the doomed file"
    grant = console_actions.grant_upload(owner.user_id, task_id, "a.txt", "text/plain", data)
    put = httpx2.put(grant["uploadUrl"], headers=grant["headers"], content=data, timeout=30)
    assert 200 <= put.status_code < 300, put.text
    console_actions.attach(owner.user_id, task_id, grant["uploadGrantId"])


def objects_of(workspace_id: str) -> int:
    from domain import objects
    from domain.settings import settings

    return sum(
        objects.client().list_objects_v2(Bucket=settings.artifact_bucket, Prefix=p)["KeyCount"]
        for p in objects.workspace_prefixes(workspace_id)
    )


def test_deleting_a_workspace_leaves_no_item_naming_it(own_tables):
    """After the console's deletion no item of the table mentions the workspace id (rate windows,
    which expire by TTL, aside), and its S3 objects are gone (docs/artifacts.md)."""
    from domain import auth, console_actions
    from domain.search import repair
    from domain.store import deletion, governance, members

    tag = uuid.uuid4().hex[:12]
    owner = make_actor("Purger", workspace=f"Doomed {tag}")
    ws = owner.workspace_id
    governance.set_policy(ws, "membership", "ALLOW", actor_id=owner.user_id, source="ui")
    peer = auth.create_user(f"peer-{tag}@example.com", "Peer")
    members.add(ws, peer, "MEMBER")
    made = fill(owner, peer)
    attach_file(owner, made["task"])
    repair.drain(ws)
    assert not repair.pending(ws)
    before = items_mentioning(ws[3:])
    grams = [i for i in before if i["PK"]["S"].startswith(f"W#{ws}#") and "G#" in i["PK"]["S"]]
    assert grams and objects_of(ws) >= 1  # the vocabulary and the file exist before

    console_actions.delete_workspace(owner.user_id, ws, f"Doomed {tag}")

    left = [i for i in items_mentioning(ws[3:]) if not i["PK"]["S"].startswith(KEPT_PREFIXES)]
    survivors = sorted(f"{i['PK']['S']} / {i['SK']['S']}" for i in left)
    assert not survivors, f"{len(survivors)} of {len(before)} items survive:\n" + "\n".join(survivors)
    assert objects_of(ws) == 0
    deletion.purge(ws, [owner.user_id, peer.userId])  # a second run finds nothing and fails on nothing
    assert [i for i in items_mentioning(ws[3:]) if not i["PK"]["S"].startswith(KEPT_PREFIXES)] == []


def test_a_consumer_pass_that_read_the_records_before_the_deletion_leaves_nothing(own_tables):
    """A consumer pass holding records it read before the workspace was deleted (a stream batch
    in flight) writes its postings after the purge; it finds the workspace gone and removes
    them again, so the table still holds nothing of the workspace."""
    from domain import console_actions
    from domain.search import repair, writes

    tag = uuid.uuid4().hex[:12]
    owner = make_actor("Racer", workspace=f"Raced {tag}")
    ws = owner.workspace_id
    board = call(owner.token, "create_board", {"workspaceId": ws, "name": "Raced board"})
    column = board["columns"][0]["id"]
    task = call(owner.token, "create_task", {"columnId": column, "title": "Late pelican", "description": "ibis"})
    call(owner.token, "create_comment", {"taskId": task["task"]["id"], "body": "late heron"})
    call(
        owner.token,
        "attach_artifact",
        {"workspaceId": ws, "type": "REPORT", "title": "Late", "body": "egret", "taskId": task["task"]["id"]},
    )
    in_flight = [(m, False, True) for m in repair.pending(ws, repair.SWEEP_LIMIT)]
    assert len(in_flight) == 3

    console_actions.delete_workspace(owner.user_id, ws, f"Raced {tag}")
    assert writes.apply_or_retire(in_flight) == (3, [])  # the pass goes on after the purge

    left = [i for i in items_mentioning(ws[3:]) if not i["PK"]["S"].startswith(KEPT_PREFIXES)]
    assert not left, sorted(f"{i['PK']['S']} / {i['SK']['S']}" for i in left)


def test_verify_repair_lists_the_words_of_a_table_indexed_before_the_word_list(own_tables):
    """Words posted before the vocabulary word list existed have no list item, so a deletion would
    miss their trigram postings: ``jentrix search verify`` reports the doc as ``vocabulary`` drift
    and ``--repair`` posts the items; the deletion then leaves nothing."""
    from domain import console_actions
    from domain.search import repair, verify
    from domain.settings import settings
    from domain.store import db, keys

    tag = uuid.uuid4().hex[:12]
    owner = make_actor("Legacy", workspace=f"Legacy {tag}")
    ws = owner.workspace_id
    board = call(owner.token, "create_board", {"workspaceId": ws, "name": "Old board"})
    task = call(owner.token, "create_task", {"columnId": board["columns"][0]["id"], "title": "Vintage gramophone"})
    repair.drain(ws)
    listed = [i for i in items_mentioning(ws[3:]) if i["PK"]["S"] == keys.search_vocabulary_partition(ws)]
    assert {i["SK"]["S"] for i in listed} == {"vintage", "gramophone"}
    for item in listed:  # the table as the earlier indexer left it: trigrams, no word list
        db.dynamodb_client().delete_item(TableName=settings.table, Key={"PK": item["PK"], "SK": item["SK"]})

    before = verify.verify(ws)
    assert before.drift == {keys.search_doc_task(task["task"]["id"]): "vocabulary"}, before.lines()
    after = verify.verify(ws, repair=True)
    assert after.drift == {} and after.repaired == 1, after.lines()

    console_actions.delete_workspace(owner.user_id, ws, f"Legacy {tag}")
    left = [i for i in items_mentioning(ws[3:]) if not i["PK"]["S"].startswith(KEPT_PREFIXES)]
    assert not left, sorted(f"{i['PK']['S']} / {i['SK']['S']}" for i in left)
