"""Evidence for issue 29: two agents coordinate through the official MCP SDK client, each with its
own token and session, over HTTP (/api/mcp/x/coordination) and over stdio (two `jentrix mcp`
adapters, where the toolset is on by default).

The scenario so far (the parts built): A starts work on a new task, B's overlapping claim is
refused naming A, A finds B with mj_peers and asks; B's brief shows the question, B answers while
A is waiting in mj_wait_request, and the wait returns the answer; a second question is cancelled
and B's late reply stays attached without reopening it; A submits an artifact, B asks for
changes, A submits a new one and B accepts it; B's channel message is promoted by A to an unclaimed
task and to a proposed decision (with the replay and the refusals)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.conftest import envelope, mcp_client, structured
from tests.rpc import call_tool, ok
from tests.stdio_support import adapter_env
from tests.test_stdio_sdk import sdk_client


def _key() -> str:
    return uuid.uuid4().hex


async def scenario(a: Any, b: Any, ws: str, a_id: str, b_id: str, column_id: str, workspace_id: str) -> None:
    call = lambda c, name, args: c.call_tool(name, {"workspace": ws, **args})  # noqa: E731
    started = structured(
        await call(
            a,
            "mj_start_work",
            {
                "idempotency_key": _key(),
                "column_id": column_id,
                "title": "Refactor the parser",
                "scope": ["src/parser"],
            },
        )
    )
    task_id = started["task"]["id"]
    assert started["task"]["created"] and started["claim"]["actorId"] == a_id
    refused = envelope(
        await call(b, "mj_begin", {"idempotency_key": _key(), "task_id": task_id, "scope": ["src/parser/lexer.py"]})
    )
    assert refused["code"] == "CONFLICT" and refused["current"]["actorId"] == a_id

    peers = structured(await call(a, "mj_peers", {}))
    assert b_id in {m["actorId"] for m in peers["members"]}
    asked = structured(
        await call(
            a,
            "mj_ask",
            {
                "idempotency_key": _key(),
                "task_id": task_id,
                "assignee_actor_id": b_id,
                "question": "Does the lexer keep comments?",
            },
        )
    )
    rid = asked["request"]["id"]
    brief = structured(await call(b, "mj_brief", {}))
    question = next(q for q in brief["questions"] if q["subjectId"] == rid)
    assert question["content"]["fromActorId"] == a_id and question["content"]["trust"] == "data"

    async def answer_later() -> dict[str, Any]:
        await asyncio.sleep(0.7)
        return structured(
            await call(
                b, "mj_answer", {"idempotency_key": _key(), "request_id": rid, "answer": "Yes, as trivia tokens."}
            )
        )

    waited, answered = await asyncio.gather(
        call(a, "mj_wait_request", {"request_id": rid, "timeout_seconds": 15}), answer_later()
    )
    waited = structured(waited)
    assert answered["request"]["state"] == "ANSWERED"
    assert (
        waited["changed"]
        and waited["request"]["answer"]["text"] == "Yes, as trivia tokens."
        and waited["request"]["answer"]["fromActorId"] == b_id
    )

    second = structured(
        await call(
            a,
            "mj_ask",
            {"idempotency_key": _key(), "task_id": task_id, "assignee_actor_id": b_id, "question": "And the parser?"},
        )
    )["request"]["id"]
    cancelled = structured(
        await call(
            a, "mj_cancel_request", {"idempotency_key": _key(), "request_id": second, "reason": "found out myself"}
        )
    )
    assert cancelled["request"]["state"] == "CANCELLED"
    assert (
        envelope(await call(b, "mj_answer", {"idempotency_key": _key(), "request_id": second, "answer": "late"}))[
            "code"
        ]
        == "CONFLICT"
    )
    structured(
        await call(
            b, "mj_reply_late", {"idempotency_key": _key(), "request_id": second, "reply": "FYI: it keeps positions."}
        )
    )
    read = structured(await call(a, "mj_request", {"request_id": second}))["request"]
    assert read["state"] == "CANCELLED" and read["lateReplies"][0]["text"] == "FYI: it keeps positions."
    context = structured(await call(b, "mj_work_context", {"task_id": task_id}))
    assert (
        [c["actorId"] for c in context["claims"]] == [a_id]
        and not context["openRequests"]
        and len(context["closedRequests"]) == 2
    )

    # review: A finishes with an artifact, B asks for changes, A submits a new one, B accepts it
    async def evidence(title: str) -> dict[str, str]:
        art = structured(
            await a.call_tool(
                "attach_artifact",
                {
                    "workspaceId": workspace_id,
                    "type": "PR",
                    "title": title,
                    "url": "https://example.com/pr/7",
                    "taskId": task_id,
                },
            )
        )
        seen = structured(await call(a, "mj_artifact", {"artifact_id": art["artifact"]["id"]}))
        return {"artifact_id": art["artifact"]["id"], "digest": seen["artifact"]["digest"]}

    first = structured(
        await call(
            a,
            "mj_finish",
            {
                "idempotency_key": _key(),
                "task_id": task_id,
                "reviewer_actor_id": b_id,
                "artifacts": [await evidence("Parser refactor")],
            },
        )
    )
    assert first["review"]["state"] == "SUBMITTED"
    assert [r["subjectId"] for r in structured(await call(b, "mj_brief", {}))["reviews"]] == [first["review"]["id"]]
    changes = structured(
        await call(
            b,
            "mj_request_artifact_changes",
            {
                "idempotency_key": _key(),
                "review_id": first["review"]["id"],
                "expected_revision": 1,
                "comment": "Please keep the old entry point.",
            },
        )
    )
    assert changes["review"]["state"] == "CHANGES_REQUESTED"
    second = structured(
        await call(
            a,
            "mj_finish",
            {
                "idempotency_key": _key(),
                "task_id": task_id,
                "reviewer_actor_id": b_id,
                "artifacts": [await evidence("Parser refactor, v2")],
            },
        )
    )
    accepted = structured(
        await call(
            b,
            "mj_accept_artifact",
            {"idempotency_key": _key(), "review_id": second["review"]["id"], "expected_revision": 1},
        )
    )
    assert accepted["review"]["state"] == "ACCEPTED"
    inbox = structured(await call(a, "mj_inbox", {}))
    assert {"answer", "late_reply", "review"} <= {e["type"] for e in inbox["entries"]}

    # a channel message promoted to an unclaimed task
    channel = f"ideas-{uuid.uuid4().hex[:8]}"
    posted = structured(
        await call(b, "mj_post", {"idempotency_key": _key(), "channel": channel, "text": "Fuzz the lexer"})
    )
    messages = structured(await call(a, "mj_channel_messages", {"channel": channel}))["messages"]
    assert [m["id"] for m in messages] == [posted["messageId"]]
    promoted = structured(
        await call(
            a,
            "mj_promote_message",
            {"idempotency_key": _key(), "channel": channel, "message_id": posted["messageId"], "column_id": column_id},
        )
    )
    assert promoted["created"] and promoted["promotion"]["messageId"] == posted["messageId"]
    assert structured(await call(a, "mj_work_context", {"task_id": promoted["promotion"]["taskId"]}))["claims"] == []

    # the same message (B's, an agent's) promoted by A to a proposed decision: the other target is allowed
    decide = {"channel": channel, "message_id": posted["messageId"], "target": "decision"}
    key = _key()
    proposed = structured(await call(a, "mj_promote_message", {"idempotency_key": key, **decide}))
    decision = proposed["promotion"]["decision"]
    assert proposed["created"] and proposed["promotion"]["target"] == "decision"
    assert proposed["promotion"]["taskId"] is None and proposed["promotion"]["promotedBy"] == a_id
    assert (
        decision["state"] == "PROPOSED" and decision["id"].startswith("dc_") and decision["title"] == "Fuzz the lexer"
    )
    assert decision["content"] == {
        "text": "Fuzz the lexer",
        "fromActorId": b_id,
        "fromKind": "agent",
        "at": messages[0]["content"]["at"],
        "trust": "data",
    }  # who wrote it, as data
    assert decision["proposedBy"] == a_id and decision["proposedByKind"] == "agent"
    assert (decision["channel"], decision["messageId"]) == (channel, posted["messageId"])
    # the same key and arguments replay the first answer; another key answers the first promotion
    assert structured(await call(a, "mj_promote_message", {"idempotency_key": key, **decide})) == proposed
    again = structured(await call(b, "mj_promote_message", {"idempotency_key": _key(), **decide}))
    assert not again["created"] and again["promotion"]["decision"] == decision
    # refusals: the same key with other arguments, a task without a column, a decision with one, no message
    reused = envelope(await call(a, "mj_promote_message", {"idempotency_key": key, **decide, "title": "Other"}))
    assert reused["code"] == "CONFLICT"
    no_column = envelope(await call(a, "mj_promote_message", {"idempotency_key": _key(), **decide, "target": "task"}))
    assert no_column["code"] == "INVALID_INPUT" and "column_id" in no_column["message"]
    in_column = envelope(
        await call(a, "mj_promote_message", {"idempotency_key": _key(), **decide, "column_id": column_id})
    )
    assert in_column["code"] == "INVALID_INPUT" and "column_id" in in_column["message"]
    missing = envelope(
        await call(a, "mj_promote_message", {"idempotency_key": _key(), **decide, "message_id": "chm_nope"})
    )
    assert missing["code"] == "NOT_FOUND"
    listed = structured(await call(b, "mj_promotions", {"channel": channel}))["promotions"]
    assert sorted(p["target"] for p in listed) == ["decision", "task"]
    assert next(p for p in listed if p["target"] == "decision")["decision"] == decision
    assert next(p for p in listed if p["target"] == "task")["taskId"] == promoted["promotion"]["taskId"]


def _setup(server_url: str, owner: Any) -> tuple[Any, str]:
    from domain import auth
    from domain.store import keys, members
    from domain.store.models import UserRow

    user = auth.create_user(f"bee-{uuid.uuid4().hex[:12]}@example.com", "Bee")
    members.add(owner.workspace_id, UserRow.get(*keys.user_profile(user.userId)), "MEMBER")
    board = ok(
        call_tool(
            server_url,
            owner.token,
            "create_board",
            {"workspaceId": owner.workspace_id, "name": f"Agents {uuid.uuid4().hex[:12]}"},
        )
    )
    return (user.userId, auth.mint_pat(user.userId)[0]), board["columns"][0]["id"]


async def test_two_agents_coordinate_over_http(server_url, owner):
    (b_id, b_token), column = _setup(server_url, owner)
    url = f"{server_url}/x/coordination,artifacts"  # the coordination toolset, and attach_artifact
    async with mcp_client(url, owner.token) as a, mcp_client(url, b_token) as b:
        await scenario(a, b, owner.workspace_id, owner.user_id, b_id, column, owner.workspace_id)


async def test_two_agents_coordinate_over_stdio(stack, server_url, owner, tmp_path):
    (b_id, b_token), column = _setup(server_url, owner)
    args = ["--workspace", owner.workspace_id]
    async with (
        sdk_client(args, adapter_env(stack, owner.token), "auto", tmp_path / "a.log") as a,
        sdk_client(args, adapter_env(stack, b_token), "auto", tmp_path / "b.log") as b,
    ):
        names = {t.name for t in (await a.list_tools()).tools}
        assert {"mj_brief", "mj_ask", "create_task"} <= names  # on by default in jentrix mcp
        await scenario(a, b, "", owner.user_id, b_id, column, "")


async def test_issue_30_families_through_the_sdk_with_their_refusals(server_url, owner):
    """Issue 30 over HTTP through the official SDK client: two agents (A, the workspace OWNER's
    agent token, and B) and the OWNER's human credential as the operator. Linked integration work
    (with a late change to a frozen input and a stale frozen revision refused), continuity and
    recovery evidence (agents refused), consultation preparation (a non-operator's approval refused,
    the operators' attention read)."""
    from domain import auth

    (b_id, b_token), column = _setup(server_url, owner)
    ws = owner.workspace_id
    a_id = owner.user_id
    project = ok(call_tool(server_url, owner.token, "create_project", {"workspaceId": ws, "name": f"P {_key()[:12]}"}))
    pid = project["project"]["id"]
    ok(
        call_tool(
            server_url, owner.token, "add_project_link", {"projectId": pid, "targetType": "REPO", "targetId": "acme/p"}
        )
    )
    session = ok(
        call_tool(
            server_url,
            owner.token,
            "create_agent_session",
            {"projectId": pid, "repo": "acme/p", "idempotencyKey": _key()},
        )
    )["session"]
    operator_token = auth.mint_pat(a_id, holder="human")[0]
    url = f"{server_url}/x/coordination,artifacts,tasks"
    async with mcp_client(url, owner.token) as a, mcp_client(url, b_token) as b, mcp_client(url, operator_token) as o:
        call = lambda c, name, args: c.call_tool(name, {"workspace": ws, **args})  # noqa: E731
        parent = structured(
            await call(
                a, "mj_start_work", {"idempotency_key": _key(), "column_id": column, "title": "Integrate parser"}
            )
        )["task"]["id"]
        helper = structured(
            await call(b, "mj_start_work", {"idempotency_key": _key(), "column_id": column, "title": "Lexer part"})
        )["task"]["id"]
        linked = structured(
            await call(a, "mj_link_helper", {"idempotency_key": _key(), "task_id": parent, "helper_task_id": helper})
        )
        assert linked["created"] and linked["link"]["decidedBy"] == a_id
        art = structured(
            await a.call_tool(
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "PR",
                    "title": "build",
                    "url": "https://example.com/pr/9",
                    "taskId": parent,
                },
            )
        )["artifact"]["id"]
        digest = structured(await call(a, "mj_artifact", {"artifact_id": art}))["artifact"]["digest"]
        revision = structured(await b.call_tool("get_task", {"taskId": helper}))["task"]["updatedAt"]
        freeze = {
            "task_id": parent,
            "reviewer_actor_id": b_id,
            "artifacts": [{"artifact_id": art, "digest": digest}],
            "tasks": [{"task_id": helper, "revision": revision}],
        }
        ig = structured(await call(a, "mj_freeze_integration", {**freeze, "idempotency_key": _key()}))["integration"]
        # a late change to a frozen input: the set stays as frozen; accepting it is refused
        await b.call_tool("update_task", {"taskId": helper, "title": "Lexer part (late)"})
        accept = {"integration_id": ig["id"], "expected_revision": 1, "frozen_digest": ig["frozenDigest"]}
        late = envelope(await call(b, "mj_accept_integration", {**accept, "idempotency_key": _key()}))
        assert late["code"] == "CONFLICT" and late["current"]["driftedInputs"][0]["input"] == helper
        now_rev = structured(await b.call_tool("get_task", {"taskId": helper}))["task"]["updatedAt"]
        second = structured(
            await call(
                a,
                "mj_freeze_integration",
                {
                    **freeze,
                    "tasks": [{"task_id": helper, "revision": now_rev}],
                    "integration_id": ig["id"],
                    "expected_revision": 1,
                    "idempotency_key": _key(),
                },
            )
        )["integration"]
        stale = envelope(await call(b, "mj_accept_integration", {**accept, "idempotency_key": _key()}))
        assert stale["code"] == "CONFLICT"  # revision 1 is no longer the frozen one
        done = structured(
            await call(
                b,
                "mj_accept_integration",
                {**accept, "expected_revision": 2, "frozen_digest": second["frozenDigest"], "idempotency_key": _key()},
            )
        )
        assert (
            done["integration"]["state"] == "ACCEPTED"
            and done["integration"]["history"][0]["frozenDigest"] == ig["frozenDigest"]
        )

        # continuity for the session's operator; recovery evidence for operators only
        cont = structured(await call(a, "mj_continuation", {"session_id": session["id"]}))
        assert parent in {c["taskId"] for c in cont["claims"]}
        refused = envelope(await call(a, "mj_recovery_evidence", {"session_id": session["id"]}))
        assert refused["code"] == "FORBIDDEN"
        evidence = structured(await call(o, "mj_recovery_evidence", {"session_id": session["id"]}))
        assert "Evidence only" in evidence["notice"]

        # consultation: prepared by an agent, seen by the operator, approved only by the operator
        cons = structured(
            await call(
                a,
                "mj_consult",
                {"idempotency_key": _key(), "task_id": parent, "profile": "architecture", "question": "Sound?"},
            )
        )["consultation"]
        approve = {"consultation_id": cons["id"], "expected_revision": 1, "inputs_digest": cons["inputsDigest"]}
        no = envelope(await call(a, "mj_consult_approve", {**approve, "idempotency_key": _key()}))
        assert no["code"] == "FORBIDDEN" and "operator authority" in no["message"]
        attention = structured(await call(o, "mj_inbox", {"operator_attention": True}))["attentionItems"]
        assert [x["subjectId"] for x in attention] == [cons["id"]]
        approved = structured(await call(o, "mj_consult_approve", {**approve, "idempotency_key": _key()}))
        assert approved["consultation"]["state"] == "APPROVED" and "launched" in approved["notice"]


