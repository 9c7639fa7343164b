"""Connected agent session tools: create_agent_session, attach_agent_session, align_agent_session,
complete_agent_session, resume_agent_session, get_agent_session, list_agent_sessions.

A session is one operator's period of coding-agent work in one project (fixed for life, which
fixes the workspace) from a checkout of one repository (docs/sessions.md). Its lifecycle status
(STARTING -> ACTIVE -> COMPLETED | INTERRUPTED | CANCELLED, INTERRUPTED -> ACTIVE by resume) and
its capture integrity (``captureComplete``: every declared trace part and the run summary are
stored) are independent. Provider thread ids come from provider hooks through
``jentrix session attach``, never from text a model wrote; a thread is bound to at most one
open session (a claim item written conditionally in the binding transaction,
docs/data-model.md "Agent sessions").
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from domain import clock, errors, ids, repos
from domain.access import Located, Prefetch, Ref, either, locate, target
from domain.auth import ROLE_RANK
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import governance as governance_store
from domain.store import session_capture
from domain.store import sessions as session_store
from domain.store.cas import Step, Unchanged, compare_and_set
from domain.store.db import Missing
from domain.store.reads import Member, Project, Session, SessionClaim, Task
from domain.tools.args import CursorArg, IdShape, LimitArg, WorkspaceIdArg

Provider = Literal["claude-code", "codex", "cursor", "other"]
Status = Literal["STARTING", "ACTIVE", "COMPLETED", "INTERRUPTED", "CANCELLED"]
Outcome = Literal["COMPLETED", "INTERRUPTED", "CANCELLED"]

SessionIdArg = Annotated[str, Field(min_length=1, max_length=80, description="ses_…")]
ProjectIdArg = Annotated[str, Field(min_length=1, max_length=64, description="pj_…")]
RequiredKeyArg = Annotated[str, Field(min_length=1, max_length=128, description="Required retry key (launcher nonce).")]
RequiredStampArg = Annotated[
    str,
    Field(
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
        description="updatedAt you read; if changed: CONFLICT.",
    ),
]
RepoArg = Annotated[
    str | None,
    Field(
        default=None, min_length=1, max_length=300, description="owner/name or GitHub URL; default: the bound checkout."
    ),
]
PartName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^#\s][^#]*$")]


def _stored_repo(repo: str | None) -> str | None:
    """``repo`` as lowercase ``owner/name``; ``None`` when absent or naming no repository. The input
    models with a ``repo`` argument expose it as ``stored_repo``: the repository gate's read plans
    (``gate_link``) key by it."""
    return repos.normalise_repo(repo) if repo else None


class RepoState(ToolInput):
    branch: str | None = Field(default=None, max_length=255, description="Branch.")
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{7,64}$", description="HEAD.")
    dirty: bool | None = Field(default=None, description="Has uncommitted changes.")


class Usage(ToolInput):
    inputTokens: int | None = Field(default=None, ge=0, le=10**12, description="Count.")
    outputTokens: int | None = Field(default=None, ge=0, le=10**12, description="Count.")
    cacheReadTokens: int | None = Field(default=None, ge=0, le=10**12, description="Count.")
    cacheWriteTokens: int | None = Field(default=None, ge=0, le=10**12, description="Count.")


# -- views -----------------------------------------------------------------------------------
class RepoStateView(ToolOutput):
    branch: str | None = None
    commit: str | None = None
    dirty: bool | None = None


class UsageView(ToolOutput):
    inputTokens: int | None = None
    outputTokens: int | None = None
    cacheReadTokens: int | None = None
    cacheWriteTokens: int | None = None


class AlignmentSnapshot(ToolOutput):
    sessionId: str
    workspaceId: str
    workspaceName: str
    projectId: str
    projectName: str
    taskId: str | None = Field(description="null: session-level work, no task.")
    taskKey: str | None
    taskTitle: str | None
    ownerId: str = Field(description="The accountable member.")
    ownerName: str
    operatorId: str
    operatorName: str
    alignedAt: str


class CaptureView(ToolOutput):
    complete: bool = Field(description="Every declared trace part and the run summary are stored.")
    expectedParts: int
    storedParts: int
    missingParts: list[str] = Field(description="Declared parts with no stored TRACE artifact (first 50).")
    summaryArtifactId: str | None


class SessionSummaryView(ToolOutput):
    id: str
    workspaceId: str
    projectId: str
    projectName: str
    operatorId: str
    operatorName: str
    repository: str = Field(description="Lowercase owner/name of the checkout.")
    status: str
    provider: str | None
    continuesSessionId: str | None
    taskId: str | None = Field(description="The open alignment interval's task.")
    ownerId: str | None
    captureComplete: bool
    outcome: str | None
    createdAt: str
    updatedAt: str
    endedAt: str | None


class SessionView(SessionSummaryView):
    providerThreadId: str | None = Field(
        description="Set by a provider hook (attach_agent_session); null unless you are its operator or an admin."
    )
    alignment: AlignmentSnapshot | None
    repoStart: RepoStateView | None
    repoEnd: RepoStateView | None
    usage: UsageView | None = Field(
        description="Provider-reported token counts; null when none were reported (never estimated)."
    )
    capture: CaptureView | None = Field(
        description="The last completion's trace-manifest check; null before completion."
    )
    resumeCount: int
    boundAt: str | None


class SessionOutput(ToolOutput):
    session: SessionView


def _summary_fields(r: Session) -> dict[str, Any]:
    return {
        "id": r.sessionId,
        "workspaceId": r.workspaceId,
        "projectId": r.projectId,
        "projectName": r.projectName,
        "operatorId": r.operatorId,
        "operatorName": r.operatorName,
        "repository": r.repository,
        "status": r.status,
        "provider": r.provider,
        "continuesSessionId": r.continuesSessionId,
        "taskId": r.taskId,
        "ownerId": r.ownerId,
        "captureComplete": bool(r.captureComplete),
        "outcome": r.outcome,
        "createdAt": r.createdAt,
        "updatedAt": r.updatedAt,
        "endedAt": r.endedAt,
    }


def _thread_shown(r: Session, ctx: CallContext) -> str | None:
    """The provider thread id, for the session's operator and the workspace's admins and owners
    only: it names a thread in the operator's own provider account, so other members (who may
    read the session) get null, as list_agent_sessions leaves it out for everyone."""
    if not r.providerThreadId or r.operatorId == ctx.user_id:
        return r.providerThreadId
    return r.providerThreadId if ROLE_RANK[ctx.member(r.workspaceId).role] >= ROLE_RANK["ADMIN"] else None


def session_view(r: Session, ctx: CallContext) -> SessionView:
    """A session as ``ctx``'s caller may see it (:func:`_thread_shown`)."""
    return SessionView(
        **_summary_fields(r),
        providerThreadId=_thread_shown(r, ctx),
        alignment=AlignmentSnapshot(**r.alignment) if r.alignment else None,
        repoStart=RepoStateView(**r.repoStart) if r.repoStart else None,
        repoEnd=RepoStateView(**r.repoEnd) if r.repoEnd else None,
        usage=UsageView(**r.usage) if r.usage else None,
        capture=CaptureView(**r.capture) if r.capture else None,
        resumeCount=int(r.resumeCount or 0),
        boundAt=r.boundAt,
    )


