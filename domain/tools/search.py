"""search_tasks: workspace-wide task search (exact key, web-search full text, substring).

The index is the search component (domain/search, docs/search.md); this tool parses the query,
asks the index, drops stale or archived hits on the fetched rows, applies the structured
filters, ranks (exact key first, then the BM25-style score, then most recently updated) and
pages by offset under a cursor bound to the query, filters and workspace.
"""

import re
from typing import Annotated

from pydantic import Field

from domain import errors, ids
from domain.access import Located, Prefetch, Ref, target
from domain.context import CallContext
from domain.registry import ToolInput, ToolOutput, tool
from domain.search import query as q
from domain.search import text as search_text
from domain.search.backend import Answer, Doc
from domain.search.writes import INDEX, doc_of
from domain.store import artifacts as artifact_store
from domain.store import boards as board_store
from domain.store import search_rows
from domain.store.paging import InvalidCursor, decode_cursor, encode_cursor, list_kind
from domain.store.reads import Task, TaskNumber, Workspace
from domain.store.search_marks import pending_docs, text_version
from domain.tools.args import CursorArg, DueAfterFilter, DueBeforeFilter, IdShape, Priority, WorkspaceIdArg

MIN_SUBSTRING = 3
CANDIDATE_CAP = 1000  # candidates the index returns per word group (domain/search); past it totalCount is a lower bound
SLACK = 10  # rows read past the page's end when the index answered best first (some drop out)
ROUND = 100  # rows per further read when filters dropped too many of the best hits

QueryArg = Annotated[
    str,
    Field(
        max_length=q.MAX_QUERY_CHARS,
        description=('Task key, or words (all), "phrases", -word, or; 3+ chars also as substring.'),
    ),
]
SearchLimitArg = Annotated[int, Field(default=20, ge=1, le=50)]


class SearchTasksInput(ToolInput):
    workspaceId: WorkspaceIdArg
    query: QueryArg
    boardId: Annotated[str | None, IdShape("board")] = Field(default=None, max_length=120, description="bd_…")
    columnId: Annotated[str | None, IdShape("column")] = Field(default=None, max_length=120, description="cl_…")
    assigneeId: Annotated[str | None, IdShape("user", also=("me",))] = Field(
        default=None, max_length=120, description='userId or "me".'
    )
    labelName: str | None = Field(default=None, max_length=120, description="Label name, any case.")
    priority: Priority | None = None
    dueBefore: DueBeforeFilter = None
    dueAfter: DueAfterFilter = None
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
    totalCount: int = Field(description="Matches after filters (a lower bound when capped).")
    truncated: bool = Field(description="True when this answer does not hold every match: more pages, or capped.")
    capped: bool = Field(
        description="True when a word matched more tasks than the candidate cap (1,000): narrow the query."
    )
    nextCursor: str | None
    notice: str | None = Field(description="Set when the list is cut short: by the page (pass nextCursor) or the cap.")
    hint: str | None = Field(description="Why nothing matched, and what to try (set on empty results).")


def _prefetch(where: Located, args: SearchTasksInput) -> Prefetch:
    """Started with the membership: the workspace's board entries and its pending search records.
    The workspace head and the key's number pointer are the spec's read plans."""
    return Prefetch(
        queries=(
            ("entries", lambda: board_store.entries(where.workspace_id)),
            ("pending", lambda: search_rows.pending(where.workspace_id)),
        ),
    )


def _parse(text: str, *, key_ok: bool, empty_hint: str) -> tuple[q.Node | None, str | None]:
    """The rules both searches share: the tree and the substring pattern (3+ characters), or
    INVALID_INPUT for an empty query or one with no word to look for."""
    if not text:
        raise errors.invalid("query", "is empty", empty_hint)
    tree = q.parse(text)
    substring = text if len(search_text.fold(text)) >= MIN_SUBSTRING else None
    if not key_ok and not q.positives(tree):
        raise errors.invalid(
            "query",
            "holds no word to search for (only excluded words, stopwords or punctuation)",
            "Add at least one word to look for; -word only narrows a search.",
        )
    return tree, substring


def _offset(kind: str, cursor: str | None) -> int:
    """The page offset a cursor carries; INVALID_INPUT for a cursor of another query, filter set or workspace."""
    try:
        start = decode_cursor(kind, cursor)
        return int(start.get("o", 0)) if start else 0
    except (InvalidCursor, TypeError, ValueError, AttributeError):
        raise errors.invalid(
            "cursor",
            "was issued for another query, filter or workspace",
            "Send the cursor with the same query and filters, or omit it for the first page.",
        ) from None


