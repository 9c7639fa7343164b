"""The layers of docs/architecture.md, pinned: who may import what, and where keys are spelled.

* a tool module imports the store, the core and the shared argument/view modules, never another
  tool module;
* ``functions/`` and ``infra/`` never import a tool module (they receive the registry);
* the store imports nothing above it (no tools, no pipeline, no tool errors: store errors stay
  store errors until the tool boundary maps them);
* key prefixes and sort-key literals appear only in ``domain/store/keys.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_TOOL_MODULES = {"domain.tools.args", "domain.tools.views"}
STORE_MAY_IMPORT = {"domain.clock", "domain.ids", "domain.settings"}
KEY_LITERAL = re.compile(
    r"(BOARD|WS|USER|TOKEN|BACT|TACT|COL|MEMBER|TASKNO|SLUG|EMAIL|RATE|IDEM)#|(?<![A-Za-z])(C|T|X)#|[\"'](META|#META|PROFILE)[\"']"
)


def _modules(folder: str) -> list[Path]:
    return sorted(p for p in (REPO / folder).rglob("*.py"))


def _name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


TOOL_MODULES = [p for p in _modules("domain/tools") if _name(p) not in SHARED_TOOL_MODULES | {"domain.tools"}]


@pytest.mark.parametrize("path", TOOL_MODULES, ids=lambda p: p.name)
def test_tool_modules_never_import_each_other(path):
    me = _name(path)
    others = {i for i in _imports(path) if i.startswith("domain.tools.") and i != me}
    assert all(any(i == s or i.startswith(s + ".") for s in SHARED_TOOL_MODULES) for i in others), (me, others)


@pytest.mark.parametrize("path", _modules("functions") + _modules("infra"), ids=lambda p: str(p.relative_to(REPO)))
def test_entrypoints_never_import_tool_modules(path):
    bad = {i for i in _imports(path) if i == "domain.tools" or i.startswith("domain.tools.")}
    assert not bad, (_name(path), bad)


@pytest.mark.parametrize("path", _modules("domain/store"), ids=lambda p: p.name)
def test_store_imports_nothing_above_it(path):
    bad = {
        i for i in _imports(path)
        if i.startswith("domain.") and not i.startswith("domain.store") and not any(i == m or i.startswith(m + ".") for m in STORE_MAY_IMPORT)
    }
    assert not bad, (_name(path), bad)


@pytest.mark.parametrize("path", _modules("domain") + _modules("functions") + _modules("infra"), ids=lambda p: str(p.relative_to(REPO)))
def test_keys_are_spelled_only_in_the_keys_module(path):
    if path == REPO / "domain" / "store" / "keys.py":
        return
    hits = [f"{n}: {line.strip()}" for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if KEY_LITERAL.search(line)]
    assert not hits, hits


def test_the_key_check_bites():
    assert KEY_LITERAL.search('pk = f"BOARD#{board_id}"') and KEY_LITERAL.search('sk = "#META"') and KEY_LITERAL.search('f"T#{n:010d}"')
    assert not KEY_LITERAL.search("keys.board_head(board_id)")
