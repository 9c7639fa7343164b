"""Behaviour of the connected agent session tools (create/attach/align/complete/resume/get/list),
through the official MCP SDK client against DynamoDB Local; the binding race through raw
concurrent HTTP calls (threads released together by a barrier)."""

from __future__ import annotations

import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests import rpc
from tests.conftest import make_actor, mcp_client
from tests.tools_support import activity_rows, err, names_field, new_board, new_task, ok, stored_state

REPO = "acme/widgets"


def _add_member(workspace_id: str, role: str, name: str = "Bea") -> tuple[str, str]:
    """A new user made a member of ``workspace_id`` with ``role``: (userId, token)."""
    from domain import auth
    from domain.store import keys, members
    from domain.store.models import UserRow

    user = auth.create_user(f"{name.lower()}-{uuid.uuid4().hex[:12]}@example.com", name)
    members.add(workspace_id, UserRow.get(*keys.user_profile(user.userId)), role)
    return user.userId, auth.mint_pat(user.userId)[0]


def _key() -> str:
    return f"k-{uuid.uuid4()}"


async def _project(c: Any, ws: str, name: str = "Widgets", repo: str | None = REPO) -> dict[str, Any]:
    project = (await ok(c, "create_project", {"workspaceId": ws, "name": f"{name} {uuid.uuid4().hex[:4]}"}))["project"]
    if repo:
        await ok(
            c,
            "add_project_link",
            {"projectId": project["id"], "targetType": "REPO", "targetId": f"https://github.com/{repo}.git"},
        )
    return project


async def _session(c: Any, project_id: str, **extra: Any) -> dict[str, Any]:
    return (
        await ok(c, "create_agent_session", {"projectId": project_id, "repo": REPO, "idempotencyKey": _key(), **extra})
    )["session"]


async def _trace(c: Any, ws: str, session_id: str, part: str) -> dict[str, Any]:
    """One TRACE part of the session, stored through attach_artifact (the way a capture uploader stores it)."""
    return (
        await ok(
            c,
            "attach_artifact",
            {
                "workspaceId": ws,
                "type": "TRACE",
                "title": f"trace {part}",
                "url": f"https://traces.example.com/{part}",
                "sessionId": session_id,
                "tracePart": part,
            },
        )
    )["artifact"]


