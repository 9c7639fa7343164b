"""The tool surface kept honest (docs/decisions.md, "Tool surface").

* docs/tools.md and tests/snapshots/tools/<name>.json are exactly what scripts/gen_tool_docs.py
  makes of the registry now, so neither a doc nor a schema can drift silently (set
  JENTRIX_UPDATE_SNAPSHOTS=1 to rewrite the snapshots; a missing snapshot fails);
* every tool states its title and all four behaviour annotations explicitly, with flags equal
  to the catalog table (tests/catalog_table.py, the oracle), from which every expectation here derives;
* every inputSchema is portable: inline (no ``$ref``), a plain ``type: object`` root with no
  ``oneOf``/``anyOf``/``allOf`` there and no ``additionalProperties`` anywhere (Gemini's function
  declarations refuse the keyword; the server refuses unknown arguments itself), every property
  described except the few whose name says it all (``SELF_EVIDENT``); every tool has an
  ``outputSchema`` in which every property states its type (``[X, "null"]`` where the answer
  may be null; no anyOf, const or $ref); and both are valid JSON Schema;
* the keyed tools (those taking ``idempotencyKey``) are exactly the expected ones.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from domain import catalog, toolsets
from domain.auth import Principal
from domain.catalog import (
    eager_registry as product_registry,  # the modules' own specs, never the manifest made from them
)
from functions.protocol import McpProtocol, Session
from tests.catalog_table import CATALOG, COORDINATION, EXTRA, KEY_REQUIRED

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "gen_tool_docs.py"
RERUN = "Run `.venv/bin/python scripts/gen_tool_docs.py` and commit docs/tools.md and tests/snapshots/tools/."
UPDATE = os.environ.get("JENTRIX_UPDATE_SNAPSHOTS") == "1"

# The catalog's 62 plus the tools beyond it (issue 14: list_my_work), which are never compared with the seed document.
# The coordination toolset (issue 29) has its own table, never compared with the catalog either.
TABLE = {**CATALOG, **EXTRA, **COORDINATION}
# name: (scope, readOnlyHint, destructiveHint, idempotentHint) of every tool, from the catalog table
SEED: dict[str, tuple[str, bool, bool, bool]] = {
    name: (row.scope, row.read_only, row.destructive, row.idempotent) for name, row in TABLE.items()
}
KEYED = {name for name, row in TABLE.items() if row.keyed}
ANNOTATION_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_tool_docs", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
SPECS = product_registry().ordered()
DEFS = {s.name: s.definition() for s in SPECS}


def _diff(expected: str, actual: str, name: str) -> str:
    lines = list(
        difflib.unified_diff(
            actual.splitlines(),
            expected.splitlines(),
            f"{name} (committed)",
            f"{name} (from the registry)",
            lineterm="",
            n=1,
        )
    )
    return "\n".join(lines[:40]) + ("\n…" if len(lines) > 40 else "")


# -- generated files are fresh ------------------------------------------------------------------
def test_tools_md_is_fresh():
    expected = GEN.render_markdown()
    actual = GEN.DOCS_PATH.read_text(encoding="utf-8") if GEN.DOCS_PATH.exists() else ""
    assert actual == expected, f"docs/tools.md is stale. {RERUN}\n{_diff(expected, actual, 'docs/tools.md')}"


@pytest.mark.parametrize("name", sorted(SEED))
def test_schema_snapshot_matches_the_registry(name):
    path = GEN.SNAPSHOT_DIR / f"{name}.json"
    expected = GEN.render_snapshot(DEFS[name])
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(expected, encoding="utf-8")
    assert path.exists(), f"No snapshot for {name}: {RERUN}"
    actual = path.read_text(encoding="utf-8")
    assert actual == expected, (
        f"The definition of {name} drifted from {path.relative_to(REPO)}. If the change is intended, {RERUN}\n"
        f"{_diff(expected, actual, path.name)}"
    )


def test_the_manifest_is_current_and_equals_the_modules():
    """domain/catalog_manifest.json (what a cold process lists tools from) is exactly what the
    modules declare, and it carries the hash of today's sources (else it would be ignored)."""
    committed = catalog.MANIFEST.read_text(encoding="utf-8")
    expected = catalog.render_manifest(SPECS)
    assert committed == expected, (
        f"domain/catalog_manifest.json is stale. {RERUN}\n{_diff(expected, committed, 'catalog_manifest.json')}"
    )
    assert catalog.manifest_rows() is not None


