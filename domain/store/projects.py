"""Project items: the head in its workspace's partition, a per-workspace slug claim, and link
edges in the project's own partition (docs/data-model.md, "Workspace settings, projects and
repositories").

Keys: :func:`domain.store.keys.project`, :func:`~domain.store.keys.project_slug_claim`,
:func:`~domain.store.keys.project_link`; REPO links carry GSI2 ``keys.repo_link_index`` and
the workspace head's ``repoLinkCount``, so :func:`for_repo` answers by repository with one
Query. Every write is one transaction with the membership guard.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from domain import clock, ids
from domain.store import db, keys, members, parallel
from domain.store.board_entry import entry_key
from domain.store.cas import Write
from domain.store.errors import StoreError
from domain.store.idempotency_markers import Earlier, earlier_entity, put_marker
from domain.store.models import (
    BoardEntryRow,
    CreationMarkerRow,
    MemberRow,
    ProjectLinkRow,
    ProjectRow,
    ProjectSlugRow,
    Row,
    TaskDetailRow,
    WorkspaceRow,
)

MAX_LINKS = 200
MAX_DEPTH = 10


class SlugTaken(StoreError):
    def __init__(self, project_id: str | None) -> None:
        super().__init__(project_id)
        self.project_id = project_id


class ParentGone(StoreError):
    """The parent project vanished (or moved) between the read and the write."""


class OwnerGone(StoreError):
    """The owner is no longer a member of the workspace."""


class TooManyLinks(StoreError):
    pass


def get(workspace_id: str, project_id: str) -> ProjectRow | None:
    try:
        return ProjectRow.get(*keys.project(workspace_id, project_id), consistent_read=True)
    except ProjectRow.DoesNotExist:
        return None


def new_row(workspace_id: str, project_id: str, **fields: Any) -> ProjectRow:
    """A new project head (not written: :func:`create` puts it), ``fields`` its attributes."""
    return ProjectRow(*keys.project(workspace_id, project_id), projectId=project_id, workspaceId=workspace_id, **fields)


def copy(head: ProjectRow) -> ProjectRow:
    """A detached copy of a project head (the state an edit leaves, before it is written)."""
    return ProjectRow.from_raw_data(head.serialize())


def new_link(
    workspace_id: str, project_id: str, target_type: str, target_id: str, *, created_by: str
) -> ProjectLinkRow:
    """A new link of the project (not written: :func:`add_link` puts it), stamped now; a REPO
    link carries its repository index (GSI2)."""
    row = ProjectLinkRow(
        *keys.project_link(project_id, target_type, target_id),
        projectId=project_id,
        workspaceId=workspace_id,
        targetType=target_type,
        targetId=target_id,
        createdBy=created_by,
        createdAt=clock.now_iso(),
    )
    if target_type == "REPO":
        row.GSI2PK, row.GSI2SK = keys.repo_link_index(target_id, workspace_id, project_id)
    return row


def link(project_id: str, target_type: str, target_id: str) -> ProjectLinkRow | None:
    """One link of the project as stored (consistent GetItem), or ``None``."""
    try:
        return ProjectLinkRow.get(*keys.project_link(project_id, target_type, target_id), consistent_read=True)
    except ProjectLinkRow.DoesNotExist:
        return None


def links(project_id: str) -> list[ProjectLinkRow]:
    """The project's links (one Query per MB; a project holds at most 200)."""
    pk = keys.project_link_partition(project_id)
    return [
        r
        for r in ProjectLinkRow.query(pk, Row.SK.startswith(keys.PROJECT_LINKS_PREFIX), consistent_read=True)
        if isinstance(r, ProjectLinkRow)
    ]


def link_copy(link: ProjectLinkRow) -> str:
    """The head's compact copy of one link (an element of ``ProjectRow.linkCopies``): a JSON
    array ``[targetType, targetId, createdAt, createdBy]``. Every part is fixed when the link is
    made, so the removal names the same string the addition stored."""
    return json.dumps([link.targetType, link.targetId, link.createdAt, link.createdBy], separators=(",", ":"))


