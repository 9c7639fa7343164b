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
    return {
        "workspaceId": ws,
        "fileName": "findings.md",
        "contentType": "text/markdown",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        **over,
    }


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
    assert (checked.size, checked.content_type, checked.sha256) == (
        len(BODY),
        "text/markdown",
        hashlib.sha256(BODY).hexdigest(),
    )
    # a real HTTP GET of what was stored
    from domain import objects

    assert httpx2.get(objects.presign_get(grant["objectKey"]), timeout=30).content == BODY


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"contentType": "application/x-msdownload"}, "contentType"),
        ({"contentType": "text/plain; charset=utf-8"}, "contentType"),
        ({"size": 10**12}, "size"),
        ({"size": 0}, "size"),
        ({"sha256": "abc"}, "sha256"),
        ({"fileName": "../etc/passwd"}, "fileName"),
        ({"fileName": ""}, "fileName"),
        ({"purpose": "avatar"}, "purpose"),
        ({"surprise": 1}, "surprise"),
    ],
)
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
    r = httpx2.post(
        grant_url(server_url), content=b"{not json", headers={"Authorization": f"Bearer {owner.token}"}, timeout=30
    )
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
    assert (
        put(typed, **{"Content-Type": "text/plain"}).status_code == 200
    )  # moto ignores the signed type; S3 would refuse
    assert "type is text/plain" in _refusal(typed["uploadGrantId"], owner.user_id).message

    other = ask(server_url, owner.token, request_body(ws)).json()
    assert put(other, data=BODY.upper()).status_code == 200  # same length, other bytes
    assert "SHA-256" in _refusal(other["uploadGrantId"], owner.user_id).message

    expired = ask(server_url, owner.token, request_body(ws)).json()
    put(expired)
    from domain.store import keys
    from domain.store.models import UploadGrantRow

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


def test_finalize_after_a_racing_consumer_deleted_the_pending_object(server_url, owner):
    grant_json = ask(server_url, owner.token, request_body(owner.workspace_id)).json()
    put(grant_json)
    grant = uploads.check_upload(grant_json["uploadGrantId"], user_id=owner.user_id, purpose="artifact")
    # the winner: copies, commits its claim, deletes the pending object
    uploads.finalize(grant, f"objects/{owner.workspace_id}/artifact/winner")
    db.transact(lambda tx: uploads.claim(tx, grant, call_hash="winner", entity_id="ar_winner"))
    uploads.release_pending(grant)
    assert uploads.finalize(grant, f"objects/{owner.workspace_id}/artifact/same", call_hash="winner") == "ar_winner"
    with pytest.raises(ToolError) as info:
        uploads.finalize(grant, f"objects/{owner.workspace_id}/artifact/loser", call_hash="loser")
    assert info.value.code.value == "CONFLICT"
    # idempotent: the copy already in place is fine
    assert uploads.finalize(grant, f"objects/{owner.workspace_id}/artifact/winner") is None


