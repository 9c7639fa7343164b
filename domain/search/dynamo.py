"""The embedded search backend: an inverted index as items of the single table.

Items (keys in :mod:`domain.store.keys`, rows in docs/data-model.md, design in docs/search.md):

- word posting (``keys.search_term_posting``): ``tk`` task id, ``f`` field bits, ``w`` weighted
  term frequency, ``p`` positions (space-separated), ``dl`` doc length, ``v`` doc version;
- vocabulary trigram posting (``keys.search_gram_posting`` with a *word* as sort key): the key
  alone. The substring index is the workspace's vocabulary, not each doc's text: a word is
  posted once (its trigrams), the first time any doc of the workspace uses it, so a new doc
  writes trigrams only for words the workspace has never seen (one BatchGetItem of the words'
  sentinels tells which: ``keys.search_vocabulary_word``, put after the trigrams, and the list
  workspace deletion reads to find the trigram partitions). The vocabulary only grows; a word no
  doc holds any more costs nothing at query time but a shorter candidate list;
- doc state (``keys.search_doc_state``): ``v`` (text version), ``t`` (terms): an unchanged text
  writes nothing; a changed one rewrites that doc's word postings (they carry the version) and
  deletes the words it lost;
- pending marker (``keys.search_pending``, :class:`domain.store.models.SearchPendingRow`).

Query plan (cost grows with the smallest match set): per AND group, the first page (``Limit``
:data:`PAGE`) of every positive word's list in parallel; the shortest list drives (paged to the
candidate cap when no list ends in its first page); every other word, phrase and negation is
checked on the candidates only (a list already read in full, else BatchGetItem of the
``(word, doc)`` posting keys). Substring: each chunk of the pattern (a run of 3+ letters or
digits) finds the vocabulary words holding it (the shortest of its trigrams' word lists,
rechecked), the chunk with the fewest lexemes drives, and the task docs posted under those
lexemes are the candidates the caller rechecks on the fetched rows. Pending markers are read with
the probes (one Query) and evaluated in memory, so a write is found before its postings land.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, wait
from typing import Any

from domain.search import text
from domain.search.backend import BODY, COMMENT, DESCRIPTION, TITLE, WEIGHTS, Answer, Doc, Hit
from domain.search.query import And, Node, Not, Or, Phrase, Term
from domain.store import db, keys, parallel
from domain.store.models import Row

PAGE = 200  # vocabulary words per trigram-list page, and postings per page past a probe
PROBE = 100  # postings per first-page probe of a word's list (impact order, or a board's range)
CAP = 1000  # candidate cap per AND group (postings read from one list)
SLACK = 10  # best-first hits read past the page's end (archived, stale or filtered rows drop out)
IMPACT_INDEX = "GSI2"  # word postings by (term, impact): keys.search_impact_key
IMPACT_SCALE = 10_000
_DESC_BASE = 100_000  # description positions start here: phrases never span title and body
BATCH_WRITE = 25
BATCH_GET = 100
WRITE_ATTEMPTS = 8
K1, B, AVGDL = 1.2, 0.75, 60.0
GONE = "-"  # the version of a removed doc's state (a tombstone carrying the removal's ``at``)
#: ``at`` of a forced rewrite (``jentrix search verify --repair``): the postings are written
#: even when the doc state already names the version, and no ``at`` is kept
INDEX_FORCE = "\x00force"


def _table() -> str:
    return Row.Meta.table_name


def _client() -> Any:
    return db.dynamodb_client()


# -- building postings ---------------------------------------------------------------------------
def _fields(doc: Doc) -> list[tuple[int, str, int]]:
    if doc.corpus == keys.SEARCH_ARTIFACTS:
        return [(TITLE, doc.title, 0), (BODY, doc.body, _DESC_BASE)]
    if doc.comment or keys.search_doc_is_comment(doc.doc_id):
        return [(COMMENT, doc.comment, 0)]
    return [(TITLE, doc.title, 0), (DESCRIPTION, doc.description, _DESC_BASE)]


def vocabulary_of(doc: Doc) -> set[str]:
    """The words of ``doc`` its corpus's substring vocabulary must hold (a task's title and
    description, an artifact's title and body; comments are not substring-searchable)."""
    if keys.search_doc_is_comment(doc.doc_id):
        return set()
    if doc.corpus == keys.SEARCH_ARTIFACTS:
        return text.vocabulary(f"{doc.title}\n{doc.body}")
    return text.vocabulary(f"{doc.title}\n{doc.description}")


