"""Task link tools: add_task_link, remove_task_link, list_task_links.

A link is a directed edge between two tasks of one workspace, on any boards (docs/data-model.md,
"Task links"). BLOCKS and DEPENDS_ON are dependencies: an edge that would close a cycle of them
is refused, the cycle named by task keys. RELATES_TO and DUPLICATES are stored as given and
never checked. Adding a stored edge and removing a missing one change nothing.
"""

from pydantic import Field

from domain import clock, errors, ids
from domain.access import Prefetch, Ref, target
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import links as link_store
from domain.store.db import Missing
from domain.store.reads import Link, Task
from domain.tools.args import LinkKind, TaskIdArg
from domain.tools.views import TaskLinksView, task_links_view

_KIND_DOC = "BLOCKS: from goes first; DEPENDS_ON: from needs to."


class LinkView(ToolOutput):
    fromTaskId: str
    fromKey: str
    kind: str = Field(description="BLOCKS, DEPENDS_ON, RELATES_TO or DUPLICATES: 'fromKey <kind> toKey'.")
    toTaskId: str
    toKey: str
    createdAt: str
    createdBy: str = Field(description="User id of whoever added the link.")


def link_view(row: Link) -> LinkView:
    return LinkView(
        fromTaskId=row.fromTaskId,
        fromKey=row.fromKey,
        kind=row.linkKind,
        toTaskId=row.toTaskId,
        toKey=row.toKey,
        createdAt=row.createdAt,
        createdBy=row.createdBy,
    )


class EdgeInput(ToolInput):
    fromTaskId: TaskIdArg = Field(description="tk_…")
    toTaskId: TaskIdArg = Field(description="tk_…, any board.")
    kind: LinkKind = Field(description=_KIND_DOC)


# Both tasks, their boards' entries (archived or not) and the edge itself; add also reads both
# link counters and (dependency kinds) the link graph version: all in the access step's one
# BatchGetItem (domain.store.reads).
EDGE_READS = ("task", "board_entry", "to_task", "to_board_entry", "edge")
ADD_READS = (*EDGE_READS, "link_count", "to_link_count", "link_graph")


def _tasks(ctx: CallContext, args: EdgeInput) -> tuple[Task, Task]:
    """The two ends as read with the membership; NOT_FOUND naming the one that is missing."""
    src, dst = ctx.read.task, ctx.read.to_task
    if src is None:
        raise errors.not_found("task", args.fromTaskId)
    if dst is None:
        raise errors.not_found("task", args.toTaskId)
    return src, dst


def _other_board_open(ctx: CallContext, name: str) -> None:
    """Refuse when the board of the other task is archived (its entry was read with the
    membership); the target's own board is checked by the access step (``open_board``)."""
    entry = ctx.read.to_board_entry
    if entry is None or entry.archivedAt:
        raise errors.board_archived(name)


def _field_of(task_id: str, args: EdgeInput) -> str:
    return "fromTaskId" if task_id == args.fromTaskId else "toTaskId"


# -- add_task_link ---------------------------------------------------------------------------
class AddTaskLinkInput(EdgeInput):
    pass


class AddTaskLinkOutput(ToolOutput):
    link: LinkView
    created: bool = Field(description="False when this exact edge was already stored: the call changed nothing.")


def _full(name: str) -> errors.ToolError:
    return errors.invalid(
        name,
        f"the task already has {link_store.MAX_LINKS_PER_TASK} links, the most one task can hold",
        "Remove links it no longer needs (remove_task_link), then add this one.",
    )


def _archived(name: str) -> errors.ToolError:
    return errors.invalid(
        name,
        "the task is archived: it takes no new links",
        "Link live tasks; list_task_links still shows an archived task's links.",
    )