def _page_notice(*, offset: int, shown: int, total: int, more: bool, capped: bool, what: str) -> str | None:
    """The notice of a search answer that does not hold every match (None when it does)."""
    parts = []
    if more:
        parts.append(
            f"Showing {what}s {offset + 1}-{offset + shown} of {total}{' or more' if capped else ''}; pass nextCursor for the next page."
        )
    if capped:
        parts.append(
            f"The words matched more {what}s than the search ranks at once, so totalCount is a lower bound and some matches "
            "are left out; narrow the query with more words, a phrase or a filter."
        )
    return " ".join(parts) or None


def _key_note(
    key: tuple[str, int], wsrow: Workspace | None, pointer: TaskNumber | None, row: Task | None, entry: object
) -> str | None:
    """Why an exact task key found nothing to show: another workspace's prefix, a number never
    given out, an archived task or a task of an archived board. None when the key's task is shown."""
    prefix = (wsrow.taskPrefix or "") if wsrow is not None else ""
    asked = f"{key[0]}-{key[1]}"
    if not prefix or prefix.upper() != key[0]:
        return f"{asked} is not a key of this workspace: its task keys start with {prefix}-." if prefix else None
    shown = f"{prefix}-{key[1]}"
    if pointer is None or row is None:
        last = int(wsrow.taskCounter or 0) if wsrow is not None else 0
        span = f"its tasks run from {prefix}-1 to {prefix}-{last}" if last else "it has no tasks yet"
        return f"{shown} does not exist in this workspace ({span})."
    see = f"get_task with workspaceId and number {key[1]} still shows it"
    if row.archivedAt:
        return f"{shown} is archived, and search leaves archived tasks out; {see}."
    if entry is None or getattr(entry, "archivedAt", None):
        return f"{shown} is on an archived board, and search leaves those out; {see} (unarchive_boards restores the board)."
    return None


def _zero_hint(answer: Answer, matched_any: bool, what: str) -> str:
    if answer.unmatched:
        return (
            f"No {what} contains "
            + ", ".join(f"'{w}'" for w in answer.unmatched)
            + "; check the spelling or drop that word."
        )
    if matched_any:
        return f"{what.capitalize()}s matched the words but not the filters; loosen the filters."
    return f"No {what} has all these words together; try fewer words, or join alternatives with 'or'."


