"""The search query language: PostgreSQL's ``websearch_to_tsquery`` semantics, our own parser.

Total: every string parses (no exception for any input); the result is an AST of
:class:`Term`, :class:`Phrase`, :class:`Not`, :class:`And`, :class:`Or` or ``None`` (no lexemes).

The lexer mirrors Postgres' ``gettoken_query_websearch`` state machine:

- waiting for an operand: ``-`` is NOT (stackable), ``"`` opens a phrase running to the next
  ``"`` or the end, the tsquery operator characters ``! & | ( ) <`` are skipped, anything else
  starts a word that ends at whitespace, one of those characters, ``"`` or ``:``;
- waiting for an operator: ``"`` or any other non-space starts the next operand with an
  implicit AND; ``or`` (any case) is OR only when followed by a non-word character and, later,
  some operand (so a leading or trailing ``or`` is a word).

Operators bind NOT > AND > OR (phrases inside an operand bind tightest); an operator missing an
operand is dropped, as is an operand with no lexemes (Postgres' stop-word cleanup).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.search import text as _text

MAX_QUERY_CHARS = 1000
_SKIP = set("!&|()<")


@dataclass(frozen=True)
class Term:
    lexeme: str


@dataclass(frozen=True)
class Phrase:
    """Lexemes in order; ``offsets[i]`` is the position of ``lexemes[i]`` relative to the first
    (gaps where stopwords were dropped)."""

    lexemes: tuple[str, ...]
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class Not:
    item: object


@dataclass(frozen=True)
class And:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Any, ...]


Node = Term | Phrase | Not | And | Or


# -- lexer -------------------------------------------------------------------------------------
def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch in "-_"


def _or_operator(s: str, i: int) -> bool:
    """Postgres' ``parse_or_operator``: ``or`` followed by a non-word char and then an operand."""
    if s[i : i + 2].lower() != "or":
        return False
    j = i + 2
    if j >= len(s) or _is_word_char(s[j]):
        return False
    j += 1
    while j < len(s):
        if not s[j].isspace():
            return True
        j += 1
    return False


def _read_word(s: str, i: int) -> tuple[str, int]:
    """A word runs to whitespace, ``! & | ( ) <``, ``"`` or (after its first character) ``:``,
    where Postgres would read weight/prefix modifiers, which websearch ignores."""
    start, n = i, len(s)
    while i < n:
        ch = s[i]
        if ch.isspace() or ch in _SKIP or ch == '"' or (ch == ":" and i > start):
            break
        i += 1
    return s[start:i], i


def tokens(s: str) -> list[tuple[str, str | None]]:
    """``(kind, value)`` pairs: ``("val", word)``, ``("phrase", text)``, ``("not"|"and"|"or", None)``."""
    out: list[tuple[str, str | None]] = []
    i, n = 0, len(s)
    want_operand = True
    while i < n:
        ch = s[i]
        if want_operand:
            if ch == "-":
                out.append(("not", None))
                i += 1
            elif ch == '"':
                j = s.find('"', i + 1)
                end = n if j < 0 else j
                out.append(("phrase", s[i + 1 : end]))
                i = n if j < 0 else j + 1
                want_operand = False
            elif ch in _SKIP or ch.isspace():
                i += 1
            else:
                word, i = _read_word(s, i)
                out.append(("val", word))
                want_operand = False
        else:
            if ch == '"':
                out.append(("and", None))
                want_operand = True
            elif _or_operator(s, i):
                out.append(("or", None))
                i += 2
                want_operand = True
            elif ch.isspace():
                i += 1
            else:
                out.append(("and", None))
                want_operand = True
    return out


# -- operands ----------------------------------------------------------------------------------
_STOP = object()  # an operand without lexemes


def _operand(text: str, normalise: Callable[[str], str | None]) -> Any:
    words = _text.lexemes(text, normalise)
    kept = [(pos, w) for pos, w in enumerate(words) if w is not None]
    if not kept:
        return _STOP
    if len(kept) == 1:
        return Term(kept[0][1])
    first = kept[0][0]
    return Phrase(tuple(w for _, w in kept), tuple(pos - first for pos, _ in kept))


# -- parser (precedence climbing over the token list) -------------------------------------------
def _clean(node: Any) -> Any:
    """Drop stop operands the way Postgres' cleanup does."""
    if node is _STOP or node is None:
        return _STOP
    if isinstance(node, Not):
        inner = _clean(node.item)
        return _STOP if inner is _STOP else Not(inner)
    if isinstance(node, (And, Or)):
        kind = type(node)
        items: list[Any] = []
        for item in node.items:
            item = _clean(item)
            if item is _STOP:
                continue
            items.extend(item.items if isinstance(item, kind) else [item])
        if not items:
            return _STOP
        return items[0] if len(items) == 1 else kind(tuple(items))
    return node


def parse(query: str, normalise: Callable[[str], str | None] = _text.lexeme) -> Node | None:
    """The AST of ``query`` (``None`` when it holds no searchable word). Never raises."""
    toks = tokens(query)
    pos = 0

    def unary() -> Any:
        nonlocal pos
        negations = 0
        while pos < len(toks) and toks[pos][0] == "not":
            negations += 1
            pos += 1
        if pos >= len(toks) or toks[pos][0] not in ("val", "phrase"):
            return _STOP  # a dangling NOT
        _kind, value = toks[pos]
        pos += 1
        node = _operand(value or "", normalise)
        for _ in range(negations):
            node = Not(node)
        return node

    def conj() -> And:
        nonlocal pos
        items = [unary()]
        while pos < len(toks) and toks[pos][0] == "and":
            pos += 1
            items.append(unary())
        return And(tuple(items))

    def disj() -> Or:
        nonlocal pos
        items = [conj()]
        while pos < len(toks) and toks[pos][0] == "or":
            pos += 1
            items.append(conj())
        return Or(tuple(items))

    tree = _clean(disj())
    return None if tree is _STOP else tree


# -- normal form (what the golden file stores) ---------------------------------------------------
def normal(node: Any) -> object:
    """A JSON-able canonical form: ``["term", x]``, ``["phrase", [[x, offset], …]]``,
    ``["not", n]``, ``["and", [n…]]``, ``["or", [n…]]`` or ``None``."""
    if node is None:
        return None
    if isinstance(node, Term):
        return ["term", node.lexeme]
    if isinstance(node, Phrase):
        return ["phrase", [[w, o] for w, o in zip(node.lexemes, node.offsets, strict=True)]]
    if isinstance(node, Not):
        return ["not", normal(node.item)]
    kind = "and" if isinstance(node, And) else "or"
    return [kind, [normal(item) for item in node.items]]


def positives(node: Any) -> bool:
    """Whether a match needs at least one positive word (``-foo`` alone does not)."""
    if node is None or isinstance(node, Not):
        return False
    if isinstance(node, (Term, Phrase)):
        return True
    if isinstance(node, And):
        return any(positives(item) for item in node.items)
    return all(positives(item) for item in node.items)
