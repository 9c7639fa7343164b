"""list_activity: a task's or a board's activity log, newest first."""

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from domain import clock, errors
from domain.access import Located, either, locate
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import activity as activity_store
from domain.store.paging import decode_cursor, encode_cursor, list_kind, take_page
from domain.tools.args import ActivityType, CursorArg, LimitArg
from domain.tools.views import ActivityView, activity_view

MAX_PAGES = 5  # Query requests per call when filters drop rows (docs/data-model.md)


class ListActivityInput(ToolInput):
    taskId: str | None = Field(default=None, max_length=80, description="tk_…; or boardId.")
    boardId: str | None = Field(default=None, max_length=64, description="bd_…")
    since: str | None = Field(default=None, max_length=40, description="After this ISO-8601 time.")
    source: Literal["ui", "mcp"] | None = Field(default=None, description="'ui' people, 'mcp' agents.")
    # Published as a plain string (the list grows with every slice; ~150 tokens as an enum):
    # the server still checks it against ActivityType and INVALID_INPUT lists the values.
    type: Annotated[ActivityType | None, WithJsonSchema({"type": "string", "description": "e.g. task.moved"})] = None
    limit: LimitArg
    cursor: CursorArg


class ListActivityOutput(ToolOutput):
    activity: list[ActivityView]
    nextCursor: str | None
    notice: str | None


def _locate_log(ctx: CallContext, args: ListActivityInput) -> Located:
    if bool(args.taskId) == bool(args.boardId):
        raise errors.invalid("taskId", "give exactly one of taskId or boardId")
    if args.since is not None:
        try:
            clock.parse_iso(args.since)
        except ValueError:
            raise errors.invalid(
                "since", "must be an ISO-8601 timestamp with a zone, e.g. 2026-11-30T10:00:00Z"
            ) from None
    if args.taskId:
        return locate(ctx, "task", args.taskId)
    return locate(ctx, "board", args.boardId or "")


@tool(
    "list_activity",
    title="List activity",
    description=("History of a task or board, newest first."),
    area="tasks",
    scope="read",
    read_only=True,
    fields_of="activity",
    target=either(("taskId", "task"), ("boardId", "board"), resolve=_locate_log),
    min_role="MEMBER",
    input_model=ListActivityInput,
    output_model=ListActivityOutput,
)
def list_activity(ctx: CallContext, args: ListActivityInput) -> ListActivityOutput:
    where = ctx.target
    board_id = where.board()  # a task's or a board's: both carry it
    since = clock.iso(clock.parse_iso(args.since)) if args.since is not None else None
    # A cursor belongs to this subject and these filters; replayed with others it is INVALID_INPUT.
    kind = list_kind(
        "act",
        task=args.taskId,
        board=None if args.taskId else board_id,
        since=since,
        source=args.source,
        type=args.type,
    )
    start = decode_cursor(
        kind, args.cursor, activity_store.log_key_shape(board_id=board_id, task_id=args.taskId, type_=args.type)
    )
    result = activity_store.query_log(
        board_id=board_id,
        task_id=args.taskId,
        since=since,
        source=args.source,
        type_=args.type,
        limit=args.limit + 1,
        start=start,
    )
    by_type = bool(args.type) and not args.taskId  # the type's own index: every page full (docs/data-model.md)
    page, last = take_page(result, args.limit, index="GSI3" if by_type else bool(args.taskId), max_pages=MAX_PAGES)
    out = activity_store.entries_in(page)
    if (
        not out
        and start is None
        and not activity_store.subject_exists(board_id=board_id, task_number=where.task.number if where.task else None)
    ):
        # An empty first page is the only case where the subject might not exist (every board
        # and task has its creation entry), so only then does it cost one more GetItem.
        raise errors.not_found(where.kind, where.ident)
    cursor = encode_cursor(kind, last)
    notice: str | None
    if cursor and not out:
        notice = (
            "No matching entries in this stretch of the log (filters skip the rest); pass nextCursor to keep looking."
        )
    else:
        notice = "More entries are available; pass nextCursor." if cursor else None
    return ListActivityOutput(activity=[activity_view(a) for a in out], nextCursor=cursor, notice=notice)


TOOLS = (list_activity,)
