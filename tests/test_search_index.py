"""The search index component against DynamoDB Local: postings, the query plan, staleness,
read-your-write through pending docs, tenant isolation, substring via trigrams."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from domain.search import query as q
from domain.search import text
from domain.search.backend import Doc
from domain.search.dynamo import DynamoIndex
from domain.store import db, keys

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def ws(stack):
    return f"ws_{uuid.uuid4().hex[:12]}"


IX = DynamoIndex()


def task(n: int, title: str, description: str = "") -> Doc:
    tid = f"tk_t{n}"
    return Doc(keys.search_doc_task(tid), tid, title=title, description=description)


def comment(n: int, c: str, body: str) -> Doc:
    tid = f"tk_t{n}"
    return Doc(keys.search_doc_comment(tid, c), tid, comment=body)


def ids(answer):
    return [h.task_id for h in answer.hits]


def search(ws, text, substring=None, **kw):
    return IX.query(ws, q.parse(text), substring=substring, **kw)


def _count(pk_prefix_ws: str) -> int:
    # test helper only: counts this workspace's postings (a Scan, never used by the product)
    client = db.dynamodb_client()
    from domain.store.models import Row

    # every page: a shared table holding megabytes of other tests' text spans several 1 MB pages
    pages = client.get_paginator("scan").paginate(
        TableName=Row.Meta.table_name,
        FilterExpression="begins_with(PK, :p)",
        ExpressionAttributeValues={":p": {"S": pk_prefix_ws}},
        Select="COUNT",
    )
    return sum(page["Count"] for page in pages)


def _postings(ws: str) -> int:
    """Word postings and pending markers of ``ws`` (the substring vocabulary only grows)."""
    return _count(f"W#{ws}#T#") + _count(f"W#{ws}#IXQ")


def test_words_phrases_negation_or(ws):
    IX.index(ws, task(1, "Fix the login redirect", "Users are sent to a blank page after signing in"))
    IX.index(ws, task(2, "Login page redesign", "New colours for the sign-in screen"))
    IX.index(ws, task(3, "Billing export", "CSV export of invoices"))
    assert sorted(ids(search(ws, "login"))) == ["tk_t1", "tk_t2"]
    assert ids(search(ws, "login -redesign")) == ["tk_t1"]
    assert ids(search(ws, '"blank page"')) == ["tk_t1"]
    assert ids(search(ws, '"page blank"')) == []
    assert sorted(ids(search(ws, "invoices or redirect"))) == ["tk_t1", "tk_t3"]
    assert sorted(ids(search(ws, "Signing"))) == ["tk_t1", "tk_t2"]  # stemmed: signing, sign-in -> sign
    assert ids(search(ws, "colour")) == ["tk_t2"]


def test_title_outranks_description_and_comments(ws):
    IX.index(ws, task(1, "Unrelated", "mentions the parser once"))
    IX.index(ws, task(2, "Parser rewrite", "the new grammar"))
    IX.index(ws, task(3, "Other"))
    IX.index(ws, comment(3, "c1", "the parser is slow"))
    answer = search(ws, "parser")
    assert ids(answer) == ["tk_t2", "tk_t1", "tk_t3"]
    fields = {h.task_id: h.field_names() for h in answer.hits}
    assert fields == {"tk_t2": ["title"], "tk_t1": ["description"], "tk_t3": ["comment"]}


def test_accent_and_case_folding(ws):
    IX.index(ws, task(1, "Café NAÏVE Straße"))
    assert ids(search(ws, "cafe naive strasse")) == ["tk_t1"]
    assert ids(search(ws, "CAFÉ")) == ["tk_t1"]


def test_reindex_rewrites_only_that_doc_and_drops_lost_words(ws):
    IX.index(ws, task(1, "alpha beta"))
    IX.index(ws, comment(1, "c1", "gamma"))
    IX.index(ws, task(1, "alpha delta"))
    assert ids(search(ws, "beta")) == []
    assert ids(search(ws, "delta gamma")) == []  # different docs of one task: AND is per doc
    assert ids(search(ws, "gamma")) == ["tk_t1"]
    before = _count(f"W#{ws}#")
    IX.index(ws, task(1, "alpha delta"))  # unchanged text: nothing written
    assert _count(f"W#{ws}#") == before
    IX.remove(ws, keys.search_doc_task("tk_t1"))
    IX.remove(ws, keys.search_doc_comment("tk_t1", "c1"))
    assert _postings(ws) == 0
    assert ids(search(ws, "alpha")) == [] and ids(IX.query(ws, None, substring="alph")) == []


def test_tenant_isolation(ws):
    other = f"ws_{uuid.uuid4().hex[:12]}"
    IX.index(other, task(9, "secret zebra"))
    assert ids(search(ws, "zebra")) == []
    assert ids(search(other, "zebra")) == ["tk_t9"]


def test_pending_docs_answer_before_postings(ws):
    IX.index(ws, task(1, "old words here"))
    pending = [task(1, "fresh words here"), task(2, "brand fresh")]
    answer = search(ws, "fresh", pending=pending)
    assert sorted(ids(answer)) == ["tk_t1", "tk_t2"]
    assert ids(search(ws, "old", pending=pending)) == []  # the pending text replaces the stale one
    assert ids(search(ws, "old", gone=[keys.search_doc_task("tk_t1")])) == []


def test_versions_travel_with_hits(ws):
    doc = task(1, "versioned thing")
    IX.index(ws, doc)
    (hit,) = search(ws, "versioned").hits
    assert hit.versions == {doc.doc_id: doc.version}


def test_unmatched_words_are_reported(ws):
    IX.index(ws, task(1, "apple banana"))
    answer = search(ws, "apple kiwi")
    assert ids(answer) == [] and answer.unmatched == ["kiwi"]


def test_substring_candidates_by_trigrams(ws):
    IX.index(ws, task(1, "Refactor the DataLoader", "uses xyzcache internally"))
    IX.index(ws, task(2, "Loader docs"))
    answer = IX.query(ws, None, substring="ataload")
    assert ids(answer) == ["tk_t1"] and answer.hits[0].substring
    assert ids(IX.query(ws, None, substring="zcach")) == ["tk_t1"]
    assert ids(IX.query(ws, None, substring="nothing-here")) == []


def test_substring_vocabulary_is_posted_once_per_word(ws):
    IX.index(ws, task(1, "Refactor the DataLoader"))
    grams = _count(f"W#{ws}#G#")
    assert grams == sum(len(text.word_trigrams(w)) for w in ("refactor", "the", "dataloader"))
    IX.index(ws, task(2, "dataloader refactor", "The refactor"))  # every word known: no trigram written
    assert _count(f"W#{ws}#G#") == grams
    assert sorted(ids(IX.query(ws, None, substring="ataload"))) == ["tk_t1", "tk_t2"]
    IX.index(ws, task(3, "Preloader"))  # one new word: only its trigrams
    assert _count(f"W#{ws}#G#") == grams + len(text.word_trigrams("preloader"))
    assert sorted(ids(IX.query(ws, None, substring="loader"))) == ["tk_t1", "tk_t2", "tk_t3"]
    # a chunk inside a word of a comment only: the candidates are task docs, none here
    IX.index(ws, comment(4, "c1", "zebrafish"))
    assert ids(IX.query(ws, None, substring="ebrafi")) == []


def test_cost_follows_the_smallest_list(ws):
    for n in range(1, 61):
        IX.index(ws, task(n, f"common filler {n}", "common words everywhere"))
    IX.index(ws, task(99, "rare common"))
    answer = search(ws, "common rare")
    assert ids(answer) == ["tk_t99"]
    # two first-page probes in parallel, the rest checked against the short list: no lookups
    assert answer.requests == 2


def test_task_and_comment_writes_feed_the_index(server_url, owner):
    from tests.rpc import call_tool, ok

    b = ok(call_tool(server_url, owner.token, "create_board", {"workspaceId": owner.workspace_id, "name": "Idx"}))
    col = b["columns"][0]["id"]
    t = ok(
        call_tool(
            server_url,
            owner.token,
            "create_task",
            {"columnId": col, "title": "Quokka migration", "description": "move the wombat"},
        )
    )["task"]
    ws = owner.workspace_id
    from domain.search.repair import drain

    assert _postings(ws) > 0 and not ids(search(ws, "quokka"))  # a write leaves its record; the consumer posts it
    drain(ws)
    assert ids(search(ws, "quokka wombat")) == [t["id"]]
    t = ok(call_tool(server_url, owner.token, "update_task", {"taskId": t["id"], "title": "Platypus migration"}))[
        "task"
    ]
    drain(ws)
    assert ids(search(ws, "quokka")) == [] and ids(search(ws, "platypus")) == [t["id"]]
    # a move leaves the text alone: the postings stay as they are
    before = _count(f"W#{ws}#")
    ok(call_tool(server_url, owner.token, "move_task", {"taskId": t["id"], "columnId": b["columns"][1]["id"]}))
    assert _count(f"W#{ws}#") == before
    c = ok(call_tool(server_url, owner.token, "create_comment", {"taskId": t["id"], "body": "the echidna agrees"}))[
        "comment"
    ]
    drain(ws)
    (hit,) = search(ws, "echidna").hits
    assert hit.task_id == t["id"] and hit.field_names() == ["comment"]
    ok(call_tool(server_url, owner.token, "update_comment", {"commentId": c["id"], "body": "the numbat agrees"}))
    drain(ws)
    assert ids(search(ws, "echidna")) == [] and ids(search(ws, "numbat")) == [t["id"]]
    ok(call_tool(server_url, owner.token, "delete_comment", {"commentId": c["id"]}))
    drain(ws)
    assert ids(search(ws, "numbat")) == []
    ok(call_tool(server_url, owner.token, "archive_task", {"taskId": t["id"]}))
    drain(ws)
    assert ids(search(ws, "platypus")) == []
    assert _postings(ws) == 0  # postings and markers all gone


def test_a_commit_leaves_its_record_and_wakes_the_local_consumer(stack, owner, monkeypatch):
    """Indexing is not part of the write: the commit leaves the pending record (queries read it)
    and only wakes the consumers registered in this process; nothing registers on import."""
    from domain.search import repair
    from domain.store import members, search_marks
    from domain.store.models import SearchPendingRow

    ws = owner.workspace_id

    def write(doc: Doc) -> None:
        def build(tx):
            members.guard(tx, ws, owner.user_id)
            marker = SearchPendingRow(
                *keys.search_pending(ws, doc.doc_id),
                doc=doc.doc_id,
                taskId=doc.task_id,
                version=doc.version,
                title=doc.title,
                description=doc.description,
            )
            search_marks._note(tx, marker, True)  # what put_rows does for a task write

        db.transact(build)

    def marker_left(doc: Doc) -> bool:
        return any(
            m.doc == doc.doc_id for m in SearchPendingRow.query(keys.search_pending_partition(ws), consistent_read=True)
        )

    import domain.search

    monkeypatch.setattr(db, "_commit_hooks", [])  # a process that has not installed the hook
    woken: list[set[str]] = []
    domain.search.on_pending(woken.append)
    try:
        first = Doc(keys.search_doc_task("tk_hook1"), "tk_hook1", title="Axolotl census")
        write(first)
        assert marker_left(first) and woken == []
        domain.search.install_index_hook()
        domain.search.install_index_hook()  # idempotent
        assert db._commit_hooks == [domain.search._wake_after_commit]
        second = Doc(keys.search_doc_task("tk_hook2"), "tk_hook2", title="Axolotl habitat")
        write(second)
        assert (
            marker_left(second) and ids(search(ws, "habitat")) == [] and woken == [{ws}]
        )  # no postings inside the write
    finally:
        domain.search.off_pending(woken.append)
    assert repair.drain(ws) >= 2 and ids(search(ws, "axolotl")) == ["tk_hook1", "tk_hook2"]
    assert not marker_left(first) and not marker_left(second)


def test_the_lambda_entry_installs_the_hook_without_importing_the_indexer(stack):
    """A cold start registers the index hook but loads the indexer (text pipeline, query
    language, DynamoDB backend) only with the first marked transaction."""
    import subprocess
    import sys

    probe = (
        "import sys; import functions.lambda_handler; from domain.store import db; import domain.search; "
        "print(sorted(m for m in sys.modules if m.startswith('domain.search.')), db._commit_hooks == [domain.search._wake_after_commit])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.split() == ["[]", "True"], done.stdout + done.stderr[-2000:]


def artifact(n: int, title: str, body: str) -> Doc:
    aid = f"ar_a{n}"
    return Doc(keys.search_doc_artifact(aid), aid, title=title, body=body)


def test_artifact_corpus_is_apart_from_tasks(ws):
    """An artifact's title + body is a doc of its own corpus: its postings live under other
    partitions, so a task query never sees them and an artifact query never sees tasks."""
    IX.index(ws, task(1, "Quokka sighting", "near the dataloader"), fresh=True)
    IX.index(ws, artifact(1, "Findings", "The quokka colony grew; the dataloader cache was cold."), fresh=True)
    A = keys.SEARCH_ARTIFACTS
    assert ids(search(ws, "quokka")) == ["tk_t1"]
    assert ids(search(ws, "quokka", corpus=A)) == ["ar_a1"]
    assert ids(search(ws, "colony")) == [] and ids(search(ws, "colony", corpus=A)) == ["ar_a1"]
    (hit,) = search(ws, "colony cache", corpus=A).hits
    assert hit.field_names() == ["body"] and hit.versions == {
        "A#ar_a1": artifact(1, "Findings", "The quokka colony grew; the dataloader cache was cold.").version
    }
    assert ids(search(ws, '"colony grew"', corpus=A)) == ["ar_a1"] and ids(search(ws, '"grew colony"', corpus=A)) == []
    # the substring vocabulary is per corpus too
    assert ids(IX.query(ws, None, substring="olon", corpus=A)) == ["ar_a1"]
    assert ids(IX.query(ws, None, substring="olon")) == []
    assert sorted(ids(IX.query(ws, None, substring="ataload", corpus=A))) == ["ar_a1"]
    assert _count(f"W#{ws}#AT#") > 0 and _count(f"W#{ws}#AG#") > 0
    # withdrawal removes the artifact's postings (its vocabulary words stay, like tasks')
    IX.remove(ws, keys.search_doc_artifact("ar_a1"))
    assert ids(search(ws, "colony", corpus=A)) == [] and _count(f"W#{ws}#AT#") == 0
    assert ids(search(ws, "quokka")) == ["tk_t1"]


def test_artifact_pending_markers_live_in_their_own_partition(ws):
    from domain.store import search_marks
    from domain.store.models import SearchPendingRow

    class Tx:  # collects what mark_artifact adds to a transaction
        def __init__(self):
            self.saved: list = []

        def save(self, item):
            self.saved.append(item)

    tx = Tx()
    search_marks.mark_artifact(tx, ws, "ar_p1", title="Plan", body="migrate the numbat")
    (marker,) = tx.saved
    assert isinstance(marker, SearchPendingRow) and (marker.PK, marker.SK) == (f"W#{ws}#AIXQ", "A#ar_p1")
    ((noted, fresh, saved),) = search_marks.noted(tx)
    assert fresh and saved and keys.search_pending_workspace(noted.PK) == ws
    from domain.search.writes import doc_of

    doc = doc_of(noted)
    assert doc.body == "migrate the numbat" and doc.corpus == keys.SEARCH_ARTIFACTS
    assert ids(search(ws, "numbat", corpus=keys.SEARCH_ARTIFACTS, pending=[doc])) == ["ar_p1"]


def test_many_or_branches_never_starve_the_io_pool(ws):
    """Every probe is submitted from the calling thread (no pool task waits on another), so a
    query with more OR branches than the pool has threads still answers."""
    from domain.store import parallel

    IX.index(ws, task(1, "alpha7 beta"), fresh=True)
    words = [f"alpha{i}" for i in range(parallel.MAX_WORKERS * 2)]
    answer = search(ws, " or ".join(words), substring=None)
    assert ids(answer) == ["tk_t1"]
