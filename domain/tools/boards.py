"""Board tools: list_boards, create_board, rename_board, get_board_snapshot, archive_board,
unarchive_boards.

Items, keys and request costs: docs/data-model.md (board head, board entry, columns, "Archived
boards"). A board is archived when its entry says so; its tasks then stay readable by id and
take no writes.
"""

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from domain import clock, errors, ids
from domain.access import Prefetch, Ref, target
from domain.context import CallContext
from domain.projection import FIELDS_DESCRIPTION
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import boards as board_store
from domain.store import columns as column_store
from domain.store import labels as label_store
from domain.store.db import Missing
from domain.store.paging import decode_cursor, encode_cursor, list_kind
from domain.store.reads import BoardEntry
from domain.store.retry import ATTEMPTS, Contended, backoff
from domain.text import has_visible
from domain.tools.args import BoardIdArg, CursorArg, IdempotencyKeyArg, SingleLine, WorkspaceIdArg
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
NameArg = Annotated[str, Field(min_length=1, max_length=120), SingleLine]


# -- list_boards -----------------------------------------------------------------------------
class ListBoardsInput(ToolInput):
    workspaceId: WorkspaceIdArg
    includeArchived: bool = Field(default=False)


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
    description="Lists a workspace's boards (active ones unless includeArchived).",
    area="boards",
    scope="read",
    read_only=True,
    fields_of="boards",
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
    kind: BoardKind = Field(default="TASKS", description="Sets the default columns.")
    idempotencyKey: IdempotencyKeyArg


class BoardWithColumnsOutput(ToolOutput):
    board: BoardView
    columns: list[ColumnView]


def _replay_board(ctx: CallContext, board_id: str) -> BoardWithColumnsOutput:
    """The board an earlier call with the same idempotencyKey created (its marker named it),
    with its active columns in order."""
    board, found = board_store.header(board_id)
    if board is None:
        raise errors.not_found("workspace", ctx.target.workspace_id)
    return _with_columns(board, [c for c, _ in column_store.ordered(found)])


