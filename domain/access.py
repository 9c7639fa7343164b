"""Access policy as data: what a tool acts on, and the one step that checks it.

A :class:`~domain.registry.ToolSpec` declares its **target** — the argument (or a small
resolver, for either/or tools) naming the workspace-scoped entity it acts on — its minimum
workspace role, and its **refs**: secondary id arguments and the error a foreign or unknown
value gets. :func:`authorize` runs once per call, after input validation and before the
handler (docs/architecture.md, "The call pipeline"):

1. (before idempotency, :func:`check_binding`) an observe session refuses writes, and a tool
   marked ``refused_when_bound`` is refused on a pinned token or a bound connection;
2. the target is located from its id alone (ids carry their workspace, docs/data-model.md
   "Identifiers"): a malformed id, or one outside the credential's pin or binding, is
   NOT_FOUND worded exactly as for a missing one;
3. the caller's membership is read (one consistent GetItem): none is NOT_FOUND as well;
4. the role is compared with ``min_role``: too low is FORBIDDEN naming the role needed;
5. each ref that carries its tenancy is checked to lie in the target's board or workspace;
6. a spec that needs operator authority (``operator``) is FORBIDDEN unless the caller holds it
   (domain.operator: the workspace item is read in the membership's BatchGetItem).

A list target (bulk tools) is located and checked item by item; the failures become per-item
errors on ``ctx.targets`` (or fail the whole call, for all-or-nothing tools). The handler
receives the located target on ``ctx.target`` and never re-checks it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from domain import errors, ids
from domain.auth import ROLE_RANK, Role
from domain.errors import ErrorCode, ToolError
from domain.located import ItemAccess as ItemAccess
from domain.targets import TENANCY_KINDS as TENANCY_KINDS
from domain.targets import Kind as Kind
from domain.targets import Located as Located
from domain.targets import Prefetch as Prefetch
from domain.targets import Ref as Ref
from domain.targets import RefKind as RefKind
from domain.targets import Resolver as Resolver
from domain.targets import Target as Target
from domain.targets import TargetField as TargetField
from domain.targets import each as each
from domain.targets import either as either
from domain.targets import target as target

if TYPE_CHECKING:
    from domain.context import CallContext
    from domain.registry import ToolSpec


# -- locating ---------------------------------------------------------------------------------
def locate(ctx: CallContext, kind: str, value: str, field_name: str | None = None) -> Located:
    """Read where ``value`` lives from the id alone.

    Raises:
        ToolError: NOT_FOUND for a malformed id (worded as for a missing one); for workspaces,
            INVALID_INPUT/FORBIDDEN from :meth:`CallContext.workspace_argument`.
    """
    if kind == "workspace":
        ws = ctx.workspace_argument(value, field_name or "workspaceId")
        if ids.parse_workspace(ws) is None:  # refused here, before any read (issue 24)
            raise errors.not_found("workspace", value)
        return Located("workspace", ws, ws)
    where = locate_plain(kind, value)
    if where is None:
        raise errors.not_found(kind, value)
    return where


def _admit(spec: ToolSpec, ctx: CallContext, where: Located) -> None:
    row = ctx.member(where.workspace_id, where.kind, where.ident)
    needed = spec.min_role or "MEMBER"
    if not role_allows(row.role, needed):
        raise ToolError(
            ErrorCode.FORBIDDEN,
            f"{spec.name} needs the {needed} role in this workspace; you are {row.role}.",
            "Ask a workspace owner or admin to run it, or to change your role.",
        )


def refuse_when_bound(ctx: CallContext) -> None:
    """A pinned token or a bound connection works in one workspace and cannot act outside it."""
    if ctx.principal.workspace_pin or (ctx.binding and ctx.binding.workspace_id):
        raise errors.forbidden(
            f"This credential is pinned to one workspace, so {ctx.tool} is refused before anything is written.",
            "Use an unpinned token (jentrix token create without --workspace) on a connection started without --workspace.",
        )


def check_binding(spec: ToolSpec, ctx: CallContext) -> None:
    """The binding rules of a spec, shared by the pipeline and the stdio bridge."""
    if not spec.read_only:
        ctx.ensure_writable()
    if spec.refused_when_bound:
        refuse_when_bound(ctx)


def _check_ref(ref: Ref, where: Located, value: Any) -> None:
    values = value if ref.many and isinstance(value, list) else [value]
    for v in values:
        if not isinstance(v, str):
            continue
        inner = locate_plain(ref.kind, v)
        if (
            inner is not None
            and inner.workspace_id == where.workspace_id
            and (ref.within != "board" or inner.board_id == where.board_id)
        ):
            continue
        if ref.error is ErrorCode.NOT_FOUND:
            raise errors.not_found(ref.kind, v)
        raise errors.invalid(
            ref.field,
            ref.message or f"must be a {ref.kind} of the same {ref.within} as the {where.kind}",
            ref.hint or "",
        )


def well_formed(kind: str, value: str) -> bool:
    """Whether ``value`` has the shape of a ``kind`` id (users and labels included); read from
    the id alone."""
    if kind == "user":
        return ids.parse_user(value) is not None
    return locate_plain(kind, value) is not None


def refuse_malformed(spec: ToolSpec, ctx: CallContext, args: Any) -> None:
    """Refuse a malformed id before any storage work (issue 24): every alternative of the
    target that the call sets, and every ref, must have the shape of its kind. The answers are
    the ones the same id gets after the reads (NOT_FOUND for a target, the ref's declared
    error), so only the cost changes: no read at all for an id that cannot exist.

    ``workspaceId: ""`` (the bound workspace) is left to :func:`locate`."""
    t = spec.target
    if t is None:
        return
    if t.each is None and t.resolve is not None:
        for tf in t.fields:
            value = getattr(args, tf.field, None)
            if not isinstance(value, str) or (tf.kind == "workspace" and value == ""):
                continue
            if not well_formed(tf.kind, value):
                by_number = any(f.kind == "workspace" and "number" in dict(f.with_args) for f in t.fields)
                raise (errors.task_key_for_id(value) if tf.kind == "task" and by_number else None) or errors.not_found(
                    tf.kind, value
                )
    for ref in spec.refs:
        value = getattr(args, ref.field, None)
        values = value if ref.many and isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, str) and not well_formed(ref.kind, v):
                if ref.error is ErrorCode.NOT_FOUND:
                    raise errors.not_found(
                        "member" if ref.kind == "user" else ref.kind, v
                    )  # worded as the handlers word it
                raise errors.invalid(ref.field, ref.message or f"is not a {ref.kind} id", ref.hint or "")


def locate_plain(kind: str, value: str) -> Located | None:
    """Where ``value`` lives, from the id alone, without a call context (so ``""`` is no
    workspace); ``None`` if malformed. :func:`locate` adds the context's workspace rules."""
    if kind == "workspace":
        ws = ids.parse_workspace(value)
        return Located("workspace", value, ws) if ws else None
    if kind == "board":
        b = ids.parse_board(value)
        return Located("board", value, b[0], board_id=b[1]) if b else None
    if kind == "column":
        c = ids.parse_column(value)
        return Located("column", value, c[0], board_id=c[1], column_id=c[2]) if c else None
    if kind == "task":
        t = ids.parse_task(value)
        return Located("task", value, t.workspace_id, board_id=t.board_id, task=t) if t else None
    if kind == "comment":
        cm = ids.parse_comment(value)
        return (
            Located("comment", value, cm.task.workspace_id, board_id=cm.task.board_id, task=cm.task, comment=cm)
            if cm
            else None
        )
    if kind == "subtask":
        st = ids.parse_subtask(value)
        return (
            Located("subtask", value, st.task.workspace_id, board_id=st.task.board_id, task=st.task, subtask=st)
            if st
            else None
        )
    if kind == "label":
        lb = ids.parse_label(value)
        return Located("label", value, lb[0], board_id=lb[1], label_id=lb[2]) if lb else None
    if kind == "project":
        pj = ids.parse_project(value)
        return Located("project", value, pj[0], project_id=pj[1]) if pj else None
    if kind == "invitation":
        inv = ids.parse_invitation(value)
        return Located("invitation", value, inv.workspace_id, invitation=inv) if inv else None
    if kind == "session":
        ses = ids.parse_session(value)
        return Located("session", value, ses.workspace_id, session=ses) if ses else None
    if kind == "artifact":
        ar = ids.parse_artifact(value)
        return Located("artifact", value, ar.workspace_id, artifact=ar) if ar else None
    raise ValueError(kind)


