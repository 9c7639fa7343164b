"""Membership changes, invitations, approval requests, the governance policy and the workspace log.

Keys: :func:`domain.store.keys.invitation`, :func:`~domain.store.keys.governance_policy`,
:func:`~domain.store.keys.approval`, :func:`~domain.store.keys.workspace_log` and the member /
membership-mirror / workspace-head items of :mod:`domain.store.members`. Every change is one
transaction that also writes its workspace-log entry (docs/governance.md):

* a role change updates the member item under ``role = <the role read>`` (value-CAS), the mirror,
  and the head's ``ownerCount`` — ``- 1`` under ``ownerCount > 1`` when an OWNER is demoted, so
  two OWNERs demoting each other at once cannot both commit and one OWNER always remains;
* a removal deletes the member item and the mirror (so every later membership guard of that user
  fails) under the same conditions;
* an agent's call let through by an approval flips the approval APPROVED -> CONSUMED in the same
  transaction (``state = APPROVED`` and not expired), so it passes once.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ulid import ULID

from domain import clock, ids
from domain.store import db, keys, members
from domain.store.cas import Write
from domain.store.errors import StoreError
from domain.store.models import (
    ApprovalRow,
    GovernancePolicyRow,
    InvitationRow,
    MemberRow,
    MembershipMirrorRow,
    Row,
    UserRow,
    WorkspaceLogRow,
    WorkspaceRow,
)

POLICIES = ("ALLOW", "REQUIRE_APPROVAL", "DENY")
DEFAULT_POLICY = "REQUIRE_APPROVAL"
INVITATION_DAYS = 7
APPROVAL_HOURS = 24
DAY_MS = 86_400_000
HISTORY_DAYS = 90  # approval items expire from the table (ttl) this long after their expiry


class LastOwner(StoreError):
    """The change would leave the workspace without an OWNER."""


class StaleRole(StoreError):
    """The member's role is no longer the one the change was planned on; carries the stored member."""

    def __init__(self, member: MemberRow | None) -> None:
        super().__init__("role changed")
        self.member = member


class ApprovalSpent(StoreError):
    """The approval that let this call through was consumed, rejected or expired meanwhile."""


class InvitationClosed(StoreError):
    """The invitation is not pending (accepted, revoked), expired, or its link secret is not the current one."""


class AlreadyMember(StoreError):
    pass


def ulid() -> str:
    return str(ULID()).lower()


# -- workspace log -------------------------------------------------------------------------------
def log_row(
    workspace_id: str, type_: str, summary: str, *, actor_id: str, source: str, data: dict[str, Any] | None = None
) -> WorkspaceLogRow:
    at = clock.now_iso()
    uid = ulid()
    return WorkspaceLogRow(
        *keys.workspace_log(workspace_id, at, uid),
        entryId=f"wl_{uid}",
        workspaceId=workspace_id,
        type=type_,
        source=source,
        actorId=actor_id,
        at=at,
        summary=summary,
        data=data,
    )


def history(workspace_id: str, limit: int = 50) -> list[WorkspaceLogRow]:
    """The newest ``limit`` entries of the workspace log (one Query)."""
    rows = WorkspaceLogRow.query(
        keys.workspace_log_partition(workspace_id), scan_index_forward=False, limit=limit, consistent_read=True
    )
    return [r for r in rows if isinstance(r, WorkspaceLogRow)][:limit]


def history_entries(workspace_id: str, limit: int = 50) -> list[dict[str, Any]]:
    """:func:`history` as plain dicts (no keys, no discriminator), newest first, for printing."""
    from domain.store.models import plain

    return [plain(row) for row in history(workspace_id, limit)]


# -- policy --------------------------------------------------------------------------------------
def policy_of(row: Any, pack: str) -> str:
    if isinstance(row, GovernancePolicyRow):
        value = (row.policies or {}).get(pack)
        if isinstance(value, str) and value in POLICIES:
            return value
    return DEFAULT_POLICY


def get_policy(workspace_id: str) -> GovernancePolicyRow | None:
    try:
        return GovernancePolicyRow.get(*keys.governance_policy(workspace_id), consistent_read=True)
    except GovernancePolicyRow.DoesNotExist:
        return None


