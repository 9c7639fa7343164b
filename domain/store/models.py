"""PynamoDB models for the one application table (docs/data-model.md is the source of truth).

Every item shares the base :class:`Row` (partition key ``PK``, sort key ``SK``, two overloaded
GSIs and a ``kind`` discriminator), so one Query over a board partition returns the board, its
columns and its compact task rows as typed objects.
"""

from __future__ import annotations

from typing import Any, Self, cast

from pynamodb.attributes import (
    Attribute,
    BooleanAttribute,
    DiscriminatorAttribute,
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.constants import NULL
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from domain.store.errors import StoreError


def string_list(*, default: Any = None, attr_name: str | None = None) -> ListAttribute[str]:
    """A list-of-strings attribute (DynamoDB L of S), typed ``list[str]`` on a row.

    The same attribute as ``ListAttribute(of=UnicodeAttribute)``; PynamoDB types that one as a list
    of ``UnicodeAttribute`` (its ``of`` parameter is the element's attribute class), though reading
    it yields strings. Setting the element type after construction gives it the right type.
    """
    attribute: ListAttribute[str] = ListAttribute(default=default, attr_name=attr_name)
    attribute.element_type = UnicodeAttribute
    return attribute


class Gsi1(GlobalSecondaryIndex["Row"]):
    """GSI1: column-ordered task rows, a task's activity, a user's tokens (keys: :mod:`domain.store.keys`)."""

    class Meta:
        index_name = "GSI1"
        projection = AllProjection()

    GSI1PK = UnicodeAttribute(hash_key=True)
    GSI1SK = UnicodeAttribute(range_key=True)


class Gsi2(GlobalSecondaryIndex["Row"]):
    """GSI2: lookups by repository (``REPO#<owner/name>``: REPO project links, workspace ``defaultRepo``); reserved for search."""

    class Meta:
        index_name = "GSI2"
        projection = AllProjection()

    GSI2PK = UnicodeAttribute(hash_key=True)
    GSI2SK = UnicodeAttribute(range_key=True)


class Gsi3(GlobalSecondaryIndex["Row"]):
    """GSI3: a member's open work across a workspace's boards (``MYWORK#<ws>#<user>``, by due date then priority; list_my_work)."""

    class Meta:
        index_name = "GSI3"
        projection = AllProjection()

    GSI3PK = UnicodeAttribute(hash_key=True)
    GSI3SK = UnicodeAttribute(range_key=True)


class Row(Model):
    class Meta:
        table_name = "jentrix"
        region = "us-east-1"
        host: str | None = None
        # set by domain.store.db.configure (annotations only: unset, PynamoDB uses its settings)
        connect_timeout_seconds: float
        read_timeout_seconds: float
        max_retry_attempts: int
        max_pool_connections: int

    PK = UnicodeAttribute(hash_key=True)
    SK = UnicodeAttribute(range_key=True)
    kind = DiscriminatorAttribute()
    GSI1PK = UnicodeAttribute(null=True)
    GSI1SK = UnicodeAttribute(null=True)
    GSI2PK = UnicodeAttribute(null=True)
    GSI2SK = UnicodeAttribute(null=True)
    ttl = NumberAttribute(null=True)
    GSI3PK = UnicodeAttribute(null=True)
    GSI3SK = UnicodeAttribute(null=True)
    gsi1 = Gsi1()
    gsi2 = Gsi2()
    gsi3 = Gsi3()

    @classmethod
    def from_raw_data(cls, data: dict[str, Any]) -> Self:
        """The typed row for one item as DynamoDB returned it (PynamoDB's reads — get, query,
        batch_get, scan — build every row through this classmethod).

        The instance equals the one ``Model.from_raw_data`` builds (tests/test_store_values.py
        compares the two for every item type): the class named by ``kind``, its defaults, then
        each stored attribute through the attribute's own ``deserialize``. PynamoDB's path runs
        the constructor (the discriminator and every default through its descriptors) and then
        does all of it a second time before reading the item. This path fills the instance's
        ``attribute_values`` in one pass: ~40-57 µs a row in a loop becomes ~10-15 µs
        (docs/decisions.md, "Performance"). Anything unusual (no ``kind``, an unknown one, one
        outside ``cls``, a kind not read before) goes the library's way, errors included; the
        first row of each kind teaches :data:`_KINDS` its class."""
        kind = data.get("kind") if data is not None else None
        kind_value = kind.get("S") if isinstance(kind, dict) else None
        stored = _KINDS.get(kind_value) if kind_value is not None else None
        if stored is None or not issubclass(stored, cls):
            row = super().from_raw_data(data)
            if kind_value is not None:
                _KINDS[kind_value] = type(row)
            return row
        plan = _READ_PLANS.get(stored) or _read_plan(stored)
        built: Any = stored.__new__(stored)  # a subclass of cls (checked above)
        filled: dict[str, Any] = {"kind": stored}
        for name, default in plan[0]:
            filled[name] = default() if callable(default) else default
        for name, stored_name, attr in plan[1]:
            raw = data.get(stored_name)
            if raw and NULL not in raw:
                filled[name] = attr.deserialize(attr.get_value(raw))
        built.attribute_values = filled
        return cast("Self", built)


# Per item type, what from_raw_data needs: (python name, default) for the non-None defaults, in
# attribute order, and (python name, stored name, attribute) for the rest of the attributes.
_ReadPlan = tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, str, Attribute[Any]], ...]]
_READ_PLANS: dict[type, _ReadPlan] = {}
_KINDS: dict[str, type] = {}  # ``kind`` value -> item type, learnt from PynamoDB's own first read of each


def _read_plan(cls: type[Row]) -> _ReadPlan:
    attrs = cls.get_attributes()
    discriminator = cls._get_discriminator_attribute()
    defaults = tuple(
        (name, attr.default) for name, attr in attrs.items() if attr is not discriminator and attr.default is not None
    )
    fields = tuple((name, attr.attr_name, attr) for name, attr in attrs.items() if attr is not discriminator)
    plan = (defaults, fields)
    _READ_PLANS[cls] = plan
    return plan


