"""Member and invitation tools: set_member_role, remove_member, invite_member, list_invitations, revoke_invitation.

Catalog: "Catalog" rows of the five tools (admin scope class). The three membership changes are
``governed="membership"``: an agent's call goes through the workspace's governance policy first
(:mod:`domain.governance`, docs/governance.md) and may be answered ``status: PENDING_APPROVAL``
with the approval request instead of being applied. Role changes and removals are value-CAS on
the member's role (``expectedRole``); ``expectedUpdatedAt`` is refused. The last OWNER can be
neither demoted nor removed, even by racing calls (the head's ``ownerCount``,
:mod:`domain.store.governance`). Every change writes a workspace-log entry in its transaction.
"""

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from domain import errors
from domain.access import Prefetch, Ref, target
from domain.auth import ROLE_RANK
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import db
from domain.store import governance as gov
from domain.store import members as member_store
from domain.store.cas import Step, Unchanged, compare_and_set
from domain.store.reads import Invitation, Member
from domain.tools.args import WorkspaceIdArg
from domain.tools.views import MemberView, member_view

RoleArg = Literal["OWNER", "ADMIN", "MEMBER"]
UserIdArg = Annotated[str, Field(min_length=1, max_length=64, description="usr_… (list_members).")]
ExpectedRoleArg = Annotated[
    RoleArg | None,
    Field(default=None, description="Role you read; if changed: CONFLICT."),
]
RefusedStampArg = Annotated[
    str | None,
    Field(default=None, max_length=40, description="Refused; use expectedRole."),
]
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _refuse_stamp(value: str | None) -> str | None:
    if value is not None:
        from pydantic_core import PydanticCustomError

        raise PydanticCustomError(
            "value_cas",
            "is not accepted here; pass expectedRole (member changes are guarded by the role, by value)",
            {"hint": "Drop expectedUpdatedAt and pass expectedRole (the role you last read from list_members)."},
        )
    return value


class ApprovalView(ToolOutput):
    """An approval request an agent's governed call was parked as (never an error)."""

    id: str = Field(description="Approval id (ap_…); a human approves it with jentrix approvals approve.")
    tool: str
    wouldDo: str = Field(description="The call the approval would let through, arguments included.")
    state: str = Field(description="PENDING, APPROVED, REJECTED or CONSUMED.")
    createdAt: str
    expiresAt: str = Field(description="After this instant the request can be neither approved nor used.")
    newRequest: bool = Field(description="True when this call wrote the request; false when it was already waiting.")
    howToApprove: str


Status = Annotated[
    Literal["APPLIED", "PENDING_APPROVAL"],
    Field(
        description="APPLIED: the change was made. PENDING_APPROVAL: nothing changed; `approval` names the request a human must approve, after which the same call (same arguments, same token) goes through once."
    ),
]


def _target_member(ctx: CallContext, ws: str, user_id: str) -> Member:
    row = ctx.member(ws) if user_id == ctx.user_id else ctx.read.user_member
    if row is None:
        raise errors.not_found("member", user_id)
    return row


def _stale(member: Member | None, user_id: str) -> errors.ToolError:
    if member is None:
        return errors.not_found("member", user_id)
    return errors.conflict(
        f"Member {user_id} is {member.role} now, not the role you expected; nothing was written.",
        "Re-read the member (list_members) and decide again with expectedRole set to the current role.",
        current=member_view(member).model_dump(mode="json"),
    )


def _last_owner(user_id: str) -> errors.ToolError:
    return errors.invalid(
        "userId",
        f"{user_id} is the last OWNER of this workspace",
        "Make another member OWNER first (set_member_role), then call again.",
    )


def _spent() -> errors.ToolError:
    return errors.forbidden(
        "The approval that let this call through was used, rejected or expired meanwhile; nothing was written.",
        "Call again to file a new approval request, and ask a human to approve it.",
    )


