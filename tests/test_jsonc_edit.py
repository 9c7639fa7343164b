"""functions/jsonc_edit.py: edits touch only their entry, in JSON and JSONC layouts.

A property test over generated documents (indentations 2, 4 and tabs) checks that setting an
entry gives exactly the old data plus the entry, that removing it again gives the original text
back byte for byte, and that setting the same value twice changes nothing; the examples pin
the JSONC cases (comments next to the entry and its neighbours, trailing commas) and the refusals.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.jsonc_edit import JsoncDoc, JsoncError, loads

_keys = st.text(alphabet="abcdefghij-_", min_size=1, max_size=6)
_scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3), max_leaves=8
)


@settings(max_examples=60, deadline=None)
@given(
    doc=st.dictionaries(_keys, _values, max_size=4),
    servers=st.dictionaries(_keys.filter(lambda k: k != "jentrix"), _values, max_size=3),
    entry=_values,
    indent=st.sampled_from([2, 4, "\t"]),
)
def test_set_then_delete_restores_the_text(doc, servers, entry, indent):
    original = json.dumps({**doc, "mcpServers": servers}, indent=indent) + "\n"
    d = JsoncDoc(original)
    d.set(["mcpServers", "jentrix"], entry)
    assert d.data == {**doc, "mcpServers": {**servers, "jentrix": entry}}
    assert json.loads(d.text) == d.data, "still plain JSON"
    once = d.text
    d.set(["mcpServers", "jentrix"], entry)
    assert d.text == once
    d.delete(["mcpServers", "jentrix"])
    assert d.text == original


JSONC = """{
  // one comment on top
  "servers": {
    "a": {"command": "x"}, // about a
    /* about b */
    "b": {
      "command": "y",
    },
  },
}
"""


def test_jsonc_comments_and_trailing_commas_survive_an_insert_and_a_removal():
    d = JsoncDoc(JSONC)
    d.set(["servers", "jentrix"], {"type": "stdio"})
    assert d.text.count("// about a") == 1 and "/* about b */" in d.text and "// one comment on top" in d.text
    assert '    "jentrix": {\n      "type": "stdio"\n    },\n  },' in d.text, "the trailing-comma style is followed"
    d.delete(["servers", "jentrix"])
    assert d.text == JSONC
    d.delete(["servers", "a"])  # a neighbour: its own comment goes with it, the others stay
    assert (
        "// about a" not in d.text
        and "/* about b */" in d.text
        and loads(d.text) == {"servers": {"b": {"command": "y"}}}
    )


def test_replacing_an_entry_keeps_its_place():
    d = JsoncDoc('{\n  "servers": {\n    "jentrix": {"old": 1},\n    "z": 2\n  }\n}\n')
    d.set(["servers", "jentrix"], {"new": 2})
    assert list(d.data["servers"]) == ["jentrix", "z"] and d.data["servers"]["jentrix"] == {"new": 2}


def test_one_line_files_are_laid_out_and_empty_files_started():
    d = JsoncDoc("{}")
    d.set(["servers", "jentrix"], {"k": 1})
    assert d.text == '{\n  "servers": {\n    "jentrix": {\n      "k": 1\n    }\n  }\n}\n'
    assert JsoncDoc("  \n").data == {}


@pytest.mark.parametrize("text", ['{"a": 1,,}', '{"a": 1', "[1, 2]", '{"a": /* open', "{a: 1}"])
def test_what_it_cannot_read_is_refused(text):
    with pytest.raises(JsoncError):
        JsoncDoc(text)


def test_an_edit_through_a_non_object_is_refused():
    d = JsoncDoc('{"servers": [1]}\n')
    with pytest.raises(JsoncError):
        d.set(["servers", "jentrix"], {})
    assert d.text == '{"servers": [1]}\n'
