"""DynamoDB requests per tool call, counted with botocore events, pinned to docs/data-model.md.

Each expected figure is the tool's own budget from the data-model table plus the pipeline's
fixed cost: token GetItem 1 (the test session disables the warm-process token cache) + rate
window UpdateItem 1 + the access step's BatchGetItem 1 for tools acting inside a workspace
(the membership, together with the items the tool reads first, e.g. the task). The rate
window and the access step's reads run at the same time (round trips: benchmarks.cost_table
and tests/test_cost_budget.py).

These are the exact window's counts with every warm cache off. The warm process's counts (the
deferred window, the member item and column list kept within their bound: 1 request for a
concise get_task and for list_columns) are pinned in tests/test_warm_facts.py, and a call
refused for volume or scope, which sends no request of its own, in tests/test_rate_window.py.
"""

from __future__ import annotations

import uuid

import httpx2
import pytest

from tests.rpc import RequestCounter, call_tool, err, ok

TOKEN, RATE, MEMBER = 1, 1, 1
FIXED_WS = TOKEN + RATE + MEMBER
FIXED = TOKEN + RATE
POWERTOOLS_FIRST_RUN = 2
POWERTOOLS_REPLAY = 1  # after the access read: a replay answers only a caller who may still make the call
# The search index is not part of a write call (docs/search.md, "Write path"): a text write puts
# its pending record in its own transaction (a batch record for a bulk transaction) and the
# consumer writes the postings later. Writes that change text cost what writes that do not cost.
INDEX_NEW = 0
INDEX_EDIT = 0
INDEX_NO_VOCABULARY = 0  # a new comment, or a title without a word of 3+ characters: no sentinel read


@pytest.fixture
def board(server_url, owner):
    b = ok(call_tool(server_url, owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": "Budget"}))
    cols = [c["id"] for c in b["columns"]]
    t1 = ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "one"}))["task"]
    t2 = ok(call_tool(server_url, owner.token, "create_task", {"columnId": cols[0], "title": "two"}))["task"]
    return {"id": b["board"]["id"], "cols": cols, "t1": t1, "t2": t2}


def measure(url, token, name, args):
    counter = RequestCounter()
    with httpx2.Client(timeout=60) as c, counter.watching():
        result = call_tool(url, token, name, args, c)
    return result, counter


def check(url, token, name, args, expected, *, error=False):
    result, counter = measure(url, token, name, args)
    if error:
        err(result)
    else:
        ok(result)
    assert counter.total == expected, f"{name}: {dict(counter.ops)}"
    return result, counter


def test_read_tool_budgets(server_url, owner, board):
    t = board["t1"]
    check(server_url, owner.token, "list_workspaces", {}, FIXED + 2)
    check(server_url, owner.token, "get_token_context", {}, FIXED + 0)
    check(server_url, owner.token, "list_members", {"workspaceId": owner.workspace_id}, FIXED_WS + 1)
    check(server_url, owner.token, "list_boards", {"workspaceId": owner.workspace_id}, FIXED_WS + 1)
    check(
        server_url, owner.token, "list_boards", {"workspaceId": ""}, FIXED_WS + 1 + 1
    )  # "" unpinned over HTTP: + the memberships Query naming the only workspace
    check(server_url, owner.token, "list_columns", {"boardId": board["id"]}, FIXED_WS + 1)
    _, c = check(server_url, owner.token, "get_board_snapshot", {"boardId": board["id"]}, FIXED_WS + 1)
    assert c.ops["Query"] == 1
    # a later page of the snapshot (issue 24, item 13) makes the same one Query
    first = ok(
        check(server_url, owner.token, "get_board_snapshot", {"boardId": board["id"], "limit": 1}, FIXED_WS + 1)[0]
    )
    assert first["nextCursor"]
    _, c = check(
        server_url,
        owner.token,
        "get_board_snapshot",
        {"boardId": board["id"], "limit": 1, "cursor": first["nextCursor"]},
        FIXED_WS + 1,
    )
    assert c.ops["Query"] == 1
    check(
        server_url, owner.token, "get_task", {"taskId": t["id"], "response_format": "concise"}, FIXED_WS + 1
    )  # + header
    check(
        server_url, owner.token, "get_task", {"taskId": t["id"]}, FIXED_WS + 2
    )  # + header, side items (links, subtasks and the newest activity), parallel
    check(
        server_url, owner.token, "get_task", {"workspaceId": owner.workspace_id, "number": t["number"]}, FIXED_WS + 3
    )  # pointer with the membership; + task, header, side items
    check(server_url, owner.token, "list_tasks", {"boardId": board["id"]}, FIXED_WS + 2)
    check(
        server_url,
        owner.token,
        "list_tasks",
        {"columnId": board["cols"][0], "response_format": "detailed"},
        FIXED_WS + 3,
    )
    check(server_url, owner.token, "list_activity", {"boardId": board["id"]}, FIXED_WS + 1)
    check(server_url, owner.token, "list_activity", {"taskId": t["id"]}, FIXED_WS + 1)
    check(
        server_url,
        owner.token,
        "list_activity",
        {"boardId": board["id"], "type": "board.created", "limit": 1},
        FIXED_WS + 1,
    )  # the type's own index: one Query


def test_write_tool_budgets(server_url, owner, board):
    t1, t2 = board["t1"], board["t2"]
    _, c = check(
        server_url, owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": "B2"}, FIXED_WS + 1
    )
    assert c.ops["TransactWriteItems"] == 1
    check(
        server_url, owner.token, "rename_board", {"boardId": board["id"], "name": "Budget 2"}, FIXED_WS + 2
    )  # + header (head and columns, for taskCount), parallel
    check(
        server_url,
        owner.token,
        "manage_columns",
        {"action": "create", "boardId": board["id"], "name": "QA"},
        FIXED_WS + 2,
    )
    # column read with the membership; the number claimed (UpdateItem ADD on the counter); the transaction
    _, c = check(
        server_url,
        owner.token,
        "create_task",
        {"columnId": board["cols"][1], "title": "three"},
        FIXED_WS + 2 + INDEX_NEW,
    )
    assert c.ops["TransactWriteItems"] == 1 and c.ops["UpdateItem"] == RATE + 1
    _res, _ = check(
        server_url,
        owner.token,
        "update_task",
        {"taskId": t1["id"], "title": "uno", "expectedUpdatedAt": t1["updatedAt"]},
        FIXED_WS + 2 + INDEX_EDIT,
    )  # header + transaction
    # CONFLICT costs no extra read: the read that every edit makes already shows the stale stamp.
    check(
        server_url,
        owner.token,
        "update_task",
        {"taskId": t1["id"], "title": "x", "expectedUpdatedAt": t1["updatedAt"]},
        FIXED_WS + 1,
        error=True,
    )
    check(
        server_url, owner.token, "move_task", {"taskId": t2["id"], "columnId": board["cols"][2]}, FIXED_WS + 2
    )  # header + transaction
    check(
        server_url,
        owner.token,
        "move_task",
        {"taskId": t1["id"], "columnId": board["cols"][2], "beforeTaskId": t2["id"]},
        FIXED_WS + 3,
    )  # + neighbour
    check(
        server_url, owner.token, "archive_task", {"taskId": t2["id"]}, FIXED_WS + 2 + INDEX_EDIT
    )  # header + transaction


def test_keyed_create_budget_and_replay(server_url, owner, board):
    args = {"columnId": board["cols"][0], "title": "keyed", "idempotencyKey": f"k-{uuid.uuid4()}"}
    check(server_url, owner.token, "create_task", args, FIXED_WS + 2 + POWERTOOLS_FIRST_RUN + INDEX_NEW)
    _, c = check(server_url, owner.token, "create_task", args, FIXED_WS + POWERTOOLS_REPLAY)
    assert "TransactWriteItems" not in c.ops


