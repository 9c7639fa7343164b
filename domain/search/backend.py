"""The search port: what a search backend stores and answers, independent of where.

:class:`DynamoIndex` (domain/search/dynamo.py) is the embedded default, an inverted index in
the single table. A deployment that outgrows it can put an OpenSearch adapter behind the same
interface (fed by the DynamoDB zero-ETL pipeline, docs/search.md) without changing the tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from domain.search.query import Node
from domain.store import keys
from domain.store.search_marks import text_version

#: field bits and BM25 weights: title above description (or an artifact's body) above comments
TITLE, DESCRIPTION, COMMENT, BODY = 1, 2, 4, 8
FIELD_NAMES = {TITLE: "title", DESCRIPTION: "description", COMMENT: "comment", BODY: "body"}
WEIGHTS = {TITLE: 3.0, DESCRIPTION: 1.0, COMMENT: 0.5, BODY: 1.0}


@dataclass(frozen=True)
class Doc:
    """One indexed unit: a task's title + description (``keys.search_doc_task``), one comment
    (``keys.search_doc_comment``), or an artifact's title + redacted body
    (``keys.search_doc_artifact``, the artifacts corpus). ``task_id`` is the owner a hit is
    reported for: the task, or the artifact. Its ``version`` is a digest of the indexed text, so
    an edit that leaves the text alone (a move, a priority) writes no posting, and a posting
    whose version differs from the stored entity's text is stale and never answers."""

    doc_id: str
    task_id: str
    title: str = ""
    description: str = ""
    comment: str = ""
    body: str = ""

    @property
    def version(self) -> str:
        return text_version(self.title, self.description, self.comment, self.body)

    @property
    def corpus(self) -> str:
        return keys.search_corpus_of(self.doc_id)


@dataclass
class Hit:
    """One task's match: per doc, its score, matched field bits and the text version its postings
    were written for. The caller drops a doc whose stored text has another version (a stale
    posting) before using :attr:`score` and :attr:`fields`."""

    task_id: str
    docs: dict[str, tuple[float, int, str]] = field(default_factory=dict)
    substring: bool = False

    @property
    def score(self) -> float:
        return round(sum(s for s, _, _ in self.docs.values()), 4)

    @property
    def fields(self) -> int:
        bits = 0
        for _, f, _ in self.docs.values():
            bits |= f
        return bits

    @property
    def versions(self) -> dict[str, str]:
        return {d: v for d, (_, _, v) in self.docs.items()}

    def field_names(self) -> list[str]:
        return [name for bit, name in FIELD_NAMES.items() if self.fields & bit]


@dataclass
class Answer:
    hits: list[Hit]
    truncated: bool = False
    #: positive words that matched nothing (the zero-result hint)
    unmatched: list[str] = field(default_factory=list)
    requests: int = 0
    #: the hits hold the best matches, not every one (a group was read best first, to the
    #: page's need): the caller checks their rows best first and counts a lower bound
    best_first: bool = False


class SearchBackend(Protocol):
    def index(
        self, workspace_id: str, doc: Doc, *, fresh: bool = False, also_delete: Sequence[tuple[str, str]] = ()
    ) -> None:
        """Make the index hold exactly ``doc`` (idempotent; only changed postings are written)."""

    def remove(self, workspace_id: str, doc_id: str, *, also_delete: Sequence[tuple[str, str]] = ()) -> None:
        """Drop every posting of ``doc_id`` (idempotent)."""

    def query(
        self, workspace_id: str, tree: Node | None, *, substring: str | None, cap: int, corpus: str = keys.SEARCH_TASKS
    ) -> Answer:
        """Owners (tasks, or artifacts) of ``corpus`` matching ``tree`` (full text) or containing
        ``substring`` in title/description (artifacts: title/body)."""