def test_the_served_registry_is_the_lazy_one_and_serves_the_same_tools():
    served = catalog.registry()
    assert not catalog.eager_init()
    assert all(isinstance(s, catalog.LazySpec) for s in served)
    assert [s.name for s in served] == [s.name for s in SPECS]
    for lazy, real in zip(served, SPECS, strict=True):
        assert lazy.definition() == real.definition()
        assert (lazy.area, lazy.scope, lazy.read_only, lazy.destructive, lazy.idempotent, lazy.keyed) == (
            real.area,
            real.scope,
            real.read_only,
            real.destructive,
            real.idempotent,
            real.keyed,
        )
        assert lazy.load() is real  # the same declaration object the module holds
        assert lazy.input_model is real.input_model and lazy.handler is real.handler


def test_a_stale_manifest_is_ignored(tmp_path):
    stale = tmp_path / "manifest.json"
    stale.write_text(
        catalog.MANIFEST.read_text(encoding="utf-8").replace('"sourceHash":"', '"sourceHash":"0', 1), encoding="utf-8"
    )
    assert catalog.manifest_rows(stale) is None
    assert catalog.manifest_rows(tmp_path / "missing.json") is None


_PROBE = """
import json, sys
from functions.lambda_handler import handler
from functions.protocol import McpProtocol
reg = McpProtocol().registry
print(json.dumps({"tools": len(reg), "modules": sorted(m for m in sys.modules if m.startswith("domain.tools."))}))
reg.get("get_task").input_model
print(json.dumps({"modules": sorted(m for m in sys.modules if m.startswith("domain.tools."))}))
"""


@pytest.mark.parametrize("init_type", ["on-demand", "provisioned-concurrency", "snap-start"])
def test_a_cold_lambda_imports_the_tool_modules_only_when_initialized_ahead(init_type):
    """On demand, the Lambda entry lists all tools from the manifest and imports a tool's module
    with its first use; a pre-initialized environment imports every module during init."""
    env = {k: v for k, v in os.environ.items() if k != "JENTRIX_EAGER_CATALOG"}
    env["AWS_LAMBDA_INITIALIZATION_TYPE"] = init_type
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    first, after = (json.loads(line) for line in out.stdout.splitlines()[-2:])
    assert first["tools"] == len(SPECS)
    if init_type == "on-demand":
        areas = {f"domain.tools.{m}" for m in catalog.MODULES}
        assert first["modules"] == [] and areas & set(after["modules"]) == {"domain.tools.tasks"}, out.stdout
    else:
        assert len(first["modules"]) >= len(catalog.MODULES), first


def test_no_snapshot_without_a_tool():
    orphans = GEN.orphans(GEN.SNAPSHOT_DIR, GEN.render_snapshots())
    if UPDATE:
        for path in orphans:
            path.unlink()
        orphans = []
    assert not orphans, f"Snapshots of tools that no longer exist: {[p.name for p in orphans]}. {RERUN}"


def test_snapshots_are_what_tools_list_serves():
    """The snapshots are the wire form: the protocol layer's tools/list returns exactly them, by name."""
    snapshots = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in GEN.SNAPSHOT_DIR.glob("*.json")}
    # every toolset, the opt-in coordination one too (as jentrix mcp serves them)
    session = Session(
        principal=Principal(user_id="usr_x", token_id="tok_x", kind="pat", stored_scopes=(), workspace_pin=None),
        layers=(toolsets.OPT_IN_ON,),
    )
    tools, params = [], {}
    while True:  # every page (the catalog has more tools than one page holds)
        reply = McpProtocol().handle(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}, headers=None, session=session
        )
        tools += reply.message["result"]["tools"]
        if "nextCursor" not in reply.message["result"]:
            break
        params = {"cursor": reply.message["result"]["nextCursor"]}
    assert [t["name"] for t in tools] == sorted(snapshots)
    assert tools == [snapshots[t["name"]] for t in tools]