# The argument that names a located entity, for errors about it (a resolved target has no one field).
_FIELD_OF_KIND = {
    "board": "boardId",
    "column": "columnId",
    "task": "taskId",
    "comment": "commentId",
    "subtask": "subtaskId",
    "label": "labelId",
}


def _with_entries(spec: ToolSpec, plan: Prefetch, wheres: list[Located]) -> Prefetch:
    """``plan`` plus the board entries an ``open_board`` spec checks (same BatchGetItem)."""
    if not spec.open_board:
        return plan
    from domain.store import boards

    entries = [boards.entry_key(w.board_id) for w in wheres if w.board_id]
    return replace(plan, items=tuple(dict.fromkeys([*plan.items, *entries])))


def board_open_error(spec: ToolSpec, ctx: CallContext, where: Located, field: str | None = None) -> ToolError | None:
    """For an ``open_board`` spec: INVALID_INPUT when ``where``'s board is archived (its entry,
    read with the membership, carries ``archivedAt``) — an archived board's tasks, their side
    items and its labels are read-only (docs/data-model.md, "Archived boards"). The write's own
    ConditionCheck on the entry covers an archive landing after this read."""
    if not spec.open_board or not where.board_id:
        return None
    from domain.store import boards

    if not boards.is_archived(ctx.item(boards.entry_key(where.board_id))):
        return None
    t = spec.target
    if field is None:
        field = (
            t.fields[0].field
            if t is not None and t.resolve is None and t.each is None
            else _FIELD_OF_KIND.get(where.kind, "boardId")
        )
    return errors.board_archived(field)