def set_policy(workspace_id: str, pack: str, policy: str, *, actor_id: str, source: str) -> None:
    """Set ``pack``'s policy (one transaction, with the caller's OWNER role as a condition)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; use {', '.join(POLICIES)}")
    current = get_policy(workspace_id)
    policies = dict(current.policies or {}) if current else {}
    policies[pack] = policy
    row = GovernancePolicyRow(
        *keys.governance_policy(workspace_id), policies=policies, updatedAt=clock.now_iso(), updatedBy=actor_id
    )
    log = log_row(
        workspace_id,
        "governance.policy_set",
        f"{pack} policy set to {policy}",
        actor_id=actor_id,
        source=source,
        data={"pack": pack, "policy": policy},
    )

    def build(tx: Any) -> None:
        tx.save(row)
        role_guard(tx, workspace_id, actor_id, ("OWNER",))
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed:
        raise db.Missing(workspace_id) from None


def role_guard(tx: Any, workspace_id: str, user_id: str, roles: tuple[str, ...]) -> None:
    """ConditionCheck that ``user_id`` is still a member holding one of ``roles`` at commit."""
    tx.condition_check(MemberRow, *keys.member(workspace_id, user_id), condition=MemberRow.role.is_in(*roles))


# -- owner count ---------------------------------------------------------------------------------
def owner_count(head: WorkspaceRow) -> int:
    """The head's ``ownerCount``; a head written before the counter existed is counted once from
    its members (one Query) and the count stored under ``attribute_not_exists``."""
    if head.ownerCount is not None:
        return int(head.ownerCount)
    count = sum(1 for m in members.list_members(head.workspaceId) if m.role == "OWNER")
    try:
        head.update(actions=[WorkspaceRow.ownerCount.set(count)], condition=WorkspaceRow.ownerCount.does_not_exist())
    except Exception:  # noqa: BLE001 - another writer initialised it first; read it back
        stored = WorkspaceRow.get(head.PK, head.SK, consistent_read=True)
        return int(stored.ownerCount or 0)
    return count


def _owner_delta(tx: Any, workspace_id: str, delta: int) -> None:
    head = WorkspaceRow(*keys.workspace_head(workspace_id))
    if delta < 0:
        tx.update(head, actions=[WorkspaceRow.ownerCount.add(-1)], condition=WorkspaceRow.ownerCount > 1)
    elif delta > 0:
        tx.update(head, actions=[WorkspaceRow.ownerCount.add(1)], condition=Row.PK.exists())


# -- member changes ------------------------------------------------------------------------------
Extra = Callable[[Any], None]


def _member_failed(
    failure: db.ConditionFailed, workspace_id: str, user_id: str, actor_id: str, approval_key: tuple[str, str] | None
) -> Exception:
    if approval_key is not None and failure.hit(*approval_key):
        return ApprovalSpent()
    if failure.hit(*keys.member(workspace_id, user_id)):
        stored = failure.item(*keys.member(workspace_id, user_id))
        return StaleRole(MemberRow.from_raw_data(stored) if stored else None)
    if failure.hit(*keys.workspace_head(workspace_id)):
        return LastOwner()
    return db.Missing(workspace_id)  # the caller's role guard (or anything else): the caller lost the role


def _replan(
    ws: str, uid: str, actor_id: str, approval_key: tuple[str, str] | None
) -> Callable[[db.ConditionFailed], MemberRow]:
    """The retry of a member change: a role that moved plans again on the stored member
    (``ALL_OLD``); every other failure (member gone, last OWNER, approval spent, caller left)
    is raised as the store error :func:`_member_failed` names."""

    def retry(failure: db.ConditionFailed) -> MemberRow:
        exc = _member_failed(failure, ws, uid, actor_id, approval_key)
        if isinstance(exc, StaleRole) and exc.member is not None:
            return exc.member
        raise exc

    return retry


def set_role(
    current: MemberRow,
    role: str,
    *,
    actor_id: str,
    actor_roles: tuple[str, ...],
    log: WorkspaceLogRow,
    extra: Extra | None = None,
    approval_key: tuple[str, str] | None = None,
) -> Write[MemberRow, MemberRow]:
    """The role change of ``current`` (planned on the role read) for
    :func:`domain.store.cas.compare_and_set`; its result is the member as written.

    Raises (from the retry):
        StaleRole: the member left (``.member`` is None). LastOwner: the member is the last
        OWNER. ApprovalSpent. Missing: the caller left.
    """
    ws, uid = current.workspaceId, current.userId
    stamp = clock.next_stamp(current.updatedAt)
    delta = (1 if role == "OWNER" else 0) - (1 if current.role == "OWNER" else 0)

    def build(tx: Any) -> None:
        members.forget(ws, uid)  # (and again once written: a read in between may have kept the old role)
        tx.update(
            MemberRow(*keys.member(ws, uid)),
            actions=[MemberRow.role.set(role), MemberRow.updatedAt.set(stamp)],
            condition=MemberRow.role == current.role,
            return_values="ALL_OLD",
        )
        if uid != actor_id:
            role_guard(tx, ws, actor_id, actor_roles)
        tx.update(MembershipMirrorRow(*keys.membership_mirror(uid, ws)), actions=[MembershipMirrorRow.role.set(role)])
        if delta:
            _owner_delta(tx, ws, delta)
        tx.save(log)
        if extra:
            extra(tx)

    def written() -> MemberRow:
        members.forget(ws, uid)
        current.role, current.updatedAt = role, stamp
        return current

    return Write(build=build, result=written, retry=_replan(ws, uid, actor_id, approval_key))


def remove(
    current: MemberRow,
    *,
    actor_id: str,
    actor_roles: tuple[str, ...],
    log: WorkspaceLogRow,
    extra: Extra | None = None,
    approval_key: tuple[str, str] | None = None,
) -> Write[MemberRow, MemberRow]:
    """Deleting the member item and the user's membership mirror in one transaction, for
    :func:`domain.store.cas.compare_and_set`; its result is the member as it was.

    Raises: as :func:`set_role`.
    """
    ws, uid = current.workspaceId, current.userId

    def build(tx: Any) -> None:
        members.forget(ws, uid)
        tx.delete(MemberRow(*keys.member(ws, uid)), condition=MemberRow.role == current.role)
        role_guard(tx, ws, actor_id, actor_roles)
        tx.delete(MembershipMirrorRow(*keys.membership_mirror(uid, ws)))
        if current.role == "OWNER":
            _owner_delta(tx, ws, -1)
        tx.save(log)
        if extra:
            extra(tx)

    def removed() -> MemberRow:
        members.forget(ws, uid)
        return current

    return Write(build=build, result=removed, retry=_replan(ws, uid, actor_id, approval_key))


# -- invitations ---------------------------------------------------------------------------------
def new_invitation(workspace_id: str, email: str, role: str, invited_by: str) -> InvitationRow:
    uid = ulid()
    now = clock.now_ms()
    return InvitationRow(
        *keys.invitation(workspace_id, uid),
        invitationId=ids.new_invitation_id(workspace_id, uid),
        workspaceId=workspace_id,
        email=email,
        role=role,
        invitedBy=invited_by,
        state="PENDING",
        createdAt=clock.iso(now),
        expiresAt=clock.iso(now + INVITATION_DAYS * DAY_MS),
    )


def put_invitation(
    row: InvitationRow,
    *,
    actor_id: str,
    actor_roles: tuple[str, ...],
    log: WorkspaceLogRow,
    extra: Extra | None = None,
    approval_key: tuple[str, str] | None = None,
) -> None:
    def build(tx: Any) -> None:
        tx.save(row, condition=Row.PK.does_not_exist())
        role_guard(tx, row.workspaceId, actor_id, actor_roles)
        tx.save(log)
        if extra:
            extra(tx)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if approval_key is not None and failure.hit(*approval_key):
            raise ApprovalSpent() from None
        raise db.Missing(row.workspaceId) from None


def get_invitation(ref: ids.InvitationRef) -> InvitationRow | None:
    try:
        return InvitationRow.get(*keys.invitation(ref.workspace_id, ref.ulid), consistent_read=True)
    except InvitationRow.DoesNotExist:
        return None


def pending_invitations(workspace_id: str) -> list[InvitationRow]:
    """The workspace's pending, unexpired invitations, oldest first (one Query per 1 MB page)."""
    now = clock.now_iso()
    rows = InvitationRow.query(
        keys.workspace_partition(workspace_id),
        Row.SK.startswith(keys.INVITATIONS_PREFIX),
        filter_condition=(InvitationRow.state == "PENDING") & (InvitationRow.expiresAt > now),
        consistent_read=True,
    )
    return [r for r in rows if isinstance(r, InvitationRow)]


