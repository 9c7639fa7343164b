"""What the catalog's size costs at cold start, with the real 63 tools and with 45 synthetic ones more.

Fresh interpreters, interleaved, each importing the Lambda entry:

* ``on demand`` — the served registry comes from the manifest (``domain.catalog``): no tool
  module is imported, whatever the catalog's size;
* ``all modules`` — ``JENTRIX_EAGER_CATALOG=1`` without the priming that comes with it: the
  registry imports every tool module (the design before the manifest), validators deferred;
* ``pre-initialized`` — ``JENTRIX_EAGER_CATALOG=1`` as a provisioned or SnapStart init runs it:
  every module imported and every validator built (functions/priming.py);
* ``on demand + 45`` / ``all modules + 45`` — the same, then 45 synthetic tools shaped like the
  real ones declared (``benchmarks._synthetic_catalog``, deferred), to show how each design grows.

Reported from inside the child: the import, how many tool modules it loaded, and for the synthetic
rows the cost of the 45 declarations. Medians, min-max, ratios of per-round pairs.

Run: .venv/bin/python -m benchmarks.catalog_growth [--rounds 7] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import subprocess

from benchmarks import _support as S

CHILD = r"""
import json, os, sys, time
os.environ.setdefault("AWS_ACCESS_KEY_ID", "x"); os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
os.environ.setdefault("JENTRIX_DYNAMODB_ENDPOINT", "http://127.0.0.1:9")
t0 = time.perf_counter()  # before anything of ours is imported, in every mode
mode = sys.argv[1]
if mode.startswith("all") or mode == "pre":
    os.environ["JENTRIX_EAGER_CATALOG"] = "1"
if mode.startswith("all"):
    from functions import priming
    priming.prime_validators = lambda: 0  # the modules imported, their validators left deferred
import functions.lambda_handler  # noqa: F401
t1 = time.perf_counter()
from domain import catalog
modules = sum(1 for m in catalog.MODULES if f"domain.tools.{m}" in sys.modules)
extra = 0.0
if mode.endswith("+45"):
    from benchmarks._synthetic_catalog import build
    build(45, defer=True)
    extra = time.perf_counter() - t1
print(json.dumps({"import": t1 - t0, "extra": extra, "modules": modules}))
"""
MODES = ("on demand", "all modules", "pre-initialized", "on demand +45", "all modules +45")
ARG = {
    "on demand": "lazy",
    "all modules": "all",
    "pre-initialized": "pre",
    "on demand +45": "lazy+45",
    "all modules +45": "all+45",
}


def one(mode: str) -> dict[str, float]:
    env = {
        k: v for k, v in S.child_env().items() if k not in ("JENTRIX_EAGER_CATALOG", "AWS_LAMBDA_INITIALIZATION_TYPE")
    }
    out = subprocess.run(
        [S.PYTHON, "-c", CHILD, ARG[mode]], cwd=S.REPO, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    S.compile_bytecode()
    samples: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for r in range(args.rounds):
        for mode in MODES[r % len(MODES) :] + MODES[: r % len(MODES)]:
            samples[mode].append(one(mode))
    total = {m: [s["import"] + s["extra"] for s in v] for m, v in samples.items()}
    rows = []
    for mode in MODES:
        extra = S.summary([s["extra"] for s in samples[mode]])
        rows.append(
            [
                mode,
                S.summary(total[mode]).ms(),
                f"{samples[mode][0]['modules']} of 18",
                extra.ms() if mode.endswith("+45") else "—",
                f"{S.ratios_of_pairs(total[mode], total['on demand']).median:.2f}x",
            ]
        )
    body = "\n".join(
        [
            "## Catalog growth",
            "",
            "`python -m benchmarks.catalog_growth`",
            "",
            S.machine_line(),
            "",
            f"Fresh interpreters, {args.rounds} interleaved rounds; the Lambda entry with the real catalog (63 tools), "
            "then, in the +45 rows, 45 synthetic tools shaped like the real ones; medians (min-max).",
            "",
            S.table(
                [
                    "catalog",
                    "import (entry + extra tools)",
                    "tool modules imported",
                    "the 45 extra tools alone",
                    "vs on demand",
                ],
                rows,
            ),
            "",
            "On demand the import does not depend on the size of the catalog the manifest lists (0 tool modules imported): "
            "the registry is read from it and a tool's module (its classes, ~1 ms a tool even with `defer_build`) is imported "
            "by its first call. The 45 synthetic tools are not in the manifest, so the +45 rows declare them in the process: "
            "their extra column is what 45 more tools would add to every cold start without the manifest. Importing every "
            "module is what a pre-initialized environment does on purpose, since its init is paid before traffic.",
        ]
    )
    print(body)
    if not args.no_write:
        S.write_section("catalog_growth", body)


if __name__ == "__main__":
    main()