def _current(r: Session, ctx: CallContext) -> dict[str, Any]:
    return session_view(r, ctx).model_dump(mode="json")


# -- shared checks -----------------------------------------------------------------------------
def _repo(ctx: CallContext, value: str | None, field: str = "repo") -> str:
    """The checkout's repository: the argument (normalised) or the connection's bound checkout.
    A bound connection cannot name another repository (its checkout is fixed for life)."""
    bound = ctx.binding.repository if ctx.binding else None
    if value is None:
        if bound:
            return bound
        raise errors.invalid(
            field,
            "is required: the repository of the checkout the agent runs in",
            f"Send {repos.FORMS}; jentrix agent launch fills it from the checkout.",
        )
    repo = repos.normalise_repo(value)
    if repo is None:
        raise errors.invalid(field, f"is not a GitHub repository: {value!r}", f"Send {repos.FORMS}.")
    if bound and repo != bound:
        raise errors.forbidden(
            f"This connection is bound to a checkout of {bound}; it cannot start or resume a session for {repo}.",
            "Leave repo out, or start the adapter from a checkout of that repository.",
        )
    return repo


def _gate(ctx: CallContext, ws: str, project_id: str, repo: str, *, fresh: bool) -> session_store.Gate:
    """The repository gate's items: read with the membership by the spec's plans (``gate_project``,
    ``gate_link``, ``gate_workspace``) when the arguments named the repository, else (``fresh``:
    the bound checkout's or the session's repository) one BatchGetItem now."""
    if fresh:
        return session_store.read_gate(ws, project_id, repo)
    return session_store.Gate(ctx.read.gate_project, ctx.read.gate_link, ctx.read.gate_workspace)


def _project_for_session(gate: session_store.Gate, project_id: str, repo: str) -> tuple[Project, bool]:
    """The live project and whether the repository gate holds by its REPO link (True) or by the
    workspace default (False); INVALID_INPUT naming the missing REPO link otherwise."""
    head = gate.project
    if head is None:
        raise errors.not_found("project", project_id)
    if head.status == "ARCHIVED":
        raise errors.invalid(
            "projectId",
            f"project {head.name} is archived: it takes no new sessions",
            "Pick a live project (list_projects).",
        )
    if gate.link is not None:
        return head, True
    wsrow = gate.workspace
    linked_somewhere = wsrow is not None and int(wsrow.repoLinkCount or 0) > 0
    if wsrow is not None and not linked_somewhere and wsrow.defaultRepo == repo:
        return head, False
    link = f'add_project_link {{"projectId": "{project_id}", "targetType": "REPO", "targetId": "{repo}"}}'
    if linked_somewhere:
        why, hint = (
            f"project {head.name} has no REPO link to {repo}",
            f"Missing REPO link: a workspace admin runs {link}, or run the agent from a checkout of a repository this project links.",
        )
    else:
        why, hint = (
            f"project {head.name} has no REPO link to {repo}, and {repo} is not the workspace's defaultRepo",
            f"Missing REPO link: a workspace admin runs {link} (or sets defaultRepo with update_workspace while no project links a repository).",
        )
    raise errors.invalid("repo", why, hint)


def _may_steer(ctx: CallContext, row: Session, verb: str) -> None:
    """The session's operator, or a workspace ADMIN/OWNER, may change it; anyone else is FORBIDDEN."""
    if row.operatorId == ctx.user_id:
        return
    if ROLE_RANK[ctx.member(row.workspaceId).role] >= ROLE_RANK["ADMIN"]:
        return
    raise errors.forbidden(
        f"Only the session's operator ({row.operatorName}) or a workspace admin can {verb} {row.sessionId}.",
        "Ask the operator, or a workspace admin, to do it.",
    )


def _session(ctx: CallContext) -> Session:
    """The target session's head (read with the membership: ``reads=("session", ...)``)."""
    row = ctx.read.session
    if row is None:
        raise errors.not_found("session", ctx.target.session_ref().session_id)
    return row


def _stale(ctx: CallContext, row: Session) -> None:
    # the spec's cas="expectedUpdatedAt" check, judged on the row the write is conditioned on
    ctx.still_current(
        "session",
        row.updatedAt,
        lambda: _current(row, ctx),
        hint="Read error.current (or get_agent_session) and call again with its updatedAt.",
    )


