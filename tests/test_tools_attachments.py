"""Task attachments: real HTTP grant -> PUT -> ``POST /api/tasks/{taskId}/attachments`` against the
local S3 (moto), read back with list_attachments through the official MCP SDK client and a real
GET of each download URL; refusals leave storage unchanged; a lost answer replays; a grant is
used once even under a race; the CLI runs the same flow in-process and over HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest

from domain import auth, objects
from domain.settings import settings
from tests.conftest import make_actor, mcp_client
from tests.tools_support import activity_rows, err, names_field, new_board, new_task, ok, stored_state

BODY = b"%PDF-1.4\n% a small file that stands in for a real PDF\n" + bytes(range(256)) * 4


def base(server_url: str) -> str:
    return server_url.removesuffix("/api/mcp")


def grant(server_url: str, token: str, ws: str, data: bytes = BODY, **over: Any) -> dict[str, Any]:
    body = {
        "workspaceId": ws,
        "fileName": "spec.pdf",
        "contentType": "application/pdf",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "purpose": "attachment",
        **over,
    }
    r = httpx2.post(
        f"{base(server_url)}/api/artifacts/upload-grant",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return r.json()


def put(g: dict[str, Any], data: bytes = BODY) -> None:
    r = httpx2.put(g["uploadUrl"], content=data, headers=g["headers"], timeout=30)
    assert r.status_code == 200, r.text


def attach(server_url: str, token: str | None, task_id: str, body: Any) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    kwargs: dict[str, Any] = {"json": body} if not isinstance(body, bytes) else {"content": body}
    return httpx2.post(f"{base(server_url)}/api/tasks/{task_id}/attachments", headers=headers, timeout=30, **kwargs)


def uploaded(server_url: str, token: str, ws: str, data: bytes = BODY, **over: Any) -> dict[str, Any]:
    g = grant(server_url, token, ws, data, **over)
    put(g, data)
    return g


def stored_objects(ws: str) -> list[str]:
    listing = objects.client().list_objects_v2(Bucket=settings.artifact_bucket, Prefix=f"objects/{ws}/attachment/")
    return sorted(o["Key"] for o in listing.get("Contents", []))


async def _task(c: Any, ws: str) -> dict[str, Any]:
    board = await new_board(c, ws, f"Files {uuid.uuid4().hex[:12]}")
    return await new_task(c, board["columns"][0]["id"], "Has files")


async def test_attach_then_list_with_working_download_urls(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        g = uploaded(server_url, owner.token, owner.workspace_id)
        r = attach(server_url, owner.token, task["id"], {"uploadGrantId": g["uploadGrantId"]})
        assert r.status_code == 200, r.text
        made = r.json()["attachment"]
        assert made["id"].startswith("at_") and made["taskId"] == task["id"]
        assert (made["fileName"], made["contentType"], made["size"], made["sha256"]) == (
            "spec.pdf",
            "application/pdf",
            len(BODY),
            hashlib.sha256(BODY).hexdigest(),
        )
        assert made["uploadedBy"] == owner.user_id and made["uploadedByName"] == "Ada"
        listed = await ok(c, "list_attachments", {"taskId": task["id"]})
        assert listed["totalCount"] == 1 and listed["nextCursor"] is None
        (item,) = listed["attachments"]
        assert {k: v for k, v in item.items() if not k.startswith("downloadUrl")} == {
            k: v for k, v in made.items() if not k.startswith("downloadUrl")
        }
        got = httpx2.get(item["downloadUrl"], timeout=30)
        assert got.status_code == 200 and got.content == BODY
        assert "X-Amz-Expires=300" in item["downloadUrl"] and item["downloadUrlExpiresAt"] > item["uploadedAt"]
        assert 'filename="spec.pdf"' in got.headers.get("content-disposition", "")
    # the object moved out of pending/ to its final key; one activity row names the file
    assert objects.head(g["objectKey"]) is None
    assert stored_objects(owner.workspace_id).count(f"objects/{owner.workspace_id}/attachment/{made['id']}") == 1
    rows = [r for r in activity_rows(task["boardId"]) if r["type"]["S"] == "attachment.added"]
    assert len(rows) == 1 and "spec.pdf" in rows[0]["summary"]["S"]


async def test_pages_oldest_first_with_totals_and_cursor_bound_to_the_task(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        made = []
        for i in range(3):
            data = BODY + bytes([i])
            g = uploaded(server_url, owner.token, owner.workspace_id, data, fileName=f"part-{i}.pdf")
            made.append(
                attach(server_url, owner.token, task["id"], {"uploadGrantId": g["uploadGrantId"]}).json()["attachment"][
                    "id"
                ]
            )
        first = await ok(c, "list_attachments", {"taskId": task["id"], "limit": 2})
        assert first["totalCount"] == 3 and [a["id"] for a in first["attachments"]] == made[:2] and first["notice"]
        rest = await ok(c, "list_attachments", {"taskId": task["id"], "limit": 2, "cursor": first["nextCursor"]})
        assert [a["id"] for a in rest["attachments"]] == made[2:] and rest["nextCursor"] is None
        other = await _task(c, owner.workspace_id)
        assert (await ok(c, "list_attachments", {"taskId": other["id"]}))["attachments"] == []
        assert names_field(
            await err(c, "list_attachments", {"taskId": other["id"], "cursor": first["nextCursor"]}), "cursor"
        )


async def test_refusals_store_nothing(server_url, owner, outsider):
    ws = owner.workspace_id
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, ws)
        archived = await _task(c, ws)
        await ok(c, "archive_task", {"taskId": archived["id"]})
        closed_board = await new_board(c, ws, f"Closed {uuid.uuid4().hex[:12]}")
        on_closed = await new_task(c, closed_board["columns"][0]["id"], "On a board to archive")
        await ok(
            c,
            "archive_board",
            {"boardId": closed_board["board"]["id"] if "board" in closed_board else closed_board["id"]},
        )
    never = grant(server_url, owner.token, ws)
    other_bytes = grant(server_url, owner.token, ws)
    put(other_bytes, BODY[::-1])
    for_artifacts = uploaded(server_url, owner.token, ws, purpose="artifact")
    good = uploaded(server_url, owner.token, ws)
    theirs = uploaded(server_url, outsider.token, outsider.workspace_id)
    reader = auth.mint_pat(owner.user_id, scopes=["read"])[0]
    gid = good["uploadGrantId"]
    cases: list[tuple[str | None, str, Any, int, str, str | None]] = [
        (
            owner.token,
            task["id"],
            {"uploadGrantId": never["uploadGrantId"]},
            400,
            "INVALID_INPUT",
            "nothing was uploaded",
        ),
        (owner.token, task["id"], {"uploadGrantId": other_bytes["uploadGrantId"]}, 400, "INVALID_INPUT", "SHA-256"),
        (
            owner.token,
            task["id"],
            {"uploadGrantId": for_artifacts["uploadGrantId"]},
            400,
            "INVALID_INPUT",
            "artifact uploads",
        ),
        (owner.token, task["id"], {"uploadGrantId": theirs["uploadGrantId"]}, 404, "NOT_FOUND", None),
        (owner.token, task["id"], {"uploadGrantId": "ug_nope"}, 404, "NOT_FOUND", None),
        (owner.token, archived["id"], {"uploadGrantId": gid}, 400, "INVALID_INPUT", "archived"),
        (owner.token, on_closed["id"], {"uploadGrantId": gid}, 400, "INVALID_INPUT", "archived"),
        (reader, task["id"], {"uploadGrantId": gid}, 403, "FORBIDDEN", None),
        (outsider.token, task["id"], {"uploadGrantId": gid}, 404, "NOT_FOUND", None),
        (owner.token, "tk_malformed", {"uploadGrantId": gid}, 404, "NOT_FOUND", None),
        (owner.token, task["id"], {"uploadGrantId": gid, "note": "x"}, 400, "INVALID_INPUT", "note"),
        (owner.token, task["id"], {}, 400, "INVALID_INPUT", "uploadGrantId"),
        (owner.token, task["id"], b"{not json", 400, "INVALID_INPUT", "body"),
    ]
    before, files = stored_state(), stored_objects(ws)
    for token, task_id, body, status, code, words in cases:
        r = attach(server_url, token, task_id, body)
        assert r.status_code == status, (task_id, body, r.text)
        error = r.json()["error"]
        assert error["code"] == code and set(error) >= {"code", "message", "hint"}, error
        if words:
            assert words in error["message"], error
    assert attach(server_url, None, task["id"], {"uploadGrantId": gid}).status_code == 401
    assert attach(server_url, "tm_" + "q" * 43, task["id"], {"uploadGrantId": gid}).status_code == 401
    assert stored_state() == before and stored_objects(ws) == files
    # and the good grant still works afterwards: none of the refusals consumed it
    assert attach(server_url, owner.token, task["id"], {"uploadGrantId": gid}).status_code == 200


async def test_lost_answer_replays_and_another_call_is_conflict(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        task = await _task(c, owner.workspace_id)
        other = await _task(c, owner.workspace_id)
        g = uploaded(server_url, owner.token, owner.workspace_id)
        first = attach(server_url, owner.token, task["id"], {"uploadGrantId": g["uploadGrantId"]}).json()["attachment"]
        before = stored_state()
        again = attach(server_url, owner.token, task["id"], {"uploadGrantId": g["uploadGrantId"]})
        assert again.status_code == 200 and again.json()["attachment"]["id"] == first["id"]
        assert stored_state() == before
        elsewhere = attach(server_url, owner.token, other["id"], {"uploadGrantId": g["uploadGrantId"]})
        assert elsewhere.status_code == 409 and elsewhere.json()["error"]["code"] == "CONFLICT"
        assert stored_state() == before
        assert (await ok(c, "list_attachments", {"taskId": task["id"]}))["totalCount"] == 1


async def test_racing_attaches_with_one_grant_store_one_attachment(server_url, owner):
    async with mcp_client(server_url, owner.token) as c:
        tasks = [await _task(c, owner.workspace_id) for _ in range(2)]
        same = uploaded(server_url, owner.token, owner.workspace_id)
        split = uploaded(server_url, owner.token, owner.workspace_id)

        def run(task_id: str, gid: str) -> httpx2.Response:
            return attach(server_url, owner.token, task_id, {"uploadGrantId": gid})

        # the same call twice at once: both answer the one attachment
        answers = await asyncio.gather(
            *(asyncio.to_thread(run, tasks[0]["id"], same["uploadGrantId"]) for _ in range(4))
        )
        assert {r.status_code for r in answers} == {200}
        assert len({r.json()["attachment"]["id"] for r in answers}) == 1
        # two different calls with one grant: exactly one wins, the other is CONFLICT
        barrier = threading.Barrier(2)

        def contend(task_id: str) -> httpx2.Response:
            barrier.wait()
            return run(task_id, split["uploadGrantId"])

        results = await asyncio.gather(*(asyncio.to_thread(contend, t["id"]) for t in tasks))
        assert sorted(r.status_code for r in results) == [200, 409], [r.text for r in results]
        counts = [(await ok(c, "list_attachments", {"taskId": t["id"]}))["totalCount"] for t in tasks]
        assert counts[0] + counts[1] == 2  # the first task's one from `same`, plus the single winner of `split`
    objects_now = stored_objects(owner.workspace_id)
    assert len(objects_now) == 2  # the losers' copies were deleted


# -- the CLI ---------------------------------------------------------------------------------------
@pytest.fixture
def cli_owner(stack: dict[str, str]):
    return make_actor("Cli", f"CLI Files {uuid.uuid4().hex[:8]}")


def _token_file(tmp_path: Path, token: str) -> str:
    p = tmp_path / "token"
    p.write_text(token)
    return str(p)


async def _cli_task(server_url: str, actor) -> dict[str, Any]:
    async with mcp_client(server_url, actor.token) as c:
        return await _task(c, actor.workspace_id)


async def test_cli_upload_in_process_and_over_http(server_url, dynamodb_endpoint, cli_owner, tmp_path, capsys):
    from functions import cli

    task = await _cli_task(server_url, cli_owner)
    f = tmp_path / "notes.md"
    f.write_bytes(b"# Notes\n\nSee the attached plan.\n")
    tf = _token_file(tmp_path, cli_owner.token)
    code = await asyncio.to_thread(
        cli.main,
        [
            "attachment",
            "upload",
            str(f),
            "--task",
            task["id"],
            "--token-file",
            tf,
            "--endpoint",
            dynamodb_endpoint,
            "--json",
        ],
    )
    out, errout = capsys.readouterr()
    assert code == 0, errout
    local = json.loads(out)
    assert (local["fileName"], local["contentType"], local["size"]) == ("notes.md", "text/markdown", f.stat().st_size)
    code = await asyncio.to_thread(
        cli.main, ["attachment", "upload", str(f), "--task", task["id"], "--token-file", tf, "--url", base(server_url)]
    )
    out, errout = capsys.readouterr()
    assert code == 0, errout
    assert out.startswith("Attached notes.md") and task["id"] in out
    async with mcp_client(server_url, cli_owner.token) as c:
        listed = await ok(c, "list_attachments", {"taskId": task["id"]})
    assert listed["totalCount"] == 2
    assert all(httpx2.get(a["downloadUrl"], timeout=30).content == f.read_bytes() for a in listed["attachments"])


async def test_cli_refusals_are_messages(server_url, dynamodb_endpoint, cli_owner, tmp_path, capsys):
    from functions import cli

    task = await _cli_task(server_url, cli_owner)
    exe = tmp_path / "tool.exe"
    exe.write_bytes(b"MZ")
    tf = _token_file(tmp_path, cli_owner.token)
    code = await asyncio.to_thread(
        cli.main,
        ["attachment", "upload", str(exe), "--task", task["id"], "--token-file", tf, "--url", base(server_url)],
    )
    _, errout = capsys.readouterr()
    assert code == 1 and "INVALID_INPUT" in errout and "contentType" in errout
    code = await asyncio.to_thread(cli.main, ["attachment", "upload", str(exe), "--task", "nope", "--token-file", tf])
    _, errout = capsys.readouterr()
    assert code == 2 and "not a task id" in errout


def test_put_retries_once_then_gives_up(tmp_path):
    from functions import cli_attachments
    from functions.cli import CliError

    f = tmp_path / "a.txt"
    f.write_bytes(b"x" * 1000)
    calls: list[int] = []

    class Answer:
        def __init__(self, status: int) -> None:
            self.status_code, self.text = status, "nope"

    def flaky(url, content, headers, timeout):
        calls.append(sum(len(c) for c in content))
        if len(calls) == 1:
            raise httpx2.ConnectError("connection reset")
        return Answer(200)

    cli_attachments.put_file("http://x", {}, f, send=flaky)
    assert calls == [1000, 1000]
    calls.clear()
    with pytest.raises(CliError, match="failed twice"):
        cli_attachments.put_file(
            "http://x", {}, f, send=lambda url, content, headers, timeout: (calls.append(1), Answer(503))[1]
        )
    assert calls == [1, 1]


def test_progress_bar_draws_on_a_terminal_only():
    from functions.cli_attachments import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    bar = Progress(4096, "uploading a.bin", tty, width=10)
    bar.advance(1024)
    bar.advance(3072)
    bar.finish()
    drawn = tty.getvalue()
    assert "\r" in drawn and " 25%" in drawn and "[##########] 100%" in drawn and drawn.endswith("\n")
    plain = io.StringIO()
    quiet = Progress(10, "x", plain)
    quiet.advance(10)
    quiet.finish()
    assert plain.getvalue() == ""