def _read_with_membership(spec: ToolSpec, ctx: CallContext, where: Located, args: Any) -> None:
    from domain.store import keys, parallel
    from domain.store import members as member_store
    from domain.store.models import MemberRow, Row

    state = ctx.call_state
    plan = _with_entries(spec, spec.prefetch(where, args) if spec.prefetch is not None else Prefetch(), [where])
    if spec.reads:  # the named read plans' items join the same BatchGetItem (domain.store.reads)
        from domain.store.reads import Reads, plan_keys

        read_keys = plan_keys(spec.reads, where, args)
        plan = replace(plan, items=tuple(dict.fromkeys([*plan.items, *read_keys])))
        state.read = Reads(spec.reads, state.prefetched, where, args)
    if spec.operator is not False:  # the operator check's workspace item (domain.operator)
        from domain import operator

        head = operator.workspace_item(where.workspace_id)
        plan = replace(plan, items=tuple(dict.fromkeys([*plan.items, head])))
    if spec.governed is not None:  # the policy with the membership; an agent's earlier requests in parallel
        from domain import governance

        plan = governance.with_gate_reads(plan, spec, ctx, where, args)
    for name, fn in plan.queries:
        state.queries[name] = parallel.submit(fn)
    if spec.read_only and where.workspace_id not in state.members and ctx.visible(where.workspace_id):
        # A read tool may use the member item a consistent read in this process returned within
        # the warm bound (domain/store/warm.py); a write always reads it with its items.
        kept = member_store.cached(where.workspace_id, ctx.principal.user_id)
        if kept is not None:
            state.members[where.workspace_id] = kept
    if where.workspace_id in state.members:  # read once per call
        if plan.items:
            # Eventually consistent only when the handler checks every item against a witness.
            eventual = bool(plan.eventual) and set(plan.items) <= set(plan.eventual)
            if eventual and state.read is not None:
                state.read.eventual = True
            got = Row.batch_get(list(plan.items), consistent_read=not eventual)
            state.prefetched.update({(r.PK, r.SK): r for r in got})
        return
    if not ctx.visible(where.workspace_id):
        raise errors.not_found(where.kind, where.ident)
    member_key = keys.member(where.workspace_id, ctx.principal.user_id)
    wanted = [member_key, *(k for k in plan.items if k != member_key)]
    rows = {(r.PK, r.SK): r for r in Row.batch_get(wanted, consistent_read=True)}
    member = rows.pop(member_key, None)
    state.prefetched.update(rows)
    state.settle_rate()
    if not isinstance(member, MemberRow):
        raise errors.not_found(where.kind, where.ident)
    state.members[where.workspace_id] = member
    member_store.remember(member)