@tool(
    "search_tasks",
    title="Search tasks",
    description="Finds tasks in a workspace by key or full text (title, description, comments). No text, one board: list_tasks.",
    area="search",
    scope="read",
    read_only=True,
    fields_of="results",
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    reads=("workspace", "query_task_number"),
    prefetch=_prefetch,
    input_model=SearchTasksInput,
    output_model=SearchTasksOutput,
)
def search_tasks(ctx: CallContext, args: SearchTasksInput) -> SearchTasksOutput:
    ws = ctx.target.workspace_id
    text = args.query.strip()
    key = ids.parse_task_key(text)
    tree, substring = _parse(
        text, key_ok=key is not None, empty_hint="Give at least one word, a phrase or a task key (ABC-42)."
    )
    filters = {
        "ws": ws,
        "query": text,
        "boardId": args.boardId,
        "columnId": args.columnId,
        "assigneeId": args.assigneeId,
        "labelName": args.labelName.casefold() if args.labelName else None,
        "priority": args.priority,
        "dueBefore": args.dueBefore,
        "dueAfter": args.dueAfter,
    }
    kind = list_kind("search_tasks", **filters)
    offset = _offset(kind, args.cursor)

    # the key: the workspace's own prefix and the number pointer, read with the membership
    key_task: str | None = None
    wsrow = ctx.read.workspace
    pointer = ctx.read.query_task_number if key else None
    if key and wsrow is not None and (wsrow.taskPrefix or "").upper() == key[0] and pointer is not None:
        key_task = pointer.taskId

    pending = list(pending_docs(ctx.query("pending")).values())  # batch records expanded, the newest record per doc
    live = [doc_of(m) for m in pending if not m.gone]
    gone = [m.doc for m in pending if m.gone]
    # a board (named, or the column's) narrows every posting list before any cap
    column = ids.parse_column(args.columnId) if args.columnId else None
    scope = args.boardId or (column[1] if column and column[0] == ws else None)
    # filters without an index of their own drop rows the plan cannot foresee: a best-first read
    # then takes up to the cap of postings, and the rows are checked best first until the page fills
    unindexed = any((args.assigneeId, args.labelName, args.priority, args.dueBefore, args.dueAfter))
    answer = INDEX.query(
        ws,
        tree if q.positives(tree) else None,
        substring=substring,
        cap=CANDIDATE_CAP,
        pending=live,
        gone=gone,
        board_id=scope,
        want=CANDIDATE_CAP if unindexed else offset + args.limit,
    )
    hits = {h.task_id: h for h in answer.hits}
    entries = {e.boardId: e for e in ctx.query("entries")}
    label_ids: dict[str, str] = {}  # board id -> the id of its label named args.labelName
    label_boards: set[str] = set()
    assignee = ctx.user_id if args.assigneeId == "me" else args.assigneeId
    rows: dict[str, Task] = {}
    ranked = []

    def rank(wanted: list[str]) -> None:
        """Fetch the full rows of ``wanted`` (versions, archive, filters) and rank those that pass."""
        got = search_rows.task_details(ws, wanted)
        rows.update(got)
        if args.labelName:
            boards = {r.boardId for r in got.values()} - label_boards
            label_boards.update(boards)
            label_ids.update(search_rows.label_ids(boards, args.labelName))
        for tid, row in got.items():
            entry = entries.get(row.boardId)
            if row.archivedAt or entry is None or entry.archivedAt:
                continue
            if not _passes(row, args, label_ids, assignee):
                continue
            hit = hits.get(tid)
            fields: list[str] = []
            score = 0.0
            if hit is not None:
                version = text_version(row.title or "", row.description or "")
                task_doc = search_rows.task_doc(tid)
                for doc in list(hit.docs):
                    v = hit.docs[doc][2]
                    if doc == task_doc and v and v != version:
                        del hit.docs[doc]  # a stale posting: the stored text moved on
                contains = hit.substring and search_text.fold(text) in search_text.fold(
                    f"{row.title}\n{row.description}"
                )
                if not hit.docs or (hit.score == 0 and not hit.fields and not contains):
                    hit = None
                else:
                    fields = hit.field_names()
                    score = hit.score
                    if contains and not fields:
                        fields = [
                            f
                            for f in ("title", "description")
                            if search_text.fold(text) in search_text.fold(getattr(row, f) or "")
                        ]
                        score = 0.1
            is_key = tid == key_task
            if hit is None and not is_key:
                continue
            if is_key:
                fields = ["key", *fields]
            ranked.append((is_key, score, row.updatedAt, row, fields))

    if not answer.best_first:
        rank(list(set(hits) | ({key_task} if key_task else set())))  # every candidate: totalCount is exact
    else:
        # the index read the best matches, not all: their rows best first, until the page is full
        order = [h.task_id for h in answer.hits]  # best first
        need = offset + args.limit
        start = min(len(order), need + SLACK)
        rank(order[:start] + ([key_task] if key_task and key_task not in order[:start] else []))
        while len(ranked) < need and start < len(order):
            rank(order[start : start + ROUND])
            start += ROUND
    ranked.sort(key=lambda r: (not r[0], -r[1], _desc(r[2])))
    total = len(ranked)
    page = ranked[offset : offset + args.limit]
    columns = {(r.boardId, r.columnId) for _, _, _, r, _ in page}
    col_rows = search_rows.columns(columns)
    results = []
    for is_key, score, _, row, fields in page:
        col = col_rows.get((row.boardId, row.columnId))
        results.append(
            SearchRow(
                id=row.taskId,
                key=row.key,
                title=row.title,
                boardId=row.boardId,
                boardName=entries[row.boardId].name,
                columnId=row.columnId,
                columnName=col.name if col is not None else None,
                priority=row.priority or "NONE",
                dueDate=row.dueDate,
                updatedAt=row.updatedAt,
                score=round(1000.0 + score if is_key else score, 4),
                matchedFields=fields,
            )
        )
    cursor = encode_cursor(kind, {"o": offset + args.limit}) if offset + args.limit < total else None
    key_note = None
    if key is not None:
        key_row = rows.get(key_task) if key_task else None
        key_note = _key_note(key, wsrow, pointer, key_row, entries.get(key_row.boardId) if key_row else None)
    hint = (key_note or _zero_hint(answer, bool(hits), "task")) if total == 0 else None
    notice = _page_notice(
        offset=offset, shown=len(results), total=total, more=cursor is not None, capped=answer.truncated, what="task"
    )
    if total and key_note:  # other tasks matched the words; the key's own task is not among them
        notice = f"{key_note} {notice or ''}".strip()
    return SearchTasksOutput(
        results=results,
        totalCount=total,
        truncated=bool(cursor) or answer.truncated,
        capped=answer.truncated,
        nextCursor=cursor,
        notice=notice,
        hint=hint,
    )


