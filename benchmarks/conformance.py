"""The official MCP conformance suite (@modelcontextprotocol/conformance) against our servers.

Two suite lines, each installed under ``.jentrix/conformance/<version>`` (``--install`` does
it with npm) and run with the Node 22 from the ``node`` npm package in ``.jentrix/node``:

* 0.1.16, the latest 0.1.x — the handshake era (2025-06-18 / 2025-11-25), its active suite;
* 0.2.0-alpha.12 — the 2026-07-28 revision, ``--requirements 2026-07-28``.

Targets (``benchmarks/conformance_server.py``, both on loopback, on this command's DynamoDB
Local): the test-only fixture server (our protocol layer and HTTP adapter serving the suite's
fixture tools) for the whole suite, and the product server for the scenarios that need no
fixtures. Each run is checked against a baseline in ``conformance/`` that lists, with the
reason, every failure we expect; the suite itself fails a run on an unexpected failure *and*
on a baselined scenario that now passes. Results go to ``conformance/results.json`` and
``docs/conformance.md``.

Run: .venv/bin/python -m benchmarks.conformance [--install] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import _support as S

SUITES = {"0.1.16": [], "0.2.0-alpha.12": ["--requirements", "2026-07-28"]}
PRODUCT_SCENARIOS = {
    "0.1.16": ["server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"],
    "0.2.0-alpha.12": [
        "server-stateless",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
        "caching",
        "http-header-validation",
    ],
}
CONF_DIR = S.REPO / "conformance"
DOC = S.REPO / "docs" / "conformance.md"


def node() -> Path | None:
    path = S.REPO / ".jentrix" / "node" / "node_modules" / ".bin" / "node"
    return path if path.exists() else None


def suite_js(version: str) -> Path:
    return (
        S.REPO
        / ".jentrix"
        / "conformance"
        / version
        / "node_modules"
        / "@modelcontextprotocol"
        / "conformance"
        / "dist"
        / "index.js"
    )


def missing() -> str | None:
    """Why the suite cannot run here, or None."""
    if node() is None:
        return "node@22 is not installed under .jentrix/node (bash scripts/setup.sh installs it)"
    absent = [v for v in SUITES if not suite_js(v).exists()]
    if absent:
        return f"@modelcontextprotocol/conformance {', '.join(absent)} not installed (python -m benchmarks.conformance --install)"
    return None


def install() -> None:
    npm = shutil.which("npm")
    if not npm:
        raise SystemExit("npm is needed to install the conformance suite")
    for v in SUITES:
        if not suite_js(v).exists():
            prefix = S.REPO / ".jentrix" / "conformance" / v
            prefix.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(prefix),
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    f"@modelcontextprotocol/conformance@{v}",
                ],
                check=True,
            )


def baseline(version: str, target: str) -> Path:
    return CONF_DIR / f"baseline-{target}-{version}.yml"


def run_suite(version: str, url: str, target: str, scenarios: list[str] | None) -> dict[str, Any]:
    """Run one suite line against ``url``; returns per-scenario checks and the exit codes."""
    out_dir = Path(tempfile.mkdtemp(prefix=f"conformance-{target}-{version}-"))
    base = [str(node()), str(suite_js(version)), "server", "--url", url, "-o", str(out_dir)]
    bl = baseline(version, target)
    if bl.exists():
        base += ["--expected-failures", str(bl)]
    runs = (
        [base + SUITES[version]]
        if scenarios is None
        else [
            base + ["--scenario", s] + (["--spec-version", "2026-07-28"] if version.startswith("0.2") else [])
            for s in scenarios
        ]
    )
    codes, tail = [], []
    started = time.perf_counter()
    for argv in runs:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        codes.append(proc.returncode)
        tail.append((proc.stdout + proc.stderr)[-1500:])
    elapsed = time.perf_counter() - started
    scenarios_out: dict[str, Any] = {}
    for checks_file in sorted(out_dir.glob("server-*/checks.json")):
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z?$", "", checks_file.parent.name.removeprefix("server-"))
        checks = json.loads(checks_file.read_text())
        scenarios_out[name] = {
            "passed": sum(c.get("status") == "SUCCESS" for c in checks),
            "failed": sum(c.get("status") == "FAILURE" for c in checks),
            "failures": [
                {"check": c.get("id"), "message": (c.get("errorMessage") or "")[:300]}
                for c in checks
                if c.get("status") == "FAILURE"
            ],
            "warnings": [
                {"check": c.get("id"), "message": (c.get("errorMessage") or c.get("description") or "")[:300]}
                for c in checks
                if c.get("status") == "WARNING"
            ],
        }
    shutil.rmtree(out_dir, ignore_errors=True)
    ok = all(c == 0 for c in codes)
    return {
        "version": version,
        "target": target,
        "seconds": round(elapsed, 1),
        "baseline_ok": ok,
        "scenarios": scenarios_out,
        "output_tail": "" if ok else "\n".join(tail)[-4000:],
    }


REASONS: list[tuple[str, str]] = [
    (
        r"404-ping",
        "DEFECT (ours): in the 2026-07-28 era ping is a removed method and must answer HTTP 404 / -32601; "
        "functions/protocol.py still answers it with a result. Left for the protocol owner to fix.",
    ),
    (
        r"Method not found: (prompts|resources|completion|logging)|returned JSON-RPC error -32601: Method not found: (prompts|resources)",
        "not offered: the server declares only the tools capability (no prompts, resources, completion or logging), so those methods answer -32601.",
    ),
    (
        r"No (image|audio|resource) content|Expected multiple content",
        "not supported: the protocol layer renders every result as structuredContent plus one JSON text block; it cannot emit image, audio or embedded-resource blocks.",
    ),
    (
        r"No progress notifications",
        "not supported: the HTTP transport answers each POST with one JSON body (no SSE stream), so there is no channel for progress notifications.",
    ),
    (
        r"did not request (sampling|elicitation)",
        "not supported: server-to-client requests (sampling, elicitation) need a stream or a session; the server is stateless and answers in JSON.",
    ),
    (
        r"x-mcp-header",
        "not applicable: no tool declares x-mcp-header parameters (SEP-2243), so the suite has nothing to exercise.",
    ),
    (
        r"Not testable",
        "not testable: the check needs a diagnostic fixture tool (test_missing_capability, test_streaming_elicitation, test_logging_tool) for features the server does not have.",
    ),
    (
        r"json_schema_2020_12_tool",
        "fixture not offered: its hand-written 2020-12 schema ($schema, $defs, if/then/else) cannot be expressed by our tool definitions, which are generated from pydantic models and inlined.",
    ),
    (
        r"slow_compute|failing_job|greet|protocol_error_job|confirm_delete|multi_input|test_tool_with_task|tasks/|-32021|capabilities.extensions|routing-task|task was created|tasks-",
        "not implemented: the tasks extension (SEP-2663) is not offered, so its fixture tools and tasks/* methods are unknown.",
    ),
    (
        r"input_required|InputRequiredResult|requestState|prompts/get",
        "not implemented: input_required results (SEP-2322, multi-round tool calls) are not produced by the protocol layer.",
    ),
    (
        r"sep-2164",
        "SHOULD, not offered: with no resources capability, resources/read on a missing resource is -32601 (method not found), not -32602 carrying the uri.",
    ),
    (
        r"session ID|sse-multiple-streams",
        "stateless by design: no Mcp-Session-Id is issued and GET is 405, so there are no streams to multiply (the suite reports a warning; the 0.1 line counts the scenario as failed).",
    ),
    (
        r"sep-2322",
        "not implemented: input_required results (SEP-2322) are not produced, so extra inputResponses keys are never looked at.",
    ),
    (r"sep1034|sep1330", "not implemented: elicitation is not supported, so the elicitation fixtures are not offered."),
]


def reason_for(scenario: str, check: str, message: str) -> str:
    text = f"{scenario} {check} {message}"
    for pattern, reason in REASONS:
        if re.search(pattern, text):
            return reason
    return "UNEXPLAINED: look at this failure"


def write_baselines(results: list[dict[str, Any]]) -> None:
    """Baseline files from a run: every failing check, grouped under the reason it fails."""
    CONF_DIR.mkdir(exist_ok=True)
    for r in results:
        groups: dict[str, list[str]] = {}
        per_check = not r["version"].startswith("0.1")  # the 0.1 line baselines whole scenarios only
        for scenario, s in r["scenarios"].items():
            bad = s["failures"] + s["warnings"]  # warnings fail a run too (requirements mode, 0.1 with no passes)
            if not bad or (not per_check and not s["failures"] and s["passed"]):
                continue
            if per_check:
                for f in bad:
                    groups.setdefault(reason_for(scenario, f["check"], f["message"]), []).append(
                        f"{scenario}:{f['check']}"
                    )
            else:
                groups.setdefault(reason_for(scenario, bad[0]["check"], bad[0]["message"]), []).append(scenario)
        lines = [
            f"# Expected failures: suite {r['version']} against the {r['target']} server.",
            "# Written by `python -m benchmarks.conformance --write-baseline`; every entry sits under its reason.",
            "# A listed check that starts passing fails the run: remove it then.",
            "server:",
        ]
        if not groups:
            lines[-1] = "server: []"
        for reason, entries in groups.items():
            lines.append(f"  # {reason}")
            lines += [f"  - {e}" for e in sorted(entries)]
        baseline(r["version"], r["target"]).write_text("\n".join(lines) + "\n")


def start_servers(stack: S.Stack, token: str) -> dict[str, tuple[subprocess.Popen[bytes], int]]:
    from benchmarks.load import _wait_for_port
    from infra.ddb_local import free_port

    env = stack.child_env(JENTRIX_TOKEN=token)
    procs = {}
    for mode in ("fixtures", "product"):
        port = free_port()
        proc = subprocess.Popen(
            [S.PYTHON, "-m", "benchmarks.conformance_server", "--mode", mode, "--port", str(port)],
            cwd=S.REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_port(port, proc)
        procs[mode] = (proc, port)
    return procs


def run_all() -> list[dict[str, Any]]:
    results = []
    with S.Stack() as stack:
        actor = stack.actor()
        procs = start_servers(stack, actor.token)
        try:
            for version in SUITES:
                results.append(run_suite(version, f"http://127.0.0.1:{procs['fixtures'][1]}/api/mcp", "fixtures", None))
                results.append(
                    run_suite(
                        version,
                        f"http://127.0.0.1:{procs['product'][1]}/api/mcp",
                        "product",
                        PRODUCT_SCENARIOS[version],
                    )
                )
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=20)
    return results


def render(results: list[dict[str, Any]], total_seconds: float) -> str:
    reasons = {}
    for path in sorted(CONF_DIR.glob("baseline-*.yml")):
        reasons[path.name] = path.read_text()
    lines = [
        "# Conformance",
        "",
        "Generated by `python -m benchmarks.conformance` (the official `@modelcontextprotocol/conformance` suite, "
        "Node 22). Targets: the test-only fixture server (`benchmarks/conformance_server.py --mode fixtures`: our "
        "protocol layer and HTTP adapter serving the suite's fixture tools through the real pipeline) and the product "
        "server (`--mode product`) for the scenarios that need no fixtures. The suite sends no `Authorization` header; "
        "both servers add the bearer token of a seeded user to requests that lack one, as a configured client would.",
        "",
        f"{S.machine_line()} The whole run took {total_seconds:.0f} s.",
        "",
    ]
    for r in results:
        passed = [n for n, s in r["scenarios"].items() if s["failed"] == 0]
        failed = [n for n, s in r["scenarios"].items() if s["failed"]]
        lines += [
            f"## {r['target']} server, suite {r['version']}"
            + (
                " (`--requirements 2026-07-28`)" if r["version"].startswith("0.2") and r["target"] == "fixtures" else ""
            ),
            "",
            f"{len(passed)} scenarios pass, {len(failed)} fail; {r['seconds']} s; failures match `conformance/{baseline(r['version'], r['target']).name}`: "
            f"**{'yes' if r['baseline_ok'] else 'NO'}**.",
            "",
            S.table(
                ("scenario", "checks passed", "checks failed", "failing checks"),
                [
                    (
                        f"`{n}`",
                        s["passed"],
                        s["failed"],
                        "; ".join(f"`{f['check']}`: {f['message'][:160]}" for f in s["failures"]) or "—",
                    )
                    for n, s in r["scenarios"].items()
                ],
            ),
            "",
        ]
    lines += ["## Baselines (every expected failure, with its reason)", ""]
    for name, text in reasons.items():
        lines += [f"`conformance/{name}`:", "", "```yaml", text.rstrip(), "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--install", action="store_true", help="npm-install the suite versions first")
    p.add_argument("--no-write", action="store_true")
    p.add_argument(
        "--write-baseline", action="store_true", help="rewrite conformance/baseline-*.yml from this run's failures"
    )
    args = p.parse_args(argv)
    if args.install:
        install()
    why = missing()
    if why:
        print(why)
        return 2
    began = time.perf_counter()
    results = run_all()
    if args.write_baseline:
        write_baselines(results)
        results = run_all()  # again, now judged against the baseline just written
    total = time.perf_counter() - began
    for r in results:
        print(f"{r['target']:8} {r['version']:15} baseline ok: {r['baseline_ok']}  ({r['seconds']} s)")
        for n, s in r["scenarios"].items():
            print(f"    {'PASS' if not s['failed'] else 'FAIL'} {n}: {s['passed']} passed, {s['failed']} failed")
        if r["output_tail"]:
            print(r["output_tail"])
    if not args.no_write:
        CONF_DIR.mkdir(exist_ok=True)
        (CONF_DIR / "results.json").write_text(json.dumps(results, indent=2) + "\n")
        DOC.write_text(render(results, total) + "\n")
        S.write_section(
            "conformance",
            "## Conformance\n\n`python -m benchmarks.conformance`: results in docs/conformance.md; "
            + ", ".join(
                f"{r['target']} {r['version']}: {sum(1 for s in r['scenarios'].values() if not s['failed'])}/{len(r['scenarios'])} scenarios pass"
                for r in results
            )
            + f"; {total:.0f} s in all.",
        )
    return 0 if all(r["baseline_ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
