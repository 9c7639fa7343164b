"""The call pipeline every transport runs (docs/architecture.md, "The call pipeline"):

rate window -> scope -> input validation -> binding rules -> access policy (target, role,
refs; :mod:`domain.access`) -> idempotency (keyed tools) -> handler -> envelope.

Access runs before idempotency, so a stored answer is replayed only to a caller who may still
make the call (a member removed since the first call gets NOT_FOUND, not the stored result).

:func:`call_tool` never raises for a tool-level failure: it returns :class:`CallOutcome` with
either ``result`` (the tool's structured result) or ``error`` (the seed-002 envelope). An
unexpected exception becomes INTERNAL carrying a correlation id that is also in the structured
log line; the client never sees a traceback. Authentication itself (401) happens in the
transport before this function, which receives a verified :class:`~domain.auth.Principal`.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from domain import access, errors, faults, governance, idempotency, log_redaction, observability, projection, ratelimit
from domain.auth import Principal
from domain.context import REDACTING, REDACTIONS, Binding, CallContext, CallState, Selection
from domain.errors import ErrorCode, ToolError
from domain.registry import ToolSpec
from domain.settings import settings
from domain.store import deadline
from domain.store.errors import Answer, StoreError
from domain.store.idempotency_markers import Earlier

# stderr, never stdout: on the stdio transport stdout carries only JSON-RPC lines.
logger = observability.logger("jentrix-mcp")
log_redaction.install()  # our loggers (this one included) redact secrets before a line is written


@dataclass(frozen=True)
class CallOutcome:
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def is_error(self) -> bool:
        return self.error is not None


def _validation_error(exc: ValidationError) -> ToolError:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
    kind = first.get("type", "")
    if kind == "extra_forbidden":
        msg = "is not an argument of this tool"
        hint = "Remove it; tools/list shows the accepted arguments in inputSchema."
    elif kind == "missing":
        msg = "is required"
        hint = "Add it and call again."
    else:
        msg = str(first.get("msg", "is invalid")).removeprefix("Value error, ")
        # A validator may word its own hint (PydanticCustomError with a ``hint`` in its context).
        own = (first.get("ctx") or {}).get("hint")
        hint = own if isinstance(own, str) and own else f"Fix '{loc}' to match inputSchema and call again."
    others = len(exc.errors()) - 1
    if others:
        hint += f" ({others} more problem{'s' if others > 1 else ''} after this one.)"
    return errors.invalid(loc, msg, hint)


def call_tool(
    spec: ToolSpec,
    arguments: Any,
    principal: Principal,
    *,
    binding: Binding | None = None,
    correlation_id: str | None = None,
    selection: Selection | None = None,
    rate: ratelimit.Admission | None = None,
) -> CallOutcome:
    """Run one tool call through the whole pipeline; see the module docstring.

    ``selection`` is the connection's effective (toolsets, read-only) when it chose any
    (:func:`domain.toolsets.effective`); get_token_context reports it. ``rate`` is this
    request's rate-window update when the protocol layer already started it (it counts every
    request once); otherwise the call takes its own.

    The call is observed (domain/observability.py): one X-Ray subsegment, one ``tool call`` log
    line (tool, principal, token, outcome, latency; never arguments) and its metrics. The
    correlation id is the API Gateway request id when the transport bound one.

    The whole call runs under one deadline (:mod:`domain.store.deadline`):
    ``JENTRIX_CALL_DEADLINE_MS``, or the transport's own when that is earlier (on Lambda the
    invocation's remaining time less a margin). A call that runs out of it answers the INTERNAL
    "storage unavailable" envelope with ``retryAfterSeconds``."""
    spec = spec.load()  # a manifest row's LazySpec: the real spec, once, not per attribute
    cid = correlation_id or observability.request_id() or uuid.uuid4().hex
    started = time.perf_counter()
    with (
        observability.subsegment(f"tool {spec.name}", tool=spec.name) as sub,
        deadline.bound(settings.call_deadline_ms / 1000),
    ):
        outcome = _run(spec, arguments, principal, binding=binding, cid=cid, selection=selection, rate=rate)
        code = outcome.error["error"]["code"] if outcome.error else "OK"
        if sub is not None:
            sub.put_annotation(key="outcome", value=code)
    latency_ms = (time.perf_counter() - started) * 1000
    logger.info(
        "tool call",
        extra={
            "tool": spec.name,
            "principal": principal.user_id,
            "token_id": principal.token_id,
            "outcome": code,
            "latency_ms": round(latency_ms, 1),
            "correlation_id": cid,
        },
    )
    observability.record_call(spec.name, code, latency_ms)
    return outcome


def _run(
    spec: ToolSpec,
    arguments: Any,
    principal: Principal,
    *,
    binding: Binding | None,
    cid: str,
    selection: Selection | None = None,
    rate: ratelimit.Admission | None = None,
) -> CallOutcome:
    state = CallState(selection=selection)  # what the pipeline writes while the call runs
    ctx = CallContext(principal=principal, correlation_id=cid, tool=spec.name, binding=binding, call_state=state)
    try:
        # The limiter decides from memory: a call it already knows to be over the window is
        # refused here, before any request. An admitted call's add (when one is due) runs while
        # the call validates and reads; state.settle_rate() joins it before anything is written or
        # answered. Every call counts, a call refused for its scope too (docs/rate-limits.md).
        state.rate = rate if rate is not None else ratelimit.admit(principal.token_id)
        if state.rate.refused:
            state.settle_rate()
        if not principal.allows(spec.scope):
            raise errors.forbidden(
                f"{spec.name} needs the '{spec.scope}' scope; this token has {', '.join(principal.scopes) or 'none'}.",
                "Use a token minted with that scope (get_token_context shows this token's scopes).",
            )
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise errors.invalid(
                "arguments", "must be a JSON object", "Send the tool arguments as an object of named fields."
            )
        try:
            # Redact-typed fields (domain.tools.args.Redact) are cleaned here and name their rules in state.redactions.
            collecting = REDACTING.set(state.redactions)
            try:
                args = spec.input_model.model_validate(arguments)
            finally:
                REDACTING.reset(collecting)
        except ValidationError as exc:
            raise _validation_error(exc) from None
        if spec.fields_of is not None:
            projection.check(spec, args.fields)
        access.check_binding(spec, ctx)
        key = getattr(args, spec.key_field, None) if spec.keyed else None
        if key:
            # The access policy first: a replay answers only a caller the policy still admits.
            access.authorize(spec, ctx, args)
            state.settle_rate()  # Powertools writes its record next
            state.idempotency_key = key
            # Compare what the arguments mean, not how they were spelled: defaults filled in,
            # explicit nulls equal to omitted fields.
            canonical = _canonical(args.model_dump(mode="json"), spec.key_field)
            state.args_hash = hashlib.sha256(
                json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()
            ).hexdigest()
            scope = "|".join((principal.user_id, ctx.default_workspace() or "", spec.name, key))
            stored = idempotency.run(spec.name, scope, canonical, lambda: _execute(spec, ctx, args))
            # Powertools stores the response with sorted keys; re-render it in schema order so a
            # replay is byte-identical to the first answer.
            result = spec.output_model.model_validate(stored).model_dump(mode="json", by_alias=True)
        else:
            result = _invoke(spec, ctx, args)
        if REDACTIONS in spec.output_model.model_fields:  # a write tool names the secrets kept out of its text
            result[REDACTIONS] = sorted(state.redactions)  # (a replay parsed the same arguments: the same ids)
        return CallOutcome(result=result)
    except Exception as raised:  # noqa: BLE001 - the boundary: every failure becomes an envelope
        error = raised if isinstance(raised, ToolError) else store_error(raised, ctx)
        if error is None:
            return _unexpected(raised, spec, ctx, cid)
        try:
            state.settle_rate()  # a call over its limit answers RATE_LIMITED, whatever else failed
        except ToolError as limited:
            error = limited
        logger.info("tool error", extra={"tool": spec.name, "code": error.code.value, "correlation_id": cid})
        return CallOutcome(error=error.envelope())


def _unexpected(exc: Exception, spec: ToolSpec, ctx: CallContext, cid: str) -> CallOutcome:
    """The answer for an exception no tool and no store answer described: a storage fault it
    stands for (unavailable, throttled, too large), else INTERNAL with the correlation id."""
    _drain(ctx)
    if faults.storage_unavailable(exc):
        logger.warning("storage unavailable", extra={"tool": spec.name, "correlation_id": cid, "error": repr(exc)})
        return CallOutcome(error=faults.unavailable_error(cid).envelope())
    if faults.throttled(exc):
        logger.warning("storage throttled", extra={"tool": spec.name, "correlation_id": cid, "error": repr(exc)})
        return CallOutcome(error=faults.busy_error(cid).envelope())
    if faults.too_large(exc):
        logger.warning(
            "write refused for its size", extra={"tool": spec.name, "correlation_id": cid, "error": repr(exc)}
        )
        return CallOutcome(error=faults.too_large_error().envelope())
    logger.error("tool failed", exc_info=exc, extra={"tool": spec.name, "correlation_id": cid})
    return CallOutcome(error=internal_error(cid).envelope())


def _drain(ctx: CallContext) -> None:
    """Let the call's pending pool work finish before it answers: the rate-window update and any
    prefetch query the handler never consumed (their outcome no longer matters). Their requests
    stop at the call's deadline, so this waits at most until then; one that is somehow still
    running is logged, never left behind silently."""
    state = ctx.call_state
    pending = [f for f in (state.rate, *state.queries.values()) if f is not None]
    state.rate = None
    state.queries.clear()
    left = deadline.remaining()
    for future in pending:
        try:
            future.result(timeout=None if left is None else max(0.0, left) + 1.0)
        except FutureTimeout:
            logger.warning(
                "pool work outlived its call", extra={"tool": ctx.tool, "correlation_id": ctx.correlation_id}
            )
        except Exception:  # noqa: BLE001 - already failing; the window is best effort here
            pass


def internal_error(correlation_id: str) -> ToolError:
    return ToolError(
        ErrorCode.INTERNAL,
        f"The server failed while handling this call (correlation id {correlation_id}). Nothing was written.",
        "Retry once; if it fails again, report the correlation id.",
    )


def _target_field(ctx: CallContext) -> str:
    """The argument an archived-board refusal names: the located target's id field."""
    where = ctx.call_state.target
    kind = where.kind if where is not None else ""
    return {
        "task": "taskId",
        "comment": "commentId",
        "subtask": "subtaskId",
        "column": "columnId",
        "label": "labelId",
    }.get(kind, "boardId")