def test_create_workspace_budget(server_url, stack):
    from tests.conftest import make_actor

    actor = make_actor("Budd", None)
    # + the caller's memberships Query (the prefixes to avoid); the heads' BatchGetItem once there are any
    check(server_url, actor.token, "create_workspace", {"name": f"Counted {uuid.uuid4().hex[:12]}"}, FIXED + 2 + 1)
    check(server_url, actor.token, "create_workspace", {"name": f"Counted {uuid.uuid4().hex[:12]}"}, FIXED + 2 + 2)


def test_warm_token_cache_saves_the_lookup(server_url, owner, monkeypatch):
    from domain.auth import PAT_VERIFIER
    from domain.settings import settings

    monkeypatch.setattr(settings, "token_cache_seconds", 30)
    PAT_VERIFIER.clear()
    call_tool(server_url, owner.token, "get_token_context", {})
    _, c = check(server_url, owner.token, "get_token_context", {}, RATE)
    assert "GetItem" not in c.ops


def test_comment_tool_budgets(server_url, owner, board):
    t = board["t1"]
    res, c = check(
        server_url,
        owner.token,
        "create_comment",
        {"taskId": t["id"], "body": "counted"},
        FIXED_WS + 1 + INDEX_NO_VOCABULARY,
    )
    assert c.ops["TransactWriteItems"] == 1
    comment = res["structuredContent"]["comment"]
    check(server_url, owner.token, "list_comments", {"taskId": t["id"]}, FIXED_WS + 1)
    check(
        server_url,
        owner.token,
        "update_comment",
        {"commentId": comment["id"], "body": "recounted"},
        FIXED_WS + 1 + INDEX_EDIT,
    )
    check(server_url, owner.token, "delete_comment", {"commentId": comment["id"]}, FIXED_WS + 1 + INDEX_EDIT)


def _walk_trips(url, token, args):
    """Requests of one add_task_link call, and the round trips of its cycle check's Queries."""
    from benchmarks import _support as S

    meter = S.DynamoDBMeter(capacity=False).install()
    try:
        with meter.measuring() as requests, httpx2.Client(timeout=60) as c:
            ok(call_tool(url, token, "add_task_link", args, c))
    finally:
        meter.uninstall()
    return len(requests), S.round_trips([r for r in requests if r.op == "Query"])


def test_link_tool_budgets(server_url, owner, board):
    t1, t2 = board["t1"], board["t2"]
    link = {"fromTaskId": t1["id"], "kind": "RELATES_TO", "toTaskId": t2["id"]}
    check(
        server_url, owner.token, "list_task_links", {"taskId": t1["id"]}, FIXED_WS + 1
    )  # the Query, with the access read
    _, c = check(
        server_url, owner.token, "add_task_link", link, FIXED_WS + 1
    )  # both tasks, heads, edge, counters with the membership
    assert c.ops["TransactWriteItems"] == 1
    check(server_url, owner.token, "add_task_link", link, FIXED_WS + 0)  # stored already: the access read shows it
    check(
        server_url, owner.token, "list_task_links", {"taskId": t1["id"]}, FIXED_WS + 2
    )  # + the other ends and their boards
    check(server_url, owner.token, "remove_task_link", link, FIXED_WS + 1)
    check(server_url, owner.token, "remove_task_link", link, FIXED_WS + 0)


def test_cycle_check_budget_grows_with_the_reachable_chain(server_url, owner, board):
    """A chain of 3 edges c1 BLOCKS c2 BLOCKS c3 BLOCKS c4: the walk queries each task it reaches
    once, one level (one round trip) at a time."""
    col = board["cols"][0]
    chain = [
        ok(call_tool(server_url, owner.token, "create_task", {"columnId": col, "title": f"c{i}"}))["task"]
        for i in range(5)
    ]
    head, c1, c2, c3, c4 = chain
    for a, b in ((c1, c2), (c2, c3), (c3, c4)):
        ok(
            call_tool(
                server_url, owner.token, "add_task_link", {"fromTaskId": a["id"], "kind": "BLOCKS", "toTaskId": b["id"]}
            )
        )
    # head BLOCKS c1: the walk starts at c1 and reaches c2, c3, c4 (4 Queries in 4 levels), then the insert
    _, c = check(
        server_url,
        owner.token,
        "add_task_link",
        {"fromTaskId": head["id"], "kind": "BLOCKS", "toTaskId": c1["id"]},
        FIXED_WS + 4 + 1,
    )
    assert c.ops["Query"] == 4 and c.ops["TransactWriteItems"] == 1
    # c4 BLOCKS head closes head -> c1 -> … -> c4 -> head: 4 Queries (head … c3), c4 is found as c3's successor, refused unwritten
    _, c = check(
        server_url,
        owner.token,
        "add_task_link",
        {"fromTaskId": c4["id"], "kind": "BLOCKS", "toTaskId": head["id"]},
        FIXED_WS + 4,
        error=True,
    )
    assert "TransactWriteItems" not in c.ops
    # c4 DEPENDS_ON c3 restates c3 BLOCKS c4: the walk starts at c4, which must finish before nothing (1 Query)
    check(
        server_url,
        owner.token,
        "add_task_link",
        {"fromTaskId": c4["id"], "kind": "DEPENDS_ON", "toTaskId": c3["id"]},
        FIXED_WS + 1 + 1,
    )
    # c4 BLOCKS c1 closes the 3-edge chain into a cycle: 3 Queries (c1, c2, c3), refused unwritten
    _, c = check(
        server_url,
        owner.token,
        "add_task_link",
        {"fromTaskId": c4["id"], "kind": "BLOCKS", "toTaskId": c1["id"]},
        FIXED_WS + 3,
        error=True,
    )
    assert c.ops["Query"] == 3
    # one round trip per level of the walk: a chain is one Query per level, a fan-out level goes out at once
    fresh, x, a, b, d = (
        ok(call_tool(server_url, owner.token, "create_task", {"columnId": col, "title": f"f{i}"}))["task"]
        for i in range(5)
    )
    assert _walk_trips(
        server_url, owner.token, {"fromTaskId": fresh["id"], "kind": "BLOCKS", "toTaskId": c1["id"]}
    ) == (FIXED_WS + 4 + 1, 4)
    for leaf in (a, b, d):
        ok(
            call_tool(
                server_url,
                owner.token,
                "add_task_link",
                {"fromTaskId": x["id"], "kind": "BLOCKS", "toTaskId": leaf["id"]},
            )
        )
    # fresh BLOCKS x: level 1 is x, level 2 is a, b, d in parallel: 4 Queries in 2 round trips
    assert _walk_trips(server_url, owner.token, {"fromTaskId": fresh["id"], "kind": "BLOCKS", "toTaskId": x["id"]}) == (
        FIXED_WS + 4 + 1,
        2,
    )


def test_subtask_tool_budgets(server_url, owner, board):
    # A subtask write is one transaction (counts moved by ADD on the task's rows), then the task's
    # full item read back (GetItem) for the progress it answers.
    t = board["t1"]
    res, c = check(
        server_url, owner.token, "create_subtask", {"taskId": t["id"], "title": "counted"}, FIXED_WS + 2
    )  # task with the membership; transaction; read-back
    assert c.ops["TransactWriteItems"] == 1 and c.ops["GetItem"] == TOKEN + 1
    subtask = res["structuredContent"]["subtask"]
    check(
        server_url, owner.token, "toggle_subtask", {"subtaskId": subtask["id"], "completed": True}, FIXED_WS + 2
    )  # subtask + task with the membership
    _, c = check(
        server_url, owner.token, "toggle_subtask", {"subtaskId": subtask["id"], "completed": True}, FIXED_WS + 0
    )  # already done: no write
    assert "TransactWriteItems" not in c.ops
    check(server_url, owner.token, "delete_subtask", {"subtaskId": subtask["id"]}, FIXED_WS + 2)
    args = {"taskId": t["id"], "title": "keyed", "idempotencyKey": f"k-{uuid.uuid4()}"}
    check(server_url, owner.token, "create_subtask", args, FIXED_WS + 2 + POWERTOOLS_FIRST_RUN)
    check(server_url, owner.token, "create_subtask", args, FIXED_WS + POWERTOOLS_REPLAY)