def _owners(ctx: CallContext, ws: str) -> int:
    head = ctx.read.workspace
    if head is None:
        raise errors.not_found("workspace", ws)
    return gov.owner_count(head)


def _lost_role(ctx: CallContext) -> errors.ToolError:
    return errors.forbidden(
        f"Your role in this workspace changed while {ctx.tool} ran; nothing was written.",
        "Check your role with list_members and call again if you still may.",
    )


# -- set_member_role -------------------------------------------------------------------------
class SetMemberRoleInput(ToolInput):
    workspaceId: WorkspaceIdArg
    userId: UserIdArg
    role: Annotated[RoleArg, Field(description="New role.")]
    expectedRole: ExpectedRoleArg
    expectedUpdatedAt: RefusedStampArg

    _no_stamp = field_validator("expectedUpdatedAt")(_refuse_stamp)


class SetMemberRoleOutput(ToolOutput):
    status: Status
    member: MemberView | None = Field(
        default=None, description="The member as stored after the change (null when parked)."
    )
    approval: ApprovalView | None = Field(default=None, description="The approval request (only when parked).")


def _check_role_change(ctx: CallContext, args: Any) -> None:
    """What set_member_role can refuse from the access read alone (also run before parking)."""
    ws = ctx.target.workspace_id
    current = _target_member(ctx, ws, args.userId)
    if args.expectedRole is not None and current.role != args.expectedRole:
        raise _stale(current, args.userId)
    if current.role == "OWNER" and args.role != "OWNER" and _owners(ctx, ws) <= 1:
        raise _last_owner(args.userId)


def _member_change(
    ctx: CallContext, operation: str, current: Member, plan: Callable[[Member], Step[Member, Member]], user_id: str
) -> Member:
    """Run a member change through :func:`domain.store.cas.compare_and_set` (a moved role plans
    again on the stored member, ``ATTEMPTS[operation]`` times), mapping the store's refusals."""
    try:
        return compare_and_set(operation, current, plan)
    except gov.StaleRole:  # the member left meanwhile
        raise errors.not_found("member", user_id) from None
    except gov.LastOwner:
        raise _last_owner(user_id) from None
    except gov.ApprovalSpent:
        raise _spent() from None
    except db.Missing:
        raise _lost_role(ctx) from None


@tool(
    "set_member_role",
    title="Set member role",
    description="Changes a member's role (OWNER only); the last OWNER cannot be demoted. An agent's change follows the governance policy (default PENDING_APPROVAL).",
    area="members",
    scope="admin",
    idempotent=True,
    target=target("workspaceId", "workspace"),
    min_role="OWNER",
    refs=(Ref("userId", "user"),),
    reads=("user_member", "workspace"),
    governed="membership",
    precheck=_check_role_change,
    input_model=SetMemberRoleInput,
    output_model=SetMemberRoleOutput,
)
def set_member_role(ctx: CallContext, args: SetMemberRoleInput) -> SetMemberRoleOutput:
    ws = ctx.target.workspace_id
    current = _target_member(ctx, ws, args.userId)
    extra, approval_key = ctx.approval_write()

    def plan(current: Member) -> Step[Member, Member]:
        if args.expectedRole is not None and current.role != args.expectedRole:
            raise _stale(current, args.userId)
        if current.role == args.role and extra is None:
            return Unchanged(current)
        if current.role == "OWNER" and args.role != "OWNER" and _owners(ctx, ws) <= 1:
            raise _last_owner(args.userId)
        log = gov.log_row(
            ws,
            "member.role_changed",
            f"{current.email}: {current.role} -> {args.role}",
            actor_id=ctx.user_id,
            source=ctx.source,
            data={
                "userId": args.userId,
                "from": current.role,
                "to": args.role,
                "approvalId": ctx.approval.approvalId if ctx.approval else None,
            },
        )
        return gov.set_role(
            current,
            args.role,
            actor_id=ctx.user_id,
            actor_roles=("OWNER",),
            log=log,
            extra=extra,
            approval_key=approval_key,
        )

    return SetMemberRoleOutput(
        status="APPLIED", member=member_view(_member_change(ctx, "set_member_role", current, plan, args.userId))
    )


