"""The freshness witness of a task's full item (issue 25; domain/store/witness.py): a warm
detailed get_task reads the full item eventually consistent and answers from it only when its
witness is the one the strongly read recent item holds; otherwise it reads the item again,
strongly. These tests check the three things that make that sound: a stale read is caught
(injected, see below), an item without a witness falls back, and every tool that writes a
task's full item leaves the two witnesses equal."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from botocore.awsrequest import AWSResponse

from tests.conftest import make_actor, mcp_client
from tests.rpc import RequestCounter
from tests.rpc import call_tool as rpc_call
from tests.rpc import ok as rpc_ok
from tests.tools_support import new_board, ok


@pytest.fixture
def warm(warm, monkeypatch):
    """tests/conftest.py's warm process, its token cache kept for 60 s: a detailed get_task is
    then the task's BatchGetItem ‖ the side items' Query."""
    monkeypatch.setattr(warm, "token_cache_seconds", 60)
    return warm


def _raw_item(key: tuple[str, str]) -> dict[str, Any]:
    from domain.settings import settings
    from domain.store import db

    got = db.dynamodb_client().get_item(
        TableName=settings.table, Key={"PK": {"S": key[0]}, "SK": {"S": key[1]}}, ConsistentRead=True
    )
    return dict(got["Item"])


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


class StaleReads:
    """Answers an eventually consistent BatchGetItem of one item with an older copy of it.

    A fake is needed because DynamoDB Local is always consistent: an eventually consistent read
    there returns the newest version, so the stale answer real DynamoDB may give for a moment
    after a write cannot be produced for real. The hook sits on the real botocore clients
    (``before-send``, as in tests/test_reliability.py) and fabricates only that one answer;
    strongly consistent reads go to DynamoDB Local untouched."""

    def __init__(self, key: tuple[str, str], old: dict[str, Any]) -> None:
        self.key, self.old, self.served = key, old, 0

    def before_send(self, request: Any, **_: Any) -> Any:
        from domain.settings import settings

        body = json.loads(request.body or b"{}")
        wanted = (body.get("RequestItems") or {}).get(settings.table) or {}
        asked = [(k["PK"]["S"], k["SK"]["S"]) for k in wanted.get("Keys", [])]
        if wanted.get("ConsistentRead") or asked != [self.key]:
            return None
        self.served += 1
        data = json.dumps({"Responses": {settings.table: [self.old]}, "UnprocessedKeys": {}}).encode()
        headers = {"x-amzn-RequestId": "stale", "Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, 200, {**headers, "Content-Length": str(len(data))}, _Body(data))

    def __enter__(self) -> StaleReads:
        from domain.store import db

        for client in db.botocore_clients():
            client.meta.events.register("before-send.dynamodb.BatchGetItem", self.before_send)
        return self

    def __exit__(self, *_: Any) -> None:
        from domain.store import db

        for client in db.botocore_clients():
            client.meta.events.unregister("before-send.dynamodb.BatchGetItem", self.before_send)


def _get(url: str, token: str, task_id: str) -> tuple[dict[str, Any], dict[str, int]]:
    counter = RequestCounter()
    with httpx2.Client(timeout=60) as h, counter.watching():
        got = rpc_ok(rpc_call(url, token, "get_task", {"taskId": task_id}, h))
    return got, dict(counter.ops)


def _task(url: str, title: str = "first") -> tuple[Any, str]:
    actor = make_actor("Wren", holder="human")
    board = rpc_ok(rpc_call(url, actor.token, "create_board", {"workspaceId": actor.workspace_id, "name": "Witness"}))
    task = rpc_ok(rpc_call(url, actor.token, "create_task", {"columnId": board["columns"][0]["id"], "title": title}))
    return actor, task["task"]["id"]


def test_a_stale_eventually_consistent_read_is_caught_and_read_again(server_url, warm):
    from domain import ids
    from domain.store import tasks as task_store

    actor, tid = _task(server_url)
    key = task_store.full_key(ids.parse_task(tid))
    _get(server_url, actor.token, tid)  # warms the member and the columns
    old = _raw_item(key)
    edited = rpc_ok(rpc_call(server_url, actor.token, "update_task", {"taskId": tid, "title": "second"}))["task"]
    with StaleReads(key, old) as stale:
        got, ops = _get(server_url, actor.token, tid)
    assert stale.served == 1  # the task was read eventually consistent, and got the old copy
    assert got["task"]["title"] == "second" and got["task"]["updatedAt"] == edited["updatedAt"]
    assert ops == {"BatchGetItem": 1, "Query": 1, "GetItem": 1}, ops  # one request more: the strong read
    strong, ops = _get(server_url, actor.token, tid)
    assert ops == {"BatchGetItem": 1, "Query": 1}, ops  # no staleness: two requests
    assert got == strong


def test_a_recent_item_without_a_witness_reads_the_task_strongly(server_url, warm):
    """A task whose recent item no witnessed write has reached (written before the witness
    existed) answers from a strong read, even when the eventually consistent one is stale; the
    next write of the task stamps the witness and the call is two requests again."""
    from domain import ids
    from domain.settings import settings
    from domain.store import db, keys
    from domain.store import tasks as task_store

    actor, tid = _task(server_url)
    key = task_store.full_key(ids.parse_task(tid))
    _get(server_url, actor.token, tid)
    old = _raw_item(key)
    rpc_ok(rpc_call(server_url, actor.token, "update_task", {"taskId": tid, "title": "second"}))
    pk, sk = keys.task_recent_activity(tid)
    db.dynamodb_client().update_item(  # as an item written before the witness existed
        TableName=settings.table, Key={"PK": {"S": pk}, "SK": {"S": sk}}, UpdateExpression="REMOVE w"
    )
    old.pop("w", None)
    with StaleReads(key, old) as stale:
        got, ops = _get(server_url, actor.token, tid)
    assert stale.served == 1
    assert got["task"]["title"] == "second"
    assert ops == {"BatchGetItem": 1, "Query": 1, "GetItem": 1}, ops
    rpc_ok(rpc_call(server_url, actor.token, "update_task", {"taskId": tid, "title": "third"}))
    got, ops = _get(server_url, actor.token, tid)
    assert got["task"]["title"] == "third" and ops == {"BatchGetItem": 1, "Query": 1}, ops


def _unwitnessed(board_ids: list[str]) -> dict[str, str]:
    """Every task of the boards whose full item and recent item do not carry the same witness:
    ``{task id: why}`` (empty when all agree)."""
    from domain.store import keys
    from domain.store.models import RecentActivityRow, Row, TaskDetailRow

    bad: dict[str, str] = {}
    for board_id in board_ids:
        rows = TaskDetailRow.query(
            keys.board_partition(board_id), Row.SK.startswith(keys.TASK_ITEMS_PREFIX), consistent_read=True
        )
        for detail in (r for r in rows if isinstance(r, TaskDetailRow)):
            try:
                recent = RecentActivityRow.get(*keys.task_recent_activity(detail.taskId), consistent_read=True)
            except RecentActivityRow.DoesNotExist:
                bad[detail.taskId] = "no recent item"
                continue
            if detail.witness is None or detail.witness != recent.taskWitness:
                bad[detail.taskId] = f"full item {detail.witness!r}, recent item {recent.taskWitness!r}"
    return bad


async def test_every_task_writer_leaves_the_two_witnesses_equal(server_url):
    """The catch-all: a broad run of the tools that write tasks (and of those that only check
    them), then every task's full item and recent item must carry the same witness. A writer
    that changed the full item without stamping it would leave them apart (see the next test)."""
    owner = make_actor("Cato", "Witness Space", holder="human")
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Writers")
        other_board = await new_board(c, owner.workspace_id, "Others")
        cols = [col["id"] for col in board["columns"]]
        made = [(await ok(c, "create_task", {"columnId": cols[0], "title": f"t{i}"}))["task"] for i in range(6)]
        t = [x["id"] for x in made]
        bulk = await ok(c, "bulk_create_tasks", {"columnId": cols[1], "tasks": [{"title": f"b{i}"} for i in range(4)]})
        b = [r["task"]["id"] for r in bulk["results"]] if "results" in bulk else [x["id"] for x in bulk["tasks"]]
        await ok(c, "update_task", {"taskId": t[0], "title": "renamed", "priority": "HIGH"})
        await ok(c, "move_task", {"taskId": t[1], "columnId": cols[2]})
        await ok(c, "move_task", {"taskId": t[2], "columnId": cols[0], "beforeTaskId": t[0]})
        await ok(c, "archive_task", {"taskId": t[3]})
        await ok(c, "set_task_assignees", {"taskId": t[4], "userIds": [owner.user_id]})
        label = (
            await ok(
                c,
                "manage_labels",
                {"action": "create", "boardId": board["board"]["id"], "name": "red", "color": "#d73a4a"},
            )
        )["label"]
        keep = (
            await ok(
                c,
                "manage_labels",
                {"action": "create", "boardId": board["board"]["id"], "name": "blue", "color": "#3366aa"},
            )
        )["label"]
        for tid in (t[0], t[4], t[5], b[0]):
            await ok(c, "set_task_labels", {"taskId": tid, "labelIds": [label["id"], keep["id"]]})
        await ok(c, "archive_task", {"taskId": t[5]})  # an archived carrier: its full item alone is detached
        await ok(c, "manage_labels", {"action": "delete", "labelId": label["id"]})  # detaches 4 tasks, no task entries
        await ok(c, "bulk_update_tasks", {"items": [{"taskId": x, "priority": "LOW"} for x in b[:3]]})
        await ok(c, "bulk_move_tasks", {"items": [{"taskId": x, "columnId": cols[2]} for x in b[1:3]]})
        await ok(c, "add_task_link", {"fromTaskId": t[0], "kind": "BLOCKS", "toTaskId": b[0]})
        await ok(c, "add_task_link", {"fromTaskId": t[1], "kind": "RELATES_TO", "toTaskId": b[1]})
        await ok(c, "remove_task_link", {"fromTaskId": t[1], "kind": "RELATES_TO", "toTaskId": b[1]})
        sub = (await ok(c, "create_subtask", {"taskId": t[0], "title": "step"}))["subtask"]
        await ok(c, "toggle_subtask", {"subtaskId": sub["id"], "completed": True})
        gone = (await ok(c, "create_subtask", {"taskId": t[0], "title": "dropped"}))["subtask"]
        await ok(c, "delete_subtask", {"subtaskId": gone["id"]})
        comment = (await ok(c, "create_comment", {"taskId": t[2], "body": "a note"}))["comment"]
        await ok(c, "update_comment", {"commentId": comment["id"], "body": "an edited note"})
        await ok(c, "manage_columns", {"action": "rename", "columnId": cols[0], "name": "Inbox"})
        await ok(c, "archive_board", {"boardId": other_board["board"]["id"]})
        await ok(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [other_board["board"]["id"]]})
    started = rpc_ok(  # a coordination tool that makes a task (its toolset is served on its own path)
        rpc_call(
            f"{server_url}/x/coordination",
            owner.token,
            "mj_start_work",
            {"idempotency_key": uuid.uuid4().hex[:12], "column_id": cols[0], "title": "agent work"},
        )
    )
    assert started
    from domain.store import keys
    from domain.store.models import Row, TaskDetailRow

    count = sum(
        1
        for r in TaskDetailRow.query(
            keys.board_partition(board["board"]["id"]), Row.SK.startswith(keys.TASK_ITEMS_PREFIX), consistent_read=True
        )
        if isinstance(r, TaskDetailRow)
    )
    assert count == 6 + 4 + 1
    assert _unwitnessed([board["board"]["id"], other_board["board"]["id"]]) == {}


async def test_the_catch_all_finds_a_write_that_skipped_the_witness(server_url):
    """The check above bites: a title changed behind the store's back (a raw UpdateItem, which
    no tool does) leaves the witnesses apart; and the model refuses such a write itself."""
    from domain.settings import settings
    from domain.store import db, keys
    from domain.store import tasks as task_store
    from domain.store.models import TaskDetailRow, UnwitnessedWrite

    owner = make_actor("Ida", holder="human")
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Bites")
        tid = (await ok(c, "create_task", {"columnId": board["columns"][0]["id"], "title": "x"}))["task"]["id"]
    assert _unwitnessed([board["board"]["id"]]) == {}
    from domain import ids

    pk, sk = task_store.full_key(ids.parse_task(tid))
    db.dynamodb_client().update_item(
        TableName=settings.table,
        Key={"PK": {"S": pk}, "SK": {"S": sk}},
        UpdateExpression="SET title = :t, w = :w",
        ExpressionAttributeValues={":t": {"S": "behind its back"}, ":w": {"S": "0" * 16}},
    )
    assert list(_unwitnessed([board["board"]["id"]])) == [tid]
    detail = TaskDetailRow.get(pk, sk, consistent_read=True)
    with pytest.raises(UnwitnessedWrite):
        detail.save()
    with pytest.raises(UnwitnessedWrite):
        detail.update(actions=[TaskDetailRow.title.set("no")])
    detail.update(actions=[TaskDetailRow.searchVersion.set("v")])  # a field no answer shows: allowed
    assert keys.task_full_of(pk, sk) == (ids.parse_task(tid).board_id, ids.parse_task(tid).number)


@pytest.mark.parametrize(
    "actions",
    ["remove", "add", "rank"],
)
async def test_updates_of_every_clause_shape_move_the_witness_and_rank_alone_does_not(server_url, actions):
    """``witness.stamp`` adds its SET to any update expression (REMOVE only, ADD only) that
    DynamoDB then accepts; a re-rank (the move rebalance's neighbour update) moves neither item."""
    from domain import ids
    from domain.store import db, keys
    from domain.store import tasks as task_store
    from domain.store.models import RecentActivityRow, TaskDetailRow

    owner = make_actor("Ugo", holder="human")
    async with mcp_client(server_url, owner.token) as c:
        board = await new_board(c, owner.workspace_id, "Shapes")
        tid = (
            await ok(c, "create_task", {"columnId": board["columns"][0]["id"], "title": "x", "dueDate": "2030-01-01"})
        )["task"]["id"]
    key = task_store.full_key(ids.parse_task(tid))
    before = TaskDetailRow.get(*key, consistent_read=True).witness
    chosen = {
        "remove": [TaskDetailRow.dueDate.remove()],
        "add": [TaskDetailRow.subtaskCount.add(0)],
        "rank": [TaskDetailRow.rank.set("zz")],
    }[actions]
    db.transact(lambda tx: tx.update(TaskDetailRow(*key), actions=chosen))
    after = TaskDetailRow.get(*key, consistent_read=True).witness
    recent = RecentActivityRow.get(*keys.task_recent_activity(tid), consistent_read=True).taskWitness
    assert recent == after
    assert (after == before) == (actions == "rank")
    assert _unwitnessed([board["board"]["id"]]) == {}