def test_set_task_assignees_budget(server_url, owner, board):
    t = board["t2"]
    args = {"taskId": t["id"], "userIds": [owner.user_id]}
    _, c = check(
        server_url, owner.token, "set_task_assignees", args, FIXED_WS + 1
    )  # member items read with the membership; one transaction
    assert c.ops["BatchGetItem"] == 1 and c.ops["TransactWriteItems"] == 1
    check(server_url, owner.token, "set_task_assignees", args, FIXED_WS + 0)  # the same set: no write
    check(
        server_url,
        owner.token,
        "set_task_assignees",
        {"taskId": t["id"], "userIds": ["usr_" + "n" * 12]},
        FIXED_WS + 0,
        error=True,
    )
    # a value that cannot be a user id is refused before the access read (issue 24)
    check(
        server_url,
        owner.token,
        "set_task_assignees",
        {"taskId": t["id"], "userIds": ["usr_nobodyatall"]},
        FIXED + 0,
        error=True,
    )


def test_label_tool_budgets(server_url, owner, board):
    t = board["t1"]
    res, c = check(
        server_url,
        owner.token,
        "manage_labels",
        {"action": "create", "boardId": board["id"], "name": "Bug", "color": "#d73a4a"},
        FIXED_WS + 2,
    )  # + labels Query (parallel) + transaction
    assert c.ops["TransactWriteItems"] == 1 and c.ops["Query"] == 1
    label = res["structuredContent"]["label"]
    check(
        server_url,
        owner.token,
        "manage_labels",
        {"action": "create", "boardId": board["id"], "name": "bug", "color": "#d73a4a"},
        FIXED_WS + 1,
    )  # existing name: no write
    check(
        server_url,
        owner.token,
        "manage_labels",
        {"action": "update", "labelId": label["id"], "name": "Defect"},
        FIXED_WS + 1,
    )  # label + new claim with the membership
    check(server_url, owner.token, "list_labels", {"boardId": board["id"]}, FIXED_WS + 1)
    _, c = check(
        server_url, owner.token, "set_task_labels", {"taskId": t["id"], "labelIds": [label["id"]]}, FIXED_WS + 2
    )  # + head/columns/labels Query (parallel) + transaction
    assert c.ops["TransactWriteItems"] == 1
    check(
        server_url, owner.token, "set_task_labels", {"taskId": t["id"], "labelIds": [label["id"]]}, FIXED_WS + 1
    )  # same set: no write
    check(
        server_url,
        owner.token,
        "set_task_labels",
        {"taskId": t["id"], "labelIds": ["lb_aaaaaaaaaaaa_aaaaaaaa_aaaaaa"]},
        FIXED_WS + 1,
        error=True,
    )
    _, c = check(
        server_url, owner.token, "manage_labels", {"action": "delete", "labelId": label["id"]}, FIXED_WS + 2
    )  # + carriers Query + one transaction (<= 45 tasks)
    assert c.ops["Query"] == 1 and c.ops["TransactWriteItems"] == 1


def test_board_archive_budgets(server_url, owner, board):
    t = board["t1"]
    check(
        server_url, owner.token, "archive_board", {"boardId": board["id"]}, FIXED_WS + 2
    )  # + header (parallel) + transaction
    check(
        server_url, owner.token, "archive_board", {"boardId": board["id"]}, FIXED_WS + 1
    )  # already archived: no write
    # A write on an archived board's task is refused from the entry read with the membership: no transaction.
    _, c = check(server_url, owner.token, "update_task", {"taskId": t["id"], "title": "no"}, FIXED_WS + 1, error=True)
    assert "TransactWriteItems" not in c.ops
    _, c = check(server_url, owner.token, "create_comment", {"taskId": t["id"], "body": "no"}, FIXED_WS, error=True)
    assert "TransactWriteItems" not in c.ops
    check(
        server_url,
        owner.token,
        "unarchive_boards",
        {"workspaceId": owner.workspace_id, "boardIds": [board["id"]]},
        FIXED_WS + 1,
    )  # entries with the membership + transaction
    check(
        server_url,
        owner.token,
        "unarchive_boards",
        {"workspaceId": owner.workspace_id, "boardIds": [board["id"]]},
        FIXED_WS,
    )  # active already: no write


def test_bulk_tool_budgets(server_url, owner, board):
    col = board["cols"][0]
    # bulk_create_tasks: column with the membership; 50 numbers claimed (one UpdateItem ADD); the task
    # set (with the search batch record of the 50 texts), then the full items + pointers + each
    # task's creation entry and its recent-activity item (4 actions a task: two transactions for
    # 50 tasks). No index write inside the call.
    res, c = check(
        server_url,
        owner.token,
        "bulk_create_tasks",
        {"columnId": col, "tasks": [{"title": f"b{i}"} for i in range(50)]},
        FIXED_WS + 4,
    )
    assert c.ops["TransactWriteItems"] == 3 and c.ops["BatchGetItem"] == 1 and "BatchWriteItem" not in c.ops
    made = [t["id"] for t in res["structuredContent"]["tasks"]]
    # up to 25 tasks: the numbers, the task set, then one transaction
    _, c = check(
        server_url,
        owner.token,
        "bulk_create_tasks",
        {"columnId": col, "tasks": [{"title": "k"} for _ in range(25)]},
        FIXED_WS + 3,
    )
    assert c.ops["TransactWriteItems"] == 2
    # bulk edits: every task's full item with the membership (one BatchGetItem), the board header
    # in parallel, then one transaction per chunk (4 actions a task with its recent-activity item):
    # 1 for up to ~24 tasks, 3 for 50.
    check(
        server_url,
        owner.token,
        "bulk_update_tasks",
        {"items": [{"taskId": t, "priority": "LOW"} for t in made[:10]]},
        FIXED_WS + 2,
    )
    _, c = check(
        server_url,
        owner.token,
        "bulk_update_tasks",
        {"items": [{"taskId": t, "priority": "HIGH"} for t in made]},
        FIXED_WS + 4,
    )
    assert c.ops["TransactWriteItems"] == 3 and c.ops["Query"] == 1
    check(
        server_url,
        owner.token,
        "bulk_move_tasks",
        {"items": [{"taskId": t, "columnId": board["cols"][1]} for t in made[:10]]},
        FIXED_WS + 2,
    )
    check(
        server_url,
        owner.token,
        "bulk_move_tasks",
        {"items": [{"taskId": t, "columnId": board["cols"][2]} for t in made]},
        FIXED_WS + 4,
    )
    # keyed: Powertools' two writes on top; a replay is the access read (and the header Query it
    # starts) and the one conditional put.
    args = {"items": [{"taskId": t, "priority": "URGENT"} for t in made[:5]], "idempotencyKey": f"k-{uuid.uuid4()}"}
    check(server_url, owner.token, "bulk_update_tasks", args, FIXED_WS + 2 + POWERTOOLS_FIRST_RUN)
    check(server_url, owner.token, "bulk_update_tasks", args, FIXED_WS + 1 + POWERTOOLS_REPLAY)
    keyed = {"columnId": col, "tasks": [{"title": "k"}], "idempotencyKey": f"k-{uuid.uuid4()}"}
    check(
        server_url, owner.token, "bulk_create_tasks", keyed, FIXED_WS + 3 + POWERTOOLS_FIRST_RUN + INDEX_NO_VOCABULARY
    )


def test_update_workspace_budget(server_url, owner):
    ws = owner.workspace_id
    _, c = check(
        server_url, owner.token, "update_workspace", {"workspaceId": ws, "defaultRepo": "Budget/Repo"}, FIXED_WS + 1
    )  # head with the membership; one transaction
    assert c.ops["TransactWriteItems"] == 1
    check(
        server_url, owner.token, "update_workspace", {"workspaceId": ws, "defaultRepo": "budget/repo"}, FIXED_WS + 0
    )  # unchanged: no write
    check(
        server_url,
        owner.token,
        "update_workspace",
        {"workspaceId": ws, "name": "X", "expectedName": "not it"},
        FIXED_WS + 0,
        error=True,
    )  # stale: the access read shows it