def postings_of(doc: Doc) -> dict[str, dict[str, Any]]:
    """``term -> posting attributes`` of ``doc``."""
    acc: dict[str, dict[str, Any]] = {}
    length = 0
    for bit, body, base in _fields(doc):
        for pos, lex in enumerate(text.lexemes(body), start=base + 1):
            if lex is None:
                continue
            length += 1
            p = acc.setdefault(lex, {"f": 0, "w": 0.0, "p": []})
            p["f"] |= bit
            p["w"] += WEIGHTS[bit]
            p["p"].append(pos)
    for p in acc.values():
        p["dl"] = length
    return acc


def _state_of(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "v": item["v"]["S"],
        "t": set(item.get("t", {}).get("SS", [])),
        "g": set(item.get("g", {}).get("SS", [])),
        "a": item.get("a", {}).get("S", ""),
    }


def impact(w: float, dl: float) -> float:
    """The part of a posting's BM25 score that does not depend on the query: the saturated,
    length-normalised weighted term frequency (``score = idf(term) * impact``), at most K1 + 1."""
    return w * (K1 + 1) / (w + K1 * (1 - B + B * dl / AVGDL)) if w > 0 else 0.0


def inverted_impact(w: float, dl: float) -> int:
    """The impact as GSI2 orders it: ``99999 - round(impact x 10,000)``, so a Query of the index
    reads a word's list best first (equal impacts by doc id)."""
    return 99_999 - min(99_999, round(impact(w, dl) * IMPACT_SCALE))


def _put(pk: str, sk: str, attrs: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, dict[str, Any]] = {"PK": {"S": pk}, "SK": {"S": sk}}
    for name, value in attrs.items():
        if isinstance(value, bool):
            item[name] = {"BOOL": value}
        elif isinstance(value, (int, float)):
            item[name] = {"N": repr(round(value, 4)) if isinstance(value, float) else str(value)}
        else:
            item[name] = {"S": value}
    return {"PutRequest": {"Item": item}}


def _sentinel(workspace_id: str, word: str, corpus: str) -> tuple[str, str]:
    """The vocabulary word item that says ``word`` is fully posted (written after its trigram
    postings; workspace deletion lists the words there to find their trigram partitions). A word
    posted before this item existed is posted again once, the next time a doc uses it."""
    return keys.search_vocabulary_word(workspace_id, word, corpus)


def _delete(pk: str, sk: str) -> dict[str, Any]:
    return {"DeleteRequest": {"Key": {"PK": {"S": pk}, "SK": {"S": sk}}}}


def _batch_write(requests: list[dict[str, Any]]) -> int:
    """BatchWriteItem in 25s, in parallel, retrying ``UnprocessedItems``; returns the request count."""
    return _send_chunks([requests[i : i + BATCH_WRITE] for i in range(0, len(requests), BATCH_WRITE)])


def _batch_write_then(requests: list[dict[str, Any]], last: list[dict[str, Any]]) -> int:
    """``requests`` (in parallel), then ``last`` (the doc state and the marker deletion), so a
    marker never goes before its postings; one request when everything fits in one batch."""
    if len(requests) + len(last) <= BATCH_WRITE:
        return _batch_write(requests + last)
    return _batch_write(requests) + _batch_write(last)


def _send_chunks(chunks: list[list[dict[str, Any]]]) -> int:
    def send(chunk: list[dict[str, Any]]) -> int:
        pending = {_table(): chunk}
        for attempt in range(WRITE_ATTEMPTS):
            out = _client().batch_write_item(RequestItems=pending)
            pending = out.get("UnprocessedItems") or {}
            if not pending:
                return attempt + 1  # requests sent
            time.sleep(min(0.05 * 2**attempt, 1.0))
        raise RuntimeError("search postings: unprocessed items after retries")

    futures = [parallel.submit(send, c) for c in chunks]
    # every chunk finishes (or fails) before this returns or raises: a failed pass leaves no
    # write in flight behind it (the next pass would race it)
    wait(futures)
    return sum(f.result() for f in futures)


