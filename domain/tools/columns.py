"""Column tools: list_columns and manage_columns (a short dispatch to one function per action).

Items, keys and request costs: docs/data-model.md (columns, board head ``activeColumns``).
"""

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from domain import clock, errors, ids
from domain.access import Located, Prefetch, Ref, either, target
from domain.context import CallContext
from domain.errors import ErrorCode
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import boards as board_store
from domain.store import columns as column_store
from domain.store.db import Missing
from domain.store.reads import Board, Column
from domain.text import has_visible
from domain.tools.args import BoardIdArg, IdShape, SingleLine, requested_changes
from domain.tools.views import ColumnView, column_view

# Bounds a board's width so that re-ranking all its columns, and the IN filter over active
# columns in list_tasks, stay far inside DynamoDB's 100-action and 100-operand limits.
MAX_ACTIVE_COLUMNS = 50


# -- list_columns ----------------------------------------------------------------------------
class ListColumnsInput(ToolInput):
    boardId: BoardIdArg
    includeArchived: bool = Field(default=False)


class ListColumnsOutput(ToolOutput):
    columns: list[ColumnView]


@tool(
    "list_columns",
    title="List columns",
    description="Lists a board's columns left to right (each is a status).",
    area="boards",
    scope="read",
    read_only=True,
    fields_of="columns",
    target=target("boardId", "board"),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(queries=(("header", lambda: board_store.header(where.board_id)),)),
    input_model=ListColumnsInput,
    output_model=ListColumnsOutput,
)
def list_columns(ctx: CallContext, args: ListColumnsInput) -> ListColumnsOutput:
    board, columns = ctx.query("header")
    if board is None:
        raise errors.not_found("board", args.boardId)
    return ListColumnsOutput(
        columns=[column_view(c, i) for c, i in column_store.ordered(columns, args.includeArchived)]
    )


# -- manage_columns --------------------------------------------------------------------------
class ManageColumnsInput(ToolInput):
    action: Literal["create", "rename", "move", "archive"]
    boardId: str | None = Field(default=None, max_length=64, description="bd_…; create only.")
    columnId: str | None = Field(default=None, max_length=80, description="cl_…; not for create.")
    name: Annotated[str | None, SingleLine] = Field(
        default=None, min_length=1, max_length=80, description="Required for create."
    )
    beforeColumnId: Annotated[str | None, IdShape("column")] = Field(
        default=None, max_length=80, description="Place before it."
    )
    afterColumnId: Annotated[str | None, IdShape("column")] = Field(
        default=None, max_length=80, description="Place after it."
    )
    wipLimit: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description=("Over it, writes add a notice; on rename null removes it."),
    )
    done: bool | None = Field(default=None, description="Marks a done column.")


class ManageColumnsOutput(ToolOutput):
    action: str
    column: ColumnView
    columns: list[ColumnView] = Field(description="The board's active columns after the change, in order.")
    notice: str | None = Field(
        default=None,
        description="archive: how many tasks left the board view with the column, and how to bring them back.",
    )


def _locate_column_target(ctx: CallContext, args: ManageColumnsInput) -> Located:
    """create acts on boardId; the other actions on columnId (whose id names its board)."""
    if args.action == "create":
        if not args.boardId:
            raise errors.invalid("boardId", "is required for action 'create'")
        if not has_visible(args.name):
            raise errors.invalid("name", "is required for action 'create'")
        b = ids.parse_board(args.boardId)
        if b is None:
            raise errors.not_found("board", args.boardId)
        return Located("board", args.boardId, b[0], board_id=b[1])
    if not args.columnId:
        raise errors.invalid("columnId", f"is required for action {args.action!r}")
    c = ids.parse_column(args.columnId)
    if c is None:
        raise errors.not_found("column", args.columnId)
    if args.boardId and args.boardId != c[1]:
        raise errors.invalid("boardId", "does not match the board of columnId")
    if args.action == "rename" and not has_visible(args.name) and args.done is None:
        raise errors.invalid("name", "is required for action 'rename'")
    if args.action == "move" and not (args.beforeColumnId or args.afterColumnId):
        raise errors.invalid("beforeColumnId", "move needs beforeColumnId or afterColumnId")
    return Located("column", args.columnId, c[0], board_id=c[1], column_id=c[2])


