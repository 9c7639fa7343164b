"""The search query parser against PostgreSQL's own answers (tests/golden/websearch_tsquery.json,
written by scripts/search_oracle.py), plus totality: no query text ever raises."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from domain.search import query as q
from domain.search import text

GOLDEN = json.loads((Path(__file__).parent / "golden" / "websearch_tsquery.json").read_text())

# Where our *word tokeniser* knowingly differs from Postgres' default parser (the operator
# semantics never differ): Postgres has special token types for e-mail addresses, URLs, file
# paths, version numbers and signed integers; we split those into plain words, so a search for a
# part of them (``example``, ``42``) finds them. Task keys (``ABC-42``) are resolved separately.
DEVIATIONS = {
    "ABC-42": ["phrase", [["abc", 0], ["42", 1]]],
    "abc-42 or xyz": ["or", [["phrase", [["abc", 0], ["42", 1]]], ["term", "xyz"]]],
    "beta-1 release": ["and", [["phrase", [["beta", 0], ["1", 1]]], ["term", "release"]]],
    "a@b.com": ["phrase", [["a", 0], ["b", 1], ["com", 2]]],
    "https://example.com/x?y=1": [
        "and",
        [["term", "https"], ["phrase", [["example", 0], ["com", 1], ["x", 2], ["y", 3], ["1", 4]]]],
    ],
    "<script>alert(1)</script>": [
        "and",
        [["phrase", [["script", 0], ["alert", 1]]], ["term", "1"], ["term", "script"]],
    ],
    "v1.2.3 build": ["and", [["phrase", [["v1", 0], ["2", 1], ["3", 2]]], ["term", "build"]]],
}


def test_golden_file_is_big_enough():
    assert len(GOLDEN["cases"]) >= 60


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: repr(c["query"]))
def test_parser_matches_postgres(case):
    ours = q.normal(q.parse(case["query"], text.simple))
    want = DEVIATIONS.get(case["query"], case["normal"])
    assert ours == want, f"{case['query']!r}: postgres says {case['tsquery']!r}"


def test_deviations_are_real_cases():
    queries = {c["query"] for c in GOLDEN["cases"]}
    assert set(DEVIATIONS) <= queries


def test_production_normalisation_folds_and_stems():
    tree = q.normal(q.parse('Running "Café Queries" -Naïve'))
    assert tree == ["and", [["term", "run"], ["phrase", [["cafe", 0], ["queri", 1]]], ["not", ["term", "naiv"]]]]


def test_stopwords_leave_phrase_gaps():
    assert q.normal(q.parse('"state of the art"')) == ["phrase", [["state", 0], ["art", 3]]]
    assert q.parse("the of a") is None


def test_positives():
    assert not q.positives(q.parse("-foo"))
    assert not q.positives(q.parse("-foo or -bar"))
    assert not q.positives(q.parse("foo or -bar"))
    assert q.positives(q.parse("foo -bar"))
    assert q.positives(q.parse("foo or bar"))


def test_never_raises_on_noise():
    rng = random.Random(11)
    alphabet = "aZ09 -\"'()!&|<>:*\\@#$%^_.,;~`{}[]?/+=éß日🚀\t\n\u0000\u200b"
    for _ in range(3000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        q.normal(q.parse(s))
    q.parse("x" * q.MAX_QUERY_CHARS)
    q.parse('"' * q.MAX_QUERY_CHARS)
    q.parse("-" * q.MAX_QUERY_CHARS)
    q.parse(" or" * (q.MAX_QUERY_CHARS // 3))