def _read_many_with_memberships(spec: ToolSpec, ctx: CallContext, entries: list[ItemAccess], args: Any) -> None:
    """The list-target form of :func:`_read_with_membership`: ``spec.prefetch(wheres, args)``
    names the items and queries of every located item; the caller's member item of each visible
    workspace is read in the same BatchGetItem. A workspace without one is remembered as such,
    so its items are NOT_FOUND with no second read."""
    from domain.store import keys, parallel
    from domain.store.models import MemberRow, Row

    state = ctx.call_state
    wheres = [e.where for e in entries if e.where is not None]
    plan = _with_entries(spec, spec.prefetch(wheres, args) if spec.prefetch is not None else Prefetch(), wheres)
    if spec.reads:  # each item's named read plans join the same BatchGetItem (domain.store.reads)
        from domain.store.reads import Reads, plan_keys

        read_keys = [k for w in wheres for k in plan_keys(spec.reads, w, args)]
        plan = Prefetch(items=tuple(dict.fromkeys([*plan.items, *read_keys])), queries=plan.queries)
        for e in entries:
            if e.where is not None:
                e.read = Reads(spec.reads, state.prefetched, e.where, args)
    for name, fn in plan.queries:
        state.queries[name] = parallel.submit(fn)
    known = state.members
    spaces = list(
        dict.fromkeys(w.workspace_id for w in wheres if ctx.visible(w.workspace_id) and w.workspace_id not in known)
    )
    member_keys = [keys.member(ws, ctx.principal.user_id) for ws in spaces]
    wanted = list(dict.fromkeys([*member_keys, *plan.items]))
    if not wanted:
        return
    rows = {(r.PK, r.SK): r for r in Row.batch_get(wanted, consistent_read=True)}
    for ws, key in zip(spaces, member_keys, strict=True):
        member = rows.pop(key, None)
        if isinstance(member, MemberRow):
            state.members[ws] = member
        else:
            state.absent_members.add(ws)
    state.prefetched.update(rows)
    state.settle_rate()


# -- the role ladder, for every caller ---------------------------------------------------------
# The tools reach these through authorize(); the CLI's human commands (functions/cli_*.py) call
# them directly, so a role is compared in one place and never by hand outside the domain.
def role_allows(role: str | None, needed: str) -> bool:
    """Whether a member holding ``role`` may do what needs ``needed`` (OWNER > ADMIN > MEMBER);
    ``None`` (no membership) and unknown roles allow nothing."""
    return ROLE_RANK.get(role or "", 0) >= ROLE_RANK[needed]


def roles_at_least(needed: str) -> tuple[Role, ...]:
    """The roles that satisfy ``needed``, highest first (for a write's role guard)."""
    ladder: tuple[Role, ...] = ("OWNER", "ADMIN", "MEMBER")
    return tuple(r for r in ladder if role_allows(r, needed))


