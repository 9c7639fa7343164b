"""Source-preserving edits of JSON and JSONC files (comments and trailing commas allowed).

Used by ``jentrix connect`` (functions/cli_connect.py) to add or remove one entry in a client's
configuration file while leaving every other byte alone: other servers, their formatting, key
order and comments. The usual parse / change / dump round trip would reformat the whole file and
drop the comments VS Code's ``mcp.json`` allows.

:class:`JsoncDoc` parses the text into a small syntax tree that remembers where each member
and element starts and ends, turns an edit into text insertions and deletions at those offsets,
and then parses the result again: unless it holds exactly the data the edit should give (the old
data with that one change), the edit raises :class:`JsoncError` and nothing is written. So a
layout this module does not foresee can only make it refuse, never corrupt a file.

Libraries considered (docs/connect.md, "JSON files"): ``json-five`` round-trips comments but
edits through its own model classes; ``jsonc-edit`` runs a Node daemon it installs at first use;
``json5kit`` has no block comments. The edits needed here are three (set a member, delete a
member or element, append an element), so a small scanner was the smaller dependency.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JsoncDoc", "JsoncError", "loads"]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
_LITERALS = {"true": True, "false": False, "null": None}


class JsoncError(ValueError):
    """The text is not JSON/JSONC, or an edit could not be made without changing other data."""


@dataclass
class _Item:
    key: str | None  # None for an array element
    start: int  # offset of the key (member) or of the value (element)
    node: _Node
    comma: int | None = None  # offset of the comma after it, if any


@dataclass
class _Node:
    start: int
    end: int  # one past the last character
    value: Any
    items: list[_Item] = field(default_factory=list)  # members or elements (objects and arrays)
    kind: str = "scalar"  # "object", "array" or "scalar"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def fail(self, what: str) -> JsoncError:
        line = self.text.count("\n", 0, self.i) + 1
        return JsoncError(f"{what} at line {line}")

    def skip(self) -> None:
        """Whitespace, ``// line`` and ``/* block */`` comments."""
        t, n = self.text, len(self.text)
        while self.i < n:
            c = t[self.i]
            if c in " \t\r\n\ufeff":
                self.i += 1
            elif t.startswith("//", self.i):
                nl = t.find("\n", self.i)
                self.i = n if nl < 0 else nl + 1
            elif t.startswith("/*", self.i):
                end = t.find("*/", self.i + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.i = end + 2
            else:
                return

    def value(self) -> _Node:
        self.skip()
        t, start = self.text, self.i
        if start >= len(t):
            raise self.fail("unexpected end of text")
        c = t[start]
        if c == "{":
            return self.container("}", start, keyed=True)
        if c == "[":
            return self.container("]", start, keyed=False)
        if c == '"':
            m = _STRING.match(t, start)
            if not m:
                raise self.fail("bad string")
            self.i = m.end()
            return _Node(start, m.end(), json.loads(m.group()))
        for word, val in _LITERALS.items():
            if t.startswith(word, start):
                self.i = start + len(word)
                return _Node(start, self.i, val)
        m = _NUMBER.match(t, start)
        if not m or m.end() == start:
            raise self.fail(f"unexpected {c!r}")
        self.i = m.end()
        return _Node(start, m.end(), json.loads(m.group()))

    def container(self, close: str, start: int, *, keyed: bool) -> _Node:
        self.i += 1
        items: list[_Item] = []
        value: Any = {} if keyed else []
        while True:
            self.skip()
            if self.text.startswith(close, self.i):
                self.i += 1
                return _Node(start, self.i, value, items, "object" if keyed else "array")
            if items and items[-1].comma is None:
                raise self.fail(f"expected ',' or {close!r}")
            item_start = self.i
            key = None
            if keyed:
                m = _STRING.match(self.text, self.i)
                if not m:
                    raise self.fail("expected a quoted key")
                key = json.loads(m.group())
                self.i = m.end()
                self.skip()
                if not self.text.startswith(":", self.i):
                    raise self.fail("expected ':'")
                self.i += 1
            node = self.value()
            item = _Item(key, item_start, node)
            items.append(item)
            if keyed:
                value[key] = node.value
            else:
                value.append(node.value)
            self.skip()
            if self.text.startswith(",", self.i):
                item.comma = self.i
                self.i += 1


def _parse(text: str) -> _Node:
    p = _Parser(text)
    root = p.value()
    p.skip()
    if p.i != len(text):
        raise p.fail("unexpected text after the value")
    return root


def loads(text: str) -> Any:
    """The data of a JSON/JSONC text (comments and trailing commas allowed); raises JsoncError."""
    return _parse(text).value


def _indent_unit(text: str) -> str:
    m = re.search(r"\n([ \t]+)\S", text)
    return m.group(1) if m else "  "


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[start:])
    return m.group() if m else ""