def _desc(stamp: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in stamp or "")


def _passes(row: Task, args: SearchTasksInput, label_ids: dict[str, str], assignee: str | None) -> bool:
    """Whether ``row`` meets every filter; ``assignee`` is ``assigneeId`` with "me" resolved."""
    if args.boardId and row.boardId != args.boardId:
        return False
    if args.columnId and row.columnId != args.columnId:
        return False
    if assignee and assignee not in (row.assigneeIds or []):
        return False
    if args.priority and (row.priority or "NONE") != args.priority:
        return False
    if args.dueBefore and not (row.dueDate and row.dueDate[:10] < args.dueBefore):
        return False
    if args.dueAfter and not (row.dueDate and row.dueDate[:10] >= args.dueAfter):
        return False
    if args.labelName:
        wanted = label_ids.get(row.boardId)
        if not wanted or wanted not in (row.labelIds or []):
            return False
    return True


# -- search_artifacts -------------------------------------------------------------------------------
TextKind = artifact_store.TextKind  # the searchable kinds
SNIPPET_CHARS = 160
RECHECK_CAP = 100  # substring-only candidates whose bodies are read for the recheck


class SearchArtifactsInput(ToolInput):
    workspaceId: WorkspaceIdArg
    query: Annotated[str, Field(max_length=q.MAX_QUERY_CHARS, description=("As search_tasks."))]
    type: TextKind | None = Field(default=None, description="Kind.")
    taskId: str | None = Field(default=None, min_length=1, max_length=80, description="tk_…")
    projectId: str | None = Field(default=None, min_length=1, max_length=64, description="pj_…")
    sessionId: str | None = Field(default=None, min_length=1, max_length=120, description="ses_…")
    limit: SearchLimitArg = 20
    cursor: CursorArg = None


class ArtifactHit(ToolOutput):
    id: str
    title: str
    type: str
    taskId: str | None
    projectId: str | None
    sessionId: str | None
    createdAt: str
    score: float = Field(description="Relevance (higher is better).")
    matchedFields: list[str] = Field(description="Which of title / body matched.")
    snippet: str | None = Field(description="Up to 160 characters of the (redacted) body around the first match.")


class SearchArtifactsOutput(ToolOutput):
    results: list[ArtifactHit]
    totalCount: int = Field(description="Matches after filters (a lower bound when capped).")
    truncated: bool = Field(description="True when this answer does not hold every match: more pages, or capped.")
    capped: bool = Field(description="True when a word matched more artifacts than a candidate cap: narrow the query.")
    nextCursor: str | None
    notice: str | None = Field(description="Set when the list is cut short: by the page (pass nextCursor) or a cap.")
    hint: str | None = Field(description="Why nothing matched, and what to try (set on empty results).")


def _artifact_prefetch(where: Located, args: SearchArtifactsInput) -> Prefetch:
    return Prefetch(queries=(("pending", lambda: search_rows.pending(where.workspace_id, search_rows.ARTIFACTS)),))


def _snippet(body: str, needles: list[str]) -> str | None:
    if not body:
        return None
    low = body.casefold()
    at = min((i for i in (low.find(n) for n in needles if n) if i >= 0), default=0)
    start = max(0, at - SNIPPET_CHARS // 4)
    piece = body[start : start + SNIPPET_CHARS].strip()
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(body) else "")


