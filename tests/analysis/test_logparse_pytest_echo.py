"""pytest's echoed source lines are traceback text, not log output (real pytest runs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from tests.support.shared import built_once

DATA = Path(__file__).parent.parent / "data" / "pytest-echo"
SOURCE = (DATA / "test_echo.py").read_text()
# the captured output: test_total's print and warning ran, check_total's too; the branch did not
RAN = {19, 20, 9, 10}
ECHOED_ONLY = {13, 14}  # print/logging in the `if` branch: only ever echoed as source
STYLES = ("long", "short")  # pytest's --tb


@pytest.fixture(scope="module")
def pytest_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """pytest's report of the failing test, per traceback style (one run each per test run)."""

    def build(folder: Path) -> None:
        for style in STYLES:
            (folder / style).mkdir()
            (folder / f"{style}.log").write_text(_pytest_log(folder / style, style))

    folder = built_once(tmp_path_factory, "pytest-echo", build)
    return {style: (folder / f"{style}.log").read_text() for style in STYLES}


def _pytest_log(tmp_path: Path, style: str) -> str:
    shutil.copy(DATA / "test_echo.py", tmp_path / "test_echo.py")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--tb={style}", "test_echo.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    return run.stdout


def _matched_lines(log: str) -> set[int]:
    analysis = analyze([Script("test_echo.py", SOURCE)], log)
    stmts = analysis.program.statements
    assert [(f.line) for f in analysis.error_frames] == [21, 15]
    return {stmts[sid].start_line for _, sids in analysis.match.matches for sid in sids}


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(
    "mangle",
    [
        lambda log: log,
        lambda log: "".join(f"2024-05-01T10:00:00.1234567Z {ln}" for ln in log.splitlines(keepends=True)),
        lambda log: log[log.index("    def test_total") :] if "    def test_total" in log else log,
    ],
    ids=["plain", "ci-timestamps", "cut-above-the-report"],
)
def test_echoed_source_lines_do_not_match_while_captured_output_does(
    pytest_logs: dict[str, str], style: str, mangle
) -> None:
    log = mangle(pytest_logs[style])
    if style == "long":
        assert '        print("the total is too large")' in log  # pytest did echo the branch
    matched = _matched_lines(log)
    assert matched >= RAN
    assert not matched & ECHOED_ONLY
