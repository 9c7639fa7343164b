"""What the catalog's size costs at cold start: 17 real tools vs 17 + 45 synthetic ones (62).

Fresh interpreters, interleaved: each imports the Lambda entry (the product catalog, 17 tools)
and then declares 45 synthetic tools shaped like the real ones (``benchmarks._synthetic_catalog``)
— with pydantic's ``defer_build`` (what the product uses) and without it — and reports, from
inside, the milliseconds of each step plus the cost of validating one call of a synthetic tool
(its validator is built then, when deferred). Medians, min-max and ratios.

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
t0 = time.perf_counter()
import functions.lambda_handler  # noqa: F401  (the product: 17 tools, models declared)
t1 = time.perf_counter()
mode = sys.argv[1]
extra = first = 0.0
if mode != "17":
    from benchmarks._synthetic_catalog import build
    reg = build(45, defer=(mode == "62-deferred"))
    t2 = time.perf_counter()
    spec = reg.get("synthetic_00")
    spec.input_model.model_validate({"taskId": "tk_x", "limit": 5})
    t3 = time.perf_counter()
    extra, first = t2 - t1, t3 - t2
print(json.dumps({"import": t1 - t0, "extra": extra, "first_validate": first}))
"""
MODES = ("17", "62-deferred", "62-eager")


def one(mode: str) -> dict[str, float]:
    out = subprocess.run([S.PYTHON, "-c", CHILD, mode], cwd=S.REPO, env=S.child_env(), capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    samples: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            samples[mode].append(one(mode))
    rows = []
    for mode in MODES:
        imp = S.summary([s["import"] + s["extra"] for s in samples[mode]])
        extra = S.summary([s["extra"] for s in samples[mode]])
        first = S.summary([s["first_validate"] for s in samples[mode]])
        rows.append([f"{mode} tools", imp.ms(), extra.ms() if mode != "17" else "—", first.ms() if mode != "17" else "—"])
    base = [s["import"] + s["extra"] for s in samples["17"]]
    deferred = [s["import"] + s["extra"] for s in samples["62-deferred"]]
    eager = [s["import"] + s["extra"] for s in samples["62-eager"]]
    body = "\n".join([
        "## Catalog growth",
        "",
        "`python -m benchmarks.catalog_growth`",
        "",
        S.machine_line(),
        "",
        f"Fresh interpreters, {args.rounds} interleaved rounds; import of the Lambda entry plus 45 synthetic tools shaped like the real ones; medians (min-max).",
        "",
        S.table(["catalog", "import (entry + extra tools)", "the 45 extra tools alone", "first validation of an extra tool"], rows),
        "",
        f"62 tools deferred / 17 tools: **{S.ratios_of_pairs(deferred, base).median:.2f}x**; 62 tools eager / 17 tools: "
        f"{S.ratios_of_pairs(eager, base).median:.2f}x. With `defer_build`, declaring a tool costs its class creation only; its "
        "validator is built by its first call, so a cold Lambda pays for the tools it serves.",
    ])
    print(body)
    if not args.no_write:
        S.write_section("catalog_growth", body)


if __name__ == "__main__":
    main()