def revoke_invitation(row: InvitationRow, *, actor_id: str, log: WorkspaceLogRow) -> None:
    """PENDING -> REVOKED. Raises InvitationClosed when it was not pending; Missing when the caller left."""

    def build(tx: Any) -> None:
        tx.update(
            InvitationRow(row.PK, row.SK),
            actions=[InvitationRow.state.set("REVOKED"), InvitationRow.decidedAt.set(clock.now_iso())],
            condition=InvitationRow.state == "PENDING",
        )
        role_guard(tx, row.workspaceId, actor_id, ("ADMIN", "OWNER"))
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(row.PK, row.SK):
            raise InvitationClosed() from None
        raise db.Missing(row.workspaceId) from None


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def issue_link(row: InvitationRow, *, actor_id: str, actor_roles: tuple[str, ...], source: str) -> str:
    """A new link secret for a pending invitation: its digest replaces any earlier one (so an
    earlier link stops working); the secret itself is returned once and never stored.

    The secret is ``<invitationId>.<43 url-safe chars>``: accepting reads the invitation named in it.
    """
    secret = f"{row.invitationId}.{secrets.token_urlsafe(32)}"
    log = log_row(
        row.workspaceId,
        "invitation.link_issued",
        f"Link issued for the invitation of {row.email}",
        actor_id=actor_id,
        source=source,
        data={"invitationId": row.invitationId},
    )
    now = clock.now_iso()

    def build(tx: Any) -> None:
        tx.update(
            InvitationRow(row.PK, row.SK),
            actions=[InvitationRow.secretDigest.set(secret_digest(secret))],
            condition=(InvitationRow.state == "PENDING") & (InvitationRow.expiresAt > now),
        )
        role_guard(tx, row.workspaceId, actor_id, actor_roles)
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(row.PK, row.SK):
            raise InvitationClosed() from None
        raise db.Missing(row.workspaceId) from None
    return secret