def copied_links(head: ProjectRow) -> list[ProjectLinkRow] | None:
    """The head's links from its copies, or None when the copies cannot be trusted.

    Every link write adds or removes its copy in the transaction that moves ``linkCount``, so
    for a head made since the copies exist their number equals ``linkCount``. A head with links
    from before holds fewer (or, for a moment after a backfill raced a removal, more): None,
    and the caller reads :func:`links`. Why equal sizes mean equal sets: copies are added only
    by additions (each its own link, a backfill the links a Query saw) and removed by removals,
    so before a head's first backfill its copies are a subset of its links and after it a
    superset (a backfill may re-add a link removed since its Query). Rows built here carry no
    keys (views only)."""
    copies = head.linkCopies or set()
    if len(copies) != int(head.linkCount or 0):
        return None
    out: list[ProjectLinkRow] = []
    for copy in copies:
        target_type, target_id, created_at, created_by = json.loads(copy)
        out.append(
            ProjectLinkRow(
                projectId=head.projectId,
                workspaceId=head.workspaceId,
                targetType=target_type,
                targetId=target_id,
                createdAt=created_at,
                createdBy=created_by,
            )
        )
    return out


def in_workspace(workspace_id: str) -> list[ProjectRow]:
    """Every project head of the workspace, in id order (one Query per MB)."""
    pk = keys.workspace_partition(workspace_id)
    return [
        r
        for r in ProjectRow.query(pk, Row.SK.startswith(keys.PROJECTS_PREFIX), consistent_read=True)
        if isinstance(r, ProjectRow)
    ]


def _failed(failure: db.ConditionFailed, ws: str, actor_id: str, owner_id: str | None) -> Exception:
    if members.guard_failed(failure, ws, actor_id):
        return db.Missing(ws)
    if owner_id and failure.hit(*keys.member(ws, owner_id)):
        return OwnerGone(owner_id)
    return ParentGone()


def create(row: ProjectRow, *, actor_id: str, marker: CreationMarkerRow | None) -> None:
    """Put the project with its slug claim (and the parent's ``childCount`` + 1), in one transaction.

    Raises:
        SlugTaken: another project of the workspace holds the slug. ParentGone. OwnerGone.
        Missing: the caller left the workspace. Earlier (idempotency_markers): a keyed create
        committed before (its project id).
    """
    if marker is not None:
        marker.entityId = row.projectId
    claim = ProjectSlugRow(*keys.project_slug_claim(row.workspaceId, row.slug), projectId=row.projectId)

    def build(tx: Any) -> None:
        put_marker(tx, marker)
        tx.save(row, condition=Row.PK.does_not_exist())
        tx.save(claim, condition=Row.PK.does_not_exist(), return_values="ALL_OLD")
        if row.parentId:
            tx.update(
                ProjectRow(*keys.project(row.workspaceId, row.parentId)),
                actions=[ProjectRow.childCount.add(1)],
                condition=Row.PK.exists(),
            )
        if row.ownerId and row.ownerId != actor_id:
            tx.condition_check(MemberRow, *keys.member(row.workspaceId, row.ownerId), condition=Row.PK.exists())
        members.guard(tx, row.workspaceId, actor_id)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        earlier = earlier_entity(failure, marker)
        if earlier:
            raise Earlier(earlier) from None
        if failure.hit(claim.PK, claim.SK):
            stored = failure.item(claim.PK, claim.SK) or {}
            raise SlugTaken(stored.get("projectId", {}).get("S")) from None
        raise _failed(failure, row.workspaceId, actor_id, row.ownerId if row.ownerId != actor_id else None) from None


