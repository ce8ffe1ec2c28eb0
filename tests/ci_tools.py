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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tcfl_lab.launches import JobFiles, load_jobs, run_jobs
from tests.support.shared import built_once

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


def pytest_paths(root: Path) -> PytestRun:
    """Where run_pytest(root) writes its files."""
    out = root.parent / f"{root.name}-pytest"
    return PytestRun(root, out / "junit.xml", out / "report.jsonl", out / "console.txt")


def run_pytest(root: Path) -> PytestRun:
    paths = pytest_paths(root)
    paths.junit.parent.mkdir()
    junit, reportlog, console = paths.junit, paths.reportlog, paths.console
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
    return paths


def stestr_paths(root: Path) -> tuple[Path, Path]:
    """Where run_stestr(root) writes its files: (subunit v2 stream, console)."""
    return root.parent / f"{root.name}-last.subunit", root.parent / f"{root.name}-stestr.txt"


def run_stestr(root: Path) -> tuple[Path, Path]:
    """(subunit v2 stream from `stestr last --subunit`, the console of `stestr run`)."""
    proc = subprocess.run(
        [str(BIN / "stestr"), "run"], cwd=root, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    stream, console = stestr_paths(root)
    console.write_text(proc.stdout + proc.stderr)
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
    jobs = avocado_jobs(root)
    assert len(jobs) == 1, proc.stdout + proc.stderr
    return jobs[0]


def avocado_jobs(root: Path) -> list[Path]:
    """The job-results folders run_avocado(root) made."""
    results = root.parent / f"{root.name}-avocado"
    return [p for p in results.iterdir() if p.is_dir() and p.name.startswith("job-")]


def unittest_path(root: Path) -> Path:
    """Where run_unittest(root) writes the console."""
    return root.parent / f"{root.name}-unittest.txt"


def run_unittest(root: Path) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_links"],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    console = unittest_path(root)
    console.write_text(proc.stdout + proc.stderr)
    return console


# -- session fixtures (conftest files import these by name) -----------------------------------
# Each tool runs once per test run, not once per pytest-xdist worker: the first worker to ask runs
# it on its copy of the suite in a folder of the run (tests/support/shared.py), the others read it.


def _suite_run(tmp_path_factory: pytest.TempPathFactory, tool: str, run: Callable[[Path], object]) -> Path:
    """The copy of the suite ``run`` ran in, once per test run (its outputs lie beside it)."""
    folder = built_once(tmp_path_factory, f"ci-{tool}", lambda d: run(copy_suite(d / tool)))
    return folder / tool


@pytest.fixture(scope="session")
def launch_jobs(tmp_path_factory: pytest.TempPathFactory) -> list[JobFiles]:
    """The launch scenario's nine CI jobs (``tcfl_lab.launches``), run once per test run."""
    folder = built_once(tmp_path_factory, "launch-jobs", lambda d: run_jobs(d / "repo", d / "jobs"))
    return load_jobs(folder / "repo", folder / "jobs")


@pytest.fixture(scope="session")
def py_results(tmp_path_factory: pytest.TempPathFactory) -> PytestRun:
    return pytest_paths(_suite_run(tmp_path_factory, "pytest", run_pytest))


@pytest.fixture(scope="session")
def stestr_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return stestr_paths(_suite_run(tmp_path_factory, "stestr", run_stestr))


@pytest.fixture(scope="session")
def avocado_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (job,) = avocado_jobs(_suite_run(tmp_path_factory, "avocado", run_avocado))
    return job


@pytest.fixture(scope="session")
def unittest_console(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unittest_path(_suite_run(tmp_path_factory, "unittest", run_unittest))