# -- remove_member ---------------------------------------------------------------------------
class RemoveMemberInput(ToolInput):
    workspaceId: WorkspaceIdArg
    userId: UserIdArg
    expectedRole: ExpectedRoleArg
    expectedUpdatedAt: RefusedStampArg

    _no_stamp = field_validator("expectedUpdatedAt")(_refuse_stamp)


class RemoveMemberOutput(ToolOutput):
    status: Status
    removed: MemberView | None = Field(
        default=None, description="The member as it was before removal (null when parked)."
    )
    approval: ApprovalView | None = Field(default=None, description="The approval request (only when parked).")


def _check_removal(ctx: CallContext, args: Any) -> None:
    """What remove_member can refuse from the access read alone (also run before parking)."""
    ws = ctx.target.workspace_id
    if args.userId == ctx.user_id:
        raise errors.invalid(
            "userId",
            "is you; a member cannot remove themselves",
            "Ask another ADMIN or OWNER of the workspace to remove you.",
        )
    current = _target_member(ctx, ws, args.userId)
    if args.expectedRole is not None and current.role != args.expectedRole:
        raise _stale(current, args.userId)
    if current.role == "OWNER":
        if ROLE_RANK[ctx.member(ws).role] < ROLE_RANK["OWNER"]:
            raise errors.forbidden(
                "Removing an OWNER needs the OWNER role; you are ADMIN.",
                "Ask an OWNER of the workspace to remove this member.",
            )
        if _owners(ctx, ws) <= 1:
            raise _last_owner(args.userId)


@tool(
    "remove_member",
    title="Remove member",
    description="Removes a member (ADMIN; OWNER for an OWNER), ending their access; never yourself or the last OWNER. An agent's removal follows the governance policy (default PENDING_APPROVAL).",
    area="members",
    scope="admin",
    destructive=True,
    target=target("workspaceId", "workspace"),
    min_role="ADMIN",
    refs=(Ref("userId", "user"),),
    reads=("user_member", "workspace"),
    governed="membership",
    precheck=_check_removal,
    input_model=RemoveMemberInput,
    output_model=RemoveMemberOutput,
)
def remove_member(ctx: CallContext, args: RemoveMemberInput) -> RemoveMemberOutput:
    ws = ctx.target.workspace_id
    current = _target_member(ctx, ws, args.userId)
    extra, approval_key = ctx.approval_write()
    me = ctx.member(ws)

    def plan(current: Member) -> Step[Member, Member]:
        if args.expectedRole is not None and current.role != args.expectedRole:
            raise _stale(current, args.userId)
        if current.role == "OWNER":
            if ROLE_RANK[me.role] < ROLE_RANK["OWNER"]:
                raise errors.forbidden(
                    "Removing an OWNER needs the OWNER role; you are ADMIN.",
                    "Ask an OWNER of the workspace to remove this member.",
                )
            if _owners(ctx, ws) <= 1:
                raise _last_owner(args.userId)
        roles = ("OWNER",) if current.role == "OWNER" else ("ADMIN", "OWNER")
        log = gov.log_row(
            ws,
            "member.removed",
            f"{current.email} ({current.role}) removed",
            actor_id=ctx.user_id,
            source=ctx.source,
            data={
                "userId": args.userId,
                "role": current.role,
                "approvalId": ctx.approval.approvalId if ctx.approval else None,
            },
        )
        return gov.remove(
            current, actor_id=ctx.user_id, actor_roles=roles, log=log, extra=extra, approval_key=approval_key
        )

    return RemoveMemberOutput(
        status="APPLIED", removed=member_view(_member_change(ctx, "remove_member", current, plan, args.userId))
    )