class UserRow(Row, discriminator="User"):
    userId = UnicodeAttribute()
    email = UnicodeAttribute()
    displayName = UnicodeAttribute()
    createdAt = UnicodeAttribute()


class EmailRow(Row, discriminator="Email"):
    """Email claim (``keys.email_claim``): resolves a sign-in email to its user (CLI, seed).

    Written with ``attribute_not_exists`` in the same transaction as the user's profile, so one
    email names at most one user.
    """

    userId = UnicodeAttribute()


class WorkspaceRow(Row, discriminator="Workspace"):
    workspaceId = UnicodeAttribute()
    name = UnicodeAttribute()
    slug = UnicodeAttribute()
    taskPrefix = UnicodeAttribute()
    taskCounter = NumberAttribute(default=0)
    createdAt = UnicodeAttribute()
    createdBy = UnicodeAttribute()
    # update_workspace: the lowercase owner/name sessions fall back to (GSI2 ``keys.repo_default_index``)
    defaultRepo = UnicodeAttribute(null=True)
    # REPO links of the workspace's projects (add/remove_project_link ±1, same transaction):
    # the default repository applies only while this is 0
    repoLinkCount = NumberAttribute(null=True)
    # OWNER members: every write that makes or unmakes an OWNER changes it in its transaction, and
    # demoting or removing an OWNER conditions on ownerCount > 1 (heads written before it existed
    # are counted once from the members, domain.store.governance.owner_count).
    ownerCount = NumberAttribute(null=True)
    # Operator authority (domain.operator): besides its human OWNERs, the workspace may grant it to
    # human members at this role or above (ADMIN); unset, only OWNERs hold it.
    operatorRole = UnicodeAttribute(null=True)


class SlugRow(Row, discriminator="Slug"):
    workspaceId = UnicodeAttribute()


class MemberRow(Row, discriminator="Member"):
    """Member (``keys.member``): the authoritative membership (role checks, list_members)."""

    workspaceId = UnicodeAttribute()
    userId = UnicodeAttribute()
    role = UnicodeAttribute()
    email = UnicodeAttribute()
    displayName = UnicodeAttribute()
    joinedAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()


class MembershipMirrorRow(Row, discriminator="Membership"):
    """Membership mirror (``keys.membership_mirror``): the user's side of a membership, for list_workspaces."""

    workspaceId = UnicodeAttribute()
    role = UnicodeAttribute()


class InvitationRow(Row, discriminator="Invitation"):
    """Invitation (``keys.invitation``): an e-mail invited with a role. ``secretDigest`` is the
    SHA-256 of the link secret printed by ``jentrix invite link`` (absent until then; a new link
    replaces it). ``state`` is PENDING, ACCEPTED or REVOKED."""

    invitationId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    email = UnicodeAttribute()
    role = UnicodeAttribute()
    invitedBy = UnicodeAttribute()
    state = UnicodeAttribute(default="PENDING")
    secretDigest = UnicodeAttribute(null=True)
    createdAt = UnicodeAttribute()
    expiresAt = UnicodeAttribute()
    decidedAt = UnicodeAttribute(null=True)
    acceptedBy = UnicodeAttribute(null=True)


class GovernancePolicyRow(Row, discriminator="GovernancePolicy"):
    """Governance policy (``keys.governance_policy``): pack -> ALLOW | REQUIRE_APPROVAL | DENY."""

    policies = JSONAttribute(default=dict)
    updatedAt = UnicodeAttribute()
    updatedBy = UnicodeAttribute()


class ApprovalRow(Row, discriminator="Approval"):
    """Approval request (``keys.approval``): an agent's governed call parked for a human.

    Binds the exact call: ``tool``, ``argsHash`` (SHA-256 of the canonical arguments), the caller
    (``callerId`` + ``tokenId``). ``state``: PENDING -> APPROVED | REJECTED, APPROVED -> CONSUMED
    (in the transaction of the change it lets through, conditioned on APPROVED)."""

    approvalId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    tool = UnicodeAttribute()
    argsHash = UnicodeAttribute()
    arguments = JSONAttribute()
    summary = UnicodeAttribute()
    callerId = UnicodeAttribute()
    tokenId = UnicodeAttribute()
    state = UnicodeAttribute(default="PENDING")
    createdAt = UnicodeAttribute()
    expiresAt = UnicodeAttribute()
    decidedBy = UnicodeAttribute(null=True)
    decidedAt = UnicodeAttribute(null=True)
    consumedAt = UnicodeAttribute(null=True)


class WorkspaceLogRow(Row, discriminator="WorkspaceLog"):
    """Workspace log entry (``keys.workspace_log``): membership, invitation and approval events."""

    entryId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    type = UnicodeAttribute()
    source = UnicodeAttribute()
    actorId = UnicodeAttribute()
    at = UnicodeAttribute()
    summary = UnicodeAttribute()
    data = JSONAttribute(null=True)


class BoardEntryRow(Row, discriminator="BoardEntry"):
    """Board entry (``keys.board_entry``): the workspace's board list."""

    boardId = UnicodeAttribute()
    name = UnicodeAttribute()
    boardKind = UnicodeAttribute()
    createdAt = UnicodeAttribute()
    archivedAt = UnicodeAttribute(null=True)


class BoardRow(Row, discriminator="Board"):
    """Board head (``keys.board_head``): the head of the board partition.

    Whether the board is archived is kept on its entry (:class:`BoardEntryRow`), not here: the
    entry is the one item archive_board and unarchive_boards write per board (docs/data-model.md,
    "Archived boards"). ``archivedAt`` is never written on the head.
    """

    boardId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    name = UnicodeAttribute()
    boardKind = UnicodeAttribute()
    taskCount = NumberAttribute(default=0)
    activeColumns = NumberAttribute(default=0)
    labelCount = NumberAttribute(null=True)  # labels on the board (create +1, delete -1; at most labels.MAX_PER_BOARD)
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()
    archivedAt = UnicodeAttribute(null=True)