def test_project_tool_budgets(server_url, owner, board):
    from domain import auth

    ws = owner.workspace_id
    res, c = check(
        server_url, owner.token, "create_project", {"workspaceId": ws, "name": "Counted"}, FIXED_WS + 1
    )  # slug claim with the membership; one transaction
    assert c.ops["TransactWriteItems"] == 1
    p = res["structuredContent"]["project"]
    check(
        server_url,
        owner.token,
        "create_project",
        {"workspaceId": ws, "name": "Keyed", "idempotencyKey": f"k-{uuid.uuid4()}"},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )
    ok(
        call_tool(
            server_url, owner.token, "add_project_link", {"projectId": p["id"], "targetType": "DOC", "targetId": "d1"}
        )
    )
    got, _ = check(
        server_url, owner.token, "get_project", {"projectId": p["id"]}, FIXED_WS + 0
    )  # the head with the membership: its links ride on it as copies
    assert [(x["targetType"], x["targetId"]) for x in got["structuredContent"]["links"]] == [("DOC", "d1")]
    check(
        server_url, owner.token, "get_project", {"workspaceId": ws, "slug": "counted"}, FIXED_WS + 1
    )  # claim with the membership; then the head
    check(server_url, owner.token, "list_projects", {"workspaceId": ws}, FIXED_WS + 1)
    check(server_url, owner.token, "update_project", {"projectId": p["id"], "goal": "counted"}, FIXED_WS + 1)
    child = ok(call_tool(server_url, owner.token, "create_project", {"workspaceId": ws, "name": "Child"}))["project"]
    check(
        server_url, owner.token, "update_project", {"projectId": child["id"], "parentId": p["id"]}, FIXED_WS + 1
    )  # a top-level parent: no ancestor to read
    grand = ok(call_tool(server_url, owner.token, "create_project", {"workspaceId": ws, "name": "Grandchild"}))[
        "project"
    ]
    check(
        server_url, owner.token, "update_project", {"projectId": grand["id"], "parentId": child["id"]}, FIXED_WS + 1 + 1
    )  # + 1 GetItem per ancestor above the parent
    link = {"projectId": p["id"], "targetType": "BOARD", "targetId": board["id"]}
    check(
        server_url, owner.token, "add_project_link", link, FIXED_WS + 1
    )  # project, link and board entry with the membership
    check(server_url, owner.token, "add_project_link", link, FIXED_WS + 0)
    check(server_url, owner.token, "remove_project_link", link, FIXED_WS + 1)
    check(server_url, owner.token, "remove_project_link", link, FIXED_WS + 0)

    human, _ = auth.mint_pat(owner.user_id, holder="human")
    repo = f"budget/resolve-{uuid.uuid4().hex[:12]}"
    # no match: memberships Query ‖ GSI2 Query
    check(server_url, human, "resolve_projects_for_repo", {"repo": repo}, FIXED + 2)
    ok(
        call_tool(
            server_url, owner.token, "add_project_link", {"projectId": p["id"], "targetType": "REPO", "targetId": repo}
        )
    )
    _, c = check(
        server_url, human, "resolve_projects_for_repo", {"repo": repo}, FIXED + 3
    )  # + one BatchGetItem of the matched heads
    assert c.ops["BatchGetItem"] == 1
    other = ok(call_tool(server_url, owner.token, "create_workspace", {"name": "Budget Default"}))["workspace"]["id"]
    ok(call_tool(server_url, owner.token, "update_workspace", {"workspaceId": other, "defaultRepo": repo}))
    _, c = check(
        server_url, human, "resolve_projects_for_repo", {"repo": repo}, FIXED + 3 + 1
    )  # + one Query per workspace matched by its default
    assert c.ops["Query"] == 3


def test_member_and_governance_budgets(server_url, stack):
    """Membership tools: the target member, the workspace head (ownerCount) and the governance
    policy are read with the caller's membership (one BatchGetItem); a change is one transaction.
    An agent's governed call adds its earlier approval requests (one Query, parallel with the
    access read); parking writes one PutItem; an approved retry is the change's transaction."""
    from domain import auth, ids
    from domain.store import governance, keys, members
    from domain.store.models import UserRow
    from tests.conftest import make_actor

    human = make_actor("Hal", "Budget Gov", holder="human")
    ws = human.workspace_id
    bea = auth.create_user(f"bea-{uuid.uuid4().hex[:12]}@example.com", "Bea")
    members.add(ws, UserRow.get(*keys.user_profile(bea.userId)), "MEMBER")
    check(
        server_url,
        human.token,
        "set_member_role",
        {"workspaceId": ws, "userId": bea.userId, "role": "ADMIN", "expectedRole": "MEMBER"},
        FIXED_WS + 1,
    )
    check(
        server_url,
        human.token,
        "set_member_role",
        {"workspaceId": ws, "userId": bea.userId, "role": "MEMBER", "expectedRole": "MEMBER"},
        FIXED_WS,
        error=True,
    )  # CONFLICT from the access read
    # invite_member reads the members and the pending invitations (2 Queries, parallel with the access read)
    res, _ = check(
        server_url, human.token, "invite_member", {"workspaceId": ws, "email": "budget@example.com"}, FIXED_WS + 2 + 1
    )
    check(server_url, human.token, "list_invitations", {"workspaceId": ws}, FIXED_WS + 1)
    check(
        server_url,
        human.token,
        "revoke_invitation",
        {"invitationId": res["structuredContent"]["invitation"]["id"]},
        FIXED_WS + 1,
    )
    check(
        server_url,
        human.token,
        "remove_member",
        {"workspaceId": ws, "userId": bea.userId, "expectedRole": "ADMIN"},
        FIXED_WS + 1,
    )
    agent, _ = auth.mint_pat(human.user_id)
    args = {"workspaceId": ws, "email": "agent-budget@example.com"}
    res, _ = check(
        server_url, agent, "invite_member", args, FIXED_WS + 2 + 2
    )  # + approvals Query (parallel) + the request's PutItem
    check(server_url, agent, "invite_member", args, FIXED_WS + 2 + 1)  # still pending: the Query alone
    row = governance.get_approval(ids.parse_approval(res["structuredContent"]["approval"]["id"]))
    governance.decide(row, "APPROVED", actor_id=human.user_id, actor_roles=("ADMIN", "OWNER"))
    res, _ = check(
        server_url, agent, "invite_member", args, FIXED_WS + 2 + 2
    )  # Query + the invitation's transaction (consuming the approval)
    assert res["structuredContent"]["status"] == "APPLIED"


def test_search_tasks_budget(server_url, owner, board):
    # The access BatchGetItem carries the membership, the workspace head (the key prefix) and, for a
    # key-shaped query, its number pointer. In parallel: the board entries and the pending markers
    # (2 Queries), one first-page Query per positive word and per trigram of the substring (the
    # whole text, >= 3 characters), all at once; then the candidates' full items (1 BatchGetItem)
    # and the page's columns (1 BatchGetItem); a word whose list is complete needs no lookups.
    ws = owner.workspace_id
    side, rows = 2, 2
    check(server_url, owner.token, "search_tasks", {"workspaceId": ws, "query": "one"}, FIXED_WS + side + 1 + 1 + rows)
    check(
        server_url,
        owner.token,
        "search_tasks",
        {"workspaceId": ws, "query": "one or two"},
        FIXED_WS + side + 2 + 2 + rows,
    )  # words one, two; trigrams one, two ("or" is too short)
    # nothing matched: no row reads at all
    _, c = check(
        server_url, owner.token, "search_tasks", {"workspaceId": ws, "query": "zzz-404"}, FIXED_WS + side + 2 + 2
    )
    assert "Scan" not in c.ops


