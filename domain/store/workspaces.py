"""Workspace items: the head (name, slug, task prefix, task counter) and the global slug claim.

Keys: :func:`domain.store.keys.workspace_head`, :func:`domain.store.keys.slug_claim`. A workspace
is created in one transaction with its slug claim (``attribute_not_exists``: slugs are unique
across the service), the creator's OWNER membership and, for a keyed create, its creation
marker.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from domain import clock, ids
from domain.store import db, keys, members
from domain.store.errors import StoreError
from domain.store.idempotency_markers import Earlier, earlier_entity, put_marker
from domain.store.models import CreationMarkerRow, Row, SlugRow, UserRow, WorkspaceRow

if TYPE_CHECKING:
    from domain.store.cas import Write

R = TypeVar("R")

SLUG_ATTEMPTS = 49


class NoFreeSlug(StoreError):
    """Every slug tried for a workspace name was taken."""


def slugify(name: str) -> str:
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:40].strip("-")
    return slug or "workspace"


def task_prefix(name: str, taken: Collection[str] = ()) -> str:
    """``Stack Team`` -> ``ST``; ``Jentrix`` -> ``JEN``; non-Latin names fall back to ``WS``.

    A prefix in ``taken`` (the prefixes of the creator's other workspaces) gets the smallest
    number from 2 that is free, so a second "Stack Team" numbers its tasks ``ST2-1``, never
    like the first one's ``ST-1``.
    """
    base = _base_prefix(name)
    if base not in taken:
        return base
    n = 2
    while f"{base}{n}" in taken:
        n += 1
    return f"{base}{n}"


def _base_prefix(name: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode())
    if len(words) >= 2:
        prefix = "".join(w[0] for w in words[:4])
    elif words:
        prefix = words[0][:3]
    else:
        prefix = "WS"
    prefix = prefix.upper()
    return prefix if prefix[0].isalpha() else "W" + prefix[:3]


def get(workspace_id: str) -> WorkspaceRow | None:
    try:
        return WorkspaceRow.get(*keys.workspace_head(workspace_id), consistent_read=True)
    except WorkspaceRow.DoesNotExist:
        return None


def all_ids() -> list[str]:
    """Every workspace's id, sorted: a paginated Scan of the table for workspace heads. For
    operator commands over the whole table (``jentrix search verify``); no tool call scans."""
    client, out, start = db.dynamodb_client(), [], None
    while True:
        kwargs: dict[str, Any] = {
            "TableName": db.table_name(),
            "FilterExpression": "#k = :k AND SK = :m",
            "ExpressionAttributeNames": {"#k": "kind"},
            "ExpressionAttributeValues": {":k": {"S": "Workspace"}, ":m": {"S": keys.WORKSPACE_HEAD_SORT_KEY}},
            "ProjectionExpression": "workspaceId",
        }
        if start:
            kwargs["ExclusiveStartKey"] = start
        page = client.scan(**kwargs)
        out += [i["workspaceId"]["S"] for i in page.get("Items", []) if "workspaceId" in i]
        start = page.get("LastEvaluatedKey")
        if not start:
            return sorted(out)


def get_many(workspace_ids: list[str]) -> list[WorkspaceRow]:
    """The heads of ``workspace_ids`` (one BatchGetItem per 100), in no particular order."""
    if not workspace_ids:
        return []
    return [
        w
        for w in WorkspaceRow.batch_get([keys.workspace_head(w) for w in workspace_ids], consistent_read=True)
        if isinstance(w, WorkspaceRow)
    ]


def create(
    user: UserRow,
    name: str,
    *,
    marker: CreationMarkerRow | None = None,
    workspace_id: str | None = None,
    taken_prefixes: Collection[str] = (),
) -> tuple[WorkspaceRow, bool]:
    """Create a workspace owned by ``user`` in one transaction; return ``(workspace, created)``.

    The slug is unique across the service; on a clash ``-2`` … ``-5`` are tried, then a random
    suffix, so a popular name never runs out. The task-key prefix avoids ``taken_prefixes``
    (:func:`task_prefix`). With ``marker`` set, the marker names the new workspace and goes into
    the same transaction.

    Raises:
        Earlier: the marker's key already created a workspace with these arguments (its id).
        IdempotencyMismatch: the marker's key already created a workspace with other arguments.
        NoFreeSlug: no slug could be claimed.
    """
    base = slugify(name)
    prefix = task_prefix(name, taken_prefixes)
    now = clock.now_iso()
    ws_id = workspace_id or ids.new_workspace_id()
    if marker is not None:
        marker.entityId = ws_id
    for attempt in range(1, SLUG_ATTEMPTS + 1):
        slug = base if attempt == 1 else f"{base}-{attempt}" if attempt <= 5 else f"{base}-{secrets.token_hex(3)}"
        ws = WorkspaceRow(
            *keys.workspace_head(ws_id),
            workspaceId=ws_id,
            name=name,
            slug=slug,
            taskPrefix=prefix,
            taskCounter=0,
            createdAt=now,
            createdBy=user.userId,
            ownerCount=1,
        )
        member, mirror = members.rows_for(user, ws_id, "OWNER", now)
        claim = SlugRow(*keys.slug_claim(slug), workspaceId=ws_id)

        def build(
            tx: Any, ws: WorkspaceRow = ws, claim: SlugRow = claim, member: Any = member, mirror: Any = mirror
        ) -> None:
            tx.save(ws, condition=Row.PK.does_not_exist())
            tx.save(claim, condition=Row.PK.does_not_exist())
            tx.save(member)
            tx.save(mirror)
            put_marker(tx, marker)

        try:
            db.transact(build)
            return ws, True
        except db.ConditionFailed as failure:
            earlier = earlier_entity(failure, marker)
            if earlier:
                raise Earlier(earlier) from None
            if failure.hit(claim.PK, claim.SK):
                continue
            raise
    raise NoFreeSlug(name)


def copy(ws: WorkspaceRow) -> WorkspaceRow:
    """A detached copy of a workspace head (to show the state an edit leaves)."""
    return WorkspaceRow.from_raw_data(ws.serialize())


def edit(
    current: WorkspaceRow,
    *,
    name: str | None,
    default_repo: str | None,
    set_repo: bool,
    actor_id: str,
    result: Callable[[], R],
) -> Write[WorkspaceRow, R]:
    """One value-CAS edit of the workspace head for :func:`domain.store.cas.compare_and_set`.

    An UpdateItem (never a put: the task counter moves under create_task) conditioned on the
    ``name`` and ``defaultRepo`` read; ``defaultRepo`` also sets (or removes) the head's GSI2 keys
    (``keys.repo_default_index``), so resolve_projects_for_repo finds the workspace by repository.
    A failed condition returns the stored head (``ALL_OLD``) as the next state; a gone caller is
    :class:`db.Missing`.
    """
    from domain.store.cas import Write

    actions: list[Any] = []
    if name is not None:
        actions.append(WorkspaceRow.name.set(name))
    if set_repo:
        if default_repo:
            pk, sk = keys.repo_default_index(default_repo, current.workspaceId)
            actions += [WorkspaceRow.defaultRepo.set(default_repo), Row.GSI2PK.set(pk), Row.GSI2SK.set(sk)]
        else:
            actions += [WorkspaceRow.defaultRepo.remove(), Row.GSI2PK.remove(), Row.GSI2SK.remove()]
    same_repo = (
        WorkspaceRow.defaultRepo == current.defaultRepo
        if current.defaultRepo
        else WorkspaceRow.defaultRepo.does_not_exist()
    )
    condition = Row.PK.exists() & (WorkspaceRow.name == current.name) & same_repo

    def build(tx: Any) -> None:
        tx.update(
            WorkspaceRow(*keys.workspace_head(current.workspaceId)),
            actions=actions,
            condition=condition,
            return_values="ALL_OLD",
        )
        members.guard(tx, current.workspaceId, actor_id)

    def retry(failure: db.ConditionFailed) -> WorkspaceRow:
        pk, sk = keys.workspace_head(current.workspaceId)
        if failure.hit(pk, sk):
            stored = failure.item(pk, sk)
            if not stored:
                raise db.Missing(current.workspaceId)
            return WorkspaceRow.from_raw_data(stored)
        raise db.Missing(current.workspaceId)

    return Write(build=build, result=result, retry=retry)