# -- create_agent_session ----------------------------------------------------------------------
class CreateSessionInput(ToolInput):
    projectId: ProjectIdArg
    repo: RepoArg
    provider: Provider | None = Field(default=None, description="Provider to launch, if known.")
    repoState: RepoState | None = Field(default=None, description="Checkout at launch.")
    continuesSessionId: str | None = Field(
        default=None, max_length=80, description="Earlier session this one continues."
    )
    idempotencyKey: RequiredKeyArg

    @property
    def stored_repo(self) -> str | None:
        return _stored_repo(self.repo)


def _replay_session(ctx: CallContext, session_id: str) -> SessionOutput:
    """The session an earlier call with the same idempotencyKey created (its marker named it)."""
    found = _made_earlier(session_id)
    return SessionOutput(session=session_view(found, ctx))


def _made_earlier(session_id: str) -> Session:
    ref = ids.parse_session(session_id)
    found = session_store.get(ref) if ref else None
    if found is None:
        raise errors.not_found("session", session_id)
    return found


@tool(
    "create_agent_session",
    title="Create agent session",
    description=(
        "Opens a STARTING session before an agent launches. The checkout's repo must be REPO-linked from the live "
        "project (or be the workspace defaultRepo while no project links one); else refused, the hint names the missing "
        "link."
    ),
    area="sessions",
    scope="write",
    keyed=True,
    replay=_replay_session,
    target=target("projectId", "project"),
    min_role="MEMBER",
    refs=(Ref("continuesSessionId", "session"),),
    reads=("gate_project", "gate_link", "gate_workspace", "continued_session"),
    input_model=CreateSessionInput,
    output_model=SessionOutput,
)
def create_agent_session(ctx: CallContext, args: CreateSessionInput) -> SessionOutput:
    where = ctx.target
    ws = where.workspace_id
    repo = _repo(ctx, args.repo)
    project, by_link = _project_for_session(
        _gate(ctx, ws, where.project(), repo, fresh=args.repo is None), where.project(), repo
    )
    if args.continuesSessionId and ctx.read.continued_session is None:
        raise errors.not_found("session", args.continuesSessionId)
    member = ctx.member(ws)
    now = clock.now_iso()
    session_id = ids.new_session_id(ws)
    row = _new_row(
        session_id,
        ws,
        project,
        member,
        repo,
        now,
        status="STARTING",
        provider=args.provider,
        repo_state=args.repoState,
        continues=args.continuesSessionId,
    )
    return SessionOutput(session=session_view(_create(ctx, row, by_link=by_link), ctx))


def _new_row(
    session_id: str,
    ws: str,
    project: Project,
    member: Member,
    repo: str,
    now: str,
    *,
    status: str,
    provider: str | None,
    repo_state: RepoState | None,
    continues: str | None = None,
    thread: str | None = None,
) -> Session:
    return session_store.new_row(
        session_id,
        ws,
        projectId=project.projectId,
        projectName=project.name,
        operatorId=member.userId,
        operatorName=member.displayName,
        repository=repo,
        status=status,
        provider=provider,
        providerThreadId=thread,
        continuesSessionId=continues,
        repoStart=repo_state.model_dump(exclude_none=True) if repo_state else None,
        alignmentCount=0,
        captureComplete=False,
        resumeCount=0,
        createdAt=now,
        updatedAt=now,
        boundAt=now if thread else None,
    )


def _create(ctx: CallContext, row: Session, *, by_link: bool, claim: SessionClaim | None = None) -> Session:
    try:
        session_store.create(row, by_link=by_link, actor_id=ctx.user_id, marker=ctx.marker, claim=claim)
    except session_store.GateClosed:
        raise errors.invalid(
            "repo",
            "the project or its REPO link changed while the session was being created; nothing was written",
            "Check the project with get_project and call again.",
        ) from None
    except Missing:
        raise errors.not_found("project", row.projectId) from None
    return row


# -- attach_agent_session ----------------------------------------------------------------------
class AttachSessionInput(ToolInput):
    provider: Provider = Field(description="Hook's provider.")
    threadId: str = Field(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description="Thread id from the provider hook.",
    )
    sessionId: str | None = Field(default=None, max_length=80, description="Your STARTING session; or give projectId.")
    projectId: str | None = Field(default=None, max_length=64, description="Without sessionId: new session here.")
    repo: RepoArg
    repoState: RepoState | None = Field(default=None, description="With projectId: checkout now.")
    idempotencyKey: RequiredKeyArg

    @property
    def stored_repo(self) -> str | None:
        return _stored_repo(self.repo)


class AttachSessionOutput(ToolOutput):
    session: SessionView
    attached: Literal["bound", "created", "existing"] = Field(
        description="bound: a STARTING session got the thread; created: a new ACTIVE session; existing: the thread already named this session."
    )


def _locate_attach(ctx: CallContext, args: AttachSessionInput) -> Located:
    if args.sessionId is not None:
        if args.projectId is not None:
            raise errors.invalid("sessionId", "give sessionId (late-bind) or projectId (create), not both")
        return locate(ctx, "session", args.sessionId)
    if args.projectId is None:
        raise errors.invalid(
            "sessionId",
            "is required unless projectId is given",
            "Pass the session jentrix agent launch created, or a projectId.",
        )
    return locate(ctx, "project", args.projectId)


def _replay_attach(ctx: CallContext, session_id: str) -> AttachSessionOutput:
    """The session an earlier attach-create with the same idempotencyKey made (its marker named it)."""
    return AttachSessionOutput(session=session_view(_made_earlier(session_id), ctx), attached="existing")


