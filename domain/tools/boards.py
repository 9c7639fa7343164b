"""Board and column tools: list_boards, create_board, rename_board, list_columns, manage_columns,
get_board_snapshot. Key layout and request costs: docs/data-model.md."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fractional_indexing import generate_key_between, generate_n_keys_between
from pydantic import Field

from domain import clock, errors, ids
from domain.context import CallContext
from domain.idempotency import creation_marker, earlier_entity, put_marker
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import db
from domain.store.models import BoardEntryRow, BoardRow, ColumnRow, MemberRow, Row, TaskRow
from domain.tools.common import (
    has_visible,
    BoardIdArg,
    BoardView,
    ColumnView,
    IdempotencyKeyArg,
    TaskRowView,
    WorkspaceIdArg,
    activity,
    board_view,
    column_view,
    ordered_columns,
    task_row_view,
)

BoardKind = Literal["TASKS", "CRM", "SUPPORT", "BUGS", "ROADMAP"]
DEFAULT_COLUMNS: dict[str, list[str]] = {
    "TASKS": ["Backlog", "To Do", "In Progress", "Done"],
    "CRM": ["Lead", "Qualified", "Proposal", "Negotiation", "Won", "Lost"],
    "SUPPORT": ["New", "Triaged", "In Progress", "Waiting on Customer", "Resolved"],
    "BUGS": ["Reported", "Confirmed", "In Progress", "In Review", "Fixed"],
    "ROADMAP": ["Ideas", "Planned", "In Progress", "Shipped"],
}
SNAPSHOT_CAP = 500
# Bounds a board's width so that re-ranking all its columns, and the IN filter over active
# columns in list_tasks, stay far inside DynamoDB's 100-action and 100-operand limits.
MAX_ACTIVE_COLUMNS = 50
NameArg = Annotated[str, Field(min_length=1, max_length=120, description="Display name.")]


def member_guard(tx: Any, workspace_id: str, user_id: str) -> None:
    """ConditionCheck that the caller is still a member when the transaction commits."""
    tx.condition_check(MemberRow, f"WS#{workspace_id}", f"MEMBER#{user_id}", condition=Row.PK.exists())


def load_board(ctx: CallContext, board_id: str) -> tuple[str, BoardRow]:
    """The caller-visible board ``board_id`` (membership GetItem + board GetItem)."""
    parsed = ids.parse_board(board_id)
    if parsed is None:
        raise errors.not_found("board", board_id)
    ws, _ = parsed
    ctx.member(ws, "board", board_id)
    row = _get_board(board_id)
    if row is None:
        raise errors.not_found("board", board_id)
    return ws, row


def _get_board(board_id: str) -> BoardRow | None:
    try:
        return BoardRow.get(f"BOARD#{board_id}", "#META", consistent_read=True)
    except BoardRow.DoesNotExist:
        return None


def board_header(board_id: str) -> tuple[BoardRow | None, list[ColumnRow]]:
    """Board head and every column in one Query (``#META`` .. ``C#~``)."""
    board: BoardRow | None = None
    columns: list[ColumnRow] = []
    for row in Row.query(f"BOARD#{board_id}", Row.SK.between("#", "C#~"), consistent_read=True):
        if isinstance(row, BoardRow):
            board = row
        elif isinstance(row, ColumnRow):
            columns.append(row)
    return board, columns


def load_header(ctx: CallContext, board_id: str) -> tuple[str, BoardRow, list[ColumnRow]]:
    parsed = ids.parse_board(board_id)
    if parsed is None:
        raise errors.not_found("board", board_id)
    ws, _ = parsed
    ctx.member(ws, "board", board_id)
    board, columns = board_header(board_id)
    if board is None:
        raise errors.not_found("board", board_id)
    return ws, board, columns


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
    scope="read",
    read_only=True,
    input_model=ListBoardsInput,
    output_model=ListBoardsOutput,
)
def list_boards(ctx: CallContext, args: ListBoardsInput) -> ListBoardsOutput:
    ws = ctx.workspace_argument(args.workspaceId)
    ctx.member(ws)
    rows = [r for r in Row.query(f"WS#{ws}", Row.SK.startswith("BOARD#"), consistent_read=True) if isinstance(r, BoardEntryRow)]
    views = [
        BoardEntryView(id=r.boardId, name=r.name, kind=r.boardKind, createdAt=r.createdAt, archivedAt=r.archivedAt)
        for r in rows
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
    scope="write",
    keyed=True,
    input_model=CreateBoardInput,
    output_model=BoardWithColumnsOutput,
)
def create_board(ctx: CallContext, args: CreateBoardInput) -> BoardWithColumnsOutput:
    ws = ctx.workspace_argument(args.workspaceId)
    ctx.member(ws)
    name = args.name.strip()
    if not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    now = clock.now_iso()
    board_id = ids.new_board_id(ws)
    board = BoardRow(
        f"BOARD#{board_id}", "#META", boardId=board_id, workspaceId=ws, name=name, boardKind=args.kind, taskCount=0,
        activeColumns=len(DEFAULT_COLUMNS[args.kind]), createdAt=now, updatedAt=now,
    )
    entry = BoardEntryRow(f"WS#{ws}", f"BOARD#{board_id}", boardId=board_id, name=name, boardKind=args.kind, createdAt=now)
    names = DEFAULT_COLUMNS[args.kind]
    columns = []
    for col_name, pos in zip(names, generate_n_keys_between(None, None, len(names)), strict=True):
        cid = ids.new_column_id(board_id)
        columns.append(ColumnRow(f"BOARD#{board_id}", f"C#{cid}", columnId=cid, boardId=board_id, name=col_name, position=pos, taskCount=0, createdAt=now, updatedAt=now))
    marker = creation_marker(ctx, ws, board_id)
    act = activity(ctx, ws, board_id, "board.created", f"Created board {name!r} ({args.kind})", data={"name": name, "kind": args.kind}, at=now)

    def build(tx: Any) -> None:
        put_marker(tx, marker)
        member_guard(tx, ws, ctx.principal.user_id)
        tx.save(board, condition=Row.PK.does_not_exist())
        tx.save(entry)
        for c in columns:
            tx.save(c)
        tx.save(act)

    try:
        db.transact(build)
    except db.ConditionFailed as failure:
        earlier = earlier_entity(failure, marker, "board")
        if earlier:
            _, b, cols = load_header(ctx, earlier)
            return BoardWithColumnsOutput(board=board_view(b), columns=[column_view(c, i) for c, i in ordered_columns(cols)])
        raise errors.not_found("workspace", ws) from None
    return BoardWithColumnsOutput(board=board_view(board), columns=[column_view(c, i) for i, c in enumerate(columns)])


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
    scope="write",
    idempotent=True,
    input_model=RenameBoardInput,
    output_model=BoardOutput,
)
def rename_board(ctx: CallContext, args: RenameBoardInput) -> BoardOutput:
    ws, board = load_board(ctx, args.boardId)
    name = args.name.strip()
    if not has_visible(name):
        raise errors.invalid("name", "must contain visible characters")
    for _ in range(db.MAX_TRANSACTION_ATTEMPTS):
        if board.name == name:
            return BoardOutput(board=board_view(board))
        previous, old_name = board.updatedAt, board.name
        stamp = clock.next_stamp(previous)
        act = activity(ctx, ws, board.boardId, "board.renamed", f"Renamed board {old_name!r} to {name!r}", data={"from": old_name, "to": name}, at=stamp)

        def build(tx: Any, previous: str = previous, stamp: str = stamp, act: Any = act) -> None:
            tx.update(board, actions=[BoardRow.name.set(name), BoardRow.updatedAt.set(stamp)], condition=BoardRow.updatedAt == previous, return_values="ALL_OLD")
            tx.update(BoardEntryRow(f"WS#{ws}", f"BOARD#{board.boardId}"), actions=[BoardEntryRow.name.set(name)], condition=Row.PK.exists())
            member_guard(tx, ws, ctx.principal.user_id)
            tx.save(act)

        try:
            db.transact(build)
            board.name, board.updatedAt = name, stamp
            return BoardOutput(board=board_view(board))
        except db.ConditionFailed as failure:
            stored = failure.item(board.PK, board.SK)
            if stored:
                board = BoardRow.from_raw_data(stored)  # someone else wrote; go again on their state
                continue
            raise errors.not_found("board", args.boardId) from None
    raise errors.conflict("The board kept changing while renaming it.", "Retry the call.", retry_after_seconds=1)