class _Board:
    """The board header a manage_columns action works on."""

    def __init__(self, ctx: CallContext, args: ManageColumnsInput) -> None:
        where = ctx.target
        self.ws: str = where.workspace_id
        self.board_id: str = where.board()
        head, self.columns = ctx.query("header", lambda: board_store.header(self.board_id))
        if head is None:
            raise errors.not_found(where.kind, where.ident)
        self.head: Board = head
        self.active = column_store.ordered(self.columns)
        self.column: Column | None = None
        if args.columnId:
            self.column = next((c for c in self.columns if c.columnId == args.columnId), None)
            if self.column is None:
                raise errors.not_found("column", args.columnId)
            if self.column.archivedAt:
                raise errors.invalid("columnId", "this column is archived")


def _placement(board: _Board, moving: str | None, args: ManageColumnsInput) -> tuple[str, dict[str, str]]:
    if args.beforeColumnId and args.afterColumnId:
        raise errors.invalid("beforeColumnId", "give beforeColumnId or afterColumnId, not both")
    try:
        return column_store.placement(board.active, moving, args.beforeColumnId, args.afterColumnId)
    except column_store.AnchorNotFound as missing:
        raise errors.invalid(
            "beforeColumnId" if args.beforeColumnId else "afterColumnId",
            f"{missing.args[0]!r} is not an active column of this board",
        ) from None


def _create(ctx: CallContext, args: ManageColumnsInput, board: _Board) -> Column:
    if len(board.active) >= MAX_ACTIVE_COLUMNS:
        raise errors.invalid(
            "boardId",
            f"a board holds at most {MAX_ACTIVE_COLUMNS} active columns",
            "Archive a column you no longer use first.",
        )
    name = (args.name or "").strip()
    position, moved = _placement(board, None, args)
    now = clock.now_iso()
    cid = ids.new_column_id(board.board_id)
    column = column_store.new_row(board.board_id, cid, name, position, args.wipLimit, now)
    column.done = bool(args.done)
    act = ctx.activity(
        board.ws,
        board.board_id,
        "column.created",
        f"Added column {name!r}",
        data={"columnId": cid, "name": name},
        at=now,
    )
    try:
        column_store.create(
            column, moved, workspace_id=board.ws, actor_id=ctx.user_id, activity=act, max_active=MAX_ACTIVE_COLUMNS
        )
    except Missing:
        raise errors.not_found("board", board.board_id) from None
    column_store.apply_rerank(board.columns, moved)
    board.columns.append(column)
    return column


def _update(
    ctx: CallContext,
    board: _Board,
    column: Column,
    stamp: str,
    changes: dict[str, Any],
    kind: str,
    summary: str,
    data: dict[str, Any],
    moved: dict[str, str] | None = None,
    archiving: bool = False,
) -> Column:
    previous = column.updatedAt
    act = ctx.activity(board.ws, board.board_id, kind, summary, data=data, at=stamp)
    try:
        column_store.update(
            column,
            {"updatedAt": stamp, **changes},
            previous,
            moved or {},
            archiving=archiving,
            workspace_id=board.ws,
            actor_id=ctx.user_id,
            activity=act,
        )
    except column_store.LastActiveColumn:
        raise errors.invalid(
            "columnId", "a board needs at least one active column", "Create another column before archiving this one."
        ) from None
    except column_store.ColumnChanged:
        raise errors.conflict(
            "The column changed while this call ran.", "Read the columns again and retry.", retry_after_seconds=1
        ) from None
    column.updatedAt = stamp
    column_store.apply_rerank(board.columns, moved or {})
    return column