@tool(
    "add_task_link",
    title="Add task link",
    description=(
        "Links two tasks of a workspace as 'fromTask <kind> toTask'; cycles, self-links and archived tasks are "
        "INVALID_INPUT, max 200 links a task. Existing: created: false."
    ),
    area="collaboration",
    scope="write",
    idempotent=True,
    target=target("fromTaskId", "task"),
    min_role="MEMBER",
    open_board=True,
    refs=(Ref("toTaskId", "task"),),
    reads=ADD_READS,
    input_model=AddTaskLinkInput,
    output_model=AddTaskLinkOutput,
)
def add_task_link(ctx: CallContext, args: AddTaskLinkInput) -> AddTaskLinkOutput:
    """Catalog: add_task_link. Returns ``{link: {fromTaskId, fromKey, kind, toTaskId, toKey, createdAt,
    createdBy}, created}`` (``created`` false: the edge was stored already, nothing written).

    Errors: NOT_FOUND for a task that is missing or in another workspace (from the id alone for
    the latter); INVALID_INPUT on ``toTaskId`` for a self-link, a dependency cycle (named by task
    keys) or a walk past 500 tasks, and on the field of an archived task, a task of an archived
    board or a task holding 200 links; CONFLICT when 10 attempts lost the link graph version.
    """
    if args.toTaskId == args.fromTaskId:
        raise errors.invalid("toTaskId", "a task cannot be linked to itself", "Pass two different tasks.")
    where = ctx.target
    src, dst = _tasks(ctx, args)
    stored = ctx.read.edge
    if stored is not None:
        return AddTaskLinkOutput(link=link_view(stored), created=False)
    for name, task in (("fromTaskId", src), ("toTaskId", dst)):
        if task.archivedAt:
            raise _archived(name)
    _other_board_open(ctx, "toTaskId")  # the source's board: the access step (open_board)
    for name, counter in (("fromTaskId", ctx.read.link_count), ("toTaskId", ctx.read.to_link_count)):
        if counter is not None and int(counter.count or 0) >= link_store.MAX_LINKS_PER_TASK:
            raise _full(name)
    now = clock.now_iso()
    out, inn = link_store.halves(
        from_task=src, kind=args.kind, to_task=dst, workspace_id=where.workspace_id, actor_id=ctx.user_id, at=now
    )
    act = ctx.activity(
        where.workspace_id,
        src.boardId,
        "task.link_added",
        f"Linked {src.key} {args.kind} {dst.key}",
        task_id=src.taskId,
        data={"fromTaskId": src.taskId, "toTaskId": dst.taskId, "kind": args.kind},
        at=now,
    )
    version: int | None = None
    check = None
    if args.kind in link_store.DEPENDENCY_KINDS:
        graph = ctx.read.link_graph
        version = int(graph.version) if graph is not None else None
        key_of = {src.taskId: src.key, dst.taskId: dst.key}
        x, y = link_store.before(src.taskId, args.kind, dst.taskId)  # x must finish before y

        def check() -> None:
            path = link_store.find_cycle((y, key_of[y]), (x, key_of[x]))
            if path is not None:
                raise link_store.Cycle([key_of[x], *path] if args.kind == "BLOCKS" else [*path, key_of[y]])

    try:
        link_store.add(out, inn, actor_id=ctx.user_id, activity=act, version=version, check=check)
    except link_store.Exists as exists:
        return AddTaskLinkOutput(link=link_view(exists.stored), created=False)
    except link_store.Cycle as cycle:
        raise errors.invalid(
            "toTaskId",
            f"{src.key} {args.kind} {dst.key} would close the dependency cycle {' -> '.join(cycle.path)} "
            "(each task must be done before the next); nothing was written",
            "Remove one of the links on that path first (remove_task_link), or use RELATES_TO, which is never checked.",
        ) from None
    except link_store.TooLarge:
        raise errors.invalid(
            "toTaskId",
            f"the dependency check gives up after {link_store.MAX_VISITED} tasks, and the dependencies reachable from this "
            "link go further; nothing was written",
            "Remove dependencies that no longer matter, or link the tasks with RELATES_TO.",
        ) from None
    except link_store.TaskClosed as closed:
        raise _archived(_field_of(closed.task_id, args)) from None
    except link_store.BoardClosed as closed:
        raise errors.board_archived(_field_of(closed.task_id, args)) from None
    except link_store.Full as full:
        raise _full(_field_of(full.task_id, args)) from None
    except Missing:
        raise errors.not_found("task", args.fromTaskId) from None
    return AddTaskLinkOutput(link=link_view(out), created=True)


# -- remove_task_link ------------------------------------------------------------------------
class RemoveTaskLinkInput(EdgeInput):
    pass