def test_check_mode_passes_on_fresh_files_and_fails_on_stale_ones(tmp_path):
    fresh = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert fresh.returncode == 0, fresh.stderr
    docs, snaps = tmp_path / "tools.md", tmp_path / "tools"
    written = subprocess.run(
        [sys.executable, str(SCRIPT), "--docs", str(docs), "--snapshot-dir", str(snaps)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert written.returncode == 0, written.stderr
    assert docs.read_text(encoding="utf-8") == GEN.DOCS_PATH.read_text(encoding="utf-8")
    for path in GEN.SNAPSHOT_DIR.glob("*.json"):
        assert (snaps / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8")
    snap = snaps / "list_boards.json"
    snap.write_text(
        snap.read_text(encoding="utf-8").replace('"readOnlyHint": true', '"readOnlyHint": false', 1), encoding="utf-8"
    )
    check = [sys.executable, str(SCRIPT), "--check", "--docs", str(docs), "--snapshot-dir", str(snaps)]
    stale = subprocess.run(check, capture_output=True, text=True, timeout=120)
    assert stale.returncode != 0
    assert "list_boards.json" in stale.stderr and "gen_tool_docs.py" in stale.stderr
    snap.unlink()
    (snaps / "no_such_tool.json").write_text("{}", encoding="utf-8")
    orphaned = subprocess.run(check, capture_output=True, text=True, timeout=120)
    assert orphaned.returncode != 0 and "no_such_tool.json" in orphaned.stderr and "list_boards.json" in orphaned.stderr
    docs.unlink()
    missing = subprocess.run(check, capture_output=True, text=True, timeout=120)
    assert missing.returncode != 0 and "tools.md" in missing.stderr


def test_docs_mention_every_tool_and_its_flags():
    text = GEN.DOCS_PATH.read_text(encoding="utf-8")
    for s in SPECS:
        row = next(line for line in text.splitlines() if line.startswith(f"| [`{s.name}`]"))
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[1:7] == [
            s.scope,
            *("yes" if f else "no" for f in (s.read_only, s.destructive, s.idempotent, s.keyed)),
            s.min_role or "-",
        ], row
        assert f"### {s.name}" in text
        section = text.split(f"### {s.name}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        for prop in DEFS[s.name]["inputSchema"].get("properties", {}):
            assert f"| `{prop}` |" in section, (s.name, prop)
        area_heading = text.index(f"## Area: {s.area}\n")
        assert area_heading < text.index(f"### {s.name}\n") and area_heading < text.index(row), (s.name, s.area)


# -- the seed table -------------------------------------------------------------------------------
def test_registry_holds_exactly_the_built_catalog_tools():
    assert sorted(DEFS) == sorted(SEED)


def test_catalog_table_is_the_product_catalog():
    """The table holds every catalog tool once; keyed means create_*/bulk_* plus the two session
    tools the catalog marks as requiring a key."""
    assert len(CATALOG) == 62
    for name, row in CATALOG.items():
        assert row.keyed == (
            name.startswith(("create_", "bulk_")) or name in {"attach_agent_session", "create_agent_session"}
        ), name
        if row.read_only:
            assert not row.destructive, name  # (list_invitations is read-only yet needs the admin scope)


SEED_FILE = REPO.parent / "shared" / "seeds" / "002_e181a395439ef61e.txt"


@pytest.mark.skipif(not SEED_FILE.exists(), reason="the product catalog (shared/seeds) is not beside this checkout")
def test_catalog_table_matches_the_product_catalog_document():
    """Every row of the catalog document's table, with its scope and three flags, is in CATALOG, and nothing else."""
    rows = re.findall(r"^`(\w+)`\t(\w+)\t(\S)\t(\S)\t(\S)\t", SEED_FILE.read_text(encoding="utf-8"), re.MULTILINE)
    assert rows
    table = {n: (scope, ro == "✓", de == "✓", idem == "✓") for n, scope, ro, de, idem in rows}
    assert table == {n: (r.scope, r.read_only, r.destructive, r.idempotent) for n, r in CATALOG.items()}


@pytest.mark.parametrize("name", sorted(SEED))
def test_area_matches_the_catalog_table(name):
    assert product_registry().get(name).area == TABLE[name].area


def test_tools_beyond_the_catalog_are_flagged_as_such():
    assert not set(EXTRA) & set(CATALOG)
    assert set(EXTRA) == GEN.BEYOND_CATALOG
    text = GEN.DOCS_PATH.read_text(encoding="utf-8")
    for name in EXTRA:
        section = text.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
        assert "beyond the product catalog" in section, name


@pytest.mark.parametrize("name", sorted(SEED))
def test_flags_match_the_seed_table(name):
    spec = product_registry().get(name)
    scope, read_only, destructive, idempotent = SEED[name]
    assert (spec.scope, spec.read_only, spec.destructive, spec.idempotent) == (
        scope,
        read_only,
        destructive,
        idempotent,
    )
    ann = DEFS[name]["annotations"]
    assert (ann["readOnlyHint"], ann["destructiveHint"], ann["idempotentHint"]) == (read_only, destructive, idempotent)
    if read_only:
        assert not destructive


@pytest.mark.parametrize("name", sorted(SEED))
def test_keyed_tools_take_an_idempotency_key(name):
    spec = product_registry().get(name)
    props = DEFS[name]["inputSchema"]["properties"]
    assert spec.keyed == (name in KEYED)
    if name in COORDINATION:  # the coordination spec's snake_case key, required on every mutation
        assert ("idempotency_key" in props) == (name in KEYED) and "idempotencyKey" not in props
        assert ("idempotency_key" in DEFS[name]["inputSchema"].get("required", [])) == (name in KEYED)
        return
    assert ("idempotencyKey" in props) == (name in KEYED)
    if name in KEYED:  # optional, except where the catalog says the tool requires it
        assert ("idempotencyKey" in DEFS[name]["inputSchema"].get("required", [])) == (name in KEY_REQUIRED)


# -- every definition, shape by shape ---------------------------------------------------------------
def _walk(node: Any, path: str = "$"):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")


@pytest.mark.parametrize("name", sorted(SEED))
def test_title_and_all_four_annotations_are_explicit(name):
    d = DEFS[name]
    assert re.fullmatch(r"[a-z][a-z0-9_]{0,63}", d["name"])
    assert isinstance(d["title"], str) and d["title"].strip()
    assert isinstance(d["description"], str) and len(d["description"]) >= 20
    ann = d["annotations"]
    for key in ANNOTATION_KEYS:
        assert key in ann and isinstance(ann[key], bool), f"{name} does not state {key}"
    assert ann["openWorldHint"] is False
    assert ann.get("title") == d["title"]


@pytest.mark.parametrize("name", sorted(SEED))
def test_input_schema_is_inline_and_plain_at_the_root(name):
    schema = DEFS[name]["inputSchema"]
    refs = [
        path
        for path, node in _walk(schema)
        if isinstance(node, dict) and ("$ref" in node or "$defs" in node or "definitions" in node)
    ]
    assert not refs, f"{name} inputSchema refers out at {refs}"
    assert schema["type"] == "object"
    for keyword in ("oneOf", "anyOf", "allOf", "not", "if", "then", "else", "$ref"):
        assert keyword not in schema, f"{name} inputSchema has {keyword} at the root"
    assert isinstance(schema.get("properties", {}), dict)
    assert set(schema.get("required", [])) <= set(schema.get("properties", {}))
    Draft202012Validator.check_schema(schema)


# Arguments whose name and schema say everything a description would (issue 14, "Lean definitions"):
# a description such as "Priority." or "Page size." only repeats the name, so these may go without.
# Every other property is described, and a described one must say something.
SELF_EVIDENT = frozenset(
    {"title", "name", "priority", "limit", "cursor", "includeArchived", "idempotencyKey", "action"}
)


@pytest.mark.parametrize("name", sorted(SEED))
def test_every_input_property_is_described(name):
    schema = DEFS[name]["inputSchema"]
    undescribed = []
    for path, node in _walk(schema):
        if isinstance(node, dict) and isinstance(node.get("properties"), dict) and not path.endswith(".properties"):
            for prop, sub in node["properties"].items():
                if isinstance(sub, dict) and "description" not in sub and prop in SELF_EVIDENT:
                    continue
                if not (
                    isinstance(sub, dict) and isinstance(sub.get("description"), str) and sub["description"].strip()
                ):
                    undescribed.append(f"{path}.properties.{prop}")
    assert not undescribed, f"{name}: no description on {undescribed}"


@pytest.mark.parametrize("name", sorted(SEED))
def test_output_schema_is_present_inline_and_valid(name):
    schema = DEFS[name].get("outputSchema")
    assert isinstance(schema, dict), f"{name} has no outputSchema"
    assert schema["type"] == "object" and schema.get("properties")
    assert not [p for p, n in _walk(schema) if isinstance(n, dict) and ("$ref" in n or "$defs" in n)]
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", sorted(SEED))
def test_input_schema_accepts_what_it_documents_and_refuses_extras(name):
    """The published schema agrees with the server on required fields; unknown fields are refused
    by the server (tests/test_input_validation.py, the catalog harness) and by the full schema the
    server validates against (``json_schema``), which the published one shortens."""
    from domain.registry import json_schema

    schema = DEFS[name]["inputSchema"]
    validator = Draft202012Validator(schema)

    def sample(sub: dict[str, Any]) -> Any:
        if "enum" in sub:
            return sub["enum"][0]
        if sub.get("type") == "array":  # list arguments (bulk tools): the fewest items allowed
            return [sample(sub.get("items", {})) for _ in range(sub.get("minItems", 0))]
        if sub.get("type") == "object":
            return {p: sample(s) for p, s in sub.get("properties", {}).items() if p in sub.get("required", [])}
        if "pattern" in sub:  # a patterned string (a timestamp): an example of its shape
            return {r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$": "2026-01-01T00:00:00.000Z"}.get(
                sub["pattern"], "x"
            )
        return {"string": "x", "boolean": True}.get(sub.get("type"), 1)

    minimal: dict[str, Any] = {prop: sample(schema["properties"][prop]) for prop in schema.get("required", [])}
    assert not list(validator.iter_errors(minimal)), name
    full = json_schema(product_registry().get(name).input_model, mode="validation")
    assert full["additionalProperties"] is False
    assert list(Draft202012Validator(full).iter_errors({**minimal, "surprise": 1})), name


@pytest.mark.parametrize("name", sorted(SEED))
def test_published_input_schema_has_no_additional_properties_keyword(name):
    """Gemini's function declarations (the OpenAPI-subset ``parameters``) answer 400 "Unknown name
    additionalProperties" at any level, so the lean schema leaves it out everywhere."""
    schema = DEFS[name]["inputSchema"]
    assert not [
        p
        for p, n in _walk(schema)
        if isinstance(n, dict) and "additionalProperties" in n and not p.endswith(".properties")
    ], name


# -- portable input schemas (docs/decisions.md, "After the second trial") ---------------------------
PORTABLE_TYPES = {"string", "integer", "number", "boolean", "array", "object"}
NOT_PORTABLE = ("anyOf", "oneOf", "allOf", "not", "const", "if", "then", "else", "$ref", "$defs")


def _portability_problems(schema: dict[str, Any], *, output: bool = False) -> list[str]:
    """Every place in an inputSchema (or, with ``output``, an outputSchema) that some major client
    would refuse. Outputs answer ``null`` where the contract says so, so an output property may be
    ``type: [X, "null"]`` (one portable type plus null, with null in its enum if it has one);
    every other rule is the same."""
    problems: list[str] = []

    def prop(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            problems.append(f"{path}: not a schema object")
            return
        for keyword in NOT_PORTABLE:
            if keyword in node:
                problems.append(f"{path}: uses {keyword}")
        kind = node.get("type")
        nullable = output and isinstance(kind, list) and len(kind) == 2 and kind[1] == "null"
        if nullable:
            kind = kind[0]
        if not isinstance(kind, str) or kind not in PORTABLE_TYPES:
            problems.append(
                f"{path}: type must be one of {sorted(PORTABLE_TYPES)}{' (or [it, null])' if output else ''}, is {node.get('type')!r}"
            )
        if "default" in node and node["default"] is None:
            problems.append(f"{path}: default null")
        if None in node.get("enum", []) and not nullable:
            problems.append(f"{path}: null in enum")
        if nullable and "enum" in node and None not in node["enum"]:
            problems.append(f"{path}: nullable enum without null (a null answer would not validate)")
        if kind == "array":
            if not isinstance(node.get("items"), dict):
                problems.append(f"{path}: array without items")
            else:
                prop(node["items"], f"{path}.items")
        if kind == "object":
            for name, sub in node.get("properties", {}).items():
                prop(sub, f"{path}.properties.{name}")

    for keyword in NOT_PORTABLE:
        if keyword in schema:
            problems.append(f"$: uses {keyword}")
    if schema.get("type") != "object":
        problems.append(f"$: the root must be type object, is {schema.get('type')!r}")
    for name, sub in schema.get("properties", {}).items():
        prop(sub, f"$.properties.{name}")
    return problems


def test_every_input_schema_is_portable_to_every_major_client():
    """One ``type`` string per property (arrays with ``items``), optional = not in ``required``:
    no anyOf-with-null, type arrays, const or default null anywhere, for every tool served."""
    problems = {s.name: _portability_problems(s.definition()["inputSchema"]) for s in product_registry()}
    assert not {k: v for k, v in problems.items() if v}


def test_the_portability_lint_bites_and_json_schema_collapses_nulls():
    from typing import Literal

    from pydantic import BaseModel, Field

    from domain.registry import ToolInput, json_schema

    class Item(BaseModel):
        kind: Literal["one"] = Field(description="the only kind")
        note: str | None = Field(default=None, max_length=5, description="a note")

    class Sample(ToolInput):
        name: str | None = Field(default=None, min_length=1, max_length=9, description="a name")
        count: int | None = Field(default=None, ge=1, description="a count")
        items: list[Item] | None = Field(default=None, description="some items")

    raw = Sample.model_json_schema(mode="validation")
    raw.pop("$defs", None)
    assert _portability_problems(raw)  # pydantic's own output is refused by the lint
    schema = json_schema(Sample, mode="validation")
    assert _portability_problems(schema) == []
    props = schema["properties"]
    assert props["name"] == {"type": "string", "minLength": 1, "maxLength": 9, "description": "a name"}
    assert props["count"] == {"type": "integer", "minimum": 1, "description": "a count"}
    item = props["items"]["items"]["properties"]
    assert item["kind"] == {"type": "string", "enum": ["one"], "description": "the only kind"}
    assert item["note"] == {"type": "string", "maxLength": 5, "description": "a note"}
    assert "required" not in schema
    Draft202012Validator.check_schema(schema)
    # output schemas keep null (answers carry it) but state the type, valid 2020-12
    out = json_schema(Sample, mode="serialization")
    assert _portability_problems(out, output=True) == []
    assert out["properties"]["name"] == {
        "type": ["string", "null"],
        "maxLength": 9,
        "minLength": 1,
        "description": "a name",
    }


def test_every_output_schema_is_portable_to_every_major_client():
    """Issue 24, item 12: pydantic wrote 412 output properties as ``anyOf [X, null]`` with no type
    of their own. Every served outputSchema now gives each property a type (``[X, "null"]`` where
    the answer may be null), with no anyOf, const or $ref anywhere."""
    problems = {s.name: _portability_problems(s.definition()["outputSchema"], output=True) for s in product_registry()}
    assert not {k: v[:5] for k, v in problems.items() if v}


def test_output_schemas_keep_null_answers_and_merge_row_shapes():
    """A nullable enum still takes null; a field that is one of two row models (a detailed or a
    compact task) is one object holding both, requiring what both require; each value that was
    valid before is valid now."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field

    from domain.registry import SpecError, ToolOutput, json_schema

    class Small(BaseModel):
        model_config = ConfigDict(extra="forbid")
        id: str
        title: str

    class Big(BaseModel):
        model_config = ConfigDict(extra="forbid")
        id: str
        title: str
        body: str | None

    class Out(ToolOutput):
        state: Literal["OPEN", "DONE"] | None = Field(default=None, description="a state")
        row: Big | Small
        rows: list[Big | Small] | None = None

    schema = json_schema(Out, mode="serialization")
    assert _portability_problems(schema, output=True) == []
    props = schema["properties"]
    assert props["state"] == {"type": ["string", "null"], "enum": ["OPEN", "DONE", None], "description": "a state"}
    assert props["row"]["type"] == "object" and props["row"]["required"] == ["id", "title"]
    assert set(props["row"]["properties"]) == {"id", "title", "body"}
    assert props["rows"]["type"] == ["array", "null"]
    validator = Draft202012Validator(schema)
    for value in (
        {"state": None, "row": {"id": "a", "title": "t"}, "rows": None},
        {
            "state": "DONE",
            "row": {"id": "a", "title": "t", "body": None},
            "rows": [{"id": "b", "title": "u", "body": "x"}],
        },
    ):
        assert not list(validator.iter_errors(value)), value
    assert list(validator.iter_errors({"state": "LOST", "row": {"id": "a", "title": "t"}}))
    assert list(validator.iter_errors({"row": {"id": "a", "title": "t", "surprise": 1}}))

    class Other(BaseModel):
        id: str
        title: int

    class Clash(ToolOutput):
        row: Small | Other

    with pytest.raises(SpecError):
        json_schema(Clash, mode="serialization")


# -- list results follow one naming rule (docs/tools.md, "List results") -----------------------------
# A list's key is the plural of its row type; rows that are not an entity of their own are named
# for what they are. Keys published before the rule stay as they are (clients read them).
ROW_KEYS_NOT_AN_ENTITY = {
    "activity": "log entries (the log itself)",
    "results": "search hits, bulk per-item outcomes",
    "matches": "a project and how it matched a repository",
    "outgoing": "list_task_links: links from the task",
    "incoming": "list_task_links: links to the task",
    "recentActivity": "get_task: the newest entries of the task's log",
}
PAGED_WITHOUT_TOTAL = {"list_activity": "a board log may hold 50k entries; counting them means reading them all"}


def _row_lists(definition: dict[str, Any]) -> list[str]:
    props = definition["outputSchema"]["properties"]

    def types(v: dict[str, Any]) -> list[Any]:
        t = v.get("type")
        return t if isinstance(t, list) else [t]

    return [k for k, v in props.items() if "array" in types(v) and "object" in types(v.get("items", {}))]


def test_every_paged_list_answers_a_count_a_cursor_and_a_notice():
    for name, definition in DEFS.items():
        props = definition["outputSchema"]["properties"]
        if "nextCursor" not in props:
            continue
        assert "notice" in props, name
        assert "totalCount" in props or name in PAGED_WITHOUT_TOTAL, (
            f"{name} pages without totalCount and no stated reason"
        )


def test_list_keys_follow_the_rule_and_the_rule_is_documented():
    plural_of_row = re.compile(r"^[a-z][A-Za-z]*s$")
    for name, definition in DEFS.items():
        for key in _row_lists(definition):
            assert key in ROW_KEYS_NOT_AN_ENTITY or plural_of_row.fullmatch(key), (name, key)
    text = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    assert "## List results" in text and all(f"`{k}`" in text for k in [*ROW_KEYS_NOT_AN_ENTITY, *PAGED_WITHOUT_TOTAL])