def edit(
    row: ProjectRow, previous: ProjectRow, *, ancestors: list[ProjectRow], actor_id: str, result: Callable[[], Any]
) -> Write[ProjectRow, Any]:
    """One project edit for :func:`domain.store.cas.compare_and_set`: the head replaced under
    ``updatedAt = previous.updatedAt`` (``ALL_OLD``); a new parent moves ``childCount`` from the
    old parent to the new one, and every ancestor walked for the cycle check is checked to keep
    the ``parentId`` it was read with.
    """
    ws = row.workspaceId
    # a new owner other than the caller is checked to be a member at commit
    new_owner = row.ownerId if row.ownerId and row.ownerId not in (previous.ownerId, actor_id) else None

    def build(tx: Any) -> None:
        tx.save(row, condition=ProjectRow.updatedAt == previous.updatedAt, return_values="ALL_OLD")
        if row.parentId != previous.parentId:
            if previous.parentId:
                tx.update(
                    ProjectRow(*keys.project(ws, previous.parentId)),
                    actions=[ProjectRow.childCount.add(-1)],
                    condition=Row.PK.exists(),
                )
            if row.parentId:
                tx.update(
                    ProjectRow(*keys.project(ws, row.parentId)),
                    actions=[ProjectRow.childCount.add(1)],
                    condition=Row.PK.exists()
                    & _same_parent(next((a for a in ancestors if a.projectId == row.parentId), None)),
                )
            for a in ancestors:
                if a.projectId != row.parentId:
                    tx.condition_check(
                        ProjectRow, *keys.project(ws, a.projectId), condition=Row.PK.exists() & _same_parent(a)
                    )
        if new_owner:  # (the caller's own member item is the guard's: one action per item)
            tx.condition_check(MemberRow, *keys.member(ws, new_owner), condition=Row.PK.exists())
        members.guard(tx, ws, actor_id)

    def retry(failure: db.ConditionFailed) -> ProjectRow:
        if failure.hit(row.PK, row.SK):
            stored = failure.item(row.PK, row.SK)
            if not stored:
                raise db.Missing(row.projectId)
            return ProjectRow.from_raw_data(stored)
        raise _failed(failure, ws, actor_id, new_owner)

    return Write(build=build, result=result, retry=retry)


def _same_parent(a: ProjectRow | None) -> Any:
    if a is None or not a.parentId:
        return ProjectRow.parentId.does_not_exist()
    return ProjectRow.parentId == a.parentId


def ancestors(workspace_id: str, start: str) -> tuple[list[ProjectRow], bool]:
    """The chain ``start``, its parent, … (one GetItem per level, at most ``MAX_DEPTH`` + 1);
    the bool is False when the chain is longer than that."""
    chain: list[ProjectRow] = []
    current: str | None = start
    while current:
        if len(chain) > MAX_DEPTH:
            return chain, False
        head = get(workspace_id, current)
        if head is None:
            break
        chain.append(head)
        current = head.parentId
    return chain, True


def add_link(
    link: ProjectLinkRow,
    *,
    actor_id: str,
    backfill: Iterable[ProjectLinkRow] = (),
) -> bool:
    """Put the link (must not exist), count it and add its copy to the head; False when it
    already existed (no-op). A BOARD or TASK link is conditioned on the board's entry or the task
    existing. ``backfill``: the project's other links, when the head's copies were found short
    (:func:`copied_links` None), added to the copies in the same transaction.

    Raises:
        TooManyLinks; db.Missing (the project, the target or the caller is gone).
    """
    ws = link.workspaceId
    copies = {link_copy(link), *(link_copy(other) for other in backfill)}
    counters = [
        ProjectRow.linkCount.add(1),
        ProjectRow.updatedAt.set(link.createdAt),
        ProjectRow.linkCopies.add(copies),
    ]
    if link.targetType == "DECISION":
        counters.append(ProjectRow.decisionCount.add(1))

    def build(tx: Any) -> None:
        tx.save(link, condition=Row.PK.does_not_exist(), return_values="ALL_OLD")
        tx.update(
            ProjectRow(*keys.project(ws, link.projectId)),
            actions=counters,
            condition=Row.PK.exists() & ((ProjectRow.linkCount < MAX_LINKS) | ProjectRow.linkCount.does_not_exist()),
        )
        if link.targetType == "REPO":
            tx.update(
                WorkspaceRow(*keys.workspace_head(ws)),
                actions=[WorkspaceRow.repoLinkCount.add(1)],
                condition=Row.PK.exists(),
            )
        _target_exists(tx, link.targetType, link.targetId)
        members.guard(tx, ws, actor_id)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(link.PK, link.SK):
            return False
        if members.guard_failed(failure, ws, actor_id):
            raise db.Missing(ws) from None
        if failure.hit(*keys.project(ws, link.projectId)):
            head = get(ws, link.projectId)
            if head is not None and int(head.linkCount or 0) >= MAX_LINKS:
                raise TooManyLinks() from None
        raise db.Missing("target") from None
    return True


