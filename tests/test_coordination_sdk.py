"""Evidence for issue 29: two agents coordinate through the official MCP SDK client, each with its
own token and session, over HTTP (/api/mcp/x/coordination) and over stdio (two `jentrix mcp`
adapters, where the toolset is on by default).

The scenario so far (the parts built): A starts work on a new task, B's overlapping claim is
refused naming A, A finds B with mj_peers and asks; B's brief shows the question, B answers while
A is waiting in mj_wait_request, and the wait returns the answer; a second question is cancelled
and B's late reply stays attached without reopening it; A submits an artifact, B asks for
changes, A submits a new one and B accepts it; B's channel message is promoted by A to an unclaimed
task."""

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