def _bound_elsewhere(claim: SessionClaim | None, ws: str) -> errors.ToolError:
    named = f" ({claim.sessionId})" if claim is not None and claim.workspaceId == ws else ""
    return errors.conflict(
        f"This provider thread is already bound to another open session{named}; nothing was written.",
        "A thread belongs to one session: complete or cancel that session first, or start a new provider thread.",
        reason="SESSION_ALREADY_BOUND",
    )


def _same_tuple(claim: SessionClaim, ctx: CallContext, project_id: str) -> bool:
    return claim.operatorId == ctx.user_id and claim.projectId == project_id


@tool(
    "attach_agent_session",
    title="Attach agent session",
    description=(
        "Binds a provider thread id reported by a trusted hook (jentrix session attach), never one a model wrote: "
        "sessionId late-binds your STARTING session; projectId creates an ACTIVE one. A thread already bound to another "
        "open session is CONFLICT (SESSION_ALREADY_BOUND)."
    ),
    area="sessions",
    scope="write",
    keyed=True,
    replay=_replay_attach,
    target=either(("sessionId", "session"), ("projectId", "project"), resolve=_locate_attach),
    min_role="MEMBER",
    # a session target: the session; a project target: the repository gate (when repo is given)
    reads=("session", "thread_claim", "gate_project", "gate_link", "gate_workspace"),
    input_model=AttachSessionInput,
    output_model=AttachSessionOutput,
)
def attach_agent_session(ctx: CallContext, args: AttachSessionInput) -> AttachSessionOutput:
    where = ctx.target
    claim = ctx.read.thread_claim
    open_claim = claim if claim is not None and claim.open else None
    if where.session is None:
        return _attach_create(ctx, args, open_claim)
    current = _session(ctx)
    if current.operatorId != ctx.user_id:
        raise errors.forbidden(
            f"Only the session's operator ({current.operatorName}) can bind its provider thread.",
            "Run jentrix session attach from the operator's own provider hook.",
        )
    if open_claim is not None and open_claim.sessionId != current.sessionId:
        raise _bound_elsewhere(open_claim, current.workspaceId)

    def plan(state: Session) -> Step[Session, AttachSessionOutput]:
        if state.provider and state.provider != args.provider:
            raise errors.invalid("provider", f"the session was launched for {state.provider}, not {args.provider}")
        if state.providerThreadId:
            if state.providerThreadId == args.threadId:
                return Unchanged(AttachSessionOutput(session=session_view(state, ctx), attached="existing"))
            raise errors.conflict(
                "This session is already bound to another provider thread; a binding never changes.",
                "Start a new session (jentrix agent launch) for the other thread.",
                current=_current(state, ctx),
                reason="SESSION_ALREADY_BOUND",
            )
        if state.status != "STARTING":
            raise errors.conflict(
                f"The session is {state.status}; only a STARTING session can be bound.",
                "Create a new session for this thread (attach_agent_session with projectId).",
                current=_current(state, ctx),
            )
        stamp = clock.next_stamp(state.updatedAt)
        edited = session_store.copy(state)
        edited.provider, edited.providerThreadId, edited.status, edited.boundAt, edited.updatedAt = (
            args.provider,
            args.threadId,
            "ACTIVE",
            stamp,
            stamp,
        )
        return session_store.edit(
            edited,
            state,
            actor_id=ctx.user_id,
            claim=session_store.new_claim(edited, stamp),
            result=lambda: AttachSessionOutput(session=session_view(edited, ctx), attached="bound"),
        )

    try:
        return compare_and_set("attach_agent_session", current, plan)
    except session_store.ThreadBound as bound:
        if bound.claim is not None and bound.claim.sessionId == current.sessionId:
            found = session_store.get(ctx.target.session_ref())
            if found is not None:
                return AttachSessionOutput(session=session_view(found, ctx), attached="existing")
        raise _bound_elsewhere(bound.claim, current.workspaceId) from None
    except Missing:
        raise errors.not_found("session", current.sessionId) from None


def _attach_create(ctx: CallContext, args: AttachSessionInput, open_claim: SessionClaim | None) -> AttachSessionOutput:
    where = ctx.target
    ws = where.workspace_id
    if open_claim is not None:
        return _converge(ctx, open_claim, where.project())
    repo = _repo(ctx, args.repo)
    project, by_link = _project_for_session(
        _gate(ctx, ws, where.project(), repo, fresh=args.repo is None), where.project(), repo
    )
    member = ctx.member(ws)
    now = clock.now_iso()
    row = _new_row(
        ids.new_session_id(ws),
        ws,
        project,
        member,
        repo,
        now,
        status="ACTIVE",
        provider=args.provider,
        repo_state=args.repoState,
        thread=args.threadId,
    )
    try:
        made = _create(ctx, row, by_link=by_link, claim=session_store.new_claim(row, now))
    except session_store.ThreadBound as bound:
        if bound.claim is None:
            raise _bound_elsewhere(None, ws) from None
        return _converge(ctx, bound.claim, where.project())
    return AttachSessionOutput(
        session=session_view(made, ctx), attached="created" if made.sessionId == row.sessionId else "existing"
    )


def _converge(ctx: CallContext, claim: SessionClaim, project_id: str) -> AttachSessionOutput:
    """The thread is bound already: the same operator and project get that session, anyone else CONFLICT."""
    if not _same_tuple(claim, ctx, project_id):
        raise _bound_elsewhere(claim, ctx.target.workspace_id)
    ref = ids.parse_session(claim.sessionId)
    found = session_store.get(ref) if ref else None
    if found is None:
        raise _bound_elsewhere(claim, ctx.target.workspace_id)
    return AttachSessionOutput(session=session_view(found, ctx), attached="existing")


