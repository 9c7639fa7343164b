"""list_activity: a task's or a board's activity log, newest first."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from domain import clock, errors, ids
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store.models import ActivityRow, Row
from domain.tools.common import ActivityType, ActivityView, CursorArg, LimitArg, activity_view, decode_cursor, encode_cursor, take_page

MAX_PAGES = 5  # Query requests per call when filters drop rows (docs/data-model.md)


def _exists(args: "ListActivityInput") -> bool:
    if args.taskId:
        ref = ids.parse_task(args.taskId)
        assert ref is not None
        key = (f"BOARD#{ref.board_id}", f"X#{ref.number:010d}")
    else:
        key = (f"BOARD#{args.boardId}", "#META")
    return any(True for _ in Row.batch_get([key], consistent_read=True))


class ListActivityInput(ToolInput):
    taskId: str | None = Field(default=None, max_length=80, description="A task's log. Give taskId or boardId.")
    boardId: str | None = Field(default=None, max_length=64, description="A whole board's log.")
    since: str | None = Field(default=None, max_length=40, description="Only entries after this ISO-8601 timestamp (e.g. your last run).")
    source: Literal["ui", "mcp"] | None = Field(default=None, description="'ui' for what people did, 'mcp' for what agents did.")
    type: ActivityType | None = Field(default=None, description="Only entries of this type.")
    limit: LimitArg
    cursor: CursorArg


class ListActivityOutput(ToolOutput):
    activity: list[ActivityView]
    nextCursor: str | None
    notice: str | None


@tool(
    "list_activity",
    title="List activity",
    description=(
        "Returns the history of one task or of a whole board, most recent entry first. Narrow it with since (an ISO "
        "timestamp), source ('ui' for people, 'mcp' for agents) or an activity type — handy for catching up on what "
        "people changed after an agent's previous run."
    ),
    scope="read",
    read_only=True,
    input_model=ListActivityInput,
    output_model=ListActivityOutput,
)
def list_activity(ctx: CallContext, args: ListActivityInput) -> ListActivityOutput:
    if bool(args.taskId) == bool(args.boardId):
        raise errors.invalid("taskId", "give exactly one of taskId or boardId")
    since = None
    if args.since is not None:
        try:
            since = clock.iso(clock.parse_iso(args.since))
        except ValueError:
            raise errors.invalid("since", "must be an ISO-8601 timestamp with a zone, e.g. 2026-11-30T10:00:00Z") from None
    if args.taskId:
        ref = ids.parse_task(args.taskId)
        if ref is None:
            raise errors.not_found("task", args.taskId)
        ctx.member(ref.workspace_id, "task", args.taskId)
        kind = f"act:{args.taskId}"
        shape = {"GSI1PK": f"TACT#{args.taskId}", "GSI1SK": "", "PK": f"BACT#{ref.board_id}", "SK": ""}
    else:
        parsed = ids.parse_board(args.boardId or "")
        if parsed is None:
            raise errors.not_found("board", args.boardId or "")
        ctx.member(parsed[0], "board", args.boardId)
        kind = f"act:{args.boardId}"
        shape = {"PK": f"BACT#{args.boardId}", "SK": ""}
    start = decode_cursor(kind, args.cursor, shape)
    filt = None
    if args.source:
        filt = ActivityRow.source == args.source
    if args.type:
        filt = (ActivityRow.type == args.type) if filt is None else filt & (ActivityRow.type == args.type)
    # Sort keys are "<at>#<ulid>": "<since>#~" sorts after every entry stamped exactly at since,
    # so only entries strictly after it are listed.
    after = f"{since}#~" if since else None
    if args.taskId:
        cond = ActivityRow.GSI1SK > after if after else None
        result = ActivityRow.gsi1.query(f"TACT#{args.taskId}", cond, filter_condition=filt, scan_index_forward=False, limit=args.limit + 1, last_evaluated_key=start)
    else:
        cond = ActivityRow.SK > after if after else None
        result = ActivityRow.query(f"BACT#{args.boardId}", cond, filter_condition=filt, scan_index_forward=False, limit=args.limit + 1, last_evaluated_key=start, consistent_read=True)
    page, last = take_page(result, args.limit, index=bool(args.taskId), max_pages=MAX_PAGES)
    out = [a for a in page if isinstance(a, ActivityRow)]
    if not out and start is None and not _exists(args):
        # An empty first page is the only case where the subject might not exist (every board
        # and task has its creation entry), so only then does it cost one more GetItem.
        raise errors.not_found("task" if args.taskId else "board", args.taskId or args.boardId or "")
    cursor = encode_cursor(kind, last)
    if cursor and not out:
        notice = "No matching entries in this stretch of the log (filters skip the rest); pass nextCursor to keep looking."
    else:
        notice = "More entries are available; pass nextCursor." if cursor else None
    return ListActivityOutput(activity=[activity_view(a) for a in out], nextCursor=cursor, notice=notice)