# -- S3 as it answers a role: 403 instead of 404 for a missing key without s3:ListBucket ------------
class _S3AsForTheRole:
    """A stub in front of the local S3 answering as real S3 does for a role with ``statements``.

    moto answers 404 for every missing key whatever the caller may do, so it cannot show this.
    Real S3 answers a HeadObject (or GetObject) of a missing key with 404 only when the caller
    may list the bucket, and otherwise with 403, and refuses a ListObjectsV2 whose prefix the
    role's ``s3:ListBucket`` grant (and its ``s3:prefix`` condition) does not cover. For the
    implicit check of a missing key the stub counts only an unconditional grant: AWS does not
    document which prefix it would test a condition against, so the stub takes the strict
    reading. Present keys and permitted listings pass through to the local S3 unchanged.
    A faked fault (the rule is in front of real S3, not in its local stand-in), hence a stub."""

    def __init__(self, statements: list[dict[str, Any]]) -> None:
        import boto3
        from botocore.config import Config

        from domain.settings import settings

        grants = [
            s for s in statements if "s3:ListBucket" in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        ]
        self.unconditional = any("Condition" not in s for s in grants)
        self.prefixes = [
            p for s in grants for p in _list(s.get("Condition", {}).get("StringLike", {}).get("s3:prefix", []))
        ]
        self.bucket = settings.artifact_bucket
        self.raw = boto3.client(
            "s3",
            endpoint_url=settings.s3_endpoint,
            region_name=settings.region,
            config=Config(s3={"addressing_style": "path"}),
        )

    def may_list(self, prefix: str) -> bool:
        import fnmatch

        return self.unconditional or any(fnmatch.fnmatchcase(prefix, p) for p in self.prefixes)

    def before_send(self, request: Any, event_name: str = "", **_: Any) -> Any:
        from urllib.parse import parse_qs, unquote, urlsplit

        from botocore.awsrequest import AWSResponse
        from botocore.exceptions import ClientError

        operation = event_name.rsplit(".", 1)[-1]
        parts = urlsplit(request.url)
        denied = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>'
        if operation in ("HeadObject", "GetObject"):
            key = unquote(parts.path).split("/", 2)[2]
            try:
                self.raw.head_object(Bucket=self.bucket, Key=key)
                return None
            except ClientError:
                pass
            if self.unconditional:
                return None  # S3 may say 404
            body = b"" if operation == "HeadObject" else denied
            return AWSResponse(
                request.url, 403, {"Content-Type": "application/xml", "Content-Length": str(len(body))}, _Raw(body)
            )
        if operation == "ListObjectsV2":
            prefix = parse_qs(parts.query).get("prefix", [""])[0]
            if not self.may_list(prefix):
                return AWSResponse(
                    request.url,
                    403,
                    {"Content-Type": "application/xml", "Content-Length": str(len(denied))},
                    _Raw(denied),
                )
        return None


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _role_statements(without_list: bool) -> list[dict[str, Any]]:
    from cfnlint.decode import cfn_yaml

    from tests.gateway_support import ROOT

    role = cfn_yaml.load(str(ROOT / "template.yaml"))["Resources"]["McpFunctionRole"]["Properties"]
    statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
    return [s for s in statements if not (without_list and "s3:ListBucket" in _list(s["Action"]))]


@pytest.fixture
def s3_as_for_the_role(request, stack):
    from domain import objects

    stub = _S3AsForTheRole(_role_statements(without_list=request.param == "without-list"))
    events = objects.client().meta.events
    events.register("before-send.s3", stub.before_send)
    yield request.param
    events.unregister("before-send.s3", stub.before_send)


@pytest.mark.parametrize("s3_as_for_the_role", ["template-role", "without-list"], indirect=True)
def test_a_missing_upload_is_not_there_yet_and_a_refusal_is_no_absence(server_url, owner, s3_as_for_the_role):
    """Regression: with the role's real permissions S3 answers 403 for a key nobody uploaded yet,
    and the check answered INTERNAL. With the template's role it is "nothing was uploaded"
    (INVALID_INPUT); with no s3:ListBucket at all the refusal stays an error and is never read
    as "not uploaded"; an uploaded object is checked the same either way."""
    from domain import objects

    ws = owner.workspace_id
    never = ask(server_url, owner.token, request_body(ws)).json()
    if s3_as_for_the_role == "template-role":
        refusal = _refusal(never["uploadGrantId"], owner.user_id)
        assert refusal.code.value == "INVALID_INPUT" and "nothing was uploaded" in refusal.message
    else:
        with pytest.raises(objects.AccessDenied, match="s3:ListBucket"):
            uploads.check_upload(never["uploadGrantId"], user_id=owner.user_id, purpose="artifact")
    done = ask(server_url, owner.token, request_body(ws)).json()
    assert put(done).status_code == 200
    assert uploads.check_upload(done["uploadGrantId"], user_id=owner.user_id, purpose="artifact").size == len(BODY)
