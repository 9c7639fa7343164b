"""Text processing shared by the index and the query parser: tokenise, fold, stem.

The tokeniser copies the word rules of PostgreSQL's default text-search parser for the cases
that matter here (runs of letters and digits are words; ``_`` and other punctuation separate
words; a hyphenated compound such as ``test-case`` yields the compound and then its parts, as
consecutive positions), so a quoted phrase in a query lines up with the positions the index
stored. Folding is stdlib :mod:`unicodedata` (NFKC, casefold, NFKD, combining marks dropped:
``Naïve Café Straße`` -> ``naive cafe strasse``). Stemming is Snowball English through
PyStemmer, else the pure-Python ``snowballstemmer`` (cached), else none (logged once).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import unicodedata
from collections.abc import Callable, Iterator

from domain.store import keys

log = logging.getLogger(__name__)

#: one word part: letters and digits of any script (``\w`` without ``_``)
_PART = r"[^\W_]+"
_WORD = re.compile(rf"{_PART}(?:-{_PART})*")

#: a small English stopword list: never indexed (hot partitions), positions still counted
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with".split()
)


def _load_stemmer() -> Callable[[str], str]:
    try:
        import Stemmer  # PyStemmer (C Snowball)

        stem = Stemmer.Stemmer("english")
        stem.maxCacheSize = 10000
        stem_word: Callable[[str], str] = stem.stemWord
        return stem_word
    except ImportError:  # pragma: no cover - depends on the environment
        pass
    try:  # pragma: no cover
        import snowballstemmer

        return functools.lru_cache(maxsize=20000)(snowballstemmer.stemmer("english").stemWord)
    except ImportError:  # pragma: no cover
        log.warning("neither PyStemmer nor snowballstemmer is installed: search does not stem")
        return lambda word: word


stem: Callable[[str], str] = _load_stemmer()


def fold(text: str) -> str:
    """Case- and accent-insensitive form: NFKC, casefold, NFKD, combining marks dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def raw_words(text: str) -> Iterator[str]:
    """The word tokens of ``text`` in order, as PostgreSQL's default parser splits them (not yet
    normalised): ``test-case`` gives ``test-case``, ``test``, ``case``; ``a_b`` gives ``a``, ``b``."""
    for match in _WORD.finditer(text):
        word = match.group(0)
        if "-" in word:
            parts = word.split("-")
            # PostgreSQL keeps a compound only when every part after the first starts with a
            # letter (``beta-1`` is the word ``beta`` and the number ``-1``)
            if all(not p[0].isdigit() for p in parts[1:]):
                yield word
            yield from parts
        else:
            yield word


def simple(word: str) -> str:
    """The ``'simple'`` configuration: lower case only (what the Postgres oracle compares)."""
    return word.lower()


#: the longest lexeme kept whole, in UTF-8 bytes. A word posting's partition key
#: (:func:`domain.store.keys.search_term_posting`) holds the lexeme, and DynamoDB refuses a
#: partition key over 2,048 bytes (a sort key over 1,024), so a longer "word" (a base64 blob,
#: a run of 20,000 ``x``) is cut by :func:`cap`
MAX_TERM_BYTES = 200
_CUT_BYTES = 160


def cap(lexeme_: str) -> str:
    """``lexeme_`` itself when it is at most :data:`MAX_TERM_BYTES` long in UTF-8; else its first
    160 bytes (cut on a character boundary), ``~`` and 16 hex digits of the BLAKE2s digest of
    the whole lexeme. Lexemes never hold ``~``, so a capped form never equals a real word; the
    same long word in a query caps to the same term, so it is still found exactly."""
    raw = lexeme_.encode()
    if len(raw) <= MAX_TERM_BYTES:
        return lexeme_
    head = raw[:_CUT_BYTES].decode("utf-8", errors="ignore")
    return f"{head}~{hashlib.blake2s(raw, digest_size=8).hexdigest()}"


def lexeme(word: str) -> str | None:
    """The indexed form of one word: folded and stemmed, then capped (:func:`cap`); ``None`` for
    a stopword."""
    folded = fold(word)
    if folded in STOPWORDS:
        return None
    if "-" in folded:
        return cap("-".join(stem(p) for p in folded.split("-")))
    return cap(stem(folded))


def lexemes(text: str, normalise: Callable[[str], str | None] = lexeme) -> list[str | None]:
    """Normalised tokens by position (index 0 = position 1); ``None`` marks a dropped stopword."""
    return [normalise(word) for word in raw_words(text)]


#: the substring vocabulary leaves out longer runs (hashes, base64): they would cost many postings
MAX_VOCAB_WORD = 64


def vocabulary(text: str) -> set[str]:
    """The words of ``text`` that enter the workspace's substring vocabulary: folded runs of
    letters and digits of 3 to :data:`MAX_VOCAB_WORD` characters (shorter ones hold no trigram)."""
    return {w for w in re.findall(_PART, fold(text)) if 3 <= len(w) <= MAX_VOCAB_WORD}


def word_trigrams(word: str) -> list[str]:
    """The three-character windows of one vocabulary word, distinct, in order. Unlike
    ``pg_trgm`` no padded windows: a substring
    may sit anywhere inside a word, so the query never asks for them. Defined beside the keys
    (:func:`domain.store.keys.word_trigrams`), so the workspace purge finds the same partitions."""
    return keys.word_trigrams(word)


def pattern_chunks(pattern: str) -> list[str]:
    """The runs of letters and digits of a substring pattern that can be looked up (3 characters
    or more), folded: a text containing the pattern has each inside one of its words."""
    return list(dict.fromkeys(c for c in re.findall(_PART, fold(pattern)) if len(c) >= 3))


def pattern_trigrams(pattern: str) -> set[str]:
    """Trigrams every word containing a chunk of ``pattern`` must hold: only the windows inside
    the pattern's own characters; empty for patterns under 3 characters."""
    return {g for chunk in pattern_chunks(pattern) for g in word_trigrams(chunk)}
