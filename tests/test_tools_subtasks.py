"""Subtasks and assignees through the official SDK client: an ordered checklist of at most 100
items counted on the task's rows, idempotent toggles, archived tasks closed, exact counts under
concurrent creates and toggles; assignees replaced as a set, members only, rows in agreement."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

from tests.conftest import mcp_client
from tests.tools_support import activity_rows, err, names_field, new_board, new_task, ok, stored_state


async def _task(c, workspace_id, title="Checklist"):
    board = await new_board(c, workspace_id, f"Subtasks {uuid.uuid4().hex[:12]}")
    return board, await new_task(c, board["columns"][0]["id"], title)


def _fill(secret: str, task_id: str, count: int) -> None:
    """Setup shortcut: ``count`` create_subtask calls through the pipeline in this process."""
    from domain import auth, pipeline
    from domain.catalog import registry

    principal = auth.authenticate(secret)
    spec = registry().get("create_subtask")
    for i in range(count):
        out = pipeline.call_tool(spec, {"taskId": task_id, "title": f"step {i + 1}"}, principal)
        assert out.result is not None, out.error


def _stored_subtasks(task_id: str) -> list[dict]:
    from domain.settings import settings
    from domain.store import db, keys

    out, kwargs = (
        [],
        {
            "TableName": settings.table,
            "ConsistentRead": True,
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :st)",
            "ExpressionAttributeValues": {
                ":pk": {"S": keys.task_side_partition(task_id)},
                ":st": {"S": keys.SUBTASKS_PREFIX},
            },
        },
    )
    while True:
        page = db.dynamodb_client().query(**kwargs)
        out += page["Items"]
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _task_rows(task_id: str) -> tuple[dict, dict | None]:
    """The task's full item and compact row, straight from the table."""
    from domain import ids
    from domain.settings import settings
    from domain.store import db, keys

    ref = ids.parse_task(task_id)
    client = db.dynamodb_client()

    def get(key):
        return client.get_item(
            TableName=settings.table, Key={"PK": {"S": key[0]}, "SK": {"S": key[1]}}, ConsistentRead=True
        ).get("Item")

    return get(keys.task_full(ref.board_id, ref.number)), get(keys.task_compact(ref.board_id, ref.number))


def _counts(item: dict) -> tuple[int, int]:
    return int(item.get("subtaskCount", {"N": "0"})["N"]), int(item.get("subtasksDone", {"N": "0"})["N"])