def test_search_artifacts_budget(server_url, owner, board):
    # A text artifact's attach is its transaction (with the pending record); the consumer posts it
    # (drained here, as the stream would). search_artifacts: the access BatchGetItem,
    # then in parallel the artifacts corpus's pending markers (1 Query) and a first-page Query per
    # positive word and per trigram of the substring's chunks; the driving chunk's stems were read
    # by the word probes already; then the candidates' heads and the page's bodies (1 BatchGetItem each).
    ws, task = owner.workspace_id, board["t1"]
    args = {
        "workspaceId": ws,
        "type": "FINDINGS",
        "title": "Owl findings",
        "body": "The owl nests are empty.",
        "taskId": task["id"],
    }
    check(server_url, owner.token, "attach_artifact", args, FIXED_WS + 1 + INDEX_NEW)
    from domain.search.repair import drain

    drain(ws)
    pending, heads, bodies = 1, 1, 1
    check(
        server_url,
        owner.token,
        "search_artifacts",
        {"workspaceId": ws, "query": "owl"},
        FIXED_WS + pending + 1 + 1 + heads + bodies,
    )
    # two words, a 4-letter chunk's two trigrams and the 4-letter chunk "nest" (its stem is a word probe)
    check(
        server_url,
        owner.token,
        "search_artifacts",
        {"workspaceId": ws, "query": "owl nest"},
        FIXED_WS + pending + 2 + 1 + 2 + heads + bodies,
    )
    # nothing matched: no head or body reads
    check(server_url, owner.token, "search_artifacts", {"workspaceId": ws, "query": "zzz"}, FIXED_WS + pending + 1 + 1)


def test_session_tool_budgets(server_url, owner, board):
    """docs/data-model.md, "Agent sessions": every session write is one transaction after the
    access read; the gates (project, REPO link or workspace default, provider claim) ride in that
    BatchGetItem; create and attach always carry their required idempotencyKey (Powertools 2)."""
    ws, repo = owner.workspace_id, f"budget/repo-{uuid.uuid4().hex[:12]}"
    project = ok(
        call_tool(
            server_url, owner.token, "create_project", {"workspaceId": ws, "name": f"Sessions {uuid.uuid4().hex[:4]}"}
        )
    )["project"]
    ok(
        call_tool(
            server_url,
            owner.token,
            "add_project_link",
            {"projectId": project["id"], "targetType": "REPO", "targetId": repo},
        )
    )
    create = {"projectId": project["id"], "repo": repo, "idempotencyKey": f"k-{uuid.uuid4()}"}
    res, c = check(
        server_url, owner.token, "create_agent_session", create, FIXED_WS + 1 + POWERTOOLS_FIRST_RUN
    )  # project, link, workspace head with the membership
    assert c.ops["TransactWriteItems"] == 1
    check(server_url, owner.token, "create_agent_session", create, FIXED_WS + POWERTOOLS_REPLAY)
    s = res["structuredContent"]["session"]
    refused = {"projectId": project["id"], "repo": "budget/unlinked", "idempotencyKey": f"k-{uuid.uuid4()}"}
    check(
        server_url, owner.token, "create_agent_session", refused, FIXED_WS + 0 + POWERTOOLS_FIRST_RUN, error=True
    )  # refused from the access read; Powertools puts, then deletes its record
    thread = f"th-{uuid.uuid4()}"
    bind = {"sessionId": s["id"], "provider": "claude-code", "threadId": thread}
    res, _ = check(
        server_url,
        owner.token,
        "attach_agent_session",
        {**bind, "idempotencyKey": f"k-{uuid.uuid4()}"},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )  # session + claim with the membership
    s = res["structuredContent"]["session"]
    check(
        server_url,
        owner.token,
        "attach_agent_session",
        {**bind, "idempotencyKey": f"k-{uuid.uuid4()}"},
        FIXED_WS + 0 + POWERTOOLS_FIRST_RUN,
    )  # already bound: no write
    fresh = {"projectId": project["id"], "repo": repo, "provider": "codex", "threadId": f"th-{uuid.uuid4()}"}
    check(
        server_url,
        owner.token,
        "attach_agent_session",
        {**fresh, "idempotencyKey": f"k-{uuid.uuid4()}"},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )  # attach-create
    check(
        server_url,
        owner.token,
        "attach_agent_session",
        {**fresh, "idempotencyKey": f"k-{uuid.uuid4()}"},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )  # converge: + the claimed session's GetItem
    task = board["t1"]
    res, _ = check(
        server_url,
        owner.token,
        "align_agent_session",
        {"sessionId": s["id"], "taskId": task["id"], "expectedUpdatedAt": s["updatedAt"]},
        FIXED_WS + 1,
    )  # session, workspace head, task with the membership
    s = res["structuredContent"]["session"]
    check(
        server_url,
        owner.token,
        "align_agent_session",
        {"sessionId": s["id"], "taskId": task["id"], "expectedUpdatedAt": s["updatedAt"]},
        FIXED_WS + 0,
    )  # unchanged
    check(
        server_url,
        owner.token,
        "align_agent_session",
        {"sessionId": s["id"], "expectedUpdatedAt": "2020-01-01T00:00:00.000Z"},
        FIXED_WS + 0,
        error=True,
    )  # stale: CONFLICT from the read
    check(
        server_url, owner.token, "get_agent_session", {"sessionId": s["id"]}, FIXED_WS + 2
    )  # alignments ‖ artifacts Queries, parallel
    check(server_url, owner.token, "list_agent_sessions", {"workspaceId": ws}, FIXED_WS + 1)
    ok(
        call_tool(
            server_url,
            owner.token,
            "attach_artifact",
            {
                "workspaceId": ws,
                "type": "TRACE",
                "title": "part 1",
                "url": "https://traces.example.com/1",
                "sessionId": s["id"],
                "tracePart": "part-1",
            },
        )
    )
    done = {
        "sessionId": s["id"],
        "outcome": "INTERRUPTED",
        "expectedUpdatedAt": s["updatedAt"],
        "traceParts": ["part-1", "part-2"],
    }
    res, c = check(
        server_url, owner.token, "complete_agent_session", done, FIXED_WS + 2
    )  # + artifacts Query, parallel; one transaction (head, summary)
    assert c.ops["TransactWriteItems"] == 1
    s = res["structuredContent"]["session"]
    check(server_url, owner.token, "complete_agent_session", done, FIXED_WS + 1)  # the exact repeat: nothing written
    resume = {"sessionId": s["id"], "projectId": project["id"], "repo": repo, "expectedUpdatedAt": s["updatedAt"]}
    check(
        server_url, owner.token, "resume_agent_session", resume, FIXED_WS + 1
    )  # gate items with the membership (projectId and repo given)


def test_artifact_tool_budgets(server_url, owner, board):
    # attach: the linked task with the membership, then one transaction (head, body, link copy,
    # guard, activity row). S3_OBJECT adds the grant GetItem and S3's HeadObject, CopyObject and
    # DeleteObject (+ GetObject on the local emulator, which keeps no checksums). get_artifact
    # reads head and body with the membership: nothing more. list: one Query, parallel.
    import hashlib

    from domain import objects
    from tests.test_uploads import ask, put, request_body

    ws, task = owner.workspace_id, board["t1"]
    s3_ops: list[str] = []
    record = lambda model=None, **_: s3_ops.append(model.name)  # noqa: E731
    objects.client().meta.events.register("before-call.s3", record)
    try:
        res, c = check(
            server_url,
            owner.token,
            "attach_artifact",
            {"workspaceId": ws, "type": "PR", "title": "PR", "url": "https://example.com/pr/1", "taskId": task["id"]},
            FIXED_WS + 1,
        )
        assert c.ops["TransactWriteItems"] == 1 and not s3_ops
        made = res["structuredContent"]["artifact"]
        check(server_url, owner.token, "get_artifact", {"artifactId": made["id"]}, FIXED_WS + 0)
        check(server_url, owner.token, "list_artifacts", {"workspaceId": ws}, FIXED_WS + 1)
        check(
            server_url,
            owner.token,
            "list_artifacts",
            {"workspaceId": ws, "taskId": task["id"], "type": "PR"},
            FIXED_WS + 1,
        )
        data = b"log line\n" * 20
        grant = ask(
            server_url, owner.token, request_body(ws, data, contentType="text/plain", fileName="build.log")
        ).json()
        put(grant, data)
        args = {
            "workspaceId": ws,
            "type": "LOG",
            "title": "build",
            "uploadGrantId": grant["uploadGrantId"],
            "taskId": task["id"],
        }
        s3_ops.clear()
        res, c = check(
            server_url, owner.token, "attach_artifact", args, FIXED_WS + 2
        )  # + grant GetItem; one transaction
        assert s3_ops == ["HeadObject", "GetObject", "CopyObject", "DeleteObject"], s3_ops
        s3_ops.clear()
        check(
            server_url, owner.token, "attach_artifact", args, FIXED_WS + 2
        )  # the same call again: grant + head GetItem, no write
        assert s3_ops == []
        stored = res["structuredContent"]["artifact"]
        assert stored["sha256"] == hashlib.sha256(data).hexdigest()
        s3_ops.clear()
        check(server_url, owner.token, "get_artifact", {"artifactId": stored["id"]}, FIXED_WS + 0)
        assert s3_ops == []  # the download URL is presigned locally
    finally:
        objects.client().meta.events.unregister("before-call.s3", record)


