"""`tcfl batch` inputs: benchmark files with extra keys, a bad file among good ones, CI results files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from app.settings import get_settings
from tests.ci_tools import FAILED_TESTS, PytestRun
from tests.conftest import RUNNING


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("TCFL_MODEL_URL", "TCFL_MODEL", "TCFL_LOG_FUNCTIONS", "TCFL_DEFAULT_K"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TCFL_DATABASE_URL", f"sqlite:///{tmp_path / 'tcfl.db'}")
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def benchmark_case(case_id: str) -> dict:
    """The running example in the benchmark format, with the extra keys real case files carry."""
    return {
        "id": case_id,
        "repo": "example/suite",
        "fix_commit_url": "https://example.invalid/commit/1",
        "test_files": [
            {"path": "test_example.py", "content": (RUNNING / "test_example.py").read_text(), "role": "test"}
        ],
        "failure_log": (RUNNING / "failure.log").read_text(),
        "faulty_lines": [{"path": "test_example.py", "line": 3}],
        "log_functions": ["Log.log"],
        "notes": "extra keys are part of the format",
    }


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_benchmark_files_with_extra_keys_and_a_bad_file_are_skipped_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "a.json").write_text(json.dumps(benchmark_case("a")))
    (cases / "b.json").write_text(json.dumps(benchmark_case("b")))
    (cases / "broken.json").write_text('{"id": "c", "test_files": [')
    (cases / "empty-files.json").write_text(json.dumps({"id": "d", "test_files": [], "failure_log": "x"}))
    out = tmp_path / "out.jsonl"
    code = main(["batch", str(cases), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1  # something was skipped
    assert [r["test_id"] for r in rows(out)] == ["a", "b"]
    assert all(r["status"] == "done" and r["result"]["ranking"] for r in rows(out))
    assert "skipped" in err and "broken.json" in err and "empty-files.json" in err


def test_jsonl_may_hold_benchmark_cases(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps(benchmark_case("x")) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(data), "--out", str(out)]) == 0
    assert [r["test_id"] for r in rows(out)] == ["x"]


def test_nothing_readable_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text("{not json\n")
    assert main(["batch", str(data), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "no case could be read" in capsys.readouterr().err


def test_ci_results_become_one_case_per_failed_test(py_results: PytestRun, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    for results in (py_results.junit, py_results.reportlog):
        code = main(["batch", str(results), "--root", str(py_results.root), "--out", str(out)])
        assert code == 0
        found = rows(out)
        assert len(found) == len(FAILED_TESTS)
        assert {r["test_id"].replace("::", ".").rsplit(".", 1)[1] for r in found} == set(FAILED_TESTS)
        assert all(r["status"] == "done" for r in found)
