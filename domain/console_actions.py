"""What a signed-in person does from the console pages (docs/console.md), as domain operations.

The console is one more client of the operations the tools and the CLI already run:

* the person acts through :func:`principal`, a *human* credential of their own (all scopes, no
  workspace pin), so catalog operations run through :func:`domain.pipeline.call_tool` with the
  same scope, role and membership checks as over MCP, and their activity rows say ``source: ui``;
* approvals and invitation links, which no MCP tool performs, follow the human-side role policy
  in :mod:`domain.access` (``approver_role``, ``role_to_grant``, ``roles_at_least``), the same
  functions ``jentrix approvals`` / ``jentrix invite`` (functions/cli_governance.py) call;
* every refusal is :class:`Refused`, carrying the HTTP status the page answers (404 hides a
  workspace from a non-member; 403 names the missing role).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from domain import access, clock, ids, pipeline
from domain.auth import Principal
from domain.errors import ToolError
from domain.settings import settings
from domain.store import db, members
from domain.store import governance as gov
from domain.store.models import ApprovalRow, InvitationRow, MemberRow, UserRow, WorkspaceRow


class Refused(Exception):
    """The person may not do this; ``status`` is the page's HTTP status (401, 403, 404, 409)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def principal(user_id: str) -> Principal:
    """The signed-in person as a caller: a human's credential with every scope and no pin.

    ``token_id`` is ``console_<user>``: the person's own rate window (the pipeline keys windows
    by token id), told apart from their tokens in logs; nothing authenticates with it."""
    return Principal(
        user_id=user_id,
        token_id=f"console_{user_id}",
        kind="local",
        stored_scopes=("admin",),
        workspace_pin=None,
        holder="human",
    )


def refusal(envelope: dict[str, Any]) -> Refused:
    """The page's refusal for an error envelope: 404 NOT_FOUND, 403 FORBIDDEN, 409 CONFLICT, else 400."""
    err = envelope.get("error", {})
    status = {"NOT_FOUND": 404, "FORBIDDEN": 403, "CONFLICT": 409}.get(str(err.get("code")), 400)
    return Refused(status, str(err.get("message", "refused")) + (f" {err['hint']}" if err.get("hint") else ""))