def test_attachment_budgets(server_url, owner, board):
    """list_attachments: the Query only (task item and counter ride with the membership).
    ``POST /api/tasks/{taskId}/attachments``: grant GetItem + the one TransactWriteItems besides
    the fixed cost; S3 HeadObject, CopyObject, DeleteObject (+GetObject: the local emulator keeps
    no checksum, so the bytes are hashed)."""
    import hashlib
    from collections import Counter

    from domain import objects

    t = board["t1"]
    data = b"budgeted bytes\n"
    base = server_url.removesuffix("/api/mcp")
    headers = {"Authorization": f"Bearer {owner.token}"}
    grant = httpx2.post(
        f"{base}/api/artifacts/upload-grant",
        headers=headers,
        timeout=30,
        json={
            "workspaceId": owner.workspace_id,
            "fileName": "b.txt",
            "contentType": "text/plain",
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "purpose": "attachment",
        },
    ).json()
    assert httpx2.put(grant["uploadUrl"], content=data, headers=grant["headers"], timeout=30).status_code == 200
    s3_ops: Counter[str] = Counter()
    s3 = objects.client()

    def on_s3(model=None, **_):
        s3_ops[model.name] += 1

    counter = RequestCounter()
    s3.meta.events.register("before-call.s3", on_s3)
    try:
        with counter.watching():
            r = httpx2.post(
                f"{base}/api/tasks/{t['id']}/attachments",
                headers=headers,
                json={"uploadGrantId": grant["uploadGrantId"]},
                timeout=30,
            )
    finally:
        s3.meta.events.unregister("before-call.s3", on_s3)
    assert r.status_code == 200, r.text
    assert counter.total == FIXED_WS + 2 and counter.ops["TransactWriteItems"] == 1 and counter.ops["GetItem"] == 2, (
        dict(counter.ops)
    )
    assert s3_ops == Counter({"HeadObject": 1, "GetObject": 1, "CopyObject": 1, "DeleteObject": 1}), dict(s3_ops)
    _, c = check(server_url, owner.token, "list_attachments", {"taskId": t["id"]}, FIXED_WS + 1)
    assert c.ops["Query"] == 1


def test_behind_the_lambda_authorizer_the_token_is_not_read(stack):
    """API Gateway REST with our authorizer: the principal arrives in requestContext.authorizer,
    so a call costs the rate window and the tool's own work, with 0 token reads."""
    from domain import auth
    from functions.lambda_handler import handler
    from tests.aws_events import LambdaContext, answer, mcp_headers, rest_event, tools_call
    from tests.conftest import make_actor

    actor = make_actor("Gated", usage_key=("k", "usage-key-value-0123456789abcdef", "plan"))
    ctx = auth.authorizer_context(auth.authenticate(actor.token))
    for name, args, expected in (
        ("get_token_context", {}, RATE),
        ("list_boards", {"workspaceId": actor.workspace_id}, RATE + MEMBER + 1),
    ):
        event = rest_event("POST", "/api/mcp", mcp_headers(actor.token), tools_call(name, args), authorizer=ctx)
        counter = RequestCounter()
        with counter.watching():
            status, _, body = answer(handler(event, LambdaContext()))
        assert status == 200 and not body["result"]["isError"], body
        assert counter.total == expected, f"{name}: {dict(counter.ops)}"
        assert "GetItem" not in counter.ops, f"{name}: {dict(counter.ops)}"


def test_economy_read_budgets(server_url, owner, board):
    """Issue 14: filtered list_tasks and list_my_work (docs/data-model.md, "Work index")."""
    t1, t2 = board["t1"], board["t2"]
    ws = owner.workspace_id
    check(
        server_url, owner.token, "list_my_work", {"workspaceId": ws}, FIXED_WS + 1
    )  # nothing assigned: the GSI3 Query alone
    for t in (t1, t2):
        ok(call_tool(server_url, owner.token, "set_task_assignees", {"taskId": t["id"], "userIds": [owner.user_id]}))
    _, c = check(
        server_url, owner.token, "list_my_work", {"workspaceId": ws}, FIXED_WS + 2
    )  # Query + one BatchGetItem (rows, columns, boards)
    assert c.ops["Query"] == 1
    check(
        server_url,
        owner.token,
        "list_my_work",
        {"workspaceId": ws, "labelName": "none", "priority": "HIGH"},
        FIXED_WS + 2,
    )  # label claims ride along
    check(
        server_url, owner.token, "list_tasks", {"boardId": board["id"], "assigneeId": "me"}, FIXED_WS + 2
    )  # header + the filtered Query to the end
    check(
        server_url, owner.token, "list_tasks", {"boardId": board["id"], "labelName": "none"}, FIXED_WS + 3
    )  # + the label-name claim
    check(
        server_url, owner.token, "set_task_assignees", {"taskId": t1["id"], "userIds": []}, FIXED_WS + 1
    )  # the entries ride in the one transaction


def test_bulk_create_budget_does_not_grow_with_new_vocabulary(server_url, owner, board):
    """50 tasks with 2,000-character descriptions whose words the workspace has never seen: the
    call writes the entities and their durable search records only (issue 23: at most 10
    DynamoDB requests, whatever the vocabulary)."""
    import random
    import string

    rng = random.Random(23)

    def text(n: int) -> str:
        words = []
        while sum(len(w) + 1 for w in words) < n:
            words.append("".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 12))))
        return " ".join(words)[:n]

    tasks = [{"title": text(60), "description": text(2000)} for _ in range(50)]
    _, c = check(
        server_url, owner.token, "bulk_create_tasks", {"columnId": board["cols"][0], "tasks": tasks}, FIXED_WS + 4
    )
    assert c.total <= 10 and "BatchWriteItem" not in c.ops