class ColumnRow(Row, discriminator="Column"):
    columnId = UnicodeAttribute()
    boardId = UnicodeAttribute()
    name = UnicodeAttribute()
    position = UnicodeAttribute()
    taskCount = NumberAttribute(default=0)
    wipLimit = NumberAttribute(null=True)
    lastRank = UnicodeAttribute(null=True)
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()
    archivedAt = UnicodeAttribute(null=True)
    # A done column holds finished work: list_my_work leaves its tasks out (manage_columns; each
    # board kind's default final column is created done).
    done = BooleanAttribute(default=False)


class UnwitnessedWrite(StoreError):
    """A write of a task's full item that would not move its freshness witness (a programming
    error, answered INTERNAL: see :class:`TaskDetailRow`)."""


# Full-item attributes no tool answer shows (board order, the search index's bookkeeping): a
# write changing only these leaves the freshness witness alone (domain.store.witness).
UNWITNESSED_TASK_FIELDS = frozenset({"rank", "searchVersion"})


class _TaskFields(Row):
    taskId = UnicodeAttribute()
    number = NumberAttribute()
    key = UnicodeAttribute()
    boardId = UnicodeAttribute()
    columnId = UnicodeAttribute()
    rank = UnicodeAttribute()
    title = UnicodeAttribute()
    priority = UnicodeAttribute(default="NONE")
    dueDate = UnicodeAttribute(null=True)
    assigneeIds = string_list(default=list)
    labelIds = string_list(default=list)
    # The task's checklist progress, kept by every subtask write in the task's own transaction
    # (docs/data-model.md, "subtask"); items written before subtasks existed read as 0.
    subtaskCount = NumberAttribute(default=0)
    subtasksDone = NumberAttribute(default=0)
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()


class TaskRow(_TaskFields, discriminator="Task"):
    """Compact task row (``keys.task_compact``): read by snapshots and lists (no body)."""


class TaskDetailRow(_TaskFields, discriminator="TaskDetail"):
    """Full task item (``keys.task_full``): outside the snapshot's key range."""

    description = UnicodeAttribute(default="")
    createdBy = UnicodeAttribute()
    archivedAt = UnicodeAttribute(null=True)
    # The text version (title + description digest) last handed to the search index: a write
    # that leaves the text alone puts no pending-index marker (docs/search.md).
    searchVersion = UnicodeAttribute(null=True)
    # The work-index entries (domain.store.work) this item's last write left: the users indexed and
    # the GSI3 sort key they carry. Kept in the same transaction as the entries, so they never drift.
    workIndexed = string_list(default=list)
    workSort = UnicodeAttribute(null=True)
    # The freshness witness (docs/data-model.md, "Freshness witness"): a token that
    # domain.store.db.transact stamps on this item and on the task's recent item in the same
    # transaction, so get_task can check an eventually consistent read of this item.
    witness = UnicodeAttribute(null=True, attr_name="w")

    # Writes outside a transaction would skip the witness: only attributes no answer shows may
    # be changed that way (the search version a repair claims); everything else goes through
    # domain.store.db.transact, which stamps it.
    def save(self, condition: Any = None, *, add_version_condition: bool = True) -> dict[str, Any]:
        raise UnwitnessedWrite("a task's full item is put only in a transaction (domain.store.db.transact)")

    def delete(self, condition: Any = None, *, add_version_condition: bool = True) -> Any:
        raise UnwitnessedWrite("a task's full item is deleted only in a transaction (domain.store.db.transact)")

    def update(self, actions: list[Any], condition: Any = None, *, add_version_condition: bool = True) -> Any:
        touched = {str(a.values[0].path[0]) for a in actions}
        if not touched <= UNWITNESSED_TASK_FIELDS:
            raise UnwitnessedWrite(f"{sorted(touched - UNWITNESSED_TASK_FIELDS)} change only in a transaction")
        return super().update(actions, condition, add_version_condition=add_version_condition)


class WorkItemRow(Row, discriminator="WorkItem"):
    """One assignment (``keys.work_item``) in GSI3 ``keys.work_index``: list_my_work's entry for a
    task of one assignee, written by :func:`domain.store.work.sync` inside every task write."""

    taskId = UnicodeAttribute()
    boardId = UnicodeAttribute()
    columnId = UnicodeAttribute()
    number = NumberAttribute()
    userId = UnicodeAttribute()


class CommentRow(Row, discriminator="Comment"):
    """Comment (``keys.comment``): a task's markdown comment, with its author's name at writing."""

    commentId = UnicodeAttribute()
    taskId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    authorId = UnicodeAttribute()
    authorName = UnicodeAttribute()
    body = UnicodeAttribute()
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()
    editedAt = UnicodeAttribute(null=True)


class ClaimHeadRow(Row, discriminator="ClaimHead"):
    """Claim head (``keys.claim_head``): the claims on one task, as a list of
    ``{claimId, actorId, actorKind, scope, shared, leaseExpiresAt, claimedAt}``; every change is a
    conditional rewrite on ``revision`` (docs/coordination.md, "Claims")."""

    taskId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    claims = JSONAttribute(default=list)
    revision = NumberAttribute(default=0)
    updatedAt = UnicodeAttribute()


class ActorClaimRow(Row, discriminator="ActorClaim"):
    """An actor's copy of its claim (``keys.actor_claim``), for mj_brief; written with the head."""

    taskId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    claimId = UnicodeAttribute()
    scope = JSONAttribute(default=list)
    shared = BooleanAttribute(default=False)
    leaseExpiresAt = UnicodeAttribute()
    claimedAt = UnicodeAttribute()


class PeerRequestRow(Row, discriminator="PeerRequest"):
    """Peer question (``keys.peer_request``): OPEN -> ANSWERED | CANCELLED; ``lateReplies`` are
    kept on a CANCELLED one without reopening it. ``revision`` counts its changes."""

    requestId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    taskId = UnicodeAttribute()
    requesterId = UnicodeAttribute()
    requesterKind = UnicodeAttribute()
    assigneeId = UnicodeAttribute()
    question = UnicodeAttribute()
    state = UnicodeAttribute()
    answer = JSONAttribute(null=True)  # {text, by, byKind, at}
    lateReplies = JSONAttribute(default=list)  # [{text, by, byKind, at}]
    cancelReason = UnicodeAttribute(null=True)
    inboxSk = UnicodeAttribute()  # the assignee's inbox entry (its partition follows from the ULID)
    revision = NumberAttribute(default=1)
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()