def _not_found(exc: StoreError, ctx: CallContext) -> ToolError:
    where = ctx.call_state.target
    if where is not None:
        return errors.not_found(where.kind, where.ident)
    return errors.not_found("entity", str(exc))


# The generic envelope of each store answer (domain/store/errors.py): the one place a store error
# becomes a tool error when the tool did not word it itself.
STORE_ANSWERS: dict[Answer, Callable[[StoreError, CallContext], ToolError]] = {
    "conflict": lambda exc, ctx: errors.conflict(
        "Other changes to the same items kept committing while this call ran; nothing was written.",
        "Retry the call.",
        retry_after_seconds=1,
    ),
    "cursor": lambda exc, ctx: errors.invalid(
        "cursor",
        "is not a cursor this list returned",
        "A cursor works only with the same subject and filters as the call that returned it; repeat those, or omit cursor to start from the first page.",
    ),
    "board_archived": lambda exc, ctx: errors.board_archived(_target_field(ctx)),
    "key_reused": lambda exc, ctx: errors.conflict(
        f"This idempotencyKey already made an entity through {exc.args[0] if exc.args else ctx.tool} with different arguments.",
        "Use a fresh idempotencyKey for a new request.",
    ),
    "not_found": _not_found,
}


def store_error(exc: Exception, ctx: CallContext) -> ToolError | None:
    """The envelope for a store error that reached the boundary without a tool-specific answer,
    from its class's ``answer``; ``None`` for anything else (the caller treats it as unexpected)."""
    if not isinstance(exc, StoreError) or exc.answer is None:
        return None
    return STORE_ANSWERS[exc.answer](exc, ctx)


