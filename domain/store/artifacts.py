"""Artifact items: a workspace's typed records (PR, diff, log, plan, findings, trace part …).

Keys (docs/data-model.md, "Uploads and artifacts"):

* head ``ART#<ws> / A#<ulid>`` (:func:`keys.artifact`): the record without its text body;
  list_artifacts without a link filter is one Query of the workspace's heads;
* body ``ART#<ws> / B#<ulid>`` (:func:`keys.artifact_body`): the redacted text, apart from the
  head so lists never carry it (get_artifact reads both with the membership);
* one copy of the head per link ``ARTL#<ws>#<link>#<id> / A#<ulid>`` (:func:`keys.artifact_link`):
  the artifacts of one task, project, session, run, decision or work order are one Query of
  the base table (consistent: :func:`for_session` sees an artifact the moment it committed).

All of an artifact's items are written in one transaction (:func:`put_actions` adds them to the
caller's, so ``complete_agent_session`` stores its RUN_SUMMARY with the session's own write) and
withdrawn together (:func:`withdraw`: head and copies become a tombstone, the body is deleted).
Bodies handed to this module are already redacted: the store never sees a raw secret.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from domain import ids
from domain.store import db, keys, members, search_marks
from domain.store.models import ArtifactBodyRow, ArtifactLinkRow, ArtifactRow, Row, _ArtifactFields

# (link name on the copy's key, attribute / argument name)
LINKS: tuple[tuple[str, str], ...] = (
    ("task", "taskId"),
    ("project", "projectId"),
    ("session", "sessionId"),
    ("run", "runId"),
    ("decision", "decisionId"),
    ("workOrder", "workOrderId"),
)
# The written kinds: their text is always stored in the body (and searched). Sorted; the one list
# the tools' argument enums are made from (a Literal, so the tools' argument types are checked).
TextKind = Literal[
    "DECISION",
    "DELIVERABLE",
    "DIFF",
    "FINDINGS",
    "GOAL",
    "LEARNING",
    "PLAN",
    "PRD",
    "PROMPT",
    "REPORT",
]
TEXT_KIND_NAMES: tuple[str, ...] = get_args(TextKind)
TEXT_KINDS: frozenset[str] = frozenset(TEXT_KIND_NAMES)
# The head attributes a link copy repeats (every field of the head).
_FIELDS = tuple(
    name
    for name in _ArtifactFields.get_attributes()
    if name not in {"PK", "SK", "kind", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "ttl"}
)

ArtifactRowType = _ArtifactFields  # a head or a link copy: the same attributes
_withdraw_hooks: list[Callable[[ArtifactRow], None]] = []


def on_withdraw(callback: Callable[[ArtifactRow], None]) -> None:
    """Run ``callback(tombstone)`` after every withdrawal commits (:func:`withdraw`).

    The hook for what lives outside the artifact's own items. (The search index needs none: the
    withdrawal's own transaction carries its "gone" pending marker, so the postings are deleted
    after the commit or, after a crash, by the repair paths; docs/search.md.) Callbacks run in registration order; one that raises is logged by the caller and
    does not undo the tombstone (a re-run of the hook must be safe).
    """
    _withdraw_hooks.append(callback)


@dataclass
class ArtifactRecord:
    """A new artifact, ready to be stored (``body`` already redacted; ``redactions`` its rule ids)."""

    artifact_id: str
    workspace_id: str
    type: str
    title: str
    storage: str  # INLINE | EXTERNAL_URL | S3_OBJECT
    created_by: str
    created_by_name: str
    created_at: str
    url: str | None = None
    object_key: str | None = None
    file_name: str | None = None
    content_type: str | None = None
    size: int | None = None
    sha256: str | None = None
    body: str | None = None
    redactions: tuple[str, ...] = ()
    links: dict[str, str] = field(default_factory=dict)  # argument name (taskId …) -> id
    trace_part: str | None = None
    grant_id: str | None = None

    @property
    def ulid(self) -> str:
        ref = ids.parse_artifact(self.artifact_id)
        assert ref is not None, self.artifact_id
        return ref.ulid


def searchable(row: Any) -> bool:
    """Whether an artifact's body is meant for search_artifacts (a live text kind; TRACE never)."""
    return row.type in TEXT_KINDS and not row.withdrawnAt and bool(row.bodyChars)


def head_of(record: ArtifactRecord) -> ArtifactRow:
    values: dict[str, Any] = {
        "artifactId": record.artifact_id,
        "workspaceId": record.workspace_id,
        "type": record.type,
        "title": record.title,
        "storage": record.storage,
        "url": record.url,
        "objectKey": record.object_key,
        "fileName": record.file_name,
        "contentType": record.content_type,
        "size": record.size,
        "sha256": record.sha256,
        "bodyChars": len(record.body) if record.body is not None else None,
        "redactions": list(record.redactions),
        "tracePart": record.trace_part,
        "grantId": record.grant_id,
        "createdBy": record.created_by,
        "createdByName": record.created_by_name,
        "createdAt": record.created_at,
        "updatedAt": record.created_at,
    }
    for _, attr in LINKS:
        values[attr] = record.links.get(attr)
    return ArtifactRow(*keys.artifact(record.workspace_id, record.ulid), **values)


def _copies(head: _ArtifactFields) -> list[ArtifactLinkRow]:
    out = []
    ulid = head.SK[len(keys.ARTIFACTS_PREFIX) :]
    for link, attr in LINKS:
        value = getattr(head, attr)
        if value:
            copy = ArtifactLinkRow(
                *keys.artifact_link(head.workspaceId, link, value, ulid),
                link=link,
                **{n: getattr(head, n) for n in _FIELDS},
            )
            out.append(copy)
    return out


