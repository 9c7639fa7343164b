"""Cold start, ours against the official SDK and against the floor, in fresh interpreters.

Each sample is one new Python process (what a Lambda cold start pays): it imports the Lambda
entry and answers one ``tools/call get_task`` carried by an API Gateway REST event, against a
DynamoDB Local this command starts. The kinds of process, run interleaved round by round:

* ``ours``  — ``functions.lambda_handler.handler`` as a function initialized on demand (the
  registry from the manifest, a tool's module imported by its first call);
* ``pre``   — the same with ``AWS_LAMBDA_INITIALIZATION_TYPE=provisioned-concurrency``: init
  imports every tool module and builds every validator (functions/priming.py), so the first
  call should cost what a warm one does;
* ``snap`` — the deployed configuration (template.yaml: SnapStart on published versions): init
  as SnapStart runs it at publish time (``AWS_LAMBDA_INITIALIZATION_TYPE=snap-start``: the whole
  catalog, no connection), then the after-restore hooks it registered, then the first call —
  what a restored environment pays. The restore itself (Lambda resuming the memory snapshot)
  cannot happen here; its cold init from outside is not reported;
* ``gw``, ``pre-gw``, ``snap-gw`` — ``ours``, ``pre`` and ``snap`` behind the deployed gateway: each event carries the
  context our Lambda authorizer returns for the token, so no call of the function reads the
  token (reported as first vs warm only: the SDK server has no authorizer to compare with);
* ``sdk``   — ``benchmarks.sdk_server.handler`` (the SDK's ``MCPServer`` behind Mangum, the same
  pipeline inside the tool);
* ``floor`` — a bare import of the declared runtime dependencies (the ``dependencies`` of
  ``pyproject.toml``, read from the installed metadata: :func:`floor_modules`), no call.

Our packages are compiled to bytecode first (``compileall``), as ``jentrix package`` ships them:
a Lambda's file system is read-only, so a source-only artifact would compile every module on
every cold start, and so would a checkout run with ``PYTHONDONTWRITEBYTECODE`` set. Likewise
every side (the SDK's and the floor too) imports botocore as the artifact bundles it
(:func:`benchmarks._support.deployed_botocore`); ``--full-botocore`` uses this environment's.

Cold init is measured from outside: from ``Popen`` until the child reports that its first
call has returned. The child also reports, from inside, its import time, the first call and
seven warm calls after it. Then ``python -X importtime`` shows where our import goes.

Run: .venv/bin/python -m benchmarks.cold_start [--rounds 7] [--full-botocore] [--no-write]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata as md
import json
import os
import re
import subprocess
import time
from typing import Any

from benchmarks import _support as S

KINDS = ("ours", "pre", "snap", "gw", "pre-gw", "snap-gw", "sdk", "floor")
# "pre": ours in a Lambda environment initialized ahead of its requests (provisioned concurrency;
# SnapStart snapshots the same init): the whole catalog imported and primed during init.
# "gw", "pre-gw": ours on demand / pre-initialized behind the deployed gateway: every event carries
# our Lambda authorizer's context, so no call reads the token (first vs warm only: the SDK side
# has no authorizer to compare with).
PRE_ENV = {"AWS_LAMBDA_INITIALIZATION_TYPE": "provisioned-concurrency"}
SNAP_ENV = {"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
CALLERS = tuple(k for k in KINDS if k != "floor")  # the kinds that answer calls (the floor only imports)


def floor_modules() -> list[str]:
    """The top-level modules of the declared runtime dependencies (``pyproject.toml``'s
    ``dependencies``, read from the installed metadata, extras left out): what the floor imports."""

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    by_dist: dict[str, list[str]] = {}
    for module, dists in md.packages_distributions().items():
        for dist in dists:
            by_dist.setdefault(norm(dist), []).append(module)
    out = []
    for req in md.requires("jentrix-mcp") or []:
        if "extra ==" in req:
            continue
        dist = norm(re.match(r"[A-Za-z0-9._-]+", req)[0])  # type: ignore[index]
        out += sorted(m for m in by_dist.get(dist, []) if not m.startswith("_"))
    return out


def one(kind: str, env: dict[str, str], token: str, task_id: str, authorizer: dict[str, str]) -> dict[str, Any]:
    argv = [S.PYTHON, "-m", "benchmarks._cold_child", kind if kind in ("sdk", "floor") else "ours"]
    if kind.startswith("pre"):
        env = {**env, **PRE_ENV}
    elif kind.startswith("snap"):
        env = {**env, **SNAP_ENV}
    if kind.endswith("gw"):
        env = {**env, "BENCH_AUTHORIZER_CONTEXT": json.dumps(authorizer)}
    argv += [token, task_id] if kind != "floor" else floor_modules()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=S.REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    outer = time.perf_counter() - start
    rest = proc.stdout.read()
    err = proc.stderr.read() if proc.stderr else ""
    if proc.wait(timeout=60) != 0 or not first:
        raise RuntimeError(f"{kind} child failed: {err[-2000:]}")
    data = json.loads(first)
    for line in rest.splitlines():
        data.update(json.loads(line))
    data["outer"] = outer
    return data


def importtime(
    env: dict[str, str], module: str, top: int = 12
) -> tuple[list[tuple[str, float]], list[tuple[str, float]], float]:
    """``python -X importtime -c 'import module'``: (self time summed per top-level package,
    the largest single self times, total). Summing self times partitions the total exactly."""
    out = subprocess.run(
        [S.PYTHON, "-X", "importtime", "-c", f"import {module}"],
        cwd=S.REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    per_package: dict[str, float] = {}
    selfs: list[tuple[str, float]] = []
    for line in out.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cum_us, name = line[len("import time:") :].split("|", 2)
        mod = name.strip()
        seconds = int(self_us.strip()) / 1e6
        selfs.append((mod, seconds))
        pkg = mod.split(".")[0]
        per_package[pkg] = per_package.get(pkg, 0.0) + seconds
    total = sum(per_package.values())
    selfs.sort(key=lambda x: -x[1])
    return sorted(per_package.items(), key=lambda x: -x[1])[:top], selfs[:top], total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md alone")
    p.add_argument(
        "--full-botocore",
        action="store_true",
        help="every side imports this environment's full botocore instead of the artifact's slim copy",
    )
    args = p.parse_args(argv)
    began = time.perf_counter()

    S.compile_bytecode()
    with S.Stack() as stack, contextlib.ExitStack() as cleanup:
        actor = stack.actor()
        task_id = S.board_with_tasks(actor, 1)["tasks"][0]["id"]
        from domain import auth

        authorizer = auth.authorizer_context(actor.principal)  # what functions/authorizer.py answers for this token
        env = stack.child_env()
        if not args.full_botocore:  # every side imports the botocore the artifact ships
            env["PYTHONPATH"] = f"{cleanup.enter_context(S.deployed_botocore())}{os.pathsep}{env['PYTHONPATH']}"
        samples: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
        # One discarded child first: DynamoDB Local answers a new process's first requests
        # slowly (its own JIT warming up), which would otherwise land on round 1's first kind.
        one("ours", env, actor.token, task_id, authorizer)
        for r in range(args.rounds):
            order = KINDS[r % len(KINDS) :] + KINDS[: r % len(KINDS)]
            for kind in order:
                samples[kind].append(one(kind, env, actor.token, task_id, authorizer))
        cum, selfs, total = importtime(env, "functions.lambda_handler")
        _sdk_pkgs, _, sdk_total = importtime(env, "benchmarks.sdk_server", top=6)

    outer = {k: [s["outer"] for s in v] for k, v in samples.items()}
    o, pre, s, f = (S.summary(outer[k]) for k in ("ours", "pre", "sdk", "floor"))
    vs_sdk = S.ratios_of_pairs(outer["ours"], outer["sdk"])
    vs_floor = S.ratios_of_pairs(outer["ours"], outer["floor"])
    sdk_floor = S.ratios_of_pairs(outer["sdk"], outer["floor"])
    inner: dict[str, dict[str, S.Summary]] = {}
    for k in CALLERS:
        inner[k] = {
            "import": S.summary([x["import"] for x in samples[k]]),
            "first": S.summary([x["first"] for x in samples[k]]),
            "warm": S.summary([w for x in samples[k] for w in x["warm"]]),
        }
    floor_import = S.summary([x["import"] for x in samples["floor"]])
    first_over_warm = {
        k: S.summary([x["first"] / sorted(x["warm"])[len(x["warm"]) // 2] for x in samples[k]]) for k in CALLERS
    }
    pre_vs_sdk = S.ratios_of_pairs(outer["pre"], outer["sdk"])
    # the first call reads the token (nothing is cached yet); so do these warm calls
    first_over_uncached = {
        k: S.summary([x["first"] / sorted(x["uncached"])[len(x["uncached"]) // 2] for x in samples[k]])
        for k in ("ours", "pre", "snap")
    }
    restore = {k: S.summary([x["restore"] for x in samples[k]]) for k in ("snap", "snap-gw")}

    lines = [
        S.machine_line(),
        "",
        f"Fresh interpreters, {args.rounds} interleaved rounds (ours on demand, ours pre-initialized, SDK, floor); medians with min-max; "
        "ratios are medians of per-round ratios. Bytecode compiled ahead for every side; "
        + (
            "every side imports this environment's full botocore (`--full-botocore`)"
            if args.full_botocore
            else "every side imports botocore as the artifact ships it (`infra.package.slim_botocore`: five model directories, "
            "endpoints.json cut to their entries; `--full-botocore` measures the full copy)"
        )
        + "; the floor imports "
        f"{', '.join(f'`{m}`' for m in floor_modules())}.",
        "",
        S.table(
            (
                "",
                "ours, on demand",
                "ours, pre-initialized",
                "SDK (MCPServer + Mangum)",
                "floor (runtime deps imported)",
            ),
            [
                ("cold init, outside wall (spawn -> first reply)", o.ms(0), pre.ms(0), s.ms(0), f.ms(0)),
                (
                    "import (init), inside",
                    inner["ours"]["import"].ms(0),
                    inner["pre"]["import"].ms(0),
                    inner["sdk"]["import"].ms(0),
                    floor_import.ms(0),
                ),
                (
                    "first tools/call get_task",
                    inner["ours"]["first"].ms(1),
                    inner["pre"]["first"].ms(1),
                    inner["sdk"]["first"].ms(1),
                    "—",
                ),
                (
                    "warm call (7 per process)",
                    inner["ours"]["warm"].ms(1),
                    inner["pre"]["warm"].ms(1),
                    inner["sdk"]["warm"].ms(1),
                    "—",
                ),
                (
                    "first / warm",
                    f"{first_over_warm['ours'].median:.2f}x",
                    f"{first_over_warm['pre'].median:.2f}x",
                    f"{first_over_warm['sdk'].median:.1f}x",
                    "—",
                ),
                (
                    "warm call reading the token (token cache emptied)",
                    S.summary([w for x in samples["ours"] for w in x["uncached"]]).ms(1),
                    S.summary([w for x in samples["pre"] for w in x["uncached"]]).ms(1),
                    "—",
                    "—",
                ),
                (
                    "first / warm reading the token (the same requests)",
                    f"{first_over_uncached['ours'].median:.2f}x",
                    f"{first_over_uncached['pre'].median:.2f}x",
                    "—",
                    "—",
                ),
            ],
        ),
        "",
        "Behind the deployed gateway every event carries the Lambda authorizer's context, so no call of the function "
        "reads the token (the authorizer, its own function with its own cache, did); same children otherwise:",
        "",
        S.table(
            ("behind the authorizer", "ours, on demand", "ours, pre-initialized"),
            [
                ("cold init, outside wall", S.summary(outer["gw"]).ms(0), S.summary(outer["pre-gw"]).ms(0)),
                ("first tools/call get_task", inner["gw"]["first"].ms(1), inner["pre-gw"]["first"].ms(1)),
                ("warm call", inner["gw"]["warm"].ms(1), inner["pre-gw"]["warm"].ms(1)),
                (
                    "first / warm",
                    f"{first_over_warm['gw'].median:.2f}x ({first_over_warm['gw'].lo:.2f}-{first_over_warm['gw'].hi:.2f})",
                    f"**{first_over_warm['pre-gw'].median:.2f}x** ({first_over_warm['pre-gw'].lo:.2f}-{first_over_warm['pre-gw'].hi:.2f})",
                ),
            ],
        ),
        "",
        "**SnapStart, the deployed configuration** (template.yaml, `SnapStart`): Lambda runs the init once when a "
        "version is published and resumes new environments from its snapshot. A restored environment pays the resume "
        "(Lambda's, not measurable here), the after-restore hook init registered (functions/priming.py: reseed, open six "
        "DynamoDB connections) and its first call; each child here ran the init as SnapStart does, then that hook, then the calls:",
        "",
        S.table(
            ("SnapStart, restored", "reading the token", "behind the authorizer"),
            [
                ("after-restore hook", restore["snap"].ms(1), restore["snap-gw"].ms(1)),
                ("first tools/call get_task", inner["snap"]["first"].ms(1), inner["snap-gw"]["first"].ms(1)),
                ("warm call", inner["snap"]["warm"].ms(1), inner["snap-gw"]["warm"].ms(1)),
                (
                    "first / warm",
                    f"{first_over_warm['snap'].median:.2f}x ({first_over_warm['snap'].lo:.2f}-{first_over_warm['snap'].hi:.2f})",
                    f"**{first_over_warm['snap-gw'].median:.2f}x** ({first_over_warm['snap-gw'].lo:.2f}-{first_over_warm['snap-gw'].hi:.2f})",
                ),
                (
                    "first / warm reading the token (the same requests)",
                    f"**{first_over_uncached['snap'].median:.2f}x** "
                    f"({first_over_uncached['snap'].lo:.2f}-{first_over_uncached['snap'].hi:.2f})",
                    "—",
                ),
            ],
        ),
        "",
        f"Ratios of cold init: ours/SDK **{vs_sdk.median:.2f}x** ({vs_sdk.lo:.2f}-{vs_sdk.hi:.2f}), "
        f"ours/floor **{vs_floor.median:.2f}x** ({vs_floor.lo:.2f}-{vs_floor.hi:.2f}), SDK/floor {sdk_floor.median:.2f}x; "
        f"pre-initialized/SDK {pre_vs_sdk.median:.2f}x (its init is paid before traffic arrives).",
        "",
        "Init-phase priming (functions/priming.py), median milliseconds per step: "
        + "; ".join(
            f"{label}: "
            + ", ".join(
                f"{step} {S.summary([x['primed'][step] for x in samples[k] if isinstance(x['primed'].get(step), (int, float))]).median:.1f}"
                for step in samples[k][0]["primed"]
            )
            for label, k in (("on demand", "ours"), ("pre-initialized", "pre"), ("SnapStart", "snap"))
        )
        + ".",
        "",
        f"`python -X importtime -c 'import functions.lambda_handler'` (one run, {total * 1000:.0f} ms in total; the SDK module: {sdk_total * 1000:.0f} ms). "
        "Import time by top-level package (self times summed, so the rows add up to the total):",
        "",
        S.table(
            ("package", "self time", "share"), [(f"`{m}`", f"{c * 1000:.0f} ms", f"{c / total:.0%}") for m, c in cum]
        ),
        "",
        "Largest single modules by self time (the module's own top-level code, its imports excluded); "
        "`functions.http_app`'s self time includes `db.configure()` and `create_app()`, which run at import:",
        "",
        S.table(("module", "self"), [(f"`{m}`", f"{c * 1000:.1f} ms") for m, c in selfs[:10]]),
        "",
        f"_The command took {time.perf_counter() - began:.0f} s._",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        S.write_section("cold_start", "## Cold start\n\n`python -m benchmarks.cold_start`\n\n" + text)
        S.record(
            "cold_init",
            f"ours {o.median * 1000:.0f} ms, SDK {s.median * 1000:.0f} ms, floor {f.median * 1000:.0f} ms: **{vs_sdk.median:.2f}x the SDK, {vs_floor.median:.2f}x the floor**",
            "benchmarks.cold_start",
        )
        S.record(
            "first_call",
            f"deployed (SnapStart, restored): **{first_over_warm['snap-gw'].median:.2f}x** a warm call behind the gateway's authorizer, "
            f"**{first_over_uncached['snap'].median:.2f}x** a warm call making the same requests (both read the token), after a {restore['snap'].median * 1000:.0f} ms after-restore hook; "
            f"provisioned: **{first_over_warm['pre-gw'].median:.2f}x** behind the authorizer, **{first_over_uncached['pre'].median:.2f}x** the same requests; on demand {inner['ours']['first'].median * 1000:.0f} ms ({first_over_warm['ours'].median:.2f}x) vs the SDK's {inner['sdk']['first'].median * 1000:.0f} ms ({first_over_warm['sdk'].median:.1f}x)",
            "benchmarks.cold_start",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
