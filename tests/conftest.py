"""Shared fixtures: the golden running example and the real benchmark cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.analysis.model import Script

DATA = Path(__file__).parent / "data"
RUNNING = DATA / "running-example"
# a copy of the shared benchmark set (tests/data/benchmark/README.md): tests read nothing outside the repo
BENCHMARK = DATA / "benchmark" / "real"


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