# -- invitations -----------------------------------------------------------------------------
class InvitationView(ToolOutput):
    id: str = Field(description="Invitation id (inv_…).")
    workspaceId: str
    email: str
    role: str
    invitedBy: str = Field(description="userId of the member who invited.")
    createdAt: str
    expiresAt: str


def invitation_view(row: Invitation) -> InvitationView:
    return InvitationView(
        id=row.invitationId,
        workspaceId=row.workspaceId,
        email=row.email,
        role=row.role,
        invitedBy=row.invitedBy,
        createdAt=row.createdAt,
        expiresAt=row.expiresAt,
    )


class InviteMemberInput(ToolInput):
    workspaceId: WorkspaceIdArg
    email: Annotated[str, Field(min_length=1, max_length=254, description="Invitee's address.")]
    role: Annotated[RoleArg, Field(default="MEMBER", description="Role on accepting.")]


class InviteMemberOutput(ToolOutput):
    status: Status
    invitation: InvitationView | None = Field(
        default=None, description="The pending invitation (null when parked). It carries no secret."
    )
    approval: ApprovalView | None = Field(default=None, description="The approval request (only when parked).")


def _invite_prefetch(where: Any, args: Any) -> Prefetch:
    """The workspace's members and pending invitations, read with the caller's membership (two
    Queries in parallel with it): the precheck answers an address that is already in either."""
    ws = where.workspace_id
    return Prefetch(
        queries=(
            ("members", lambda: member_store.list_members(ws)),
            ("invitations", lambda: gov.pending_invitations(ws)),
        )
    )


def _normalised_email(args: Any) -> str:
    email: str = args.email.strip().lower()
    if not EMAIL.fullmatch(email):
        raise errors.invalid("email", "is not an e-mail address", "Pass an address like name@example.com.")
    return email


def _check_invite(ctx: CallContext, args: Any) -> str:
    """What invite_member can refuse without a write (run before the handler and before parking,
    so an agent's call that cannot succeed files no approval request); the normalised e-mail.

    Raises:
        ToolError: INVALID_INPUT for a malformed address; FORBIDDEN for an OWNER invitation from
            a non-OWNER; CONFLICT when the address is already a member (``current``: the member)
            or already holds a pending invitation (``current``: that invitation).
    """
    email = _normalised_email(args)
    ws = ctx.target.workspace_id
    me = ctx.member(ws)
    if args.role == "OWNER" and me.role != "OWNER":
        raise errors.forbidden(
            f"Inviting an OWNER needs the OWNER role; you are {me.role}.",
            "Invite with role ADMIN or MEMBER, or ask an OWNER to invite.",
        )
    member = next(
        (m for m in ctx.query("members", lambda: member_store.list_members(ws)) if m.email.strip().lower() == email),
        None,
    )
    if member is not None:
        raise errors.conflict(
            f"{email} is already a member of this workspace ({member.role}, user {member.userId}); nothing was written.",
            "Nobody needs inviting; to change what they may do, call set_member_role with this userId.",
            current=member_view(member).model_dump(mode="json"),
        )
    pending = next((i for i in ctx.query("invitations", lambda: gov.pending_invitations(ws)) if i.email == email), None)
    if pending is not None:
        raise errors.conflict(
            f"{email} already has a pending invitation {pending.invitationId} (role {pending.role}, valid until {pending.expiresAt}); nothing was written.",
            f"Use that one: a human ADMIN prints its link with `jentrix invite link {pending.invitationId}`. For another role, "
            "revoke_invitation it first, then invite again.",
            current=invitation_view(pending).model_dump(mode="json"),
        )
    return email


