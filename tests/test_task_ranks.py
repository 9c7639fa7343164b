"""Task ranks stay bounded: moves into one spot again and again rebalance the window around it
instead of growing a rank until DynamoDB's sort-key limit (seen at ~6,000 moves before), and a
write DynamoDB refuses for its size is a clear envelope, never INTERNAL."""

from __future__ import annotations

from pydantic import Field

from domain import auth
from domain.catalog import registry as product_registry
from domain.pipeline import call_tool
from domain.registry import ToolInput, ToolOutput, ToolSpec
from domain.store import tasks as task_store
from tests.conftest import make_actor


def _call(principal, name, args):
    out = call_tool(product_registry().get(name), args, principal)
    assert out.error is None, out.error
    return out.result


def _column_order(principal, board_id, column_id):
    snap = _call(principal, "get_board_snapshot", {"boardId": board_id})
    column = next(c for c in snap["columns"] if c["id"] == column_id)
    return column["taskIds"]


def test_repeated_moves_to_one_spot_keep_ranks_short_and_order_exact(stack, monkeypatch):
    from domain.store import keys
    from domain.store.models import ColumnRow, TaskRow

    monkeypatch.setattr(task_store, "MAX_RANK_LENGTH", 5)
    monkeypatch.setattr(task_store, "REBALANCE_SIDE", 4)
    actor = make_actor("Ranker")
    principal = auth.authenticate(actor.token)
    board = _call(principal, "create_board", {"workspaceId": actor.workspace_id, "name": "Ranks"})
    board_id, column_id = board["board"]["id"], board["columns"][0]["id"]
    ids = [_call(principal, "create_task", {"columnId": column_id, "title": f"t{i}"})["task"]["id"] for i in range(10)]
    anchor = ids[5]
    a, b = ids[0], ids[9]
    for i in range(60):
        mover = a if i % 2 == 0 else b
        _call(principal, "move_task", {"taskId": mover, "beforeTaskId": anchor})
        ranks = [r.rank for r in TaskRow.gsi1.query(keys.column_order_partition(column_id)) if isinstance(r, TaskRow)]
        assert max(len(r) for r in ranks) <= task_store.MAX_RANK_LENGTH, ranks
        assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)
        order = _column_order(principal, board_id, column_id)
        assert order[order.index(anchor) - 1] == mover  # the moved task sits right above the anchor
        assert sorted(order) == sorted(ids)
    column = ColumnRow.get(*keys.column(board_id, column_id), consistent_read=True)
    tail = [
        r.rank for r in TaskRow.gsi1.query(keys.column_order_partition(column_id), scan_index_forward=False, limit=1)
    ]
    assert column.lastRank == tail[0]  # appends still land at the bottom after a rebalance
    last = _call(principal, "create_task", {"columnId": column_id, "title": "after"})["task"]["id"]
    assert _column_order(principal, board_id, column_id)[-1] == last


class _In(ToolInput):
    text: str = Field(description="text")


class _Out(ToolOutput):
    ok: bool


def test_a_write_dynamodb_refuses_for_its_size_is_an_envelope(stack):
    """A real ValidationException from DynamoDB Local (a sort key over 1 KB) reaches the pipeline."""
    from domain.store.models import SlugRow

    def handler(ctx, args):
        SlugRow("SLUG-test-oversized", args.text, workspaceId="ws_x").save()
        return {"ok": True}

    spec = ToolSpec(
        name="oversized",
        title="Oversized",
        description="test only",
        area="context",
        scope="write",
        input_model=_In,
        output_model=_Out,
        handler=handler,
    )
    out = call_tool(spec, {"text": "k" * 1500}, auth.authenticate(make_actor("Big").token))
    assert out.error["error"]["code"] == "INVALID_INPUT", out.error
    assert "larger than the store accepts" in out.error["error"]["message"]