class ReviewRow(Row, discriminator="Review"):
    """Review (``keys.review``): artifacts submitted on a task for one named reviewer, each bound to
    its digest. SUBMITTED -> ACCEPTED | CHANGES_REQUESTED, under ``revision``."""

    reviewId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    taskId = UnicodeAttribute()
    reviewKind = UnicodeAttribute()  # finish | research
    state = UnicodeAttribute()
    submitterId = UnicodeAttribute()
    reviewerId = UnicodeAttribute()
    artifacts = JSONAttribute(default=list)  # [{artifactId, digest}]
    note = JSONAttribute(null=True)  # {text, by, byKind, at}
    comments = JSONAttribute(default=list)
    inboxSk = UnicodeAttribute()  # the reviewer's inbox entry
    revision = NumberAttribute(default=1)
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()
    decidedAt = UnicodeAttribute(null=True)


class ChannelRow(Row, discriminator="Channel"):
    """Channel entry (``keys.channel_entry``): made by the first post, counted by every post."""

    name = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    messageCount = NumberAttribute(default=0)
    lastMessageAt = UnicodeAttribute()


class ChannelMessageRow(Row, discriminator="ChannelMessage"):
    """Channel message (``keys.channel_message``): retained, addressed to nobody."""

    messageId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    channel = UnicodeAttribute()
    fromId = UnicodeAttribute()
    fromKind = UnicodeAttribute()
    text = UnicodeAttribute()
    taskId = UnicodeAttribute(null=True)
    postedAt = UnicodeAttribute()


class PromotionRow(Row, discriminator="Promotion"):
    """Promotion (``keys.promotion``): a channel message made into a task or a proposed decision,
    once per message and target (``target``: ``task`` with ``taskId``, ``decision`` with ``decisionId``)."""

    workspaceId = UnicodeAttribute()
    channel = UnicodeAttribute()
    messageId = UnicodeAttribute()
    target = UnicodeAttribute()
    taskId = UnicodeAttribute(null=True)
    decisionId = UnicodeAttribute(null=True)
    promotedBy = UnicodeAttribute()
    promotedByKind = UnicodeAttribute(null=True)  # agent | human; absent on promotions stored before it was kept
    promotedAt = UnicodeAttribute()


class DecisionRow(Row, discriminator="Decision"):
    """Proposed decision (``keys.decision``): a channel message promoted for the people who decide.
    ``state`` is ``PROPOSED``: promotion accepts nothing, and no tool moves it on yet. The message's
    text and author are kept as written (provenance), beside who promoted it."""

    decisionId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    state = UnicodeAttribute()
    title = UnicodeAttribute()
    text = UnicodeAttribute()
    authorId = UnicodeAttribute()
    authorKind = UnicodeAttribute()  # agent | human: whose credential wrote the message
    postedAt = UnicodeAttribute()  # when the message was posted
    channel = UnicodeAttribute()
    messageId = UnicodeAttribute()
    taskId = UnicodeAttribute(null=True)  # the task the message was about, if any
    proposedBy = UnicodeAttribute()
    proposedByKind = UnicodeAttribute()
    proposedAt = UnicodeAttribute()
    revision = NumberAttribute(default=1)


class InboxRow(Row, discriminator="Inbox"):
    """Inbox entry (``keys.inbox_entry``): something addressed to one actor. ``deliveredAt`` is
    when it was stored, ``readAt`` when an inbox read first returned it, ``ackedAt`` when the actor
    acknowledged it; three separate facts."""

    entryId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    actorId = UnicodeAttribute()
    type = UnicodeAttribute()  # question | answer | cancelled | late_reply | message | review
    fromId = UnicodeAttribute()
    fromKind = UnicodeAttribute()
    subjectId = UnicodeAttribute(null=True)  # the request, message or artifact it is about
    taskId = UnicodeAttribute(null=True)
    text = UnicodeAttribute(null=True)
    deliveredAt = UnicodeAttribute()
    readAt = UnicodeAttribute(null=True)
    ackedAt = UnicodeAttribute(null=True)
    closedAt = UnicodeAttribute(null=True)  # a question that no longer waits (answered or cancelled)


class HelperLinkRow(Row, discriminator="HelperLink"):
    """Helper link (``keys.helper_link``): the helper task's work feeds the parent task; who decided
    it and why are its provenance. Written once per pair."""

    workspaceId = UnicodeAttribute()
    parentTaskId = UnicodeAttribute()
    helperTaskId = UnicodeAttribute()
    decidedBy = UnicodeAttribute()
    decidedByKind = UnicodeAttribute()
    reason = JSONAttribute(null=True)  # {text, by, byKind, at}
    linkedAt = UnicodeAttribute()


class IntegrationRow(Row, discriminator="Integration"):
    """Integration (``keys.integration``): the exact input revisions (artifacts by digest, tasks by
    revision) frozen for one named reviewer. FROZEN -> ACCEPTED; a re-freeze rewrites the inputs
    under ``revision`` and keeps the earlier sets in ``history``."""

    integrationId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    taskId = UnicodeAttribute()
    state = UnicodeAttribute()
    reviewerId = UnicodeAttribute()
    frozenBy = UnicodeAttribute()
    frozenByKind = UnicodeAttribute()
    inputs = JSONAttribute(default=dict)  # {artifacts: [{artifactId, digest}], tasks: [{taskId, revision}]}
    frozenDigest = UnicodeAttribute()
    note = JSONAttribute(null=True)
    history = JSONAttribute(default=list)  # earlier frozen sets: [{revision, inputs, frozenDigest, frozenBy, frozenAt}]
    revision = NumberAttribute(default=1)
    createdAt = UnicodeAttribute()
    frozenAt = UnicodeAttribute()
    acceptedBy = UnicodeAttribute(null=True)
    acceptedAt = UnicodeAttribute(null=True)


