"""attach_artifact, get_artifact, list_artifacts through the official MCP SDK client, with real
HTTP PUT/GET against the local S3 (moto server) and DynamoDB Local."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import httpx2
import pytest

from tests.conftest import make_actor, mcp_client
from tests.test_uploads import ask, put, request_body
from tests.tools_support import err, new_board, new_task, ok, stored_state

pytestmark = pytest.mark.asyncio

DATA = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


async def _task(client: Any, ws: str) -> dict[str, Any]:
    board = await new_board(client, ws, "Artifacts")
    return await new_task(client, board["columns"][0]["id"], "Ship the thing")


def _upload(
    server_url: str, token: str, ws: str, data: bytes = DATA, content_type: str = "image/png", name: str = "shot.png"
) -> str:
    grant = ask(server_url, token, request_body(ws, data, contentType=content_type, fileName=name)).json()
    assert put(grant, data).status_code == 200
    return grant["uploadGrantId"]


async def test_external_url_round_trip(server_url, owner):
    async with mcp_client(server_url, owner.token) as client:
        task = await _task(client, owner.workspace_id)
        made = (
            await ok(
                client,
                "attach_artifact",
                {
                    "workspaceId": owner.workspace_id,
                    "type": "PR",
                    "title": "PR #12",
                    "url": "https://github.com/o/r/pull/12",
                    "taskId": task["id"],
                },
            )
        )["artifact"]
        assert (
            made["storage"] == "EXTERNAL_URL"
            and made["taskId"] == task["id"]
            and not made["hasObject"]
            and not made["withdrawn"]
        )
        got = await ok(client, "get_artifact", {"artifactId": made["id"]})
        assert got["downloadUrl"] == "https://github.com/o/r/pull/12" and got["body"] is None
        listed = await ok(client, "list_artifacts", {"workspaceId": owner.workspace_id, "taskId": task["id"]})
        assert [a["id"] for a in listed["artifacts"]] == [made["id"]] and listed["totalCount"] == 1
        activity = await ok(client, "list_activity", {"taskId": task["id"]})
        assert any(e["type"] == "artifact.attached" for e in activity["activity"])


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"type": "PR", "url": "javascript:alert(1)"}, "url"),
        ({"type": "PR", "url": "file:///etc/passwd"}, "url"),
        ({"type": "PR", "storage": "EXTERNAL_URL"}, "url"),
        ({"type": "PR"}, "body"),
        ({"type": "FINDINGS", "url": "https://example.com/x"}, "body"),
        ({"type": "LOG", "storage": "S3_OBJECT"}, "uploadGrantId"),
        ({"type": "LOG", "storage": "INLINE", "url": "https://example.com"}, "url"),
        ({"type": "PR", "url": "https://example.com", "tracePart": "p1"}, "tracePart"),
    ],
)
async def test_refused_attach_stores_nothing(server_url, owner, args, field):
    async with mcp_client(server_url, owner.token) as client:
        project = (await ok(client, "create_project", {"workspaceId": owner.workspace_id, "name": f"P {field}"}))[
            "project"
        ]
        before = stored_state()
        error = await err(
            client,
            "attach_artifact",
            {"workspaceId": owner.workspace_id, "title": "t", "projectId": project["id"], **args},
        )
        assert error["code"] == "INVALID_INPUT" and error["message"].startswith(f"{field}:"), error
        assert stored_state() == before


async def test_needs_a_link_and_real_targets(server_url, owner):
    async with mcp_client(server_url, owner.token) as client:
        base = {"workspaceId": owner.workspace_id, "type": "PR", "title": "t", "url": "https://example.com/pr"}
        assert (await err(client, "attach_artifact", base))["code"] == "INVALID_INPUT"
        board = await new_board(client, owner.workspace_id, "Gone")
        missing_task = board["board"]["id"].replace("bd_", "tk_") + "_999"
        assert (await err(client, "attach_artifact", {**base, "taskId": missing_task}))["code"] == "NOT_FOUND"
        assert (
            await err(client, "attach_artifact", {**base, "projectId": "pj_" + owner.workspace_id[3:] + "_aaaaaaaa"})
        )["code"] == "NOT_FOUND"
        run = (await ok(client, "attach_artifact", {**base, "runId": "run-42"}))["artifact"]
        assert run["runId"] == "run-42"


async def test_s3_object_round_trip_with_real_get(server_url, owner):
    async with mcp_client(server_url, owner.token) as client:
        task = await _task(client, owner.workspace_id)
        grant_id = _upload(server_url, owner.token, owner.workspace_id)
        made = (
            await ok(
                client,
                "attach_artifact",
                {
                    "workspaceId": owner.workspace_id,
                    "type": "SCREENSHOT",
                    "title": "After",
                    "storage": "R2_OBJECT",
                    "uploadGrantId": grant_id,
                    "taskId": task["id"],
                },
            )
        )["artifact"]
        assert (
            made["storage"] == "S3_OBJECT"
            and made["hasObject"]
            and made["size"] == len(DATA)
            and made["contentType"] == "image/png"
        )
        assert made["sha256"] == hashlib.sha256(DATA).hexdigest() and made["fileName"] == "shot.png"
        got = await ok(client, "get_artifact", {"artifactId": made["id"]})
        response = httpx2.get(got["downloadUrl"], timeout=30)
        assert response.status_code == 200 and response.content == DATA
        assert got["downloadUrlExpiresAt"] is not None
        from domain import objects

        assert objects.head(f"pending/{owner.workspace_id}/{grant_id}") is None  # moved out of pending/
        assert objects.head(f"objects/{owner.workspace_id}/artifact/{made['id']}") is not None


async def test_grant_refusals_store_nothing(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as client:
        project = (await ok(client, "create_project", {"workspaceId": ws, "name": "Refusals"}))["project"]
        base = {"workspaceId": ws, "type": "LOG", "title": "log", "storage": "S3_OBJECT", "projectId": project["id"]}

        never = ask(server_url, owner.token, request_body(ws, DATA, contentType="image/png")).json()["uploadGrantId"]
        typed = ask(server_url, owner.token, request_body(ws, DATA, contentType="image/png")).json()
        put(typed, DATA, **{"Content-Type": "image/gif"})
        other = ask(server_url, owner.token, request_body(ws, DATA, contentType="image/png")).json()
        put(other, bytes(reversed(DATA)))
        expired = _upload(server_url, owner.token, ws)
        from domain.store import keys
        from domain.store.models import UploadGrantRow

        UploadGrantRow(*keys.upload_grant(expired)).update(actions=[UploadGrantRow.expiresAtMs.set(1)])
        before = stored_state()
        for grant_id, words in (
            (never, "nothing was uploaded"),
            (typed["uploadGrantId"], "type is image/gif"),
            (other["uploadGrantId"], "SHA-256"),
            (expired, "expired"),
        ):
            error = await err(client, "attach_artifact", {**base, "uploadGrantId": grant_id})
            assert error["code"] == "INVALID_INPUT" and words in error["message"], error
        error = await err(client, "attach_artifact", {**base, "uploadGrantId": "ug_" + ws[3:] + "_" + "0" * 26})
        assert error["code"] == "NOT_FOUND"
        assert stored_state() == before


async def test_used_twice_and_lost_response_replay(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as client:
        project = (await ok(client, "create_project", {"workspaceId": ws, "name": "Replay"}))["project"]
        grant_id = _upload(server_url, owner.token, ws)
        args = {
            "workspaceId": ws,
            "type": "LOG",
            "title": "build log",
            "uploadGrantId": grant_id,
            "projectId": project["id"],
        }
        first = (await ok(client, "attach_artifact", args))["artifact"]
        before = stored_state()
        again = (await ok(client, "attach_artifact", args))[
            "artifact"
        ]  # the same call retried: the stored artifact back
        assert again == first
        assert stored_state() == before
        error = await err(client, "attach_artifact", {**args, "title": "another use"})
        assert error["code"] == "CONFLICT" and "already used" in error["message"]
        assert stored_state() == before
        stranger = make_actor("Trudy", None)
        from domain.store import keys, members
        from domain.store.models import UserRow

        members.add(ws, UserRow.get(*keys.user_profile(stranger.user_id)), "MEMBER")
        async with mcp_client(server_url, stranger.token) as theirs:
            assert (await err(theirs, "attach_artifact", args))["code"] == "NOT_FOUND"  # another user's grant


async def test_two_racing_attaches_of_one_grant_store_one(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as a, mcp_client(server_url, owner.token) as b:
        project = (await ok(a, "create_project", {"workspaceId": ws, "name": "Race"}))["project"]
        grant_id = _upload(server_url, owner.token, ws)
        base = {"workspaceId": ws, "type": "LOG", "uploadGrantId": grant_id, "projectId": project["id"]}
        results = await asyncio.gather(
            a.call_tool("attach_artifact", {**base, "title": "one"}),
            b.call_tool("attach_artifact", {**base, "title": "two"}),
        )
        assert sorted(r.is_error for r in results) == [False, True]
        listed = await ok(a, "list_artifacts", {"workspaceId": ws, "projectId": project["id"]})
        assert listed["totalCount"] == 1
        from domain import objects

        stored = objects.client().list_objects_v2(
            Bucket=__import__("domain.settings", fromlist=["settings"]).settings.artifact_bucket,
            Prefix=f"objects/{ws}/artifact/",
        )
        kept = {o["Key"].rsplit("/", 1)[1] for o in stored.get("Contents", [])}
        assert listed["artifacts"][0]["id"] in kept and len(kept & {listed["artifacts"][0]["id"]}) == 1


async def test_list_filters_pagination_and_isolation(server_url, owner, outsider):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as client:
        project = (await ok(client, "create_project", {"workspaceId": ws, "name": "Paged"}))["project"]
        made = []
        for i in range(5):
            kind = "PR" if i % 2 else "LOG"
            made.append(
                (
                    await ok(
                        client,
                        "attach_artifact",
                        {
                            "workspaceId": ws,
                            "type": kind,
                            "title": f"a{i}",
                            "url": f"https://example.com/{i}",
                            "projectId": project["id"],
                            "runId": "run-7" if i < 2 else None,
                        },
                    )
                )["artifact"]
            )
        page = await ok(client, "list_artifacts", {"workspaceId": ws, "projectId": project["id"], "limit": 2})
        assert page["totalCount"] == 5 and len(page["artifacts"]) == 2 and page["nextCursor"]
        seen = [a["id"] for a in page["artifacts"]]
        while page["nextCursor"]:
            page = await ok(
                client,
                "list_artifacts",
                {"workspaceId": ws, "projectId": project["id"], "limit": 2, "cursor": page["nextCursor"]},
            )
            seen += [a["id"] for a in page["artifacts"]]
        assert seen == [a["id"] for a in reversed(made)]  # newest first
        prs = await ok(client, "list_artifacts", {"workspaceId": ws, "projectId": project["id"], "type": "PR"})
        assert prs["totalCount"] == 2
        runs = await ok(client, "list_artifacts", {"workspaceId": ws, "runId": "run-7"})
        assert {a["id"] for a in runs["artifacts"]} == {made[0]["id"], made[1]["id"]}
        mine = await ok(
            client, "list_artifacts", {"workspaceId": ws, "createdBy": owner.user_id, "projectId": project["id"]}
        )
        assert mine["totalCount"] == 5
        bad = await err(
            client,
            "list_artifacts",
            {
                "workspaceId": ws,
                "type": "PR",
                "projectId": project["id"],
                "cursor": page["nextCursor"] or "eyJrIjoieCJ9",
            },
        )
        assert bad["code"] == "INVALID_INPUT"
    async with mcp_client(server_url, outsider.token) as theirs:
        assert (await err(theirs, "get_artifact", {"artifactId": made[0]["id"]}))["code"] == "NOT_FOUND"
        assert (await err(theirs, "list_artifacts", {"workspaceId": ws}))["code"] == "NOT_FOUND"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_resource_template_and_read_in_both_eras(server_url, owner, outsider, mode):
    import json

    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token, mode=mode) as client:
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["stacks://artifact/{id}"]
        project = (await ok(client, "create_project", {"workspaceId": ws, "name": f"Res {mode}"}))["project"]
        made = (
            await ok(
                client,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "PR",
                    "title": "PR",
                    "url": "https://example.com/pr/9",
                    "projectId": project["id"],
                },
            )
        )["artifact"]
        uri = f"stacks://artifact/{made['id']}"
        read = await client.read_resource(uri, cache_mode="bypass")
        content = read.contents[0]
        assert content.uri == uri and content.mime_type == "application/json"
        data = json.loads(content.text)
        assert data == await ok(client, "get_artifact", {"artifactId": made["id"]})
        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError) as missing:
            await client.read_resource("stacks://artifact/ar_" + ws[3:] + "_" + "0" * 26, cache_mode="bypass")
        assert missing.value.code == -32602
    async with mcp_client(server_url, outsider.token, mode=mode) as theirs:
        with pytest.raises(MCPError) as foreign:
            await theirs.read_resource(uri, cache_mode="bypass")
        assert foreign.value.code == -32602 and "artifact" in str(foreign.value)


async def test_secret_in_a_findings_body_never_reaches_storage_or_logs(server_url, owner, caplog, capfd):
    import logging
    import secrets
    import string

    ws = owner.workspace_id
    token = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))
    body = f"Findings: the deploy job leaked a token.\n\nexport GITHUB_TOKEN={token}\n\nRotate it today."
    caplog.set_level(logging.DEBUG)
    async with mcp_client(server_url, owner.token) as client:
        project = (await ok(client, "create_project", {"workspaceId": ws, "name": "Leaky"}))["project"]
        made = (
            await ok(
                client,
                "attach_artifact",
                {"workspaceId": ws, "type": "FINDINGS", "title": "Leak", "body": body, "projectId": project["id"]},
            )
        )["artifact"]
        assert made["redactions"] and made["searchable"] and made["bodyChars"] < len(body) + 40
        got = await ok(client, "get_artifact", {"artifactId": made["id"]})
        assert token not in got["body"] and "[REDACTED:" in got["body"] and "Rotate it today." in got["body"]
        listed = await ok(client, "list_artifacts", {"workspaceId": ws, "projectId": project["id"]})
        assert token not in str(listed)
        # a refused call carrying the secret logs nothing of it either
        await err(
            client,
            "attach_artifact",
            {"workspaceId": ws, "type": "FINDINGS", "title": "x", "body": body, "url": "ftp://nope"},
        )
    assert token not in str(stored_state())
    from domain.store import artifacts as artifact_store

    assert token not in (artifact_store.body(ws, made["id"]) or "")
    out, errout = capfd.readouterr()
    assert token not in out + errout
    # every server-side record (ours, botocore's DynamoDB/S3 request dumps at DEBUG, uvicorn); the
    # test's own MCP client logs the request it sends, which is the caller's copy, not the server's
    client_side = ("mcp", "httpcore2", "httpx2", "anyio")
    server_lines = [r.getMessage() for r in caplog.records if r.name.split(".")[0] not in client_side]
    assert server_lines and not any(token in line for line in server_lines)


async def _agent_session(client: Any, ws: str, name: str) -> tuple[dict[str, Any], str]:
    """A project linked to a repo, and a real agent session of it: (project, session id)."""
    project = (await ok(client, "create_project", {"workspaceId": ws, "name": name}))["project"]
    await ok(client, "add_project_link", {"projectId": project["id"], "targetType": "REPO", "targetId": "acme/widgets"})
    made = await ok(
        client,
        "create_agent_session",
        {"projectId": project["id"], "repo": "acme/widgets", "idempotencyKey": f"k-{name}-{ws}"},
    )
    return project, made["session"]["id"]


async def test_a_session_that_does_not_exist_is_not_found_and_nothing_is_written(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as client:
        project, real = await _agent_session(client, ws, "Ghost sessions")
        ghost = f"ses_{ws[3:]}_{'0' * 25}1"  # well formed, of this workspace, never created
        before = stored_state()
        for extra in ({}, {"projectId": project["id"]}):
            error = await err(
                client,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "PR",
                    "title": "t",
                    "url": "https://example.com/pr",
                    "sessionId": ghost,
                    **extra,
                },
            )
            assert error["code"] == "NOT_FOUND" and ghost in error["message"], error
        assert stored_state() == before
        made = (
            await ok(
                client,
                "attach_artifact",
                {"workspaceId": ws, "type": "PR", "title": "t", "url": "https://example.com/pr", "sessionId": real},
            )
        )["artifact"]
        assert made["sessionId"] == real


async def test_text_kinds_and_trace_parts(server_url, owner):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as client:
        project, session = await _agent_session(client, ws, "Kinds")
        plan = (
            await ok(
                client,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "PLAN",
                    "title": "Plan",
                    "body": "1. do it",
                    "projectId": project["id"],
                    "sessionId": session,
                },
            )
        )["artifact"]
        assert plan["storage"] == "INLINE" and plan["searchable"] and plan["hasBody"] and not plan["redactions"]
        trace = (
            await ok(
                client,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "TRACE",
                    "title": "part 1",
                    "body": "turn 1",
                    "tracePart": "part-0001",
                    "sessionId": session,
                },
            )
        )["artifact"]
        assert not trace["searchable"] and trace["tracePart"] == "part-0001"
        from domain.store import artifacts as artifact_store

        assert [r.artifactId for r in artifact_store.for_session(ws, session)] == [plan["id"], trace["id"]]
        by_session = await ok(client, "list_artifacts", {"workspaceId": ws, "sessionId": session, "type": "TRACE"})
        assert [a["id"] for a in by_session["artifacts"]] == [trace["id"]]


async def test_an_external_url_loses_its_userinfo_password(server_url, owner):
    """Issue 24 item 8: an EXTERNAL_URL artifact is stored without the ``user:password@`` it was
    given (a password holding '@' or '/' included); the link keeps its host, path and query."""
    ws = owner.workspace_id
    password = "p@ss/w0rd-" + "Zq7Lx"
    async with mcp_client(server_url, owner.token) as client:
        project = (await ok(client, "create_project", {"workspaceId": ws, "name": "Links"}))["project"]
        made = (
            await ok(
                client,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "PR",
                    "projectId": project["id"],
                    "title": "CI log",
                    "url": f"https://deploy:{password}@ci.example.com/job/42?view=full",
                },
            )
        )["artifact"]
        assert made["url"] == "https://ci.example.com/job/42?view=full" and made["redactions"] == ["url-password"]
        got = await ok(client, "get_artifact", {"artifactId": made["id"]})
        assert got["downloadUrl"] == "https://ci.example.com/job/42?view=full"
        plain = (
            await ok(
                client,
                "attach_artifact",
                {
                    "workspaceId": ws,
                    "type": "PR",
                    "projectId": project["id"],
                    "title": "PR",
                    "url": "https://github.com/o/r/pull/7",
                },
            )
        )["artifact"]
        assert plain["url"] == "https://github.com/o/r/pull/7" and plain["redactions"] == []
    assert password not in str(stored_state()) and "deploy:" not in str(stored_state())
