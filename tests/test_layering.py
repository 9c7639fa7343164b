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
        i
        for i in _imports(path)
        if i.startswith("domain.")
        and not i.startswith("domain.store")
        and not any(i == m or i.startswith(m + ".") for m in STORE_MAY_IMPORT)
    }
    assert not bad, (_name(path), bad)


@pytest.mark.parametrize(
    "path", _modules("domain") + _modules("functions") + _modules("infra"), ids=lambda p: str(p.relative_to(REPO))
)
def test_keys_are_spelled_only_in_the_keys_module(path):
    if path == REPO / "domain" / "store" / "keys.py":
        return
    hits = [
        f"{n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if KEY_LITERAL.search(line)
    ]
    assert not hits, hits


def test_the_key_check_bites():
    assert (
        KEY_LITERAL.search('pk = f"BOARD#{board_id}"')
        and KEY_LITERAL.search('sk = "#META"')
        and KEY_LITERAL.search('f"T#{n:010d}"')
    )
    assert not KEY_LITERAL.search("keys.board_head(board_id)")


# --- import circles (issue 27) ---------------------------------------------------------------
# Every import counts, deferred (inside a function) and typing-only ones included: a circle broken
# only by a late import is still a circle in the design. There is none; keep it that way.
PACKAGES = ("domain", "functions", "infra")


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    paths = {_name(p): p for folder in PACKAGES for p in _modules(folder)}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        if top_level_only:  # what runs when the module is imported (no function bodies, no TYPE_CHECKING)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found: set[str] = set()
            for node in tree.body:
                if isinstance(node, ast.Import):
                    found.update(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module:
                    found.add(node.module)
                    found.update(f"{node.module}.{a.name}" for a in node.names)
        else:
            found = _imports(path)
        graph[name] = {i for i in found if i in paths and i != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def test_the_circle_finder_finds_circles():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_when_modules_load():
    assert _circles(_graph(top_level_only=True)) == []


def test_no_import_circle_at_all():
    """Deferred and typing-only imports included (the four circles issue 27 found are gone)."""
    found = _circles(_graph(top_level_only=False))
    assert not found, f"import circles: {found}"


ROLE_NAMES = {"OWNER", "ADMIN", "MEMBER"}


def _role_comparisons(tree: ast.AST) -> list[int]:
    """Lines comparing something with a role name (``x.role == "OWNER"``, ``role not in ("ADMIN", …)``),
    or building a role guard by hand (``….role.is_in("ADMIN", …)``)."""

    def names_a_role(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in ROLE_NAMES
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(names_a_role(e) for e in node.elts)
        return False

    def compares_a_role(node: ast.AST) -> bool:
        return isinstance(node, ast.Compare) and any(names_a_role(n) for n in (node.left, *node.comparators))

    def guards_a_role(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "is_in"
            and any(names_a_role(a) for a in node.args)
        )

    lines = [n.lineno for n in ast.walk(tree) if compares_a_role(n) or guards_a_role(n)]
    return lines


def test_the_role_check_finder_finds_role_checks():
    found = _role_comparisons(
        ast.parse(
            'a = m.role not in ("ADMIN", "OWNER")\nb = r.role == "OWNER"\nc = MemberRow.role.is_in("ADMIN", "OWNER")\nd = x == "OTHER"'
        )
    )
    assert found == [1, 2, 3]


@pytest.mark.parametrize("path", _modules("functions") + _modules("infra"), ids=lambda p: str(p.relative_to(REPO)))
def test_entrypoints_compare_no_roles_by_hand(path):
    """The CLI and the console ask domain.access (role_allows, standing, role_guard, approver_role):
    the same ladder the tools' min_role goes through, never a role compared in functions/."""
    assert not _role_comparisons(ast.parse(path.read_text(encoding="utf-8"))), path


def test_the_cli_takes_role_ranks_from_the_domain():
    """One role ladder (domain.auth.ROLE_RANK): the CLI's governance commands do not keep a copy."""
    for path in _modules("functions") + _modules("infra"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assigned = {
            t.id
            for node in ast.walk(tree)
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name)
        }
        assert "ROLE_RANK" not in assigned, path


# --- store errors (issue 27) -----------------------------------------------------------------
def _store_exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in a module under domain/store (imported, not parsed: a
    class that inherits an exception through another store class counts too)."""
    import importlib
    import inspect

    found: list[type[BaseException]] = []
    for path in _modules("domain/store"):
        module = importlib.import_module(_name(path))
        found.extend(
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__
        )
    return found


def test_every_store_error_class_derives_from_store_error():
    from domain.store.errors import StoreError

    classes = _store_exception_classes()
    assert len(classes) > 40, "the walk found too few classes to be looking in the right place"
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, StoreError))
    assert not outside, f"store errors outside the StoreError hierarchy: {outside}"


def test_every_store_answer_has_one_envelope():
    """A store error's ``answer`` names an envelope the pipeline owns (one table, no per-class branch)."""
    from typing import get_args

    from domain.pipeline import STORE_ANSWERS
    from domain.store.errors import Answer

    assert set(STORE_ANSWERS) == set(get_args(Answer))
    answered = {c.answer for c in _store_exception_classes() if getattr(c, "answer", None)}
    assert answered <= set(STORE_ANSWERS)


# --- tools read through named plans (issue 27) -----------------------------------------------
# Tool modules reach storage through named read plans (domain/store/reads.py: ``reads=`` on the
# spec, typed rows on ``ctx.read``) and named store functions: they spell no key and no row class,
# every one of them, a new one included.
STORAGE_SCHEMA = ("domain.store.keys", "domain.store.models")
ALL_TOOL_MODULES = [p for p in _modules("domain/tools") if _name(p) != "domain.tools"]


def _speaks_storage(path: Path) -> set[str]:
    """The imports of ``path`` that name the storage schema (keys or row classes)."""
    return {i for i in _imports(path) if any(i == m or i.startswith(m + ".") for m in STORAGE_SCHEMA)}


@pytest.mark.parametrize("path", ALL_TOOL_MODULES, ids=lambda p: p.name)
def test_tool_modules_import_neither_keys_nor_models(path):
    module = _name(path)
    bad = _speaks_storage(path)
    assert not bad, (module, bad)
    source = path.read_text(encoding="utf-8")
    assert "ctx.item(" not in source and "ctx.prefetched" not in source, f"{module} reads items by key"
    # the writer contracts are declared on the spec (replay=, cas=), not threaded by hand
    assert "creation_marker(" not in source and ".Earlier" not in source, f"{module} threads the replay marker"
    assert "expectedUpdatedAt is not None" not in source, f"{module} checks expectedUpdatedAt by hand"


def test_the_storage_import_check_bites(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from domain.store import keys\nfrom domain.store.models import TaskRow\n", encoding="utf-8")
    assert _speaks_storage(sample) == {"domain.store.keys", "domain.store.models", "domain.store.models.TaskRow"}
    sample.write_text("from domain.store import reads\nfrom domain.store.reads import Task\n", encoding="utf-8")
    assert not _speaks_storage(sample)


# --- functions/ reaches storage through named operations (issue 27) ---------------------------
# The entry points (HTTP app, web pages, CLI, stdio adapter, warm-up reads) call named domain and
# store functions and spell no key and no row class; table administration too goes through named
# store operations (db.create_fresh_tables, db.table_name, workspaces.all_ids).
ALL_FUNCTION_MODULES = _modules("functions")


@pytest.mark.parametrize("path", ALL_FUNCTION_MODULES, ids=lambda p: _name(p))
def test_entry_points_import_neither_keys_nor_models(path):
    assert not _speaks_storage(path), (_name(path), _speaks_storage(path))


# --- the call context's two rooms (issue 27) ---------------------------------------------------
# domain.context.CallContext is what a handler may read (frozen; read-only properties for what the
# pipeline found); domain.context.CallState, reached as ``ctx.call_state``, is what the pipeline
# writes while a call runs. Only the pipeline's own steps reach the state; tool modules and
# entry points never do (they get what they need from the context's properties).
CALL_STATE_OWNERS = {"domain.context", "domain.pipeline", "domain.access", "domain.governance"}
ALL_MODULES = [p for folder in PACKAGES for p in _modules(folder)]


def _reaches_call_state(path: Path) -> list[str]:
    """Where ``path`` reaches the pipeline-owned state: the ``call_state`` attribute (read or
    written, ``getattr`` spelling included), the ``call_state=`` keyword, or the ``CallState`` class."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "call_state":
            found.append(f"{node.lineno}: .call_state")
        elif isinstance(node, ast.Constant) and node.value == "call_state":
            found.append(f"{node.lineno}: 'call_state'")
        elif isinstance(node, ast.keyword) and node.arg == "call_state":
            found.append(f"{node.value.lineno}: call_state=")
        elif isinstance(node, ast.Name) and node.id == "CallState":
            found.append(f"{node.lineno}: CallState")
        elif isinstance(node, ast.ImportFrom) and any(a.name == "CallState" for a in node.names):
            found.append(f"{node.lineno}: import CallState")
    return found


@pytest.mark.parametrize("path", ALL_TOOL_MODULES, ids=lambda p: p.name)
def test_tool_modules_never_touch_the_pipeline_state(path):
    assert not _reaches_call_state(path), (_name(path), _reaches_call_state(path))


@pytest.mark.parametrize("path", [p for p in ALL_MODULES if _name(p) not in CALL_STATE_OWNERS], ids=lambda p: _name(p))
def test_only_the_pipeline_steps_reach_the_pipeline_state(path):
    """The pipeline, the access step and the governance gate write the call's state; nothing
    else reads or writes it (the transports hand theirs in through call_tool's arguments)."""
    assert not _reaches_call_state(path), (_name(path), _reaches_call_state(path))


def test_the_pipeline_state_owners_are_all_needed():
    names = {_name(p): p for p in ALL_MODULES}
    idle = sorted(m for m in CALL_STATE_OWNERS if not _reaches_call_state(names[m]))
    assert not idle, f"no longer writes the call state, strike off CALL_STATE_OWNERS: {idle}"


def test_the_pipeline_state_check_bites(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from domain.context import CallState\n"
        "def handler(ctx, args):\n"
        "    ctx.call_state.approval = None\n"
        "    getattr(ctx, 'call_state').marker = None\n"
        "    return CallContext(ctx.principal, 'c', 't', call_state=CallState())\n",
        encoding="utf-8",
    )
    assert sorted(_reaches_call_state(sample)) == [
        "1: import CallState",
        "3: .call_state",
        "4: 'call_state'",
        "5: CallState",
        "5: call_state=",
    ]
    sample.write_text(
        "def handler(ctx, args):\n"
        "    state = args.state\n"
        "    return ctx.approval, ctx.target.workspace_id, ctx.marker, ctx.read.task, state\n",
        encoding="utf-8",
    )
    assert not _reaches_call_state(sample)


def test_a_handler_cannot_write_its_context():
    """The handler-facing context is frozen and its pipeline-found values are read-only
    properties, so a handler's assignment fails at once (and under mypy)."""
    import dataclasses

    from domain.auth import Principal
    from domain.context import CallContext, CallState
    from domain.located import Located

    principal = Principal(user_id="usr_x", token_id="tok_x", kind="pat", stored_scopes=(), workspace_pin=None)
    ctx = CallContext(principal, "cid", "update_task")
    with pytest.raises(LookupError, match="update_task declares no target"):
        ctx.target  # noqa: B018 - the property raises
    for name, value in (("tool", "other"), ("target", None), ("approval", None), ("marker", None), ("read", None)):
        with pytest.raises(AttributeError):
            setattr(ctx, name, value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.call_state = CallState()  # type: ignore[misc]
    where = Located(kind="task", ident="tsk_x", workspace_id="ws_x")
    ctx.call_state.target = where  # the access step's write, seen through the read-only face
    assert ctx.target is where


def test_a_target_hands_out_only_the_parts_its_kind_sets():
    """``ctx.target`` is a ``Located`` whose board, column, project, task and session parts are
    optional; the typed accessors return the part a spec's kind sets and raise LookupError (a
    programming error, answered INTERNAL) for one it does not. ``ctx.targets`` and an item's
    ``located()``/``reads()`` are just as strict."""
    from domain import ids
    from domain.auth import Principal
    from domain.context import CallContext
    from domain.errors import ErrorCode, ToolError
    from domain.located import ItemAccess, Located
    from domain.store.reads import Reads

    task = ids.TaskRef("ws_x", "bd_x", 7)
    where = Located(kind="task", ident="tk_x", workspace_id="ws_x", board_id="bd_x", task=task)
    assert (where.board(), where.task_ref()) == ("bd_x", task)
    for part, accessor in (("column_id", where.column), ("project_id", where.project), ("session", where.session_ref)):
        with pytest.raises(LookupError, match=f"a task target \\(tk_x\\) carries no {part}"):
            accessor()

    principal = Principal(user_id="usr_x", token_id="tok_x", kind="pat", stored_scopes=(), workspace_pin=None)
    ctx = CallContext(principal, "cid", "bulk_update_tasks")
    with pytest.raises(LookupError, match="bulk_update_tasks declares no list target"):
        ctx.targets  # noqa: B018 - the property raises
    admitted = ItemAccess(0, "tk_x", where=where, read=Reads())
    refused = ItemAccess(1, "tk_y", error=ToolError(ErrorCode.NOT_FOUND, "gone", "hint"))
    ctx.call_state.targets = [admitted, refused]
    assert ctx.targets == [admitted, refused]
    assert admitted.located() is where and isinstance(admitted.reads(), Reads)
    for accessor in (refused.located, refused.reads):
        with pytest.raises(LookupError, match="list item 1 \\('tk_y'\\) has no"):
            accessor()