# -- list_columns ----------------------------------------------------------------------------
class ListColumnsInput(ToolInput):
    boardId: BoardIdArg
    includeArchived: bool = Field(default=False, description="Also list archived columns.")


class ListColumnsOutput(ToolOutput):
    columns: list[ColumnView]


@tool(
    "list_columns",
    title="List columns",
    description="Lists a board's columns in their left-to-right order. Each column is a status on the kanban board.",
    scope="read",
    read_only=True,
    input_model=ListColumnsInput,
    output_model=ListColumnsOutput,
)
def list_columns(ctx: CallContext, args: ListColumnsInput) -> ListColumnsOutput:
    _, _, columns = load_header(ctx, args.boardId)
    return ListColumnsOutput(columns=[column_view(c, i) for c, i in ordered_columns(columns, args.includeArchived)])


# -- manage_columns --------------------------------------------------------------------------
class ManageColumnsInput(ToolInput):
    action: Literal["create", "rename", "move", "archive"] = Field(description="What to do: create, rename, move or archive.")
    boardId: str | None = Field(default=None, max_length=64, description="Board id; required for create.")
    columnId: str | None = Field(default=None, max_length=80, description="Column id; required for rename, move and archive.")
    name: str | None = Field(default=None, min_length=1, max_length=80, description="Column name; required for create and rename.")
    beforeColumnId: str | None = Field(default=None, max_length=80, description="move/create: place the column just before this one.")
    afterColumnId: str | None = Field(default=None, max_length=80, description="move/create: place the column just after this one.")
    wipLimit: int | None = Field(default=None, ge=1, le=1000, description="create/rename: optional work-in-progress limit shown with the column.")