def call(user_id: str, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run the catalog operation ``tool_name`` for the person; its structured result.

    Raises:
        Refused: 404 for NOT_FOUND, 403 for FORBIDDEN, 400 for any other error envelope (the
            envelope's message and hint in the text)."""
    from domain.catalog import registry

    spec = registry().get(tool_name)
    if spec is None:  # pragma: no cover - a programming error
        raise LookupError(tool_name)
    outcome = pipeline.call_tool(spec, arguments, principal(user_id))
    if outcome.error is not None:
        raise refusal(outcome.error)
    assert outcome.result is not None
    return outcome.result


# -- the human-side role policy (shared with functions/cli_governance.py) -----------------------------
def roles_from(needed: str) -> tuple[str, ...]:
    """Every role at or above ``needed`` (what a role guard accepts); :func:`domain.access.roles_at_least`."""
    return access.roles_at_least(needed)


def approver_role(row: ApprovalRow) -> str:
    """The role a human needs to decide ``row``, by :func:`domain.access.approver_role` on the parked
    tool's ``min_role`` and the role the call would grant (the CLI asks the same function)."""
    from domain.catalog import registry

    spec = registry().get(row.tool)
    return access.approver_role(spec.min_role if spec is not None else None, (row.arguments or {}).get("role"))


def link_role(row: InvitationRow | None) -> str:
    """The role a human needs to print an invitation's link (:func:`domain.access.role_to_grant`)."""
    return access.role_to_grant(row.role if row is not None else None)


def require_role(workspace_id: str, user_id: str, needed: str) -> MemberRow:
    """The person's membership of ``workspace_id`` holding at least ``needed``.

    Raises:
        Refused: 404 when they are not a member (the workspace stays invisible), 403 when their
            role is too low."""
    member = members.get(workspace_id, user_id)
    if member is None:
        raise Refused(404, "No such workspace, or you are not a member of it.")
    if not access.role_allows(member.role, needed):
        raise Refused(403, f"This needs the {needed} role in this workspace; you are {member.role}.")
    return member


# -- approvals ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Parked:
    """One pending approval request as the approvals page shows it."""

    approval_id: str
    tool: str
    would_do: str  # in plain words
    call: str  # the parked call itself: tool(arguments) in workspace
    asked_by: str  # the e-mail of the member whose agent asked (the user id when they left)
    created_at: str
    expires_at: str
    needed: str  # the role that may decide it
    can_decide: bool


def in_plain_words(tool: str, arguments: dict[str, Any], emails: dict[str, str]) -> str | None:
    """The parked call as a sentence (``Invite bea@example.com as ADMIN``), or ``None`` for a tool
    this does not know (the page then shows the call itself)."""

    def who(user_id: Any) -> str:
        return emails.get(str(user_id), str(user_id))

    if tool == "invite_member":
        return f"Invite {arguments.get('email')} to join as {arguments.get('role')}"
    if tool == "remove_member":
        return f"Remove {who(arguments.get('userId'))} (now {arguments.get('expectedRole')}) from the workspace"
    if tool == "set_member_role":
        return (
            f"Change the role of {who(arguments.get('userId'))} from {arguments.get('expectedRole')} "
            f"to {arguments.get('role')}"
        )
    return None


def pending_approvals(user_id: str, workspace_id: str) -> list[Parked]:
    """The workspace's pending, unexpired requests, newest first; for ADMINs and OWNERs."""
    me = require_role(workspace_id, user_id, "ADMIN")
    emails = {m.userId: m.email for m in members.list_members(workspace_id)}
    out = []
    for row in gov.approvals(workspace_id, pending_only=True):
        needed = approver_role(row)
        out.append(
            Parked(
                approval_id=row.approvalId,
                tool=row.tool,
                call=row.summary,
                would_do=in_plain_words(row.tool, dict(row.arguments or {}), emails) or row.summary,
                asked_by=emails.get(row.callerId, row.callerId),
                created_at=row.createdAt,
                expires_at=row.expiresAt,
                needed=needed,
                can_decide=access.role_allows(me.role, needed),
            )
        )
    return out


def decide_approval(user_id: str, approval_id: str, approve: bool) -> ApprovalRow:
    """Approve or reject one pending request (:func:`domain.store.governance.decide`, logged ``source: ui``).

    Raises:
        Refused: 404 (no such request, or not a member), 403 (role too low), 409 (no longer
            pending: decided, used or expired; or the person's role changed meanwhile)."""
    ref = ids.parse_approval(approval_id)
    if ref is None:
        raise Refused(404, "No such approval request.")
    require_role(ref.workspace_id, user_id, "MEMBER")
    row = gov.get_approval(ref)
    if row is None:
        raise Refused(404, "No such approval request.")
    needed = approver_role(row)
    require_role(ref.workspace_id, user_id, needed)
    try:
        gov.decide(row, "APPROVED" if approve else "REJECTED", actor_id=user_id, actor_roles=roles_from(needed))
    except gov.NotPending:
        raise Refused(409, "This request is no longer pending: it was decided, used or has expired.") from None
    except db.Missing:
        raise Refused(409, "Your role in this workspace changed meanwhile; nothing was written.") from None
    return row


# -- invitations ----------------------------------------------------------------------------------
def invite(user_id: str, workspace_id: str, email: str, role: str) -> tuple[str, str]:
    """Invite ``email`` with ``role`` (the ``invite_member`` operation) and issue its link secret.

    Returns ``(invitation id, link secret)``; the secret is shown once and only its digest is kept.

    Raises:
        Refused: the operation's refusal (404 non-member, 403 role too low, 400/409 otherwise)."""
    result = call(user_id, "invite_member", {"workspaceId": workspace_id, "email": email, "role": role})
    invitation = result.get("invitation") or {}
    ref = ids.parse_invitation(str(invitation.get("id", "")))
    row = gov.get_invitation(ref) if ref is not None else None
    if row is None:  # pragma: no cover - the operation just wrote it
        raise Refused(409, "The invitation was not found after it was created; try again.")
    return row.invitationId, new_link(user_id, row)


def relink(user_id: str, invitation_id: str) -> tuple[InvitationRow, str]:
    """A fresh link for a pending invitation named by id (404 when there is none to see)."""
    ref = ids.parse_invitation(invitation_id)
    if ref is None:
        raise Refused(404, "No such invitation.")
    require_role(ref.workspace_id, user_id, "ADMIN")
    row = gov.get_invitation(ref)
    if row is None or row.state != "PENDING" or row.expiresAt <= clock.now_iso():
        raise Refused(404, "No pending invitation with that id.")
    return row, new_link(user_id, row)


def new_link(user_id: str, row: InvitationRow) -> str:
    """A fresh link secret for a pending invitation (any earlier link stops working)."""
    needed = link_role(row)
    require_role(row.workspaceId, user_id, needed)
    try:
        return gov.issue_link(row, actor_id=user_id, actor_roles=roles_from(needed), source="ui")
    except gov.InvitationClosed:
        raise Refused(409, "This invitation is no longer pending.") from None
    except db.Missing:
        raise Refused(409, "Your role in this workspace changed meanwhile; nothing was written.") from None


def open_invitation(secret: str) -> InvitationRow | None:
    """The pending, unexpired invitation whose current link is ``secret``; else ``None``."""
    row = gov.invitation_of_secret(secret)
    if row is None or row.state != "PENDING" or row.secretDigest != gov.secret_digest(secret):
        return None
    return row if row.expiresAt > clock.now_iso() else None


def accept_invitation(user: UserRow, secret: str) -> tuple[InvitationRow, MemberRow]:
    """Join the invitation's workspace as ``user`` (:func:`domain.store.governance.accept`).

    The invitation names an e-mail: only the person signed in with that address may accept it.

    Raises:
        Refused: 404 (unknown, used, revoked, replaced or expired link), 403 (signed in with
            another address), 409 (already a member)."""
    row = open_invitation(secret)
    if row is None:
        raise Refused(404, "This invitation link is not valid: it was used, revoked, replaced or has expired.")
    if user.email.lower() != row.email.lower():
        raise Refused(
            403, f"This invitation is for {row.email}; you are signed in as {user.email}. Sign in with that address."
        )
    try:
        return gov.accept(secret, user)
    except gov.InvitationClosed:
        raise Refused(
            404, "This invitation link is not valid: it was used, revoked, replaced or has expired."
        ) from None
    except gov.AlreadyMember:
        raise Refused(409, "You are already a member of this workspace.") from None


# -- the read-only board view ---------------------------------------------------------------------
@dataclass(frozen=True)
class BoardCard:
    key: str
    title: str
    task_id: str
    assignees: list[str]  # display names (user ids of people who left)
    labels: list[tuple[str, str]]  # (name, #rrggbb)


@dataclass(frozen=True)
class BoardColumn:
    name: str
    task_count: int  # every task of the column, not only this page's
    wip_limit: int | None
    done: bool
    cards: list[BoardCard]

    @property
    def over_limit(self) -> bool:
        return self.wip_limit is not None and self.task_count > self.wip_limit


@dataclass(frozen=True)
class BoardView:
    workspace_id: str
    board_id: str
    name: str
    columns: list[BoardColumn]
    total: int
    next_cursor: str | None


def board_page(user_id: str, board_id: str, cursor: str | None, limit: int) -> BoardView:
    """One page of a board in board order (``get_board_snapshot``: members only), with assignees'
    names and labels' names filled in (one more Query: the workspace's members).

    Raises:
        Refused: 404 for a board the person cannot see; 400 for a cursor of another list."""
    args: dict[str, Any] = {"boardId": board_id, "limit": limit}
    if cursor:
        args["cursor"] = cursor
    snap = call(user_id, "get_board_snapshot", args)
    workspace_id = ids.workspace_of_board(board_id)
    names = {m.userId: m.displayName or m.email for m in members.list_members(workspace_id)}
    labels = {lb["id"]: (lb["name"], lb["color"]) for lb in snap["labels"]}
    rows = {t["id"]: t for t in snap["tasks"]}
    columns = []
    for c in snap["columns"]:
        cards = [
            BoardCard(
                key=str(rows[t].get("key", "")),
                title=str(rows[t].get("title", "")),
                task_id=t,
                assignees=[names.get(a, a) for a in rows[t].get("assigneeIds") or []],
                labels=[labels[lb] for lb in rows[t].get("labelIds") or [] if lb in labels],
            )
            for t in c["taskIds"]
            if t in rows
        ]
        wip = c.get("wipLimit")
        columns.append(
            BoardColumn(
                name=c["name"],
                task_count=int(c["taskCount"]),
                wip_limit=int(wip) if wip is not None else None,
                done=bool(c.get("done")),
                cards=cards,
            )
        )
    return BoardView(
        workspace_id=workspace_id,
        board_id=board_id,
        name=snap["board"]["name"],
        columns=columns,
        total=int(snap["totalCount"]),
        next_cursor=snap.get("nextCursor"),
    )


# -- task attachments -----------------------------------------------------------------------------
CONSOLE_UPLOAD_MAX = (
    4 * 1024 * 1024
)  # the web function receives the bytes: under Lambda's 6 MB request payload once base64-encoded


def upload_limit() -> int:
    """Bytes one console upload may hold: the upload grant's limit, capped at :data:`CONSOLE_UPLOAD_MAX`."""
    return min(settings.upload_max_bytes, CONSOLE_UPLOAD_MAX)


def upload_types() -> tuple[str, ...]:
    """The content types an upload grant accepts (``JENTRIX_UPLOAD_TYPES``)."""
    return settings.upload_types


def grant_upload(user_id: str, task_id: str, file_name: str, content_type: str, data: bytes) -> dict[str, Any]:
    """An upload grant (purpose ``attachment``) for ``data`` bound for ``task_id``:
    :func:`domain.uploads.issue_grant`, the operation ``jentrix attachment upload`` runs first.
    Returns the grant (``uploadGrantId``, ``uploadUrl``, ``headers`` to PUT with, ...).

    Raises:
        Refused: 404 for a task the person cannot see, 413 over :func:`upload_limit`, 400 for a
            name, type or size the grant refuses."""
    from domain import uploads

    ref = ids.parse_task(task_id)
    if ref is None:
        raise Refused(404, "No such task.")
    require_role(ref.workspace_id, user_id, "MEMBER")
    if len(data) > upload_limit():
        raise Refused(413, f"The file is {len(data)} bytes; the console takes files up to {upload_limit()} bytes.")
    try:
        return uploads.issue_grant(
            principal(user_id),
            workspace_id=ref.workspace_id,
            purpose="attachment",
            file_name=file_name,
            content_type=content_type,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
        )
    except ToolError as exc:
        raise refusal(exc.envelope()) from None


def attach(user_id: str, task_id: str, upload_grant_id: str) -> dict[str, Any]:
    """Record the uploaded object on the task (:func:`domain.attachments.attach`: one transaction
    with the ``attachment.added`` activity row, ``source: ui``); the attachment view.

    Raises:
        Refused: the operation's refusal (archived task, grant that does not fit, ...)."""
    from domain import attachments

    outcome = attachments.attach(principal(user_id), task_id=task_id, upload_grant_id=upload_grant_id)
    if outcome.error is not None:
        raise refusal(outcome.error)
    assert outcome.result is not None
    return dict(outcome.result["attachment"])


# -- workspace deletion ---------------------------------------------------------------------------
def deletion_target(user_id: str, workspace_id: str) -> WorkspaceRow:
    """The workspace an OWNER may delete (404 for a non-member, 403 below OWNER)."""
    from domain.store import workspaces

    require_role(workspace_id, user_id, "OWNER")
    head = workspaces.get(workspace_id)
    if head is None:
        raise Refused(404, "No such workspace, or you are not a member of it.")
    return head


def delete_workspace(user_id: str, workspace_id: str, typed_name: str) -> int:
    """Delete the workspace for good (docs/console.md, "Deleting a workspace"): close it (head and
    slug under ``name = typed_name``, the caller an OWNER at commit), then purge its items and
    objects (:mod:`domain.store.deletion`). Returns the number of items deleted.

    Raises:
        Refused: 404 / 403 as :func:`deletion_target`; 400 when the typed name is not exactly the
            workspace's name (nothing is deleted); 409 when the caller's role changed meanwhile."""
    from domain import objects
    from domain.store import deletion

    head = deletion_target(user_id, workspace_id)
    if typed_name != head.name:
        raise Refused(400, "The name you typed is not this workspace's exact name; nothing was deleted.")
    member_ids = [m.userId for m in members.list_members(workspace_id)]
    try:
        deletion.close(head, typed_name, actor_id=user_id)
    except deletion.NameMismatch:
        raise Refused(400, "The name you typed is not this workspace's exact name; nothing was deleted.") from None
    except db.Missing:
        raise Refused(409, "You are no longer an OWNER of this workspace; nothing was deleted.") from None
    for uid in member_ids:
        members.forget(workspace_id, uid)
    count = deletion.purge(workspace_id, member_ids)
    for prefix in objects.workspace_prefixes(workspace_id):
        objects.delete_prefix(prefix)
    return count


# -- operator authority (docs/coordination.md, "Operator authority") -------------------------------
def set_operator_role(user_id: str, workspace_id: str, role: str | None) -> None:
    """Set (``ADMIN``) or clear (``None``) the role the workspace grants operator authority to:
    an OWNER's act (:func:`domain.operator.set_grant`, source ``ui``).

    Raises:
        Refused: 404 for a non-member, 403 below OWNER, 400 for a role that cannot be granted,
            409 when the caller's role changed before the write (nothing written)."""
    from domain import operator

    require_role(workspace_id, user_id, "OWNER")
    try:
        operator.set_grant(workspace_id, role, actor_id=user_id, human=principal(user_id).human, source="ui")
    except ValueError:
        raise Refused(
            400, f"Operator authority can be granted to {', '.join(operator.GRANTS)} or kept to OWNERs."
        ) from None
    except db.Missing:
        raise Refused(409, "Your role in this workspace changed; nothing was written.") from None
