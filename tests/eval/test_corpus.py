"""The executed corpus: real child interpreters, real CPython test files, real tracing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcfl_lab.eval.cases import parse_case
from tcfl_lab.eval.corpus import (
    CorpusOptions,
    build_corpus,
    candidate_files,
    cpython_test_dir,
    log_calls,
    run_tests,
    unittest_methods,
)

TINY = """import logging
import unittest

log = logging.getLogger("tiny")


class Tiny(unittest.TestCase):
    def test_ok(self):
        log.info("checking %s", "ok")
        self.assertEqual(1 + 1, 2)

    def test_bad(self):
        value = 41
        print("value is", value)
        if value > 100:
            value = 0
        self.assertEqual(value, 42)
"""


def test_child_run_reports_outcomes_lines_and_a_prefixed_log(tmp_path: Path) -> None:
    run = run_tests(
        tmp_path, "test/test_tiny.py", TINY, ["Tiny.test_ok", "Tiny.test_bad"], trace=True, timeout_s=30
    )
    assert run.status == "ok"
    assert run.outcomes["Tiny.test_ok"]["outcome"] == "pass"
    assert run.outcomes["Tiny.test_bad"]["outcome"] == "fail"
    assert {13, 14, 15, 17} <= set(run.executed)
    assert 16 not in run.executed  # the branch not taken
    assert " INFO tiny: checking ok" in run.output
    assert "value is 41" in run.output
    assert 'test/test_tiny.py", line 17, in test_bad' in run.output
    assert "AssertionError: 41 != 42" in run.output


def test_child_run_survives_a_broken_module_and_a_hang(tmp_path: Path) -> None:
    crash = "raise RuntimeError('boom')\n"
    broken = run_tests(tmp_path, "test/test_broken.py", crash, ["X.test"], trace=True, timeout_s=30)
    assert broken.status.startswith("crash: RuntimeError")
    hang = (
        "import unittest, time\nclass H(unittest.TestCase):\n    def test_h(self):\n        time.sleep(60)\n"
    )
    slow = run_tests(tmp_path, "test/test_hang.py", hang, ["H.test_h"], trace=False, timeout_s=1)
    assert slow.status == "timeout"


def test_discovery_helpers() -> None:
    assert unittest_methods(TINY) == ["Tiny.test_ok", "Tiny.test_bad"]
    assert log_calls(TINY) == 2  # log.info and print
    assert unittest_methods("def (") == []
    files = candidate_files(cpython_test_dir(), CorpusOptions())
    assert len(files) >= 20
    assert all(f.name.startswith("test_") for f in files)


@pytest.mark.slow
def test_build_a_small_corpus(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    summary = build_corpus(out, CorpusOptions(max_cases=3, per_file=2, seed=7))
    assert summary.cases == 3
    written = sorted(p for p in out.glob("*.json") if p.name != "index.json")
    assert len(written) == 3
    for path in written:
        data = json.loads(path.read_text())
        case = parse_case(data)
        script = case.scripts[0]
        assert script.path.startswith("test/test_") and case.id == path.stem
        (faulty,) = case.faulty
        assert data["mutation"]["mutated"] == script.content.splitlines()[faulty.line - 1]
        assert data["source"]["outcome"] in ("fail", "error")
        assert f"/usr/lib/python3.11/{script.path}" in case.log  # stable path in the traceback
        assert "Traceback (most recent call last)" in case.log
        assert case.actual and all(loc.path == script.path for loc in case.actual)
    index = json.loads((out / "index.json").read_text())
    assert index["cases"] == 3
    with pytest.raises(FileExistsError):
        build_corpus(out, CorpusOptions(max_cases=1))


def test_mutants_never_run_from_stale_bytecode(tmp_path: Path) -> None:
    """A mutant of the same size written within the same second matches the original's cached
    bytecode by mtime and size: the child must neither write bytecode nor find any left over."""
    source = (
        "import unittest\nclass S(unittest.TestCase):\n"
        "    def test_s(self):\n        self.assertEqual(1, 1)\n"
    )
    first = run_tests(tmp_path, "test/test_same.py", source, ["S.test_s"], trace=False, timeout_s=30)
    assert first.outcomes["S.test_s"]["outcome"] == "pass"
    assert not (tmp_path / "test" / "__pycache__").exists()
    stale = tmp_path / "test" / "__pycache__"
    stale.mkdir()
    (stale / "test_same.cpython-311.pyc").write_bytes(b"left over")
    mutant = source.replace("(1, 1)", "(1, 2)")  # same size
    second = run_tests(tmp_path, "test/test_same.py", mutant, ["S.test_s"], trace=False, timeout_s=30)
    assert second.outcomes["S.test_s"]["outcome"] == "fail"
    assert not stale.exists()
