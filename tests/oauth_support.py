"""Shared parts of the OAuth tests: the local server with the web app mounted (as `jentrix dev`
serves it), a "browser" that signs in with a one-time link and answers the consent page over real
HTTP, and a local HTTPS host for client ID metadata documents (its own certificate authority)."""

from __future__ import annotations

import datetime
import html
import ipaddress
import json
import re
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2


def start_server(app: Any) -> tuple[str, Any, threading.Thread]:
    import uvicorn

    from tests.conftest import _free_port

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server, thread


def form_fields(page: str) -> dict[str, str]:
    """The hidden inputs of the consent form."""
    return {
        html.unescape(m.group(1)): html.unescape(m.group(2))
        for m in re.finditer(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    }


@dataclass
class Browser:
    """A cookie-keeping HTTP client standing in for the user's browser (the Playwright tests use Chromium)."""

    base: str
    user_id: str
    decision: str = "allow"
    workspace: str = ""
    consent_pages: list[str] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.http = httpx2.AsyncClient(follow_redirects=False, timeout=30)

    async def sign_in(self) -> None:
        from functions.cli import signin_url

        r = await self.http.get(signin_url(self.base, self.user_id))
        assert r.status_code == 303, r.text
        assert "jentrix_session" in r.cookies or self.http.cookies.get("jentrix_session")

    async def authorize(self, url: str) -> str:
        """Open the authorization URL, answer the consent page; return the redirect to the client."""
        r = await self.http.get(url)
        if r.status_code == 303 and "/console/signin" in r.headers["location"]:
            await self.sign_in()
            r = await self.http.get(url)
        assert r.status_code == 200, (r.status_code, r.text[:500])
        self.consent_pages.append(r.text)
        fields = form_fields(r.text)
        fields.update(decision=self.decision, workspace=self.workspace)
        answer = await self.http.post(self.base + "/oauth/authorize", data=fields)
        assert answer.status_code == 303, (answer.status_code, answer.text[:500])
        self.redirects.append(answer.headers["location"])
        return answer.headers["location"]


def callback_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


# -- a local HTTPS host for metadata documents ------------------------------------------------
def make_tls() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """``(server context, client context trusting it)`` for ``localhost`` (a fresh self-signed certificate)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    folder = Path(tempfile.mkdtemp(prefix="jentrix-cimd-"))
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    client = ssl.create_default_context(cafile=str(folder / "cert.pem"))
    return server, client


class DocumentHost:
    """Serves ``routes[path] = (status, headers, body, delay seconds)`` over HTTPS on localhost."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, dict[str, str], bytes, float]] = {}
        self.hits: list[str] = []
        server_ctx, self.client_context = make_tls()
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.hits.append(self.path)
                status, headers, body, delay = host.routes.get(self.path, (404, {}, b"", 0.0))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if delay:
                    self.wfile.write(body[:10])
                    self.wfile.flush()
                    time.sleep(delay)
                    body = body[10:]
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = server_ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"https://localhost:{self.port}{path}"

    def document(
        self,
        path: str,
        doc: dict[str, Any] | None = None,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        delay: float = 0.0,
    ) -> str:
        payload = body if body is not None else json.dumps(doc).encode()
        self.routes[path] = (status, {"Content-Type": "application/json", **(headers or {})}, payload, delay)
        return self.url(path)

    def stop(self) -> None:
        self.server.shutdown()