def invitation_of_secret(secret: str) -> InvitationRow | None:
    inv_id = secret.split(".", 1)[0]
    ref = ids.parse_invitation(inv_id)
    return get_invitation(ref) if ref else None


def accept(secret: str, user: UserRow) -> tuple[InvitationRow, MemberRow]:
    """Make ``user`` a member with the invited role, consuming the invitation (one transaction).

    Raises:
        InvitationClosed: unknown, revoked, accepted, expired, or not the current link.
        AlreadyMember: the user already belongs to the workspace.
    """
    row = invitation_of_secret(secret)
    if row is None:
        raise InvitationClosed()
    now = clock.now_iso()
    member, mirror = members.rows_for(user, row.workspaceId, row.role, now)
    log = log_row(
        row.workspaceId,
        "member.joined",
        f"{user.email} joined as {row.role}",
        actor_id=user.userId,
        source="ui",
        data={"invitationId": row.invitationId, "role": row.role, "userId": user.userId},
    )

    def build(tx: Any) -> None:
        tx.update(
            InvitationRow(row.PK, row.SK),
            actions=[
                InvitationRow.state.set("ACCEPTED"),
                InvitationRow.decidedAt.set(now),
                InvitationRow.acceptedBy.set(user.userId),
            ],
            condition=(InvitationRow.state == "PENDING")
            & (InvitationRow.secretDigest == secret_digest(secret))
            & (InvitationRow.expiresAt > now),
        )
        tx.save(member, condition=Row.PK.does_not_exist())
        tx.save(mirror)
        if row.role == "OWNER":
            _owner_delta(tx, row.workspaceId, 1)
        else:
            tx.condition_check(WorkspaceRow, *keys.workspace_head(row.workspaceId), condition=Row.PK.exists())
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(member.PK, member.SK) and not failure.hit(row.PK, row.SK):
            raise AlreadyMember() from None
        raise InvitationClosed() from None
    row.state = "ACCEPTED"
    return row, member


# -- approvals -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """One governed call as an approval binds it."""

    workspace_id: str
    tool: str
    args_hash: str
    arguments: dict[str, Any]
    caller_id: str
    token_id: str

    @property
    def digest(self) -> str:
        raw = "|".join((self.workspace_id, self.tool, self.args_hash, self.caller_id, self.token_id))
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def matches(self, row: ApprovalRow) -> bool:
        return (row.tool, row.argsHash, row.callerId, row.tokenId, row.workspaceId) == (
            self.tool,
            self.args_hash,
            self.caller_id,
            self.token_id,
            self.workspace_id,
        )


