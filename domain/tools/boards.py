"""Board tools: list_boards, create_board, rename_board, get_board_snapshot.

Items, keys and request costs: docs/data-model.md (board head, board entry, columns).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from domain import errors, ids
from domain.access import Prefetch, target
from domain.context import CallContext
from domain.idempotency import creation_marker
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import boards as board_store
from domain.store import columns as column_store
from domain.store import keys
from domain.store.db import Missing
from domain.text import has_visible
from domain.tools.args import BoardIdArg, IdempotencyKeyArg, WorkspaceIdArg
from domain.tools.views import BoardView, ColumnView, TaskRowView, board_view, column_view, task_row_view

BoardKind = Literal["TASKS", "CRM", "SUPPORT", "BUGS", "ROADMAP"]
DEFAULT_COLUMNS: dict[str, list[str]] = {
    "TASKS": ["Backlog", "To Do", "In Progress", "Done"],
    "CRM": ["Lead", "Qualified", "Proposal", "Negotiation", "Won", "Lost"],
    "SUPPORT": ["New", "Triaged", "In Progress", "Waiting on Customer", "Resolved"],
    "BUGS": ["Reported", "Confirmed", "In Progress", "In Review", "Fixed"],
    "ROADMAP": ["Ideas", "Planned", "In Progress", "Shipped"],
}
SNAPSHOT_CAP = 500
NameArg = Annotated[str, Field(min_length=1, max_length=120, description="Display name.")]


# -- list_boards -----------------------------------------------------------------------------
class ListBoardsInput(ToolInput):
    workspaceId: WorkspaceIdArg
    includeArchived: bool = Field(default=False, description="Also list archived boards.")


class BoardEntryView(ToolOutput):
    id: str
    name: str
    kind: str
    createdAt: str
    archivedAt: str | None


class ListBoardsOutput(ToolOutput):
    boards: list[BoardEntryView]


@tool(
    "list_boards",
    title="List boards",
    description="Lists the boards of a workspace (active ones unless includeArchived is true).",
    area="boards",
    scope="read",
    read_only=True,
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(queries=(("entries", lambda: board_store.entries(where.workspace_id)),)),
    input_model=ListBoardsInput,
    output_model=ListBoardsOutput,
)
def list_boards(ctx: CallContext, args: ListBoardsInput) -> ListBoardsOutput:
    views = [
        BoardEntryView(id=r.boardId, name=r.name, kind=r.boardKind, createdAt=r.createdAt, archivedAt=r.archivedAt)
        for r in ctx.query("entries")
        if args.includeArchived or not r.archivedAt
    ]
    views.sort(key=lambda v: (v.createdAt, v.id))
    return ListBoardsOutput(boards=views)


# -- create_board ----------------------------------------------------------------------------
class CreateBoardInput(ToolInput):
    workspaceId: WorkspaceIdArg
    name: NameArg
    kind: BoardKind = Field(default="TASKS", description="Board kind; it decides the default columns.")
    idempotencyKey: IdempotencyKeyArg


class BoardWithColumnsOutput(ToolOutput):
    board: BoardView
    columns: list[ColumnView]


@tool(
    "create_board",
    title="Create board",
    description=(
        "Adds a board to a workspace, pre-filled with the standard columns for its kind: TASKS gets Backlog, To Do, "
        "In Progress and Done, while CRM, SUPPORT, BUGS and ROADMAP each get their own set. Returns the board and its columns."
    ),
    area="boards",
    scope="write",
    keyed=True,
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    input_model=CreateBoardInput,
    output_model=BoardWithColumnsOutput,
)
def create_board(ctx: CallContext, args: CreateBoardInput) -> BoardWithColumnsOutput:
    ws = ctx.target.workspace_id
    name = args.name.strip()
    if not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    board_id = ids.new_board_id(ws)
    act = ctx.activity(ws, board_id, "board.created", f"Created board {name!r} ({args.kind})", data={"name": name, "kind": args.kind})
    try:
        board, columns, _ = board_store.create(
            ws, name, args.kind, DEFAULT_COLUMNS[args.kind], actor_id=ctx.user_id, activity=act, marker=creation_marker(ctx, ws, board_id),
        )
    except Missing:
        raise errors.not_found("workspace", ws) from None
    return BoardWithColumnsOutput(board=board_view(board, columns), columns=[column_view(c, i) for i, c in enumerate(columns)])


# -- rename_board ----------------------------------------------------------------------------
class RenameBoardInput(ToolInput):
    boardId: BoardIdArg
    name: NameArg


class BoardOutput(ToolOutput):
    board: BoardView


@tool(
    "rename_board",
    title="Rename board",
    description="Gives a board a new name. Renaming to the current name changes nothing.",
    area="boards",
    scope="write",
    idempotent=True,
    target=target("boardId", "board"),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(queries=(("header", lambda: board_store.header(where.board_id)),)),
    input_model=RenameBoardInput,
    output_model=BoardOutput,
)
def rename_board(ctx: CallContext, args: RenameBoardInput) -> BoardOutput:
    board, columns = ctx.query("header")  # started with the membership read; it brings the columns the count needs
    if board is None:
        raise errors.not_found("board", args.boardId)
    name = args.name.strip()
    if not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    ws = ctx.target.workspace_id

    def activity_for(old: str, stamp: str):  # type: ignore[no-untyped-def]
        return ctx.activity(ws, board.boardId, "board.renamed", f"Renamed board {old!r} to {name!r}", data={"from": old, "to": name}, at=stamp)

    renamed = board_store.rename(board, name, actor_id=ctx.user_id, activity_for=activity_for)
    return BoardOutput(board=board_view(renamed, columns))


# -- get_board_snapshot ----------------------------------------------------------------------
class SnapshotInput(ToolInput):
    boardId: BoardIdArg


class SnapshotColumn(ColumnView):
    taskIds: list[str] = Field(description="Ids of the column's tasks in board order (those included in this snapshot).")


class SnapshotOutput(ToolOutput):
    board: BoardView
    columns: list[SnapshotColumn]
    tasks: list[TaskRowView]
    totalCount: int = Field(description="Tasks on the board's active columns.")
    truncated: bool
    notice: str | None


@tool(
    "get_board_snapshot",
    title="Board snapshot",
    description=(
        "The call to orient yourself on a board: the board, its columns in order and every task as a concise row, in one "
        "call — use it instead of list_boards + list_columns + list_tasks. Holds at most 500 tasks; when a board has more, "
        "the notice says how to page through the rest with list_tasks."
    ),
    area="boards",
    scope="read",
    read_only=True,
    target=target("boardId", "board"),
    min_role="MEMBER",
    prefetch=lambda where, args: Prefetch(queries=(("snapshot", lambda: board_store.snapshot(where.board_id, SNAPSHOT_CAP)),)),
    input_model=SnapshotInput,
    output_model=SnapshotOutput,
)
def get_board_snapshot(ctx: CallContext, args: SnapshotInput) -> SnapshotOutput:
    board, columns, tasks, truncated = ctx.query("snapshot")
    if board is None:
        raise errors.not_found("board", args.boardId)
    active = column_store.ordered(columns)
    live = {c.columnId: (c, i) for c, i in active}
    tasks.sort(key=lambda t: (live[t.columnId][1], t.rank, int(t.number)))
    total = sum(int(c.taskCount or 0) for c, _ in active)
    snap_cols = []
    for c, i in active:
        view = column_view(c, i).model_dump()
        snap_cols.append(SnapshotColumn(**view, taskIds=[t.taskId for t in tasks if t.columnId == c.columnId]))
    notice = None
    if truncated:
        notice = (
            f"Showing {len(tasks)} of {total} tasks (the snapshot holds {SNAPSHOT_CAP}). Page through the rest with "
            "list_tasks(boardId or columnId, cursor)."
        )
    return SnapshotOutput(
        board=board_view(board, columns), columns=snap_cols,
        tasks=[task_row_view(t, live[t.columnId][0].name) for t in tasks], totalCount=total, truncated=truncated, notice=notice,
    )


TOOLS = (list_boards, create_board, rename_board, get_board_snapshot)
