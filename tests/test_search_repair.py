"""Search repair: a marker left by a crash is applied by the sweep and by the stream consumer."""

from __future__ import annotations

import uuid

from domain.search import query as q
from domain.search import repair
from domain.search.loop import RepairLoop
from domain.search.writes import INDEX
from domain.store import db, keys
from domain.store.models import SearchPendingRow
from domain.store.search_marks import text_version
from functions import search_stream
from tests.conftest import make_actor


def _marker(ws: str, n: int, title: str) -> SearchPendingRow:
    tid = f"tk_r{n}"
    doc = keys.search_doc_task(tid)
    return SearchPendingRow(
        *keys.search_pending(ws, doc), doc=doc, taskId=tid, version=text_version(title, ""), title=title
    )


def test_sweep_applies_left_markers(stack):
    ws = make_actor("Indexer").workspace_id  # the consumer skips workspaces that do not exist
    _marker(ws, 1, "orphaned kangaroo").save()  # as if the request died after its commit
    assert [h.task_id for h in INDEX.query(ws, q.parse("kangaroo"), substring=None).hits] == []
    assert repair.sweep(ws) == 1
    assert [h.task_id for h in INDEX.query(ws, q.parse("kangaroo"), substring=None).hits] == ["tk_r1"]
    assert list(SearchPendingRow.query(keys.search_pending_partition(ws))) == []
    assert repair.sweep(ws) == 0


def test_sweep_and_stream_cover_the_artifacts_corpus(stack):
    ws = make_actor("Indexer").workspace_id  # the consumer skips workspaces that do not exist
    doc = keys.search_doc_artifact("ar_r1")
    body = "the dingo findings"
    SearchPendingRow(
        *keys.search_pending(ws, doc),
        doc=doc,
        taskId="ar_r1",
        version=text_version("Dingo", body=body),
        title="Dingo",
        body=body,
    ).save()
    artifacts = keys.SEARCH_ARTIFACTS
    assert repair.sweep(ws) == 1
    assert [h.task_id for h in INDEX.query(ws, q.parse("dingo findings"), substring=None, corpus=artifacts).hits] == [
        "ar_r1"
    ]
    assert INDEX.query(ws, q.parse("dingo"), substring=None).hits == []  # never in the tasks corpus
    # a withdrawal's marker through the stream consumer removes the postings
    gone = SearchPendingRow(*keys.search_pending(ws, doc), doc=doc, taskId="ar_r1", version="", gone=True)
    gone.save()
    image = db.dynamodb_client().get_item(
        TableName=SearchPendingRow.Meta.table_name, Key={"PK": {"S": gone.PK}, "SK": {"S": gone.SK}}
    )["Item"]
    assert search_stream.handler({"Records": [{"eventName": "INSERT", "dynamodb": {"NewImage": image}}]}) == {
        "applied": 1,
        "batchItemFailures": [],
    }
    assert INDEX.query(ws, q.parse("dingo"), substring=None, corpus=artifacts).hits == []
    assert list(SearchPendingRow.query(keys.search_pending_partition(ws, artifacts))) == []


def test_stream_consumer_applies_marker_images(stack):
    ws = make_actor("Indexer").workspace_id  # the consumer skips workspaces that do not exist
    marker = _marker(ws, 2, "stranded wallaby")
    marker.save()
    image = db.dynamodb_client().get_item(
        TableName=SearchPendingRow.Meta.table_name, Key={"PK": {"S": marker.PK}, "SK": {"S": marker.SK}}
    )["Item"]
    event = {
        "Records": [
            {"eventName": "INSERT", "dynamodb": {"NewImage": image}},
            {"eventName": "REMOVE", "dynamodb": {"OldImage": image}},
            {
                "eventName": "INSERT",
                "dynamodb": {"NewImage": {"PK": {"S": "X"}, "SK": {"S": "Y"}, "kind": {"S": "Task"}}},
            },
        ]
    }
    assert search_stream.handler(event) == {"applied": 1, "batchItemFailures": []}
    assert [h.task_id for h in INDEX.query(ws, q.parse("wallaby"), substring=None).hits] == ["tk_r2"]