def test_coordination_tool_budgets(server_url, owner, board):
    """The coordination toolset (issue 29; docs/data-model.md, "Coordination"), served at /api/mcp/x/coordination."""
    from domain import auth
    from domain.store import keys, members
    from domain.store.models import UserRow

    url = f"{server_url}/x/coordination"
    ws = owner.workspace_id
    peer = auth.create_user(f"peer-{uuid.uuid4().hex[:12]}@example.com", "Peer")
    members.add(ws, UserRow.get(*keys.user_profile(peer.userId)), "MEMBER")
    peer_token = auth.mint_pat(peer.userId)[0]
    t = board["t1"]
    # the task and its claim head ride in the membership BatchGetItem; + the claim transaction
    args = {"workspace": ws, "idempotency_key": f"k-{uuid.uuid4()}", "task_id": t["id"], "scope": ["src"]}
    _, c = check(url, owner.token, "mj_begin", args, FIXED_WS + 1 + POWERTOOLS_FIRST_RUN)
    assert c.ops["TransactWriteItems"] == 1
    check(url, owner.token, "mj_begin", args, FIXED_WS + POWERTOOLS_REPLAY)
    check(
        url,
        peer_token,
        "mj_begin",
        {**args, "idempotency_key": f"k-{uuid.uuid4()}"},
        FIXED_WS + POWERTOOLS_FIRST_RUN,
        error=True,
    )  # refused: no write
    # a new task and its claim: the number claimed (UpdateItem ADD) + one transaction
    new = {
        "workspace": ws,
        "idempotency_key": f"k-{uuid.uuid4()}",
        "column_id": board["cols"][0],
        "title": "claimed at birth",
    }
    _, c = check(url, owner.token, "mj_start_work", new, FIXED_WS + 2 + POWERTOOLS_FIRST_RUN)
    assert c.ops["TransactWriteItems"] == 1
    check(
        url, owner.token, "mj_work_context", {"workspace": ws, "task_id": t["id"]}, FIXED_WS + 1
    )  # one Query of CO#<task>
    check(url, owner.token, "mj_peers", {"workspace": ws}, FIXED_WS + 2)  # members Query + sessions Query, parallel
    # the caller's claims Query + one Query per inbox shard, all at once
    _, c = check(url, owner.token, "mj_brief", {"workspace": ws}, FIXED_WS + 1 + keys.INBOX_SHARDS)
    assert c.ops["Query"] == 1 + keys.INBOX_SHARDS
    ask = {
        "workspace": ws,
        "idempotency_key": f"k-{uuid.uuid4()}",
        "task_id": t["id"],
        "assignee_actor_id": peer.userId,
        "question": "Which one?",
    }
    res, c = check(
        url, owner.token, "mj_ask", ask, FIXED_WS + 1 + POWERTOOLS_FIRST_RUN
    )  # the assignee's member item rides with the membership
    assert c.ops["TransactWriteItems"] == 1
    rid = res["structuredContent"]["request"]["id"]
    check(url, owner.token, "mj_ask", ask, FIXED_WS + POWERTOOLS_REPLAY)
    check(
        url, owner.token, "mj_request", {"workspace": ws, "request_id": rid}, FIXED_WS
    )  # the request rides with the membership
    check(
        url, owner.token, "mj_wait_request", {"workspace": ws, "request_id": rid, "timeout_seconds": 0}, FIXED_WS
    )  # bound 0: no poll
    check(
        url,
        owner.token,
        "mj_cancel_request",
        {"workspace": ws, "idempotency_key": f"k-{uuid.uuid4()}", "request_id": rid},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )
    check(
        url,
        peer_token,
        "mj_reply_late",
        {"workspace": ws, "idempotency_key": f"k-{uuid.uuid4()}", "request_id": rid, "reply": "ok"},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )
    res, _ = check(
        url, owner.token, "mj_ask", {**ask, "idempotency_key": f"k-{uuid.uuid4()}"}, FIXED_WS + 1 + POWERTOOLS_FIRST_RUN
    )
    rid = res["structuredContent"]["request"]["id"]
    check(
        url,
        peer_token,
        "mj_answer",
        {"workspace": ws, "idempotency_key": f"k-{uuid.uuid4()}", "request_id": rid, "answer": "This."},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )
    # a direct message: the recipient's member item rides with the membership; one transaction
    check(
        url,
        owner.token,
        "mj_post",
        {"workspace": ws, "idempotency_key": f"k-{uuid.uuid4()}", "to_actor_id": peer.userId, "text": "hi"},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )
    # one Query per shard, all at once; + one transaction stamping readAt on what was unread
    _, c = check(url, peer_token, "mj_inbox", {"workspace": ws}, FIXED_WS + keys.INBOX_SHARDS + 1)
    assert c.ops["TransactWriteItems"] == 1
    check(
        url, peer_token, "mj_inbox", {"workspace": ws, "unread_only": True}, FIXED_WS + keys.INBOX_SHARDS
    )  # nothing new: no write
    # an operator's attention read: the workspace item rides in the membership BatchGetItem; one Query, no write
    human = auth.mint_pat(owner.user_id, holder="human")[0]
    _, c = check(url, human, "mj_inbox", {"workspace": ws, "operator_attention": True}, FIXED_WS + 1)
    assert "TransactWriteItems" not in c.ops and c.ops["UpdateItem"] == 1  # the rate window only
    # review: the artifact's head read for its digest (one GetItem per artifact) + one transaction
    art = ok(
        call_tool(
            server_url,
            owner.token,
            "attach_artifact",
            {"workspaceId": ws, "type": "PR", "title": "pr", "url": "https://example.com/pr", "taskId": t["id"]},
        )
    )["artifact"]
    seen, _ = check(
        url, owner.token, "mj_artifact", {"workspace": ws, "artifact_id": art["id"]}, FIXED_WS + 2
    )  # head GetItem + its task's Query
    digest = seen["structuredContent"]["artifact"]["digest"]
    res, _ = check(
        url,
        owner.token,
        "mj_finish",
        {
            "workspace": ws,
            "idempotency_key": f"k-{uuid.uuid4()}",
            "task_id": t["id"],
            "reviewer_actor_id": peer.userId,
            "artifacts": [{"artifact_id": art["id"], "digest": digest}],
        },
        FIXED_WS + 1 + 1 + POWERTOOLS_FIRST_RUN,
    )
    review = res["structuredContent"]["review"]["id"]
    check(
        url, peer_token, "mj_artifact_comments", {"workspace": ws, "review_id": review}, FIXED_WS
    )  # the review rides with the membership
    check(
        url,
        peer_token,
        "mj_accept_artifact",
        {"workspace": ws, "idempotency_key": f"k-{uuid.uuid4()}", "review_id": review, "expected_revision": 1},
        FIXED_WS + 1 + 1 + POWERTOOLS_FIRST_RUN,
    )
    # channels: the message, the channel entry's ADD, the guard and the log row in one transaction
    res, _ = check(
        url,
        owner.token,
        "mj_post",
        {"workspace": ws, "idempotency_key": f"k-{uuid.uuid4()}", "channel": "ideas", "text": "idea"},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )
    message = res["structuredContent"]["messageId"]
    check(url, owner.token, "mj_channels", {"workspace": ws}, FIXED_WS + 1)
    check(url, owner.token, "mj_channel_messages", {"workspace": ws, "channel": "ideas"}, FIXED_WS + 1)
    promote = {"workspace": ws, "channel": "ideas", "message_id": message, "column_id": board["cols"][0]}
    # message + promotion GetItems, the task number's UpdateItem, one transaction
    check(
        url,
        owner.token,
        "mj_promote_message",
        {**promote, "idempotency_key": f"k-{uuid.uuid4()}"},
        FIXED_WS + 4 + POWERTOOLS_FIRST_RUN,
    )
    check(
        url,
        peer_token,
        "mj_promote_message",
        {**promote, "idempotency_key": f"k-{uuid.uuid4()}"},
        FIXED_WS + 2 + POWERTOOLS_FIRST_RUN,
    )  # promoted already
    check(url, owner.token, "mj_promotions", {"workspace": ws, "channel": "ideas"}, FIXED_WS + 1)
    # to a proposed decision: the message GetItem, one transaction (decision, promotion, guard, log row)
    decide = {"workspace": ws, "channel": "ideas", "message_id": message, "target": "decision"}
    check(
        url,
        owner.token,
        "mj_promote_message",
        {**decide, "idempotency_key": f"k-{uuid.uuid4()}"},
        FIXED_WS + 2 + POWERTOOLS_FIRST_RUN,
    )
    check(
        url,
        peer_token,
        "mj_promote_message",
        {**decide, "idempotency_key": f"k-{uuid.uuid4()}"},
        FIXED_WS + 2 + POWERTOOLS_FIRST_RUN,
    )  # promoted already: the failed transaction's ALL_OLD is the earlier promotion, no read added
    # the promotions' Query and one BatchGetItem of the decisions they name
    check(url, owner.token, "mj_promotions", {"workspace": ws, "channel": "ideas"}, FIXED_WS + 2)


