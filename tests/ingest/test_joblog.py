"""Splitting a job log per test: real consoles of pytest, unittest, stestr and avocado, and synthetic logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ingest import read_results
from app.ingest.joblog import failed_tests, split
from tests.ci_tools import FAILED_TESTS, PytestRun


def _names(runs) -> set[str]:
    return {r.test_id.rsplit(".", 1)[-1].rsplit("::", 1)[-1].rsplit(":", 1)[-1] for r in runs if r.failed}


def test_pytest_console(py_results: PytestRun) -> None:
    runner, runs = split(py_results.console.read_text())
    assert runner == "pytest"
    failed = [r for r in runs if r.failed]
    assert {r.test_id for r in failed} == {f"test_links.py::TestLinks::{n}" for n in FAILED_TESTS}
    for run in failed:
        other = next(n for n in FAILED_TESTS if n not in run.test_id)
        assert f"def {other}" not in run.log  # each section holds its own test only
        assert run.script_paths == ("test_links.py",)
    assert {r.error for r in failed} == {
        "KeyError: 'mtu'",
        "AssertionError: 1000 != 10000 : eth0 must run at 10G",
    }


def test_unittest_console(unittest_console: Path) -> None:
    runner, runs = split(unittest_console.read_text())
    assert runner == "unittest"
    assert {r.test_id for r in runs} == {f"test_links.TestLinks.{n}" for n in FAILED_TESTS}
    verdicts = {r.test_id.rsplit(".", 1)[1]: r.verdict for r in runs}
    assert verdicts == {"test_link_speed": "fail", "test_jumbo_mtu": "error"}
    assert all("Ran 3 tests" not in r.log for r in runs)


def test_stestr_console(stestr_run: tuple[Path, Path]) -> None:
    _, console = stestr_run
    runner, runs = split(console.read_text())
    assert runner == "stestr"
    assert _names(runs) == set(FAILED_TESTS)
    assert sum(1 for r in runs if r.verdict == "pass") == 1
    assert all("Failed 2 tests - output below" not in r.log for r in runs)


@pytest.mark.slow
def test_avocado_job_log_markers(avocado_job: Path) -> None:
    runner, runs = split((avocado_job / "job.log").read_text())
    assert runner == "avocado"
    assert _names(runs) == set(FAILED_TESTS)
    assert {r.test_id for r in runs if not r.failed} == {"test_links.py:TestLinks.test_ports_known"}


def test_old_style_avocado_markers_with_prefixes() -> None:
    log = "\n".join(
        [
            "2024-01-01 10:00:00,000 test             L0001 INFO | START 1-tests/net.py:Net.test_up",
            "2024-01-01 10:00:01,000 net              L0010 INFO | bringing eth0 up",
            "2024-01-01 10:00:02,000 test             L0002 ERROR| Traceback (most recent call last):",
            '2024-01-01 10:00:02,000 test             L0002 ERROR|   File "/x/tests/net.py", line 9, in t',
            "2024-01-01 10:00:02,000 test             L0002 ERROR|     self.fail('down')",  # in t
            "2024-01-01 10:00:02,000 test             L0002 ERROR| AssertionError: down",
            "2024-01-01 10:00:03,000 test             L0003 INFO | FAIL 1-tests/net.py:Net.test_up",
            "2024-01-01 10:00:04,000 test             L0001 INFO | START 2-tests/net.py:Net.test_mtu",
            "2024-01-01 10:00:05,000 test             L0003 INFO | PASS 2-tests/net.py:Net.test_mtu",
        ]
    )
    runner, runs = split(log)
    assert runner == "avocado"
    assert [(r.test_id, r.verdict) for r in runs] == [
        ("tests/net.py:Net.test_up", "fail"),
        ("tests/net.py:Net.test_mtu", "pass"),
    ]
    assert "bringing eth0 up" in runs[0].log and runs[0].error == "AssertionError: down"


def test_a_log_without_markers_is_not_split() -> None:
    assert split("connecting\nTraceback (most recent call last):\nValueError: x\n") == ("", [])


def _unittest_block(n: int) -> str:
    return "\n".join(
        [
            "=" * 70,
            f"FAIL: test_{n} (pkg.mod.Case.test_{n})",
            "-" * 70,
            "Traceback (most recent call last):",
            f'  File "/ci/pkg/mod.py", line {n + 1}, in test_{n}',
            "    self.assertTrue(False)",
            f"AssertionError: case {n}",
            "",
        ]
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=500), min_size=1, max_size=8, unique=True))
def test_every_unittest_block_becomes_its_own_run(numbers: list[int]) -> None:
    log = "\n".join(_unittest_block(n) for n in numbers) + "-" * 70 + "\nRan 9 tests in 0.1s\n\nFAILED\n"
    runner, runs = split(log)
    assert runner == "unittest"
    assert [r.test_id for r in runs] == [f"pkg.mod.Case.test_{n}" for n in numbers]
    for run, n in zip(runs, numbers, strict=True):
        assert run.error == f"AssertionError: case {n}"
        assert run.log.count("Traceback") == 1


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("={}_-:. \nFAILSTRPOKE()[]ab1|")), max_size=400))
def test_any_text_splits_without_error(text: str) -> None:
    runner, runs = split(text)
    assert runner in ("", "avocado", "stestr", "unittest", "pytest")
    assert all(run.test_id for run in runs)


def test_job_log_read_through_read_results(py_results: PytestRun) -> None:
    results = read_results(py_results.console)
    assert results.format == "joblog:pytest"
    assert _names(results.runs) == set(FAILED_TESTS)


def test_failed_tests_names_each_failure_of_a_real_pytest_console(py_results: PytestRun) -> None:
    failed = failed_tests(py_results.console.read_text())
    assert sorted(failed) == sorted(f"test_links.py::TestLinks::{n}" for n in FAILED_TESTS)


def test_failed_tests_of_a_single_traceback_log_is_empty() -> None:
    log = (
        "2024-01-01 10:00:00,000 INFO starting\n"
        "Traceback (most recent call last):\n"
        '  File "t.py", line 3, in test_x\n'
        "ZeroDivisionError: division by zero\n"
    )
    assert failed_tests(log) == []


@given(st.text(max_size=400))
@settings(max_examples=200, deadline=None)
def test_failed_tests_never_raises(text: str) -> None:
    assert isinstance(failed_tests(text), list)