def test_stream_consumer_on_dynamodb_local_streams(stack, dynamodb_endpoint):
    """Real stream records: a table with a NEW_AND_OLD_IMAGES stream on DynamoDB Local, a marker
    written to it, its records read through GetRecords and handed to the consumer."""
    import boto3

    ws = make_actor("Indexer").workspace_id  # the consumer skips workspaces that do not exist
    name = f"stream-{uuid.uuid4().hex[:8]}"
    kw = {
        "endpoint_url": dynamodb_endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "x",
        "aws_secret_access_key": "x",
    }
    ddb, streams = boto3.client("dynamodb", **kw), boto3.client("dynamodbstreams", **kw)
    desc = ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )["TableDescription"]
    try:
        marker = _marker(ws, 3, "streamed quokka")
        item = marker.serialize()
        ddb.put_item(TableName=name, Item={"PK": {"S": marker.PK}, "SK": {"S": marker.SK}, **item})
        arn = desc["LatestStreamArn"]
        records = []
        for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            it = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON")[
                "ShardIterator"
            ]
            records += streams.get_records(ShardIterator=it)["Records"]
        assert any(r["eventName"] == "INSERT" for r in records)
        assert search_stream.handler({"Records": records}) == {"applied": 1, "batchItemFailures": []}
        assert [h.task_id for h in INDEX.query(ws, q.parse("quokka"), substring=None).hits] == ["tk_r3"]
    finally:
        ddb.delete_table(TableName=name)


def test_repair_loop_sweeps_the_users_workspaces_at_start_and_stops(stack, owner):
    """What ``jentrix dev`` and the in-process stdio adapter run: a marker left in one of the
    user's workspaces is applied by the loop's first sweep; stop() ends the thread."""
    import time

    _marker(owner.workspace_id, 3, "forgotten platypus").save()
    loop = RepairLoop(lambda: [owner.user_id], interval=0.05).start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and list(
            SearchPendingRow.query(keys.search_pending_partition(owner.workspace_id))
        ):
            time.sleep(0.05)
        assert [h.task_id for h in INDEX.query(owner.workspace_id, q.parse("platypus"), substring=None).hits] == [
            "tk_r3"
        ]
        assert loop.applied >= 1
    finally:
        loop.stop()
    assert not loop._thread.is_alive()


def test_repair_loop_survives_a_failing_sweep(stack):
    calls = []

    def users():
        calls.append(1)
        raise RuntimeError("storage away")

    loop = RepairLoop(users, interval=0.01).start()
    try:
        import time

        deadline = time.monotonic() + 5
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(calls) >= 3  # kept ticking after failures
    finally:
        loop.stop()


def test_repair_loop_applies_a_burst_of_edits_in_a_few_sweeps(stack, owner, monkeypatch):
    """The in-process consumer (stdio, ``jentrix dev``) is woken by every commit carrying a
    pending record; during a burst it sweeps at most once per ``settle`` seconds instead of once
    per commit, and the last edit is still the one indexed."""
    import time

    from domain import auth, catalog
    from domain.pipeline import call_tool

    principal = auth.authenticate(owner.token)

    def tool(name: str, args: dict) -> dict:
        outcome = call_tool(catalog.registry().get(name), args, principal)
        assert outcome.error is None, outcome.error
        return outcome.result

    board = tool("create_board", {"workspaceId": owner.workspace_id, "name": "Burst"})
    task = tool("create_task", {"columnId": board["columns"][0]["id"], "title": "first draft"})["task"]
    repair.drain(owner.workspace_id)
    swept: list[str] = []
    real_sweep = repair.sweep

    def counting(workspace_id: str) -> int:
        swept.append(workspace_id)
        return real_sweep(workspace_id)

    monkeypatch.setattr(repair, "sweep", counting)  # counts sweeps; each still runs for real
    loop = RepairLoop(lambda: [owner.user_id], interval=3600.0, verify_every=None, settle=1.0).start()
    try:
        deadline = time.monotonic() + 10
        while not swept and time.monotonic() < deadline:  # the start's sweep of the user's workspaces
            time.sleep(0.02)
        swept.clear()
        began = time.monotonic()
        for n in range(12):
            tool("update_task", {"taskId": task["id"], "title": f"draft {n} wombat{n}"})
        elapsed = time.monotonic() - began
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and list(
            SearchPendingRow.query(keys.search_pending_partition(owner.workspace_id))
        ):
            time.sleep(0.05)
    finally:
        loop.stop()
    # one sweep at the first commit, then at most one per started second of the burst, and one
    # for the commits that arrived during the last (12 sweeps if every commit had its own)
    assert 1 <= len(swept) <= int(elapsed) + 2, (len(swept), elapsed)
    assert [h.task_id for h in INDEX.query(owner.workspace_id, q.parse("wombat11"), substring=None).hits] == [
        task["id"]
    ]
    assert INDEX.query(owner.workspace_id, q.parse("wombat10"), substring=None).hits == []