def _target_exists(tx: Any, target_type: str, target_id: str) -> None:
    # A link to a board or task is written only while its target exists.
    if target_type == "BOARD":
        tx.condition_check(BoardEntryRow, *entry_key(target_id), condition=Row.PK.exists())
    elif target_type == "TASK" and (task := ids.parse_task(target_id)) is not None:
        tx.condition_check(TaskDetailRow, *keys.task_full(task.board_id, task.number), condition=Row.PK.exists())


def remove_link(link: ProjectLinkRow, *, actor_id: str, stamp: str) -> bool:
    """Delete the link, uncount it and take its copy off the head; False when it did not exist
    (no-op). Never a backfill here: copies are only ever added by additions, so a head's copies
    are a subset of its links until a backfill lands and a superset after (see
    :func:`copied_links`: equal sizes then mean equal sets)."""
    ws = link.workspaceId
    counters = [
        ProjectRow.linkCount.add(-1),
        ProjectRow.updatedAt.set(stamp),
        ProjectRow.linkCopies.delete({link_copy(link)}),
    ]
    if link.targetType == "DECISION":
        counters.append(ProjectRow.decisionCount.add(-1))

    def build(tx: Any) -> None:
        tx.delete(ProjectLinkRow(link.PK, link.SK), condition=Row.PK.exists())
        tx.update(ProjectRow(*keys.project(ws, link.projectId)), actions=counters, condition=Row.PK.exists())
        if link.targetType == "REPO":
            tx.update(
                WorkspaceRow(*keys.workspace_head(ws)),
                actions=[WorkspaceRow.repoLinkCount.add(-1)],
                condition=Row.PK.exists(),
            )
        members.guard(tx, ws, actor_id)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if failure.hit(link.PK, link.SK):
            return False
        raise db.Missing(ws) from None
    return True


# -- the repository lookup ---------------------------------------------------------------------
def lookup(user_id: str, repo: str) -> tuple[list[tuple[ProjectRow, str]], dict[str, str]]:
    """The live projects of ``user_id``'s workspaces that ``repo`` (lowercase ``owner/name``)
    names, and the names of their workspaces.

    ``(project, "link")`` for a project linking the repository; ``(project, "default")`` for
    every live project of a workspace whose ``defaultRepo`` is the repository while none of its
    projects links one. Cost: the user's memberships Query in parallel with one GSI2 Query
    ``REPO#<repo>``; one BatchGetItem of the matched project and workspace heads; one Query per
    default-matched workspace (in parallel). It grows with the caller's matches, never with the
    number of workspaces or projects in the table. Shared by resolve_projects_for_repo and the
    stdio binding from a checkout.
    """
    mine = parallel.submit(members.memberships, user_id)
    hits = list(Row.gsi2.query(keys.repo_partition(repo)))
    spaces = {m.workspaceId for m in mine.result()}
    linked = list(
        dict.fromkeys(
            (h.workspaceId, h.projectId) for h in hits if isinstance(h, ProjectLinkRow) and h.workspaceId in spaces
        )
    )
    matched = list(
        dict.fromkeys(
            [ws for ws, _ in linked]
            + [h.workspaceId for h in hits if isinstance(h, WorkspaceRow) and h.workspaceId in spaces]
        )
    )
    if not matched:
        return [], {}
    wanted = [keys.project(ws, pj) for ws, pj in linked] + [keys.workspace_head(ws) for ws in matched]
    rows = list(Row.batch_get(wanted, consistent_read=True))
    heads = {r.workspaceId: r for r in rows if isinstance(r, WorkspaceRow)}
    out: list[tuple[ProjectRow, str]] = [
        (r, "link") for r in rows if isinstance(r, ProjectRow) and r.status != "ARCHIVED"
    ]
    fallback = [ws for ws, h in heads.items() if h.defaultRepo == repo and not int(h.repoLinkCount or 0)]
    futures = [parallel.submit(in_workspace, ws) for ws in fallback]
    seen = {p.projectId for p, _ in out}
    for fut in futures:
        for p in fut.result():
            if p.status != "ARCHIVED" and p.projectId not in seen:
                out.append((p, "default"))
    return out, {ws: h.name for ws, h in heads.items()}