# -- align_agent_session -----------------------------------------------------------------------
class AlignSessionInput(ToolInput):
    sessionId: SessionIdArg
    taskId: str | None = Field(default=None, max_length=80, description="tk_… of the workspace; omit for no task.")
    ownerId: str | None = Field(
        default=None, max_length=64, description="userId; default: current owner, else operator."
    )
    expectedUpdatedAt: RequiredStampArg


class AlignmentView(ToolOutput):
    ordinal: int = Field(description="1 for the first alignment, ascending.")
    snapshot: AlignmentSnapshot
    alignedBy: str
    startedAt: str
    endedAt: str | None = Field(description="null for the open interval.")


class AlignSessionOutput(ToolOutput):
    session: SessionView
    alignment: AlignmentSnapshot = Field(description="Echo this to the operator as it is.")
    ordinal: int
    changed: bool = Field(description="false when the session already had this task and owner (nothing written).")


@tool(
    "align_agent_session",
    title="Align agent session",
    description=(
        "Anchors an open session to a task (or none) and an accountable owner the operator confirmed; show the returned "
        "snapshot as is. Re-aligning closes the open interval and starts a new one."
    ),
    area="sessions",
    scope="write",
    idempotent=True,
    target=target("sessionId", "session"),
    min_role="MEMBER",
    refs=(Ref("taskId", "task"), Ref("ownerId", "user", error=errors.ErrorCode.INVALID_INPUT)),
    reads=("session", "workspace", "linked_task", "owner_member"),
    cas="expectedUpdatedAt",
    input_model=AlignSessionInput,
    output_model=AlignSessionOutput,
)
def align_agent_session(ctx: CallContext, args: AlignSessionInput) -> AlignSessionOutput:
    current = _session(ctx)
    ws = current.workspaceId
    _may_steer(ctx, current, "align")
    task: Task | None = None
    if args.taskId:
        found = ctx.read.linked_task
        if found is None:
            raise errors.not_found("task", args.taskId)
        if found.archivedAt:
            raise errors.invalid("taskId", "the task is archived", "Align the session to a live task, or to none.")
        task = found
    owner_id = args.ownerId or current.ownerId or current.operatorId
    if owner_id == ctx.user_id:
        owner: Member | None = ctx.member(ws)
    elif args.ownerId:
        owner = ctx.read.owner_member  # read with the membership
    else:
        owner = _member_or_none(ws, owner_id)  # the session's owner or operator, when an admin aligns: one GetItem
    if owner is None:
        raise errors.invalid(
            "ownerId", f"{owner_id!r} is not a member of this workspace", "Pick a userId from list_members."
        )
    wsrow = ctx.read.workspace
    workspace_name = wsrow.name if wsrow is not None else ""

    def plan(state: Session) -> Step[Session, AlignSessionOutput]:
        _stale(ctx, state)
        if state.status not in session_store.OPEN:
            raise errors.conflict(
                f"The session is {state.status}; only an open (STARTING or ACTIVE) session can be aligned.",
                "Resume it (resume_agent_session) if it was interrupted, or start a new session.",
                current=_current(state, ctx),
            )
        new_task = task.taskId if task else None
        count = int(state.alignmentCount or 0)
        if count and state.taskId == new_task and state.ownerId == owner.userId and state.alignment:
            return Unchanged(
                AlignSessionOutput(
                    session=session_view(state, ctx),
                    alignment=AlignmentSnapshot(**state.alignment),
                    ordinal=count,
                    changed=False,
                )
            )
        if count >= session_store.MAX_ALIGNMENTS:
            raise errors.invalid(
                "sessionId",
                f"the session holds {session_store.MAX_ALIGNMENTS} alignments, the most it can",
                "Complete it and start a new session with continuesSessionId.",
            )
        stamp = clock.next_stamp(state.updatedAt)
        snapshot = AlignmentSnapshot(
            sessionId=state.sessionId,
            workspaceId=ws,
            workspaceName=workspace_name,
            projectId=state.projectId,
            projectName=state.projectName,
            taskId=new_task,
            taskKey=task.key if task else None,
            taskTitle=task.title if task else None,
            ownerId=owner.userId,
            ownerName=owner.displayName,
            operatorId=state.operatorId,
            operatorName=state.operatorName,
            alignedAt=stamp,
        )
        ordinal = count + 1
        log = _align_log(ctx, state, snapshot, task, stamp, ordinal)
        edited = session_store.copy(state)
        edited.taskId, edited.ownerId, edited.alignment, edited.alignmentCount, edited.updatedAt = (
            new_task,
            owner.userId,
            snapshot.model_dump(mode="json"),
            ordinal,
            stamp,
        )
        return session_store.align(
            edited,
            state,
            ordinal=ordinal,
            snapshot=snapshot.model_dump(mode="json"),
            stamp=stamp,
            task=task,
            owner_id=owner.userId,
            log=log,
            actor_id=ctx.user_id,
            result=lambda: AlignSessionOutput(
                session=session_view(edited, ctx), alignment=snapshot, ordinal=ordinal, changed=True
            ),
        )

    try:
        return compare_and_set("align_agent_session", current, plan)
    except session_store.TaskGone:
        raise errors.invalid("taskId", "the task was archived or removed meanwhile; nothing was written") from None
    except session_store.OwnerGone as gone:
        raise errors.invalid("ownerId", f"{gone.args[0]!r} left the workspace meanwhile; nothing was written") from None
    except Missing:
        raise errors.not_found("session", current.sessionId) from None


def _member_or_none(ws: str, user_id: str) -> Member | None:
    from domain.store import members

    return members.get(ws, user_id)


