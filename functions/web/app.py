"""The web function: OAuth 2.1 authorization server endpoints and the console pages (docs/oauth.md,
docs/console.md).

A FastAPI app of its own, deployed as its own Lambda function behind the same API as the MCP
function (template.yaml), so the MCP function never imports Jinja2, Authlib or this module.
Locally ``jentrix dev`` serves both apps from one server (:func:`functions.web.dev.combined_app`).

Endpoints (paths relative to the issuer, :func:`functions.public_url.issuer`):

* ``GET /.well-known/oauth-protected-resource[/api/mcp]``: RFC 9728 metadata of the MCP resource;
* ``GET /.well-known/oauth-authorization-server[/…]`` and ``/.well-known/openid-configuration``:
  RFC 8414 metadata (``issuer`` equal to the URL prefix it was fetched under);
* ``GET|POST /oauth/authorize``: authorization code + PKCE S256; a consent page; the redirect
  carries ``code``, ``state`` and ``iss`` (RFC 9207);
* ``POST /oauth/token``: ``authorization_code`` and ``refresh_token`` (rotated);
* ``POST /oauth/register``: RFC 7591, public clients only;
* ``POST /oauth/revoke``: RFC 7009;
* ``/console/…``: sign-in (link or OpenID Connect), connected apps, sign-out.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from domain import auth, console, console_actions, ids, oauth
from domain.store import db
from functions import public_url
from functions.web import cimd

log = logging.getLogger("jentrix.web")
HERE = Path(__file__).parent
TEMPLATES = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
COOKIE = "jentrix_session"
SCOPE_TEXT = {
    "read": "Read boards, tasks, comments and activity",
    "write": "Create and change boards, tasks and comments",
    "admin": "Manage workspaces and members",
}
CSS = (HERE / "static" / "console.css").read_text()
BOARD_PAGE = 50  # tasks per page of the board view


# -- helpers ---------------------------------------------------------------------------------
def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address((host or "").strip("[]")).is_loopback
    except ValueError:
        return False


def csp(form_action: str = "'self'") -> str:
    return (
        "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'; "
        f"form-action {form_action}"
    )


def page(name: str, status: int = 200, form_action: str = "'self'", **ctx: Any) -> HTMLResponse:
    html = TEMPLATES.get_template(name).render(**ctx)
    return HTMLResponse(
        html,
        status_code=status,
        headers={
            "Content-Security-Policy": csp(form_action),
            "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )


def error_page(message: str, status: int = 400) -> HTMLResponse:
    return page("error.html", status=status, message=message)


def redirect_matches(registered: list[str] | tuple[str, ...], asked: str) -> bool:
    """Exact match, except that a loopback ``http`` redirect may use any port (RFC 8252 §7.3)."""
    if asked in registered:
        return True
    a = urlsplit(asked)
    if a.scheme != "http" or not _loopback(a.hostname):
        return False
    for uri in registered:
        r = urlsplit(uri)
        if r.scheme == "http" and r.hostname == a.hostname and r.path == a.path and r.query == a.query:
            return True
    return False


def session_of(request: Request) -> Any:
    return console.load_session(request.cookies.get(COOKIE))


def set_session_cookie(response: Response, request: Request, secret: str) -> None:
    secure = not _loopback(request.url.hostname)
    response.set_cookie(
        COOKIE, secret, max_age=console.SESSION_SECONDS, httponly=True, secure=secure, samesite="lax", path="/"
    )


def csrf_ok(session: Any, form: Any) -> bool:
    sent = form.get("csrf")
    return bool(session and isinstance(sent, str) and secrets.compare_digest(sent, session.csrf))


class Client:
    """The client an authorization request names: from its metadata document or its registration."""

    def __init__(
        self, client_id: str, name: str, redirect_uris: tuple[str, ...] | list[str], metadata_document: bool
    ) -> None:
        self.client_id, self.name, self.redirect_uris, self.metadata_document = (
            client_id,
            name,
            list(redirect_uris),
            metadata_document,
        )

    @property
    def domain(self) -> str:
        return (
            urlsplit(self.client_id).hostname or ""
            if self.metadata_document
            else "registered by the client itself (unverified)"
        )


def find_client(client_id: str) -> Client:
    """Raises cimd.DocumentError when the client is unknown or its document unusable."""
    if cimd.is_url_client_id(client_id):
        doc = cimd.resolve(client_id, FETCHER[0])
        return Client(doc.client_id, doc.client_name, doc.redirect_uris, True)
    row = oauth.registered_client(client_id)
    if row is None:
        raise cimd.DocumentError("unknown client_id (registrations expire after 30 days unused); register again")
    return Client(row.clientId, row.clientName, row.redirectUris, False)


FETCHER: list[Any] = [cimd.fetch]  # tests swap in a fetcher that trusts their local certificate


def metadata(request: Request) -> dict[str, Any]:
    issuer = public_url.issuer(request.scope)
    return {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/oauth/authorize",
        "token_endpoint": issuer + "/oauth/token",
        "registration_endpoint": issuer + "/oauth/register",
        "revocation_endpoint": issuer + "/oauth/revoke",
        "scopes_supported": list(oauth.SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
    }


# -- the app -----------------------------------------------------------------------------------
def create_web_app() -> FastAPI:
    app = FastAPI(title="jentrix-web", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/.well-known/oauth-protected-resource")
    @app.get("/.well-known/oauth-protected-resource/{rest:path}")
    async def protected_resource(request: Request) -> Response:
        return JSONResponse(
            {
                "resource": public_url.resource(request.scope),
                "authorization_servers": [public_url.issuer(request.scope)],
                "scopes_supported": list(oauth.SCOPES),
                "bearer_methods_supported": ["header"],
                "resource_name": "Jentrix",
            },
            headers={"Cache-Control": "max-age=3600"},
        )

    @app.get("/.well-known/oauth-authorization-server")
    @app.get("/.well-known/oauth-authorization-server/{rest:path}")
    @app.get("/.well-known/openid-configuration")
    async def server_metadata(request: Request) -> Response:
        return JSONResponse(metadata(request), headers={"Cache-Control": "max-age=3600"})

    @app.get("/console/static/console.css")
    async def stylesheet() -> Response:
        return Response(CSS, media_type="text/css", headers={"Cache-Control": "max-age=3600"})

    # -- authorization ---------------------------------------------------------------------
    def check_request(params: Any, request: Request) -> tuple[Client, dict[str, str]] | Response:
        """The validated authorization request, or the response refusing it (RFC 6749 §4.1.2.1:
        no redirect when the client or its redirect URI cannot be trusted)."""
        client_id, redirect_uri = params.get("client_id") or "", params.get("redirect_uri") or ""
        try:
            client = find_client(client_id)
        except cimd.DocumentError as exc:
            return error_page(f"This application cannot sign in: {exc}.")
        if not redirect_uri or not redirect_matches(client.redirect_uris, redirect_uri):
            return error_page("The redirect_uri is not one this application registered; nothing was sent to it.")
        issuer = public_url.issuer(request.scope)
        state = params.get("state")

        def refuse(error: str, description: str) -> Response:
            q = {"error": error, "error_description": description, "iss": issuer, **({"state": state} if state else {})}
            return RedirectResponse(
                redirect_uri + ("&" if "?" in redirect_uri else "?") + urlencode(q), status_code=303
            )

        if params.get("response_type") != "code":
            return refuse("unsupported_response_type", "only response_type=code is supported")
        if params.get("code_challenge_method") != "S256" or not params.get("code_challenge"):
            return refuse("invalid_request", "PKCE with code_challenge_method=S256 is required")
        resource = params.get("resource") or public_url.resource(request.scope)
        if resource != public_url.resource(request.scope):
            return refuse("invalid_target", f"this server issues tokens for {public_url.resource(request.scope)} only")
        try:
            scopes = oauth.parse_scopes(params.get("scope"))
        except oauth.OAuthError as exc:
            return refuse(exc.error, exc.description)
        fields = {
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": state or "",
            "code_challenge": params["code_challenge"],
            "scope": " ".join(scopes),
            "resource": resource,
        }
        return client, fields

    @app.get("/oauth/authorize")
    async def authorize(request: Request) -> Response:
        checked = check_request(request.query_params, request)
        if isinstance(checked, Response):
            return checked
        client, fields = checked
        session = session_of(request)
        if session is None:
            return RedirectResponse(
                "/console/signin?" + urlencode({"next": str(request.url.path) + "?" + request.url.query}),
                status_code=303,
            )
        from domain.store.members import memberships
        from domain.store.workspaces import get_many

        mirrors = memberships(session.userId)
        workspaces = get_many([m.workspaceId for m in mirrors]) if mirrors else []
        origin = urlsplit(fields["redirect_uri"])
        return page(
            "consent.html",
            form_action=f"'self' {origin.scheme}://{origin.netloc}",
            client=client,
            fields=fields,
            scopes=[(s, SCOPE_TEXT[s]) for s in fields["scope"].split()],
            workspaces=workspaces,
            csrf=session.csrf,
            redirect_host=origin.hostname,
        )

    @app.post("/oauth/authorize")
    async def decide(request: Request) -> Response:
        checked = await posted(
            request, unchanged="nothing was granted", expired="start the connection again from your application"
        )
        if isinstance(checked, Response):
            return checked
        session, form = checked
        checked = check_request(form, request)
        if isinstance(checked, Response):
            return checked
        client, fields = checked
        issuer = public_url.issuer(request.scope)
        sep = "&" if "?" in fields["redirect_uri"] else "?"
        state = {"state": fields["state"]} if fields["state"] else {}
        if form.get("decision") != "allow":
            q = {"error": "access_denied", "error_description": "the user declined", "iss": issuer, **state}
            return RedirectResponse(fields["redirect_uri"] + sep + urlencode(q), status_code=303)
        workspace = str(form.get("workspace") or "") or None
        if workspace and not auth_member(session.userId, workspace):
            return error_page("You are not a member of that workspace.", 403)
        code = oauth.issue_code(
            oauth.Consent(
                session.userId,
                client.client_id,
                client.name,
                fields["redirect_uri"],
                fields["code_challenge"],
                fields["scope"].split(),
                workspace,
                fields["resource"],
            )
        )
        q = {"code": code, "iss": issuer, **state}
        return RedirectResponse(fields["redirect_uri"] + sep + urlencode(q), status_code=303)

    def auth_member(user_id: str, workspace_id: str) -> bool:
        from domain.store import members

        return members.get(workspace_id, user_id) is not None

    # -- token, registration, revocation ---------------------------------------------------
    def oauth_json(body: dict[str, Any], status: int = 200) -> JSONResponse:
        return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    @app.post("/oauth/token")
    async def token(request: Request) -> Response:
        form = await request.form()
        if form.get("client_secret") or request.headers.get("authorization"):
            return oauth_json(
                {"error": "invalid_client", "error_description": "clients here are public: send client_id only"}, 401
            )
        client_id = str(form.get("client_id") or "")
        resource = str(form["resource"]) if form.get("resource") else None
        expected = public_url.resource(request.scope)
        try:
            if not cimd.is_url_client_id(client_id) and oauth.registered_client(client_id) is None:
                return oauth_json(
                    {"error": "invalid_client", "error_description": "unknown or expired client_id; register again"},
                    401,
                )
            grant_type = form.get("grant_type")
            if grant_type == "authorization_code":
                tokens = oauth.exchange_code(
                    code=str(form.get("code") or ""),
                    client_id=client_id,
                    redirect_uri=str(form.get("redirect_uri") or ""),
                    code_verifier=str(form.get("code_verifier") or ""),
                    resource=resource,
                    expected_resource=expected,
                )
            elif grant_type == "refresh_token":
                tokens = oauth.refresh(
                    refresh_token=str(form.get("refresh_token") or ""),
                    client_id=client_id,
                    resource=resource,
                    expected_resource=expected,
                )
            else:
                return oauth_json(
                    {"error": "unsupported_grant_type", "error_description": "use authorization_code or refresh_token"},
                    400,
                )
        except oauth.OAuthError as exc:
            return oauth_json(exc.body(), exc.status)
        return oauth_json(tokens.body())

    @app.post("/oauth/register")
    async def register(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return oauth_json({"error": "invalid_client_metadata", "error_description": "send a JSON object"}, 400)
        uris = body.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            return oauth_json(
                {"error": "invalid_redirect_uri", "error_description": "redirect_uris must list at least one URI"}, 400
            )
        for uri in uris:
            parts = urlsplit(uri)
            if parts.fragment or not (
                parts.scheme == "https"
                or (parts.scheme == "http" and _loopback(parts.hostname))
                or (parts.scheme not in ("http", "https", "") and "." in parts.scheme)
            ):
                return oauth_json(
                    {
                        "error": "invalid_redirect_uri",
                        "error_description": f"{uri!r}: use https, a loopback http URI or a private-use scheme",
                    },
                    400,
                )
        method = body.get("token_endpoint_auth_method", "none")
        if method != "none":
            return oauth_json(
                {
                    "error": "invalid_client_metadata",
                    "error_description": "only public clients (token_endpoint_auth_method none)",
                },
                400,
            )
        name = body.get("client_name") if isinstance(body.get("client_name"), str) else "Unnamed client"
        row = oauth.register_client(name[:100], uris, str(body.get("application_type") or "native"))
        return oauth_json(
            {
                "client_id": row.clientId,
                "client_id_issued_at": 0,
                "client_name": row.clientName,
                "redirect_uris": row.redirectUris,
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "application_type": row.applicationType,
            },
            201,
        )

    @app.post("/oauth/revoke")
    async def revoke(request: Request) -> Response:
        form = await request.form()
        if form.get("token"):
            oauth.revoke_token(str(form["token"]), str(form.get("client_id") or "") or None)
        return Response(status_code=200)

    # -- console ---------------------------------------------------------------------------
    @app.get("/console/signin")
    async def signin(request: Request) -> Response:
        nxt = safe_next(request.query_params.get("next"))
        from functions.web import oidc

        provider = oidc.configured()
        if provider is not None:
            return RedirectResponse(oidc.start(provider, request, nxt), status_code=303)
        return page("signin.html", next=nxt)

    @app.get("/console/oidc/callback")
    async def oidc_callback(request: Request) -> Response:
        from functions.web import oidc

        provider = oidc.configured()
        if provider is None:
            return error_page("No OpenID Connect provider is configured.", 404)
        try:
            user_id, nxt = oidc.finish(provider, request)
        except oidc.SigninError as exc:
            return error_page(f"Sign-in failed: {exc}.", 401)
        response = RedirectResponse(nxt, status_code=303)
        set_session_cookie(response, request, console.create_session(user_id))
        return response

    @app.get("/console/signin/link")
    async def signin_link(request: Request) -> Response:
        user_id = console.consume_signin_link(request.query_params.get("t") or "")
        if user_id is None:
            return error_page(
                "This sign-in link is unknown, expired or already used. Ask for a new one (jentrix signin-link).", 401
            )
        response = RedirectResponse(safe_next(request.query_params.get("next")), status_code=303)
        set_session_cookie(response, request, console.create_session(user_id))
        return response

    @app.post("/console/signout")
    async def signout(request: Request) -> Response:
        form = await request.form()
        session = session_of(request)
        if not csrf_ok(session, form):
            return error_page("CSRF check failed; you are still signed in.", 403)
        console.end_session(request.cookies.get(COOKIE))
        response = RedirectResponse("/console/signin", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    @app.get("/console")
    @app.get("/console/apps")
    async def apps(request: Request) -> Response:
        session = session_of(request)
        if session is None:
            return RedirectResponse("/console/signin?" + urlencode({"next": "/console/apps"}), status_code=303)
        user = _user(session.userId)
        return page("apps.html", grants=oauth.list_grants(session.userId), csrf=session.csrf, user=user)

    @app.post("/console/apps/{grant_id}/revoke")
    async def revoke_app(grant_id: str, request: Request) -> Response:
        checked = await posted(request, unchanged="nothing was revoked")
        if isinstance(checked, Response):
            return checked
        session, _ = checked
        oauth.revoke_grant(session.userId, grant_id)
        return RedirectResponse("/console/apps", status_code=303)

    def workspaces_of(user_id: str) -> list[Any]:
        from domain.store.members import memberships
        from domain.store.workspaces import get_many

        mirrors = memberships(user_id)
        return get_many([m.workspaceId for m in mirrors]) if mirrors else []

    def tokens_page(session: Any, secret: str | None = None, status: int = 200) -> Response:
        live = [t for t in auth.list_tokens(session.userId) if not t.revokedAt]
        return page(
            "tokens.html",
            status=status,
            tokens=sorted(live, key=lambda t: t.createdAt, reverse=True),
            csrf=session.csrf,
            user=_user(session.userId),
            workspaces=workspaces_of(session.userId),
            secret=secret,
        )

    @app.get("/console/tokens")
    async def tokens(request: Request) -> Response:
        session = session_of(request)
        if session is None:
            return RedirectResponse("/console/signin?" + urlencode({"next": "/console/tokens"}), status_code=303)
        return tokens_page(session)

    @app.post("/console/tokens")
    async def create_token(request: Request) -> Response:
        """Mint a PAT for the signed-in person; the secret is in this one answer only."""
        checked = await posted(request, unchanged="no token was created")
        if isinstance(checked, Response):
            return checked
        session, form = checked
        scopes = [s for s in str(form.get("scopes") or "").split(",") if s]
        workspace = str(form.get("workspace") or "") or None
        if any(s not in auth.SCOPES for s in scopes) or not scopes:
            return error_page("Choose read, write or admin access.", 400)
        if workspace and not auth_member(session.userId, workspace):
            return error_page("You are not a member of that workspace.", 403)
        secret, _ = auth.mint_pat(
            session.userId,
            scopes=scopes,
            workspace_id=workspace,
            display_name=str(form.get("name") or "")[:80] or None,
            holder="human" if form.get("human") else "agent",
        )
        return tokens_page(session, secret=secret, status=201)

    @app.post("/console/tokens/{token_id}/revoke")
    async def revoke_pat(token_id: str, request: Request) -> Response:
        checked = await posted(request, unchanged="nothing was revoked")
        if isinstance(checked, Response):
            return checked
        session, _ = checked
        auth.revoke_token(session.userId, token_id)
        return RedirectResponse("/console/tokens", status_code=303)

    add_workspace_pages(app)
    return app


# -- workspace pages (approvals, invitations, board, upload, deletion) --------------------------
def signed_in(request: Request) -> Any:
    """The live session, or the redirect to sign in and come back here."""
    session = session_of(request)
    if session is None:
        back = request.url.path + (("?" + request.url.query) if request.url.query else "")
        return RedirectResponse("/console/signin?" + urlencode({"next": back}), status_code=303)
    return session


async def posted(
    request: Request, *, unchanged: str = "nothing was changed", expired: str = "sign in again"
) -> tuple[Any, Any] | Response:
    """``(session, form)`` of a console or consent POST, or the refusal: 401 without a live
    session, 403 without this session's CSRF token (the form field ``csrf``). Nothing is written in
    either case; ``unchanged`` says so in the page's words ("nothing was revoked"), ``expired``
    says what to do next."""
    form = await request.form()
    session = session_of(request)
    if session is None:
        return error_page(f"Your session has expired; {expired}. {unchanged.capitalize()}.", 401)
    if not csrf_ok(session, form):
        return error_page(f"The form was not sent from this page (CSRF check failed); {unchanged}.", 403)
    return session, form


def refused(exc: console_actions.Refused) -> Response:
    return error_page(exc.message, exc.status)


def workspace_page(name: str, session: Any, workspace_id: str, status: int = 200, **ctx: Any) -> Response:
    from domain.store.workspaces import get

    return page(
        name,
        status=status,
        csrf=session.csrf,
        user=_user(session.userId),
        workspace=get(workspace_id),
        workspace_id=workspace_id,
        **ctx,
    )


def add_workspace_pages(app: FastAPI) -> None:
    async def on_refused(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, console_actions.Refused)
        return refused(exc)

    # Every page answers a refusal the same way (its status, the reason in words), so the
    # handlers below let console_actions.Refused propagate instead of catching it one by one.
    app.add_exception_handler(console_actions.Refused, on_refused)

    @app.get("/console/workspaces")
    async def workspaces(request: Request) -> Response:
        session = signed_in(request)
        if isinstance(session, Response):
            return session
        from domain.store.members import memberships
        from domain.store.workspaces import get_many

        mirrors = memberships(session.userId)
        rows = get_many([m.workspaceId for m in mirrors]) if mirrors else []
        roles = {m.workspaceId: m.role for m in mirrors}
        return page(
            "workspaces.html",
            csrf=session.csrf,
            user=_user(session.userId),
            workspaces=[(w, roles.get(w.workspaceId, "")) for w in sorted(rows, key=lambda w: w.name.lower())],
            joined=next((w.name for w in rows if w.workspaceId == request.query_params.get("joined")), None),
            deleted=request.query_params.get("deleted"),
            operator=next((w for w in rows if w.workspaceId == request.query_params.get("operator")), None),
        )

    @app.post("/console/w/{workspace_id}/operator-role")
    async def operator_role(workspace_id: str, request: Request) -> Response:
        """An OWNER sets (``role=ADMIN``) or clears (``role=""``) who holds operator authority."""
        checked = await posted(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        role = str(form.get("role") or "") or None
        console_actions.set_operator_role(session.userId, workspace_id, role)
        return RedirectResponse("/console/workspaces?" + urlencode({"operator": workspace_id}), status_code=303)

    # -- approvals ---------------------------------------------------------------------------
    @app.get("/console/w/{workspace_id}/approvals")
    async def approvals(workspace_id: str, request: Request) -> Response:
        session = signed_in(request)
        if isinstance(session, Response):
            return session
        parked = console_actions.pending_approvals(session.userId, workspace_id)
        done = request.query_params.get("done")
        return workspace_page("approvals.html", session, workspace_id, parked=parked, done=done)

    @app.post("/console/w/{workspace_id}/approvals/{approval_id}")
    async def decide_approval(workspace_id: str, approval_id: str, request: Request) -> Response:
        checked = await posted(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        decision = form.get("decision")
        if decision not in ("approve", "reject") or not approval_id.startswith("ap_"):
            return error_page("Choose approve or reject.", 400)
        row = console_actions.decide_approval(session.userId, approval_id, decision == "approve")
        if row.workspaceId != workspace_id:  # pragma: no cover - the id names its workspace
            return error_page("That request belongs to another workspace.", 400)
        verb = "approved" if decision == "approve" else "rejected"
        return RedirectResponse(
            f"/console/w/{workspace_id}/approvals?" + urlencode({"done": f"{verb}: {row.summary}"}), status_code=303
        )

    # -- invitations -------------------------------------------------------------------------
    def invitations_page(session: Any, workspace_id: str, status: int = 200, **ctx: Any) -> Response:
        pending = console_actions.call(session.userId, "list_invitations", {"workspaceId": workspace_id})
        return workspace_page(
            "invitations.html", session, workspace_id, status=status, pending=pending["invitations"], **ctx
        )

    def invitation_url(request: Request, secret: str) -> str:
        return public_url.issuer(request.scope) + "/console/invite?" + urlencode({"s": secret})

    @app.get("/console/w/{workspace_id}/invitations")
    async def invitations(workspace_id: str, request: Request) -> Response:
        session = signed_in(request)
        if isinstance(session, Response):
            return session
        console_actions.require_role(workspace_id, session.userId, "ADMIN")
        return invitations_page(session, workspace_id)

    @app.post("/console/w/{workspace_id}/invitations")
    async def invite(workspace_id: str, request: Request) -> Response:
        checked = await posted(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        email, role = str(form.get("email") or "").strip(), str(form.get("role") or "")
        console_actions.require_role(workspace_id, session.userId, "ADMIN")
        _, secret = console_actions.invite(session.userId, workspace_id, email, role)
        return invitations_page(session, workspace_id, status=201, link=invitation_url(request, secret), link_for=email)

    @app.post("/console/w/{workspace_id}/invitations/{invitation_id}/link")
    async def relink(workspace_id: str, invitation_id: str, request: Request) -> Response:
        checked = await posted(request)
        if isinstance(checked, Response):
            return checked
        session, _ = checked
        row, secret = console_actions.relink(session.userId, invitation_id)
        if row.workspaceId != workspace_id:
            return error_page("That invitation belongs to another workspace.", 404)
        return invitations_page(
            session, workspace_id, status=201, link=invitation_url(request, secret), link_for=row.email
        )

    # -- board view (read-only) --------------------------------------------------------------
    @app.get("/console/w/{workspace_id}/boards")
    async def boards(workspace_id: str, request: Request) -> Response:
        session = signed_in(request)
        if isinstance(session, Response):
            return session
        listed = console_actions.call(session.userId, "list_boards", {"workspaceId": workspace_id})
        return workspace_page("boards.html", session, workspace_id, boards=listed["boards"])

    @app.get("/console/boards/{board_id}")
    async def board(board_id: str, request: Request) -> Response:
        session = signed_in(request)
        if isinstance(session, Response):
            return session
        cursor = request.query_params.get("cursor") or None
        snap = console_actions.board_page(session.userId, board_id, cursor, BOARD_PAGE)
        return workspace_page("board.html", session, snap.workspace_id, view=snap)

    # -- task attachment upload ----------------------------------------------------------------
    def upload_page(session: Any, task_id: str, status: int = 200, **ctx: Any) -> Response:
        task = console_actions.call(session.userId, "get_task", {"taskId": task_id})["task"]
        listed = console_actions.call(session.userId, "list_attachments", {"taskId": task_id})
        return workspace_page(
            "upload.html",
            session,
            str(getattr(ids.parse_task(task_id), "workspace_id", "")),  # valid: get_task accepted it
            status=status,
            task=task,
            attachments=listed["attachments"],
            limit=console_actions.upload_limit(),
            types=console_actions.upload_types(),
            **ctx,
        )

    @app.get("/console/tasks/{task_id}/attachments")
    async def attachments(task_id: str, request: Request) -> Response:
        session = signed_in(request)
        if isinstance(session, Response):
            return session
        return upload_page(session, task_id, added=request.query_params.get("added"))

    @app.post("/console/tasks/{task_id}/attachments")
    async def upload(task_id: str, request: Request) -> Response:
        """The browser posts the file here (multipart, no JavaScript); the web function then runs
        the CLI's three steps: upload grant, PUT to its presigned URL, attach."""
        declared = int(request.headers.get("content-length") or 0)
        if declared > console_actions.upload_limit() + 64 * 1024:  # refuse before reading the body
            return error_page(f"The console takes files up to {console_actions.upload_limit()} bytes.", 413)
        checked = await posted(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        sent = form.get("file")
        if sent is None or isinstance(sent, str) or not sent.filename:
            return error_page("Choose a file to upload.", 400)
        data = await sent.read(console_actions.upload_limit() + 1)
        kind = content_type_of(sent.filename, sent.content_type)
        grant = console_actions.grant_upload(session.userId, task_id, sent.filename, kind, data)
        put = await upload_bytes(grant["uploadUrl"], grant["headers"], data)
        if not 200 <= put < 300:
            return error_page(f"The storage refused the file (HTTP {put}); nothing was attached.", 502)
        done = console_actions.attach(session.userId, task_id, grant["uploadGrantId"])
        return RedirectResponse(
            f"/console/tasks/{task_id}/attachments?" + urlencode({"added": done["fileName"]}), status_code=303
        )

    # -- workspace deletion --------------------------------------------------------------------
    @app.get("/console/w/{workspace_id}/delete")
    async def delete_form(workspace_id: str, request: Request) -> Response:
        session = signed_in(request)
        if isinstance(session, Response):
            return session
        console_actions.deletion_target(session.userId, workspace_id)
        return workspace_page("delete.html", session, workspace_id)

    @app.post("/console/w/{workspace_id}/delete")
    async def delete_workspace(workspace_id: str, request: Request) -> Response:
        checked = await posted(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        console_actions.delete_workspace(session.userId, workspace_id, str(form.get("name") or ""))
        return RedirectResponse("/console/workspaces?" + urlencode({"deleted": workspace_id}), status_code=303)

    @app.get("/console/invite")
    async def invitation_landing(request: Request) -> Response:
        """Where an invitation link lands: what joining gives, and the Accept button (signed in)."""
        session = signed_in(request)
        if isinstance(session, Response):
            return session
        secret = request.query_params.get("s") or ""
        row = console_actions.open_invitation(secret) if secret else None
        if row is None:
            return error_page("This invitation link is not valid: it was used, revoked, replaced or has expired.", 404)
        from domain.store.workspaces import get

        inviter = _user(row.invitedBy)
        return page(
            "invite.html",
            csrf=session.csrf,
            user=_user(session.userId),
            invitation=row,
            workspace=get(row.workspaceId),
            inviter=inviter.email if inviter else row.invitedBy,
            secret=secret,
        )

    @app.post("/console/invite")
    async def accept_invitation(request: Request) -> Response:
        checked = await posted(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        user = _user(session.userId)
        if user is None:
            return error_page("Your user is gone; sign in again.", 401)
        invitation, _ = console_actions.accept_invitation(user, str(form.get("secret") or ""))
        return RedirectResponse("/console/workspaces?" + urlencode({"joined": invitation.workspaceId}), status_code=303)


def _user(user_id: str) -> Any:
    return auth.user_by_id(user_id)


def content_type_of(file_name: str, sent: str | None) -> str:
    """The browser's type when the grant accepts it, else a guess from the name (browsers send
    ``application/octet-stream`` or nothing for .md, .diff, .ndjson, ...)."""
    import mimetypes

    fallbacks = {".md": "text/markdown", ".diff": "text/x-diff", ".patch": "text/x-patch", ".log": "text/plain"}
    allowed = console_actions.upload_types()
    if sent and sent in allowed:
        return sent
    guessed = mimetypes.guess_type(file_name)[0] or fallbacks.get(Path(file_name).suffix.lower())
    return guessed or sent or "application/octet-stream"


async def upload_bytes(url: str, headers: dict[str, str], data: bytes) -> int:
    """PUT ``data`` to a presigned URL with exactly the signed headers; the HTTP status."""
    import httpx2

    async with httpx2.AsyncClient(timeout=60) as client:
        return (await client.put(url, content=data, headers=headers)).status_code


def safe_next(raw: str | None) -> str:
    """Only a path on this site (no scheme, no host, no ``//``): no open redirect."""
    if raw and raw.startswith("/") and not raw.startswith("//") and "\\" not in raw:
        return raw
    return "/console/apps"


db.configure()
app = create_web_app()