class ManageColumnsOutput(ToolOutput):
    action: str
    column: ColumnView
    columns: list[ColumnView] = Field(description="The board's active columns after the change, in order.")


def _placement(columns: list[tuple[ColumnRow, int]], moving: str | None, before: str | None, after: str | None) -> tuple[str, dict[str, str]]:
    """The rank for a column placed as asked, plus any columns that must be re-ranked.

    Two columns created at the same instant can share a rank; placing a column between them
    then has no key in between, so the board's active columns are re-ranked evenly (a rare
    rebalance of a handful of items, written in the same transaction).
    """
    order = [c for c, _ in columns if c.columnId != moving]
    if before and after:
        raise errors.invalid("beforeColumnId", "give beforeColumnId or afterColumnId, not both")
    anchor_id = before or after
    if anchor_id is None:
        slot = len(order)
    else:
        idx = next((i for i, c in enumerate(order) if c.columnId == anchor_id), None)
        if idx is None:
            raise errors.invalid("beforeColumnId" if before else "afterColumnId", f"{anchor_id!r} is not an active column of this board")
        slot = idx if before else idx + 1
    lo = order[slot - 1].position if slot > 0 else None
    hi = order[slot].position if slot < len(order) else None
    if lo is None or hi is None or lo < hi:
        return generate_key_between(lo, hi), {}
    keys = generate_n_keys_between(None, None, len(order) + 1)
    rest = keys[:slot] + keys[slot + 1 :]
    return keys[slot], {c.columnId: k for c, k in zip(order, rest, strict=True) if c.position != k}


def _rerank(tx: Any, board_id: str, moved: dict[str, str]) -> None:
    for cid, pos in moved.items():
        tx.update(ColumnRow(f"BOARD#{board_id}", f"C#{cid}"), actions=[ColumnRow.position.set(pos)], condition=Row.PK.exists())


def _apply_rerank(columns: list[ColumnRow], moved: dict[str, str]) -> None:
    for c in columns:
        if c.columnId in moved:
            c.position = moved[c.columnId]


