"""Coordination items (docs/coordination.md, docs/data-model.md "Coordination"): claims on tasks,
peer requests and inbox entries.

* A task's claims live on one head item (``keys.claim_head``), rewritten as a whole under its
  ``revision`` (compare-and-set), so racing claimers serialise on one conditional write: the
  first commits, the others plan again on the new head and are refused or join as shared.
  Every change also writes the claimer's own copy (``keys.actor_claim``) for mj_brief and drops
  the copies of claims that expired.
* A peer request lives beside the claims (``keys.peer_request``); its assignee gets an inbox
  entry in the same transaction. Every state change is conditional on the state and revision
  that were read.
* An inbox is spread over :data:`keys.INBOX_SHARDS` partitions by the entry's ULID and read from
  all of them at once, so many senders writing to one busy actor do not queue on one partition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from domain import ids
from domain.store import db, idempotency_markers, keys, parallel
from domain.store import members as member_store
from domain.store import tasks as task_store
from domain.store.cas import Unchanged, Write, compare_and_set
from domain.store.errors import StoreError
from domain.store.models import (
    ActivityRow,
    ActorClaimRow,
    AttentionRow,
    ChannelMessageRow,
    ChannelRow,
    ClaimHeadRow,
    ColumnRow,
    ConsultationRow,
    DecisionRow,
    HelperLinkRow,
    InboxRow,
    IntegrationRow,
    PeerRequestRow,
    PromotionRow,
    ReviewRow,
    Row,
)


class ClaimRefused(StoreError):
    """A live claim of another actor overlaps the requested scope (``holder`` is its claim dict)."""

    def __init__(self, holder: dict[str, Any]) -> None:
        super().__init__(f"claimed by {holder.get('actorId')}")
        self.holder = holder


class Moved(StoreError):
    """A revisioned item was not what the caller read (or already exists); ``current`` is the
    stored row now (``None`` when gone). Each subclass names the item kind in its message."""

    what: ClassVar[str] = "item changed"

    def __init__(self, current: Any) -> None:
        super().__init__(self.what)
        self.current = current


class ClaimsMoved(Moved):
    """The task's claim head is not at the revision the caller read (``current``: the head now)."""

    what = "claims moved"
    current: ClaimHeadRow | None


class StateChanged(Moved):
    """A request's state or revision moved since it was read (``current`` is the stored row)."""

    what = "request changed"
    current: PeerRequestRow | None


# -- claims ---------------------------------------------------------------------------------------
def overlaps(a: list[str], b: list[str]) -> bool:
    """Whether two claimed scopes overlap: an empty scope is the whole task; a path overlaps a
    path it contains or lies in (``src/api`` and ``src/api/users.py``), compared by segment."""
    if not a or not b:
        return True

    def parts(p: str) -> list[str]:
        return [s for s in p.strip().strip("/").split("/") if s]

    for x in a:
        for y in b:
            px, py = parts(x), parts(y)
            n = min(len(px), len(py))
            if px[:n] == py[:n]:
                return True
    return False


