#!/usr/bin/env bash
# The whole test suite. Tests start and stop DynamoDB Local themselves.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
.venv/bin/python -m pytest tests -q -n 2 "$@"
rc=$?
[ $rc -eq 5 ] && { echo "no tests ran" >&2; exit 1; }
exit $rc
