"""Membership items: ``member`` (workspace side, authoritative) and ``membership mirror`` (user side).

Keys: :func:`domain.store.keys.member`, :func:`domain.store.keys.membership_mirror`. The member
item decides visibility and role; the mirror lets ``list_workspaces`` find a user's workspaces
with one Query. Both are written in the same transaction.
"""

from __future__ import annotations

from typing import Any

from domain import clock
from domain.store import db, keys, warm
from domain.store.models import MemberRow, MembershipMirrorRow, Row, UserRow


def get(workspace_id: str, user_id: str) -> MemberRow | None:
    """The member item (one consistent GetItem), or ``None``."""
    try:
        return MemberRow.get(*keys.member(workspace_id, user_id), consistent_read=True)
    except MemberRow.DoesNotExist:
        return None


def cached(workspace_id: str, user_id: str) -> MemberRow | None:
    """The member item a consistent read in this process returned at most
    ``JENTRIX_TOKEN_CACHE_SECONDS`` ago (:mod:`domain.store.warm`), else ``None``. For read
    tools only: a write reads the member item fresh and its transaction checks it again."""
    return warm.MEMBERS.get((workspace_id, user_id))


def remember(row: MemberRow) -> None:
    """Keep a member item just read consistently (see :func:`cached`)."""
    warm.MEMBERS.put((row.workspaceId, row.userId), row)


def forget(workspace_id: str, user_id: str) -> None:
    """Drop a cached member item: its role or existence is being changed by this process."""
    warm.MEMBERS.forget((workspace_id, user_id))


def list_members(workspace_id: str) -> list[MemberRow]:
    """Every member of a workspace (one Query per 1 MB page)."""
    pk = keys.workspace_partition(workspace_id)
    return [
        m
        for m in MemberRow.query(pk, Row.SK.startswith(keys.MEMBERS_PREFIX), consistent_read=True)
        if isinstance(m, MemberRow)
    ]


def memberships(user_id: str) -> list[MembershipMirrorRow]:
    """The user's side of each membership (one Query)."""
    pk = keys.user_partition(user_id)
    return [
        m
        for m in MembershipMirrorRow.query(pk, Row.SK.startswith(keys.MEMBERSHIPS_PREFIX), consistent_read=True)
        if isinstance(m, MembershipMirrorRow)
    ]


def guard(tx: Any, workspace_id: str, user_id: str) -> None:
    """ConditionCheck that ``user_id`` is still a member when the transaction commits."""
    tx.condition_check(MemberRow, *keys.member(workspace_id, user_id), condition=Row.PK.exists())


def guard_role(tx: Any, workspace_id: str, user_id: str, roles: tuple[str, ...]) -> None:
    """ConditionCheck that ``user_id`` is still a member holding one of ``roles`` at commit."""
    tx.condition_check(MemberRow, *keys.member(workspace_id, user_id), condition=MemberRow.role.is_in(*roles))


def guard_failed(failure: db.ConditionFailed, workspace_id: str, user_id: str) -> bool:
    return failure.hit(*keys.member(workspace_id, user_id))


def rows_for(user: UserRow, workspace_id: str, role: str, now: str) -> tuple[MemberRow, MembershipMirrorRow]:
    """The two items of a membership, ready to put in a transaction."""
    member = MemberRow(
        *keys.member(workspace_id, user.userId),
        workspaceId=workspace_id,
        userId=user.userId,
        role=role,
        email=user.email,
        displayName=user.displayName,
        joinedAt=now,
        updatedAt=now,
    )
    mirror = MembershipMirrorRow(
        *keys.membership_mirror(user.userId, workspace_id), workspaceId=workspace_id, role=role
    )
    return member, mirror


def add(workspace_id: str, user: UserRow, role: str) -> MemberRow:
    """Make ``user`` a member of ``workspace_id`` with ``role`` (one transaction; the workspace must exist).

    Raises:
        db.ConditionFailed: the workspace does not exist, or the user is already a member.
    """
    from domain.store.models import WorkspaceRow

    member, mirror = rows_for(user, workspace_id, role, clock.now_iso())

    def build(tx: Any, counted: bool) -> None:
        head = keys.workspace_head(workspace_id)
        if counted:  # an OWNER is counted on the head (WorkspaceRow.ownerCount)
            tx.update(
                WorkspaceRow(*head),
                actions=[WorkspaceRow.ownerCount.add(1)],
                condition=WorkspaceRow.ownerCount.exists(),
            )
        else:
            tx.condition_check(WorkspaceRow, *head, condition=Row.PK.exists())
        tx.save(member, condition=Row.PK.does_not_exist())
        tx.save(mirror)

    if role != "OWNER":
        db.transact(lambda tx: build(tx, False))
        return member
    try:
        db.transact(lambda tx: build(tx, True))
    except db.ConditionFailed as failure:
        if failure.hit(member.PK, member.SK) or not failure.hit(*keys.workspace_head(workspace_id)):
            raise
        # a head written before ownerCount existed: governance.owner_count counts it when needed
        db.transact(lambda tx: build(tx, False))
    return member