@tool(
    "manage_columns",
    title="Manage columns",
    description=(
        "Changes a board's columns. action 'create' needs boardId and name (appended unless before/afterColumnId is given); "
        "'rename' needs columnId and name; 'move' needs columnId and beforeColumnId or afterColumnId; 'archive' needs "
        "columnId — the column and the tasks in it leave the board view. A board keeps at least one active column."
    ),
    scope="write",
    destructive=True,
    input_model=ManageColumnsInput,
    output_model=ManageColumnsOutput,
)
def manage_columns(ctx: CallContext, args: ManageColumnsInput) -> ManageColumnsOutput:
    if args.action == "create":
        if not args.boardId:
            raise errors.invalid("boardId", "is required for action 'create'")
        if not has_visible(args.name):
            raise errors.invalid("name", "is required for action 'create'")
        board_id = args.boardId
    else:
        if not args.columnId:
            raise errors.invalid("columnId", f"is required for action {args.action!r}")
        parsed = ids.parse_column(args.columnId)
        if parsed is None:
            raise errors.not_found("column", args.columnId)
        board_id = parsed[1]
        if args.boardId and args.boardId != board_id:
            raise errors.invalid("boardId", "does not match the board of columnId")
    if args.action == "rename" and not has_visible(args.name):
        raise errors.invalid("name", "is required for action 'rename'")
    if args.action == "move" and not (args.beforeColumnId or args.afterColumnId):
        raise errors.invalid("beforeColumnId", "move needs beforeColumnId or afterColumnId")
    try:
        ws, board, columns = load_header(ctx, board_id)
    except errors.ToolError:
        raise errors.not_found("column" if args.columnId else "board", args.columnId or board_id) from None
    active = ordered_columns(columns)
    now = clock.now_iso()
    target: ColumnRow | None = None
    if args.columnId:
        target = next((c for c in columns if c.columnId == args.columnId), None)
        if target is None:
            raise errors.not_found("column", args.columnId)
        if target.archivedAt:
            raise errors.invalid("columnId", "this column is archived")

    if args.action == "create":
        if len(active) >= MAX_ACTIVE_COLUMNS:
            raise errors.invalid("boardId", f"a board holds at most {MAX_ACTIVE_COLUMNS} active columns", "Archive a column you no longer use first.")
        name = args.name.strip()  # type: ignore[union-attr]
        cid = ids.new_column_id(board_id)
        position, moved = _placement(active, None, args.beforeColumnId, args.afterColumnId)
        column = ColumnRow(
            f"BOARD#{board_id}", f"C#{cid}", columnId=cid, boardId=board_id, name=name,
            position=position, taskCount=0,
            wipLimit=args.wipLimit, createdAt=now, updatedAt=now,
        )
        act = activity(ctx, ws, board_id, "column.created", f"Added column {name!r}", data={"columnId": cid, "name": name}, at=now)

        def build(tx: Any) -> None:
            tx.save(column, condition=Row.PK.does_not_exist())
            tx.update(
                BoardRow(f"BOARD#{board_id}", "#META"), actions=[BoardRow.activeColumns.add(1)],
                condition=BoardRow.archivedAt.does_not_exist() & Row.PK.exists() & (BoardRow.activeColumns < MAX_ACTIVE_COLUMNS),
            )
            member_guard(tx, ws, ctx.principal.user_id)
            tx.save(act)
            _rerank(tx, board_id, moved)

        _commit(build, "board", board_id)
        _apply_rerank(columns, moved)
        columns.append(column)
        target = column
    else:
        assert target is not None
        stamp = clock.next_stamp(target.updatedAt)
        actions: list[Any] = [ColumnRow.updatedAt.set(stamp)]
        moved: dict[str, str] = {}
        if args.action == "rename":
            name = args.name.strip()  # type: ignore[union-attr]
            actions.append(ColumnRow.name.set(name))
            if args.wipLimit is not None:
                actions.append(ColumnRow.wipLimit.set(args.wipLimit))
                target.wipLimit = args.wipLimit
            summary, data, kind = f"Renamed column {target.name!r} to {name!r}", {"columnId": target.columnId, "from": target.name, "to": name}, "column.renamed"
            target.name = name
        elif args.action == "move":
            pos, moved = _placement(active, target.columnId, args.beforeColumnId, args.afterColumnId)
            actions.append(ColumnRow.position.set(pos))
            summary, data, kind = f"Moved column {target.name!r}", {"columnId": target.columnId}, "column.moved"
            target.position = pos
        else:
            if len(active) <= 1:
                raise errors.invalid("columnId", "a board needs at least one active column", "Create another column before archiving this one.")
            actions.append(ColumnRow.archivedAt.set(stamp))
            summary, data, kind = f"Archived column {target.name!r}", {"columnId": target.columnId, "tasks": int(target.taskCount or 0)}, "column.archived"
            target.archivedAt = stamp
        previous = target.updatedAt
        act = activity(ctx, ws, board_id, kind, summary, data=data, at=stamp)
        col = target

        archiving = args.action == "archive"

        def build(tx: Any) -> None:
            tx.update(col, actions=actions, condition=ColumnRow.updatedAt == previous)
            member_guard(tx, ws, ctx.principal.user_id)
            tx.save(act)
            _rerank(tx, board_id, moved)
            if archiving:
                # The board's count of active columns is the guard: concurrent archives of its
                # last columns cannot all pass, whatever each of them read.
                tx.update(BoardRow(f"BOARD#{board_id}", "#META"), actions=[BoardRow.activeColumns.add(-1)], condition=BoardRow.activeColumns > 1)

        try:
            db.transact(build)
        except db.ConditionFailed as failure:
            if archiving and failure.hit(f"BOARD#{board_id}", "#META"):
                raise errors.invalid("columnId", "a board needs at least one active column", "Create another column before archiving this one.") from None
            raise errors.conflict("The column changed while this call ran.", "Read the columns again and retry.", retry_after_seconds=1) from None
        target.updatedAt = stamp
        _apply_rerank(columns, moved)
    ordered = ordered_columns(columns)
    position = next((i for c, i in ordered if c.columnId == target.columnId), len(ordered))
    return ManageColumnsOutput(action=args.action, column=column_view(target, position), columns=[column_view(c, i) for c, i in ordered])


