"""Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a ``client_id``
that is an HTTPS URL names a JSON document describing the client, fetched by us.

The fetcher is hardened against server-side request forgery and slow hosts:

* ``https`` only, no userinfo, no fragment, a path other than ``/``; default port or an explicit one;
* every address the host resolves to must be globally routable (``ipaddress``'s ``is_global``,
  which also sees through IPv4-mapped IPv6); the connection goes to the checked address (no second
  resolution between check and connect), with the name kept for SNI and certificate checks;
* no redirects, :data:`TIMEOUT_SECONDS` per socket operation and for the whole read,
  :data:`MAX_BYTES` at most, a JSON content type;
* the document must name itself (``client_id`` equal to the URL), list ``redirect_uris``, and
  ask for no client secret (``token_endpoint_auth_method`` absent or ``none``).

Good copies are kept in the table (:func:`domain.oauth.keep_client_document`): used
while fresh (``Cache-Control: max-age`` clamped to [5 min, 24 h], 1 h without one), and for up
to :data:`STALE_SECONDS` when a refetch fails, so a client whose host is down keeps working.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import re
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from domain import clock

TIMEOUT_SECONDS = 5.0
MAX_BYTES = 5 * 1024
MIN_FRESH, DEFAULT_FRESH, MAX_FRESH = 300, 3600, 86400
STALE_SECONDS = 7 * 86400


class DocumentError(Exception):
    """The document could not be used; the message says why (shown on the error page)."""


@dataclass(frozen=True)
class ClientDocument:
    client_id: str
    client_name: str
    redirect_uris: tuple[str, ...]
    client_uri: str | None
    logo_uri: str | None


def is_url_client_id(client_id: str) -> bool:
    return client_id.startswith("https://")


def check_url(url: str) -> tuple[str, int, str]:
    """``(host, port, path?query)`` of an acceptable document URL.

    Raises:
        DocumentError: not https, userinfo, fragment, no path."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise DocumentError("the client_id URL must be https")
    if parts.username or parts.password or parts.fragment:
        raise DocumentError("the client_id URL may carry no userinfo and no fragment")
    if parts.path in ("", "/"):
        raise DocumentError("the client_id URL needs a path")
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 443, path


def public_address(host: str, port: int, allow: Callable[[ipaddress._BaseAddress], bool] | None = None) -> str:
    """The first address of ``host``, if every address it resolves to is globally routable.

    Raises:
        DocumentError: a private, loopback, link-local or otherwise non-global address."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise DocumentError(f"the client_id host {host!r} does not resolve") from exc
    addresses = []
    for info in infos:
        addr = ipaddress.ip_address(info[4][0].split("%")[0])
        mapped = getattr(addr, "ipv4_mapped", None)
        effective = mapped or addr
        if not (effective.is_global or (allow is not None and allow(effective))):
            raise DocumentError(f"the client_id host {host!r} resolves to a non-public address")
        addresses.append(str(addr))
    if not addresses:
        raise DocumentError(f"the client_id host {host!r} has no address")
    return addresses[0]


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to ``address`` while naming ``host`` (SNI, certificate, ``Host``)."""

    def __init__(self, host: str, port: int, address: str, context: ssl.SSLContext, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address
        self._ctx = context

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self.host)


def fetch(
    url: str, *, context: ssl.SSLContext | None = None, allow: Callable[[Any], bool] | None = None
) -> tuple[dict[str, Any], int]:
    """Fetch and parse one document: ``(json, fresh seconds)``.

    ``context`` and ``allow`` exist for tests (a local certificate authority, a loopback host);
    production passes neither.

    Raises:
        DocumentError: any refusal above (address, status, redirect, size, time, type, JSON)."""
    host, port, path = check_url(url)
    address = public_address(host, port, allow)
    conn = _PinnedHTTPS(host, port, address, context or ssl.create_default_context(), TIMEOUT_SECONDS)
    deadline = time.monotonic() + TIMEOUT_SECONDS
    try:
        conn.request("GET", path, headers={"Accept": "application/json", "User-Agent": "jentrix-oauth"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise DocumentError(f"the client_id URL answered HTTP {resp.status} (redirects are not followed)")
        ctype = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json" and not ctype.endswith("+json"):
            raise DocumentError("the client metadata document is not JSON (Content-Type)")
        body = b""
        while True:
            if time.monotonic() > deadline:
                raise DocumentError("the client metadata document took too long")
            chunk = resp.read(1024)
            if not chunk:
                break
            body += chunk
            if len(body) > MAX_BYTES:
                raise DocumentError(f"the client metadata document is larger than {MAX_BYTES} bytes")
        cache = resp.getheader("Cache-Control") or ""
    except (OSError, http.client.HTTPException) as exc:
        raise DocumentError(f"the client metadata document could not be fetched ({type(exc).__name__})") from exc
    finally:
        conn.close()
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise DocumentError("the client metadata document is not valid JSON") from exc
    match = re.search(r"max-age=(\d+)", cache)
    fresh = min(max(int(match.group(1)), MIN_FRESH), MAX_FRESH) if match else DEFAULT_FRESH
    if "no-store" in cache or "no-cache" in cache:
        fresh = MIN_FRESH
    return doc, fresh


def validate(url: str, doc: Any) -> ClientDocument:
    """Raises DocumentError unless ``doc`` is a usable public client's document for ``url``."""
    if not isinstance(doc, dict):
        raise DocumentError("the client metadata document is not a JSON object")
    if doc.get("client_id") != url:
        raise DocumentError("the document's client_id differs from its URL")
    method = doc.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise DocumentError(
            f"token_endpoint_auth_method {method!r} is not supported; this server has public clients only"
        )
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise DocumentError("the client metadata document lists no redirect_uris")
    name = doc.get("client_name") if isinstance(doc.get("client_name"), str) else urlsplit(url).hostname
    return ClientDocument(
        url,
        str(name)[:100],
        tuple(uris),
        doc.get("client_uri") if isinstance(doc.get("client_uri"), str) else None,
        doc.get("logo_uri") if isinstance(doc.get("logo_uri"), str) else None,
    )


def resolve(url: str, fetcher: Callable[[str], tuple[dict[str, Any], int]] = fetch) -> ClientDocument:
    """The client described at ``url``: the cached copy while fresh, else a fetch (stored on
    success), else a stale copy younger than :data:`STALE_SECONDS`.

    Raises:
        DocumentError: no usable document."""
    from domain import oauth

    now = clock.now_ms()
    cached = oauth.kept_client_document(url)
    if cached is not None and cached.fresh_until_ms > now:
        return validate(url, json.loads(cached.document))
    try:
        doc, fresh = fetcher(url)
        parsed = validate(url, doc)
    except DocumentError:
        if cached is not None and cached.stale_until_ms > now:
            return validate(url, json.loads(cached.document))
        raise
    oauth.keep_client_document(
        url,
        json.dumps(doc),
        fetched_ms=now,
        fresh_until_ms=now + fresh * 1000,
        stale_until_ms=now + STALE_SECONDS * 1000,
    )
    return parsed
