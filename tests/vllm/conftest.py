"""A real vLLM server on 127.0.0.1 (CPU build, tiny random model) for the ``vllm`` test group.

The group runs only when selected (``-m vllm``, or ``TCFL_VLLM=1``), so a plain ``pytest`` of the
whole suite never installs or starts vLLM on a shared machine. Session fixtures, in order: the
vLLM venv (``scripts/vllm-cpu-env.sh``: created once, then reused; ``TCFL_VLLM_VENV`` may point at
a ready one), a tiny model built inside that venv, and the server. When the venv cannot be had
(no network, install fails) the tests skip with the reason, or fail when ``TCFL_VLLM_REQUIRED=1``.
Once the venv is there, a model or server that does not come up is a failure, reported with the
tail of its log. Timings are printed in the terminal summary.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV_SCRIPT = ROOT / "scripts" / "vllm-cpu-env.sh"
BUILDER = Path(__file__).with_name("tiny_model.py")
DEFAULT_VENV = Path.home() / ".cache" / "tcfl" / "vllm-cpu-venv"
READY_MARKER = ".tcfl-ready"
SERVED_MODEL = "tcfl-tiny-qwen"
INSTALL_TIMEOUT_S = 1500.0
BUILD_TIMEOUT_S = 300.0
STOP_GRACE_S = 20.0
LOG_TAIL_LINES = 60

TIMINGS = pytest.StashKey[dict[str, list[float]]]()


@dataclass(frozen=True)
class VllmServer:
    url: str  # OpenAI-compatible base URL, ending in /v1
    model: str  # the name the server lists at /v1/models
    pid: int
    log_path: Path


def _timings(config: pytest.Config) -> dict[str, list[float]]:
    if TIMINGS not in config.stash:
        config.stash[TIMINGS] = {}
    return config.stash[TIMINGS]


def _record(config: pytest.Config, name: str, seconds: float) -> None:
    _timings(config).setdefault(name, []).append(seconds)


@pytest.fixture(scope="session")
def vllm_timings(pytestconfig: pytest.Config) -> dict[str, list[float]]:
    """Named durations in seconds, shown in the terminal summary (tests add request latencies)."""
    return _timings(pytestconfig)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    timings = config.stash.get(TIMINGS, None)
    if not timings:
        return
    terminalreporter.section("vLLM timings")
    for name, values in timings.items():
        if len(values) == 1:
            terminalreporter.write_line(f"{name}: {values[0]:.2f} s")
        else:
            ms = sorted(v * 1000 for v in values)
            terminalreporter.write_line(
                f"{name}: n={len(ms)} median={statistics.median(ms):.0f} ms "
                f"min={ms[0]:.0f} ms max={ms[-1]:.0f} ms total={sum(ms) / 1000:.2f} s"
            )


def _unavailable(reason: str) -> None:
    if os.environ.get("TCFL_VLLM_REQUIRED") == "1":
        pytest.fail(f"vLLM required (TCFL_VLLM_REQUIRED=1) but unavailable: {reason}", pytrace=False)
    print(f"\n[vllm] skipping: {reason}", file=sys.stderr)
    pytest.skip(f"vLLM unavailable: {reason}")


def _tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _imports_vllm(python: Path) -> bool:
    if not python.is_file():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import vllm, transformers, tokenizers"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    return probe.returncode == 0


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment minus what would leak the project venv into the vLLM one."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"})
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def vllm_python(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a ready vLLM venv, creating the venv when needed."""
    if "vllm" not in (pytestconfig.getoption("markexpr") or "") and os.environ.get("TCFL_VLLM") != "1":
        pytest.skip("the vllm group runs only when selected: pytest -m vllm tests/vllm (or TCFL_VLLM=1)")
    configured = os.environ.get("TCFL_VLLM_VENV")
    venv = Path(configured).expanduser() if configured else DEFAULT_VENV
    python = venv / "bin" / "python"
    if configured and not (venv / READY_MARKER).is_file() and _imports_vllm(python):
        return python
    if not ENV_SCRIPT.is_file():
        _unavailable(f"{ENV_SCRIPT} is missing")
    log_path = tmp_path_factory.mktemp("vllm-env") / "install.log"
    started = time.perf_counter()
    try:
        with log_path.open("w") as log:
            done = subprocess.run(
                ["bash", str(ENV_SCRIPT)],
                env=_clean_env(TCFL_VLLM_VENV=str(venv)),
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            )
    except subprocess.TimeoutExpired:
        _unavailable(f"creating {venv} took over {INSTALL_TIMEOUT_S:.0f} s; log {log_path}")
    _record(pytestconfig, "venv ready (install or check)", time.perf_counter() - started)
    output = log_path.read_text(errors="replace")
    if done.returncode != 0:
        _unavailable(f"scripts/vllm-cpu-env.sh exited {done.returncode}:\n{_tail(output, 20)}")
    return python


