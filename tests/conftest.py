"""Shared fixtures (the golden running example, the real benchmark cases) and Hypothesis settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import settings

from app.analysis.model import Script

DATA = Path(__file__).parent / "data"
RUNNING = DATA / "running-example"
# a copy of the shared benchmark set (tests/data/benchmark/README.md): tests read nothing outside the repo
BENCHMARK = DATA / "benchmark" / "real"

# Properties are checked, not timed: Hypothesis' default 200 ms deadline per example fails tests at
# random on a loaded machine (two xdist workers on two cores, the servers and databases they start).
# Loaded here, before any test module builds its own settings from the default.
settings.register_profile("tcfl", deadline=None)
settings.load_profile("tcfl")


def running_example() -> tuple[list[Script], str, dict]:
    scripts = [Script("test_example.py", (RUNNING / "test_example.py").read_text())]
    return scripts, (RUNNING / "failure.log").read_text(), json.loads((RUNNING / "expected.json").read_text())


def benchmark_cases() -> list[Path]:
    return sorted(BENCHMARK.glob("*.json"))


def load_case(path: Path) -> tuple[list[Script], str, dict]:
    case = json.loads(path.read_text())
    scripts = [Script(f["path"], f["content"]) for f in case["test_files"]]
    return scripts, case["failure_log"], case


@pytest.fixture(autouse=True)
def user_data_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Commands that store results use the per-user data folder: never the real one in tests."""
    home = tmp_path_factory.mktemp("data-home")
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


@pytest.fixture
def golden() -> tuple[list[Script], str, dict]:
    return running_example()