@tool(
    "invite_member",
    title="Invite member",
    description="Invites an e-mail with a role (ADMIN; OWNER for OWNER), valid 7 days. No tool shows the secret: a human ADMIN runs `jentrix invite link ID`. An agent's invitation follows the governance policy (default PENDING_APPROVAL).",
    area="members",
    scope="admin",
    target=target("workspaceId", "workspace"),
    min_role="ADMIN",
    prefetch=_invite_prefetch,
    governed="membership",
    precheck=_check_invite,
    input_model=InviteMemberInput,
    output_model=InviteMemberOutput,
)
def invite_member(ctx: CallContext, args: InviteMemberInput) -> InviteMemberOutput:
    ws = ctx.target.workspace_id
    email = _normalised_email(args)  # the precheck (_check_invite) ran just before, on every call
    row = gov.new_invitation(ws, email, args.role, ctx.user_id)
    extra, approval_key = ctx.approval_write()
    log = gov.log_row(
        ws,
        "invitation.created",
        f"{email} invited as {args.role}",
        actor_id=ctx.user_id,
        source=ctx.source,
        data={
            "invitationId": row.invitationId,
            "role": args.role,
            "approvalId": ctx.approval.approvalId if ctx.approval else None,
        },
    )
    roles = ("OWNER",) if args.role == "OWNER" else ("ADMIN", "OWNER")
    try:
        gov.put_invitation(
            row, actor_id=ctx.user_id, actor_roles=roles, log=log, extra=extra, approval_key=approval_key
        )
    except gov.ApprovalSpent:
        raise _spent() from None
    except db.Missing:
        raise _lost_role(ctx) from None
    return InviteMemberOutput(status="APPLIED", invitation=invitation_view(row))


class ListInvitationsInput(ToolInput):
    workspaceId: WorkspaceIdArg


class ListInvitationsOutput(ToolOutput):
    invitations: list[InvitationView]


@tool(
    "list_invitations",
    title="List invitations",
    description=(
        "A workspace's pending invitations, oldest first, with e-mail, role, inviter and expiry (ADMIN; never a "
        "secret). Withdraw one with revoke_invitation."
    ),
    area="members",
    scope="admin",
    read_only=True,
    fields_of="invitations",
    target=target("workspaceId", "workspace"),
    min_role="ADMIN",
    prefetch=lambda where, args: Prefetch(
        queries=(("invitations", lambda: gov.pending_invitations(where.workspace_id)),)
    ),
    input_model=ListInvitationsInput,
    output_model=ListInvitationsOutput,
)
def list_invitations(ctx: CallContext, args: ListInvitationsInput) -> ListInvitationsOutput:
    return ListInvitationsOutput(invitations=[invitation_view(r) for r in ctx.query("invitations")])


class RevokeInvitationInput(ToolInput):
    invitationId: Annotated[str, Field(min_length=1, max_length=80, description="inv_…")]


class RevokeInvitationOutput(ToolOutput):
    revoked: InvitationView


@tool(
    "revoke_invitation",
    title="Revoke invitation",
    description=("Withdraws a pending invitation (ADMIN); an accepted, revoked, expired or unknown one is NOT_FOUND."),
    area="members",
    scope="admin",
    destructive=True,
    target=target("invitationId", "invitation"),
    min_role="ADMIN",
    reads=("invitation",),
    input_model=RevokeInvitationInput,
    output_model=RevokeInvitationOutput,
)
def revoke_invitation(ctx: CallContext, args: RevokeInvitationInput) -> RevokeInvitationOutput:
    where = ctx.target
    row = ctx.read.invitation
    if row is None or row.state != "PENDING" or not gov.live(row):  # type: ignore[arg-type]
        raise errors.not_found("invitation", args.invitationId)
    log = gov.log_row(
        where.workspace_id,
        "invitation.revoked",
        f"Invitation of {row.email} revoked",
        actor_id=ctx.user_id,
        source=ctx.source,
        data={"invitationId": row.invitationId},
    )
    try:
        gov.revoke_invitation(row, actor_id=ctx.user_id, log=log)
    except gov.InvitationClosed:
        raise errors.not_found("invitation", args.invitationId) from None
    except db.Missing:
        raise _lost_role(ctx) from None
    return RevokeInvitationOutput(revoked=invitation_view(row))


TOOLS = (set_member_role, remove_member, invite_member, list_invitations, revoke_invitation)