@pytest.mark.parametrize(
    "tool",
    ["update_task", "create_comment", "archive_task", "manage_columns", "create_task", "bulk_update_tasks"],
)
def test_a_call_refused_for_its_scope_sends_nothing_but_the_token_lookup(server_url, owner, board, tool):
    """FORBIDDEN by the token's scope is decided before the access step: no read of the target
    and no membership read (issue 25). Over HTTP the request still counts in the rate window
    (every JSON-RPC request does: docs/rate-limits.md), so the window's UpdateItem may go out."""
    from domain import auth

    reader, _ = auth.mint_pat(owner.user_id, scopes=["read"])
    t = board["t1"]
    args = {
        "update_task": {"taskId": t["id"], "title": "no"},
        "create_comment": {"taskId": t["id"], "body": "no"},
        "archive_task": {"taskId": t["id"]},
        "manage_columns": {"action": "create", "boardId": board["id"], "name": "No"},
        "create_task": {"columnId": board["cols"][0], "title": "no"},
        "bulk_update_tasks": {"items": [{"taskId": t["id"], "priority": "LOW"}]},
    }[tool]
    result, counter = measure(server_url, reader, tool, args)
    assert err(result)["code"] == "FORBIDDEN"
    assert counter.ops["GetItem"] == TOKEN and set(counter.ops) <= {"GetItem", "UpdateItem"}, dict(counter.ops)
    assert counter.ops["UpdateItem"] <= RATE


def test_integration_tool_budgets(server_url, owner, board):
    """Linked integration work (issue 30; docs/data-model.md, "Coordination")."""
    from domain import auth
    from domain.store import keys, members
    from domain.store.models import UserRow

    url = f"{server_url}/x/coordination"
    ws = owner.workspace_id
    peer = auth.create_user(f"peer-{uuid.uuid4().hex[:12]}@example.com", "Peer")
    members.add(ws, UserRow.get(*keys.user_profile(peer.userId)), "MEMBER")
    peer_token = auth.mint_pat(peer.userId)[0]
    parent, helper = board["t1"], board["t2"]
    # both tasks ride in the membership BatchGetItem; one transaction (link, guard, activity)
    link = {"workspace": ws, "task_id": parent["id"], "helper_task_id": helper["id"]}
    _, c = check(
        url,
        owner.token,
        "mj_link_helper",
        {**link, "idempotency_key": f"k-{uuid.uuid4()}"},
        FIXED_WS + 1 + POWERTOOLS_FIRST_RUN,
    )
    assert c.ops["TransactWriteItems"] == 1
    art = ok(
        call_tool(
            server_url,
            owner.token,
            "attach_artifact",
            {"workspaceId": ws, "type": "PR", "title": "pr", "url": "https://example.com/pr", "taskId": parent["id"]},
        )
    )["artifact"]
    from domain.store import artifacts, coordination

    digest = coordination.artifact_digest(artifacts.get(ws, art["id"]))
    helper_rev = ok(call_tool(server_url, owner.token, "get_task", {"taskId": helper["id"]}))["task"]["updatedAt"]
    freeze = {
        "workspace": ws,
        "idempotency_key": f"k-{uuid.uuid4()}",
        "task_id": parent["id"],
        "reviewer_actor_id": peer.userId,
        "artifacts": [{"artifact_id": art["id"], "digest": digest}],
        "tasks": [{"task_id": helper["id"], "revision": helper_rev}],
    }
    # parent + reviewer's member item with the membership; artifact GetItem, helper links Query,
    # helper task GetItem; one transaction (integration, reviewer's entry, guards, activity)
    res, c = check(url, owner.token, "mj_freeze_integration", freeze, FIXED_WS + 4 + POWERTOOLS_FIRST_RUN)
    ig = res["structuredContent"]["integration"]
    # the integration with the membership; helper links Query; one GetItem per frozen input (drift)
    check(url, peer_token, "mj_integration", {"workspace": ws, "integration_id": ig["id"]}, FIXED_WS + 3)
    accept = {
        "workspace": ws,
        "idempotency_key": f"k-{uuid.uuid4()}",
        "integration_id": ig["id"],
        "expected_revision": 1,
        "frozen_digest": ig["frozenDigest"],
    }
    # the integration with the membership; one GetItem per frozen input; one transaction
    check(url, peer_token, "mj_accept_integration", accept, FIXED_WS + 3 + POWERTOOLS_FIRST_RUN)


def test_continuity_tool_budgets(server_url, owner):
    """Continuity and recovery evidence (issue 30): the session head rides in the membership
    BatchGetItem (with the workspace item, for the operator check); then its alignments, the
    operator's claim copies, its artifacts and one Query per inbox shard, all at once; no write."""
    from domain import auth
    from domain.store import keys

    url = f"{server_url}/x/coordination"
    ws = owner.workspace_id
    project = ok(
        call_tool(server_url, owner.token, "create_project", {"workspaceId": ws, "name": f"P {uuid.uuid4().hex[:12]}"})
    )["project"]
    link = {"projectId": project["id"], "targetType": "REPO", "targetId": "acme/app"}
    ok(call_tool(server_url, owner.token, "add_project_link", link))
    session = ok(
        call_tool(
            server_url,
            owner.token,
            "create_agent_session",
            {"projectId": project["id"], "repo": "acme/app", "idempotencyKey": uuid.uuid4().hex},
        )
    )["session"]
    args = {"workspace": ws, "session_id": session["id"]}
    check(url, owner.token, "mj_continuation", args, FIXED_WS + 3 + keys.INBOX_SHARDS)
    human = auth.mint_pat(owner.user_id, holder="human")[0]
    check(url, human, "mj_recovery_evidence", args, FIXED_WS + 3 + keys.INBOX_SHARDS)


def test_consultation_tool_budgets(server_url, owner, board):
    """Consultation preparation (issue 30): the consultation (or the task) rides in the membership
    BatchGetItem; one GetItem per artifact whose digest is checked; one transaction per write."""
    from domain import auth
    from domain.store import artifacts, coordination

    url = f"{server_url}/x/coordination"
    ws = owner.workspace_id
    human = auth.mint_pat(owner.user_id, holder="human")[0]
    t = board["t1"]

    def attach(title):
        art = ok(
            call_tool(
                server_url,
                owner.token,
                "attach_artifact",
                {"workspaceId": ws, "type": "PR", "title": title, "url": "https://example.com/pr", "taskId": t["id"]},
            )
        )["artifact"]
        return art["id"], coordination.artifact_digest(artifacts.get(ws, art["id"]))

    check(url, owner.token, "mj_consult_profiles", {"workspace": ws}, FIXED_WS)
    a1, d1 = attach("one")
    a2, d2 = attach("two")
    consult = {
        "workspace": ws,
        "idempotency_key": f"k-{uuid.uuid4()}",
        "task_id": t["id"],
        "profile": "research",
        "question": "q",
        "artifacts": [{"artifact_id": a1, "digest": d1}],
    }
    res, _ = check(url, owner.token, "mj_consult", consult, FIXED_WS + 2 + POWERTOOLS_FIRST_RUN)
    cid = res["structuredContent"]["consultation"]["id"]
    detail = {"workspace": ws, "consultation_id": cid}
    check(url, owner.token, "mj_consult_detail", detail, FIXED_WS)
    research = {
        **detail,
        "idempotency_key": f"k-{uuid.uuid4()}",
        "expected_revision": 1,
        "artifact_id": a2,
        "digest": d2,
    }
    res, _ = check(url, owner.token, "mj_consult_research_input", research, FIXED_WS + 2 + POWERTOOLS_FIRST_RUN)
    digest = res["structuredContent"]["consultation"]["inputsDigest"]
    approve = {**detail, "idempotency_key": f"k-{uuid.uuid4()}", "expected_revision": 2, "inputs_digest": digest}
    check(url, human, "mj_consult_approve", approve, FIXED_WS + 3 + POWERTOOLS_FIRST_RUN)  # 2 inputs re-read
    check(url, owner.token, "mj_consult_queue", {"workspace": ws}, FIXED_WS + 1)
    result = {**detail, "idempotency_key": f"k-{uuid.uuid4()}", "expected_revision": 3, "text": "r"}
    check(url, owner.token, "mj_consult_results", result, FIXED_WS + 1 + POWERTOOLS_FIRST_RUN)