def _rename(ctx: CallContext, args: ManageColumnsInput, board: _Board) -> Column:
    column = board.column
    assert column is not None
    stamp = clock.next_stamp(column.updatedAt)
    name = (args.name or "").strip() or column.name
    changes: dict[str, Any] = {"name": name}
    if args.done is not None:
        changes["done"] = args.done
    # The null rule of update tools: left out keeps the limit, null removes it (it may be empty).
    asked = requested_changes(
        args, clear_to={"wipLimit": None}, not_values=set(ManageColumnsInput.model_fields) - {"wipLimit"}
    )
    data: dict[str, Any] = {"columnId": column.columnId, "from": column.name, "to": name}
    if args.done is not None:
        data["done"] = args.done
    if "wipLimit" in asked:
        limit = asked["wipLimit"]
        changes["wipLimit"] = limit  # None removes it
        data["wipLimit"] = limit
    summary = f"Renamed column {column.name!r} to {name!r}"
    _update(ctx, board, column, stamp, changes, "column.renamed", summary, data)
    column.name = name
    if "wipLimit" in asked:
        column.wipLimit = asked["wipLimit"]
    if args.done is not None:
        column.done = args.done
    return column


def _move(ctx: CallContext, args: ManageColumnsInput, board: _Board) -> Column:
    column = board.column
    assert column is not None
    stamp = clock.next_stamp(column.updatedAt)
    position, moved = _placement(board, column.columnId, args)
    _update(
        ctx,
        board,
        column,
        stamp,
        {"position": position},
        "column.moved",
        f"Moved column {column.name!r}",
        {"columnId": column.columnId},
        moved,
    )
    column.position = position
    return column


def _archive(ctx: CallContext, args: ManageColumnsInput, board: _Board) -> Column:
    column = board.column
    assert column is not None
    if len(board.active) <= 1:
        raise errors.invalid(
            "columnId", "a board needs at least one active column", "Create another column before archiving this one."
        )
    stamp = clock.next_stamp(column.updatedAt)
    data = {"columnId": column.columnId, "tasks": int(column.taskCount or 0)}
    _update(
        ctx,
        board,
        column,
        stamp,
        {"archivedAt": stamp},
        "column.archived",
        f"Archived column {column.name!r}",
        data,
        archiving=True,
    )
    column.archivedAt = stamp
    return column


def _archive_notice(column: Column) -> str | None:
    """What an archive did to the board view: the tasks that went with the column, and the way back."""
    count = int(column.taskCount or 0)
    if not count:
        return None
    tasks = f"{count} task{'s' if count != 1 else ''}"
    return (
        f"{tasks} left the board view with column {column.name!r}; the board's taskCount and its snapshot no longer count "
        f"them. list_tasks(columnId={column.columnId!r}) still lists them, and move_task with the columnId of an active "
        "column brings one back."
    )


_ACTIONS: dict[str, Callable[[CallContext, ManageColumnsInput, _Board], Column]] = {
    "create": _create,
    "rename": _rename,
    "move": _move,
    "archive": _archive,
}


@tool(
    "manage_columns",
    title="Manage columns",
    description=(
        "Creates, renames (name/done/wipLimit), moves or archives a board column; archiving hides its tasks. One active "
        "column must remain."
    ),
    area="boards",
    scope="write",
    destructive=True,
    target=either(
        ("boardId", "board", {"action": "create", "name": "New column"}),
        ("columnId", "column", {"action": "rename", "name": "Renamed column"}),
        resolve=_locate_column_target,
    ),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(queries=(("header", lambda: board_store.header(where.board_id)),)),
    refs=(
        Ref(
            "beforeColumnId",
            "column",
            within="board",
            error=ErrorCode.INVALID_INPUT,
            message="is not an active column of this board",
        ),
        Ref(
            "afterColumnId",
            "column",
            within="board",
            error=ErrorCode.INVALID_INPUT,
            message="is not an active column of this board",
        ),
    ),
    input_model=ManageColumnsInput,
    output_model=ManageColumnsOutput,
)
def manage_columns(ctx: CallContext, args: ManageColumnsInput) -> ManageColumnsOutput:
    board = _Board(ctx, args)
    column = _ACTIONS[args.action](ctx, args, board)
    ordered = column_store.ordered(board.columns)
    position = next((i for c, i in ordered if c.columnId == column.columnId), len(ordered))
    notice = _archive_notice(column) if args.action == "archive" else None
    return ManageColumnsOutput(
        action=args.action,
        column=column_view(column, position),
        columns=[column_view(c, i) for c, i in ordered],
        notice=notice,
    )


TOOLS = (list_columns, manage_columns)
