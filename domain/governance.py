"""The governance gate: what happens to an agent's call of a governed tool (docs/governance.md).

A spec declares ``governed="<pack>"`` (the membership tools: ``governed="membership"``); the
pipeline runs :func:`gate` after the access step has admitted the caller's role and before the
handler. Human credentials (``Principal.human``) are never parked. For an agent, the workspace's
policy for the pack (read with the membership, in the same BatchGetItem) decides:

* ``ALLOW`` — the handler runs;
* ``DENY`` — FORBIDDEN with a hint (a human runs it, or an OWNER changes the policy);
* ``REQUIRE_APPROVAL`` (the default) — the call's earlier approval requests (same tool, same
  canonical arguments, same user and token: one Query started in parallel with the membership
  read) decide: an APPROVED unexpired one lets the call through once (the handler's transaction
  consumes it, :meth:`domain.context.CallContext.approval_write`); a PENDING one is answered
  again; otherwise a new request is written — the only write — and the call answers a
  structured ``PENDING_APPROVAL`` result naming the request and how a human approves it.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from domain import errors
from domain.store import governance as store
from domain.store import keys

if TYPE_CHECKING:
    from domain.context import CallContext
    from domain.registry import ToolSpec
    from domain.targets import Located, Prefetch


def request_for(spec: ToolSpec, ctx: CallContext, where: Located, args: Any) -> store.Request:
    """The call as an approval binds it: the workspace argument resolved, so ``""`` and the
    explicit id are the same call."""
    canonical = {k: v for k, v in sorted(args.model_dump(mode="json").items()) if v is not None}
    if "workspaceId" in canonical:
        canonical["workspaceId"] = where.workspace_id
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return store.Request(
        where.workspace_id, spec.name, digest, canonical, ctx.principal.user_id, ctx.principal.token_id
    )


def with_gate_reads(plan: Prefetch, spec: ToolSpec, ctx: CallContext, where: Located, args: Any) -> Prefetch:
    """The access step's reads plus the gate's: the policy item, and for an agent its earlier requests."""
    from domain.targets import Prefetch

    items = (*plan.items, keys.governance_policy(where.workspace_id))
    queries = plan.queries
    if not ctx.principal.human:
        req = request_for(spec, ctx, where, args)
        ctx.call_state.governance_request = req
        queries = (*queries, ("approvals", lambda: store.rounds(req.workspace_id, req.digest)))
    return Prefetch(items=items, queries=queries)


def summary(req: store.Request, ctx: CallContext | None = None) -> str:
    """The call in one line for the human who decides: ``remove_member(userId=usr_… (bea@example.com)) in ws_…``.

    A ``userId`` shows the member's e-mail beside it when the access step read the member (the
    membership tools prefetch the target member), so the human sees whom the change concerns.
    """
    shown = []
    for k, v in req.arguments.items():
        if k == "workspaceId":
            continue
        if k == "userId" and ctx is not None:
            email = getattr(ctx.item(keys.member(req.workspace_id, str(v))), "email", None)
            if email:
                v = f"{v} ({email})"
        shown.append(f"{k}={v}")
    return f"{req.tool}({', '.join(shown)}) in {req.workspace_id}"


def approval_view(row: Any, *, new: bool) -> dict[str, Any]:
    return {
        "id": row.approvalId,
        "tool": row.tool,
        "wouldDo": row.summary,
        "state": row.state,
        "createdAt": row.createdAt,
        "expiresAt": row.expiresAt,
        "newRequest": new,
        "howToApprove": (
            f"A human member of the workspace with the role this tool needs runs `jentrix approvals approve {row.approvalId} "
            "--token-file FILE` (a human token: jentrix token create --human). Then repeat exactly this call with the same token; "
            "it goes through once."
        ),
    }


def gate(spec: ToolSpec, ctx: CallContext, args: Any) -> dict[str, Any] | None:
    """``None`` to run the handler, or the parked answer; raises FORBIDDEN under DENY."""
    where = ctx.call_state.target
    if ctx.principal.human or where is None:
        return None
    policy = store.policy_of(ctx.item(keys.governance_policy(where.workspace_id)), spec.governed or "")
    if policy == "ALLOW":
        return None
    if policy == "DENY":
        raise errors.forbidden(
            f"This workspace's governance policy refuses {spec.name} from an agent's credential.",
            "Ask a human member to make this change with their own credential, or an OWNER to change the policy (jentrix governance set).",
        )
    req = ctx.call_state.governance_request or request_for(spec, ctx, where, args)
    earlier = [
        r
        for r in ctx.query("approvals", lambda: store.rounds(req.workspace_id, req.digest))
        if req.matches(r) and store.live(r)
    ]
    approved = next((r for r in earlier if r.state == "APPROVED"), None)
    if approved is not None:
        ctx.call_state.approval = approved
        return None
    pending = next((r for r in earlier if r.state == "PENDING"), None)
    if pending is not None:
        return {"status": "PENDING_APPROVAL", "approval": approval_view(pending, new=False)}
    row = store.park(req, summary(req, ctx))
    return {"status": "PENDING_APPROVAL", "approval": approval_view(row, new=True)}
