"""The shared contract after the second trial (docs/decisions.md, "After the second trial"):
the null rule of update tools and changedFields, due-date normalisation, WIP-limit notices,
archived columns and board counts, cursors bound to their list, task keys passed as ids, and
null accepted where a description gives it a meaning. Through the official MCP SDK client
against DynamoDB Local."""

from __future__ import annotations

import uuid

from domain.catalog import registry as product_registry
from tests.conftest import mcp_client
from tests.tools_support import err, names_field, new_board, new_task, ok, stored_state


async def _board(c, ws: str, name: str = "Contract") -> tuple[str, list[str]]:
    made = await new_board(c, ws, name)
    return made["board"]["id"], [col["id"] for col in made["columns"]]


# -- 1: one null rule for update tools, and changedFields ----------------------------------------
async def test_update_task_null_clears_what_may_be_empty_and_ignores_the_rest(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "Keep me", description="body", priority="HIGH", dueDate="2026-12-01")
        all_null = {"taskId": task["id"], "title": None, "description": None, "priority": None, "dueDate": None}
        out = await ok(c, "update_task", all_null)
        assert out["changedFields"] == ["description", "dueDate"]
        t = out["task"]
        assert (t["title"], t["priority"], t["description"], t["dueDate"]) == ("Keep me", "HIGH", "", None)
        stored = (await ok(c, "get_task", {"taskId": task["id"]}))["task"]
        assert (stored["description"], stored["dueDate"]) == ("", None)
        # the same nulls again change nothing, and the answer says so without writing
        before = stored_state()
        again = await ok(c, "update_task", all_null)
        assert again["changedFields"] == [] and again["task"]["updatedAt"] == t["updatedAt"]
        assert stored_state() == before
        # only the fields that really differ are listed
        out = await ok(
            c, "update_task", {"taskId": task["id"], "title": "Keep me", "priority": "LOW", "description": None}
        )
        assert out["changedFields"] == ["priority"]
        # nulls that are all ignored are nothing to change, and the hint says why
        problem = await err(c, "update_task", {"taskId": task["id"], "title": None, "priority": None})
        assert names_field(problem, "arguments") and "ignored" in problem["hint"]


def test_update_tool_descriptions_state_the_null_rule():
    """Every update_* tool carries the same sentence (domain.tools.args.null_rule)."""
    updates = [s for s in product_registry() if s.name.startswith("update_")]
    assert updates
    for spec in updates:
        assert "Omitted fields stay as they are; null " in spec.description, spec.name
        assert "changedFields" in spec.definition()["outputSchema"]["properties"], spec.name
        assert "changedFields" in spec.definition()["outputSchema"].get("required", []), spec.name