def _align_log(
    ctx: CallContext, state: Session, snap: AlignmentSnapshot, task: Task | None, stamp: str, ordinal: int
) -> Any:
    """The activity row of an alignment: on the new task's board log (and the task's own log); with
    no new task, on the previous task's; with neither, in the workspace log."""
    what = f"{snap.taskKey} {snap.taskTitle}" if task else "no task"
    summary = f"Session {state.sessionId} aligned to {what}, owner {snap.ownerName}" + (
        f" (re-aligned, #{ordinal})" if ordinal > 1 else ""
    )
    data = {
        "sessionId": state.sessionId,
        "ordinal": ordinal,
        "taskId": snap.taskId,
        "previousTaskId": state.taskId,
        "ownerId": snap.ownerId,
    }
    board_task = task.taskId if task else state.taskId
    ref = ids.parse_task(board_task) if board_task else None
    if ref is not None:
        return ctx.activity(
            state.workspaceId, ref.board_id, "session.aligned", summary, task_id=board_task, data=data, at=stamp
        )
    return governance_store.log_row(
        state.workspaceId, "session.aligned", summary, actor_id=ctx.user_id, source=ctx.source, data=data
    )


# -- complete_agent_session --------------------------------------------------------------------
class CompleteSessionInput(ToolInput):
    sessionId: SessionIdArg
    outcome: Outcome = Field(description="INTERRUPTED: crash/kill; CANCELLED: before the first turn.")
    expectedUpdatedAt: RequiredStampArg
    traceParts: list[PartName] = Field(
        default_factory=list, max_length=500, description="Names of every TRACE part that should be stored."
    )
    usage: Usage | None = Field(default=None, description="Provider-reported tokens; omit if none.")
    repoState: RepoState | None = Field(default=None, description="Checkout at the end.")


def _complete_prefetch(where: Located, args: CompleteSessionInput) -> Prefetch:
    ws, sid = where.workspace_id, where.session_ref().session_id
    return Prefetch(queries=(("artifacts", lambda: session_capture.for_session(ws, sid)),))


def run_summary(row: Session, parts: list[str], stored: list[str], missing: list[str]) -> dict[str, Any]:
    """The RUN_SUMMARY body: only stored facts of the session, so the same state gives the same bytes."""
    return {
        "type": "RUN_SUMMARY",
        "sessionId": row.sessionId,
        "workspaceId": row.workspaceId,
        "projectId": row.projectId,
        "repository": row.repository,
        "operatorId": row.operatorId,
        "provider": row.provider,
        "outcome": row.outcome,
        "createdAt": row.createdAt,
        "boundAt": row.boundAt,
        "endedAt": row.endedAt,
        "taskId": row.taskId,
        "ownerId": row.ownerId,
        "alignments": int(row.alignmentCount or 0),
        "continuesSessionId": row.continuesSessionId,
        "resumeCount": int(row.resumeCount or 0),
        "usage": row.usage,
        "repoStart": row.repoStart,
        "repoEnd": row.repoEnd,
        "traceParts": {"expected": parts, "stored": stored, "missing": missing},
    }


@tool(
    "complete_agent_session",
    title="Complete agent session",
    description=(
        "Ends a session with an outcome, checks the declared traceParts against stored TRACE artifacts and stores a "
        "RUN_SUMMARY artifact; captureComplete is set only when all are stored (independent of status)."
    ),
    area="sessions",
    scope="write",
    idempotent=True,
    target=target("sessionId", "session"),
    min_role="MEMBER",
    reads=("session",),
    prefetch=_complete_prefetch,
    cas="expectedUpdatedAt",
    input_model=CompleteSessionInput,
    output_model=SessionOutput,
)
def complete_agent_session(ctx: CallContext, args: CompleteSessionInput) -> SessionOutput:
    current = _session(ctx)
    _may_steer(ctx, current, "complete")
    artifacts = ctx.query("artifacts", lambda: session_capture.for_session(current.workspaceId, current.sessionId))
    traces = {a.name for a in artifacts if a.type == "TRACE"}
    parts = list(dict.fromkeys(args.traceParts))
    stored = [p for p in parts if p in traces]
    missing = [p for p in parts if p not in traces]
    usage = args.usage.model_dump(exclude_none=True) if args.usage else None
    repo_end = args.repoState.model_dump(exclude_none=True) if args.repoState else None

    def closed_state(state: Session, stamp: str, summary_id: str | None) -> Session:
        edited = session_store.copy(state)
        if state.status in session_store.OPEN:
            edited.status, edited.outcome, edited.endedAt = args.outcome, args.outcome, stamp
        if usage is not None:
            edited.usage = usage
        if repo_end is not None:
            edited.repoEnd = repo_end
        edited.capture = {
            "complete": not missing,
            "expectedParts": len(parts),
            "storedParts": len(stored),
            "missingParts": missing[:50],
            "summaryArtifactId": summary_id,
        }
        edited.captureComplete = not missing
        edited.updatedAt = stamp
        return edited

    def plan(state: Session) -> Step[Session, SessionOutput]:
        again = state.status == args.outcome and state.status not in session_store.OPEN
        if again:
            probe = closed_state(state, state.updatedAt, (state.capture or {}).get("summaryArtifactId"))
            if probe.serialize() == state.serialize():  # an exact repeat: nothing would change
                return Unchanged(SessionOutput(session=session_view(state, ctx)))
        _stale(ctx, state)
        if state.status not in session_store.OPEN and not again:
            raise errors.conflict(
                f"The session is already {state.status}; it cannot end again as {args.outcome}.",
                "Resume an INTERRUPTED session first (resume_agent_session), or start a new one.",
                current=_current(state, ctx),
            )
        stamp = clock.next_stamp(state.updatedAt)
        summary_id = session_capture.new_summary_id(
            state.workspaceId
        )  # a re-check after late parts stores a new summary; the head names the latest
        edited = closed_state(state, stamp, summary_id)
        summary = run_summary(edited, parts, stored, missing)
        from domain.redaction import redact_text  # deferred: the detectors load with the first body, not at init

        body = redact_text(
            session_capture.summary_body(summary)
        )  # a branch name or the like may carry a secret: redacted like every body
        actor_name = ctx.member(edited.workspaceId).displayName

        def extra(tx: Any) -> None:
            session_capture.summary_action(
                tx, summary, body=body, artifact_id=summary_id, actor_id=ctx.user_id, actor_name=actor_name, at=stamp
            )
            if edited.status in session_store.CLOSED and state.status in session_store.OPEN:
                session_store.release_claim(tx, edited)

        return session_store.edit(
            edited,
            state,
            actor_id=ctx.user_id,
            extra=extra,
            result=lambda: SessionOutput(session=session_view(edited, ctx)),
        )

    try:
        return compare_and_set("complete_agent_session", current, plan)
    except Missing:
        raise errors.not_found("session", current.sessionId) from None


