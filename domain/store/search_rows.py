"""The rows the search tools check their index hits on (search_tasks, search_artifacts).

The index (domain/search) answers ids; these functions read what the tools need to drop stale,
archived or filtered-out hits and to show the rest: the full task items, the label-name claims
of a label filter, the columns of a page, artifact heads and bodies, and the workspace's pending
search records. Every read of several items is one BatchGetItem per 100 keys, eventually
consistent (an index hit is already a step behind the table; docs/search.md), each key once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from domain import ids
from domain.store import keys
from domain.store.models import (
    ArtifactBodyRow,
    ArtifactRow,
    ColumnRow,
    LabelNameRow,
    Row,
    SearchPendingRow,
    TaskDetailRow,
)

# The artifacts' corpus of the index (its postings and pending records; tasks use the default).
ARTIFACTS = keys.SEARCH_ARTIFACTS


def _batch_get(item_keys: Iterable[tuple[str, str]]) -> list[Any]:
    unique = list(dict.fromkeys(item_keys))
    return list(Row.batch_get(unique)) if unique else []


def pending(workspace_id: str, corpus: str = keys.SEARCH_TASKS) -> list[SearchPendingRow]:
    """The workspace's pending search records of a corpus (tasks by default, :data:`ARTIFACTS`):
    one consistent Query of its pending partition (domain.store.search_marks.pending_docs expands them)."""
    return list(SearchPendingRow.query(keys.search_pending_partition(workspace_id, corpus), consistent_read=True))


def task_doc(task_id: str) -> str:
    """The index's doc id of a task's title and description (its postings carry the text version)."""
    return keys.search_doc_task(task_id)


def task_details(workspace_id: str, task_ids: Iterable[str]) -> dict[str, TaskDetailRow]:
    """The full items of the tasks ``task_ids`` names that lie in ``workspace_id``, by task id
    (absent and malformed ones left out)."""
    wanted = []
    for tid in task_ids:
        ref = ids.parse_task(tid)
        if ref and ref.workspace_id == workspace_id:
            wanted.append(keys.task_full(ref.board_id, ref.number))
    return {r.taskId: r for r in _batch_get(wanted) if isinstance(r, TaskDetailRow)}


def label_ids(board_ids: Iterable[str], name: str) -> dict[str, str]:
    """The label id the name ``name`` (any case) is claimed by on each of ``board_ids``, by board
    id; boards without such a label are left out."""
    boards = {keys.label_name_claim(b, name): b for b in board_ids}
    return {boards[(c.PK, c.SK)]: c.labelId for c in _batch_get(boards) if isinstance(c, LabelNameRow)}


def columns(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], ColumnRow]:
    """The columns ``(board id, column id)`` names, by that pair (absent ones left out)."""
    wanted = {keys.column(b, c): (b, c) for b, c in pairs}
    return {wanted[(c.PK, c.SK)]: c for c in _batch_get(wanted) if isinstance(c, ColumnRow)}


def artifact_heads(workspace_id: str, artifact_ids: Iterable[str]) -> dict[str, ArtifactRow]:
    """The heads of the artifacts ``artifact_ids`` names that lie in ``workspace_id``, by artifact id."""
    wanted = []
    for aid in artifact_ids:
        ref = ids.parse_artifact(aid)
        if ref is not None and ref.workspace_id == workspace_id:
            wanted.append(keys.artifact(workspace_id, ref.ulid))
    return {r.artifactId: r for r in _batch_get(wanted) if isinstance(r, ArtifactRow)}


def artifact_bodies(workspace_id: str, artifact_ids: Iterable[str]) -> dict[str, str]:
    """The stored (redacted) bodies of the artifacts ``artifact_ids`` names, by artifact id
    (artifacts without a stored body left out)."""
    wanted = [keys.artifact_body(workspace_id, ref.ulid) for aid in artifact_ids if (ref := ids.parse_artifact(aid))]
    return {r.artifactId: r.body for r in _batch_get(wanted) if isinstance(r, ArtifactBodyRow)}
