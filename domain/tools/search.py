"""search_tasks: workspace-wide task search (exact key, web-search full text, substring).

The index is the search component (domain/search, docs/search.md); this tool parses the query,
asks the index, drops stale or archived hits on the fetched rows, applies the structured
filters, ranks (exact key first, then the BM25-style score, then most recently updated) and
pages by offset under a cursor bound to the query, filters and workspace.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from domain import errors, ids
from domain.access import Prefetch, target
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.search import query as q
from domain.search import text as search_text
from domain.search.writes import INDEX, doc_of
from domain.store import boards as board_store
from domain.store import keys
from domain.store.models import ColumnRow, LabelNameRow, Row, SearchPendingRow, TaskDetailRow, TaskNumberRow, WorkspaceRow
from domain.store.paging import InvalidCursor, decode_cursor, encode_cursor, list_kind
from domain.store.search_marks import text_version
from domain.tools.args import CursorArg, Priority, WorkspaceIdArg

_KEY = re.compile(r"([A-Za-z][A-Za-z0-9]*)-([1-9][0-9]{0,9})")
MIN_SUBSTRING = 3

QueryArg = Annotated[str, Field(max_length=q.MAX_QUERY_CHARS, description=(
'A task key, or words (all must match, stemmed), "phrases", -word, `or`; 3+ characters also match as a substring.'))]
SearchLimitArg = Annotated[int, Field(default=20, ge=1, le=50, description="Page size (1-50).")]
DateArg = Annotated[str | None, Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD.")]


class SearchTasksInput(ToolInput):
    workspaceId: WorkspaceIdArg
    query: QueryArg
    boardId: str | None = Field(default=None, max_length=120, description="Only tasks of this board.")
    columnId: str | None = Field(default=None, max_length=120, description="Only tasks in this column.")
    assigneeId: str | None = Field(default=None, max_length=120, description="Only tasks assigned to this user.")
    label: str | None = Field(default=None, max_length=120, description="Label name (any case).")
    priority: Priority | None = Field(default=None, description="Only tasks of this priority.")
    dueBefore: DateArg = None
    dueAfter: DateArg = None
    limit: SearchLimitArg = 20
    cursor: CursorArg = None


class SearchRow(ToolOutput):
    id: str
    key: str
    title: str
    boardId: str
    boardName: str
    columnId: str
    columnName: str | None
    priority: str
    dueDate: str | None
    updatedAt: str
    score: float = Field(description="Relevance (higher is better); an exact key hit ranks above every score.")
    matchedFields: list[str] = Field(description="Which of key / title / description / comment matched.")


class SearchTasksOutput(ToolOutput):
    results: list[SearchRow]
    totalCount: int = Field(description="Matches after filters (a lower bound when truncated).")
    truncated: bool = Field(description="True when a word matched more tasks than the candidate cap (1,000).")
    nextCursor: str | None
    hint: str | None = Field(description="Why nothing matched, and what to try (set on empty results).")


def _key_of(query_text: str) -> tuple[str, int] | None:
    m = _KEY.fullmatch(query_text.strip())
    return (m.group(1).upper(), int(m.group(2))) if m else None


def _prefetch(where, args) -> Prefetch:
    items = [keys.workspace_head(where.workspace_id)]
    key = _key_of(args.query)
    if key:
        items.append(keys.task_number(where.workspace_id, key[1]))
    return Prefetch(items=tuple(items), queries=(
        ("entries", lambda: board_store.entries(where.workspace_id)),
        ("pending", lambda: list(SearchPendingRow.query(keys.search_pending_partition(where.workspace_id), consistent_read=True))),
    ))


@tool(
    "search_tasks",
    title="Search tasks",
    description="Finds tasks across a workspace's boards by text: exact key first, then full-text (words, \"phrases\", -word, or) over title, description and comments, plus substrings. Filters by board, column, assignee, label, priority, due.",
    area="search",
    scope="read",
    read_only=True,
    fields_of="results",
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    prefetch=_prefetch,
    input_model=SearchTasksInput,
    output_model=SearchTasksOutput,
)
def search_tasks(ctx: CallContext, args: SearchTasksInput) -> SearchTasksOutput:
    ws = ctx.target.workspace_id
    text = args.query.strip()
    if not text:
        raise errors.invalid("query", "is empty", "Give at least one word, a phrase or a task key (ABC-42).")
    tree = q.parse(text)
    key = _key_of(text)
    substring = text if len(search_text.fold(text)) >= MIN_SUBSTRING else None
    if key is None and not q.positives(tree):
        raise errors.invalid("query", "holds no word to search for (only excluded words, stopwords or punctuation)",
                             "Add at least one word to look for; -word only narrows a search.")
    filters = {"ws": ws, "query": text, "boardId": args.boardId, "columnId": args.columnId, "assigneeId": args.assigneeId,
               "label": args.label.casefold() if args.label else None, "priority": args.priority,
               "dueBefore": args.dueBefore, "dueAfter": args.dueAfter}
    kind = list_kind("search_tasks", **filters)
    try:
        start = decode_cursor(kind, args.cursor)
        offset = int(start.get("o", 0)) if start else 0
    except (InvalidCursor, TypeError, ValueError):
        raise errors.invalid("cursor", "was issued for another query, filter or workspace",
                             "Send the cursor with the same query and filters, or omit it for the first page.") from None

    # the key: the workspace's own prefix and the number pointer, read with the membership
    key_task: str | None = None
    wsrow = ctx.item(keys.workspace_head(ws))
    if key and isinstance(wsrow, WorkspaceRow) and (wsrow.taskPrefix or "").upper() == key[0]:
        pointer = ctx.item(keys.task_number(ws, key[1]))
        if isinstance(pointer, TaskNumberRow):
            key_task = pointer.taskId

    pending = [m for m in ctx.query("pending") if isinstance(m, SearchPendingRow)]
    live = [doc_of(m) for m in pending if not m.gone]
    gone = [m.doc for m in pending if m.gone]
    answer = INDEX.query(ws, tree if q.positives(tree) else None, substring=substring, pending=live, gone=gone)
    hits = {h.task_id: h for h in answer.hits}
    wanted = set(hits) | ({key_task} if key_task else set())

    # rows: the full items of every candidate (versions, archive, filters)
    task_keys = []
    for tid in wanted:
        ref = ids.parse_task(tid)
        if ref and ref.workspace_id == ws:
            task_keys.append(keys.task_full(ref.board_id, ref.number))
    rows = {r.taskId: r for r in _batch_get(task_keys) if isinstance(r, TaskDetailRow)}
    entries = {e.boardId: e for e in ctx.query("entries")}

    label_ids: dict[str, str | None] = {}
    if args.label:
        boards = {r.boardId for r in rows.values()}
        claims = _batch_get([keys.label_name_claim(b, args.label) for b in boards])
        label_ids = {c.PK: c.labelId for c in claims if isinstance(c, LabelNameRow)}

    ranked = []
    for tid, row in rows.items():
        entry = entries.get(row.boardId)
        if row.archivedAt or entry is None or entry.archivedAt:
            continue
        if not _passes(row, args, label_ids):
            continue
        hit = hits.get(tid)
        fields: list[str] = []
        score = 0.0
        if hit is not None:
            version = text_version(row.title or "", row.description or "")
            task_doc = keys.search_doc_task(tid)
            for doc in list(hit.docs):
                v = hit.docs[doc][2]
                if doc == task_doc and v and v != version:
                    del hit.docs[doc]  # a stale posting: the stored text moved on
            contains = hit.substring and search_text.fold(text) in search_text.fold(f"{row.title}\n{row.description}")
            if not hit.docs or (hit.score == 0 and not hit.fields and not contains):
                hit = None
            else:
                fields = hit.field_names()
                score = hit.score
                if contains and not fields:
                    fields = [f for f in ("title", "description") if search_text.fold(text) in search_text.fold(getattr(row, f) or "")]
                    score = 0.1
        is_key = tid == key_task
        if hit is None and not is_key:
            continue
        if is_key:
            fields = ["key", *fields]
        ranked.append((is_key, score, row.updatedAt, row, fields))
    ranked.sort(key=lambda r: (not r[0], -r[1], _desc(r[2])))
    total = len(ranked)
    page = ranked[offset : offset + args.limit]
    columns = {(r.boardId, r.columnId) for _, _, _, r, _ in page}
    col_rows = {(c.PK, c.SK): c for c in _batch_get([keys.column(b, c) for b, c in columns]) if isinstance(c, ColumnRow)}
    results = []
    for is_key, score, _, row, fields in page:
        col = col_rows.get(keys.column(row.boardId, row.columnId))
        results.append(SearchRow(
            id=row.taskId, key=row.key, title=row.title, boardId=row.boardId, boardName=entries[row.boardId].name,
            columnId=row.columnId, columnName=col.name if col is not None else None,
            priority=row.priority or "NONE", dueDate=row.dueDate, updatedAt=row.updatedAt,
            score=round(1000.0 + score if is_key else score, 4), matchedFields=fields,
        ))
    cursor = encode_cursor(kind, {"o": offset + args.limit}) if offset + args.limit < total else None
    hint = None
    if total == 0:
        if answer.unmatched:
            hint = "No task contains " + ", ".join(f"'{w}'" for w in answer.unmatched) + "; check the spelling or drop that word."
        elif hits:
            hint = "Tasks matched the words but not the filters; loosen the filters."
        else:
            hint = "No task has all these words together; try fewer words, or join alternatives with 'or'."
    return SearchTasksOutput(results=results, totalCount=total, truncated=answer.truncated, nextCursor=cursor, hint=hint)


def _desc(stamp: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in stamp or "")


def _passes(row: TaskDetailRow, args: SearchTasksInput, label_ids: dict[str, str | None]) -> bool:
    if args.boardId and row.boardId != args.boardId:
        return False
    if args.columnId and row.columnId != args.columnId:
        return False
    if args.assigneeId and args.assigneeId not in (row.assigneeIds or []):
        return False
    if args.priority and (row.priority or "NONE") != args.priority:
        return False
    if args.dueBefore and not (row.dueDate and row.dueDate[:10] < args.dueBefore):
        return False
    if args.dueAfter and not (row.dueDate and row.dueDate[:10] > args.dueAfter):
        return False
    if args.label:
        wanted = label_ids.get(keys.label_name_claim(row.boardId, args.label)[0])
        if not wanted or wanted not in (row.labelIds or []):
            return False
    return True


def _batch_get(item_keys: list[tuple[str, str]]) -> list[Row]:
    unique = list(dict.fromkeys(item_keys))
    return list(Row.batch_get(unique)) if unique else []


TOOLS = (search_tasks,)
