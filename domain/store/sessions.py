"""Agent session items: the head in the workspace's session partition, the alignment intervals in
the session's own partition, and the provider binding claims (docs/data-model.md, "Agent sessions").

Keys: :func:`domain.store.keys.session`, :func:`~domain.store.keys.session_alignment`,
:func:`~domain.store.keys.session_binding_claim`. Every write is one transaction with the
membership guard. The two gates a session lives by are conditions of its transactions, not
reads alone:

* **the repository gate** (create and attach-create): a ConditionCheck that the project's REPO
  link to the checkout's repository exists, or — when the workspace has no REPO link at all —
  that the workspace head's ``defaultRepo`` is the repository and ``repoLinkCount`` is 0/absent;
  plus a ConditionCheck that the project exists and is not ARCHIVED;
* **one open session per provider thread**: the claim item keyed by provider + thread id is
  put under ``attribute_not_exists(PK) OR open = false`` (``ALL_OLD``), so of two binders racing
  for one thread exactly one commits, and the loser gets the winner's claim back with no read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain import ids
from domain.store import db, keys, members
from domain.store.cas import Write
from domain.store.errors import StoreError
from domain.store.idempotency_markers import Earlier, earlier_entity, put_marker
from domain.store.models import (
    CreationMarkerRow,
    MemberRow,
    ProjectLinkRow,
    ProjectRow,
    Row,
    SessionAlignmentRow,
    SessionClaimRow,
    SessionRow,
    TaskDetailRow,
    WorkspaceRow,
)

OPEN = ("STARTING", "ACTIVE")  # statuses that take alignments and a completion
CLOSED = ("COMPLETED", "CANCELLED")  # outcomes that release the provider thread
MAX_ALIGNMENTS = 200  # intervals per session; a longer piece of work is a new session (continuesSessionId)


class ThreadBound(StoreError):
    """The provider thread's claim names another open session (the stored claim, raw or typed)."""

    def __init__(self, claim: SessionClaimRow | None) -> None:
        super().__init__(claim.sessionId if claim else None)
        self.claim = claim


class GateClosed(StoreError):
    """The project is gone or archived, or the repository gate no longer holds, at commit time."""


class TaskGone(StoreError):
    """The task an alignment names was archived or removed before the alignment committed."""


class OwnerGone(StoreError):
    """The owner an alignment names left the workspace before the alignment committed."""


@dataclass(frozen=True)
class Gate:
    """What a session's repository gate judges, as read: the project head, the project's REPO
    link to the repository, the workspace head (``defaultRepo``, ``repoLinkCount``); ``None``
    for an absent item."""

    project: ProjectRow | None
    link: ProjectLinkRow | None
    workspace: WorkspaceRow | None


def read_gate(workspace_id: str, project_id: str, repo: str) -> Gate:
    """The gate's three items in one consistent BatchGetItem: for a repository known only after
    the access read (the connection's bound checkout, or the session's own repository)."""
    wanted = [
        keys.project(workspace_id, project_id),
        keys.project_link(project_id, "REPO", repo),
        keys.workspace_head(workspace_id),
    ]
    found = {(r.PK, r.SK): r for r in Row.batch_get(wanted, consistent_read=True)}
    project, link, head = (found.get(k) for k in wanted)
    return Gate(
        project if isinstance(project, ProjectRow) else None,
        link if isinstance(link, ProjectLinkRow) else None,
        head if isinstance(head, WorkspaceRow) else None,
    )


def new_row(session_id: str, workspace_id: str, **fields: Any) -> SessionRow:
    """A new session head (not written: :func:`create` puts it), ``fields`` its attributes."""
    ref = ids.parse_session(session_id)
    assert ref is not None
    return SessionRow(*keys.session(workspace_id, ref.ulid), sessionId=session_id, workspaceId=workspace_id, **fields)


def copy(row: SessionRow) -> SessionRow:
    """A detached copy of a session head (the state an edit leaves, before it is written)."""
    return SessionRow.from_raw_data(row.serialize())


def get(ref: ids.SessionRef) -> SessionRow | None:
    try:
        return SessionRow.get(*keys.session(ref.workspace_id, ref.ulid), consistent_read=True)
    except SessionRow.DoesNotExist:
        return None


