"""``jentrix search verify``: the index compared with the entities it should reflect.

For one workspace: every task (each board's full items, one Query per board), every comment
(one Query per task) and every artifact of a text kind (the artifacts corpus: one Query of the
workspace's heads and bodies; a withdrawn one must have no postings) is turned into the doc the
index should hold (text version from the entity itself); the doc states (``IXD``) and the postings they list are read (BatchGetItem) and
each doc gets one verdict:

- ``ok``: the state holds the entity's version and every posting it lists is there with it;
- ``pending``: not (yet) posted, but a pending record of the doc is waiting (not drift);
- ``missing``: no state, or a live doc whose state is removed, and no record waiting;
- ``stale``: the state holds another version of the text, no record waiting;
- ``postings``: the state is right but postings it lists are absent, carry another version, or
  lack their impact-index keys (written before GSI2 ordered the lists, so best-first reads miss them);
- ``not_removed``: an archived task or a withdrawn artifact still has postings;
- ``claim``: a task's ``searchVersion`` differs from its text's version (it claims a text that
  is not the stored one);
- ``vocabulary``: words of the doc's text lack their vocabulary word item
  (``keys.search_vocabulary_word``: posted before the list existed, so deleting the workspace
  would not find their trigram postings); the repair's rewrite posts them with their items.

:func:`verify` with ``repair=True`` applies the pending records first, then rewrites every
drifted doc from its entity through the consumer (forced: postings rewritten even when the state
looks right) and corrects ``searchVersion`` claims; a second pass reports what is left. Orphan
postings of docs whose entity is gone entirely cannot be listed without a Scan and are not
checked; the query drops them (no row).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pynamodb.exceptions import UpdateError

from domain.search import repair as _repair
from domain.search.backend import Doc
from domain.search.dynamo import GONE, INDEX_FORCE, _batch_get, postings_of, vocabulary_of
from domain.search.writes import INDEX
from domain.store import artifacts as artifact_store
from domain.store import boards as board_store
from domain.store import keys, search_marks
from domain.store.models import ArtifactBodyRow, ArtifactRow, CommentRow, Row, TaskDetailRow


@dataclass
class Report:
    """Counts per verdict, the drifted docs (``doc -> verdict``), the pending records read."""

    workspace_id: str
    docs: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    drift: dict[str, str] = field(default_factory=dict)
    pending: int = 0
    repaired: int = 0

    @property
    def drifted(self) -> int:
        return len(self.drift)

    def lines(self) -> list[str]:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items()))
        out = [
            f"{self.workspace_id}: {self.docs} docs ({counts}); pending records {self.pending}; drift {self.drifted}"
            + (f"; repaired {self.repaired}" if self.repaired else "")
        ]
        out += [f"  {verdict:<12} {doc}" for doc, verdict in sorted(self.drift.items())]
        return out


@dataclass
class _Entity:
    doc: Doc
    gone: bool
    at: str | None
    task: TaskDetailRow | None = None


def _entities(workspace_id: str) -> list[_Entity]:
    out: list[_Entity] = []
    for entry in board_store.entries(workspace_id):
        pk = keys.board_partition(entry.boardId)
        for row in Row.query(pk, Row.SK.startswith(keys.TASK_ITEMS_PREFIX), consistent_read=True):
            if not isinstance(row, TaskDetailRow):
                continue
            doc = Doc(
                keys.search_doc_task(row.taskId), row.taskId, title=row.title or "", description=row.description or ""
            )
            out.append(_Entity(doc, bool(row.archivedAt), row.updatedAt, row))
            for c in Row.query(
                keys.task_side_partition(row.taskId), Row.SK.startswith(keys.COMMENTS_PREFIX), consistent_read=True
            ):
                if isinstance(c, CommentRow):
                    cdoc = Doc(keys.search_doc_comment(c.taskId, c.commentId), c.taskId, comment=c.body or "")
                    out.append(
                        _Entity(cdoc, False, c.updatedAt)
                    )  # a comment stays indexed while it exists (its task's archive hides it)
    return out + _artifacts(workspace_id)


def _artifacts(workspace_id: str) -> list[_Entity]:
    """The artifacts corpus: every artifact of a text kind with a body (one Query of the
    workspace's heads and bodies); a withdrawn one must have no postings left."""
    heads: dict[str, ArtifactRow] = {}
    bodies: dict[str, str] = {}
    for row in Row.query(keys.artifact_partition(workspace_id), consistent_read=True):
        if isinstance(row, ArtifactRow):
            heads[row.artifactId] = row
        elif isinstance(row, ArtifactBodyRow):
            bodies[row.artifactId] = row.body or ""
    out = []
    for aid, head in heads.items():
        if head.type not in artifact_store.TEXT_KINDS or not head.bodyChars:
            continue  # never indexed (TRACE parts, files, links)
        doc = Doc(keys.search_doc_artifact(aid), aid, title=head.title or "", body=bodies.get(aid, ""))
        out.append(_Entity(doc, bool(head.withdrawnAt), head.withdrawnAt or head.createdAt))
    return out


def _check(workspace_id: str, entities: list[_Entity], waiting: set[str]) -> tuple[dict[str, str], Counter[str]]:
    states = _batch_get([keys.search_doc_state(workspace_id, e.doc.doc_id) for e in entities], consistent=True)
    wanted: list[tuple[str, str]] = []
    plan: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    for e in entities:
        state = states.get(keys.search_doc_state(workspace_id, e.doc.doc_id))
        terms = set(state.get("t", {}).get("SS", [])) if state else set()
        posting_keys = [keys.search_term_posting(workspace_id, t, e.doc.doc_id, e.doc.corpus) for t in sorted(terms)]
        plan[e.doc.doc_id] = (state["v"]["S"] if state else "", posting_keys)
        wanted += posting_keys
    postings = _batch_get(wanted, projection="PK, SK, v, GSI2SK", consistent=True) if wanted else {}
    words = {
        e.doc.doc_id: [keys.search_vocabulary_word(workspace_id, w, e.doc.corpus) for w in sorted(vocabulary_of(e.doc))]
        for e in entities
        if not e.gone
    }
    wanted_words = [k for ks in words.values() for k in ks]
    listed = _batch_get(wanted_words, projection="PK, SK", consistent=True) if wanted_words else {}
    drift: dict[str, str] = {}
    verdicts: Counter[str] = Counter()
    for e in entities:
        version, posting_keys = plan[e.doc.doc_id]
        if e.gone:
            verdict = "not_removed" if posting_keys and any(k in postings for k in posting_keys) else "ok"
        elif e.task is not None and e.task.searchVersion != e.doc.version and e.doc.doc_id not in waiting:
            verdict = "claim"
        elif version != e.doc.version:
            verdict = "missing" if version in ("", GONE) else "stale"
        elif (
            any(postings.get(k, {}).get("v", {}).get("S") != version for k in posting_keys)
            or len(posting_keys) != len(postings_of(e.doc))
            or any("GSI2SK" not in postings[k] for k in posting_keys)
        ):  # written before the impact index: not in best-first reads
            verdict = "postings"
        elif any(k not in listed for k in words.get(e.doc.doc_id, [])):
            verdict = "vocabulary"  # indexed before the word list: workspace deletion could not find them
        else:
            verdict = "ok"
        if verdict != "ok" and e.doc.doc_id in waiting:
            verdict = "pending"
        verdicts[verdict] += 1
        if verdict not in ("ok", "pending"):
            drift[e.doc.doc_id] = verdict
    return drift, verdicts


def verify(workspace_id: str, *, repair: bool = False) -> Report:
    """Compare (and with ``repair`` bring back in line) the workspace's index; see the module."""
    report = Report(workspace_id)
    if repair:
        _repair.drain(workspace_id)
    waiting = {m.doc for m in search_marks.pending_docs(_repair.pending(workspace_id)).values()}
    report.pending = len(waiting)
    entities = _entities(workspace_id)
    report.docs = len(entities)
    drift, verdicts = _check(workspace_id, entities, waiting)
    if repair and drift:
        by_doc = {e.doc.doc_id: e for e in entities}
        work: list[Any] = []
        for doc_id, verdict in drift.items():
            e = by_doc[doc_id]
            if verdict == "claim" and e.task is not None:
                try:  # under the updatedAt it was read with: a task edited since has its own record
                    TaskDetailRow(e.task.PK, e.task.SK).update(
                        actions=[TaskDetailRow.searchVersion.set(e.doc.version)],
                        condition=TaskDetailRow.updatedAt == e.task.updatedAt,
                    )
                    e.task.searchVersion = e.doc.version
                except UpdateError:
                    pass
            work.append((workspace_id, e.doc, e.gone, False, [], INDEX_FORCE))
        INDEX.apply_many(work)
        report.repaired = len(work)
        waiting = {m.doc for m in search_marks.pending_docs(_repair.pending(workspace_id)).values()}
        drift, verdicts = _check(workspace_id, entities, waiting)
    report.drift, report.verdicts = drift, verdicts
    return report


def workspaces_of(user_id: str) -> list[str]:
    from domain.store import members

    return [m.workspaceId for m in members.memberships(user_id)]
