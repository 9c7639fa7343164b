"""Upload grants over HTTP (``POST /api/artifacts/upload-grant``) against the local S3:
validation, the real presigned PUT, and the object check every consuming call runs."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx2
import pytest

from domain import auth, uploads
from domain.errors import ToolError
from domain.store import db
from tests.conftest import make_actor
from tests.tools_support import stored_state

BODY = b"# Findings\n\nThe cache is cold on first call.\n"


def grant_url(server_url: str) -> str:
    return server_url.replace("/api/mcp", "/api/artifacts/upload-grant")


def ask(server_url: str, token: str | None, body: Any) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.post(grant_url(server_url), json=body, headers=headers, timeout=30)


def request_body(ws: str, data: bytes = BODY, **over: Any) -> dict[str, Any]:
    return {"workspaceId": ws, "fileName": "findings.md", "contentType": "text/markdown", "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), **over}


def put(grant: dict[str, Any], data: bytes = BODY, **headers: str) -> httpx2.Response:
    return httpx2.put(grant["uploadUrl"], content=data, headers={**grant["headers"], **headers}, timeout=30)


def test_grant_put_and_check(server_url, owner):
    r = ask(server_url, owner.token, request_body(owner.workspace_id))
    assert r.status_code == 200, r.text
    grant = r.json()
    assert set(grant) == {"uploadGrantId", "uploadUrl", "method", "headers", "expiresAt", "objectKey", "maxBytes"}
    assert grant["objectKey"] == f"pending/{owner.workspace_id}/{grant['uploadGrantId']}"
    assert "findings" not in grant["objectKey"]  # the server's key, never the client's name
    assert put(grant).status_code == 200
    checked = uploads.check_upload(grant["uploadGrantId"], user_id=owner.user_id, purpose="artifact")
    assert (checked.size, checked.content_type, checked.sha256) == (len(BODY), "text/markdown", hashlib.sha256(BODY).hexdigest())
    # a real HTTP GET of what was stored
    from domain import objects

    assert httpx2.get(objects.presign_get(grant["objectKey"]), timeout=30).content == BODY


@pytest.mark.parametrize(("over", "field"), [
    ({"contentType": "application/x-msdownload"}, "contentType"),
    ({"contentType": "text/plain; charset=utf-8"}, "contentType"),
    ({"size": 10**12}, "size"),
    ({"size": 0}, "size"),
    ({"sha256": "abc"}, "sha256"),
    ({"fileName": "../etc/passwd"}, "fileName"),
    ({"fileName": ""}, "fileName"),
    ({"purpose": "avatar"}, "purpose"),
    ({"surprise": 1}, "surprise"),
])
def test_refused_grants_store_nothing(server_url, owner, over, field):
    before = stored_state()
    r = ask(server_url, owner.token, request_body(owner.workspace_id, **over))
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "INVALID_INPUT" and error["message"].startswith(f"{field}:"), error
    assert stored_state() == before


def test_auth_and_tenancy(server_url, owner, outsider):
    assert ask(server_url, None, request_body(owner.workspace_id)).status_code == 401
    assert ask(server_url, "tm_nope", request_body(owner.workspace_id)).status_code == 401
    r = ask(server_url, outsider.token, request_body(owner.workspace_id))
    assert r.status_code == 404 and r.json()["error"]["code"] == "NOT_FOUND"
    reader = auth.mint_pat(owner.user_id, scopes=["read"])[0]
    r = ask(server_url, reader, request_body(owner.workspace_id))
    assert r.status_code == 403 and r.json()["error"]["code"] == "FORBIDDEN"
    r = httpx2.post(grant_url(server_url), content=b"{not json", headers={"Authorization": f"Bearer {owner.token}"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_INPUT"


def _refusal(grant_id: str, user_id: str, **kw: Any) -> ToolError:
    with pytest.raises(ToolError) as info:
        uploads.check_upload(grant_id, user_id=user_id, purpose="artifact", **kw)
    return info.value


def test_other_type_other_bytes_never_uploaded_expired(server_url, owner):
    ws = owner.workspace_id
    never = ask(server_url, owner.token, request_body(ws)).json()
    assert "nothing was uploaded" in _refusal(never["uploadGrantId"], owner.user_id).message

    typed = ask(server_url, owner.token, request_body(ws)).json()
    assert put(typed, **{"Content-Type": "text/plain"}).status_code == 200  # moto ignores the signed type; S3 would refuse
    assert "type is text/plain" in _refusal(typed["uploadGrantId"], owner.user_id).message

    other = ask(server_url, owner.token, request_body(ws)).json()
    assert put(other, data=BODY.upper()).status_code == 200  # same length, other bytes
    assert "SHA-256" in _refusal(other["uploadGrantId"], owner.user_id).message

    expired = ask(server_url, owner.token, request_body(ws)).json()
    put(expired)
    from domain.store.models import UploadGrantRow
    from domain.store import keys

    UploadGrantRow(*keys.upload_grant(expired["uploadGrantId"])).update(actions=[UploadGrantRow.expiresAtMs.set(1)])
    assert "expired" in _refusal(expired["uploadGrantId"], owner.user_id).message

    stranger = make_actor("Eve", "Eve Space")
    assert _refusal(never["uploadGrantId"], stranger.user_id).code.value == "NOT_FOUND"
    assert _refusal("ug_nope", owner.user_id).code.value == "NOT_FOUND"


def test_claim_is_single_use_and_same_call_replays(server_url, owner):
    grant_json = ask(server_url, owner.token, request_body(owner.workspace_id)).json()
    put(grant_json)
    gid = grant_json["uploadGrantId"]
    grant = uploads.check_upload(gid, user_id=owner.user_id, purpose="artifact")
    db.transact(lambda tx: uploads.claim(tx, grant, call_hash="first", entity_id="ar_made"))
    again = uploads.check_upload(gid, user_id=owner.user_id, purpose="artifact", call_hash="first")
    assert again.replay and again.entity_id == "ar_made"
    assert _refusal(gid, owner.user_id, call_hash="second").code.value == "CONFLICT"
    with pytest.raises(db.ConditionFailed) as failed:
        db.transact(lambda tx: uploads.claim(tx, grant, call_hash="second"))
    with pytest.raises(ToolError) as info:
        uploads.claim_failed(failed.value, grant, call_hash="second")
    assert info.value.code.value == "CONFLICT"
    assert uploads.claim_failed(failed.value, grant, call_hash="first") == "ar_made"