@tool(
    "create_board",
    title="Create board",
    description=("Creates a board with its kind's default columns (TASKS: Backlog, To Do, In Progress, Done)."),
    area="boards",
    scope="write",
    keyed=True,
    replay=_replay_board,
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
    act = ctx.activity(
        ws, board_id, "board.created", f"Created board {name!r} ({args.kind})", data={"name": name, "kind": args.kind}
    )
    try:
        board, columns, _ = board_store.create(
            ws,
            name,
            args.kind,
            DEFAULT_COLUMNS[args.kind],
            actor_id=ctx.user_id,
            activity=act,
            marker=ctx.marker,
        )
    except Missing:
        raise errors.not_found("workspace", ws) from None
    return _with_columns(board, columns)


def _with_columns(board: Any, columns: list[Any]) -> BoardWithColumnsOutput:
    return BoardWithColumnsOutput(
        board=board_view(board, columns), columns=[column_view(c, i) for i, c in enumerate(columns)]
    )


# -- rename_board ----------------------------------------------------------------------------
class RenameBoardInput(ToolInput):
    boardId: BoardIdArg
    name: NameArg


class BoardOutput(ToolOutput):
    board: BoardView


@tool(
    "rename_board",
    title="Rename board",
    description="Renames a board; the same name changes nothing.",
    area="boards",
    scope="write",
    idempotent=True,
    target=target("boardId", "board"),
    min_role="MEMBER",
    reads=("board_entry",),
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
        return ctx.activity(
            ws,
            board.boardId,
            "board.renamed",
            f"Renamed board {old!r} to {name!r}",
            data={"from": old, "to": name},
            at=stamp,
        )

    renamed = board_store.rename(board, name, actor_id=ctx.user_id, activity_for=activity_for)
    return BoardOutput(board=board_view(renamed, columns, _archived_at(ctx)))


# -- get_board_snapshot ----------------------------------------------------------------------
# The default answer is one page that fits a model's context (issue 24, item 13): as many concise
# rows, in board order, as fit SNAPSHOT_PAGE_CHARS of compact JSON (the whole answer: board,
# columns, labels and rows), and a cursor for the rest. A 500-task board of real rows answered
# 237 KB (~59k tokens) in one call before; docs/decisions.md, "A board snapshot that fits".
SNAPSHOT_PAGE_CHARS = (
    14_000  # about 6,000 o200k tokens: ids and titles tokenize at ~2.3 characters a token (tests/test_token_budget.py)
)
SNAPSHOT_ROW_FIELDS = ("id", "key", "title", "columnId", "priority", "dueDate", "assigneeIds", "labelIds")


class SnapshotInput(ToolInput):
    boardId: BoardIdArg
    limit: int | None = Field(default=None, ge=1, le=SNAPSHOT_CAP)  # default: the rows that fit SNAPSHOT_PAGE_CHARS
    cursor: CursorArg
    # the argument fields_of adds to every projecting tool, spelled out because this handler reads it
    fields: list[str] | None = Field(default=None, description=FIELDS_DESCRIPTION)


class SnapshotColumn(ToolOutput):
    id: str
    name: str
    position: int = Field(description="0-based order of the column on its board.")
    taskCount: int
    wipLimit: int | None
    done: bool = Field(description="A done column: its tasks count as finished (list_my_work leaves them out).")
    taskIds: list[str] = Field(description="Ids of the column's tasks in board order (those on this page).")


class LabelBrief(ToolOutput):
    id: str
    name: str
    color: str = Field(description="#rrggbb, lowercase.")


class SnapshotTaskRow(ToolOutput):
    id: str
    key: str
    title: str
    columnId: str
    priority: str
    dueDate: str | None
    assigneeIds: list[str]
    labelIds: list[str]


class SnapshotOutput(ToolOutput):
    board: BoardView
    columns: list[SnapshotColumn] = Field(
        description="Active columns in order (list_columns has every field); taskCount counts all their tasks."
    )
    labels: list[LabelBrief] = Field(description="The board's labels by name; tasks name theirs in labelIds.")
    tasks: list[SnapshotTaskRow | TaskRowView] = Field(
        description="Concise rows; fields adds any other task-row field."
    )
    totalCount: int = Field(description="Tasks on the board's active columns.")
    truncated: bool = Field(description="True when this page does not hold every task (see nextCursor and notice).")
    nextCursor: str | None
    notice: str | None


@tool(
    "get_board_snapshot",
    title="Board snapshot",
    description=(
        "Orient here: board, columns with task counts, labels and a page of concise task rows in board order; "
        "nextCursor pages on."
    ),
    area="boards",
    scope="read",
    read_only=True,
    fields_of="tasks",
    concise=True,
    target=target("boardId", "board"),
    min_role="MEMBER",
    reads=("board_entry",),
    prefetch=lambda where, args: Prefetch(
        queries=(("snapshot", lambda: board_store.snapshot(where.board_id, SNAPSHOT_CAP)),)
    ),
    input_model=SnapshotInput,
    output_model=SnapshotOutput,
)
def get_board_snapshot(ctx: CallContext, args: SnapshotInput) -> SnapshotOutput:
    """One page of the board in board order (column position, then rank).

    Every page reads the same Query (the head, the columns, the labels and up to 500 compact
    rows) and answers the complete column counts; the cursor holds the offset into the board
    order and belongs to this board. Columns and labels are brief (list_columns has every
    column field); rows carry :data:`SNAPSHOT_ROW_FIELDS` (empty ones dropped), or, with
    ``fields``, the named task-row fields and the id. Without ``limit`` the page holds as many rows
    as fit :data:`SNAPSHOT_PAGE_CHARS` of compact JSON (at least one).

    Raises (as envelopes): NOT_FOUND for an invisible board; INVALID_INPUT on ``cursor`` for a
    cursor of another board or list, on ``limit`` outside 1-500, on ``fields`` for unknown names.
    """
    board, columns, tasks, capped, labels = ctx.query("snapshot")
    if board is None:
        raise errors.not_found("board", args.boardId)
    start = decode_cursor(list_kind("snapshot", board=args.boardId), args.cursor)
    offset = start.get("offset") if start else 0
    if not isinstance(offset, int) or offset < 0:
        raise errors.invalid(
            "cursor", "is not a cursor this board's snapshot returned", "Omit cursor to start from the first page."
        )
    active = column_store.ordered(columns)
    live = {c.columnId: (c, i) for c, i in active}
    tasks.sort(key=lambda t: (live[t.columnId][1], t.rank, int(t.number)))
    total = sum(int(c.taskCount or 0) for c, _ in active)
    board_out = board_view(board, columns, _archived_at(ctx))
    label_out = [LabelBrief(id=lb.labelId, name=lb.name, color=lb.color) for lb in label_store.ordered(labels)]
    rich = args.fields is not None
    rows: list[Any] = []
    if args.limit is None:
        shown = _row_shape(args)
        header = (
            _chars(board_out.model_dump(mode="json"))
            + sum(_chars(lb.model_dump(mode="json")) for lb in label_out)
            + 120 * len(active)
            + 400
        )
        used = header
        for t in tasks[offset:]:
            row = _snapshot_row(t, live[t.columnId][0].name, rich)
            used += _chars(shown(row.model_dump(mode="json"))) + len(t.taskId) + 4  # the row, and its id in taskIds
            if rows and used > SNAPSHOT_PAGE_CHARS:
                break
            rows.append(row)
    else:
        rows = [_snapshot_row(t, live[t.columnId][0].name, rich) for t in tasks[offset : offset + args.limit]]
    end = offset + len(rows)
    page_ids = {r.id for r in rows}
    snap_cols: list[Any] = []
    for c, i in active:
        ids_here = [t.taskId for t in tasks if t.columnId == c.columnId and t.taskId in page_ids]
        snap_cols.append(
            SnapshotColumn(
                id=c.columnId,
                name=c.name,
                position=i,
                taskCount=int(c.taskCount or 0),
                wipLimit=int(c.wipLimit) if c.wipLimit is not None else None,
                done=bool(c.done),
                taskIds=ids_here,
            )
        )
    next_cursor = (
        encode_cursor(list_kind("snapshot", board=args.boardId), {"offset": end}) if end < len(tasks) else None
    )
    notices = []
    if next_cursor:
        notices.append(
            f"Showing tasks {offset + 1}-{end} of {len(tasks)} in board order; pass nextCursor for the next page."
        )
    if capped and not next_cursor:
        notices.append(
            f"The snapshot holds the board's first {SNAPSHOT_CAP} of {total} tasks; page through the rest with "
            "list_tasks(boardId or columnId, cursor)."
        )
    elif capped:
        notices.append(
            f"The snapshot holds {SNAPSHOT_CAP} of the board's {total} tasks; list_tasks pages through all of them."
        )
    if board_store.is_archived(ctx.read.board_entry):
        notices.insert(
            0,
            "This board is archived: its tasks can be read but not changed until a workspace admin restores it (unarchive_boards).",
        )
    return SnapshotOutput(
        board=board_out,
        columns=snap_cols,
        labels=label_out,
        tasks=rows,
        totalCount=total,
        truncated=len(rows) < total,
        nextCursor=next_cursor,
        notice=" ".join(notices) or None,
    )


def _snapshot_row(t: Any, column_name: str, rich: bool) -> TaskRowView | SnapshotTaskRow:
    if rich:
        return task_row_view(t, column_name)
    full = task_row_view(t, column_name)
    return SnapshotTaskRow(**{k: getattr(full, k) for k in SNAPSHOT_ROW_FIELDS})


def _row_shape(args: SnapshotInput) -> Any:
    """A row as the answer will show it (``fields`` kept, empty values dropped): what the page budget counts."""
    keep = set(args.fields) | {"id"} if args.fields is not None else None
    named = keep or set()

    def shown(row: dict[str, Any]) -> dict[str, Any]:
        return {
            k: v
            for k, v in row.items()
            if (keep is None or k in keep) and not (k not in named and k != "id" and v in (None, [], ""))
        }

    return shown


def _chars(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _archived_at(ctx: CallContext) -> str | None:
    """When the target board was archived (its entry, read with the membership), else ``None``."""
    entry = ctx.read.board_entry
    return entry.archivedAt if entry is not None else None


# -- archive_board ---------------------------------------------------------------------------
class ArchiveBoardInput(ToolInput):
    boardId: BoardIdArg


class ArchiveBoardOutput(ToolOutput):
    board: BoardView
    notice: str | None = Field(description="Set when the board was archived already (nothing was written).")


@tool(
    "archive_board",
    title="Archive board",
    description=(
        "Archives a board (ADMIN): hidden from list_boards, tasks read-only until unarchive_boards; nothing is deleted."
    ),
    area="boards",
    scope="admin",
    destructive=True,
    target=target("boardId", "board"),
    min_role="ADMIN",
    reads=("board_entry",),
    prefetch=lambda where, args: Prefetch(queries=(("header", lambda: board_store.header(where.board_id)),)),
    input_model=ArchiveBoardInput,
    output_model=ArchiveBoardOutput,
)
def archive_board(ctx: CallContext, args: ArchiveBoardInput) -> ArchiveBoardOutput:
    board, columns = ctx.query("header")
    entry = ctx.read.board_entry
    if board is None or entry is None:
        raise errors.not_found("board", args.boardId)
    ws = ctx.target.workspace_id
    act = ctx.activity(
        ws,
        board.boardId,
        "board.archived",
        f"Archived board {board.name!r}",
        data={"name": board.name},
        at=clock.now_iso(),
    )
    try:
        stored, changed = board_store.archive(entry, actor_id=ctx.user_id, activity=act)
    except Missing:
        raise errors.not_found("board", args.boardId) from None
    notice = None if changed else f"The board was archived already (at {stored.archivedAt}); nothing changed."
    return ArchiveBoardOutput(board=board_view(board, columns, stored.archivedAt), notice=notice)


# -- unarchive_boards ------------------------------------------------------------------------
MAX_UNARCHIVE = 50


class UnarchiveBoardsInput(ToolInput):
    workspaceId: WorkspaceIdArg
    boardIds: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        min_length=1,
        max_length=MAX_UNARCHIVE,
        description="bd_… ids.",
    )


class UnarchivedBoard(ToolOutput):
    id: str
    name: str
    restored: bool = Field(
        description="True when this call restored the board; false when it was active already (a no-op)."
    )


class UnarchiveBoardsOutput(ToolOutput):
    boards: list[UnarchivedBoard] = Field(description="One entry per boardId, in the order given.")
    restoredCount: int


@tool(
    "unarchive_boards",
    title="Unarchive boards",
    description=("Restores 1-50 archived boards (ADMIN), all or nothing; active ones stay as they are."),
    area="boards",
    scope="admin",
    idempotent=True,
    target=target("workspaceId", "workspace"),
    min_role="ADMIN",
    refs=(Ref("boardIds", "board", within="workspace", many=True),),
    reads=("board_entries",),
    input_model=UnarchiveBoardsInput,
    output_model=UnarchiveBoardsOutput,
)
def unarchive_boards(ctx: CallContext, args: UnarchiveBoardsInput) -> UnarchiveBoardsOutput:
    repeated = sorted({b for b in args.boardIds if args.boardIds.count(b) > 1})
    if repeated:
        raise errors.invalid("boardIds", f"lists {', '.join(repeated)} more than once", "Name each board once.")
    ws = ctx.target.workspace_id
    found = {e.boardId: e for e in ctx.read.board_entries}
    entries: dict[str, BoardEntry | None] = {b: found.get(b) for b in args.boardIds}
    attempts = ATTEMPTS["unarchive_boards"]
    for attempt in range(attempts):
        listed = {b: e for b, e in entries.items() if e is not None}
        missing = [b for b in entries if b not in listed]
        if missing:
            raise errors.not_found("board", missing[0])
        todo = [e for e in listed.values() if e.archivedAt]
        act = None
        if todo:
            names = ", ".join(repr(e.name) for e in todo[:5]) + (f" and {len(todo) - 5} more" if len(todo) > 5 else "")
            # One activity row for the call, in the first restored board's log (the transaction
            # has room for 50 entries, the membership guard and one row; docs/data-model.md).
            act = ctx.activity(
                ws,
                todo[0].boardId,
                "board.unarchived",
                f"Restored {len(todo)} board{'s' if len(todo) != 1 else ''}: {names}",
                data={"boardIds": [e.boardId for e in todo]},
            )
        try:
            if todo:
                board_store.unarchive(todo, workspace_id=ws, actor_id=ctx.user_id, activity=act)
        except board_store.StillRestoring:
            again = board_store.get_entries(list(args.boardIds))
            entries = {b: again.get(b) for b in args.boardIds}
            if attempt + 1 < attempts:
                backoff(attempt)
            continue
        except Missing:
            raise errors.not_found("workspace", ws) from None
        restored = {e.boardId for e in todo}
        views = [UnarchivedBoard(id=b, name=e.name, restored=b in restored) for b, e in listed.items()]
        return UnarchiveBoardsOutput(boards=views, restoredCount=len(restored))
    raise Contended("unarchive_boards", attempts)


TOOLS = (list_boards, create_board, rename_board, get_board_snapshot, archive_board, unarchive_boards)