class ConsultationRow(Row, discriminator="Consultation"):
    """Prepared consultation (``keys.consultation``): a frozen context (task, question, artifacts by
    digest, research inputs) for an expert profile. PREPARED -> APPROVED (an operator, on exactly
    ``inputsDigest``); results are retained as they arrive. Nothing here runs an expert."""

    consultationId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    taskId = UnicodeAttribute()
    profile = UnicodeAttribute()
    state = UnicodeAttribute()
    question = JSONAttribute()  # {text, by, byKind, at}
    artifacts = JSONAttribute(default=list)  # [{artifactId, digest}]
    researchInputs = JSONAttribute(default=list)  # [{artifactId, digest, by, at}]
    inputsDigest = UnicodeAttribute()
    preparedBy = UnicodeAttribute()
    preparedByKind = UnicodeAttribute()
    approvedBy = UnicodeAttribute(null=True)
    approvedAt = UnicodeAttribute(null=True)
    results = JSONAttribute(default=list)  # [{text, by, byKind, at, source}]
    revision = NumberAttribute(default=1)
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()


class AttentionRow(Row, discriminator="Attention"):
    """Operator attention item (``keys.attention``): something prepared for the workspace's
    operators (a consultation waiting for approval, a result that arrived). Read with
    ``mj_inbox(operator_attention=true)``; that read writes nothing, so it carries no read stamp."""

    attentionId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    attentionKind = UnicodeAttribute()  # consultation.prepared | consultation.result
    subjectId = UnicodeAttribute()
    taskId = UnicodeAttribute(null=True)
    text = UnicodeAttribute(null=True)
    fromId = UnicodeAttribute()
    fromKind = UnicodeAttribute()
    at = UnicodeAttribute()


class AttachmentRow(Row, discriminator="Attachment"):
    """Task attachment (``keys.attachment``): a file stored at ``objectKey`` (objects/<ws>/attachment/<id>),
    recorded with what its upload grant declared and who uploaded it."""

    attachmentId = UnicodeAttribute()
    taskId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    fileName = UnicodeAttribute()
    contentType = UnicodeAttribute()
    size = NumberAttribute()
    sha256 = UnicodeAttribute()
    objectKey = UnicodeAttribute()
    grantId = UnicodeAttribute()
    uploadedBy = UnicodeAttribute()
    uploadedByName = UnicodeAttribute()
    uploadedAt = UnicodeAttribute()


class AttachmentCountRow(Row, discriminator="AttachmentCount"):
    """Attachment counter (``keys.attachment_count``), +1 in each attach transaction."""

    count = NumberAttribute(default=0)  # type: ignore[assignment]  # the stored name; shadows Model.count (a query)


class CommentCountRow(Row, discriminator="CommentCount"):
    """Comment counter (``keys.comment_count``): sorts before the comments, so one Query gives
    list_comments its total and its first page."""

    count = NumberAttribute(default=0)  # type: ignore[assignment]  # the stored name; shadows Model.count (a query)


class LinkRow(Row, discriminator="Link"):
    """One half of a task link (``keys.link_out`` on the source, ``keys.link_in`` on the target).

    Both halves carry the same attributes; ``direction`` says which half this is. The ends' task
    keys are stored because they never change; titles and board names are read when listing.
    """

    fromTaskId = UnicodeAttribute()
    toTaskId = UnicodeAttribute()
    linkKind = UnicodeAttribute()
    direction = UnicodeAttribute()  # "OUT" on the source's side partition, "IN" on the target's
    fromKey = UnicodeAttribute()
    toKey = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    createdAt = UnicodeAttribute()
    createdBy = UnicodeAttribute()


class LinkCountRow(Row, discriminator="LinkCount"):
    """Link counter (``keys.link_count``): the task's edge halves, bounded per task."""

    count = NumberAttribute(default=0)  # type: ignore[assignment]  # the stored name; shadows Model.count (a query)


class LinkGraphRow(Row, discriminator="LinkGraph"):
    """Link graph version (``keys.link_graph``): advanced by every dependency insert of the
    workspace, so racing inserts that together would close a cycle cannot both commit."""

    version = NumberAttribute(default=0)


class SubtaskRow(Row, discriminator="Subtask"):
    """Subtask (``keys.subtask``): one checklist item of a task, in the task's side partition.

    Written only together with the task's two rows (their ``subtaskCount``/``subtasksDone``),
    under the task's ``updatedAt`` condition, so the counts always equal the items.
    """

    subtaskId = UnicodeAttribute()
    taskId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    title = UnicodeAttribute()
    completed = BooleanAttribute(default=False)
    completedAt = UnicodeAttribute(null=True)
    createdBy = UnicodeAttribute()
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()


class LabelRow(Row, discriminator="Label"):
    """Board label (``keys.label``): in the board partition, between the columns and the tasks.

    ``taskCount`` counts the tasks (archived ones included) whose ``labelIds`` hold the label;
    set_task_labels and the label delete keep it in step in their transactions. ``rev`` grows by
    one with every set_task_labels that adds or removes the label; the delete conditions on the
    value it read before looking for the label's tasks, so a task labelled meanwhile is never
    missed. ``deletingAt`` marks a delete that had more tasks to detach than one call does (the
    label is hidden and takes no new tasks until a later delete call finishes it).
    """

    labelId = UnicodeAttribute()
    boardId = UnicodeAttribute()
    name = UnicodeAttribute()
    color = UnicodeAttribute()
    taskCount = NumberAttribute(default=0)
    rev = NumberAttribute(default=0)
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()
    deletingAt = UnicodeAttribute(null=True)


class LabelNameRow(Row, discriminator="LabelName"):
    """Label-name claim (``keys.label_name_claim``): written with ``attribute_not_exists`` in the
    label's create (or rename) transaction, so two labels of one board never share a name,
    compared case-insensitively, even when creates race."""

    labelId = UnicodeAttribute()


