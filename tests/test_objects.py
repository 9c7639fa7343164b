"""Unit tests of the presigned URLs: what moto never checks (signed headers, expiry, SigV4).

The local S3 accepts any signature, so the rules real S3 enforces are pinned here on the
presign output itself: a PUT signs Content-Length, Content-Type and the SHA-256 checksum and
lives at most 15 minutes; a GET lives about five minutes; every URL is SigV4.
"""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import parse_qs, urlsplit

import pytest

from domain import objects
from domain import settings as settings_module
from domain.settings import MAX_GRANT_SECONDS, settings


@pytest.fixture
def s3_client(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local-secret")
    monkeypatch.setenv("JENTRIX_S3_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("JENTRIX_ARTIFACT_BUCKET", "unit-bucket")
    settings_module.reload()
    objects.reset()
    yield objects.client()
    monkeypatch.undo()
    settings_module.reload()
    objects.reset()


def _query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def test_put_signs_length_type_and_checksum(s3_client):
    body = b"# findings\n"
    digest = hashlib.sha256(body).hexdigest()
    url, headers = objects.presign_put(
        "pending/ws_x/ug_y", content_type="text/markdown", size=len(body), sha256_hex=digest, expires_in=600
    )
    q = _query(url)
    assert q["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert q["X-Amz-SignedHeaders"] == "content-length;content-type;host;x-amz-checksum-sha256"
    assert q["X-Amz-Expires"] == "600"
    assert "/s3/aws4_request" in q["X-Amz-Credential"]
    assert urlsplit(url).path == "/unit-bucket/pending/ws_x/ug_y"
    assert headers == {
        "Content-Type": "text/markdown",
        "Content-Length": str(len(body)),
        "x-amz-checksum-sha256": base64.b64encode(hashlib.sha256(body).digest()).decode(),
    }
    # no SDK-added checksum parameters the client could not reproduce
    assert not any(k.lower().startswith("x-amz-sdk-checksum") or "crc" in k.lower() for k in q)


def test_get_url_lives_about_five_minutes_and_signs_only_host(s3_client):
    q = _query(objects.presign_get("objects/ws_x/artifact/ar_y", file_name='re"port.md'))
    assert q["X-Amz-Expires"] == str(settings.download_url_seconds) == "300"
    assert q["X-Amz-SignedHeaders"] == "host"
    assert q["response-content-disposition"] == 'attachment; filename="re_port.md"'


def test_grant_lifetime_is_capped_at_fifteen_minutes(monkeypatch):
    monkeypatch.setenv("JENTRIX_UPLOAD_GRANT_SECONDS", "86400")
    assert settings_module.Settings().upload_grant_seconds == MAX_GRANT_SECONDS == 900
    monkeypatch.setenv("JENTRIX_UPLOAD_GRANT_SECONDS", "120")
    assert settings_module.Settings().upload_grant_seconds == 120


def test_client_is_built_once(s3_client):
    assert objects.client() is s3_client
    assert s3_client.meta.config.signature_version == "s3v4"


def test_sha256_b64_is_the_base64_of_the_digest():
    digest = hashlib.sha256(b"x").hexdigest()
    assert objects.sha256_b64(digest) == base64.b64encode(hashlib.sha256(b"x").digest()).decode()