@pytest.fixture(scope="session")
def tiny_model_dir(
    vllm_python: Path, pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A random Qwen2 model with a BPE tokenizer trained on this repository's Python files."""
    out = tmp_path_factory.mktemp("vllm-model")
    started = time.perf_counter()
    done = build_tiny_model(vllm_python, out)
    if done.returncode != 0:
        pytest.fail(
            f"building the tiny model failed ({done.returncode}):\n{_tail(done.stderr)}", pytrace=False
        )
    _record(pytestconfig, "tiny model built", time.perf_counter() - started)
    return out


def build_tiny_model(python: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """Run ``tiny_model.py`` in the vLLM venv (also used by ``scripts/vllmbench.py``)."""
    corpus = ["--corpus", str(ROOT / "app"), "--corpus", str(ROOT / "tests")]
    return subprocess.run(
        [str(python), str(BUILDER), str(out), *corpus],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )


def server_env(work: Path) -> dict[str, str]:
    """The server's environment, its temporary files and caches under ``work`` (made here)."""
    for sub in ("tmp", "cache", "inductor", "hf"):
        (work / sub).mkdir(exist_ok=True)
    return _clean_env(
        VLLM_HOST_IP="127.0.0.1",
        VLLM_CPU_KVCACHE_SPACE="1",
        TMPDIR=str(work / "tmp"),
        VLLM_CACHE_ROOT=str(work / "cache"),
        TORCHINDUCTOR_CACHE_DIR=str(work / "inductor"),
        HF_HOME=str(work / "hf"),
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server by PID; after a grace period SIGKILL whatever is left of its process group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_GRACE_S)
    deadline = time.monotonic() + 5.0
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _group_alive(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=STOP_GRACE_S)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _start(python: Path, model_dir: Path, work: Path, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    """Launch the server; ``work`` holds its temporary files and caches (short: it holds ZMQ sockets)."""
    env = server_env(work)
    command = [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        SERVED_MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enforce-eager",
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "2048",
        "--max-num-seqs",
        "4",
        "--structured-outputs-config",
        '{"backend":"xgrammar","disable_any_whitespace":true}',
    ]
    with log_path.open("ab") as log:
        log.write(f"$ {' '.join(command)}\n".encode())
        log.flush()
        return subprocess.Popen(
            command, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, deadline: float) -> str | None:
    """None once ``GET /health`` answers 200; otherwise why not."""
    url = f"http://127.0.0.1:{port}/health"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"the server exited with status {proc.returncode}"
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return None
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return "the server did not become healthy in time"


@pytest.fixture(scope="session")
def vllm_server(
    vllm_python: Path,
    tiny_model_dir: Path,
    pytestconfig: pytest.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[VllmServer]:
    """A vLLM OpenAI-compatible server on 127.0.0.1, stopped by PID at the end of the session."""
    start_timeout = float(os.environ.get("TCFL_VLLM_START_TIMEOUT", "300"))
    log_path = tmp_path_factory.mktemp("vllm-server") / "server.log"
    # Unix socket paths are limited to 107 bytes, so keep the server's TMPDIR short, whatever basetemp is.
    work = Path(tempfile.mkdtemp(prefix="tcfl-vllm-"))
    for attempt in (1, 2):
        port = _free_port()
        started = time.perf_counter()
        proc = _start(vllm_python, tiny_model_dir, work, port, log_path)
        why = _wait_healthy(proc, port, time.monotonic() + start_timeout)
        if why is None:
            break
        _stop(proc)
        shutil.rmtree(work / "tmp", ignore_errors=True)
        log_text = log_path.read_text(errors="replace")
        if attempt == 1 and "address already in use" in log_text.lower():
            continue
        shutil.rmtree(work, ignore_errors=True)
        pytest.fail(
            f"vLLM on port {port}: {why} (limit {start_timeout:.0f} s, TCFL_VLLM_START_TIMEOUT); "
            f"log {log_path}, last lines:\n{_tail(log_text)}",
            pytrace=False,
        )
    _record(pytestconfig, "server healthy", time.perf_counter() - started)
    try:
        yield VllmServer(
            url=f"http://127.0.0.1:{port}/v1", model=SERVED_MODEL, pid=proc.pid, log_path=log_path
        )
    finally:
        _stop(proc)
        shutil.rmtree(work, ignore_errors=True)
