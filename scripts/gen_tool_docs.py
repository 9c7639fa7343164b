#!/usr/bin/env python3
"""Generate docs/tools.md, tests/snapshots/tools/<name>.json and domain/catalog_manifest.json from the tool registry.

All are derived, never edited by hand: the catalog (``domain/catalog.py`` and the ``@tool``
declarations under ``domain/tools/``) is the single source. Run after changing a tool:

    .venv/bin/python scripts/gen_tool_docs.py           # rewrite the docs and the snapshots
    .venv/bin/python scripts/gen_tool_docs.py --check   # exit 1 if anything is stale (CI, tests)

``docs/tools.md`` holds, area by area, an overview table (scope class, the three behaviour
hints, whether the tool takes an ``idempotencyKey``, the minimum workspace role, the
description), then each tool's arguments as read from its ``inputSchema``, and last the catalog
tools not built yet. ``tests/snapshots/tools/<name>.json`` holds one tool's full definition
exactly as ``tools/list`` serves it; a snapshot without a tool is stale too.
``domain/catalog_manifest.json`` is what a cold process builds its registry from without
importing the tool modules (``domain.catalog``, "the manifest").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DOCS_PATH = REPO / "docs" / "tools.md"
SNAPSHOT_DIR = REPO / "tests" / "snapshots" / "tools"
REGENERATE = ".venv/bin/python scripts/gen_tool_docs.py"


def _specs() -> list[Any]:
    from domain.catalog import eager_registry

    return eager_registry().ordered()  # the modules themselves, never the manifest made from them


# -- the snapshots --------------------------------------------------------------------------------
def render_snapshot(definition: dict[str, Any]) -> str:
    """One tool definition as served by tools/list, as pretty JSON."""
    return json.dumps(definition, indent=2, ensure_ascii=False) + "\n"


def render_snapshots(directory: Path = SNAPSHOT_DIR) -> dict[Path, str]:
    return {directory / f"{spec.name}.json": render_snapshot(spec.definition()) for spec in _specs()}


# -- what a model reads (issue 14, "Lean definitions") -------------------------------------------------
EVERYDAY = ("boards", "tasks", "collaboration", "search", "context")
# Served tools beyond the product catalog's 62 (issue 14), marked as such in docs/tools.md.
BEYOND_CATALOG = frozenset({"list_my_work"})


def model_text(definition: dict[str, Any]) -> str:
    """What a model reads of one tool: name, title, description and inputSchema, as compact JSON."""
    return json.dumps(
        {k: definition[k] for k in ("name", "title", "description", "inputSchema")},
        separators=(",", ":"),
        ensure_ascii=False,
    )


def estimate_tokens(definition: dict[str, Any]) -> int:
    """Compact-JSON bytes / 4, rounded up: the deterministic count docs/tools.md shows (the budget
    test also counts with the o200k_base tokenizer when bpe-openai is installed)."""
    return -(-len(model_text(definition).encode("utf-8")) // 4)


def _budget(specs: list[Any]) -> list[str]:
    from domain.registry import AREAS
    from domain.toolsets import OPT_IN

    opt_in = [s for s in specs if s.area in OPT_IN]
    specs = [s for s in specs if s.area not in OPT_IN]  # the default listing; opt-in toolsets are counted apart
    total = sum(estimate_tokens(s.definition()) for s in specs) or 1
    lines = [
        "## Context budget",
        "",
        "What a model reads of each tool (name, title, description, inputSchema) in tokens, estimated as compact-JSON "
        "bytes / 4 (tests/test_token_budget.py also counts with the o200k_base tokenizer of the `bpe-openai` package, which "
        'needs no download). A connection can serve fewer toolsets (see docs/stdio.md and README, "Toolsets").',
        "",
        "| Toolset | Tools | ≈Tokens | Share |",
        "|---|---|---|---|",
    ]
    for area in AREAS:
        group = [s for s in specs if s.area == area]
        if group:
            n = sum(estimate_tokens(s.definition()) for s in group)
            lines.append(
                f"| {area}{' (everyday)' if area in EVERYDAY else ''} | {len(group)} | {n} | {100 * n / total:.1f}% |"
            )
    everyday = sum(estimate_tokens(s.definition()) for s in specs if s.area in EVERYDAY)
    lines += [
        f"| **all built** (served by default) | {len(specs)} | {total} | 100% |",
        "",
        f"Everyday set ({', '.join(EVERYDAY)}): ≈{everyday} tokens.",
        "",
    ]
    for area in sorted({s.area for s in opt_in}):
        group = [s for s in opt_in if s.area == area]
        n = sum(estimate_tokens(s.definition()) for s in group)
        lines += [
            f"Opt-in toolset {area}: {len(group)} tools, ≈{n} tokens, not in the default listing over HTTP "
            f"(`/api/mcp/x/{area}` or `X-MCP-Toolsets: {area}` add it; `jentrix mcp` serves it by default).",
            "",
        ]
    return lines


# -- the markdown -----------------------------------------------------------------------------------
def _cell(text: Any) -> str:
    """One markdown table cell: single line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _type_of(schema: dict[str, Any]) -> tuple[str, bool]:
    """A readable type for a property schema and whether ``null`` is accepted."""
    if "anyOf" in schema:
        branches = [b for b in schema["anyOf"] if b.get("type") != "null"]
        nullable = len(branches) != len(schema["anyOf"])
        names = [_type_of(b)[0] for b in branches]
        return " or ".join(names), nullable
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"]), False
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type_of(schema.get('items', {}))[0]}", False
    return str(kind), False