# -- 5: due dates ----------------------------------------------------------------------------------
async def test_due_dates_are_normalised(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        cases = [
            ("2026-08-01", "2026-08-01"),
            ("2026-08-01T17:00:00Z", "2026-08-01T17:00:00.000Z"),
            ("2026-08-01T19:30:00+02:00", "2026-08-01T17:30:00.000Z"),
            ("2026-08-01T00:15-01:00", "2026-08-01T01:15:00.000Z"),
            ("2026-08-01T17:00:00.5Z", "2026-08-01T17:00:00.500Z"),
            ("2026-12-31T23:30:00.123456-01:00", "2027-01-01T00:30:00.123Z"),
        ]
        for sent, stored in cases:
            made = await new_task(c, cols[0], f"due {sent}", dueDate=sent)
            assert made["dueDate"] == stored, sent
            assert (await ok(c, "get_task", {"taskId": made["id"]}))["task"]["dueDate"] == stored
        updated = await ok(c, "update_task", {"taskId": made["id"], "dueDate": "2026-09-01T08:00:00+08:00"})
        assert updated["task"]["dueDate"] == "2026-09-01T00:00:00.000Z" and updated["changedFields"] == ["dueDate"]
        before = stored_state()
        for bad in (
            "2026-W32-6",
            "2026-213",
            "2026-08-01T10:00:00",
            "2026-02-30",
            "2026-08-01 10:00:00Z",
            "20260801",
            "tomorrow",
        ):
            for tool, args in (
                ("create_task", {"columnId": cols[0], "title": "x"}),
                ("update_task", {"taskId": made["id"]}),
            ):
                problem = await err(c, tool, {**args, "dueDate": bad})
                assert names_field(problem, "dueDate"), (tool, bad, problem)
                assert "2026-08-01" in problem["hint"] and "T17:00:00Z" in problem["hint"], problem
        assert stored_state() == before


# -- 3: archiving a non-empty column -------------------------------------------------------------
async def test_archiving_a_column_says_where_its_tasks_went_and_counts_agree(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        for i in range(2):
            await new_task(c, cols[0], f"stays {i}")
        leaving = [await new_task(c, cols[1], f"leaves {i}") for i in range(3)]
        out = await ok(c, "manage_columns", {"action": "archive", "columnId": cols[1]})
        notice = out["notice"]
        assert notice and "3 tasks" in notice and "To Do" in notice, notice
        assert "list_tasks" in notice and cols[1] in notice and "move_task" in notice
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert snap["totalCount"] == snap["board"]["taskCount"] == 2
        renamed = await ok(c, "rename_board", {"boardId": bid, "name": "Contract renamed"})
        assert renamed["board"]["taskCount"] == 2
        hidden = await ok(c, "list_tasks", {"columnId": cols[1]})
        assert sorted(t["id"] for t in hidden["tasks"]) == sorted(t["id"] for t in leaving)
        # the way back the notice names works, and the counts follow
        await ok(c, "move_task", {"taskId": leaving[0]["id"], "columnId": cols[0]})
        snap = await ok(c, "get_board_snapshot", {"boardId": bid})
        assert snap["totalCount"] == snap["board"]["taskCount"] == 3
        # an empty column goes without a notice
        empty = await ok(c, "manage_columns", {"action": "archive", "columnId": cols[3]})
        assert empty["notice"] is None
        for action in (
            {"action": "rename", "columnId": cols[0], "name": "Backlog 2"},
            {"action": "create", "boardId": bid, "name": "More"},
        ):
            assert (await ok(c, "manage_columns", action))["notice"] is None


# -- 4: WIP limits ---------------------------------------------------------------------------------
async def test_wip_limit_notices_and_clearing_the_limit(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        limited = (await ok(c, "manage_columns", {"action": "create", "boardId": bid, "name": "Doing", "wipLimit": 2}))[
            "column"
        ]
        first = await ok(c, "create_task", {"columnId": limited["id"], "title": "one"})
        second = await ok(c, "create_task", {"columnId": limited["id"], "title": "two"})
        assert first["notice"] is None and second["notice"] is None  # at the limit is not over it
        third = await ok(c, "create_task", {"columnId": limited["id"], "title": "three"})
        assert third["task"]["columnId"] == limited["id"]
        assert "'Doing'" in third["notice"] and "3 tasks" in third["notice"] and "limit of 2" in third["notice"], third[
            "notice"
        ]
        other = await new_task(c, cols[0], "elsewhere")
        moved = await ok(c, "move_task", {"taskId": other["id"], "columnId": limited["id"]})
        assert (
            moved["task"]["columnId"] == limited["id"]
            and "4 tasks" in moved["notice"]
            and "limit of 2" in moved["notice"]
        )
        reordered = await ok(c, "move_task", {"taskId": other["id"], "beforeTaskId": first["task"]["id"]})
        assert reordered["notice"] is None  # a reorder inside the column adds nothing to it
        assert (await ok(c, "create_task", {"columnId": cols[0], "title": "no limit"}))["notice"] is None
        # rename: leaving wipLimit out keeps it, null removes it
        kept = await ok(c, "manage_columns", {"action": "rename", "columnId": limited["id"], "name": "Doing now"})
        assert kept["column"]["wipLimit"] == 2
        cleared = await ok(
            c, "manage_columns", {"action": "rename", "columnId": limited["id"], "name": "Doing now", "wipLimit": None}
        )
        assert cleared["column"]["wipLimit"] is None
        listed = (await ok(c, "list_columns", {"boardId": bid}))["columns"]
        assert next(col for col in listed if col["id"] == limited["id"])["wipLimit"] is None
        assert (await ok(c, "create_task", {"columnId": limited["id"], "title": "five"}))["notice"] is None
        assert (
            await ok(
                c, "manage_columns", {"action": "rename", "columnId": limited["id"], "name": "Doing", "wipLimit": 9}
            )
        )["column"]["wipLimit"] == 9


# -- 7: cursors belong to their list -------------------------------------------------------------
async def test_a_cursor_only_works_with_the_filters_it_came_from(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        tasks = [await new_task(c, cols[0], f"log {i}") for i in range(3)]
        for t in tasks:
            await ok(c, "update_task", {"taskId": t["id"], "title": t["title"] + "!"})
        since = "2020-01-01T00:00:00Z"
        base = {"boardId": bid, "limit": 2}
        page = await ok(c, "list_activity", {**base, "source": "mcp", "since": since})
        assert page["nextCursor"]
        cursor = page["nextCursor"]
        # the same filters (since spelled differently, same instant) go on
        more = await ok(
            c, "list_activity", {**base, "source": "mcp", "since": "2020-01-01T01:00:00+01:00", "cursor": cursor}
        )
        assert more["activity"] and not {a["id"] for a in more["activity"]} & {a["id"] for a in page["activity"]}
        before = stored_state()
        for changed in (
            {"source": "mcp"},  # since dropped
            {"since": since},  # source dropped
            {"source": "ui", "since": since},
            {"source": "mcp", "since": "2021-01-01T00:00:00Z"},
            {"source": "mcp", "since": since, "type": "task.updated"},
        ):
            problem = await err(c, "list_activity", {**base, **changed, "cursor": cursor})
            assert names_field(problem, "cursor") and "same" in problem["hint"], (changed, problem)
        task_page = await ok(c, "list_activity", {"taskId": tasks[0]["id"], "limit": 1})
        assert names_field(
            await err(
                c,
                "list_activity",
                {"taskId": tasks[0]["id"], "limit": 1, "type": "task.created", "cursor": task_page["nextCursor"]},
            ),
            "cursor",
        )
        # list_tasks: a board's cursor is not a column's; the page shape may change between pages
        board_page = await ok(c, "list_tasks", {"boardId": bid, "limit": 1})
        assert names_field(
            await err(c, "list_tasks", {"columnId": cols[0], "limit": 1, "cursor": board_page["nextCursor"]}), "cursor"
        )
        column_page = await ok(c, "list_tasks", {"columnId": cols[0], "limit": 1})
        assert names_field(
            await err(c, "list_tasks", {"boardId": bid, "limit": 1, "cursor": column_page["nextCursor"]}), "cursor"
        )
        detailed = await ok(
            c,
            "list_tasks",
            {"boardId": bid, "limit": 5, "response_format": "detailed", "cursor": board_page["nextCursor"]},
        )
        assert [t["id"] for t in detailed["tasks"]] == [t["id"] for t in tasks[1:]]
        assert stored_state() == before


# -- 8: looking a task up by its key ---------------------------------------------------------------
async def test_get_task_by_key_points_to_workspace_and_number(server_url, owner, outsider):
    async with mcp_client(server_url, owner.token) as c:
        _, cols = await _board(c, owner.workspace_id)
        await new_task(c, cols[0], "first")
        task = await new_task(c, cols[0], "second")
        key = task["key"]
        number = task["number"]
        for sent in (key, key.lower(), f" {key} "):
            problem = await err(c, "get_task", {"taskId": sent})
            assert problem["code"] == "NOT_FOUND", problem
            assert "workspaceId" in problem["hint"] and f"number {number}" in problem["hint"], problem
        # the hint's way works
        found = await ok(c, "get_task", {"workspaceId": owner.workspace_id, "number": number})
        assert found["task"]["id"] == task["id"]
        # a missing number reads as a number, not as an id
        missing = await err(c, "get_task", {"workspaceId": owner.workspace_id, "number": 99})
        assert missing["code"] == "NOT_FOUND"
        assert missing["message"].startswith(f"No task number 99 in workspace {owner.workspace_id}"), missing
        assert "with id" not in missing["message"]
        foreign = await err(c, "get_task", {"workspaceId": outsider.workspace_id, "number": 1})
        assert foreign["message"].startswith(f"No task number 1 in workspace {outsider.workspace_id}"), foreign


# -- 9: null where a description gives it a meaning ------------------------------------------------
# (tool, field) -> what the description says null does; the test below derives the set of fields
# that describe null from the registry and refuses any that is missing here.
NULL_EFFECTS = {
    ("update_task", "description"): "empties",
    ("update_task", "dueDate"): "removes",
    ("manage_columns", "wipLimit"): "removes",
    ("update_workspace", "defaultRepo"): "removes",
    ("update_project", "ownerId"): "without one",
    ("update_project", "parentId"): "top-level",
    ("update_project", "goal"): "removes",
    ("update_project", "constraints"): "empties",
    ("update_project", "milestones"): "empties",
    ("update_project", "risks"): "empties",
    ("update_project", "budget"): "removes",
    ("update_project", "successMetrics"): "empties",
}
PROJECT_FILLED = {
    "goal": "g",
    "constraints": ["c"],
    "milestones": [{"title": "m"}],
    "risks": [{"title": "r"}],
    "budget": "b",
    "successMetrics": ["s"],
}
PROJECT_EMPTY = {
    "ownerId": None,
    "parentId": None,
    "goal": None,
    "constraints": [],
    "milestones": [],
    "risks": [],
    "budget": None,
    "successMetrics": [],
}


def test_null_is_described_only_where_it_means_something():
    described = {
        (s.name, name)
        for s in product_registry()
        for name, sub in s.definition()["inputSchema"].get("properties", {}).items()
        if "null" in sub.get("description", "").lower()
    }
    assert described == set(NULL_EFFECTS)
    for tool, name in described:
        spec = product_registry().get(tool)
        assert name in spec.nullable, (tool, name)  # the server accepts what the description promises
        assert NULL_EFFECTS[(tool, name)] in spec.definition()["inputSchema"]["properties"][name]["description"]


async def _nulled_project(c, ws, parent_id, field):
    made = (
        await ok(
            c,
            "create_project",
            {"workspaceId": ws, "name": f"Nulls {uuid.uuid4().hex[:12]}", "parentId": parent_id, **PROJECT_FILLED},
        )
    )["project"]
    return await ok(c, "update_project", {"projectId": made["id"], field: None})


async def _twice(c, tool, first, second):
    """Set a value, then send the null whose effect is checked."""
    await ok(c, tool, first)
    return await ok(c, tool, second)


async def test_null_has_the_described_effect_on_every_such_field(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        bid, cols = await _board(c, owner.workspace_id)
        task = await new_task(c, cols[0], "Nulls", description="body", priority="HIGH", dueDate="2026-12-01")
        column = (
            await ok(c, "manage_columns", {"action": "create", "boardId": bid, "name": "Limited", "wipLimit": 3})
        )["column"]
        effects = {
            ("update_task", "description"): (
                lambda: ok(c, "update_task", {"taskId": task["id"], "description": None}),
                lambda out: out["task"]["description"] == "" and out["changedFields"] == ["description"],
            ),
            ("update_task", "dueDate"): (
                lambda: ok(c, "update_task", {"taskId": task["id"], "dueDate": None}),
                lambda out: out["task"]["dueDate"] is None and out["changedFields"] == ["dueDate"],
            ),
            ("manage_columns", "wipLimit"): (
                lambda: ok(
                    c,
                    "manage_columns",
                    {"action": "rename", "columnId": column["id"], "name": "Limited", "wipLimit": None},
                ),
                lambda out: out["column"]["wipLimit"] is None,
            ),
            ("update_workspace", "defaultRepo"): (
                lambda: _twice(
                    c,
                    "update_workspace",
                    {"workspaceId": owner.workspace_id, "defaultRepo": "null/effect"},
                    {"workspaceId": owner.workspace_id, "defaultRepo": None},
                ),
                lambda out: out["workspace"]["defaultRepo"] is None and out["changedFields"] == ["defaultRepo"],
            ),
        }
        parent = (
            await ok(
                c, "create_project", {"workspaceId": owner.workspace_id, "name": f"Null parent {uuid.uuid4().hex[:12]}"}
            )
        )["project"]
        for field in PROJECT_EMPTY:
            effects[("update_project", field)] = (
                lambda field=field: _nulled_project(c, owner.workspace_id, parent["id"], field),
                lambda out, field=field: (
                    out["project"][field] == PROJECT_EMPTY[field] and out["changedFields"] == [field]
                ),
            )
        assert set(effects) == set(NULL_EFFECTS)
        for key, (call, check) in effects.items():
            out = await call()
            assert check(out), (key, out)
        # the fields the update rule names as "cannot be empty" ignore null
        stored = (await ok(c, "get_task", {"taskId": task["id"]}))["task"]
        assert (stored["title"], stored["priority"]) == ("Nulls", "HIGH")
        out = await ok(
            c, "update_task", {"taskId": task["id"], "title": None, "priority": None, "dueDate": "2027-01-01"}
        )
        assert out["changedFields"] == ["dueDate"] and (out["task"]["title"], out["task"]["priority"]) == (
            "Nulls",
            "HIGH",
        )
