"""list_my_work: a member's open tasks across every board of a workspace (issue 14; beyond the catalog).

Reads the work index (GSI3, :mod:`domain.store.work`): one entry per (task, assignee), sorted by due
date then priority. Per page: one GSI3 Query, then one BatchGetItem of the entries' compact task
rows together with their columns, board entries and — with labelName — the boards' label-name
claims. "Open" means the compact row exists (not archived), its column is neither done nor
archived and its board is not archived. Requests grow with the member's entries read, never with
the workspace (docs/data-model.md, "list_my_work").
"""

from typing import Annotated, Any

from pydantic import Field

from domain import clock
from domain.access import target
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.store import work as work_store
from domain.store.paging import decode_cursor, encode_cursor, list_kind
from domain.store.reads import CompactTask
from domain.tools.args import (
    CursorArg,
    DueAfterFilter,
    DueBeforeFilter,
    IdShape,
    LabelNameFilter,
    OverdueFilter,
    Priority,
    UpdatedSinceFilter,
    WorkspaceIdArg,
)
from domain.tools.views import TaskRowView, task_row_view

MAX_PAGES = 4  # index pages one call reads before it answers with a cursor (filtered-out entries)


class ListMyWorkInput(ToolInput):
    workspaceId: WorkspaceIdArg
    assigneeId: Annotated[str, IdShape("user", also=("me",))] = Field(
        default="me", max_length=64, description='"me" or a userId.'
    )
    labelName: LabelNameFilter = None
    priority: Priority | None = None
    dueBefore: DueBeforeFilter = None
    dueAfter: DueAfterFilter = None
    overdue: OverdueFilter = None
    updatedSince: UpdatedSinceFilter = None
    limit: int = Field(default=50, ge=1, le=100)
    cursor: CursorArg


class WorkRowView(TaskRowView):
    boardName: str = Field(description="The task's board.")


class ListMyWorkOutput(ToolOutput):
    assigneeId: str
    tasks: list[WorkRowView] = Field(description="Open tasks, soonest due first (no due date last), then by priority.")
    totalCount: int | None = Field(
        description="How many open tasks match, when one call read the whole list; else null (see notice)."
    )
    nextCursor: str | None
    notice: str | None


def _late(due: str | None, now: str) -> bool:
    if not due:
        return False
    return due < now[:10] if len(due) == 10 else due < now


@tool(
    "list_my_work",
    title="List my work",
    description=(
        "Open tasks of you (or a member) across a workspace, soonest due then priority; open: not archived, not in a "
        "done or archived column or board. One board: list_tasks."
    ),
    area="tasks",
    scope="read",
    read_only=True,
    fields_of="tasks",
    concise=True,
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    input_model=ListMyWorkInput,
    output_model=ListMyWorkOutput,
)
def list_my_work(ctx: CallContext, args: ListMyWorkInput) -> ListMyWorkOutput:
    ws = ctx.target.workspace_id
    user = ctx.user_id if args.assigneeId == "me" else args.assigneeId
    now = clock.now_iso()
    low = args.dueAfter
    high = args.dueBefore
    if args.overdue:
        high = min(high, now) if high else now
    if low is not None and high is None:
        high = work_store.NO_DUE  # "due on or after" leaves out tasks without a due date
    filters = {
        "ws": ws,
        "user": user,
        "label": work_store.label_filter(args.labelName) if args.labelName else None,
        "priority": args.priority,
        "dueBefore": args.dueBefore,
        "dueAfter": args.dueAfter,
        "overdue": args.overdue,
        "updatedSince": args.updatedSince,
    }
    kind = list_kind("my_work", **filters)
    start = decode_cursor(kind, args.cursor, work_store.page_shape(ws, user))
    out: list[WorkRowView] = []
    seen = work_store.OpenWork(ws, args.labelName)
    last: dict[str, Any] | None = None
    pages = 0
    while len(out) < args.limit and pages < MAX_PAGES:
        result = work_store.page(ws, user, low=low, high=high, limit=args.limit, start=start)
        entries = work_store.entries(result)
        pages += 1
        start = result.last_evaluated_key
        rows = seen.read(entries)
        for entry in entries:
            last = work_store.entry_cursor(entry)
            row = rows.get(entry.taskId)
            board = seen.boards.get(entry.boardId)
            column = seen.columns.get((entry.boardId, entry.columnId))
            if row is None or board is None or board.archivedAt or column is None or column.archivedAt or column.done:
                continue
            if not _matches(row, args, seen.labels.get(entry.boardId), now):
                continue
            out.append(WorkRowView(**task_row_view(row, column.name).model_dump(), boardName=board.name))
            if len(out) == args.limit:
                break
        if len(out) == args.limit:
            more = (entries and last != work_store.entry_cursor(entries[-1])) or start is not None
            next_cursor = encode_cursor(kind, last) if more else None
            return _answer(user, out, next_cursor, whole=args.cursor is None and next_cursor is None)
        if start is None:
            return _answer(user, out, None, whole=args.cursor is None)
    return _answer(user, out, encode_cursor(kind, start), whole=False)


def _answer(user: str, out: list[WorkRowView], cursor: str | None, *, whole: bool) -> ListMyWorkOutput:
    """The page, with totalCount only when this call read the list from its start to its end."""
    return ListMyWorkOutput(
        assigneeId=user,
        tasks=out,
        totalCount=len(out) if whole else None,
        nextCursor=cursor,
        notice=_notice(cursor, len(out)),
    )


def _notice(cursor: str | None, shown: int) -> str | None:
    """Why a page has a cursor and no totalCount: whether an entry is open (its column not done,
    its board not archived) is known only from the rows read with it, so the total of a list
    is known only once it has been read to its end; counting the index alone would count done
    and archived work (docs/data-model.md, "Work index")."""
    if cursor is None:
        return None
    return (
        f"Showing {shown} open task{'s' if shown != 1 else ''}; pass nextCursor for more. totalCount is null until the list fits "
        "one page: open-ness (done columns, archived boards) is decided per row as it is read."
    )


def _matches(row: CompactTask, args: ListMyWorkInput, label_id: str | None, now: str) -> bool:
    if args.priority is not None and row.priority != args.priority:
        return False
    if args.labelName and (label_id is None or label_id not in (row.labelIds or [])):
        return False
    if args.overdue is not None and _late(row.dueDate, now) != args.overdue:
        return False
    return not (args.updatedSince is not None and row.updatedAt < args.updatedSince)


TOOLS = (list_my_work,)