class ProjectRow(Row, discriminator="Project"):
    """Project head (``keys.project``): in its workspace's partition. Milestones and risks are
    bounded lists on the head; ``childCount`` and the link counters are kept by the writes that
    change them, in the same transaction."""

    projectId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    name = UnicodeAttribute()
    slug = UnicodeAttribute()
    status = UnicodeAttribute()
    ownerId = UnicodeAttribute(null=True)
    parentId = UnicodeAttribute(null=True)
    goal = UnicodeAttribute(null=True)
    constraints = string_list(default=list)
    milestones = JSONAttribute(null=True)  # [{title, dueDate, done}]
    risks = JSONAttribute(null=True)  # [{title, severity, mitigation}]
    budget = UnicodeAttribute(null=True)
    successMetrics = string_list(default=list)
    childCount = NumberAttribute(default=0)
    linkCount = NumberAttribute(default=0)
    decisionCount = NumberAttribute(default=0)  # DECISION links
    # One compact copy per link (``domain.store.projects.link_copy``), added and removed in the
    # link's own transaction beside ``linkCount``, so get_project answers from the head alone.
    # Trusted only while its size equals ``linkCount`` (heads written before the copies existed).
    linkCopies = UnicodeSetAttribute(null=True)
    createdBy = UnicodeAttribute()
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()


class ProjectSlugRow(Row, discriminator="ProjectSlug"):
    """Project slug claim (``keys.project_slug_claim``): one slug per workspace."""

    projectId = UnicodeAttribute()


class ProjectLinkRow(Row, discriminator="ProjectLink"):
    """Project link (``keys.project_link``); a REPO link also carries GSI2 ``keys.repo_link_index``."""

    projectId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    targetType = UnicodeAttribute()
    targetId = UnicodeAttribute()
    createdBy = UnicodeAttribute()
    createdAt = UnicodeAttribute()


class TaskNumberRow(Row, discriminator="TaskNumber"):
    """Task-number pointer (``keys.task_number``): resolves ``workspaceId`` + ``number`` to the task id."""

    taskId = UnicodeAttribute()


class ActivityRow(Row, discriminator="Activity"):
    """Activity row (``keys.activity``; GSI1 ``keys.task_activity`` for a task's log; GSI3
    ``keys.activity_type_index`` for the board's rows of one type)."""

    activityId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    boardId = UnicodeAttribute()
    taskId = UnicodeAttribute(null=True)
    type = UnicodeAttribute()
    source = UnicodeAttribute()
    actorId = UnicodeAttribute()
    at = UnicodeAttribute()
    summary = UnicodeAttribute()
    data = JSONAttribute(null=True)


class RecentActivityRow(Row, discriminator="RecentActivity"):
    """A task's newest activity entries (``keys.task_recent_activity``), written only by
    :func:`domain.store.activity.mirror` inside the transaction that writes the entries.

    ``entries`` are compact JSON arrays (``activityId`` without ``act_``, ``type``, ``source``,
    ``actorId``, ``at``, ``summary``[, ``data``]; items written before hold JSON objects with
    those names, and readers take both: ``domain.store.activity``), unordered, between 1 and ``RECENT_CAP`` of them; ``since`` is
    the ``at`` of the first entry the item ever held (an item younger than its task may lack
    older entries); ``version`` counts the writes (the compare-and-set of a trim)."""

    entries = string_list(default=list, attr_name="e")
    since = UnicodeAttribute(null=True)
    version = NumberAttribute(default=0, attr_name="v")
    # The freshness witness of the task's full item (TaskDetailRow.witness) as its last
    # witnessed write left it; absent on items no such write has reached yet.
    taskWitness = UnicodeAttribute(null=True, attr_name="w")


class TokenRow(Row, discriminator="Token"):
    """Token (``keys.token``, by the SHA-256 of the secret; GSI1 ``keys.user_token``)."""

    tokenId = UnicodeAttribute()
    userId = UnicodeAttribute()
    scopes = string_list(default=list)
    workspaceId = UnicodeAttribute(null=True)
    displayName = UnicodeAttribute(null=True)
    emoji = UnicodeAttribute(null=True)
    expiresAt = UnicodeAttribute(null=True)
    holder = UnicodeAttribute(default="agent")  # "agent" or "human": who holds the credential
    createdAt = UnicodeAttribute()
    revokedAt = UnicodeAttribute(null=True)
    # AWS stack only (`jentrix token create --aws`): the token's API Gateway key in the usage plan.
    usageKeyId = UnicodeAttribute(null=True)
    usageKeyValue = UnicodeAttribute(null=True)
    usagePlanId = UnicodeAttribute(null=True)


class OAuthAccessRow(Row, discriminator="OAuthAccess"):
    """OAuth access token (``keys.oauth_access``): what a call's token check needs, in one item.
    ``ttl`` drops it a day after ``expiresAt``; the check compares ``expiresAt`` itself."""

    grantId = UnicodeAttribute()
    userId = UnicodeAttribute()
    clientId = UnicodeAttribute()
    clientName = UnicodeAttribute()
    scopes = string_list(default=list)
    workspaceId = UnicodeAttribute(null=True)
    audience = UnicodeAttribute()
    expiresAt = UnicodeAttribute()
    grantExpiresAt = UnicodeAttribute()


class OAuthRefreshRow(Row, discriminator="OAuthRefresh"):
    """OAuth refresh token (``keys.oauth_refresh``). ``usedAt`` is set when it is rotated; a
    second use of a used one revokes the grant (reuse detection)."""

    grantId = UnicodeAttribute()
    userId = UnicodeAttribute()
    clientId = UnicodeAttribute()
    usedAt = UnicodeAttribute(null=True)


class OAuthCodeRow(Row, discriminator="OAuthCode"):
    """Authorization code (``keys.oauth_code``): single use, 60 s."""

    userId = UnicodeAttribute()
    clientId = UnicodeAttribute()
    clientName = UnicodeAttribute()
    redirectUri = UnicodeAttribute()
    codeChallenge = UnicodeAttribute()
    scopes = string_list(default=list)
    workspaceId = UnicodeAttribute(null=True)
    resource = UnicodeAttribute()
    expiresAt = UnicodeAttribute()
    usedAt = UnicodeAttribute(null=True)
    grantId = UnicodeAttribute(null=True)  # the grant its exchange created (revoked if the code is replayed)