@tool(
    "search_artifacts",
    title="Search artifacts",
    description=(
        "Full-text search over a workspace's text artifacts, query syntax as search_tasks; ranked "
        "rows with snippets. TRACE and withdrawn ones never match."
    ),
    area="search",
    scope="read",
    read_only=True,
    target=target("workspaceId", "workspace"),
    min_role="MEMBER",
    refs=(Ref("taskId", "task"), Ref("projectId", "project"), Ref("sessionId", "session")),
    prefetch=_artifact_prefetch,
    input_model=SearchArtifactsInput,
    output_model=SearchArtifactsOutput,
)
def search_artifacts(ctx: CallContext, args: SearchArtifactsInput) -> SearchArtifactsOutput:
    ws = ctx.target.workspace_id
    text = args.query.strip()
    tree, substring = _parse(text, key_ok=False, empty_hint='Give at least one word or a "phrase" the artifact says.')
    filters = {
        "ws": ws,
        "query": text,
        "type": args.type,
        "taskId": args.taskId,
        "projectId": args.projectId,
        "sessionId": args.sessionId,
    }
    kind = list_kind("search_artifacts", **filters)
    offset = _offset(kind, args.cursor)
    pending = list(pending_docs(ctx.query("pending")).values())
    live = [doc_of(m) for m in pending if not m.gone]
    answer = INDEX.query(
        ws,
        tree,
        substring=substring,
        cap=CANDIDATE_CAP,
        pending=live,
        gone=[m.doc for m in pending if m.gone],
        corpus=search_rows.ARTIFACTS,
    )
    hits = {h.task_id: h for h in answer.hits}

    # heads of every candidate: withdrawn, non-text and filtered-out artifacts drop out
    heads = search_rows.artifact_heads(ws, hits)
    wanted = {
        aid: h
        for aid, h in heads.items()
        if artifact_store.searchable(h)
        and all(
            getattr(args, f) is None or getattr(h, f) == getattr(args, f)
            for f in ("type", "taskId", "projectId", "sessionId")
        )
    }
    # substring-only candidates are rechecked on their bodies (read with the page's, for snippets)
    needle = search_text.fold(text) if substring else ""
    unscored = [aid for aid in wanted if hits[aid].score == 0 and not hits[aid].fields]
    recheck = unscored[:RECHECK_CAP]  # past it, substring-only candidates are left out (the answer says capped)
    bodies = _bodies(ws, recheck, live)
    ranked = []
    for aid, head in wanted.items():
        hit = hits[aid]
        fields, score = hit.field_names(), hit.score
        if not fields:
            places = [
                f
                for f, value in (("title", head.title), ("body", bodies.get(aid)))
                if value and needle and needle in search_text.fold(value)
            ]
            if not places:
                continue
            fields, score = places, 0.1
        ranked.append((score, head.createdAt, head, fields))
    ranked.sort(key=lambda r: (-r[0], _desc(r[1])))
    total = len(ranked)
    page = ranked[offset : offset + args.limit]
    bodies.update(_bodies(ws, [r[2].artifactId for r in page if r[2].artifactId not in bodies], live))
    needles = [search_text.fold(w) for w in re.findall(r"[^\W_]+", text) if len(w) > 2 and not w.startswith("-")] + (
        [needle] if needle else []
    )
    results = [
        ArtifactHit(
            id=h.artifactId,
            title=h.title,
            type=h.type,
            taskId=h.taskId,
            projectId=h.projectId,
            sessionId=h.sessionId,
            createdAt=h.createdAt,
            score=round(score, 4),
            matchedFields=fields,
            snippet=_snippet(bodies.get(h.artifactId) or "", needles),
        )
        for score, _, h, fields in page
    ]
    cursor = encode_cursor(kind, {"o": offset + args.limit}) if offset + args.limit < total else None
    hint = _zero_hint(answer, bool(hits), "artifact") if total == 0 else None
    capped = answer.truncated or len(unscored) > RECHECK_CAP
    notice = _page_notice(
        offset=offset, shown=len(results), total=total, more=cursor is not None, capped=capped, what="artifact"
    )
    return SearchArtifactsOutput(
        results=results,
        totalCount=total,
        truncated=bool(cursor) or capped,
        capped=capped,
        nextCursor=cursor,
        notice=notice,
        hint=hint,
    )


def _bodies(ws: str, artifact_ids: list[str], pending: list[Doc]) -> dict[str, str]:
    """Redacted bodies of ``artifact_ids`` (one BatchGetItem per 100; a pending doc's from its marker)."""
    out = {d.task_id: d.body for d in pending if d.task_id in artifact_ids}
    out.update(search_rows.artifact_bodies(ws, [aid for aid in artifact_ids if aid not in out]))
    return out


TOOLS = (search_tasks, search_artifacts)
