"""Real CI tools run on the small failing suite in tests/data/ci/suite (session-scoped, in a copy).

Every results file the CI tests read is written here by the tool itself: pytest (--junitxml,
--report-log, its console), stestr (subunit v2), avocado (a job-results folder, its xunit), and
python -m unittest (its console).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SUITE = Path(__file__).parent / "data" / "ci" / "suite"
BIN = Path(sys.executable).parent
FAILED_TESTS = ("test_link_speed", "test_jumbo_mtu")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def copy_suite(dest: Path) -> Path:
    shutil.copytree(SUITE, dest, ignore=shutil.ignore_patterns("__pycache__", ".stestr"))
    return dest


@dataclass(frozen=True)
class PytestRun:
    root: Path
    junit: Path
    reportlog: Path
    console: Path


def run_pytest(root: Path) -> PytestRun:
    out = root.parent / f"{root.name}-pytest"
    out.mkdir()
    junit, reportlog, console = out / "junit.xml", out / "report.jsonl", out / "console.txt"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            f"--junitxml={junit}",
            f"--report-log={reportlog}",
            "test_links.py",
        ],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    console.write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # two tests fail, by design
    return PytestRun(root, junit, reportlog, console)


def run_stestr(root: Path) -> tuple[Path, Path]:
    """(subunit v2 stream from `stestr last --subunit`, the console of `stestr run`)."""
    proc = subprocess.run(
        [str(BIN / "stestr"), "run"], cwd=root, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    console = root.parent / f"{root.name}-stestr.txt"
    console.write_text(proc.stdout + proc.stderr)
    stream = root.parent / f"{root.name}-last.subunit"
    last = subprocess.run(
        [str(BIN / "stestr"), "last", "--subunit"], cwd=root, env=_env(), capture_output=True, timeout=120
    )
    stream.write_bytes(last.stdout)
    return stream, console


def run_avocado(root: Path) -> Path:
    """The job-results folder of a real `avocado run` (it also holds results.xml, avocado's xunit)."""
    results = root.parent / f"{root.name}-avocado"
    proc = subprocess.run(
        [
            str(BIN / "avocado"),
            "run",
            "--disable-sysinfo",
            "--job-results-dir",
            str(results),
            "test_links.py",
        ],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr
    jobs = [p for p in results.iterdir() if p.is_dir() and p.name.startswith("job-")]
    assert len(jobs) == 1, proc.stdout + proc.stderr
    return jobs[0]


def run_unittest(root: Path) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_links"],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    console = root.parent / f"{root.name}-unittest.txt"
    console.write_text(proc.stdout + proc.stderr)
    return console


# -- session fixtures (conftest files import these by name) -----------------------------------


@pytest.fixture(scope="session")
def py_results(tmp_path_factory: pytest.TempPathFactory) -> PytestRun:
    return run_pytest(copy_suite(tmp_path_factory.mktemp("ci") / "pytest"))


@pytest.fixture(scope="session")
def stestr_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return run_stestr(copy_suite(tmp_path_factory.mktemp("ci") / "stestr"))


@pytest.fixture(scope="session")
def avocado_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_avocado(copy_suite(tmp_path_factory.mktemp("ci") / "avocado"))


@pytest.fixture(scope="session")
def unittest_console(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_unittest(copy_suite(tmp_path_factory.mktemp("ci") / "unittest"))