def _canonical(arguments: dict[str, Any], key_field: str = "idempotencyKey") -> dict[str, Any]:
    return {k: v for k, v in sorted(arguments.items()) if k != key_field}


def _invoke(spec: ToolSpec, ctx: CallContext, args: Any) -> dict[str, Any]:
    access.authorize(spec, ctx, args)  # settles the rate window once its reads are under way
    ctx.call_state.settle_rate()
    return _execute(spec, ctx, args)


def _handle(spec: ToolSpec, ctx: CallContext, args: Any) -> Any:
    """The handler, with a replay-declaring keyed create's marker and its replay (one implementation)."""
    if spec.replay is None and not spec.marker:
        return spec.handler(ctx, args)
    state = ctx.call_state
    if state.target is not None:  # keyed by the target's workspace
        state.marker = idempotency.creation_marker(ctx, state.target.workspace_id)
    elif spec.target is None:  # an untargeted create (create_workspace): by no workspace
        state.marker = idempotency.creation_marker(ctx, "")
    if spec.replay is None:  # the store answers an earlier call itself (spec.marker)
        return spec.handler(ctx, args)
    try:
        return spec.handler(ctx, args)
    except Earlier as earlier:  # an earlier call with this key committed: answer with what it made
        return spec.replay(ctx, earlier.entity_id)


def _execute(spec: ToolSpec, ctx: CallContext, args: Any) -> dict[str, Any]:
    """Governance, the handler and its result, for a call the access policy admitted."""
    parked = None
    if spec.cas is not None:  # the handler's compare-and-set plan checks it (ctx.still_current)
        ctx.call_state.expected_updated_at = getattr(args, spec.cas)
    if spec.governed is not None:
        if spec.precheck is not None:
            spec.precheck(ctx, args)
        parked = governance.gate(spec, ctx, args)
    out = parked if parked is not None else _handle(spec, ctx, args)
    if isinstance(out, BaseModel):
        result = out.model_dump(mode="json", by_alias=True)
    else:
        result = spec.output_model.model_validate(out).model_dump(mode="json", by_alias=True)
    if spec.fields_of is not None:
        projection.project(spec, args, result)
    return result
