"""Case files: validation with clear messages, bad files reported instead of fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.analysis.model import Loc
from tcfl_lab.eval.cases import CaseError, load_cases, parse_case
from tests.conftest import BENCHMARK, benchmark_cases

GOOD = {
    "id": "c1",
    "test_files": [{"path": "a/test_x.py", "content": "x = 1\n"}],
    "failure_log": "boom",
    "faulty_lines": [{"path": "a/test_x.py", "line": 1}],
    "actual_trace": [{"path": "a/test_x.py", "line": 1}],
    "repo": "extra fields are ignored",
}


def test_parse_a_good_case() -> None:
    case = parse_case(GOOD)
    assert case.id == "c1"
    assert case.faulty == {Loc("a/test_x.py", 1)}
    assert case.actual == {Loc("a/test_x.py", 1)}
    assert parse_case({**GOOD, "actual_trace": None}).actual is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"test_files": []}, "test_files"),
        ({"test_files": [{"path": "a.py"}]}, "content"),
        ({"failure_log": None}, "failure_log"),
        ({"faulty_lines": [{"path": "a/test_x.py", "line": 0}]}, "1-based"),
        ({"faulty_lines": [{"path": "a/test_x.py", "line": True}]}, "1-based"),
        ({"faulty_lines": [{"path": "other.py", "line": 2}]}, "not in `test_files`"),
        ({"faulty_lines": "3"}, "must be a list"),
        ({"log_functions": "Log.log"}, "log_functions"),
    ],
)
def test_bad_fields_are_named(change: dict, message: str) -> None:
    with pytest.raises(CaseError, match=message):
        parse_case({**GOOD, **change})
    with pytest.raises(CaseError):
        parse_case(["not", "an", "object"])


def test_load_a_folder_with_bad_files(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_text(json.dumps(GOOD))
    (tmp_path / "dup.json").write_text(json.dumps(GOOD))
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "index.json").write_text("{}")  # a corpus summary, not a case
    cases, problems = load_cases(tmp_path)
    assert [c.id for c in cases] == ["c1"]
    assert len(problems) == 3
    assert any("duplicate case id" in p for p in problems)
    with pytest.raises(FileNotFoundError):
        load_cases(tmp_path / "missing")


def test_real_benchmark_cases_load() -> None:
    cases, problems = load_cases(BENCHMARK)
    assert problems == []
    assert len(cases) == len(benchmark_cases()) > 0
    assert all(c.faulty for c in cases)
