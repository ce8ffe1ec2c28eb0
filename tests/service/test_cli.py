"""``tcfl batch`` and ``tcfl serve`` as commands: real processes, real databases, real files."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from app.store.store import ResultRow
from tests.service.helpers import EXAMPLE, clean_env, example_body, jsonl, standin, tcfl_command, wait_for
from tests.support.terminal import run_on_terminal

pytestmark = pytest.mark.slow  # each test starts tcfl batch/serve processes


def _benchmark_dir(root: Path, count: int) -> Path:
    """Benchmark-format case files (DESIGN §3) built from the running example."""
    folder = root / "cases"
    folder.mkdir()
    for i in range(count):
        case = {
            "id": f"example-{i:02d}",
            "test_files": [{"path": "test_example.py", "content": (EXAMPLE / "test_example.py").read_text()}],
            "failure_log": (EXAMPLE / "failure.log").read_text(),
            "faulty_lines": [{"path": "test_example.py", "line": 3}],
            "log_functions": ["Log.log"],
        }
        (folder / f"case-{i:02d}.json").write_text(json.dumps(case))
    return folder


def _tcfl(
    *args: str, env: dict[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tcfl_command(*args), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def _results(database_url: str) -> int:
    engine = create_engine(database_url)
    try:
        with Session(engine) as session:
            return session.scalar(select(func.count(ResultRow.id))) or 0
    finally:
        engine.dispose()


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_batch_over_a_cases_folder_then_resume_redoes_nothing(database_url: str, tmp_path: Path) -> None:
    folder = _benchmark_dir(tmp_path, 6)
    env = clean_env(TCFL_DATABASE_URL=database_url)
    out = tmp_path / "out.jsonl"
    first = _tcfl("batch", str(folder), "--out", str(out), env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    lines = _read(out)
    assert [line["test_id"] for line in lines] == [f"example-{i:02d}" for i in range(6)]
    assert all(line["status"] == "done" and line["result"]["ranker"] == "heuristic" for line in lines)
    assert all(line["result"]["id"] == line["result_id"] for line in lines)
    assert "\r" not in first.stderr  # no progress bar when stderr is not a terminal
    assert _results(database_url) == 6

    again = _tcfl(
        "batch", str(folder), "--out", str(tmp_path / "again.jsonl"), "--resume", env=env, cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    assert "resuming batch" in again.stderr
    assert _results(database_url) == 6
    assert _read(tmp_path / "again.jsonl") == lines


def test_batch_killed_mid_run_resumes_without_redoing_items(database_url: str, tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(jsonl([example_body(ranker="llm", test_id=f"k{i}") for i in range(24)]))
    out = tmp_path / "out.jsonl"
    with standin(0.4) as model:
        env = clean_env(TCFL_DATABASE_URL=database_url, TCFL_MODEL_URL=model.url)
        args = ["batch", str(cases), "--out", str(out), "--concurrency", "3"]
        proc = subprocess.Popen(tcfl_command(*args), env=env, cwd=tmp_path, stderr=subprocess.DEVNULL)
        wait_for(lambda: _safe_results(database_url) >= 6, what="6 results before the kill")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        at_kill = _results(database_url)
        assert at_kill < 24
        assert not out.exists()
        resumed = _tcfl(*args, "--resume", env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming batch" in resumed.stderr
    assert _results(database_url) == 24
    lines = _read(out)
    assert [line["test_id"] for line in lines] == [f"k{i}" for i in range(24)]
    assert all(line["status"] == "done" and line["attempts"] in (1, 2) for line in lines)
    assert model.served is not None and 24 <= model.served <= 24 + 3


def _safe_results(database_url: str) -> int:
    try:
        return _results(database_url)
    except Exception:
        return 0


def test_batch_without_resume_starts_a_new_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(jsonl([example_body()]))
    env = clean_env(TCFL_DATABASE_URL=url)
    for _ in range(2):
        assert (
            _tcfl("batch", str(cases), "--out", str(tmp_path / "o.jsonl"), env=env, cwd=tmp_path).returncode
            == 0
        )
    assert _results(url) == 2
    fresh = _tcfl("batch", str(cases), "--out", str(tmp_path / "o.jsonl"), "--resume", env=env, cwd=tmp_path)
    assert fresh.returncode == 0
    assert _results(url) == 2


@pytest.mark.parametrize(
    ("setup", "extra", "needle"),
    [
        (lambda d: d / "missing", [], "cannot read"),
        (lambda d: (d / "empty").mkdir() or d / "empty", [], "no *.json case files"),
        (lambda d: _write(d / "bad.jsonl", b'{"scripts": [], "log": ""}\n'), [], "line 1"),
        (lambda d: _write(d / "junk.jsonl", b"\x00\xff\xfe"), [], "not UTF-8"),
        (lambda d: _write(d / "ok.jsonl", jsonl([example_body()])), ["--concurrency", "0"], "--concurrency"),
        (lambda d: _write(d / "llm.jsonl", jsonl([example_body(ranker="llm")])), [], "TCFL_MODEL_URL"),
        (lambda d: _write(d / "ok.jsonl", jsonl([example_body()])), ["--model-url", "ftp://x"], "http"),
    ],
    ids=["missing", "empty-folder", "invalid-case", "binary", "concurrency", "llm-no-model", "bad-model-url"],
)
def test_batch_bad_input_is_a_one_line_error(
    tmp_path: Path, setup: Any, extra: list[str], needle: str
) -> None:
    source = setup(tmp_path)
    env = clean_env(TCFL_DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite'}")
    done = _tcfl("batch", str(source), "--out", str(tmp_path / "o.jsonl"), *extra, env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert needle in done.stderr
    assert "Traceback" not in done.stderr


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_serve_with_an_unusable_database_is_a_one_line_error(tmp_path: Path) -> None:
    env = clean_env(TCFL_DATABASE_URL="postgresql+psycopg://nobody:secret@127.0.0.1:1/none")
    done = _tcfl("serve", "--port", "0", env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert "cannot open the database" in done.stderr
    assert "secret" not in done.stderr


def test_batch_draws_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(jsonl([example_body(test_id=f"p{i}") for i in range(3)]))
    env = clean_env(TCFL_DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite'}", TERM="xterm-256color")
    command = tcfl_command("batch", str(cases), "--out", str(tmp_path / "o.jsonl"))
    status, text = run_on_terminal(command, tmp_path, env)
    assert status == 0
    assert "\x1b[" in text  # drawn in place (rich), not printed line by line
    assert "3/3 (0 failed)" in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