class JsoncDoc:
    """One JSON/JSONC document being edited. ``text`` is its current source; ``data`` its value.

    An empty (or whitespace-only) text is an empty object that has not been written yet: the
    first edit lays it out with two-space indentation and a final newline."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data: Any = {} if not text.strip() else loads(text)
        if not isinstance(self.data, dict):
            raise JsoncError("the file holds JSON, but not an object at the top")

    # -- reading -------------------------------------------------------------------------------
    def get(self, path: list[str | int], default: Any = None) -> Any:
        cur = self.data
        for k in path:
            if (isinstance(cur, dict) and isinstance(k, str) and k in cur) or (
                isinstance(cur, list) and isinstance(k, int) and 0 <= k < len(cur)
            ):
                cur = cur[k]
            else:
                return default
        return cur

    # -- edits ---------------------------------------------------------------------------------
    def set(self, path: list[str], value: Any) -> None:
        """Set the member at ``path`` (object keys), creating the objects on the way."""
        expected = copy.deepcopy(self.data)
        cur = expected
        for k in path[:-1]:
            if not isinstance(cur.get(k), dict):
                if k in cur:
                    raise JsoncError(f"{'.'.join(path[:-1])} is not an object in this file")
                cur[k] = {}
            cur = cur[k]
        cur[path[-1]] = copy.deepcopy(value)
        if self._one_line_json():  # nothing to keep but the data: lay it out readably
            self._commit(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", expected)
            return
        root = _parse(self.text)
        node, depth = root, 0
        while depth < len(path) - 1:
            item = next((it for it in node.items if it.key == path[depth]), None)
            if item is None:
                break
            node, depth = item.node, depth + 1
        if node.kind != "object":
            raise JsoncError(f"{'.'.join(path[:depth])} is not an object in this file")
        if depth == len(path) - 1:
            existing = next((it for it in node.items if it.key == path[-1]), None)
            if existing is not None:
                indent = _line_indent(self.text, existing.start)
                body = self._dump(
                    value,
                    indent,
                    multiline="\n" in self.text[existing.node.start : existing.node.end] or self._multiline(node),
                )
                self._commit(self.text[: existing.node.start] + body + self.text[existing.node.end :], expected)
                return
        nested: Any = copy.deepcopy(value)
        for k in reversed(path[depth + 1 :]):
            nested = {k: nested}
        self._commit(self._insert(node, path[depth], nested), expected)

    def delete(self, path: list[str | int]) -> None:
        """Remove the member or element at ``path``; nothing happens when it is not there."""
        if self.get(path, _MISSING) is _MISSING:
            return
        expected = copy.deepcopy(self.data)
        parent = expected
        for k in path[:-1]:
            parent = parent[k]
        del parent[path[-1]]
        root = _parse(self.text)
        node = root
        for k in path[:-1]:
            node = node.items[k].node if isinstance(k, int) else next(it for it in node.items if it.key == k).node
        index = (
            path[-1] if isinstance(path[-1], int) else next(i for i, it in enumerate(node.items) if it.key == path[-1])
        )
        self._commit(self._remove(node, index), expected)

    def append(self, path: list[str], value: Any) -> None:
        """Append ``value`` to the array at ``path`` (created when missing)."""
        current = self.get(path, _MISSING)
        if current is _MISSING:
            self.set(path, [value])
            return
        if not isinstance(current, list):
            raise JsoncError(f"{'.'.join(path)} is not an array in this file")
        expected = copy.deepcopy(self.data)
        cur = expected
        for k in path:
            cur = cur[k]
        cur.append(copy.deepcopy(value))
        node = _parse(self.text)
        for k in path:
            node = next(it for it in node.items if it.key == k).node
        self._commit(self._insert(node, None, value), expected)

    def _one_line_json(self) -> bool:
        """Empty, or plain JSON (no comments) on a single line, such as ``{}``."""
        body = self.text.strip()
        if "\n" in body:
            return False
        try:
            json.loads(body or "{}")
        except ValueError:
            return False
        return True

    # -- text surgery --------------------------------------------------------------------------
    def _commit(self, text: str, expected: Any) -> None:
        try:
            got = loads(text)
        except JsoncError as exc:  # pragma: no cover - a layout the edits do not foresee
            raise JsoncError(f"the edit would leave invalid JSON ({exc}); edit the file by hand") from None
        if got != expected:  # pragma: no cover - same
            raise JsoncError("the edit would change other data in the file; edit it by hand")
        self.text, self.data = text, got

    def _multiline(self, node: _Node) -> bool:
        inner = self.text[node.start + 1 : node.end - 1]
        return "\n" in inner or not node.items

    def _dump(self, value: Any, indent: str, *, multiline: bool = True) -> str:
        if not multiline:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=_indent_unit(self.text), ensure_ascii=False).replace("\n", "\n" + indent)

    def _insert(self, node: _Node, key: str | None, value: Any) -> str:
        t = self.text
        close = node.end - 1
        prefix = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
        if not node.items:
            base = _line_indent(t, node.start)
            indent = base + _indent_unit(t)
            body = indent + prefix + self._dump(value, indent)
            inner = t[node.start + 1 : close]
            if not inner.strip():
                return t[: node.start + 1] + "\n" + body + "\n" + base + t[close:]
            return t[: node.start + 1] + "\n" + body + t[node.start + 1 :]
        last = node.items[-1]
        trailing = last.comma is not None
        if not self._multiline(node):
            anchor = last.comma + 1 if trailing else last.node.end
            body = prefix + self._dump(value, "", multiline=False)
            return t[:anchor] + (" " + body + "," if trailing else ", " + body) + t[anchor:]
        indent = _line_indent(t, last.start)
        body = indent + prefix + self._dump(value, indent) + ("," if trailing else "")
        anchor = last.comma + 1 if trailing else last.node.end
        nl = t.find("\n", anchor, close)
        # nl < 0: the closing bracket sits on the last item's line
        out = t[:anchor] + "\n" + body + t[anchor:] if nl < 0 else t[: nl + 1] + body + "\n" + t[nl + 1 :]
        if not trailing:
            out = out[: last.node.end] + "," + out[last.node.end :]
        return out

    def _remove(self, node: _Node, index: int) -> str:
        t = self.text
        item = node.items[index]
        line_start = t.rfind("\n", 0, item.start) + 1
        own_line = not t[line_start : item.start].strip()
        end = item.comma + 1 if item.comma is not None else item.node.end
        rest = re.match(r"[ \t]*(?://[^\n]*)?\r?\n", t[end:])  # a comment after it on its line goes with it
        if own_line and rest:
            start, end = line_start, end + rest.end()
        else:
            start = item.start
            end += len(re.match(r"[ \t]*", t[end:]).group())  # type: ignore[union-attr]
        last_without_comma = index == len(node.items) - 1 and item.comma is None and index > 0
        if last_without_comma and not (own_line and rest):
            out = t[: node.items[index - 1].comma] + t[item.node.end :]  # drop ", item" on one line
        else:
            out = t[:start] + t[end:]
            if last_without_comma:  # the previous item is now the last: its comma goes
                comma = node.items[index - 1].comma
                out = out[:comma] + out[comma + 1 :]  # type: ignore[index,operator]
        close = node.end - 1 - (len(t) - len(out))
        if not out[node.start + 1 : close].strip():
            out = out[: node.start + 1] + out[close:]
        return out


_MISSING = object()