def put_actions(tx: Any, record: ArtifactRecord) -> ArtifactRow:
    """Add the artifact's items (head, body, one copy per link) to ``tx``; returns the head."""
    head = head_of(record)
    tx.save(head, condition=Row.PK.does_not_exist())
    for copy in _copies(head):
        tx.save(copy)
    if record.body is not None:
        tx.save(
            ArtifactBodyRow(
                *keys.artifact_body(record.workspace_id, record.ulid), artifactId=record.artifact_id, body=record.body
            )
        )
    if searchable(head):  # the search index's pending marker, in the same transaction (docs/search.md)
        search_marks.mark_artifact(
            tx, record.workspace_id, record.artifact_id, title=record.title, body=record.body or ""
        )
    return head


def create(
    record: ArtifactRecord, *, actor_id: str, extra: Callable[[Any], None] | None = None, activity: Any = None
) -> ArtifactRow:
    """Store a new artifact in one transaction with the membership guard, the caller's ``extra``
    actions (an upload grant's claim) and an activity row.

    Raises:
        db.Missing: the caller left the workspace. db.ConditionFailed: any other failed
            condition (the caller maps its own ``extra``; e.g. :func:`domain.uploads.claim_failed`).
    """
    made: list[ArtifactRow] = []

    def build(tx: Any) -> None:
        made[:] = [put_actions(tx, record)]
        if extra is not None:
            extra(tx)
        members.guard(tx, record.workspace_id, actor_id)
        if activity is not None:
            tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if members.guard_failed(failure, record.workspace_id, actor_id):
            raise db.Missing(record.workspace_id) from None
        raise
    return made[0]


def get(workspace_id: str, artifact_id: str) -> ArtifactRow | None:
    """The artifact's head (one consistent GetItem), or ``None``."""
    ref = ids.parse_artifact(artifact_id)
    if ref is None or ref.workspace_id != workspace_id:
        return None
    try:
        return ArtifactRow.get(*keys.artifact(workspace_id, ref.ulid), consistent_read=True)
    except ArtifactRow.DoesNotExist:
        return None


def body(workspace_id: str, artifact_id: str) -> str | None:
    """The redacted text body (one consistent GetItem); ``None`` when there is none or it was
    withdrawn. The accessor search_artifacts indexes from."""
    ref = ids.parse_artifact(artifact_id)
    if ref is None or ref.workspace_id != workspace_id:
        return None
    try:
        return ArtifactBodyRow.get(*keys.artifact_body(workspace_id, ref.ulid), consistent_read=True).body
    except ArtifactBodyRow.DoesNotExist:
        return None


def for_session(workspace_id: str, session_id: str) -> list[_ArtifactFields]:
    """Every artifact linked to a session, oldest first (one consistent Query per 1 MB)."""
    return [
        r for r in query(workspace_id, ("session", session_id), newest_first=False) if isinstance(r, ArtifactLinkRow)
    ]


def query(workspace_id: str, link: tuple[str, str] | None, *, newest_first: bool = True) -> list[_ArtifactFields]:
    """All heads of a workspace, or all copies under one link ``(link name, id)``, in creation
    order (newest first by default); every page read (lists need their totalCount)."""
    if link is None:
        pk = keys.artifact_partition(workspace_id)
    else:
        pk = keys.artifact_link_partition(workspace_id, link[0], link[1])
    rows = Row.query(
        pk, Row.SK.startswith(keys.ARTIFACTS_PREFIX), consistent_read=True, scan_index_forward=not newest_first
    )
    return [r for r in rows if isinstance(r, _ArtifactFields)]


def withdraw(head: ArtifactRow, *, actor_id: str, at: str, check: Callable[[Any], None] | None = None) -> ArtifactRow:
    """Turn an artifact into a tombstone: head and link copies get ``withdrawnAt``/``withdrawnBy``
    (under ``withdrawnAt`` absent on the head), the body is deleted; one transaction with the
    membership guard, or instead the caller's ``check`` (a ConditionCheck on the caller's member
    item, e.g. its role: one transaction may touch that item once).

    Raises:
        db.Missing: the artifact is gone, or the caller left. db.ConditionFailed: already withdrawn
            (the head's condition) or the caller's check.
    """
    ulid = head.SK[len(keys.ARTIFACTS_PREFIX) :]
    stamp = max(head.updatedAt, at)

    def build(tx: Any) -> None:
        actions = [
            _ArtifactFields.withdrawnAt.set(stamp),
            _ArtifactFields.withdrawnBy.set(actor_id),
            _ArtifactFields.updatedAt.set(stamp),
        ]
        tx.update(
            ArtifactRow(head.PK, head.SK),
            actions=actions,
            condition=Row.PK.exists() & _ArtifactFields.withdrawnAt.does_not_exist(),
        )
        for copy in _copies(head):
            tx.update(ArtifactLinkRow(copy.PK, copy.SK), actions=actions)
        if head.bodyChars is not None:
            tx.delete(ArtifactBodyRow(*keys.artifact_body(head.workspaceId, ulid)))
        if searchable(head):  # its search postings go too (a pending "gone" marker, docs/search.md)
            search_marks.mark_artifact(tx, head.workspaceId, head.artifactId, gone=True)
        if check is not None:
            check(tx)  # a condition on the caller's member item: it replaces the plain guard
        else:
            members.guard(tx, head.workspaceId, actor_id)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if members.guard_failed(failure, head.workspaceId, actor_id):
            raise db.Missing(head.workspaceId) from None
        raise
    done = ArtifactRow.from_raw_data(head.serialize())
    done.withdrawnAt, done.withdrawnBy, done.updatedAt = stamp, actor_id, stamp
    for hook in list(_withdraw_hooks):
        hook(done)
    return done