# -- resume_agent_session ----------------------------------------------------------------------
class ResumeSessionInput(ToolInput):
    sessionId: SessionIdArg
    expectedUpdatedAt: RequiredStampArg
    projectId: Annotated[str | None, IdShape("project")] = Field(
        default=None, max_length=64, description="Must be the session's."
    )
    repo: RepoArg

    @property
    def stored_repo(self) -> str | None:
        return _stored_repo(self.repo)


def _resume_conflict(message: str, row: Session, ctx: CallContext) -> errors.ToolError:
    return errors.conflict(
        message + "; nothing was written.",
        "A new period of work elsewhere is a new session: create_agent_session with continuesSessionId.",
        current=_current(row, ctx),
        reason="SESSION_RESUME_CONFLICT",
    )


@tool(
    "resume_agent_session",
    title="Resume agent session",
    description=(
        "Reopens an INTERRUPTED session as ACTIVE (its operator or an admin); project and repo must still match and be "
        "linked, else CONFLICT (SESSION_RESUME_CONFLICT). For new work start a session with continuesSessionId."
    ),
    area="sessions",
    scope="write",
    idempotent=True,
    target=target("sessionId", "session"),
    min_role="MEMBER",
    # with both projectId and repo, the repository gate (gate_*) comes with the membership
    reads=("session", "gate_project", "gate_link", "gate_workspace"),
    cas="expectedUpdatedAt",
    input_model=ResumeSessionInput,
    output_model=SessionOutput,
)
def resume_agent_session(ctx: CallContext, args: ResumeSessionInput) -> SessionOutput:
    current = _session(ctx)
    _may_steer(ctx, current, "resume")
    repo = _repo(ctx, args.repo)
    if args.projectId is not None and args.projectId != current.projectId:
        raise _resume_conflict(
            f"The session belongs to project {current.projectName} ({current.projectId}), not {args.projectId}",
            current,
            ctx,
        )
    if repo != current.repository:
        raise _resume_conflict(f"The session works on {current.repository}; this checkout is {repo}", current, ctx)
    ws = current.workspaceId
    gate = _gate(ctx, ws, current.projectId, repo, fresh=args.projectId is None or args.repo is None)
    try:
        _, by_link = _project_for_session(gate, current.projectId, repo)
    except errors.ToolError as refused:
        raise _resume_conflict(
            f"The session's project no longer admits {repo} ({refused.message})", current, ctx
        ) from None

    def plan(state: Session) -> Step[Session, SessionOutput]:
        if state.status == "ACTIVE" and int(state.resumeCount or 0) and state.updatedAt != args.expectedUpdatedAt:
            return Unchanged(
                SessionOutput(session=session_view(state, ctx))
            )  # the repeat of a resume that went through
        _stale(ctx, state)
        if state.status != "INTERRUPTED":
            raise errors.conflict(
                f"The session is {state.status}; only an INTERRUPTED session can be resumed.",
                "Start a new session with continuesSessionId for new work.",
                current=_current(state, ctx),
            )
        stamp = clock.next_stamp(state.updatedAt)
        edited = session_store.copy(state)
        edited.status, edited.outcome, edited.endedAt, edited.resumeCount, edited.updatedAt = (
            "ACTIVE",
            None,
            None,
            int(state.resumeCount or 0) + 1,
            stamp,
        )
        return session_store.edit(
            edited,
            state,
            actor_id=ctx.user_id,
            extra=lambda tx: session_store.repo_gate(tx, ws, state.projectId, repo, by_link=by_link),
            failed=lambda failure: _resume_conflict(f"The session's project no longer admits {repo}", state, ctx),
            result=lambda: SessionOutput(session=session_view(edited, ctx)),
        )

    try:
        return compare_and_set("resume_agent_session", current, plan)
    except Missing:
        raise errors.not_found("session", current.sessionId) from None


# -- get_agent_session -------------------------------------------------------------------------
class GetSessionInput(ToolInput):
    sessionId: SessionIdArg


class ArtifactRef(ToolOutput):
    artifactId: str
    type: str
    name: str
    sha256: str | None
    size: int | None = Field(description="Bytes.")
    createdAt: str


class SessionArtifacts(ToolOutput):
    summary: ArtifactRef | None = Field(
        description="The RUN_SUMMARY of the last completion (get_artifact reads its body)."
    )
    transcripts: list[ArtifactRef] = Field(description="The session's stored TRACE parts, by name.")


class GetSessionOutput(ToolOutput):
    session: SessionView
    alignments: list[AlignmentView] = Field(
        description="Every alignment interval, ordinal ascending; the last is open unless the session moved on."
    )
    artifacts: SessionArtifacts


def _get_prefetch(where: Located, args: GetSessionInput) -> Prefetch:
    ws, sid = where.workspace_id, where.session_ref().session_id
    return Prefetch(
        queries=(
            ("alignments", lambda: session_store.alignments(sid)),
            ("artifacts", lambda: session_capture.for_session(ws, sid)),
        ),
    )