def in_workspace(workspace_id: str) -> list[SessionRow]:
    """Every session head of the workspace, newest first (one Query per MB)."""
    pk = keys.session_partition(workspace_id)
    rows = SessionRow.query(pk, Row.SK.startswith(keys.SESSIONS_PREFIX), consistent_read=True, scan_index_forward=False)
    return [r for r in rows if isinstance(r, SessionRow)]


def alignments(session_id: str) -> list[SessionAlignmentRow]:
    """The session's alignment intervals, ordinal ascending (one Query; at most MAX_ALIGNMENTS)."""
    pk = keys.session_side_partition(session_id)
    rows = SessionAlignmentRow.query(pk, Row.SK.startswith(keys.SESSION_ALIGNMENTS_PREFIX), consistent_read=True)
    return [r for r in rows if isinstance(r, SessionAlignmentRow)]


def claim_of(provider: str, thread_id: str) -> SessionClaimRow | None:
    try:
        return SessionClaimRow.get(*keys.session_binding_claim(provider, thread_id), consistent_read=True)
    except SessionClaimRow.DoesNotExist:
        return None


def new_claim(row: SessionRow, at: str) -> SessionClaimRow:
    assert row.provider and row.providerThreadId
    return SessionClaimRow(
        *keys.session_binding_claim(row.provider, row.providerThreadId),
        provider=row.provider,
        threadId=row.providerThreadId,
        sessionId=row.sessionId,
        workspaceId=row.workspaceId,
        projectId=row.projectId,
        operatorId=row.operatorId,
        open=True,
        boundAt=at,
    )


def _put_claim(tx: Any, claim: SessionClaimRow) -> None:
    tx.save(claim, condition=Row.PK.does_not_exist() | (SessionClaimRow.open == False), return_values="ALL_OLD")  # noqa: E712


def _claim_failed(failure: db.ConditionFailed, claim: SessionClaimRow | None) -> ThreadBound | None:
    if claim is None or not failure.hit(claim.PK, claim.SK):
        return None
    stored = failure.item(claim.PK, claim.SK)
    return ThreadBound(SessionClaimRow.from_raw_data(stored) if stored else None)


def repo_gate(tx: Any, workspace_id: str, project_id: str, repo: str, *, by_link: bool) -> None:
    """The repository gate and the project check as ConditionChecks (see the module docstring)."""
    tx.condition_check(
        ProjectRow,
        *keys.project(workspace_id, project_id),
        condition=Row.PK.exists() & (ProjectRow.status != "ARCHIVED"),
    )
    if by_link:
        tx.condition_check(ProjectLinkRow, *keys.project_link(project_id, "REPO", repo), condition=Row.PK.exists())
    else:
        tx.condition_check(
            WorkspaceRow,
            *keys.workspace_head(workspace_id),
            condition=(WorkspaceRow.defaultRepo == repo)
            & (WorkspaceRow.repoLinkCount.does_not_exist() | (WorkspaceRow.repoLinkCount == 0)),
        )


def create(
    row: SessionRow,
    *,
    by_link: bool,
    actor_id: str,
    marker: CreationMarkerRow | None,
    claim: SessionClaimRow | None = None,
) -> None:
    """Put a new session (STARTING, or ACTIVE with its provider ``claim``) in one transaction.

    Raises:
        Earlier (idempotency_markers): the key made a session before (its id). ThreadBound: the thread is bound to an open
        session. GateClosed: the project or the repository gate changed. Missing: the caller
        left the workspace. IdempotencyMismatch.
    """
    if marker is not None:
        marker.entityId = row.sessionId

    def build(tx: Any) -> None:
        put_marker(tx, marker)
        tx.save(row, condition=Row.PK.does_not_exist())
        if claim is not None:
            _put_claim(tx, claim)
        repo_gate(tx, row.workspaceId, row.projectId, row.repository, by_link=by_link)
        members.guard(tx, row.workspaceId, actor_id)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        earlier = earlier_entity(failure, marker)
        if earlier:
            raise Earlier(earlier) from None
        bound = _claim_failed(failure, claim)
        if bound is not None:
            raise bound from None
        if members.guard_failed(failure, row.workspaceId, actor_id):
            raise db.Missing(row.workspaceId) from None
        raise GateClosed() from None