async def test_an_admin_approves_only_while_the_workspace_grants_operator_authority(server_url, owner, monkeypatch):
    """Issue 30's switch through the official SDK client: a human ADMIN is refused
    mj_consult_approve (and the operators' attention read) until the OWNER grants operator
    authority to ADMINs (domain.operator.set_grant, what `jentrix workspace operator-role` and the
    console run), may approve right after, and is refused again right after the grant is cleared.
    The warm caches are on with a long bound (docs/rate-limits.md): the grant is not a cached
    fact, the workspace item is read in every operator call, so each change applies to the next call."""
    from domain import auth, operator
    from domain.settings import settings
    from domain.store import keys, members
    from domain.store import warm as warm_store
    from domain.store.models import UserRow

    monkeypatch.setattr(settings, "token_cache_seconds", 60)
    warm_store.MEMBERS.clear()
    ws = owner.workspace_id
    admin = auth.create_user(f"adm-{uuid.uuid4().hex[:12]}@example.com", "Adm")
    members.add(ws, UserRow.get(*keys.user_profile(admin.userId)), "ADMIN")
    admin_token = auth.mint_pat(admin.userId, holder="human")[0]
    board = ok(call_tool(server_url, owner.token, "create_board", {"workspaceId": ws, "name": f"Ops {_key()[:12]}"}))
    task = ok(call_tool(server_url, owner.token, "create_task", {"columnId": board["columns"][0]["id"], "title": "T"}))
    url = f"{server_url}/x/coordination"
    async with mcp_client(url, owner.token) as a, mcp_client(url, admin_token) as h:
        call = lambda c, name, args: c.call_tool(name, {"workspace": ws, **args})  # noqa: E731

        async def prepared() -> dict[str, Any]:
            cons = structured(
                await call(
                    a,
                    "mj_consult",
                    {
                        "idempotency_key": _key(),
                        "task_id": task["task"]["id"],
                        "profile": "security",
                        "question": "Safe?",
                    },
                )
            )["consultation"]
            return {"consultation_id": cons["id"], "expected_revision": 1, "inputs_digest": cons["inputsDigest"]}

        async def approve(args: dict[str, Any]) -> Any:
            return await call(h, "mj_consult_approve", {**args, "idempotency_key": _key()})

        first, second = await prepared(), await prepared()
        refused = envelope(await approve(first))
        assert refused["code"] == "FORBIDDEN" and "operator authority" in refused["message"]
        assert envelope(await call(h, "mj_inbox", {"operator_attention": True}))["code"] == "FORBIDDEN"

        operator.set_grant(ws, "ADMIN", actor_id=owner.user_id, human=True, source="cli")
        attention = structured(await call(h, "mj_inbox", {"operator_attention": True}))["attentionItems"]
        assert {x["subjectId"] for x in attention} >= {first["consultation_id"], second["consultation_id"]}
        approved = structured(await approve(first))["consultation"]
        assert approved["state"] == "APPROVED" and approved["approvedBy"] == admin.userId

        operator.set_grant(ws, None, actor_id=owner.user_id, human=True, source="cli")
        again = envelope(await approve(second))
        assert again["code"] == "FORBIDDEN" and "operator authority" in again["message"]
        assert envelope(await call(h, "mj_inbox", {"operator_attention": True}))["code"] == "FORBIDDEN"
        still = structured(await call(a, "mj_consult_detail", {"consultation_id": second["consultation_id"]}))
        assert still["consultation"]["state"] == "PREPARED"  # the refusal wrote nothing
    warm_store.MEMBERS.clear()