def live(claims: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    return [c for c in claims if c.get("leaseExpiresAt", "") > now]


def head(task_id: str) -> ClaimHeadRow | None:
    """The task's claim head (consistent GetItem), or ``None`` when nobody ever claimed it."""
    try:
        return ClaimHeadRow.get(*keys.claim_head(task_id), consistent_read=True)
    except ClaimHeadRow.DoesNotExist:
        return None


@dataclass(frozen=True)
class Claimed:
    claim: dict[str, Any]
    head: ClaimHeadRow


def claim(
    *,
    workspace_id: str,
    task_id: str,
    first: ClaimHeadRow | None,
    new_claim: Callable[[dict[str, Any] | None], dict[str, Any]],
    now: Callable[[], str],
    actor_id: str,
    activity: Callable[[dict[str, Any]], ActivityRow],
    extra: Callable[[Any], None] | None = None,
    expected_revision: int | None = None,
) -> Claimed:
    """Record ``actor_id``'s claim on a task (its earlier claim there is replaced: a renewal).

    ``first`` is the head as read (or ``None``); ``new_claim(mine)`` builds the claim dict from the
    caller's current live claim (``None`` if it holds none). Expired claims are dropped, with their
    actors' copies. ``extra(tx)`` adds actions (the task's creation, for a new task).

    ``expected_revision`` (the head's revision as the caller read it, 0 for none) makes a moved
    head a refusal instead of a new plan.

    Raises:
        ClaimsMoved: the head is not at ``expected_revision``.
        ClaimRefused: another live, overlapping claim and the new one is not shared.
        Missing: the caller's membership is gone.
        Contended: lost every attempt to other claimers.
    """
    state: list[ClaimHeadRow | None] = [first]

    def plan(current: ClaimHeadRow | None) -> Write[Any, Claimed] | Unchanged[Claimed]:
        at = now()
        if expected_revision is not None and (int(current.revision) if current else 0) != expected_revision:
            raise ClaimsMoved(current)
        claims = list(current.claims) if current is not None else []
        alive = live(claims, at)
        mine = next((c for c in alive if c["actorId"] == actor_id), None)
        others = [c for c in alive if c["actorId"] != actor_id]
        wanted = new_claim(mine)
        if not wanted.get("shared"):
            for other in others:
                if overlaps(other.get("scope") or [], wanted.get("scope") or []):
                    raise ClaimRefused(other)
        dropped = {c["actorId"] for c in claims if c not in alive and c["actorId"] != actor_id}
        revision = int(current.revision) if current is not None else 0
        new_head = ClaimHeadRow(
            *keys.claim_head(task_id),
            taskId=task_id,
            workspaceId=workspace_id,
            claims=[*others, wanted],
            revision=revision + 1,
            updatedAt=at,
        )
        copy = ActorClaimRow(
            *keys.actor_claim(workspace_id, actor_id, task_id),
            taskId=task_id,
            workspaceId=workspace_id,
            claimId=wanted["claimId"],
            scope=wanted.get("scope") or [],
            shared=bool(wanted.get("shared")),
            leaseExpiresAt=wanted["leaseExpiresAt"],
            claimedAt=wanted["claimedAt"],
        )
        act = activity(wanted)

        def build(tx: Any) -> None:
            cond = Row.PK.does_not_exist() if current is None else (ClaimHeadRow.revision == revision)
            tx.save(new_head, condition=cond, return_values="ALL_OLD")
            tx.save(copy)
            for gone in sorted(dropped):
                tx.delete(ActorClaimRow(*keys.actor_claim(workspace_id, gone, task_id)))
            member_store.guard(tx, workspace_id, actor_id)
            tx.save(act)
            if extra is not None:
                extra(tx)

        def retry(failure: db.ConditionFailed) -> ClaimHeadRow | None:
            if member_store.guard_failed(failure, workspace_id, actor_id):
                raise db.Missing(task_id)
            stored = failure.item(*keys.claim_head(task_id))
            return ClaimHeadRow.from_raw_data(stored) if stored else head(task_id)

        return Write(build=build, result=lambda: Claimed(wanted, new_head), retry=retry)

    return compare_and_set("claim_task", state[0], plan)


def first_claim_actions(
    tx: Any, *, workspace_id: str, task_id: str, actor_id: str, wanted: dict[str, Any], at: str, activity: ActivityRow
) -> ClaimHeadRow:
    """The actions of the first claim on a task created in the same transaction; returns the head."""
    new_head = ClaimHeadRow(
        *keys.claim_head(task_id), taskId=task_id, workspaceId=workspace_id, claims=[wanted], revision=1, updatedAt=at
    )
    tx.save(new_head, condition=Row.PK.does_not_exist())
    tx.save(
        ActorClaimRow(
            *keys.actor_claim(workspace_id, actor_id, task_id),
            taskId=task_id,
            workspaceId=workspace_id,
            claimId=wanted["claimId"],
            scope=wanted.get("scope") or [],
            shared=bool(wanted.get("shared")),
            leaseExpiresAt=wanted["leaseExpiresAt"],
            claimedAt=wanted["claimedAt"],
        )
    )
    tx.save(activity)
    return new_head


def actor_claims(workspace_id: str, actor_id: str) -> list[ActorClaimRow]:
    """The caller's claim copies (one Query; expired ones are still there until rewritten)."""
    rows = ActorClaimRow.query(
        keys.actor_partition(workspace_id, actor_id), Row.SK.startswith(keys.ACTOR_CLAIM_PREFIX), consistent_read=True
    )
    return [r for r in rows if isinstance(r, ActorClaimRow)]


def around_task(task_id: str, limit: int = 200) -> tuple[ClaimHeadRow | None, list[PeerRequestRow], list[ReviewRow]]:
    """A task's claim head, its requests and its reviews, newest first (one Query of ``CO#<task>``)."""
    found_head: ClaimHeadRow | None = None
    requests: list[PeerRequestRow] = []
    reviews: list[ReviewRow] = []
    for row in Row.query(
        keys.coordination_partition(task_id), consistent_read=True, scan_index_forward=False, limit=limit + 1
    ):
        if isinstance(row, ClaimHeadRow):
            found_head = row
        elif isinstance(row, PeerRequestRow):
            requests.append(row)
        elif isinstance(row, ReviewRow):
            reviews.append(row)
    return found_head, requests, reviews


# -- requests -------------------------------------------------------------------------------------
def get_request(task_id: str, ulid: str) -> PeerRequestRow | None:
    try:
        return PeerRequestRow.get(*keys.peer_request(task_id, ulid), consistent_read=True)
    except PeerRequestRow.DoesNotExist:
        return None


def ask(request: PeerRequestRow, entry: InboxRow, *, activity: ActivityRow) -> None:
    """Store a new request and its assignee's inbox entry (one transaction; both members guarded).

    Raises:
        Missing: the caller or the assignee is no longer a member.
    """

    def build(tx: Any) -> None:
        tx.save(request, condition=Row.PK.does_not_exist())
        tx.save(entry, condition=Row.PK.does_not_exist())
        member_store.guard(tx, request.workspaceId, request.requesterId)
        member_store.guard(tx, request.workspaceId, request.assigneeId)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        raise db.Missing(request.requestId) from failure


def change_request(
    current: PeerRequestRow,
    updated: PeerRequestRow,
    *,
    entries: list[InboxRow],
    close_entry: tuple[str, str] | None,
    activity: ActivityRow,
    actor_id: str,
) -> None:
    """Replace a request by ``updated`` if it still has the state and revision of ``current``; put
    ``entries`` (notifications) and mark ``close_entry`` (the assignee's question) closed.

    Raises:
        StateChanged: another change committed first (``current`` holds the stored row).
        Missing: the caller's membership is gone.
    """

    def build(tx: Any) -> None:
        cond = (PeerRequestRow.revision == int(current.revision)) & (PeerRequestRow.state == current.state)
        tx.save(updated, condition=cond, return_values="ALL_OLD")
        for entry in entries:
            tx.save(entry, condition=Row.PK.does_not_exist())
        if close_entry is not None:
            tx.update(
                InboxRow(*close_entry), actions=[InboxRow.closedAt.set(updated.updatedAt)], condition=Row.PK.exists()
            )
        member_store.guard(tx, current.workspaceId, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if member_store.guard_failed(failure, current.workspaceId, actor_id):
            raise db.Missing(current.requestId) from failure
        stored = failure.item(current.PK, current.SK)
        raise StateChanged(
            PeerRequestRow.from_raw_data(stored)
            if stored
            else get_request(current.taskId, current.SK.removeprefix(keys.REQUEST_PREFIX))
        ) from failure


# -- inbox ----------------------------------------------------------------------------------------
def inbox(workspace_id: str, actor_id: str, *, per_shard: int = 50) -> list[InboxRow]:
    """The actor's newest entries, oldest first by delivery time (``deliveredAt``, then sort key):
    one Query per shard, all at once (parallel). Delivery time rather than the sort key alone,
    since a post stamps its time before minting its entries' ULIDs, and racing posts can mint
    in the other order."""

    def one(shard: int) -> list[InboxRow]:
        rows = InboxRow.query(
            keys.inbox_partition(workspace_id, actor_id, shard),
            Row.SK.startswith(keys.INBOX_PREFIX),
            consistent_read=True,
            scan_index_forward=False,
            limit=per_shard,
        )
        return [r for r in rows if isinstance(r, InboxRow)]

    futures = [parallel.submit(one, shard) for shard in range(keys.INBOX_SHARDS)]
    found = [row for f in futures for row in f.result()]
    return sorted(found, key=lambda r: (r.deliveredAt or "", r.SK))


def post(entries: list[InboxRow], *, workspace_id: str, sender_id: str, log: Any) -> None:
    """Deliver one message: every recipient's entry, the sender's membership guard and the log row
    (a board activity row or a workspace log entry), in one transaction.

    Raises:
        Missing: the sender or a recipient is no longer a member.
    """

    def build(tx: Any) -> None:
        for entry in entries:
            tx.save(entry, condition=Row.PK.does_not_exist())
            if entry.actorId != sender_id:
                member_store.guard(tx, workspace_id, entry.actorId)
        member_store.guard(tx, workspace_id, sender_id)
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        raise db.Missing(workspace_id) from failure


def stamp(entries: list[InboxRow], *, read: list[InboxRow], acked: list[InboxRow], at: str) -> None:
    """Set ``readAt`` on ``read`` and ``ackedAt`` on ``acked`` where not set yet (first stamp kept),
    in transactions of up to 100 actions; ``entries`` are updated in memory."""
    actions: dict[tuple[str, str], list[Any]] = {}
    for e in read:
        if e.readAt is None:
            actions.setdefault((e.PK, e.SK), []).append(InboxRow.readAt.set(InboxRow.readAt | at))
    for e in acked:
        if e.ackedAt is None:
            actions.setdefault((e.PK, e.SK), []).append(InboxRow.ackedAt.set(InboxRow.ackedAt | at))
    if not actions:
        return
    todo = list(actions.items())
    for i in range(0, len(todo), 100):
        chunk = todo[i : i + 100]

        def build(tx: Any, chunk: list[Any] = chunk) -> None:
            for (pk, sk), acts in chunk:
                tx.update(
                    InboxRow(pk, sk), actions=acts, condition=Row.PK.exists()
                )  # if_not_exists: the first stamp stays

        db.transact(build)
    by_key = {(e.PK, e.SK): e for e in entries}
    for e in read:
        by_key.get((e.PK, e.SK), e).readAt = e.readAt or at
    for e in acked:
        by_key.get((e.PK, e.SK), e).ackedAt = e.ackedAt or at


# -- reviews --------------------------------------------------------------------------------------
def artifact_digest(head: Any) -> str:
    """The identity a review is bound to: a SHA-256 over what makes the artifact what it is (its
    content fields, its stored object's checksum, its times, whether it was withdrawn). Any change
    to the artifact gives another digest."""
    import hashlib
    import json

    fields = (
        "artifactId",
        "type",
        "title",
        "storage",
        "url",
        "objectKey",
        "sha256",
        "bodyChars",
        "updatedAt",
        "withdrawnAt",
    )
    data = {name: getattr(head, name, None) for name in fields}
    data["bodyChars"] = int(data["bodyChars"]) if data["bodyChars"] is not None else None
    return "sha256:" + hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def get_review(task_id: str, ulid: str) -> ReviewRow | None:
    try:
        return ReviewRow.get(*keys.review(task_id, ulid), consistent_read=True)
    except ReviewRow.DoesNotExist:
        return None


def submit(review: ReviewRow, entry: InboxRow, *, activity: ActivityRow) -> None:
    """Store a new review and the reviewer's inbox entry (both members guarded), one transaction.

    Raises:
        Missing: the submitter or the reviewer is no longer a member.
    """

    def build(tx: Any) -> None:
        tx.save(review, condition=Row.PK.does_not_exist())
        tx.save(entry, condition=Row.PK.does_not_exist())
        member_store.guard(tx, review.workspaceId, review.submitterId)
        member_store.guard(tx, review.workspaceId, review.reviewerId)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        raise db.Missing(review.reviewId) from failure


def decide(
    current: ReviewRow,
    updated: ReviewRow,
    *,
    entry: InboxRow,
    close_entry: tuple[str, str],
    activity: ActivityRow,
    actor_id: str,
) -> None:
    """Record the reviewer's decision if the review is still as read (state and revision).

    Raises:
        ReviewChanged: another decision committed first (``current`` is the stored row).
        Missing: the reviewer's membership is gone.
    """

    def build(tx: Any) -> None:
        cond = (ReviewRow.revision == int(current.revision)) & (ReviewRow.state == current.state)
        tx.save(updated, condition=cond, return_values="ALL_OLD")
        tx.save(entry, condition=Row.PK.does_not_exist())
        tx.update(InboxRow(*close_entry), actions=[InboxRow.closedAt.set(updated.updatedAt)], condition=Row.PK.exists())
        member_store.guard(tx, current.workspaceId, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if member_store.guard_failed(failure, current.workspaceId, actor_id):
            raise db.Missing(current.reviewId) from failure
        stored = failure.item(current.PK, current.SK)
        raise ReviewChanged(ReviewRow.from_raw_data(stored) if stored else None) from failure


class ReviewChanged(Moved):
    what = "review changed"
    current: ReviewRow | None


# -- channels ---------------------------------------------------------------------------------------
def post_to_channel(message: ChannelMessageRow, *, sender_id: str, log: Any) -> None:
    """Append a message to a channel and count it on the channel's entry (created by the first post)."""

    def build(tx: Any) -> None:
        tx.save(message, condition=Row.PK.does_not_exist())
        entry = ChannelRow(*keys.channel_entry(message.workspaceId, message.channel))
        # an update makes the entry on the first post: it sets the item type (kind) itself
        tx.update(
            entry,
            actions=[
                ChannelRow.kind.set(ChannelRow),
                ChannelRow.name.set(message.channel),
                ChannelRow.workspaceId.set(message.workspaceId),
                ChannelRow.messageCount.add(1),
                ChannelRow.lastMessageAt.set(message.postedAt),
            ],
        )
        member_store.guard(tx, message.workspaceId, sender_id)
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        raise db.Missing(message.workspaceId) from failure


def channels(workspace_id: str) -> list[ChannelRow]:
    rows = ChannelRow.query(keys.channels_partition(workspace_id), consistent_read=True)
    return [r for r in rows if isinstance(r, ChannelRow)]


def channel_messages(workspace_id: str, channel: str, limit: int) -> list[ChannelMessageRow]:
    rows = ChannelMessageRow.query(
        keys.channel_partition(workspace_id, channel),
        Row.SK.startswith(keys.CHANNEL_MESSAGE_PREFIX),
        consistent_read=True,
        scan_index_forward=False,
        limit=limit,
    )
    return [r for r in rows if isinstance(r, ChannelMessageRow)][:limit]


def channel_message(workspace_id: str, channel: str, message_id: str) -> ChannelMessageRow | None:
    if not message_id.startswith("chm_"):
        return None
    try:
        return ChannelMessageRow.get(
            *keys.channel_message(workspace_id, channel, message_id.removeprefix("chm_")), consistent_read=True
        )
    except ChannelMessageRow.DoesNotExist:
        return None


def new_promotion(
    workspace_id: str,
    channel: str,
    message_id: str,
    actor_id: str,
    at: str,
    *,
    actor_kind: str,
    task_id: str | None = None,
    decision_id: str | None = None,
) -> PromotionRow:
    """The record that a message was promoted: to a task (``task_id``) or a proposed decision
    (``decision_id``), keyed by the message and that target."""
    target = "task" if task_id else "decision"
    return PromotionRow(
        *keys.promotion(workspace_id, channel, message_id.removeprefix("chm_"), target),
        workspaceId=workspace_id,
        channel=channel,
        messageId=message_id,
        target=target,
        taskId=task_id,
        decisionId=decision_id,
        promotedBy=actor_id,
        promotedByKind=actor_kind,
        promotedAt=at,
    )


def promotion(workspace_id: str, channel: str, message_id: str, target: str = "task") -> PromotionRow | None:
    try:
        return PromotionRow.get(
            *keys.promotion(workspace_id, channel, message_id.removeprefix("chm_"), target), consistent_read=True
        )
    except PromotionRow.DoesNotExist:
        return None


def new_decision(
    workspace_id: str,
    message: ChannelMessageRow,
    title: str,
    actor_id: str,
    at: str,
    *,
    actor_kind: str,
) -> DecisionRow:
    """A PROPOSED decision made of a channel message (its text and author kept as written)."""
    ulid = message.messageId.removeprefix("chm_")
    return DecisionRow(
        *keys.decision(workspace_id, ulid),
        decisionId=ids.new_decision_id(workspace_id, ulid),
        workspaceId=workspace_id,
        state="PROPOSED",
        title=title,
        text=message.text,
        authorId=message.fromId,
        authorKind=message.fromKind,
        postedAt=message.postedAt,
        channel=message.channel,
        messageId=message.messageId,
        taskId=message.taskId,
        proposedBy=actor_id,
        proposedByKind=actor_kind,
        proposedAt=at,
        revision=1,
    )


class AlreadyPromoted(StoreError):
    """The message was promoted to this target before (``current``: that promotion; ``decision``:
    the proposed decision it made, when the failed write returned it)."""

    def __init__(self, current: PromotionRow, decision: DecisionRow | None = None) -> None:
        super().__init__("already promoted")
        self.current = current
        self.decision = decision


def propose_decision(decision: DecisionRow, promotion: PromotionRow, *, actor_id: str, log: Any) -> None:
    """Store a proposed decision with its promotion record, the promoter's member guard and a
    workspace log entry, in one transaction. Both items are new (``attribute_not_exists``), so a
    message becomes at most one decision however many calls race.

    Raises:
        AlreadyPromoted: the message was promoted to a decision before (the promotion and the
            decision come from the failed conditions' ``ALL_OLD``: no extra request).
        Missing: the promoter is no longer a member.
    """

    def build(tx: Any) -> None:
        tx.save(promotion, condition=Row.PK.does_not_exist(), return_values="ALL_OLD")
        tx.save(decision, condition=Row.PK.does_not_exist(), return_values="ALL_OLD")
        member_store.guard(tx, decision.workspaceId, actor_id)
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        stored = failure.item(promotion.PK, promotion.SK)
        if stored:
            made = failure.item(decision.PK, decision.SK)
            earlier = DecisionRow.from_raw_data(made) if made else None
            raise AlreadyPromoted(PromotionRow.from_raw_data(stored), earlier) from failure
        raise db.Missing(decision.workspaceId) from failure


def decisions(workspace_id: str, decision_ids: list[str]) -> dict[str, DecisionRow]:
    """Proposed decisions by id (one consistent BatchGetItem per 100; none for an empty list)."""
    wanted = {keys.decision(workspace_id, d.rsplit("_", 1)[-1]): d for d in decision_ids}
    if not wanted:
        return {}
    found = DecisionRow.batch_get(list(wanted), consistent_read=True)
    return {r.decisionId: r for r in found if isinstance(r, DecisionRow)}


def promotions(workspace_id: str, channel: str) -> list[PromotionRow]:
    rows = PromotionRow.query(
        keys.channel_partition(workspace_id, channel), Row.SK.startswith(keys.PROMOTION_PREFIX), consistent_read=True
    )
    return [r for r in rows if isinstance(r, PromotionRow)]


# -- operator authority and attention (domain.operator) ---------------------------------------------
def set_operator_role(workspace_id: str, role: str | None, *, actor_id: str, source: str) -> None:
    """Grant operator authority to human members at ``role`` or above (``ADMIN``), or take the
    grant back (``None``: human OWNERs only), with a workspace log entry
    (``workspace.operator_role_set``, its ``source``), in one transaction conditional on the
    workspace existing and ``actor_id`` being an OWNER at commit. Callers go through
    :func:`domain.operator.set_grant`, which checks the value and the credential.

    Raises:
        Missing: no such workspace, or the actor is not (or no longer) an OWNER; nothing written.
    """
    from domain.store import governance
    from domain.store.models import WorkspaceRow

    head = WorkspaceRow(*keys.workspace_head(workspace_id))
    action = WorkspaceRow.operatorRole.set(role) if role else WorkspaceRow.operatorRole.remove()
    log = governance.log_row(
        workspace_id,
        "workspace.operator_role_set",
        f"Operator authority granted to {role}s" if role else "Operator authority kept to OWNERs",
        actor_id=actor_id,
        source=source,
        data={"operatorRole": role},
    )

    def build(tx: Any) -> None:
        tx.update(head, actions=[action], condition=Row.PK.exists())
        governance.role_guard(tx, workspace_id, actor_id, ("OWNER",))
        tx.save(log)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:  # the head is gone or the actor is no OWNER
        raise db.Missing(workspace_id) from failure


def attention(workspace_id: str, limit: int) -> list[AttentionRow]:
    """The newest ``limit`` operator attention items, oldest first (one Query)."""
    rows = AttentionRow.query(
        keys.attention_partition(workspace_id),
        Row.SK.startswith(keys.ATTENTION_PREFIX),
        consistent_read=True,
        scan_index_forward=False,
        limit=limit,
    )
    return list(reversed([r for r in rows if isinstance(r, AttentionRow)]))


# -- linked integration work ------------------------------------------------------------------------
class AlreadyLinked(Moved):
    """The helper was linked to the parent before (``current`` is that link)."""

    what = "already linked"
    current: HelperLinkRow | None


class IntegrationChanged(Moved):
    """An integration's state or revision moved since it was read (``current``: the stored row)."""

    what = "integration changed"
    current: IntegrationRow | None


def link_helper(link: HelperLinkRow, *, activity: ActivityRow) -> None:
    """Record that ``link.helperTaskId`` feeds ``link.parentTaskId`` (once per pair; the decider's
    membership guarded), with its activity row.

    Raises:
        AlreadyLinked: the pair was linked before.
        Missing: the decider is no longer a member.
    """

    def build(tx: Any) -> None:
        tx.save(link, condition=Row.PK.does_not_exist(), return_values="ALL_OLD")
        member_store.guard(tx, link.workspaceId, link.decidedBy)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if member_store.guard_failed(failure, link.workspaceId, link.decidedBy):
            raise db.Missing(link.parentTaskId) from failure
        stored = failure.item(link.PK, link.SK)
        raise AlreadyLinked(HelperLinkRow.from_raw_data(stored) if stored else None) from failure


def helper_links(parent_task_id: str) -> list[HelperLinkRow]:
    """The helpers linked to a parent task (one Query)."""
    rows = HelperLinkRow.query(
        keys.coordination_partition(parent_task_id),
        Row.SK.startswith(keys.HELPER_LINK_PREFIX),
        consistent_read=True,
    )
    return [r for r in rows if isinstance(r, HelperLinkRow)]


def get_integration(task_id: str, ulid: str) -> IntegrationRow | None:
    try:
        return IntegrationRow.get(*keys.integration(task_id, ulid), consistent_read=True)
    except IntegrationRow.DoesNotExist:
        return None


def write_integration(
    current: IntegrationRow | None,
    updated: IntegrationRow,
    *,
    entry: InboxRow,
    activity: ActivityRow,
    actor_id: str,
) -> None:
    """Store a new integration (``current`` is ``None``) or replace one that still has the state
    and revision of ``current``; put ``entry`` (the other party's notice) and the activity row.

    Raises:
        IntegrationChanged: another change committed first.
        Missing: the caller (or, for a new one, the reviewer) is no longer a member.
    """

    def build(tx: Any) -> None:
        if current is None:
            tx.save(updated, condition=Row.PK.does_not_exist())
            member_store.guard(tx, updated.workspaceId, updated.reviewerId)
        else:
            cond = (IntegrationRow.revision == int(current.revision)) & (IntegrationRow.state == current.state)
            tx.save(updated, condition=cond, return_values="ALL_OLD")
        tx.save(entry, condition=Row.PK.does_not_exist())
        member_store.guard(tx, updated.workspaceId, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if current is None or member_store.guard_failed(failure, updated.workspaceId, actor_id):
            raise db.Missing(updated.integrationId) from failure
        stored = failure.item(current.PK, current.SK)
        raise IntegrationChanged(IntegrationRow.from_raw_data(stored) if stored else None) from failure


def task_revision(task: Any) -> str:
    """A task's revision as integration freezes it: its ``updatedAt`` (every write of the task sets it)."""
    return str(task.updatedAt)


def inputs_digest(inputs: dict[str, Any]) -> str:
    """A SHA-256 over a frozen input set (sorted), naming exactly these revisions."""
    import hashlib
    import json

    body = {
        "artifacts": sorted((a["artifactId"], a["digest"]) for a in inputs.get("artifacts", [])),
        "tasks": sorted((t["taskId"], t["revision"]) for t in inputs.get("tasks", [])),
    }
    return "sha256:" + hashlib.sha256(json.dumps(body, separators=(",", ":")).encode()).hexdigest()


# -- consultation preparation -----------------------------------------------------------------------
class ConsultationChanged(Moved):
    """A consultation's state or revision moved since it was read (``current``: the stored row)."""

    what = "consultation changed"
    current: ConsultationRow | None


def get_consultation(workspace_id: str, ulid: str) -> ConsultationRow | None:
    try:
        return ConsultationRow.get(*keys.consultation(workspace_id, ulid), consistent_read=True)
    except ConsultationRow.DoesNotExist:
        return None


def consultations(workspace_id: str, limit: int) -> list[ConsultationRow]:
    """The newest ``limit`` consultations of a workspace, newest first (one Query)."""
    rows = ConsultationRow.query(
        keys.consultation_partition(workspace_id),
        Row.SK.startswith(keys.CONSULTATION_PREFIX),
        consistent_read=True,
        scan_index_forward=False,
        limit=limit,
    )
    return [r for r in rows if isinstance(r, ConsultationRow)]


def write_consultation(
    current: ConsultationRow | None,
    updated: ConsultationRow,
    *,
    attention: AttentionRow | None,
    activity: ActivityRow,
    actor_id: str,
) -> None:
    """Store a new consultation (``current`` is ``None``) or replace one still at the state and
    revision of ``current``; with the operators' attention item, if any, and the activity row.

    Raises:
        ConsultationChanged: another change committed first.
        Missing: the caller is no longer a member.
    """

    def build(tx: Any) -> None:
        if current is None:
            tx.save(updated, condition=Row.PK.does_not_exist())
        else:
            cond = (ConsultationRow.revision == int(current.revision)) & (ConsultationRow.state == current.state)
            tx.save(updated, condition=cond, return_values="ALL_OLD")
        if attention is not None:
            tx.save(attention, condition=Row.PK.does_not_exist())
        member_store.guard(tx, updated.workspaceId, actor_id)
        tx.save(activity)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        if current is None or member_store.guard_failed(failure, updated.workspaceId, actor_id):
            raise db.Missing(updated.consultationId) from failure
        stored = failure.item(current.PK, current.SK)
        raise ConsultationChanged(ConsultationRow.from_raw_data(stored) if stored else None) from failure


def consultation_digest(row: Any) -> str:
    """A SHA-256 over what an approval approves: profile, task, question text, artifacts and
    research inputs by digest."""
    import hashlib
    import json

    body = {
        "profile": row.profile,
        "taskId": row.taskId,
        "question": (row.question or {}).get("text"),
        "artifacts": sorted((a["artifactId"], a["digest"]) for a in row.artifacts or []),
        "research": sorted((a["artifactId"], a["digest"]) for a in row.researchInputs or []),
    }
    return "sha256:" + hashlib.sha256(json.dumps(body, separators=(",", ":")).encode()).hexdigest()


# -- the rows the coordination tools build (issue 27) ----------------------------------------------
# The tools (domain/tools/coordination.py) spell no key and no row class: they name the types below
# in their annotations and build new rows through these functions (``fields``: the row's attributes).
ActorClaim = ActorClaimRow
Attention = AttentionRow
ChannelMessage = ChannelMessageRow
ClaimHead = ClaimHeadRow
Consultation = ConsultationRow
Decision = DecisionRow
HelperLink = HelperLinkRow
InboxEntry = InboxRow
Integration = IntegrationRow
PeerRequest = PeerRequestRow
Promotion = PromotionRow
Review = ReviewRow

_Copied = TypeVar("_Copied", bound=Row)


def copy(row: _Copied) -> _Copied:
    """An unsaved copy of ``row`` (same key and attributes), for a change written under the old one."""
    return type(row).from_raw_data(row.serialize())


def new_request(task_id: str, ulid: str, /, **fields: Any) -> PeerRequestRow:
    """A new peer request from the task ``task_id`` (written by :func:`ask`)."""
    return PeerRequestRow(*keys.peer_request(task_id, ulid), **fields)


def new_review(task_id: str, ulid: str, /, **fields: Any) -> ReviewRow:
    """A new review on the task ``task_id`` (written by :func:`submit`)."""
    return ReviewRow(*keys.review(task_id, ulid), **fields)


def new_entry(workspace_id: str, actor_id: str, ulid: str, /, **fields: Any) -> InboxRow:
    """A new entry of ``actor_id``'s inbox in the workspace (its shard from ``ulid``)."""
    return InboxRow(
        *keys.inbox_entry(workspace_id, actor_id, ulid), workspaceId=workspace_id, actorId=actor_id, **fields
    )


def entry_sort_key(workspace_id: str, actor_id: str, ulid: str) -> str:
    """The sort key the entry ``ulid`` of ``actor_id``'s inbox gets (kept on a request or review as ``inboxSk``)."""
    return keys.inbox_entry(workspace_id, actor_id, ulid)[1]


def entry_key(workspace_id: str, actor_id: str, sort_key: str) -> tuple[str, str]:
    """The whole key of ``actor_id``'s inbox entry kept as ``sort_key`` (the entry a change closes)."""
    shard = keys.inbox_shard(sort_key.removeprefix(keys.INBOX_PREFIX))
    return keys.inbox_partition(workspace_id, actor_id, shard), sort_key


def new_channel_message(workspace_id: str, channel: str, ulid: str, /, **fields: Any) -> ChannelMessageRow:
    """A new message of ``channel`` (written by :func:`post_to_channel`)."""
    return ChannelMessageRow(*keys.channel_message(workspace_id, channel, ulid), **fields)


def new_helper_link(parent_task_id: str, helper_task_id: str, /, **fields: Any) -> HelperLinkRow:
    """The link of a helper task to its parent (written by :func:`link_helper`)."""
    return HelperLinkRow(*keys.helper_link(parent_task_id, helper_task_id), **fields)


def new_integration(parent_task_id: str, ulid: str, /, **fields: Any) -> IntegrationRow:
    """A new integration of the parent task (written by :func:`write_integration`)."""
    return IntegrationRow(*keys.integration(parent_task_id, ulid), **fields)


def new_attention(workspace_id: str, ulid: str, /, **fields: Any) -> AttentionRow:
    """A new item of the operators' attention list (written with a consultation's change)."""
    return AttentionRow(*keys.attention(workspace_id, ulid), **fields)


def new_consultation(workspace_id: str, ulid: str, /, **fields: Any) -> ConsultationRow:
    """A new consultation (written by :func:`write_consultation`)."""
    return ConsultationRow(*keys.consultation(workspace_id, ulid), **fields)


# -- tasks made by coordination tools (mj_start_work, mj_promote_message) ---------------------------
def start_task(*, column: ColumnRow | None, **create: Any) -> Any:
    """:func:`domain.store.tasks.create` for mj_start_work (``create``: its keyword arguments but
    ``first_read``), planned on ``column``, the row the access step read with the membership
    (``None``: read it here). The first claim rides in ``create["extra"]``.

    Returns what ``tasks.create`` returns.

    Raises:
        idempotency_markers.Earlier: an earlier call with the same key made the task (its id); the
            pipeline answers through the spec's ``replay``.
        The other errors of ``tasks.create``.
    """
    try:
        return task_store.create(first_read=_column_read(create, column), **create)
    except task_store.Earlier as earlier:
        raise idempotency_markers.Earlier(earlier.task_id) from None


def promote_task(*, workspace_id: str, channel: str, message_id: str, column: ColumnRow | None, **create: Any) -> bool:
    """:func:`domain.store.tasks.create` for a message promoted to a task, once per message
    whoever asks: the creation marker is keyed by the message, not by the caller or a key (the
    promotion row rides in ``create["extra"]``). ``column`` as for :func:`start_task`.

    Returns ``False`` when another call promoted the message first (nothing written), else ``True``.

    Raises:
        The errors of ``tasks.create`` but ``Earlier``.
    """
    marker = idempotency_markers.marker_for(
        "promotion", workspace_id, "mj_promote_message", f"{channel}:{message_id}:task", "", ""
    )
    try:
        task_store.create(workspace_id=workspace_id, marker=marker, first_read=_column_read(create, column), **create)
    except task_store.Earlier:
        return False
    return True


def _column_read(create: dict[str, Any], column: ColumnRow | None) -> dict[tuple[str, str], Any] | None:
    return {keys.column(create["board_id"], create["column_id"]): column} if column is not None else None