class RemoveTaskLinkOutput(ToolOutput):
    removed: bool = Field(description="False when no such edge was stored: the call changed nothing.")
    link: LinkView | None = Field(description="The edge as it was before it was removed; null when there was none.")


@tool(
    "remove_task_link",
    title="Remove task link",
    description=(
        "Removes 'fromTask <kind> toTask' exactly as stored ('B DEPENDS_ON A' is not 'A BLOCKS B'); none there: "
        "removed: false."
    ),
    area="collaboration",
    scope="write",
    idempotent=True,
    target=target("fromTaskId", "task"),
    min_role="MEMBER",
    open_board=True,
    refs=(Ref("toTaskId", "task"),),
    reads=EDGE_READS,
    input_model=RemoveTaskLinkInput,
    output_model=RemoveTaskLinkOutput,
)
def remove_task_link(ctx: CallContext, args: RemoveTaskLinkInput) -> RemoveTaskLinkOutput:
    """Catalog: remove_task_link. Returns ``{removed, link}`` — the removed edge, or ``removed``
    false and ``link`` null when no edge matched (nothing written).

    Errors: NOT_FOUND for a missing or foreign task; INVALID_INPUT naming the task on an archived
    board (archived tasks themselves may shed links: they still count in the cycle check).
    """
    where = ctx.target
    src, dst = _tasks(ctx, args)
    stored = ctx.read.edge
    if stored is None:
        return RemoveTaskLinkOutput(removed=False, link=None)
    _other_board_open(ctx, "toTaskId")  # the source's board: the access step (open_board)
    act = ctx.activity(
        where.workspace_id,
        src.boardId,
        "task.link_removed",
        f"Unlinked {src.key} {args.kind} {dst.key}",
        task_id=src.taskId,
        data={"fromTaskId": src.taskId, "toTaskId": dst.taskId, "kind": args.kind},
    )
    try:
        link_store.remove(stored, actor_id=ctx.user_id, activity=act)
    except link_store.Gone:
        return RemoveTaskLinkOutput(removed=False, link=None)
    except link_store.BoardClosed as closed:
        raise errors.board_archived(_field_of(closed.task_id, args)) from None
    except Missing:
        raise errors.not_found("task", args.fromTaskId) from None
    return RemoveTaskLinkOutput(removed=True, link=link_view(stored))


# -- list_task_links -------------------------------------------------------------------------
class ListTaskLinksInput(ToolInput):
    taskId: TaskIdArg


class ListTaskLinksOutput(TaskLinksView):
    taskId: str
    key: str
    totalCount: int = Field(
        description=f"Links of this task, both directions (at most {link_store.MAX_LINKS_PER_TASK}: the list is never paged)."
    )


@tool(
    "list_task_links",
    title="List task links",
    description=("A task's links in both directions with the other task's key, title, board and archived state."),
    area="collaboration",
    scope="read",
    read_only=True,
    target=target("taskId", "task"),
    min_role="MEMBER",
    reads=("task",),
    prefetch=lambda where, args: Prefetch(
        queries=(("links", lambda: link_store.rows(ids.task_id(where.board_id, where.task.number))),),
    ),
    input_model=ListTaskLinksInput,
    output_model=ListTaskLinksOutput,
)
def list_task_links(ctx: CallContext, args: ListTaskLinksInput) -> ListTaskLinksOutput:
    """Catalog: list_task_links. Returns ``{taskId, key, outgoing, incoming, totalCount}``; each
    entry is the other end now (``kind, taskId, key, title, boardId, boardName, archived,
    boardArchived, linkedAt, linkedBy``). Errors: NOT_FOUND for a missing or foreign task.
    """
    task = ctx.read.task
    if task is None:
        raise errors.not_found("task", args.taskId)
    view = task_links_view(link_store.links_of(ctx.query("links", lambda: link_store.rows(task.taskId))))
    return ListTaskLinksOutput(
        taskId=task.taskId,
        key=task.key,
        outgoing=view.outgoing,
        incoming=view.incoming,
        totalCount=len(view.outgoing) + len(view.incoming),
    )


TOOLS = (add_task_link, remove_task_link, list_task_links)