class OAuthGrantRow(Row, discriminator="OAuthGrant"):
    """A user's consent to one client (``keys.oauth_grant``): the "connected app"."""

    grantId = UnicodeAttribute()
    userId = UnicodeAttribute()
    clientId = UnicodeAttribute()
    clientName = UnicodeAttribute()
    clientHost = UnicodeAttribute()
    scopes = string_list(default=list)
    workspaceId = UnicodeAttribute(null=True)
    resource = UnicodeAttribute()
    createdAt = UnicodeAttribute()
    lastUsedAt = UnicodeAttribute(null=True)
    expiresAt = UnicodeAttribute()  # sliding: each refresh moves it, never past absoluteExpiresAt
    absoluteExpiresAt = UnicodeAttribute()
    revokedAt = UnicodeAttribute(null=True)
    revokedReason = UnicodeAttribute(null=True)
    accessDigests = string_list(default=list)  # "<digest> <expiry ms>" of live access tokens


class OAuthClientRow(Row, discriminator="OAuthClient"):
    """A dynamically registered public client (``keys.oauth_client``); ``ttl`` collects it when unused."""

    clientId = UnicodeAttribute()
    clientName = UnicodeAttribute()
    redirectUris = string_list(default=list)
    applicationType = UnicodeAttribute(default="native")
    createdAt = UnicodeAttribute()
    expiresAt = UnicodeAttribute()


class OAuthClientDocumentRow(Row, discriminator="OAuthClientDocument"):
    """The last good copy of a client ID metadata document (``keys.oauth_client_document``)."""

    url = UnicodeAttribute()
    document = UnicodeAttribute()  # the JSON as fetched (at most the fetcher's size cap)
    fetchedAt = UnicodeAttribute()
    freshUntil = UnicodeAttribute()
    staleUntil = UnicodeAttribute()


class SigninLinkRow(Row, discriminator="SigninLink"):
    """A one-time sign-in link (``keys.signin_link``): local stacks only."""

    userId = UnicodeAttribute()
    expiresAt = UnicodeAttribute()
    usedAt = UnicodeAttribute(null=True)


class WebSessionRow(Row, discriminator="WebSession"):
    """A browser session of the console (``keys.web_session``); the cookie holds the secret."""

    userId = UnicodeAttribute()
    csrf = UnicodeAttribute()
    createdAt = UnicodeAttribute()
    expiresAt = UnicodeAttribute()


class OidcStateRow(Row, discriminator="OidcState"):
    """A sign-in in flight at the OpenID Connect provider (``keys.oidc_state``)."""

    nonce = UnicodeAttribute()
    codeVerifier = UnicodeAttribute()
    returnTo = UnicodeAttribute()
    expiresAt = UnicodeAttribute()


class RateWindowRow(Row, discriminator="RateWindow"):
    """Rate window (``keys.rate_window``): one atomic counter per token per minute."""

    count = NumberAttribute(default=0)  # type: ignore[assignment]  # the stored name; shadows Model.count (a query)


class CreationMarkerRow(Row, discriminator="CreationMarker"):
    """Creation marker (``keys.creation_marker``): the crash-safe half of idempotency.

    Written with ``attribute_not_exists`` in the same transaction as the entity it names, so a
    retried create whose first attempt committed finds this row instead of creating twice.
    """

    entityId = UnicodeAttribute()
    argsHash = UnicodeAttribute()
    tool = UnicodeAttribute()


class BulkChunkRow(Row, discriminator="BulkChunk"):
    """Chunk marker (``keys.bulk_chunk_marker``) of a keyed bulk edit: written with
    ``attribute_not_exists`` in the chunk's own transaction, it records which items that
    transaction applied (``applied``: input index, the task as answered, changed fields), so a
    retry with the same key skips them and reports them as the first call did."""

    argsHash = UnicodeAttribute()
    tool = UnicodeAttribute()
    applied = JSONAttribute()


def values(row: Model) -> dict[str, Any]:
    """The row's attribute values by attribute name, as stored on the instance: ``values(row)
    .get("title")`` is what ``row.title`` returns (an unset attribute is ``None``), read from the
    same dict (``Model.attribute_values``) without PynamoDB's descriptor, which costs ~1 µs a read
    against ~0.1 µs. For views that read every field of many rows (a snapshot reads 16 per task);
    read-only: writes go through the attributes."""
    return row.attribute_values


