"""Labels through the official SDK client: case-insensitive unique names (also when creates race),
#rrggbb colours, whole-set replacement on tasks with the previous set shown, foreign labels refused
with nothing changed, and a delete that takes the label off every task carrying it."""

from __future__ import annotations

import asyncio
import uuid

from tests.conftest import mcp_client
from tests.tools_support import err, names_field, new_board, new_task, ok, stored_state


async def _board(c, workspace_id):
    return await new_board(c, workspace_id, f"Labels {uuid.uuid4().hex[:12]}")


async def _label(c, board_id, name, color="#d73a4a"):
    return (await ok(c, "manage_labels", {"action": "create", "boardId": board_id, "name": name, "color": color}))[
        "label"
    ]


def _task_items(task_id):
    from domain import ids
    from domain.store import keys
    from domain.store.models import Row

    ref = ids.parse_task(task_id)
    got = {
        r.SK[:2]: r
        for r in Row.batch_get(
            [keys.task_full(ref.board_id, ref.number), keys.task_compact(ref.board_id, ref.number)],
            consistent_read=True,
        )
    }
    return got.get("X#"), got.get("T#")


async def test_create_list_update_and_the_case_insensitive_duplicate(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        bid = board["board"]["id"]
        bug = await _label(c, bid, "Bug", "#D73A4A")
        assert bug["id"].startswith("lb_") and bug["color"] == "#d73a4a" and bug["taskCount"] == 0
        before = stored_state()
        again = await ok(c, "manage_labels", {"action": "create", "boardId": bid, "name": "  bUG ", "color": "#00ff00"})
        assert again["created"] is False and again["label"]["id"] == bug["id"] and again["label"]["color"] == "#d73a4a"
        assert "#d73a4a" in again["notice"]
        assert stored_state() == before  # returning the existing label writes nothing
        await _label(c, bid, "feature", "#0e8a16")
        listed = await ok(c, "list_labels", {"boardId": bid})
        assert [x["name"] for x in listed["labels"]] == ["Bug", "feature"] and listed["totalCount"] == 2
        renamed = await ok(
            c, "manage_labels", {"action": "update", "labelId": bug["id"], "name": "Defect", "color": "#aabbcc"}
        )
        assert renamed["changedFields"] == ["name", "color"] and renamed["label"]["name"] == "Defect"
        # The old name is free again; the new one is taken (in any case).
        await _label(c, bid, "bug")
        taken = await err(c, "manage_labels", {"action": "update", "labelId": bug["id"], "name": "FEATURE"})
        assert names_field(taken, "name") and "FEATURE" in taken["message"]
        case_only = await ok(c, "manage_labels", {"action": "update", "labelId": bug["id"], "name": "DEFECT"})
        assert case_only["changedFields"] == ["name"] and case_only["label"]["name"] == "DEFECT"
        same = await ok(c, "manage_labels", {"action": "update", "labelId": bug["id"], "color": "#AABBCC"})
        assert same["changedFields"] == []
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert [x["name"] for x in snap["labels"]] == ["bug", "DEFECT", "feature"]
        types = [a["type"] for a in (await ok(c, "list_activity", {"boardId": bid}))["activity"]]
        assert types.count("label.created") == 3 and types.count("label.updated") == 2


async def test_bad_colours_and_missing_arguments_write_nothing(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid = (await _board(c, owner.workspace_id))["board"]["id"]
        label = await _label(c, bid, "Ops")
        before = stored_state()
        for color in ("red", "#12345", "#1234567", "#ggggggg", "123456", "#12 456"):
            bad = await err(c, "manage_labels", {"action": "create", "boardId": bid, "name": "X", "color": color})
            assert names_field(bad, "color"), (color, bad)
        assert names_field(
            await err(c, "manage_labels", {"action": "update", "labelId": label["id"], "color": "blue"}), "color"
        )
        assert names_field(await err(c, "manage_labels", {"action": "create", "boardId": bid, "name": "X"}), "color")
        assert names_field(
            await err(c, "manage_labels", {"action": "create", "boardId": bid, "color": "#000000"}), "name"
        )
        assert names_field(await err(c, "manage_labels", {"action": "update", "labelId": label["id"]}), "name")
        assert names_field(await err(c, "manage_labels", {"action": "delete", "boardId": bid}), "labelId")
        assert names_field(
            await err(c, "manage_labels", {"action": "create", "boardId": bid, "name": " \u200b ", "color": "#000000"}),
            "name",
        )
        assert stored_state() == before


async def test_racing_creates_of_bug_and_bug_leave_one_label(server_url, owner):
    async with mcp_client(server_url, owner.token) as a, mcp_client(server_url, owner.token) as b:
        bid = (await _board(a, owner.workspace_id))["board"]["id"]
        for round_ in range(3):
            names = (f"Bug{round_}", f"bug{round_}", f"BUG{round_}")
            clients = (a, b, a)
            results = await asyncio.gather(
                *(
                    ok(cl, "manage_labels", {"action": "create", "boardId": bid, "name": n, "color": "#111111"})
                    for cl, n in zip(clients, names, strict=True)
                )
            )
            assert len({r["label"]["id"] for r in results}) == 1
            assert sum(1 for r in results if r["created"]) == 1
        listed = await ok(a, "list_labels", {"boardId": bid})
        assert listed["totalCount"] == 3
    from domain.store import keys
    from domain.store.models import BoardRow

    assert int(BoardRow.get(*keys.board_head(bid), consistent_read=True).labelCount) == 3


async def test_set_task_labels_replaces_the_set_and_shows_the_previous_one(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        bid = board["board"]["id"]
        task = await new_task(c, board["columns"][0]["id"], "Label me")
        bug, ui, api = [await _label(c, bid, n) for n in ("bug", "ui", "api")]
        first = await ok(c, "set_task_labels", {"taskId": task["id"], "labelIds": [bug["id"], ui["id"]]})
        assert (
            [x["name"] for x in first["labels"]] == ["bug", "ui"] and first["previousLabels"] == [] and first["changed"]
        )
        assert first["task"]["labelIds"] == [bug["id"], ui["id"]] and first["notice"] is None
        # A caller who meant to add sends only the new id: the result says what went away.
        replaced = await ok(c, "set_task_labels", {"taskId": task["id"], "labelIds": [api["id"]]})
        assert [x["name"] for x in replaced["previousLabels"]] == ["bug", "ui"] and [
            x["name"] for x in replaced["labels"]
        ] == ["api"]
        assert "'bug'" in replaced["notice"] and "current ids plus the new one" in replaced["notice"]
        full, compact = _task_items(task["id"])
        assert full.labelIds == compact.labelIds == [api["id"]]
        counts = {x["name"]: x["taskCount"] for x in (await ok(c, "list_labels", {"boardId": bid}))["labels"]}
        assert counts == {"api": 1, "bug": 0, "ui": 0}
        before = stored_state()
        same = await ok(c, "set_task_labels", {"taskId": task["id"], "labelIds": [api["id"], api["id"]]})
        assert same["changed"] is False and same["task"]["updatedAt"] == replaced["task"]["updatedAt"]
        assert stored_state() == before  # the same set: no write, no activity
        cleared = await ok(c, "set_task_labels", {"taskId": task["id"], "labelIds": []})
        assert cleared["labels"] == [] and [x["id"] for x in cleared["previousLabels"]] == [api["id"]]
        log = (await ok(c, "list_activity", {"taskId": task["id"], "type": "task.labels_set"}))["activity"]
        assert len(log) == 3 and log[0]["data"] == {"added": [], "removed": [api["id"]]}


async def test_a_label_of_another_board_is_refused_naming_it_and_nothing_changes(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        other = await _board(c, owner.workspace_id)
        task = await new_task(c, board["columns"][0]["id"], "Mine")
        mine = await _label(c, board["board"]["id"], "mine")
        await ok(c, "set_task_labels", {"taskId": task["id"], "labelIds": [mine["id"]]})
        foreign = await _label(c, other["board"]["id"], "theirs")
        unknown = f"lb_{board['board']['id'][3:]}_zzzzzz"
        before = stored_state()
        refused = await err(
            c, "set_task_labels", {"taskId": task["id"], "labelIds": [mine["id"], foreign["id"], unknown]}
        )
        assert (
            names_field(refused, "labelIds") and foreign["id"] in refused["message"] and unknown in refused["message"]
        )
        assert mine["id"] not in refused["message"]
        assert stored_state() == before
        got = await ok(c, "get_task", {"taskId": task["id"], "response_format": "concise"})
        assert got["task"]["labelIds"] == [mine["id"]]


async def test_delete_takes_the_label_off_every_task_archived_ones_included(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        bid, col = board["board"]["id"], board["columns"][0]["id"]
        doomed, kept = await _label(c, bid, "doomed"), await _label(c, bid, "kept")
        tasks = [await new_task(c, col, f"t{i}") for i in range(4)]
        for t in tasks[:3]:
            await ok(c, "set_task_labels", {"taskId": t["id"], "labelIds": [doomed["id"], kept["id"]]})
        await ok(c, "archive_task", {"taskId": tasks[2]["id"]})
        gone = await ok(c, "manage_labels", {"action": "delete", "labelId": doomed["id"]})
        assert sorted(gone["detachedTaskIds"]) == sorted(t["id"] for t in tasks[:3]) and gone["remainingTasks"] == 0
        assert gone["label"]["taskCount"] == 3
        for t in tasks:
            full, _ = _task_items(t["id"])
            assert doomed["id"] not in full.labelIds
        assert [x["name"] for x in (await ok(c, "list_labels", {"boardId": bid}))["labels"]] == ["kept"]
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert all(
            doomed["id"] not in t.get("labelIds", []) for t in snap["tasks"]
        )  # concise rows leave empty lists out
        again = await err(c, "manage_labels", {"action": "delete", "labelId": doomed["id"]})
        assert again["code"] == "NOT_FOUND"
        stale = await err(c, "set_task_labels", {"taskId": tasks[3]["id"], "labelIds": [doomed["id"]]})
        assert names_field(stale, "labelIds")
        # The name is free again.
        reborn = await ok(
            c, "manage_labels", {"action": "create", "boardId": bid, "name": "Doomed", "color": "#000000"}
        )
        assert reborn["created"] is True and reborn["label"]["id"] != doomed["id"]


async def test_a_delete_with_more_tasks_than_one_call_detaches_finishes_on_the_next_call(
    server_url, owner, monkeypatch
):
    from domain.store import labels as label_store

    monkeypatch.setattr(label_store, "DETACH_CHUNK", 2)
    monkeypatch.setattr(label_store, "MAX_DETACH_PER_CALL", 4)
    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        bid, col = board["board"]["id"], board["columns"][0]["id"]
        big = await _label(c, bid, "big")
        tasks = [await new_task(c, col, f"t{i}") for i in range(7)]
        for t in tasks:
            await ok(c, "set_task_labels", {"taskId": t["id"], "labelIds": [big["id"]]})
        part = await ok(c, "manage_labels", {"action": "delete", "labelId": big["id"]})
        assert len(part["detachedTaskIds"]) == 4 and part["remainingTasks"] == 3 and "again" in part["notice"]
        # Meanwhile the label is hidden and takes no new tasks.
        assert (await ok(c, "list_labels", {"boardId": bid}))["labels"] == []
        extra = await new_task(c, col, "late")
        assert names_field(
            await err(c, "set_task_labels", {"taskId": extra["id"], "labelIds": [big["id"]]}), "labelIds"
        )
        rest = await ok(c, "manage_labels", {"action": "delete", "labelId": big["id"]})
        assert len(rest["detachedTaskIds"]) == 3 and rest["remainingTasks"] == 0 and rest["notice"] is None
        for t in tasks:
            assert big["id"] not in _task_items(t["id"])[0].labelIds
        assert (await err(c, "manage_labels", {"action": "delete", "labelId": big["id"]}))["code"] == "NOT_FOUND"
    from domain.store import keys
    from domain.store.models import BoardRow, Row

    assert int(BoardRow.get(*keys.board_head(bid), consistent_read=True).labelCount) == 0
    assert not list(Row.query(keys.label_name_claim(bid, "big")[0]))


async def test_a_task_labelled_while_a_delete_looks_for_carriers_is_not_missed(server_url, owner, monkeypatch):
    """The delete conditions on the label's rev read before its Query: a set_task_labels that
    commits in between makes the attempt start again, and the new carrier is detached too."""
    from domain.store import labels as label_store

    async with mcp_client(server_url, owner.token) as c:
        board = await _board(c, owner.workspace_id)
        bid, col = board["board"]["id"], board["columns"][0]["id"]
        lab = await _label(c, bid, "raced")
        early, late = await new_task(c, col, "early"), await new_task(c, col, "late")
        await ok(c, "set_task_labels", {"taskId": early["id"], "labelIds": [lab["id"]]})
        real = label_store.carriers
        sneaked = []

        def carriers_then_label(board_id, label_id):
            found = real(board_id, label_id)
            if not sneaked:
                sneaked.append(True)
                from domain import auth, pipeline
                from domain.catalog import registry

                principal = auth.authenticate(owner.token)
                out = pipeline.call_tool(
                    registry().get("set_task_labels"), {"taskId": late["id"], "labelIds": [lab["id"]]}, principal
                )
                assert out.error is None, out.error
            return found

        monkeypatch.setattr(label_store, "carriers", carriers_then_label)
        gone = await ok(c, "manage_labels", {"action": "delete", "labelId": lab["id"]})
        assert sorted(gone["detachedTaskIds"]) == sorted([early["id"], late["id"]])
        assert lab["id"] not in _task_items(late["id"])[0].labelIds