def _artifact_ref(a: session_capture.SessionArtifact) -> ArtifactRef:
    return ArtifactRef(
        artifactId=a.artifactId, type=a.type, name=a.name, sha256=a.sha256, size=a.size, createdAt=a.createdAt
    )


@tool(
    "get_agent_session",
    title="Get agent session",
    description=(
        "One session: status, capture integrity, repo state, run summary and TRACE artifacts, reported token usage "
        "(null if none) and its alignment intervals."
    ),
    area="sessions",
    scope="read",
    read_only=True,
    target=target("sessionId", "session"),
    min_role="MEMBER",
    reads=("session",),
    prefetch=_get_prefetch,
    input_model=GetSessionInput,
    output_model=GetSessionOutput,
)
def get_agent_session(ctx: CallContext, args: GetSessionInput) -> GetSessionOutput:
    row = _session(ctx)
    intervals = sorted(
        ctx.query("alignments", lambda: session_store.alignments(row.sessionId)), key=lambda a: int(a.ordinal)
    )
    found = ctx.query("artifacts", lambda: session_capture.for_session(row.workspaceId, row.sessionId))
    named = (row.capture or {}).get("summaryArtifactId")
    summaries = [a for a in found if a.type == "RUN_SUMMARY"]
    summary = next((a for a in summaries if a.artifactId == named), summaries[-1] if summaries else None)
    traces = sorted((a for a in found if a.type == "TRACE"), key=lambda a: a.name)
    return GetSessionOutput(
        session=session_view(row, ctx),
        alignments=[
            AlignmentView(
                ordinal=int(a.ordinal),
                snapshot=AlignmentSnapshot(**a.snapshot),
                alignedBy=a.alignedBy,
                startedAt=a.startedAt,
                endedAt=a.endedAt,
            )
            for a in intervals
        ],
        artifacts=SessionArtifacts(
            summary=_artifact_ref(summary) if summary else None, transcripts=[_artifact_ref(a) for a in traces]
        ),
    )


# -- list_agent_sessions -----------------------------------------------------------------------
class ListSessionsInput(ToolInput):
    workspaceId: WorkspaceIdArg
    projectId: str | None = Field(default=None, max_length=64, description="pj_…")
    operatorId: Annotated[str | None, IdShape("user")] = Field(
        default=None, max_length=64, description="Operator's userId."
    )
    provider: Provider | None = Field(default=None, description="Provider.")
    status: Status | None = Field(default=None, description="Lifecycle status.")
    captureComplete: bool | None = Field(default=None, description="Capture complete or not.")
    limit: LimitArg
    cursor: CursorArg


class ListSessionsOutput(ToolOutput):
    sessions: list[SessionSummaryView] = Field(description="Newest first; provider thread ids are left out.")
    totalCount: int = Field(description="Sessions matching the filters, over all pages.")
    nextCursor: str | None
    notice: str | None


@tool(
    "list_agent_sessions",
    title="List agent sessions",
    description=(
        "A workspace's sessions, newest first, filtered by project, operator, provider, status or captureComplete; "
        "provider thread ids are left out."
    ),
    area="sessions",
    scope="read",
    read_only=True,
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    refs=(Ref("projectId", "project"),),
    prefetch=lambda where, args: Prefetch(
        queries=(("sessions", lambda: session_store.in_workspace(where.workspace_id)),)
    ),
    input_model=ListSessionsInput,
    output_model=ListSessionsOutput,
)
def list_agent_sessions(ctx: CallContext, args: ListSessionsInput) -> ListSessionsOutput:
    import base64
    import json

    from domain.store.paging import list_kind

    ws = ctx.target.workspace_id
    kind = list_kind(
        "sessions",
        workspace=ws,
        project=args.projectId,
        operator=args.operatorId,
        provider=args.provider,
        status=args.status,
        capture=args.captureComplete,
    )
    before = None
    if args.cursor:
        try:
            raw = json.loads(base64.urlsafe_b64decode(args.cursor.encode()))
            assert raw["k"] == kind and isinstance(raw["b"], str)
            before = raw["b"]
        except Exception:  # noqa: BLE001 - whatever breaks while decoding, the cursor is the caller's
            raise errors.invalid(
                "cursor",
                "is not a cursor of this list",
                "Send nextCursor from the previous page with the same filters, or omit it.",
            ) from None
    rows = [
        s
        for s in ctx.query("sessions", lambda: session_store.in_workspace(ws))
        if (args.projectId is None or s.projectId == args.projectId)
        and (args.operatorId is None or s.operatorId == args.operatorId)
        and (args.provider is None or s.provider == args.provider)
        and (args.status is None or s.status == args.status)
        and (args.captureComplete is None or bool(s.captureComplete) == args.captureComplete)
    ]
    rows.sort(key=lambda s: s.sessionId, reverse=True)
    rest = [s for s in rows if before is None or s.sessionId < before]
    page = rest[: args.limit]
    cursor = (
        base64.urlsafe_b64encode(json.dumps({"k": kind, "b": page[-1].sessionId}).encode()).decode()
        if len(rest) > args.limit
        else None
    )
    notice = f"Showing {len(page)} of {len(rows)} sessions; pass nextCursor for the next page." if cursor else None
    return ListSessionsOutput(
        sessions=[SessionSummaryView(**_summary_fields(s)) for s in page],
        totalCount=len(rows),
        nextCursor=cursor,
        notice=notice,
    )


TOOLS = (
    create_agent_session,
    attach_agent_session,
    align_agent_session,
    complete_agent_session,
    resume_agent_session,
    get_agent_session,
    list_agent_sessions,
)