def edit(
    row: SessionRow,
    previous: SessionRow,
    *,
    actor_id: str,
    result: Callable[[], Any],
    extra: Callable[[Any], None] | None = None,
    claim: SessionClaimRow | None = None,
    failed: Callable[[db.ConditionFailed], Exception | None] | None = None,
) -> Write[SessionRow, Any]:
    """One session edit for :func:`domain.store.cas.compare_and_set`: the head replaced under
    ``updatedAt = previous.updatedAt`` (``ALL_OLD``), with ``extra`` actions (alignment rows,
    the claim release, the run summary, task and owner checks) and a new provider ``claim``.

    The retry plans again on the stored head the failure returned; a lost claim raises
    :class:`ThreadBound`; ``failed`` maps the extras' failures; the rest is Missing.
    """
    ws = row.workspaceId

    def build(tx: Any) -> None:
        tx.save(row, condition=SessionRow.updatedAt == previous.updatedAt, return_values="ALL_OLD")
        if claim is not None:
            _put_claim(tx, claim)
        if extra is not None:
            extra(tx)
        members.guard(tx, ws, actor_id)

    def retry(failure: db.ConditionFailed) -> SessionRow:
        if failure.hit(row.PK, row.SK):
            stored = failure.item(row.PK, row.SK)
            if not stored:
                raise db.Missing(row.sessionId)
            return SessionRow.from_raw_data(stored)
        bound = _claim_failed(failure, claim)
        if bound is not None:
            raise bound
        if members.guard_failed(failure, ws, actor_id):
            raise db.Missing(ws)
        mapped = failed(failure) if failed is not None else None
        raise mapped or db.Missing(row.sessionId)

    return Write(build=build, result=result, retry=retry)


def release_claim(tx: Any, row: SessionRow) -> None:
    """Mark the session's provider claim closed (a COMPLETED/CANCELLED session frees its thread)."""
    if row.provider and row.providerThreadId:
        tx.update(
            SessionClaimRow(*keys.session_binding_claim(row.provider, row.providerThreadId)),
            actions=[SessionClaimRow.open.set(False)],
            condition=SessionClaimRow.sessionId == row.sessionId,
        )


def align(
    row: SessionRow,
    previous: SessionRow,
    *,
    ordinal: int,
    snapshot: dict[str, Any],
    stamp: str,
    task: TaskDetailRow | None,
    owner_id: str,
    log: Any,
    actor_id: str,
    result: Callable[[], Any],
) -> Write[SessionRow, Any]:
    """An alignment as one :func:`edit`: the head (``row``, numbered ``ordinal``) with the new
    interval, the previous interval ended at ``stamp``, the task checked live (not archived),
    the owner checked a member (unless the actor), and the activity row ``log``.

    Raises (from the write): TaskGone, OwnerGone, and what :func:`edit` raises.
    """
    ws = row.workspaceId
    interval = SessionAlignmentRow(
        *keys.session_alignment(row.sessionId, ordinal),
        sessionId=row.sessionId,
        ordinal=ordinal,
        snapshot=snapshot,
        alignedBy=actor_id,
        startedAt=stamp,
    )
    owner_key = keys.member(ws, owner_id)

    def extra(tx: Any) -> None:
        tx.save(interval, condition=Row.PK.does_not_exist())
        if ordinal > 1:
            tx.update(
                SessionAlignmentRow(*keys.session_alignment(row.sessionId, ordinal - 1)),
                actions=[SessionAlignmentRow.endedAt.set(stamp)],
                condition=Row.PK.exists(),
            )
        if task is not None:
            tx.condition_check(
                TaskDetailRow, task.PK, task.SK, condition=Row.PK.exists() & TaskDetailRow.archivedAt.does_not_exist()
            )
        if owner_id != actor_id:
            tx.condition_check(MemberRow, *owner_key, condition=Row.PK.exists())
        tx.save(log)

    def failed(failure: db.ConditionFailed) -> Exception | None:
        if task is not None and failure.hit(task.PK, task.SK):
            return TaskGone(task.taskId)
        if failure.hit(*owner_key):
            return OwnerGone(owner_id)
        return None

    return edit(row, previous, actor_id=actor_id, extra=extra, failed=failed, result=result)