def _bounds(lo: Any, hi: Any, both: str, low: str, high: str) -> list[str]:
    if lo is not None and hi is not None:
        return [both.format(lo=lo, hi=hi)]
    if lo is not None:
        return [low.format(lo=lo)]
    if hi is not None:
        return [high.format(hi=hi)]
    return []


def _constraints(schema: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for branch in [schema, *schema.get("anyOf", [])]:
        out += _bounds(
            branch.get("minLength"),
            branch.get("maxLength"),
            "{lo}-{hi} chars",
            "at least {lo} chars",
            "at most {hi} chars",
        )
        out += _bounds(branch.get("minimum"), branch.get("maximum"), "{lo}-{hi}", ">= {lo}", "<= {hi}")
        if "pattern" in branch:
            out.append(f"pattern `{branch['pattern']}`")
    return out


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _arguments_table(schema: dict[str, Any]) -> list[str]:
    props: dict[str, Any] = schema.get("properties", {})
    if not props:
        return ["This tool takes no arguments.", ""]
    required = set(schema.get("required", []))
    lines = ["| Argument | Type | Required | Default | Constraints | Description |", "|---|---|---|---|---|---|"]
    for name, prop in props.items():
        kind, nullable = _type_of(prop)
        if nullable:
            kind += " or null"
        default = f"`{json.dumps(prop['default'], ensure_ascii=False)}`" if "default" in prop else ""
        lines.append(
            f"| `{name}` | {_cell(kind)} | {_yes(name in required)} | {_cell(default)} | "
            f"{_cell('; '.join(_constraints(prop)))} | {_cell(prop.get('description', ''))} |"
        )
    lines.append("")
    return lines


def _overview(specs: list[Any]) -> list[str]:
    lines = [
        "| Tool | Scope | Read-only | Destructive | Idempotent | Keyed | Min role | ≈Tokens | Description |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in specs:
        lines.append(
            f"| [`{s.name}`](#{s.name}) | {s.scope} | {_yes(s.read_only)} | {_yes(s.destructive)} | {_yes(s.idempotent)} | "
            f"{_yes(s.keyed)} | {s.min_role or '-'} | {estimate_tokens(s.definition())} | {_cell(s.description)} |"
        )
    lines.append("")
    return lines


def render_markdown() -> str:
    from domain.registry import AREAS
    from domain.toolsets import OPT_IN

    specs = _specs()
    lines = [
        "# Tools",
        "",
        f"<!-- Generated by scripts/gen_tool_docs.py from the tool registry. Do not edit by hand: rerun `{REGENERATE}`. -->",
        "",
        f"The server offers {len(specs)} tools, grouped below by area; `tools/list` returns them sorted by name.",
        "",
        "- **Scope**: the token scope class a call needs (`read` < `write` < `admin`; a higher scope satisfies a lower one).",
        "- **Read-only / Destructive / Idempotent**: the `readOnlyHint`, `destructiveHint` and `idempotentHint` annotations "
        "(`openWorldHint` is false for every tool: they touch only this service's data).",
        "- **Keyed**: the tool takes an `idempotencyKey`; repeating a call with the same key and arguments returns the first "
        "result, the same key with different arguments is a CONFLICT.",
        "- **Min role**: the lowest workspace role allowed to call it, checked by the pipeline in the workspace of the "
        "entity the tool acts on; `-` means no workspace membership is checked.",
        "- **≈Tokens**: the tool's share of a model's context (see \"Context budget\").",
        "- **Toolsets**: each area below is a toolset a connection can choose (`X-MCP-Toolsets`, `/api/mcp/x/<toolset>`, "
        "`--toolsets`); `X-MCP-Readonly`, `/api/mcp/readonly` and `--read-only` serve only the read-only tools. "
        "Read tools marked with `fields` return only the named row fields (ids always kept).",
        "",
        "## List results",
        "",
        "Every result is an object, and a list sits under one key named by one rule: the plural of its row type as the "
        "catalog names it (`boards`, `tasks`, `comments`, `sessions`, `artifacts`, `links` …). Rows that are not an entity "
        "of their own are named for what they are: `activity` (log entries: the log itself), `results` (search hits and "
        "bulk per-item outcomes, each an entity with how it matched or fared), `matches` (resolve_projects_for_repo: a "
        "project and how it matched the repository), list_task_links' `outgoing` / `incoming` (one task's links, split "
        "by direction), and get_task's `recentActivity` (the newest entries of the task's log, a preview beside the task). Published keys keep their names; tests/test_tool_surface.py checks "
        "the rule on every output schema.",
        "",
        "A list that pages answers `nextCursor` (null on the last page), `notice` (set whenever the answer is cut short, "
        "saying how to go on) and `totalCount`, with two stated exceptions: `list_activity` has no count (a board log may "
        "hold 50k entries, and counting them would mean reading them all), and `list_my_work` answers `totalCount` only when "
        "one call read the whole list (whether a task is open is decided per row as it is read; otherwise null, and the "
        "notice says so). Search results also say `truncated` and `capped` (see docs/search.md).",
        "",
    ]
    lines += _budget(specs)
    for area in AREAS:
        group = [s for s in specs if s.area == area]
        if not group:
            continue
        lines += [f"## Area: {area}", ""]
        lines += _overview(group)
        for s in group:
            definition = s.definition()
            lines += [f"### {s.name}", "", f"**{s.title}** — {s.description}", ""]
            if s.name in BEYOND_CATALOG:
                lines += ["*Extra: beyond the product catalog's 62 tools (issue 14); not in the seed table.*", ""]
            if s.area in OPT_IN:
                lines += ["*Opt-in toolset: not listed over HTTP unless asked for; see docs/coordination.md.*", ""]
            lines += _arguments_table(definition["inputSchema"])
            result_fields = ", ".join(f"`{k}`" for k in definition["outputSchema"].get("properties", {}))
            if result_fields:
                lines += [f"Result fields: {result_fields}.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# -- entry point ----------------------------------------------------------------------------------
def outputs(docs: Path = DOCS_PATH, snapshot_dir: Path = SNAPSHOT_DIR) -> dict[Path, str]:
    from domain.catalog import MANIFEST, render_manifest

    return {docs: render_markdown(), **render_snapshots(snapshot_dir), MANIFEST: render_manifest(_specs())}


def orphans(snapshot_dir: Path, files: dict[Path, str]) -> list[Path]:
    """Snapshot files of tools that no longer exist."""
    if not snapshot_dir.is_dir():
        return []
    return sorted(p for p in snapshot_dir.glob("*.json") if p not in files)


def stale(files: dict[Path, str]) -> list[Path]:
    return [path for path, text in files.items() if not path.exists() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate docs/tools.md and the per-tool definition snapshots from the registry."
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any file is out of date")
    parser.add_argument("--docs", type=Path, default=DOCS_PATH, help="markdown output (default: docs/tools.md)")
    parser.add_argument(
        "--snapshot-dir",
        type=Path,
        default=SNAPSHOT_DIR,
        help="one JSON file per tool (default: tests/snapshots/tools/)",
    )
    args = parser.parse_args(argv)
    files = outputs(args.docs, args.snapshot_dir)
    extra = orphans(args.snapshot_dir, files)
    if args.check:
        behind = stale(files) + extra
        for path in behind:
            print(f"stale: {path} does not match the tool registry", file=sys.stderr)
        if behind:
            print(f"Regenerate with: {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    for path in extra:
        path.unlink()
        print(f"removed {path} (no such tool)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