async def test_checklist_keeps_creation_order_and_counts_show_on_every_view(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board, task = await _task(c, owner.workspace_id)
        assert task["subtaskCount"] == 0 and task["subtasksDone"] == 0
        made = []
        for title in ("write spec", "build", "  ship  "):
            res = await ok(c, "create_subtask", {"taskId": task["id"], "title": title})
            made.append(res["subtask"])
            assert res["progress"]["subtaskCount"] == len(made) and res["progress"]["subtasksDone"] == 0
        assert made[2]["title"] == "ship" and not made[0]["completed"] and made[0]["completedAt"] is None
        assert all(
            m["id"].startswith("st_") and m["taskId"] == task["id"] and m["createdBy"] == owner.user_id for m in made
        )
        done = await ok(c, "toggle_subtask", {"subtaskId": made[1]["id"], "completed": True})
        assert (
            done["changed"]
            and done["subtask"]["completed"]
            and done["subtask"]["completedAt"] == done["subtask"]["updatedAt"]
        )
        assert done["progress"] == {
            "taskId": task["id"],
            "subtaskCount": 3,
            "subtasksDone": 1,
            "taskUpdatedAt": done["progress"]["taskUpdatedAt"],
        }

        got = await ok(c, "get_task", {"taskId": task["id"]})
        assert [s["id"] for s in got["subtasks"]] == [m["id"] for m in made]
        assert [s["completed"] for s in got["subtasks"]] == [False, True, False]
        assert got["task"]["subtaskCount"] == 3 and got["task"]["subtasksDone"] == 1
        # A subtask write stamps the task (its rows were rewritten under CAS with the counts).
        assert got["task"]["updatedAt"] == done["progress"]["taskUpdatedAt"] > task["updatedAt"]
        by_number = await ok(c, "get_task", {"workspaceId": owner.workspace_id, "number": task["number"]})
        assert by_number["subtasks"] == got["subtasks"]
        concise = await ok(c, "get_task", {"taskId": task["id"], "response_format": "concise"})
        assert concise["subtasks"] is None and concise["task"]["subtaskCount"] == 3

        snap = await ok(
            c, "get_board_snapshot", {"boardId": board["board"]["id"], "fields": ["subtaskCount", "subtasksDone"]}
        )
        row = next(t for t in snap["tasks"] if t["id"] == task["id"])
        assert (row["subtaskCount"], row["subtasksDone"]) == (3, 1)
        listed = await ok(c, "list_tasks", {"boardId": board["board"]["id"]})
        assert (listed["tasks"][0]["subtaskCount"], listed["tasks"][0]["subtasksDone"]) == (3, 1)

        reopened = await ok(c, "toggle_subtask", {"subtaskId": made[1]["id"], "completed": False})
        assert (
            reopened["changed"]
            and reopened["subtask"]["completedAt"] is None
            and reopened["progress"]["subtasksDone"] == 0
        )
        await ok(c, "toggle_subtask", {"subtaskId": made[0]["id"], "completed": True})
        gone = await ok(c, "delete_subtask", {"subtaskId": made[0]["id"]})
        assert (
            gone["deleted"]["id"] == made[0]["id"]
            and gone["progress"]["subtaskCount"] == 2
            and gone["progress"]["subtasksDone"] == 0
        )
        again = await err(c, "delete_subtask", {"subtaskId": made[0]["id"]})
        assert again["code"] == "NOT_FOUND"
        after = await ok(c, "get_task", {"taskId": task["id"]})
        assert [s["id"] for s in after["subtasks"]] == [made[1]["id"], made[2]["id"]]
        types = [r["type"]["S"] for r in activity_rows(board["board"]["id"]) if r["type"]["S"].startswith("subtask.")]
        assert Counter(types) == {
            "subtask.created": 3,
            "subtask.completed": 2,
            "subtask.reopened": 1,
            "subtask.deleted": 1,
        }
        filtered = await ok(c, "list_activity", {"taskId": task["id"], "type": "subtask.completed"})
        assert len(filtered["activity"]) == 2
    full, compact = _task_rows(task["id"])
    assert _counts(full) == _counts(compact) == (2, 0) == (len(_stored_subtasks(task["id"])), 0)


async def test_toggling_to_the_same_state_twice_writes_one_activity_row(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board, task = await _task(c, owner.workspace_id)
        sub = (await ok(c, "create_subtask", {"taskId": task["id"], "title": "once"}))["subtask"]
        first = await ok(c, "toggle_subtask", {"subtaskId": sub["id"], "completed": True})
        before = stored_state()
        second = await ok(c, "toggle_subtask", {"subtaskId": sub["id"], "completed": True})
        assert stored_state() == before, "the second toggle wrote"
        assert (
            second["changed"] is False
            and second["subtask"] == first["subtask"]
            and second["progress"] == first["progress"]
        )
        rows = [r for r in activity_rows(board["board"]["id"]) if r["type"]["S"] == "subtask.completed"]
        assert len(rows) == 1
        still_open = (await ok(c, "create_subtask", {"taskId": task["id"], "title": "open"}))["subtask"]
        noop = await ok(c, "toggle_subtask", {"subtaskId": still_open["id"], "completed": False})
        assert noop["changed"] is False and not [
            r for r in activity_rows(board["board"]["id"]) if r["type"]["S"] == "subtask.reopened"
        ]


async def test_the_101st_subtask_is_refused_and_nothing_is_written(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, task = await _task(c, owner.workspace_id)
        _fill(owner.token, task["id"], 100)
        before = stored_state()
        refused = await err(c, "create_subtask", {"taskId": task["id"], "title": "one too many"})
        assert names_field(refused, "taskId") and "100" in refused["message"], refused
        assert stored_state() == before
        got = await ok(c, "get_task", {"taskId": task["id"]})
        assert len(got["subtasks"]) == got["task"]["subtaskCount"] == 100
        assert [s["title"] for s in got["subtasks"]] == [f"step {i + 1}" for i in range(100)]
        # Deleting one makes room again.
        await ok(c, "delete_subtask", {"subtaskId": got["subtasks"][0]["id"]})
        again = await ok(c, "create_subtask", {"taskId": task["id"], "title": "room again"})
        assert again["progress"]["subtaskCount"] == 100


async def test_concurrent_creates_keep_counts_exact_and_never_pass_the_cap(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, fresh = await _task(c, owner.workspace_id, "Parallel checklist")
        _, nearly_full = await _task(c, owner.workspace_id, "Nearly full")
    _fill(owner.token, nearly_full["id"], 92)

    async def create(task_id, i):
        async with mcp_client(server_url, owner.token) as c2:
            result = await c2.call_tool("create_subtask", {"taskId": task_id, "title": f"parallel {i}"})
            return result

    from tests.conftest import envelope, structured

    results = await asyncio.gather(
        *(create(fresh["id"], i) for i in range(12)), *(create(nearly_full["id"], i) for i in range(20))
    )
    on_fresh, on_full = results[:12], results[12:]
    assert all(not r.is_error for r in on_fresh), [envelope(r) for r in on_fresh if r.is_error]
    made_full = [structured(r) for r in on_full if not r.is_error]
    refused = [envelope(r) for r in on_full if r.is_error]
    assert len(made_full) == 8, (len(made_full), refused)
    assert all(names_field(e, "taskId") and "100" in e["message"] for e in refused), refused
    for task, expected in ((fresh, 12), (nearly_full, 100)):
        full, compact = _task_rows(task["id"])
        assert _counts(full) == _counts(compact) == (expected, 0)
        assert len(_stored_subtasks(task["id"])) == expected
    async with mcp_client(server_url, owner.token) as c:
        got = await ok(c, "get_task", {"taskId": fresh["id"]})
        assert sorted(s["title"] for s in got["subtasks"]) == sorted(f"parallel {i}" for i in range(12))
        ids_in_order = [s["id"] for s in got["subtasks"]]
        assert ids_in_order == sorted(ids_in_order)  # checklist order is the ULID order


async def test_concurrent_toggles_of_one_task_keep_subtasks_done_exact(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board, task = await _task(c, owner.workspace_id)
        subs = [(await ok(c, "create_subtask", {"taskId": task["id"], "title": f"t{i}"}))["subtask"] for i in range(8)]

    async def toggle(sub, completed):
        async with mcp_client(server_url, owner.token) as c2:
            return await ok(c2, "toggle_subtask", {"subtaskId": sub["id"], "completed": completed})

    # Every subtask toggled to done twice at once: one of each pair changes it, the other finds it done.
    answers = await asyncio.gather(*(toggle(s, True) for s in subs for _ in range(2)))
    assert sum(a["changed"] for a in answers) == 8
    full, compact = _task_rows(task["id"])
    assert _counts(full) == _counts(compact) == (8, 8)
    rows = [r for r in activity_rows(board["board"]["id"]) if r["type"]["S"] == "subtask.completed"]
    assert len(rows) == 8
    answers = await asyncio.gather(*(toggle(s, False) for s in subs[:5]))
    assert all(a["changed"] for a in answers)
    full, compact = _task_rows(task["id"])
    assert _counts(full) == _counts(compact) == (8, 3)


async def test_subtask_writes_on_an_archived_task_are_refused_and_it_stays_readable(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, task = await _task(c, owner.workspace_id)
        sub = (await ok(c, "create_subtask", {"taskId": task["id"], "title": "before archiving"}))["subtask"]
        await ok(c, "archive_task", {"taskId": task["id"]})
        before = stored_state()
        for tool, args, field in (
            ("create_subtask", {"taskId": task["id"], "title": "too late"}, "taskId"),
            ("toggle_subtask", {"subtaskId": sub["id"], "completed": True}, "subtaskId"),
            ("toggle_subtask", {"subtaskId": sub["id"], "completed": False}, "subtaskId"),
            ("delete_subtask", {"subtaskId": sub["id"]}, "subtaskId"),
            ("set_task_assignees", {"taskId": task["id"], "userIds": [owner.user_id]}, "taskId"),
        ):
            closed = await err(c, tool, args)
            assert names_field(closed, field) and "archived" in closed["message"], (tool, closed)
        assert stored_state() == before
        got = await ok(c, "get_task", {"taskId": task["id"]})
        assert [s["title"] for s in got["subtasks"]] == ["before archiving"]


async def test_subtask_bad_input_writes_nothing(server_url, owner, outsider):
    async with mcp_client(server_url, owner.token) as c:
        _, task = await _task(c, owner.workspace_id)
        sub = (await ok(c, "create_subtask", {"taskId": task["id"], "title": "real"}))["subtask"]
        before = stored_state()
        for title in ("", "x" * 501, "\u200b \u2800"):
            assert names_field(await err(c, "create_subtask", {"taskId": task["id"], "title": title}), "title")
        assert names_field(await err(c, "toggle_subtask", {"subtaskId": sub["id"]}), "completed")
        assert names_field(await err(c, "toggle_subtask", {"subtaskId": sub["id"], "completed": "yes"}), "completed")
        forged = sub["id"][:-1] + ("a" if sub["id"][-1] != "a" else "b")
        for tool, args in (
            ("toggle_subtask", {"subtaskId": forged, "completed": True}),
            ("delete_subtask", {"subtaskId": forged}),
            ("delete_subtask", {"subtaskId": "st_nope"}),
            ("delete_subtask", {"subtaskId": task["id"]}),
        ):
            assert (await err(c, tool, args))["code"] == "NOT_FOUND", (tool, args)
        assert stored_state() == before
    async with mcp_client(server_url, outsider.token) as c:
        for tool, args in (
            ("toggle_subtask", {"subtaskId": sub["id"], "completed": True}),
            ("delete_subtask", {"subtaskId": sub["id"]}),
            ("create_subtask", {"taskId": task["id"], "title": "intruder"}),
        ):
            assert (await err(c, tool, args))["code"] == "NOT_FOUND"
        assert stored_state() == before


async def test_a_keyed_create_subtask_replays(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, task = await _task(c, owner.workspace_id)
        args = {"taskId": task["id"], "title": "once", "idempotencyKey": f"k-{uuid.uuid4()}"}
        first = await ok(c, "create_subtask", args)
        assert await ok(c, "create_subtask", args) == first
        assert (await ok(c, "get_task", {"taskId": task["id"]}))["task"]["subtaskCount"] == 1
        assert (await err(c, "create_subtask", {**args, "title": "twice"}))["code"] == "CONFLICT"


# -- set_task_assignees ------------------------------------------------------------------------
def _member(workspace_id: str, name: str) -> str:
    from domain import auth
    from domain.store import keys, members
    from domain.store.models import UserRow

    user = auth.create_user(f"{name.lower()}-{uuid.uuid4().hex[:12]}@example.com", name)
    members.add(workspace_id, UserRow.get(*keys.user_profile(user.userId)), "MEMBER")
    return user.userId


def _stranger(name: str) -> str:
    from domain import auth

    return auth.create_user(f"{name.lower()}-{uuid.uuid4().hex[:12]}@example.com", name).userId


async def test_assignees_replace_the_set_with_display_names_and_rows_agree(server_url, owner):
    bea, cy = _member(owner.workspace_id, "Bea"), _member(owner.workspace_id, "Cy")
    async with mcp_client(server_url, owner.token) as c:
        board, task = await _task(c, owner.workspace_id)
        res = await ok(c, "set_task_assignees", {"taskId": task["id"], "userIds": [bea, owner.user_id, bea]})
        assert res["assignees"] == [
            {"userId": bea, "displayName": "Bea"},
            {"userId": owner.user_id, "displayName": "Ada"},
        ]
        assert res["added"] == [bea, owner.user_id] and res["removed"] == [] and res["updatedAt"] > task["updatedAt"]
        got = await ok(c, "get_task", {"taskId": task["id"]})
        snap = await ok(c, "get_board_snapshot", {"boardId": board["board"]["id"]})
        row = next(t for t in snap["tasks"] if t["id"] == task["id"])
        assert got["task"]["assigneeIds"] == row["assigneeIds"] == [bea, owner.user_id]

        before = stored_state()
        same = await ok(
            c, "set_task_assignees", {"taskId": task["id"], "userIds": [owner.user_id, bea]}
        )  # same set, other order
        assert (
            stored_state() == before
            and same["added"] == same["removed"] == []
            and same["updatedAt"] == res["updatedAt"]
        )
        assert {a["userId"] for a in same["assignees"]} == {bea, owner.user_id}

        swapped = await ok(c, "set_task_assignees", {"taskId": task["id"], "userIds": [cy]})
        assert (
            swapped["assignees"] == [{"userId": cy, "displayName": "Cy"}]
            and swapped["added"] == [cy]
            and swapped["removed"] == [bea, owner.user_id]
        )
        cleared = await ok(c, "set_task_assignees", {"taskId": task["id"], "userIds": []})
        assert cleared["assignees"] == [] and cleared["removed"] == [cy]
        rows = [r for r in activity_rows(board["board"]["id"]) if r["type"]["S"] == "task.assignees_set"]
        assert len(rows) == 3
        listed = await ok(c, "list_activity", {"taskId": task["id"], "type": "task.assignees_set"})
        assert len(listed["activity"]) == 3
    full, compact = _task_rows(task["id"])
    assert full["assigneeIds"] == compact["assigneeIds"] == {"L": []}


async def test_non_member_assignees_are_listed_and_nothing_changes(server_url, owner, outsider):
    bea = _member(owner.workspace_id, "Bea")
    nobody, stranger = _stranger("Nobody"), outsider.user_id
    async with mcp_client(server_url, owner.token) as c:
        _, task = await _task(c, owner.workspace_id)
        await ok(c, "set_task_assignees", {"taskId": task["id"], "userIds": [bea]})
        before = stored_state()
        refused = await err(
            c,
            "set_task_assignees",
            {"taskId": task["id"], "userIds": [bea, nobody, owner.user_id, stranger, "usr_madeupmadeup"]},
        )
        assert names_field(refused, "userIds"), refused
        listed = refused["message"].split(":", 2)[2]
        assert (
            nobody in listed
            and stranger in listed
            and "usr_madeupmadeup" in listed
            and bea not in listed
            and owner.user_id not in listed
        )
        assert stored_state() == before
        too_many = await err(
            c, "set_task_assignees", {"taskId": task["id"], "userIds": [f"usr_{i:012d}" for i in range(21)]}
        )
        assert names_field(too_many, "userIds")
        assert names_field(await err(c, "set_task_assignees", {"taskId": task["id"], "userIds": [""]}), "userIds.0")
        assert stored_state() == before
        assert (await ok(c, "get_task", {"taskId": task["id"]}))["task"]["assigneeIds"] == [bea]


async def test_an_assignee_removed_between_the_read_and_the_write_is_not_stored(server_url, owner, monkeypatch):
    """The membership guard in the transaction catches a user removed after the access read."""
    from domain.store import assignees as assignee_store
    from domain.store import keys
    from domain.store.models import MemberRow

    bea, cy = _member(owner.workspace_id, "Bea"), _member(owner.workspace_id, "Cy")
    original = assignee_store.write

    def remove_cy_first(*args, **kwargs):
        MemberRow(*keys.member(owner.workspace_id, cy)).delete()
        return original(*args, **kwargs)

    async with mcp_client(server_url, owner.token) as c:
        _, task = await _task(c, owner.workspace_id)
        monkeypatch.setattr(assignee_store, "write", remove_cy_first)
        before = {k: v for k, v in stored_state().items() if k != keys.member(owner.workspace_id, cy)}
        refused = await err(c, "set_task_assignees", {"taskId": task["id"], "userIds": [bea, cy]})
        monkeypatch.setattr(assignee_store, "write", original)
        assert (
            names_field(refused, "userIds")
            and cy in refused["message"]
            and bea not in refused["message"].split(":", 2)[2]
        ), refused
        assert stored_state() == before
        assert (await ok(c, "get_task", {"taskId": task["id"]}))["task"]["assigneeIds"] == []