def rounds(workspace_id: str, request: str) -> list[ApprovalRow]:
    """Every approval request of one call (the same digest), newest first (one Query)."""
    rows = ApprovalRow.query(
        keys.workspace_partition(workspace_id),
        Row.SK.startswith(keys.approvals_of_request(request)),
        scan_index_forward=False,
        limit=10,
        consistent_read=True,
    )
    return [r for r in rows if isinstance(r, ApprovalRow)]


def live(row: ApprovalRow) -> bool:
    return row.expiresAt > clock.now_iso()


def park(req: Request, summary: str) -> ApprovalRow:
    """Write a new PENDING approval request for ``req`` (one PutItem under attribute_not_exists)."""
    uid = ulid()
    now = clock.now_ms()
    expires = now + APPROVAL_HOURS * 3_600_000
    row = ApprovalRow(
        *keys.approval(req.workspace_id, req.digest, uid),
        approvalId=ids.new_approval_id(req.workspace_id, req.digest, uid),
        workspaceId=req.workspace_id,
        tool=req.tool,
        argsHash=req.args_hash,
        arguments=req.arguments,
        summary=summary,
        callerId=req.caller_id,
        tokenId=req.token_id,
        state="PENDING",
        createdAt=clock.iso(now),
        expiresAt=clock.iso(expires),
        ttl=(expires + HISTORY_DAYS * DAY_MS) // 1000,
    )
    row.save(condition=Row.PK.does_not_exist())
    return row


def consume(row: ApprovalRow) -> Extra:
    """The transaction action that spends ``row``: APPROVED -> CONSUMED while unexpired."""
    now = clock.now_iso()

    def add(tx: Any) -> None:
        tx.update(
            ApprovalRow(row.PK, row.SK),
            actions=[ApprovalRow.state.set("CONSUMED"), ApprovalRow.consumedAt.set(now)],
            condition=(ApprovalRow.state == "APPROVED") & (ApprovalRow.expiresAt > now),
        )

    return add


def get_approval(ref: ids.ApprovalRef) -> ApprovalRow | None:
    try:
        return ApprovalRow.get(*keys.approval(ref.workspace_id, ref.request, ref.ulid), consistent_read=True)
    except ApprovalRow.DoesNotExist:
        return None


def approvals(workspace_id: str, *, pending_only: bool = True) -> list[ApprovalRow]:
    """The workspace's approval requests (pending and unexpired by default), newest first (one Query per page)."""
    filt = None
    if pending_only:
        filt = (ApprovalRow.state == "PENDING") & (ApprovalRow.expiresAt > clock.now_iso())
    rows = ApprovalRow.query(
        keys.workspace_partition(workspace_id),
        Row.SK.startswith(keys.APPROVALS_PREFIX),
        filter_condition=filt,
        consistent_read=True,
    )
    return sorted((r for r in rows if isinstance(r, ApprovalRow)), key=lambda r: r.createdAt, reverse=True)


class NotPending(StoreError):
    pass


def decide(row: ApprovalRow, decision: str, *, actor_id: str, actor_roles: tuple[str, ...]) -> None:
    """PENDING -> APPROVED | REJECTED by a human member with the needed role, logged in the same transaction.

    Raises: NotPending (decided, consumed or expired); Missing (the human lost the role or left).
    """
    assert decision in ("APPROVED", "REJECTED")
    now = clock.now_iso()
    verb = "approved" if decision == "APPROVED" else "rejected"
    log = log_row(
        row.workspaceId,
        f"approval.{verb}",
        f"{row.tool} {verb}: {row.summary}",
        actor_id=actor_id,
        source="ui",
        data={"approvalId": row.approvalId, "tool": row.tool, "callerId": row.callerId},
    )

    def build(tx: Any) -> None:
        tx.update(
            ApprovalRow(row.PK, row.SK),
            actions=[
                ApprovalRow.state.set(decision),
                ApprovalRow.decidedBy.set(actor_id),
                ApprovalRow.decidedAt.set(now),
            ],
            condition=(ApprovalRow.state == "PENDING") & (ApprovalRow.expiresAt > now),
        )
        role_guard(tx, row.workspaceId, actor_id, actor_roles)
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(row.PK, row.SK):
            raise NotPending() from None
        raise db.Missing(row.workspaceId) from None
