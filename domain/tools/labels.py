"""Label tools: manage_labels, list_labels, set_task_labels.

A label belongs to one board (its id ``lb_<w>_<b>_<l>`` names the board); names are unique per
board compared case-insensitively (a claim item written in the create's transaction), colours
are ``#rrggbb``. A task's labels are a set replaced whole by set_task_labels. Items, keys,
bounds and request costs: docs/data-model.md ("Labels").
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from domain import clock, errors, ids
from domain.access import Located, Prefetch, Ref, either, locate, target
from domain.context import CallContext
from domain.errors import ErrorCode
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import boards as board_store
from domain.store import labels as label_store
from domain.store.db import Missing
from domain.store.reads import Label, Task
from domain.text import has_visible
from domain.tools.args import BoardIdArg, SingleLine, TaskIdArg
from domain.tools.views import ChangedFields, LabelView, TaskDetailView, label_view, task_detail_view

NAME_MAX = 50
COLOR_PATTERN = r"^#[0-9A-Fa-f]{6}$"
COLOR_HINT = "Send a colour as # followed by six hex digits, e.g. #d73a4a."
LabelIdArg = Annotated[str, Field(min_length=1, max_length=80, description="Label id (lb_…).")]


def _name(value: str, field: str = "name") -> str:
    name = " ".join(value.split())
    if not has_visible(name):
        raise errors.invalid(field, "must contain visible characters")
    return name


def _board_exists(ctx: CallContext) -> None:
    """NOT_FOUND for a board id of the right shape that names no board (its entry, read with the
    membership, is absent). The archived case is refused by the access step (``open_board``)."""
    if ctx.read.board_entry is None:
        raise errors.not_found(ctx.target.kind, ctx.target.ident)


# -- manage_labels ---------------------------------------------------------------------------
class ManageLabelsInput(ToolInput):
    action: Literal["create", "update", "delete"] = Field(
        description="create (boardId, name, color), update (labelId + name/color), delete (labelId)."
    )
    boardId: str | None = Field(default=None, min_length=1, max_length=64, description="bd_…")
    labelId: str | None = Field(default=None, min_length=1, max_length=80, description="lb_…")
    name: Annotated[str | None, SingleLine] = Field(
        default=None, min_length=1, max_length=NAME_MAX, description="Unique on the board, any case."
    )
    color: str | None = Field(default=None, pattern=COLOR_PATTERN, description="#rrggbb")


class ManageLabelsOutput(ToolOutput):
    action: str
    label: LabelView = Field(description="create/update: the label now; delete: the label as it was before the delete.")
    created: bool | None = Field(
        description="create: false when a label of that name (ignoring case) existed already and is returned unchanged; null otherwise."
    )
    changedFields: ChangedFields | None = Field(description="update: the fields this call changed; null otherwise.")
    detachedTaskIds: list[str] | None = Field(
        description="delete: the tasks this call took the label off; null otherwise."
    )
    remainingTasks: int | None = Field(
        description="delete: tasks still carrying the label when this call stopped (call delete again to finish); 0 when done, null otherwise."
    )
    notice: str | None


def _locate_manage(ctx: CallContext, args: ManageLabelsInput) -> Located:
    if args.labelId is not None:
        if args.boardId is not None:
            raise errors.invalid("boardId", "give boardId (create) or labelId (update, delete), not both")
        return locate(ctx, "label", args.labelId, "labelId")
    if args.boardId is not None:
        return locate(ctx, "board", args.boardId, "boardId")
    field = "boardId" if args.action == "create" else "labelId"
    raise errors.invalid(field, f"is required for action {args.action!r}")


def _manage_prefetch(where: Located, args: ManageLabelsInput) -> Prefetch:
    board_id = where.board()  # a board's or a label's: both carry it
    if where.kind == "board":  # create: the board's labels, for the case-insensitive name check
        return Prefetch(queries=(("labels", lambda: label_store.of_board(board_id)),))
    # delete reads the label's tasks only after the label: its rev must be older than that Query.
    return Prefetch()


@tool(
    "manage_labels",
    title="Manage labels",
    description=(
        "Creates (or returns the same-name one), updates or deletes a board label; delete unlinks 225 tasks a call, "
        "repeat while remainingTasks. Apply: set_task_labels."
    ),
    area="collaboration",
    scope="write",
    destructive=True,
    target=either(("boardId", "board"), ("labelId", "label", {"action": "update"}), resolve=_locate_manage),
    min_role="MEMBER",
    open_board=True,
    reads=("board_entry", "label", "label_name"),
    prefetch=_manage_prefetch,
    input_model=ManageLabelsInput,
    output_model=ManageLabelsOutput,
)
def manage_labels(ctx: CallContext, args: ManageLabelsInput) -> ManageLabelsOutput:
    where = ctx.target
    if args.action == "create":
        if where.kind != "board":
            raise errors.invalid("boardId", "is required for action 'create' (labelId names an existing label)")
        return _create(ctx, args)
    if where.kind != "label":
        raise errors.invalid("labelId", f"is required for action {args.action!r} (boardId is for create)")
    current = ctx.read.label
    # A label being deleted is gone for every action but delete, which finishes the job.
    if current is None or (current.deletingAt and args.action != "delete"):
        raise errors.not_found("label", args.labelId or "")
    if args.action == "update":
        return _update(ctx, args, current)
    if args.name is not None or args.color is not None:
        raise errors.invalid("name" if args.name is not None else "color", "is not taken by action 'delete'")
    return _delete(ctx, args, current)


def _create(ctx: CallContext, args: ManageLabelsInput) -> ManageLabelsOutput:
    if args.name is None:
        raise errors.invalid("name", "is required for action 'create'")
    if args.color is None:
        raise errors.invalid("color", "is required for action 'create'", COLOR_HINT)
    name, color = _name(args.name), args.color.lower()
    where = ctx.target
    _board_exists(ctx)
    labels = ctx.query("labels", lambda: label_store.of_board(where.board()))
    existing = label_store.existing_named(labels, name)
    if existing is not None and label_store.usable(existing):
        return _existing(existing, color)
    if len(labels) >= label_store.MAX_PER_BOARD:
        raise _full()
    now = clock.now_iso()
    label_id = ids.new_label_id(where.board())
    row = label_store.new_row(
        where.board(),
        label_id,
        name=name,
        color=color,
        taskCount=0,
        rev=0,
        createdAt=now,
        updatedAt=now,
    )
    act = ctx.activity(
        where.workspace_id,
        where.board(),
        "label.created",
        f"Created label {name!r}",
        data={"labelId": label_id, "name": name, "color": color},
        at=now,
    )
    try:
        stored, created = label_store.create(row, workspace_id=where.workspace_id, actor_id=ctx.user_id, activity=act)
    except label_store.BoardFull:
        raise _full() from None
    except board_store.BoardArchived:
        raise errors.board_archived("boardId") from None
    except Missing:
        raise errors.not_found("board", where.board()) from None
    if not created:
        return _existing(stored, color)
    return ManageLabelsOutput(
        action="create",
        label=label_view(stored),
        created=True,
        changedFields=None,
        detachedTaskIds=None,
        remainingTasks=None,
        notice=None,
    )


def _existing(label: Label, color: str) -> ManageLabelsOutput:
    notice = f"The board already has a label named {label.name!r}; it is returned unchanged"
    notice += "." if label.color == color else f" (its colour stays {label.color}; use action 'update' to change it)."
    return ManageLabelsOutput(
        action="create",
        label=label_view(label),
        created=False,
        changedFields=None,
        detachedTaskIds=None,
        remainingTasks=None,
        notice=notice,
    )


def _full() -> errors.ToolError:
    return errors.invalid(
        "boardId",
        f"this board already has {label_store.MAX_PER_BOARD} labels, the most it can hold",
        "Delete or reuse a label (list_labels).",
    )


def _taken(other: str | None, name: str) -> errors.ToolError:
    return errors.invalid(
        "name",
        f"another label of this board is already named {name!r} (ignoring case){f': {other}' if other else ''}",
        "Pick another name, or use that label.",
    )


def _update(ctx: CallContext, args: ManageLabelsInput, current: Label) -> ManageLabelsOutput:
    if args.name is None and args.color is None:
        raise errors.invalid("name", "action 'update' needs a new name and/or color")
    name = _name(args.name) if args.name is not None else None
    color = args.color.lower() if args.color is not None else None
    where = ctx.target
    _board_exists(ctx)
    if name is not None:
        claim = ctx.read.label_name
        if claim is not None and claim.labelId != current.labelId:
            raise _taken(claim.labelId, name)

    def activity_for(edited: Label, changes: dict[str, Any]) -> Any:
        return ctx.activity(
            where.workspace_id,
            where.board(),
            "label.updated",
            f"Updated label {edited.name!r}: {', '.join(changes)}",
            data={"labelId": edited.labelId, **changes},
            at=edited.updatedAt,
        )

    try:
        label, changed = label_store.update(
            current,
            name=name,
            color=color,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity_for=activity_for,
        )
    except label_store.NameTaken as taken:
        raise _taken(taken.label_id, name or "") from None
    except board_store.BoardArchived:
        raise errors.board_archived("labelId") from None
    except Missing:
        raise errors.not_found("label", current.labelId) from None
    return ManageLabelsOutput(
        action="update",
        label=label_view(label),
        created=None,
        changedFields=changed,
        detachedTaskIds=None,
        remainingTasks=None,
        notice=None,
    )


def _delete(ctx: CallContext, args: ManageLabelsInput, current: Label) -> ManageLabelsOutput:
    where = ctx.target
    _board_exists(ctx)

    def activity_for(task_ids: list[str], remaining: int) -> Any:
        summary = f"Deleted label {current.name!r}" + (
            f", taken off {len(task_ids)} task{'s' if len(task_ids) != 1 else ''}" if task_ids else ""
        )
        if remaining:
            summary += f" ({remaining} more to go)"
        return ctx.activity(
            where.workspace_id,
            where.board(),
            "label.deleted",
            summary,
            data={"labelId": current.labelId, "name": current.name, "taskIds": task_ids, "remaining": remaining},
        )

    try:
        done = label_store.delete(
            current, workspace_id=where.workspace_id, actor_id=ctx.user_id, activity_for=activity_for
        )
    except board_store.BoardArchived:
        raise errors.board_archived("labelId") from None
    except Missing:
        raise errors.not_found("label", current.labelId) from None
    notice = None
    if done.remaining:
        notice = (
            f"Took the label off {len(done.detached)} tasks; {done.remaining} still carry it. The label is hidden and takes no new "
            "tasks; call manage_labels delete with the same labelId again to finish."
        )
    before = label_view(current)
    return ManageLabelsOutput(
        action="delete",
        label=before,
        created=None,
        changedFields=None,
        detachedTaskIds=done.detached,
        remainingTasks=done.remaining,
        notice=notice,
    )


# -- list_labels -----------------------------------------------------------------------------
class ListLabelsInput(ToolInput):
    boardId: BoardIdArg


class ListLabelsOutput(ToolOutput):
    boardId: str
    labels: list[LabelView] = Field(description="By name, ignoring case.")
    totalCount: int


@tool(
    "list_labels",
    title="List labels",
    description="Lists a board's labels (at most 100, no paging) with colour and task count.",
    area="collaboration",
    scope="read",
    read_only=True,
    fields_of="labels",
    target=target("boardId", "board"),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(queries=(("labels", lambda: board_store.labeled_header(where.board_id)),)),
    input_model=ListLabelsInput,
    output_model=ListLabelsOutput,
)
def list_labels(ctx: CallContext, args: ListLabelsInput) -> ListLabelsOutput:
    board, _, labels = ctx.query("labels")
    if board is None:
        raise errors.not_found("board", args.boardId)
    views = [label_view(lb) for lb in label_store.ordered(labels)]
    return ListLabelsOutput(boardId=args.boardId, labels=views, totalCount=len(views))


# -- set_task_labels -------------------------------------------------------------------------
class SetTaskLabelsInput(ToolInput):
    taskId: TaskIdArg
    labelIds: list[Annotated[str, Field(min_length=1, max_length=80)]] = Field(
        max_length=label_store.MAX_PER_TASK,
        description="lb_… ids; [] clears.",
    )


class TaskLabel(ToolOutput):
    id: str
    name: str
    color: str


class SetTaskLabelsOutput(ToolOutput):
    task: TaskDetailView
    labels: list[TaskLabel] = Field(description="The task's labels now, in the order given.")
    previousLabels: list[TaskLabel] = Field(description="The task's labels before this call.")
    changed: bool = Field(description="False when the set was already this one (nothing was written).")
    notice: str | None


@tool(
    "set_task_labels",
    title="Set task labels",
    description=(
        "Replaces a task's whole label set (send current ids plus or minus one); labels must belong to the task's "
        "board."
    ),
    area="collaboration",
    scope="write",
    idempotent=True,
    target=target("taskId", "task"),
    min_role="MEMBER",
    open_board=True,
    refs=(
        Ref(
            "labelIds",
            "label",
            within="board",
            error=ErrorCode.INVALID_INPUT,
            many=True,
            message="must be labels of the task's board",
        ),
    ),
    reads=("task",),
    prefetch=lambda where, args: Prefetch(queries=(("labels", lambda: board_store.labeled_header(where.board_id)),)),
    input_model=SetTaskLabelsInput,
    output_model=SetTaskLabelsOutput,
)
def set_task_labels(ctx: CallContext, args: SetTaskLabelsInput) -> SetTaskLabelsOutput:
    where = ctx.target
    wanted = list(dict.fromkeys(args.labelIds))
    _, columns, labels = ctx.query("labels")
    board_labels = {lb.labelId: lb for lb in labels if label_store.usable(lb)}
    foreign = [x for x in wanted if x not in board_labels]
    if foreign:
        raise errors.invalid(
            "labelIds",
            f"not labels of the task's board: {', '.join(foreign)}",
            "list_labels(boardId) shows the board's labels; manage_labels creates one.",
        )
    task = ctx.read.task
    if task is None:
        raise errors.not_found("task", args.taskId)
    if task.archivedAt:
        raise _task_archived()
    names = {c.columnId: c.name for c in columns}

    def ref(x: str) -> TaskLabel:
        lb = board_labels.get(x)
        return (
            TaskLabel(id=x, name=lb.name, color=lb.color)
            if lb
            else TaskLabel(id=x, name="(deleted label)", color="#000000")
        )

    def activity_for(detail: Task, added: list[str], removed: list[str]) -> Any:
        parts = [f"+{board_labels[x].name}" for x in added if x in board_labels] + [f"-{ref(x).name}" for x in removed]
        return ctx.activity(
            where.workspace_id,
            where.board(),
            "task.labels_set",
            f"Set labels on {detail.key}: {' '.join(parts)}",
            task_id=detail.taskId,
            data={"added": added, "removed": removed},
            at=detail.updatedAt,
        )

    def result(detail: Task, before: list[str]) -> SetTaskLabelsOutput:
        changed = set(before) != set(wanted)
        dropped = [ref(x).name for x in before if x not in wanted]
        notice = None
        if changed and dropped:
            notice = f"Removed {', '.join(repr(n) for n in dropped)}: labelIds replaces the whole set. To add a label, send the current ids plus the new one."
        return SetTaskLabelsOutput(
            task=task_detail_view(detail, names.get(detail.columnId)),
            labels=[ref(x) for x in (detail.labelIds or [])],
            previousLabels=[ref(x) for x in before],
            changed=changed,
            notice=notice,
        )

    try:
        return label_store.set_for_task(
            task,
            wanted,
            workspace_id=where.workspace_id,
            actor_id=ctx.user_id,
            activity_for=activity_for,
            result=result,
        )
    except label_store.LabelGone as gone:
        raise errors.invalid(
            "labelIds",
            f"not labels of the task's board: {', '.join(gone.label_ids)} (deleted meanwhile)",
            "list_labels(boardId) shows the board's labels.",
        ) from None
    except label_store.TaskArchived:
        raise _task_archived() from None
    except board_store.BoardArchived:
        raise errors.board_archived("taskId") from None
    except Missing:
        raise errors.not_found("task", args.taskId) from None


def _task_archived() -> errors.ToolError:
    return errors.invalid(
        "taskId",
        "the task is archived and cannot be edited",
        "Archived tasks are read-only; their labels stay as they were.",
    )


TOOLS = (manage_labels, list_labels, set_task_labels)