# -- create_agent_session ------------------------------------------------------------------------
async def test_a_project_without_the_repo_link_is_refused_naming_the_missing_link_and_writes_nothing(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        await _project(c, owner.workspace_id, "Linked")  # the workspace links a repository somewhere
        bare = await _project(c, owner.workspace_id, "Bare", repo=None)
        before = stored_state()
        e = await err(c, "create_agent_session", {"projectId": bare["id"], "repo": REPO, "idempotencyKey": _key()})
        assert names_field(e, "repo") and "REPO link" in e["hint"] and bare["id"] in e["hint"] and REPO in e["hint"]
        assert stored_state() == before
        other = await err(
            c, "create_agent_session", {"projectId": bare["id"], "repo": "acme/other", "idempotencyKey": _key()}
        )
        assert names_field(other, "repo")
        missing_key = await err(c, "create_agent_session", {"projectId": bare["id"], "repo": REPO})
        assert names_field(missing_key, "idempotencyKey")
        assert stored_state() == before


async def test_create_opens_a_starting_session_fixed_to_the_project(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        made = await _session(
            c, project["id"], provider="claude-code", repoState={"branch": "main", "commit": "abc1234", "dirty": False}
        )
        assert (
            made["status"] == "STARTING"
            and made["workspaceId"] == owner.workspace_id
            and made["projectId"] == project["id"]
        )
        assert made["repository"] == REPO and made["providerThreadId"] is None and made["captureComplete"] is False
        assert made["repoStart"] == {"branch": "main", "commit": "abc1234", "dirty": False} and made["usage"] is None
        later = await _session(c, project["id"], continuesSessionId=made["id"])
        assert later["continuesSessionId"] == made["id"]
        ghost = made["id"][:-1] + ("a" if made["id"][-1] != "a" else "b")
        e = await err(
            c,
            "create_agent_session",
            {"projectId": project["id"], "repo": REPO, "continuesSessionId": ghost, "idempotencyKey": _key()},
        )
        assert e["code"] == "NOT_FOUND"


async def test_the_workspace_default_repo_admits_a_session_only_while_no_project_links_a_repository(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        ws = owner.workspace_id
        await ok(c, "update_workspace", {"workspaceId": ws, "defaultRepo": REPO})
        bare = await _project(c, ws, "Bare", repo=None)
        made = await _session(c, bare["id"])
        assert made["status"] == "STARTING"
        await _project(
            c, ws, "Elsewhere", repo="acme/other"
        )  # now a project links a repository: the default no longer applies
        e = await err(c, "create_agent_session", {"projectId": bare["id"], "repo": REPO, "idempotencyKey": _key()})
        assert names_field(e, "repo") and "REPO link" in e["hint"]


# -- attach_agent_session ------------------------------------------------------------------------
async def test_late_binding_converges_and_a_competing_binding_is_session_already_bound(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        made = await _session(c, project["id"])
        thread = f"th-{uuid.uuid4()}"
        bound = await ok(
            c,
            "attach_agent_session",
            {"sessionId": made["id"], "provider": "claude-code", "threadId": thread, "idempotencyKey": _key()},
        )
        assert (
            bound["attached"] == "bound"
            and bound["session"]["status"] == "ACTIVE"
            and bound["session"]["providerThreadId"] == thread
        )
        again = await ok(
            c,
            "attach_agent_session",
            {"sessionId": made["id"], "provider": "claude-code", "threadId": thread, "idempotencyKey": _key()},
        )
        assert again["attached"] == "existing" and again["session"]["updatedAt"] == bound["session"]["updatedAt"]
        by_project = await ok(
            c,
            "attach_agent_session",
            {
                "projectId": project["id"],
                "repo": REPO,
                "provider": "claude-code",
                "threadId": thread,
                "idempotencyKey": _key(),
            },
        )
        assert by_project["attached"] == "existing" and by_project["session"]["id"] == made["id"]
        before = stored_state()
        rebind = await err(
            c,
            "attach_agent_session",
            {"sessionId": made["id"], "provider": "claude-code", "threadId": "th-other", "idempotencyKey": _key()},
        )
        assert rebind["code"] == "CONFLICT" and rebind["reason"] == "SESSION_ALREADY_BOUND"
        second = await _session(c, project["id"])
        before = stored_state()
        stolen = await err(
            c,
            "attach_agent_session",
            {"sessionId": second["id"], "provider": "claude-code", "threadId": thread, "idempotencyKey": _key()},
        )
        assert (
            stolen["code"] == "CONFLICT"
            and stolen["reason"] == "SESSION_ALREADY_BOUND"
            and made["id"] in stolen["message"]
        )
        assert stored_state() == before


async def test_attach_create_makes_an_active_session_under_the_create_rules(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        bare = await _project(c, owner.workspace_id, "Bare", repo=None)
        before = stored_state()
        e = await err(
            c,
            "attach_agent_session",
            {"projectId": bare["id"], "repo": REPO, "provider": "codex", "threadId": "t-1", "idempotencyKey": _key()},
        )
        assert names_field(e, "repo") and stored_state() == before
        made = await ok(
            c,
            "attach_agent_session",
            {
                "projectId": project["id"],
                "repo": REPO,
                "provider": "codex",
                "threadId": f"t-{uuid.uuid4()}",
                "idempotencyKey": _key(),
            },
        )
        assert (
            made["attached"] == "created"
            and made["session"]["status"] == "ACTIVE"
            and made["session"]["provider"] == "codex"
        )


def _race(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    gate = threading.Barrier(len(calls))

    def one(call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        token, args = call
        gate.wait()
        return rpc.call_tool(url, token, "attach_agent_session", args)

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(one, calls))


def _sessions_of_thread(url: str, token: str, ws: str, thread: str) -> list[dict[str, Any]]:
    listed = rpc.ok(rpc.call_tool(url, token, "list_agent_sessions", {"workspaceId": ws, "limit": 200}))["sessions"]
    return [
        s
        for s in (
            rpc.ok(rpc.call_tool(url, token, "get_agent_session", {"sessionId": x["id"]}))["session"] for x in listed
        )
        if s["providerThreadId"] == thread
    ]


@pytest.mark.parametrize("rounds", [4])
def test_two_agents_attaching_one_provider_thread_at_once_leave_one_binding(server_url, stack, rounds):
    """Two agents (two members) attach-create the same provider thread at the same moment: exactly
    one session is created, the other call is CONFLICT SESSION_ALREADY_BOUND and wrote nothing.
    The same operator racing itself with two keys converges on one session."""
    actor = make_actor("Racer")
    ws = actor.workspace_id
    _, rival = _add_member(ws, "MEMBER", "Rival")
    project = rpc.ok(rpc.call_tool(server_url, actor.token, "create_project", {"workspaceId": ws, "name": "Race"}))[
        "project"
    ]
    rpc.ok(
        rpc.call_tool(
            server_url,
            actor.token,
            "add_project_link",
            {"projectId": project["id"], "targetType": "REPO", "targetId": REPO},
        )
    )
    for _ in range(rounds):
        thread = f"race-{uuid.uuid4()}"
        args = {"projectId": project["id"], "repo": REPO, "provider": "claude-code", "threadId": thread}
        answers = _race(
            server_url, [(actor.token, {**args, "idempotencyKey": _key()}), (rival, {**args, "idempotencyKey": _key()})]
        )
        won = [a for a in answers if not a["isError"]]
        lost = [rpc.err(a) for a in answers if a["isError"]]
        assert len(won) == 1 and len(lost) == 1, answers
        assert lost[0]["code"] == "CONFLICT" and lost[0]["reason"] == "SESSION_ALREADY_BOUND"
        assert len(_sessions_of_thread(server_url, actor.token, ws, thread)) == 1
        same = f"same-{uuid.uuid4()}"
        twins = _race(
            server_url, [(actor.token, {**args, "threadId": same, "idempotencyKey": _key()}) for _ in range(2)]
        )
        ids = {rpc.ok(a)["session"]["id"] for a in twins}
        assert len(ids) == 1 and sorted(rpc.ok(a)["attached"] for a in twins) == ["created", "existing"]
        assert len(_sessions_of_thread(server_url, actor.token, ws, same)) == 1


def test_two_starting_sessions_late_binding_one_thread_at_once_bind_only_one(server_url, stack):
    actor = make_actor("Binder")
    ws = actor.workspace_id
    project = rpc.ok(rpc.call_tool(server_url, actor.token, "create_project", {"workspaceId": ws, "name": "Bind"}))[
        "project"
    ]
    rpc.ok(
        rpc.call_tool(
            server_url,
            actor.token,
            "add_project_link",
            {"projectId": project["id"], "targetType": "REPO", "targetId": REPO},
        )
    )
    made = [
        rpc.ok(
            rpc.call_tool(
                server_url,
                actor.token,
                "create_agent_session",
                {"projectId": project["id"], "repo": REPO, "idempotencyKey": _key()},
            )
        )["session"]
        for _ in range(2)
    ]
    thread = f"late-{uuid.uuid4()}"
    answers = _race(
        server_url,
        [
            (actor.token, {"sessionId": s["id"], "provider": "codex", "threadId": thread, "idempotencyKey": _key()})
            for s in made
        ],
    )
    assert sum(not a["isError"] for a in answers) == 1
    assert [rpc.err(a)["reason"] for a in answers if a["isError"]] == ["SESSION_ALREADY_BOUND"]
    states = [
        rpc.ok(rpc.call_tool(server_url, actor.token, "get_agent_session", {"sessionId": s["id"]}))["session"]
        for s in made
    ]
    assert sorted(s["status"] for s in states) == ["ACTIVE", "STARTING"]


async def test_only_the_operator_binds_a_session(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        made = await _session(c, project["id"])
    _, admin = _add_member(owner.workspace_id, "ADMIN")
    async with mcp_client(server_url, admin) as c:
        e = await err(
            c,
            "attach_agent_session",
            {"sessionId": made["id"], "provider": "claude-code", "threadId": "x-1", "idempotencyKey": _key()},
        )
        assert e["code"] == "FORBIDDEN"


# -- align_agent_session -------------------------------------------------------------------------
async def test_align_without_expected_updated_at_is_invalid_and_writes_nothing(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        made = await _session(c, project["id"])
        before = stored_state()
        e = await err(c, "align_agent_session", {"sessionId": made["id"]})
        assert names_field(e, "expectedUpdatedAt")
        stale = await err(
            c, "align_agent_session", {"sessionId": made["id"], "expectedUpdatedAt": "2020-01-01T00:00:00.000Z"}
        )
        assert stale["code"] == "CONFLICT" and stale["current"]["id"] == made["id"]
        assert stored_state() == before


async def test_align_snapshots_names_and_re_align_appends_an_interval_and_an_activity_row(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        ws = owner.workspace_id
        project = await _project(c, ws)
        board = await new_board(c, ws, "Work")
        col = board["columns"][0]["id"]
        t1 = await new_task(c, col, "Wire the hook")
        t2 = await new_task(c, col, "Write the docs")
        owner2, _ = _add_member(ws, "MEMBER", "Otto")
        made = await _session(c, project["id"])
        first = await ok(
            c,
            "align_agent_session",
            {"sessionId": made["id"], "taskId": t1["id"], "expectedUpdatedAt": made["updatedAt"]},
        )
        snap = first["alignment"]
        assert (
            first["changed"]
            and first["ordinal"] == 1
            and snap["taskKey"] == t1["key"]
            and snap["taskTitle"] == "Wire the hook"
        )
        assert (
            snap["projectName"] == project["name"]
            and snap["ownerId"] == owner.user_id
            and snap["operatorName"]
            and snap["workspaceName"]
        )
        same = await ok(
            c,
            "align_agent_session",
            {"sessionId": made["id"], "taskId": t1["id"], "expectedUpdatedAt": first["session"]["updatedAt"]},
        )
        assert same["changed"] is False and same["session"]["updatedAt"] == first["session"]["updatedAt"]
        second = await ok(
            c,
            "align_agent_session",
            {
                "sessionId": made["id"],
                "taskId": t2["id"],
                "ownerId": owner2,
                "expectedUpdatedAt": first["session"]["updatedAt"],
            },
        )
        assert (
            second["ordinal"] == 2
            and second["alignment"]["ownerName"] == "Otto"
            and second["session"]["taskId"] == t2["id"]
        )
        third = await ok(
            c,
            "align_agent_session",
            {"sessionId": made["id"], "taskId": None, "expectedUpdatedAt": second["session"]["updatedAt"]},
        )
        assert third["ordinal"] == 3 and third["alignment"]["taskId"] is None and third["session"]["taskId"] is None
        got = await ok(c, "get_agent_session", {"sessionId": made["id"]})
        intervals = got["alignments"]
        assert [a["ordinal"] for a in intervals] == [1, 2, 3] and [a["snapshot"]["taskId"] for a in intervals] == [
            t1["id"],
            t2["id"],
            None,
        ]
        assert all(a["endedAt"] for a in intervals[:2]) and intervals[2]["endedAt"] is None
        rows = [r for r in activity_rows(board["board"]["id"]) if r["type"]["S"] == "session.aligned"]
        assert len(rows) == 3  # t1, t2, and the move from t2 to no task (on t2's board)
        listed = await ok(c, "list_activity", {"taskId": t2["id"], "type": "session.aligned"})
        assert len(listed["activity"]) == 2


async def test_align_refuses_a_foreign_owner_and_a_closed_session(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        made = await _session(c, project["id"])
        before = stored_state()
        e = await err(
            c,
            "align_agent_session",
            {"sessionId": made["id"], "ownerId": "usr_nobody", "expectedUpdatedAt": made["updatedAt"]},
        )
        assert names_field(e, "ownerId") and stored_state() == before
        done = (
            await ok(
                c,
                "complete_agent_session",
                {"sessionId": made["id"], "outcome": "CANCELLED", "expectedUpdatedAt": made["updatedAt"]},
            )
        )["session"]
        closed = await err(c, "align_agent_session", {"sessionId": made["id"], "expectedUpdatedAt": done["updatedAt"]})
        assert closed["code"] == "CONFLICT" and closed["current"]["status"] == "CANCELLED"


# -- complete_agent_session ----------------------------------------------------------------------
async def test_completing_with_a_manifest_part_missing_stores_the_summary_but_not_capture_complete(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        ws = owner.workspace_id
        project = await _project(c, ws)
        made = await _session(c, project["id"])
        await _trace(c, ws, made["id"], "transcript-0001")
        args = {
            "sessionId": made["id"],
            "outcome": "COMPLETED",
            "expectedUpdatedAt": made["updatedAt"],
            "traceParts": ["transcript-0001", "transcript-0002"],
            "usage": {"inputTokens": 1200, "outputTokens": 340},
        }
        before = stored_state()
        done = (await ok(c, "complete_agent_session", args))["session"]
        assert done["status"] == "COMPLETED" and done["outcome"] == "COMPLETED" and done["captureComplete"] is False
        assert (
            done["capture"]["missingParts"] == ["transcript-0002"]
            and done["capture"]["storedParts"] == 1
            and done["capture"]["expectedParts"] == 2
        )
        assert done["usage"] == {
            "inputTokens": 1200,
            "outputTokens": 340,
            "cacheReadTokens": None,
            "cacheWriteTokens": None,
        }
        summary_id = done["capture"]["summaryArtifactId"]
        assert any(
            k[1].endswith(summary_id.rsplit("_", 1)[1]) for k in set(stored_state()) - set(before)
        )  # stored in the completion's write
        repeat = (await ok(c, "complete_agent_session", args))["session"]  # the exact retry: nothing changes
        assert repeat == done
        got = await ok(c, "get_agent_session", {"sessionId": made["id"]})
        assert got["artifacts"]["summary"]["artifactId"] == summary_id and [
            t["name"] for t in got["artifacts"]["transcripts"]
        ] == ["transcript-0001"]
        summary = await ok(c, "get_artifact", {"artifactId": summary_id})
        body = json.loads(summary["body"])
        assert body["traceParts"] == {
            "expected": ["transcript-0001", "transcript-0002"],
            "stored": ["transcript-0001"],
            "missing": ["transcript-0002"],
        }
        assert body["outcome"] == "COMPLETED" and body["usage"]["inputTokens"] == 1200
        # the late part arrives: the same completion checked again now finds every part
        await _trace(c, ws, made["id"], "transcript-0002")
        healed = (await ok(c, "complete_agent_session", {**args, "expectedUpdatedAt": done["updatedAt"]}))["session"]
        assert healed["captureComplete"] is True and healed["status"] == "COMPLETED"
        other = await err(
            c, "complete_agent_session", {**args, "outcome": "INTERRUPTED", "expectedUpdatedAt": healed["updatedAt"]}
        )
        assert other["code"] == "CONFLICT"


async def test_the_run_summary_is_deterministic_and_a_completed_session_frees_its_thread(server_url, owner):
    from domain import ids
    from domain.store import session_capture
    from domain.store.models import SessionRow
    from domain.tools.sessions import run_summary

    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        thread = f"th-{uuid.uuid4()}"
        made = (
            await ok(
                c,
                "attach_agent_session",
                {
                    "projectId": project["id"],
                    "repo": REPO,
                    "provider": "claude-code",
                    "threadId": thread,
                    "idempotencyKey": _key(),
                },
            )
        )["session"]
        done = (
            await ok(
                c,
                "complete_agent_session",
                {"sessionId": made["id"], "outcome": "COMPLETED", "expectedUpdatedAt": made["updatedAt"]},
            )
        )["session"]
        assert done["captureComplete"] is True  # an empty manifest: only the summary is expected
        ref = ids.parse_session(made["id"])
        stored = SessionRow.get(f"SESS#{ref.workspace_id}", f"S#{ref.ulid}")
        summary = await ok(c, "get_artifact", {"artifactId": done["capture"]["summaryArtifactId"]})
        assert summary["body"] == session_capture.summary_body(run_summary(stored, [], [], []))
        assert summary["artifact"]["type"] == "RUN_SUMMARY" and summary["artifact"]["sessionId"] == made["id"]
        fresh = await ok(
            c,
            "attach_agent_session",
            {
                "projectId": project["id"],
                "repo": REPO,
                "provider": "claude-code",
                "threadId": thread,
                "idempotencyKey": _key(),
            },
        )
        assert fresh["attached"] == "created" and fresh["session"]["id"] != made["id"]


# -- resume_agent_session ------------------------------------------------------------------------
async def test_resume_conflicts_and_who_may_resume(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        ws = owner.workspace_id
        project = await _project(c, ws)
        other_project = await _project(c, ws, "Other")
        made = await _session(c, project["id"])
        active = await ok(
            c,
            "attach_agent_session",
            {"sessionId": made["id"], "provider": "codex", "threadId": f"r-{uuid.uuid4()}", "idempotencyKey": _key()},
        )
        e = await err(
            c,
            "resume_agent_session",
            {"sessionId": made["id"], "repo": REPO, "expectedUpdatedAt": active["session"]["updatedAt"]},
        )
        assert e["code"] == "CONFLICT" and "reason" not in e  # ACTIVE: nothing to resume
        crashed = (
            await ok(
                c,
                "complete_agent_session",
                {
                    "sessionId": made["id"],
                    "outcome": "INTERRUPTED",
                    "expectedUpdatedAt": active["session"]["updatedAt"],
                },
            )
        )["session"]
        before = stored_state()
        wrong_repo = await err(
            c,
            "resume_agent_session",
            {"sessionId": made["id"], "repo": "acme/other", "expectedUpdatedAt": crashed["updatedAt"]},
        )
        assert wrong_repo["code"] == "CONFLICT" and wrong_repo["reason"] == "SESSION_RESUME_CONFLICT"
        wrong_project = await err(
            c,
            "resume_agent_session",
            {
                "sessionId": made["id"],
                "projectId": other_project["id"],
                "repo": REPO,
                "expectedUpdatedAt": crashed["updatedAt"],
            },
        )
        assert (
            wrong_project["reason"] == "SESSION_RESUME_CONFLICT" and wrong_project["current"]["status"] == "INTERRUPTED"
        )
        missing = await err(c, "resume_agent_session", {"sessionId": made["id"], "repo": REPO})
        assert names_field(missing, "expectedUpdatedAt")
        assert stored_state() == before
    _, member = _add_member(ws, "MEMBER", "Mo")
    async with mcp_client(server_url, member) as c:
        e = await err(
            c,
            "resume_agent_session",
            {"sessionId": made["id"], "repo": REPO, "expectedUpdatedAt": crashed["updatedAt"]},
        )
        assert e["code"] == "FORBIDDEN"
    _, admin = _add_member(ws, "ADMIN", "Ada")
    async with mcp_client(server_url, admin) as c:
        back = (
            await ok(
                c,
                "resume_agent_session",
                {
                    "sessionId": made["id"],
                    "projectId": project["id"],
                    "repo": REPO,
                    "expectedUpdatedAt": crashed["updatedAt"],
                },
            )
        )["session"]
        assert (
            back["status"] == "ACTIVE"
            and back["resumeCount"] == 1
            and back["operatorId"] == owner.user_id
            and back["outcome"] is None
        )


async def test_resume_refuses_once_the_project_no_longer_links_the_repository(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        made = await _session(c, project["id"])
        crashed = (
            await ok(
                c,
                "complete_agent_session",
                {"sessionId": made["id"], "outcome": "INTERRUPTED", "expectedUpdatedAt": made["updatedAt"]},
            )
        )["session"]
        await ok(c, "remove_project_link", {"projectId": project["id"], "targetType": "REPO", "targetId": REPO})
        e = await err(
            c,
            "resume_agent_session",
            {"sessionId": made["id"], "repo": REPO, "expectedUpdatedAt": crashed["updatedAt"]},
        )
        assert e["reason"] == "SESSION_RESUME_CONFLICT"


# -- get / list ----------------------------------------------------------------------------------
async def test_list_filters_paginates_with_totals_and_omits_thread_ids(server_url, stack):
    actor = make_actor("Lister")
    async with mcp_client(server_url, actor.token) as c:
        ws = actor.workspace_id
        p1 = await _project(c, ws, "One")
        p2 = await _project(c, ws, "Two")
        made = [await _session(c, p1["id"]) for _ in range(3)] + [await _session(c, p2["id"])]
        await ok(
            c,
            "attach_agent_session",
            {
                "sessionId": made[0]["id"],
                "provider": "codex",
                "threadId": f"l-{uuid.uuid4()}",
                "idempotencyKey": _key(),
            },
        )
        every = await ok(c, "list_agent_sessions", {"workspaceId": ws})
        assert every["totalCount"] == 4 and [s["id"] for s in every["sessions"]] == sorted(
            (m["id"] for m in made), reverse=True
        )
        assert all("providerThreadId" not in s for s in every["sessions"])
        page = await ok(c, "list_agent_sessions", {"workspaceId": ws, "projectId": p1["id"], "limit": 2})
        assert page["totalCount"] == 3 and len(page["sessions"]) == 2 and page["nextCursor"] and page["notice"]
        rest = await ok(
            c,
            "list_agent_sessions",
            {"workspaceId": ws, "projectId": p1["id"], "limit": 2, "cursor": page["nextCursor"]},
        )
        assert len(rest["sessions"]) == 1 and rest["nextCursor"] is None
        assert {s["id"] for s in page["sessions"] + rest["sessions"]} == {m["id"] for m in made[:3]}
        bad = await err(c, "list_agent_sessions", {"workspaceId": ws, "limit": 2, "cursor": page["nextCursor"]})
        assert names_field(bad, "cursor")
        active = await ok(c, "list_agent_sessions", {"workspaceId": ws, "status": "ACTIVE", "provider": "codex"})
        assert [s["id"] for s in active["sessions"]] == [made[0]["id"]]
        none = await ok(c, "list_agent_sessions", {"workspaceId": ws, "captureComplete": True})
        assert none["totalCount"] == 0


async def test_a_provider_thread_id_is_shown_only_to_the_operator_and_admins(server_url, owner):
    ws = owner.workspace_id
    _, bea = _add_member(ws, "MEMBER", "Bea")
    _, cid = _add_member(ws, "MEMBER", "Cid")
    _, ada = _add_member(ws, "ADMIN", "Ada")
    thread = f"secret-thread-{uuid.uuid4()}"
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, ws, "Threads")
    async with mcp_client(server_url, bea) as c:
        made = await _session(c, project["id"])
        bound = await ok(
            c,
            "attach_agent_session",
            {"sessionId": made["id"], "provider": "codex", "threadId": thread, "idempotencyKey": _key()},
        )
        assert bound["session"]["providerThreadId"] == thread
        assert (await ok(c, "get_agent_session", {"sessionId": made["id"]}))["session"]["providerThreadId"] == thread
    for token in (owner.token, ada):  # the workspace's owner and admins steer sessions: they see it
        async with mcp_client(server_url, token) as c:
            assert (await ok(c, "get_agent_session", {"sessionId": made["id"]}))["session"][
                "providerThreadId"
            ] == thread
    async with mcp_client(server_url, cid) as c:  # another member sees the session, not its thread
        seen = await ok(c, "get_agent_session", {"sessionId": made["id"]})
        assert seen["session"]["id"] == made["id"] and seen["session"]["providerThreadId"] is None
        listed = await ok(c, "list_agent_sessions", {"workspaceId": ws})
        assert thread not in json.dumps(listed) and thread not in json.dumps(seen)
        refused = await client_call_text(
            c, "align_agent_session", {"sessionId": made["id"], "expectedUpdatedAt": "2020-01-01T00:00:00.000Z"}
        )
        assert thread not in refused


async def client_call_text(c: Any, name: str, args: dict[str, Any]) -> str:
    result = await c.call_tool(name, args)
    return json.dumps([getattr(b, "text", "") for b in result.content]) + json.dumps(result.structured_content)


async def test_another_workspace_sees_no_session(server_url, owner, outsider):
    async with mcp_client(server_url, owner.token) as c:
        project = await _project(c, owner.workspace_id)
        made = await _session(c, project["id"])
    async with mcp_client(server_url, outsider.token) as c:
        e = await err(c, "get_agent_session", {"sessionId": made["id"]})
        assert e["code"] == "NOT_FOUND"


def test_a_checkout_bound_connection_supplies_the_repository_and_cannot_name_another(server_url, stack):
    """The stdio adapter binds a connection to its verified checkout (docs/stdio.md): repo defaults
    to that checkout's repository, and another one is FORBIDDEN like another workspace."""
    from domain import auth, pipeline
    from domain.catalog import registry
    from domain.context import Binding

    actor = make_actor("Bound")
    ws = actor.workspace_id
    project = rpc.ok(rpc.call_tool(server_url, actor.token, "create_project", {"workspaceId": ws, "name": "Bound"}))[
        "project"
    ]
    rpc.ok(
        rpc.call_tool(
            server_url,
            actor.token,
            "add_project_link",
            {"projectId": project["id"], "targetType": "REPO", "targetId": REPO},
        )
    )
    principal = auth.authenticate(actor.token)
    binding = Binding(workspace_id=ws, lifetime_id="lt_test", checkout="/tmp/widgets", repository=REPO)
    spec = registry().get("create_agent_session")
    made = pipeline.call_tool(spec, {"projectId": project["id"], "idempotencyKey": _key()}, principal, binding=binding)
    assert made.error is None and made.result["session"]["repository"] == REPO
    other = pipeline.call_tool(
        spec, {"projectId": project["id"], "repo": "acme/other", "idempotencyKey": _key()}, principal, binding=binding
    )
    assert other.error is not None and other.error["error"]["code"] == "FORBIDDEN"