def _commit(build: Any, kind: str, ident: str) -> None:
    try:
        db.transact(build)
    except db.ConditionFailed:
        raise errors.not_found(kind, ident) from None


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
    scope="read",
    read_only=True,
    input_model=SnapshotInput,
    output_model=SnapshotOutput,
)
def get_board_snapshot(ctx: CallContext, args: SnapshotInput) -> SnapshotOutput:
    parsed = ids.parse_board(args.boardId)
    if parsed is None:
        raise errors.not_found("board", args.boardId)
    ws, _ = parsed
    ctx.member(ws, "board", args.boardId)
    board: BoardRow | None = None
    columns: list[ColumnRow] = []
    tasks: list[TaskRow] = []
    live: dict[str, tuple[ColumnRow, int]] | None = None
    truncated = False
    for row in Row.query(f"BOARD#{args.boardId}", Row.SK.between("#", "T#~"), consistent_read=True):
        if isinstance(row, BoardRow):
            board = row
        elif isinstance(row, ColumnRow):
            columns.append(row)
        elif isinstance(row, TaskRow):
            # Columns sort before tasks (C# < T#), so the live set is known here. Rows of archived
            # columns are skipped without counting: they must not use up the snapshot's room.
            if live is None:
                live = {c.columnId: (c, i) for c, i in ordered_columns(columns)}
            if row.columnId not in live:
                continue
            if len(tasks) >= SNAPSHOT_CAP:
                truncated = True
                break
            tasks.append(row)
    if board is None:
        raise errors.not_found("board", args.boardId)
    active = ordered_columns(columns)
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
        board=board_view(board), columns=snap_cols,
        tasks=[task_row_view(t, live[t.columnId][0].name) for t in tasks], totalCount=total, truncated=truncated, notice=notice,
    )