def role_to_grant(role: str | None) -> Role:
    """The role needed to hand out ``role`` (an invitation link, an approval that grants it):
    OWNER for OWNER, ADMIN for anything less."""
    return "OWNER" if role == "OWNER" else "ADMIN"


def approver_role(min_role: str | None, granted_role: Any) -> str:
    """The role a human needs to decide a parked call: the tool's ``min_role`` (OWNER when the
    tool is unknown), or OWNER when the call would grant the OWNER role."""
    return "OWNER" if granted_role == "OWNER" else (min_role or "OWNER")


@dataclass(frozen=True)
class Standing:
    """A user's standing in a workspace against a needed role: ``role`` is ``None`` for a
    non-member; ``allowed`` is whether that role satisfies the need."""

    role: str | None
    allowed: bool


def standing(workspace_id: str, user_id: str, needed: str) -> Standing:
    """Read ``user_id``'s membership of ``workspace_id`` (one consistent GetItem) and compare its
    role with ``needed``, as the access step does for a tool's ``min_role``."""
    from domain.store import members

    row = members.get(workspace_id, user_id)
    role = row.role if row is not None else None
    return Standing(role, role_allows(role, needed))


def role_guard(tx: Any, workspace_id: str, user_id: str, needed: str) -> None:
    """ConditionCheck in ``tx``: ``user_id`` still holds a role satisfying ``needed`` at commit
    (a member demoted or removed meanwhile fails the transaction with ``ConditionFailed``)."""
    from domain.store import members

    members.guard_role(tx, workspace_id, user_id, roles_at_least(needed))


def authorize(spec: ToolSpec, ctx: CallContext, args: Any) -> None:
    """Check the spec's access policy for this call; see the module docstring.

    Sets ``ctx.target`` (one target) or ``ctx.targets`` (a list target).

    Raises:
        ToolError: FORBIDDEN, NOT_FOUND or INVALID_INPUT as described above.
    """
    t = spec.target
    if t is None:
        return
    refuse_malformed(spec, ctx, args)
    if t.each is not None:
        first = t.fields[0]
        results: list[ItemAccess] = []
        for i, item in enumerate(getattr(args, first.field) or []):
            value: Any = getattr(item, t.each) if not isinstance(item, dict) else item.get(t.each)
            entry = ItemAccess(i, value)
            try:
                entry.where = locate(ctx, first.kind, value)
            except ToolError as exc:
                if t.all_or_nothing:
                    raise
                entry.error = exc
            results.append(entry)
        if spec.prefetch is not None or spec.open_board or spec.reads:
            _read_many_with_memberships(spec, ctx, results, args)
        for entry in results:
            if entry.where is None:
                continue
            try:
                _admit(spec, ctx, entry.where)
                closed = board_open_error(spec, ctx, entry.where, t.each)
                if closed is not None:
                    raise closed
            except ToolError as exc:
                if t.all_or_nothing:
                    raise
                entry.where, entry.error = None, exc
        ctx.call_state.targets = results
        return
    if t.resolve is not None:
        where = t.resolve(ctx, args)
    else:
        first = t.fields[0]
        where = locate(ctx, first.kind, getattr(args, first.field), first.field)
    _read_with_membership(spec, ctx, where, args)
    _admit(spec, ctx, where)
    closed = board_open_error(spec, ctx, where)
    if closed is not None:
        raise closed
    ctx.call_state.target = where
    for ref in spec.refs:
        if not ref.checked_by_pipeline:
            continue
        value = getattr(args, ref.field, None)
        if value is None or value == []:
            continue
        _check_ref(ref, where, value)
    if spec.operator is not False:  # after the refs: a foreign id is NOT_FOUND for everyone
        from domain import operator

        member = ctx.member(where.workspace_id, where.kind, where.ident)
        operator.admit(spec.name, spec.operator, ctx, where.workspace_id, member.role, args)