def _batch_get(
    keys_: list[tuple[str, str]], projection: str | None = None, *, consistent: bool = False
) -> dict[tuple[str, str], dict[str, Any]]:
    """BatchGetItem in 100s, in parallel, retrying ``UnprocessedKeys`` (eventually consistent
    unless ``consistent``)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    unique = list(dict.fromkeys(keys_))
    chunks = [unique[i : i + BATCH_GET] for i in range(0, len(unique), BATCH_GET)]

    def fetch(chunk: list[tuple[str, str]]) -> list[dict[str, Any]]:
        request: dict[str, Any] = {"Keys": [{"PK": {"S": pk}, "SK": {"S": sk}} for pk, sk in chunk]}
        if projection:
            request["ProjectionExpression"] = projection
        if consistent:
            request["ConsistentRead"] = True
        items: list[dict[str, Any]] = []
        pending = {_table(): request}
        for attempt in range(WRITE_ATTEMPTS):
            res = _client().batch_get_item(RequestItems=pending)
            items += res["Responses"].get(_table(), [])
            pending = res.get("UnprocessedKeys") or {}
            if not pending:
                break
            time.sleep(min(0.05 * 2**attempt, 1.0))
        return items

    for future in [parallel.submit(fetch, c) for c in chunks]:
        for item in future.result():
            out[(item["PK"]["S"], item["SK"]["S"])] = item
    return out


# -- the backend ------------------------------------------------------------------------------------
class DynamoIndex:
    """:class:`domain.search.backend.SearchBackend` on the single table."""

    # -- writes
    def index(
        self, workspace_id: str, doc: Doc, *, fresh: bool = False, also_delete: Sequence[tuple[str, str]] = ()
    ) -> None:
        """``fresh``: the doc was just created (no state to read); ``also_delete``: keys removed
        after the postings (the doc's pending marker)."""
        self.apply_many([(workspace_id, doc, False, fresh, list(also_delete), None)])

    def remove(self, workspace_id: str, doc_id: str, *, also_delete: Sequence[tuple[str, str]] = ()) -> None:
        self.apply_many([(workspace_id, Doc(doc_id, ""), True, False, list(also_delete), None)])

    def apply_many(
        self, work: list[tuple[str, Doc, bool, bool, list[tuple[str, str]], str | None]]
    ) -> dict[str, list[tuple[str, str]]]:
        """Index (or, when ``gone``, remove) several docs together (each doc once): one
        BatchGetItem (consistent) of the doc states that are not fresh and of the sentinels of
        their vocabulary words, then every posting change in shared batches of 25 (in parallel),
        then the sentinels of new words, the doc states and the ``also`` deletions.

        ``at`` (when the text was written) is kept in the doc state: a doc whose state was built
        from a later ``at`` is left alone, so a late or replayed record never rolls a text back.

        Returns the keys of the items put, per workspace (the consumer deletes them again when the
        workspace was deleted meanwhile: :func:`domain.search.writes.apply_all`)."""
        state_keys = [keys.search_doc_state(ws, doc.doc_id) for ws, doc, _, fresh, _, _ in work if not fresh]
        words_of = [set() if gone else vocabulary_of(doc) for _, doc, gone, *_ in work]
        sentinels = sorted(
            {_sentinel(ws, w, doc.corpus) for (ws, doc, *_), words in zip(work, words_of, strict=True) for w in words}
        )
        found = _batch_get(state_keys + sentinels, consistent=True) if state_keys or sentinels else {}
        states = {k: _state_of(found[k]) for k in state_keys if k in found}
        known = {k for k in sentinels if k in found}
        requests: list[dict[str, Any]] = []
        last: list[dict[str, Any]] = []
        put: dict[str, list[tuple[str, str]]] = {}
        for (ws, doc, gone, _fresh, also, at), words in zip(work, words_of, strict=True):
            before = len(requests), len(last)
            state_key = keys.search_doc_state(ws, doc.doc_id)
            old = states.get(state_key, {})
            c = doc.corpus
            force = at == INDEX_FORCE
            if force:
                at = None
            elif at and old.get("a") and old["a"] > at:
                last += [_delete(*k) for k in also]
                continue  # the index already holds a later text of this doc
            # per-doc trigram postings of the earlier layout, if this doc still has any
            requests += [_delete(*keys.search_gram_posting(ws, g, doc.doc_id, c)) for g in old.get("g", set())]
            if gone:
                requests += [_delete(*keys.search_term_posting(ws, t, doc.doc_id, c)) for t in old.get("t", {})]
                if at:  # a tombstone: a replayed older record of this doc is recognised as older
                    if keys.search_doc_is_comment(doc.doc_id):  # its entity is gone: listed for deletion
                        last.append(_put(*keys.search_removed_doc(ws, doc.doc_id), {}))
                    last.append(
                        {
                            "PutRequest": {
                                "Item": {
                                    "PK": {"S": state_key[0]},
                                    "SK": {"S": state_key[1]},
                                    "kind": {"S": "SearchDoc"},
                                    "v": {"S": GONE},
                                    "a": {"S": at},
                                }
                            }
                        }
                    )
                elif old:
                    last.append(_delete(*state_key))
            elif force or old.get("v") != doc.version:
                terms = postings_of(doc)
                for term, p in terms.items():
                    pk, sk = keys.search_term_posting(ws, term, doc.doc_id, c)
                    w = round(p["w"], 4)
                    requests.append(
                        _put(
                            pk,
                            sk,
                            {
                                "kind": "Posting",
                                "tk": doc.task_id,
                                "f": p["f"],
                                "w": w,
                                "p": " ".join(map(str, p["p"])),
                                "dl": p["dl"],
                                "v": doc.version,
                                "GSI2SK": keys.search_term_by_impact(ws, term, sk, inverted_impact(w, p["dl"]), c)[1],
                                "GSI2PK": pk,
                            },
                        )
                    )
                requests += [
                    _delete(*keys.search_term_posting(ws, t, doc.doc_id, c)) for t in set(old.get("t", {})) - set(terms)
                ]
                # the workspace's substring vocabulary: only words it does not hold yet (no payload;
                # the sentinel, the word's vocabulary item, goes last and says the word is complete)
                for word in sorted(words):
                    sentinel = _sentinel(ws, word, c)
                    if sentinel in known:
                        continue
                    known.add(sentinel)
                    requests += [_put(*k, {}) for k in keys.search_word_grams(ws, word, c)]
                    last.append(_put(*sentinel, {}))
                state = {
                    "PK": {"S": state_key[0]},
                    "SK": {"S": state_key[1]},
                    "kind": {"S": "SearchDoc"},
                    "v": {"S": doc.version},
                    "t": {"SS": sorted(terms)} if terms else {"NULL": True},
                }
                if at:
                    state["a"] = {"S": at}
                last.append({"PutRequest": {"Item": state}})
            last += [_delete(*k) for k in also]
            put.setdefault(ws, []).extend(
                (r["PutRequest"]["Item"]["PK"]["S"], r["PutRequest"]["Item"]["SK"]["S"])
                for r in requests[before[0] :] + last[before[1] :]
                if "PutRequest" in r
            )
        if requests or last:
            _batch_write_then(requests, last)
        return put

    # -- reads
    def query(
        self,
        workspace_id: str,
        tree: Node | None,
        *,
        substring: str | None,
        cap: int = CAP,
        pending: Iterable[Doc] = (),
        gone: Iterable[str] = (),
        corpus: str = keys.SEARCH_TASKS,
        board_id: str | None = None,
        want: int | None = None,
    ) -> Answer:
        """``pending`` docs (markers read by the caller) are evaluated in memory instead of their
        postings; ``gone`` docs are left out.

        ``board_id``: only that board's docs; every list is read as the board's two ranges of the
        word's partition (task docs, comment docs), so the filter narrows the lists before any
        cap. ``want``: how many best hits the caller's page needs (offset + limit). A group none
        of whose lists ends in its probe is read best first (the impact index) until ``want`` +
        :data:`SLACK` hits score at least what any unread posting could, or :data:`CAP` postings
        are read; the answer is then ``best_first`` and ``truncated``: its hits hold the best
        ones, not every match."""
        scope = keys.search_board_docs(board_id) if board_id else None
        plan = _Plan(workspace_id, cap, corpus, scope=scope, need=min(cap, (want or cap) + SLACK))
        plan.skip = {d.doc_id for d in pending} | set(gone)
        answer = Answer(hits=[])
        groups = _groups(tree)
        chunks = text.pattern_chunks(substring) if substring else []
        # every word's probe at once (one round trip)
        for g in groups:
            for w in _required(g):
                plan.start(plan.term_pk(w))
        results: dict[str, Hit] = {}
        for g in groups:
            hits, unmatched, truncated, best_first = plan.run_group(g)
            answer.unmatched += [u for u in unmatched if u not in answer.unmatched]
            answer.truncated |= truncated
            answer.best_first |= best_first
            for doc_id, (task_id, score, fields, version) in hits.items():
                _merge(results, task_id, score, fields, doc_id, version)
        # pending docs: evaluated in memory (read-your-write)
        for doc in pending:
            terms = postings_of(doc)
            for g in groups:
                if _eval(g, terms):
                    _merge(
                        results, doc.task_id, _score(g, terms, {}, plan), _fields_of(g, terms), doc.doc_id, doc.version
                    )
            if substring and not keys.search_doc_is_comment(doc.doc_id) and _contains(doc, substring):
                hit = _merge(results, doc.task_id, 0.0, 0, doc.doc_id, doc.version)
                hit.substring = True
        if chunks and answer.best_first and sum(1 for h in results.values() if h.score > 0) >= plan.need:
            # substring-only hits score below every word hit: with the page filled by word hits
            # best first, they could not reach it, so their lists are not read
            answer.truncated = True
        elif chunks:
            for chunk in chunks:
                for gram in text.word_trigrams(chunk):
                    plan.start_gram(gram)
            lexemes = plan.substring_lexemes(chunks)
            if lexemes:
                found, truncated = plan.substring_docs(lexemes)
                answer.truncated |= truncated
                for doc_id, task_id in found.items():
                    hit = _merge(results, task_id, 0.0, 0, doc_id, "")
                    hit.substring = True  # the caller rechecks on the fetched row
        answer.hits = sorted(results.values(), key=lambda h: -h.score)
        answer.requests = plan.requests
        return answer


def _merge(results: dict[str, Hit], task_id: str, score: float, fields: int, doc_id: str, version: str) -> Hit:
    hit = results.setdefault(task_id, Hit(task_id))
    old = hit.docs.get(doc_id)
    if old is None:
        hit.docs[doc_id] = (score, fields, version)
    else:
        hit.docs[doc_id] = (old[0] + score, old[1] | fields, version or old[2])
    return hit


def _contains(doc: Doc, pattern: str) -> bool:
    needle = text.fold(pattern)
    return any(needle in text.fold(f) for f in (doc.title, doc.description, doc.body) if f)


def _simplify(node: Any) -> Any:
    if isinstance(node, Not) and isinstance(node.item, Not):
        return _simplify(node.item.item)
    if isinstance(node, Not):
        return Not(_simplify(node.item))
    if isinstance(node, And):
        return And(tuple(_simplify(i) for i in node.items))
    return node


def _groups(tree: Node | None) -> list[And]:
    """The top-level OR branches as AND groups (the parser's tree is ``Or[And[...]]``)."""
    if tree is None:
        return []
    branches = tree.items if isinstance(tree, Or) else (tree,)
    out = []
    for b in branches:
        b = _simplify(b)
        out.append(b if isinstance(b, And) else And((b,)))
    return out


def _required(group: And) -> list[str]:
    """Words every match of ``group`` holds (positive terms and positive phrases' words)."""
    words: list[str] = []
    for item in group.items:
        if isinstance(item, Term):
            words.append(item.lexeme)
        elif isinstance(item, Phrase):
            words.extend(item.lexemes)
    return list(dict.fromkeys(words))


def _all_words(node: Any) -> list[str]:
    if isinstance(node, Term):
        return [node.lexeme]
    if isinstance(node, Phrase):
        return list(node.lexemes)
    if isinstance(node, Not):
        return _all_words(node.item)
    return [w for i in node.items for w in _all_words(i)]


def _positions(p: dict[str, Any]) -> set[int]:
    raw = p.get("p")
    if isinstance(raw, list):
        return set(raw)
    return {int(x) for x in (raw or "").split()}


def _eval(node: Any, postings: dict[str, dict[str, Any]]) -> bool:
    if isinstance(node, Term):
        return node.lexeme in postings
    if isinstance(node, Phrase):
        if any(w not in postings for w in node.lexemes):
            return False
        sets = [_positions(postings[w]) for w in node.lexemes]
        return any(all(start + off in s for off, s in zip(node.offsets, sets, strict=True)) for start in sets[0])
    if isinstance(node, Not):
        return not _eval(node.item, postings)
    if isinstance(node, And):
        return all(_eval(i, postings) for i in node.items)
    return any(_eval(i, postings) for i in node.items)


def _positive_words(group: And) -> list[str]:
    return _required(group)


def _fields_of(group: And, postings: dict[str, dict[str, Any]]) -> int:
    bits = 0
    for w in _positive_words(group):
        if w in postings:
            bits |= int(postings[w]["f"])
    return bits


def _idf(d: int, n: int) -> float:
    return math.log(1 + (n - d + 0.5) / (d + 0.5))


def _score(group: And, postings: dict[str, dict[str, Any]], df: dict[str, int], plan: _Plan) -> float:
    """BM25 over the weighted term frequency (title x3, description x1, comment x0.5):
    ``sum of idf(w) x impact(w)`` over the group's positive words."""
    n = max(1000, 2 * max(df.values(), default=1))
    total = 0.0
    for w in _positive_words(group):
        p = postings.get(w)
        if not p:
            continue
        total += _idf(df.get(w, 1), n) * impact(float(p["w"]), float(p.get("dl", AVGDL)))
    return round(total, 4)


def _attrs(item: dict[str, Any]) -> dict[str, Any]:
    if "tk" not in item:  # a trigram posting: only its key
        return {"tk": keys.search_doc_task_id(item["SK"]["S"])}
    return {
        "tk": item["tk"]["S"],
        "v": item.get("v", {"S": ""})["S"],
        "f": int(item.get("f", {"N": "0"})["N"]),
        "w": float(item.get("w", {"N": "0"})["N"]),
        "p": item.get("p", {"S": ""})["S"],
        "dl": float(item.get("dl", {"N": str(AVGDL)})["N"]),
    }


class _Plan:
    """One query's reads. A word's list is read from one *source* or two: the impact index
    (GSI2, best first) for the whole workspace, or the board's two sort-key ranges of the word's
    partition when the query names a board. First pages are memoised futures (:meth:`start`), so
    a list the substring step needs and a word probe already asked for is read once, and every
    probe is submitted to the I/O pool from the calling thread (pool tasks never wait on pool
    tasks)."""

    def __init__(
        self,
        workspace_id: str,
        cap: int,
        corpus: str = keys.SEARCH_TASKS,
        *,
        scope: tuple[str, ...] | None = None,
        need: int = CAP,
    ) -> None:
        self.ws = workspace_id
        self.cap = cap
        self.corpus = corpus
        self.scope = scope
        self.need = need
        self.requests = 0
        self.skip: set[str] = set()
        self._firsts: dict[tuple[str, bool, str | None], Future[Any]] = {}
        self._lock = threading.Lock()

    def term_pk(self, word: str) -> str:
        return keys.search_term_posting(self.ws, word, "", self.corpus)[0]

    def gram_pk(self, gram: str) -> str:
        return keys.search_gram_posting(self.ws, gram, "", self.corpus)[0]

    def _page(
        self, source: tuple[str, bool, str | None], start: dict[str, Any] | None, limit: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        pk, index, prefix = source
        values: dict[str, Any] = {":pk": {"S": pk}}
        kwargs: dict[str, Any] = {"TableName": _table(), "ExpressionAttributeValues": values, "Limit": limit}
        if index:
            kwargs["IndexName"] = IMPACT_INDEX
            kwargs["KeyConditionExpression"] = "GSI2PK = :pk"
        elif prefix:
            kwargs["KeyConditionExpression"] = "PK = :pk AND begins_with(SK, :doc)"
            values[":doc"] = {"S": prefix}
        else:
            kwargs["KeyConditionExpression"] = "PK = :pk"
        if start:
            kwargs["ExclusiveStartKey"] = start
        with self._lock:
            self.requests += 1
        out = _client().query(**kwargs)
        return out.get("Items", []), out.get("LastEvaluatedKey")

    def _sources(self, pk: str) -> list[tuple[str, bool, str | None]]:
        if self.scope:
            return [(pk, False, prefix) for prefix in self.scope]
        return [(pk, True, None)]

    def _first(self, source: tuple[str, bool, str | None], limit: int) -> Future[Any]:
        """The first page of ``source`` (started once; later calls share the future)."""
        with self._lock:
            future = self._firsts.get(source)
            if future is None:
                future = self._firsts[source] = parallel.submit(self._page, source, None, limit)
        return future

    def start(self, pk: str) -> None:
        """Start the probe of a word's list (its sources' first pages of :data:`PROBE`)."""
        for source in self._sources(pk):
            self._first(source, PROBE)

    def start_gram(self, gram: str) -> None:
        self._first((self.gram_pk(gram), False, None), PAGE)

    def _list(
        self, pk: str
    ) -> tuple[dict[str, dict[str, Any]], list[tuple[tuple[str, bool, str | None], dict[str, Any]]]]:
        """The probe of a word's list: its docs (in read order: best first from the impact
        index) and, per source that goes on, where it stopped (empty: the list is complete)."""
        docs: dict[str, dict[str, Any]] = {}
        rest = []
        for source in self._sources(pk):
            items, last = self._first(source, PROBE).result()
            docs.update({i["SK"]["S"]: _attrs(i) for i in items if i["SK"]["S"] not in self.skip})
            if last is not None:
                rest.append((source, last))
        return docs, rest

    def _complete(self, have: dict[str, dict[str, Any]], rest: list[Any]) -> tuple[dict[str, dict[str, Any]], bool]:
        """Page the list's sources on to the cap; ``True`` when the cap cut it short."""
        rest = list(rest)
        while rest and len(have) < self.cap:
            source, last = rest.pop(0)
            items, last = self._page(source, last, PAGE)
            have.update({i["SK"]["S"]: _attrs(i) for i in items if i["SK"]["S"] not in self.skip})
            if last is not None:
                rest.insert(0, (source, last))
        return have, bool(rest)

    def run_group(self, group: And) -> Any:
        """``(hits, unmatched words, truncated, best_first)`` of one AND group."""
        required = _required(group)
        if not required:
            return {}, [], False, False
        pk = {w: self.term_pk(w) for w in _all_words(group)}
        lists = {w: self._list(pk[w]) for w in required}
        unmatched = [w for w, (docs, rest) in lists.items() if not docs and not rest]
        if unmatched:
            return {}, unmatched, False, False
        done = {w: docs for w, (docs, rest) in lists.items() if not rest}
        df = {w: len(docs) for w, (docs, _) in lists.items()}
        if done:
            driver = min(done, key=lambda w: len(done[w]))
            candidates, truncated = done[driver], False
        elif self.scope is None:
            return self._best_first(group, required, pk, lists)
        else:
            driver = required[0]
            candidates, truncated = self._complete(*lists[driver])
            done[driver] = candidates
            df[driver] = len(candidates)
        return self._evaluate(group, pk, driver, candidates, done, {}, df), [], truncated, False

    def _evaluate(
        self,
        group: And,
        pk: dict[str, str],
        driver: str,
        candidates: dict[str, dict[str, Any]],
        done: dict[str, dict[str, dict[str, Any]]],
        partial: dict[str, dict[str, dict[str, Any]]],
        df: dict[str, int],
    ) -> dict[str, tuple[str, float, int, str]]:
        """The candidates that match ``group``: every other word from a list read in full
        (``done``), from a probe that holds the doc (``partial``), else a point lookup."""
        docs: dict[str, dict[str, dict[str, Any]]] = {d: {driver: p} for d, p in candidates.items()}
        lookups: list[tuple[str, str]] = []
        for w in dict.fromkeys(_all_words(group)):
            if w == driver:
                continue
            if w in done:
                for d in docs:
                    if d in done[w]:
                        docs[d][w] = done[w][d]
                continue
            seen = partial.get(w, {})
            for d in docs:
                if d in seen:
                    docs[d][w] = seen[d]
                else:
                    lookups.append((pk[w], d))
        if lookups:
            with self._lock:
                self.requests += (len(lookups) + BATCH_GET - 1) // BATCH_GET
            found = _batch_get(lookups)
            prefix = {v: w for w, v in pk.items()}
            for (p, d), item in found.items():
                docs[d][prefix[p]] = _attrs(item)
        hits = {}
        for d, postings in docs.items():
            versions = {p["v"] for p in postings.values()}
            if len(versions) != 1:
                continue  # postings of two versions of one doc: being rewritten, the marker decides
            if _eval(group, postings):
                first = next(iter(postings.values()))
                hits[d] = (first["tk"], _score(group, postings, df, self), _fields_of(group, postings), first["v"])
        return hits

    def _best_first(self, group: And, required: list[str], pk: dict[str, str], lists: dict[str, Any]) -> Any:
        """Top hits of a group whose every list goes on past its probe, read best first: the
        driver's list in impact order, block by block, each block's docs checked for the other
        words, until :attr:`need` hits score at least the bound of every unread doc
        (``idf(driver) x impact of the driver's last read posting + sum of idf(w) x the highest
        impact of w``, the first posting of w's probe) or :attr:`cap` postings are read."""
        df = dict.fromkeys(required, self.cap)  # past the probe: every list is longer than PROBE
        n = max(1000, 2 * self.cap)
        idf = {w: _idf(df[w], n) for w in required}

        def impacts(docs: dict[str, dict[str, Any]]) -> list[float]:
            return [impact(p["w"], p["dl"]) for p in docs.values()]

        top = {w: max(impacts(lists[w][0]), default=K1 + 1) for w in required}
        tail = {w: (impacts(lists[w][0]) or [K1 + 1])[-1] for w in required}
        driver = min(required, key=lambda w: (tail[w] * idf[w], required.index(w)))  # the list that falls fastest
        block, rest = lists[driver]
        partial = {w: lists[w][0] for w in required if w != driver}
        hits: dict[str, tuple[str, float, int, str]] = {}
        read = len(block)
        low = tail[driver]
        while True:
            hits.update(self._evaluate(group, pk, driver, block, {}, partial, df))
            if not rest:
                return hits, [], False, False  # the whole list was read: every match is here
            bound = idf[driver] * low + sum(idf[w] * top[w] for w in required if w != driver)
            scores = sorted((h[1] for h in hits.values()), reverse=True)
            if (len(scores) >= self.need and scores[self.need - 1] >= round(bound, 4)) or read >= self.cap:
                return hits, [], True, True
            source, last = rest[0]
            items, last = self._page(source, last, PAGE)
            rest = [(source, last)] if last is not None else []
            read += len(items)
            block = {i["SK"]["S"]: _attrs(i) for i in items if i["SK"]["S"] not in self.skip}
            if items:
                low = impact(*(lambda a: (a["w"], a["dl"]))(_attrs(items[-1])))

    # -- substring: chunk -> vocabulary words (trigram lists) -> their lexemes -> docs
    def _words(self, chunk: str) -> set[str] | None:
        """The workspace's words holding ``chunk``: the shortest of its trigrams' word lists
        (paged to the cap when none ends in its first page), rechecked with ``chunk in word``."""
        lists = []
        for gram in text.word_trigrams(chunk):
            source = (self.gram_pk(gram), False, None)
            items, last = self._first(source, PAGE).result()
            lists.append((source, {i["SK"]["S"] for i in items if "#" not in i["SK"]["S"]}, last))
        done = [words for _, words, last in lists if last is None]
        if done:
            base = min(done, key=len)
        else:
            source, words, last = lists[0]
            while last is not None and len(words) < self.cap:
                items, last = self._page(source, last, PAGE)
                words |= {i["SK"]["S"] for i in items if "#" not in i["SK"]["S"]}
            base = words
        return {w for w in base if chunk in w}

    def substring_lexemes(self, chunks: list[str]) -> list[str]:
        """The lexemes whose docs may hold the pattern: those of the chunk with the fewest (a text
        holding the pattern holds every chunk inside one of its words); their probes are
        started here. Empty when a chunk is in no word of the workspace. Words that are
        stopwords have no postings: a chunk found only inside stopwords cannot drive."""
        best: list[str] | None = None
        for chunk in chunks:
            words = self._words(chunk)
            if not words:
                return []
            lexemes = sorted({lx for lx in map(text.lexeme, words) if lx})
            if lexemes and (best is None or len(lexemes) < len(best)):
                best = lexemes
        for lx in best or []:
            self.start(self.term_pk(lx))
        return best or []

    def substring_docs(self, lexemes: list[str]) -> tuple[dict[str, str], bool]:
        """The task docs posted under ``lexemes`` (up to the cap): candidates the caller rechecks."""
        out: dict[str, str] = {}
        truncated = False
        for lx in lexemes:
            docs, rest = self._list(self.term_pk(lx))
            if rest:
                docs, cut = self._complete(docs, rest)
                truncated |= cut
            out.update({d: p["tk"] for d, p in docs.items() if not keys.search_doc_is_comment(d)})
            if len(out) >= self.cap:
                return out, True
        return out, truncated
