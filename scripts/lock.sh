#!/usr/bin/env bash
# Regenerates the dependency locks from pyproject.toml (docs/deploy.md, "Locked dependencies"):
#   requirements/dev.txt      everything the tests and CI install (runtime + [local] + [test])
#   requirements/runtime.txt  what the Lambda artifact bundles, at the same versions as dev.txt
# Both are universal (every platform and Python >= 3.11 in one file, markers where they differ)
# and carry the sha256 of every wheel and sdist of each pinned release, arm64 and x86_64 alike.
# Existing pins are kept unless pyproject.toml needs otherwise; pass --upgrade (or
# --upgrade-package NAME) to move them, then run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-uv}
command -v "$UV" >/dev/null || UV=.venv/bin/uv
[ -x "$UV" ] || command -v "$UV" >/dev/null || { echo "uv is needed to lock: .venv/bin/pip install uv" >&2; exit 1; }
common=(--universal --python-version 3.11 --generate-hashes --no-annotate --custom-compile-command "bash scripts/lock.sh" -q)
"$UV" pip compile pyproject.toml --extra local --extra test "${common[@]}" "$@" -o requirements/dev.txt
"$UV" pip compile pyproject.toml "${common[@]}" -c requirements/dev.txt -o requirements/runtime.txt
