"""Board archive through the official SDK client: archive_board and unarchive_boards (admin, no-ops,
all-or-nothing restores), and the rule that an archived board's tasks stay readable and refuse
every write with INVALID_INPUT — early, and also when the archive lands after the call's read."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import mcp_client
from tests.tools_support import err, names_field, new_board, new_task, ok, stored_state


async def _board(c, workspace_id, name=None):
    return await new_board(c, workspace_id, name or f"Archive {uuid.uuid4().hex[:12]}")


def _member_token(workspace_id, role):
    from domain import auth
    from domain.store import keys, members
    from domain.store.models import UserRow

    user = auth.create_user(f"{role.lower()}-{uuid.uuid4().hex[:12]}@example.com", f"{role.title()} Bo")
    members.add(workspace_id, UserRow.get(*keys.user_profile(user.userId)), role)
    return auth.mint_pat(user.userId)[0]


async def test_archive_hides_the_board_and_is_a_no_op_the_second_time(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        bid = board["board"]["id"]
        done = await ok(c, "archive_board", {"boardId": bid})
        assert done["board"]["archivedAt"] and done["notice"] is None
        listed = await ok(c, "list_boards", {"workspaceId": owner.workspace_id})
        assert bid not in [b["id"] for b in listed["boards"]]
        everything = await ok(c, "list_boards", {"workspaceId": owner.workspace_id, "includeArchived": True})
        assert next(b for b in everything["boards"] if b["id"] == bid)["archivedAt"] == done["board"]["archivedAt"]
        before = stored_state()
        again = await ok(c, "archive_board", {"boardId": bid})
        assert again["board"]["archivedAt"] == done["board"]["archivedAt"] and "already" in again["notice"]
        assert stored_state() == before
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert snap["board"]["archivedAt"] == done["board"]["archivedAt"] and "archived" in snap["notice"]
        log = (await ok(c, "list_activity", {"boardId": bid, "type": "board.archived"}))["activity"]
        assert len(log) == 1


async def test_archive_and_unarchive_need_the_admin_role(server_url, owner):
    member = _member_token(owner.workspace_id, "MEMBER")
    admin = _member_token(owner.workspace_id, "ADMIN")
    async with mcp_client(server_url, owner.token) as c:
        bid = (await _board(c, owner.workspace_id))["board"]["id"]
    before = stored_state()
    async with mcp_client(server_url, member) as c:
        refused = await err(c, "archive_board", {"boardId": bid})
        assert refused["code"] == "FORBIDDEN" and "ADMIN" in refused["message"]
    assert stored_state() == before
    async with mcp_client(server_url, admin) as c:
        await ok(c, "archive_board", {"boardId": bid})
    async with mcp_client(server_url, member) as c:
        refused = await err(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [bid]})
        assert refused["code"] == "FORBIDDEN"
    async with mcp_client(server_url, admin) as c:
        back = await ok(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [bid]})
        assert back["restoredCount"] == 1


async def test_unarchive_restores_atomically_with_no_ops_for_active_boards(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        a, b, active = [(await _board(c, owner.workspace_id, n))["board"]["id"] for n in ("Alpha", "Beta", "Gamma")]
        for bid in (a, b):
            await ok(c, "archive_board", {"boardId": bid})
        back = await ok(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [active, a, b]})
        assert [(x["id"], x["restored"]) for x in back["boards"]] == [(active, False), (a, True), (b, True)] and back[
            "restoredCount"
        ] == 2
        listed = {
            x["id"]: x["archivedAt"]
            for x in (await ok(c, "list_boards", {"workspaceId": owner.workspace_id}))["boards"]
        }
        assert listed[a] is None and listed[b] is None
        log = (await ok(c, "list_activity", {"boardId": a, "type": "board.unarchived"}))["activity"]
        assert len(log) == 1 and log[0]["data"] == {"boardIds": [a, b]}
        before = stored_state()
        same = await ok(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [a, b]})
        assert same["restoredCount"] == 0 and not any(x["restored"] for x in same["boards"])
        assert stored_state() == before  # nothing to restore: nothing written
        twice = await err(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [a, a]})
        assert names_field(twice, "boardIds")


async def test_one_foreign_or_unknown_board_fails_the_whole_unarchive(server_url, owner, outsider):
    async with mcp_client(server_url, outsider.token) as c:
        theirs = (await _board(c, outsider.workspace_id))["board"]["id"]
    async with mcp_client(server_url, owner.token) as c:
        mine = (await _board(c, owner.workspace_id))["board"]["id"]
        await ok(c, "archive_board", {"boardId": mine})
        unknown = f"bd_{owner.workspace_id[3:]}_zzzzzzzz"
        before = stored_state()
        for stranger in (theirs, unknown, "bd_nope"):
            refused = await err(
                c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [mine, stranger]}
            )
            assert refused["code"] == "NOT_FOUND" and stranger in refused["message"], refused
        assert stored_state() == before
        entry = next(
            x
            for x in (await ok(c, "list_boards", {"workspaceId": owner.workspace_id, "includeArchived": True}))[
                "boards"
            ]
            if x["id"] == mine
        )
        assert entry["archivedAt"] is not None


async def test_fifty_boards_restore_in_one_call(server_url, owner):
    from domain.store import boards as board_store
    from domain.store.models import BoardEntryRow

    async with mcp_client(server_url, owner.token) as c:
        made = [(await _board(c, owner.workspace_id, f"Many {i}"))["board"]["id"] for i in range(50)]
        for bid in made:  # archive straight in the table: the call under test is the restore
            BoardEntryRow(*board_store.entry_key(bid)).update(
                actions=[BoardEntryRow.archivedAt.set("2026-01-01T00:00:00.000Z")]
            )
        back = await ok(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": made})
        assert back["restoredCount"] == 50
        too_many = await err(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [*made, made[0]]})
        assert names_field(too_many, "boardIds")


async def _archived_board_with_a_task(c, workspace_id):
    board = await _board(c, workspace_id)
    bid, cols = board["board"]["id"], [x["id"] for x in board["columns"]]
    task = await new_task(c, cols[0], "Frozen")
    other = await new_task(c, cols[0], "Also frozen")
    label = (await ok(c, "manage_labels", {"action": "create", "boardId": bid, "name": "frozen", "color": "#abcdef"}))[
        "label"
    ]
    comment = (await ok(c, "create_comment", {"taskId": task["id"], "body": "before the archive"}))["comment"]
    subtask = (await ok(c, "create_subtask", {"taskId": task["id"], "title": "before the archive"}))["subtask"]
    await ok(c, "add_task_link", {"fromTaskId": task["id"], "kind": "RELATES_TO", "toTaskId": other["id"]})
    await ok(c, "archive_board", {"boardId": bid})
    return bid, cols, task, other, label, comment, subtask


def _writes(bid, cols, task, other, label, comment, subtask):
    t = task["id"]
    return [
        ("create_subtask", {"taskId": t, "title": "after"}, "taskId"),
        ("toggle_subtask", {"subtaskId": subtask["id"], "completed": True}, "subtaskId"),
        ("delete_subtask", {"subtaskId": subtask["id"]}, "subtaskId"),
        ("set_task_assignees", {"taskId": t, "userIds": [comment["authorId"]]}, "taskId"),
        ("add_task_link", {"fromTaskId": t, "kind": "BLOCKS", "toTaskId": other["id"]}, "fromTaskId"),
        ("remove_task_link", {"fromTaskId": t, "kind": "RELATES_TO", "toTaskId": other["id"]}, "fromTaskId"),
        ("update_task", {"taskId": t, "title": "thawed"}, "taskId"),
        ("move_task", {"taskId": t, "columnId": cols[1]}, "taskId"),
        ("move_task", {"taskId": t, "beforeTaskId": other["id"]}, "taskId"),
        ("archive_task", {"taskId": t}, "taskId"),
        ("create_task", {"columnId": cols[0], "title": "new"}, "columnId"),
        ("create_comment", {"taskId": t, "body": "after"}, "taskId"),
        ("update_comment", {"commentId": comment["id"], "body": "edited"}, "commentId"),
        ("delete_comment", {"commentId": comment["id"]}, "commentId"),
        ("set_task_labels", {"taskId": t, "labelIds": [label["id"]]}, "taskId"),
        ("manage_labels", {"action": "create", "boardId": bid, "name": "new", "color": "#000000"}, "boardId"),
        ("manage_labels", {"action": "update", "labelId": label["id"], "name": "renamed"}, "labelId"),
        ("manage_labels", {"action": "delete", "labelId": label["id"]}, "labelId"),
    ]


async def test_tasks_of_an_archived_board_are_readable_and_every_write_is_refused(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols, task, other, label, comment, subtask = await _archived_board_with_a_task(c, owner.workspace_id)
        got = await ok(c, "get_task", {"taskId": task["id"]})
        assert got["task"]["title"] == "Frozen"
        listed = await ok(c, "list_tasks", {"boardId": bid})
        assert {x["id"] for x in listed["tasks"]} == {task["id"], other["id"]}
        assert (await ok(c, "list_comments", {"taskId": task["id"]}))["totalCount"] == 1
        assert (await ok(c, "list_labels", {"boardId": bid}))["totalCount"] == 1
        before = stored_state()
        for tool, args, field in _writes(bid, cols, task, other, label, comment, subtask):
            refused = await err(c, tool, args)
            assert (
                names_field(refused, field)
                and "archived" in refused["message"]
                and "unarchive_boards" in refused["hint"]
            ), (tool, refused)
        assert stored_state() == before
        await ok(c, "unarchive_boards", {"workspaceId": owner.workspace_id, "boardIds": [bid]})
        assert (await ok(c, "update_task", {"taskId": task["id"], "title": "thawed"}))["changedFields"] == ["title"]


@pytest.fixture
def archive_after_the_read(monkeypatch):
    """Archive a board between a write's reads and its transaction: the first transaction the
    store sends archives the board first (straight in the table), so only the write's own
    ConditionCheck on the board entry can refuse it."""
    from domain.store import boards as board_store
    from domain.store import db
    from domain.store.models import BoardEntryRow

    armed: dict[str, str] = {}
    real = db.transact

    def transact(build):
        bid = armed.pop("board", None)
        if bid:
            BoardEntryRow(*board_store.entry_key(bid)).update(
                actions=[BoardEntryRow.archivedAt.set("2026-01-01T00:00:00.000Z")]
            )
        return real(build)

    monkeypatch.setattr(db, "transact", transact)
    for module in (
        "domain.store.tasks",
        "domain.store.comments",
        "domain.store.labels",
        "domain.store.links",
        "domain.store.bulk",
        "domain.store.cas",
    ):
        import importlib

        mod = importlib.import_module(module)
        if getattr(mod, "transact", None) is real:
            monkeypatch.setattr(mod, "transact", transact)
    return armed


async def test_an_archive_landing_after_the_read_still_refuses_the_write(server_url, owner, archive_after_the_read):
    from domain.store import boards as board_store
    from domain.store.models import BoardEntryRow

    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        bid, cols = board["board"]["id"], [x["id"] for x in board["columns"]]
        task = await new_task(c, cols[0], "Racing")
        label = (
            await ok(c, "manage_labels", {"action": "create", "boardId": bid, "name": "race", "color": "#abcdef"})
        )["label"]
        comment = (await ok(c, "create_comment", {"taskId": task["id"], "body": "hello"}))["comment"]
        other = await new_task(c, cols[0], "Other")
        subtask = (await ok(c, "create_subtask", {"taskId": task["id"], "title": "racing"}))["subtask"]
        await ok(c, "add_task_link", {"fromTaskId": task["id"], "kind": "RELATES_TO", "toTaskId": other["id"]})
        for tool, args, field in _writes(bid, cols, task, other, label, comment, subtask):
            BoardEntryRow(*board_store.entry_key(bid)).update(actions=[BoardEntryRow.archivedAt.remove()])
            before = stored_state()
            archive_after_the_read["board"] = bid
            refused = await err(c, tool, args)
            assert names_field(refused, field) and "archived" in refused["message"], (tool, refused)
            after = stored_state()
            entry = board_store.entry_key(bid)
            changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
            assert changed == {entry}, (tool, changed)  # only the archive itself was written


async def test_bulk_writes_racing_an_archive_are_refused_by_the_transaction(server_url, owner, archive_after_the_read):
    from domain.store import boards as board_store
    from domain.store.models import BoardEntryRow

    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        bid, cols = board["board"]["id"], [x["id"] for x in board["columns"]]
        ts = [await new_task(c, cols[0], f"racing {i}") for i in range(2)]
        cases = (
            ("bulk_create_tasks", {"columnId": cols[0], "tasks": [{"title": "late"}]}),
            ("bulk_update_tasks", {"items": [{"taskId": t["id"], "title": "late"} for t in ts]}),
            ("bulk_move_tasks", {"items": [{"taskId": t["id"], "columnId": cols[1]} for t in ts]}),
        )
        for tool, args in cases:
            BoardEntryRow(*board_store.entry_key(bid)).update(actions=[BoardEntryRow.archivedAt.remove()])
            before = stored_state()
            archive_after_the_read["board"] = bid
            if tool == "bulk_create_tasks":
                refused = await err(c, tool, args)
                assert names_field(refused, "columnId") and "archived" in refused["message"], refused
            else:
                out = await ok(c, tool, args)
                assert out["applied"] == 0 and all("archived" in r["error"]["message"] for r in out["results"]), out
            after = stored_state()
            changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
            assert changed == {board_store.entry_key(bid)}, (tool, changed)  # only the archive itself was written


def test_every_tool_that_writes_a_boards_tasks_is_covered_here():
    """The archive tests above exercise each spec declaring ``open_board`` (the bulk tools in their
    own test); a new such tool must join ``_writes`` or the bulk test."""
    from domain.catalog import registry

    stub = {"id": "x", "authorId": "x"}
    exercised = {tool for tool, _, _ in _writes("bd", ["c0", "c1"], stub, stub, stub, stub, stub)}
    exercised |= {"bulk_create_tasks", "bulk_update_tasks", "bulk_move_tasks"}
    declared = {spec.name for spec in registry() if spec.open_board}
    assert declared <= exercised, declared - exercised
    assert exercised - declared <= {
        "manage_columns"
    }  # its create is refused by its own handler (rename/move/archive stay open)