def plain(row: Model) -> dict[str, Any]:
    """The row's attributes as plain Python values (Decimal-free), keys and discriminator dropped."""
    data = row.to_simple_dict()
    for k in ("PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "kind", "ttl"):
        data.pop(k, None)
    return data


class SearchPendingRow(Row, discriminator="SearchPending"):
    """Pending-index marker (``keys.search_pending``): written in the entity's own transaction
    with the text to index and its version; ``gone`` when the doc left the index (archive,
    delete). Queries evaluate it in memory until the postings land (docs/search.md)."""

    doc = UnicodeAttribute()
    taskId = UnicodeAttribute()
    version = UnicodeAttribute()
    title = UnicodeAttribute(null=True)
    description = UnicodeAttribute(null=True)
    comment = UnicodeAttribute(null=True)
    body = UnicodeAttribute(null=True)  # an artifact's redacted text (artifacts corpus)
    gone = BooleanAttribute(default=False)
    #: when the text was written (the entity's ``updatedAt`` where it has one): of two pending
    #: records of one doc the later ``at`` wins, whatever order they are read or streamed in
    at = UnicodeAttribute(null=True)
    #: a batch record (sort key ``B#<id>``, one per bulk transaction): JSON list of the docs it
    #: holds (``doc``, ``taskId``, ``version``, ``title``, ``description``, ``gone``, ``at``);
    #: :func:`domain.store.search_marks.expand` turns it into per-doc records
    batch = UnicodeAttribute(null=True)


class SessionRow(Row, discriminator="Session"):
    """Agent session head (``keys.session``): a connected coding session of one operator in one
    project (fixed for life) and repository. ``status``: STARTING -> ACTIVE (bound to a provider
    thread) -> COMPLETED | INTERRUPTED | CANCELLED; INTERRUPTED -> ACTIVE (resume). The current
    alignment (``alignment``: ids + display names) mirrors the open interval of the
    :class:`SessionAlignmentRow` history; ``capture`` is the trace-manifest check of the last
    complete (independent of ``status``). Edits are CAS on ``updatedAt``."""

    sessionId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    projectId = UnicodeAttribute()
    projectName = UnicodeAttribute()
    operatorId = UnicodeAttribute()
    operatorName = UnicodeAttribute()
    repository = UnicodeAttribute()
    status = UnicodeAttribute()
    provider = UnicodeAttribute(null=True)
    providerThreadId = UnicodeAttribute(null=True)
    continuesSessionId = UnicodeAttribute(null=True)
    repoStart = JSONAttribute(null=True)  # {branch, commit, dirty} as the launcher reported it
    repoEnd = JSONAttribute(null=True)
    taskId = UnicodeAttribute(null=True)  # the open alignment interval's task
    ownerId = UnicodeAttribute(null=True)  # the accountable owner of the open interval
    alignment = JSONAttribute(null=True)  # the snapshot align_agent_session returned
    alignmentCount = NumberAttribute(default=0)
    usage = JSONAttribute(null=True)  # provider-reported token counts, never estimated
    capture = JSONAttribute(null=True)  # {expectedParts, storedParts, missingParts, summaryArtifactId}
    captureComplete = BooleanAttribute(default=False)
    outcome = UnicodeAttribute(null=True)
    resumeCount = NumberAttribute(default=0)
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()
    boundAt = UnicodeAttribute(null=True)
    endedAt = UnicodeAttribute(null=True)


class SessionAlignmentRow(Row, discriminator="SessionAlignment"):
    """One task-alignment interval of a session (``keys.session_alignment``), append-only: a
    re-align closes the open interval (``endedAt``) and puts the next ordinal, in one transaction."""

    sessionId = UnicodeAttribute()
    ordinal = NumberAttribute()
    snapshot = JSONAttribute()  # ids + display names, as returned to the caller
    alignedBy = UnicodeAttribute()
    startedAt = UnicodeAttribute()
    endedAt = UnicodeAttribute(null=True)


class SessionClaimRow(Row, discriminator="SessionClaim"):
    """Provider binding claim (``keys.session_binding_claim``): the session a provider thread is
    bound to. Put under ``attribute_not_exists(PK) OR open = false`` in the binding transaction;
    completing or cancelling the session sets ``open`` to false, releasing the thread."""

    provider = UnicodeAttribute()
    threadId = UnicodeAttribute()
    sessionId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    projectId = UnicodeAttribute()
    operatorId = UnicodeAttribute()
    open = BooleanAttribute(default=True)
    boundAt = UnicodeAttribute()


class UploadGrantRow(Row, discriminator="UploadGrant"):
    """Upload grant (``keys.upload_grant``): what one presigned PUT may store, for whom, until when.

    ``state`` ISSUED -> USED exactly once, in the transaction of the call that consumes it
    (condition ``state = ISSUED and expiresAtMs > now``); ``usedBy`` is that call's digest (user +
    arguments), so the same call retried after a lost answer is recognised; ``entityId`` is what
    it made. ``ttl`` lets DynamoDB drop it a day after it expired."""

    grantId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    userId = UnicodeAttribute()
    purpose = UnicodeAttribute()  # artifact | attachment
    fileName = UnicodeAttribute()
    contentType = UnicodeAttribute()
    size = NumberAttribute()
    sha256 = UnicodeAttribute()  # 64 lowercase hex digits
    objectKey = UnicodeAttribute()  # pending/<ws>/<grantId>
    createdAt = UnicodeAttribute()
    expiresAt = UnicodeAttribute()
    expiresAtMs = NumberAttribute()
    state = UnicodeAttribute(default="ISSUED")
    usedBy = UnicodeAttribute(null=True)
    usedAt = UnicodeAttribute(null=True)
    entityId = UnicodeAttribute(null=True)


class _ArtifactFields(Row):
    """What an artifact's head and each of its link copies carry (no text body)."""

    artifactId = UnicodeAttribute()
    workspaceId = UnicodeAttribute()
    type = UnicodeAttribute()
    title = UnicodeAttribute()
    storage = UnicodeAttribute()  # INLINE | EXTERNAL_URL | S3_OBJECT
    url = UnicodeAttribute(null=True)  # EXTERNAL_URL
    objectKey = UnicodeAttribute(null=True)  # S3_OBJECT: objects/<ws>/artifact/<id>
    fileName = UnicodeAttribute(null=True)
    contentType = UnicodeAttribute(null=True)
    size = NumberAttribute(null=True)
    sha256 = UnicodeAttribute(null=True)
    bodyChars = NumberAttribute(null=True)  # length of the stored (redacted) body; null = no body
    redactions = string_list(default=list)  # rule ids of the secrets replaced
    taskId = UnicodeAttribute(null=True)
    projectId = UnicodeAttribute(null=True)
    sessionId = UnicodeAttribute(null=True)
    runId = UnicodeAttribute(null=True)
    decisionId = UnicodeAttribute(null=True)
    workOrderId = UnicodeAttribute(null=True)
    tracePart = UnicodeAttribute(null=True)  # TRACE: the manifest part this object is
    grantId = UnicodeAttribute(null=True)
    createdBy = UnicodeAttribute()
    createdByName = UnicodeAttribute()
    createdAt = UnicodeAttribute()
    updatedAt = UnicodeAttribute()
    withdrawnAt = UnicodeAttribute(null=True)
    withdrawnBy = UnicodeAttribute(null=True)


class ArtifactRow(_ArtifactFields, discriminator="Artifact"):
    """Artifact head (``keys.artifact``): the record get_artifact and list_artifacts answer with."""


class ArtifactLinkRow(_ArtifactFields, discriminator="ArtifactLink"):
    """A copy of an artifact's head under one of its links (``keys.artifact_link``), written and
    withdrawn in the head's transaction."""

    link = UnicodeAttribute()  # task | project | session | run | decision | workOrder


class ArtifactBodyRow(Row, discriminator="ArtifactBody"):
    """An artifact's text body after redaction (``keys.artifact_body``); deleted on withdrawal."""

    artifactId = UnicodeAttribute()
    body = UnicodeAttribute()
