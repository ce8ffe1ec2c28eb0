"""Each reader on what the real tool wrote for the same small suite: two failures, one pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.ingest import IngestError, parse_bytes, read_results
from app.ingest.resolve import Checkout, find_scripts
from tests.ci_tools import FAILED_TESTS, PytestRun

ERRORS = {
    "test_link_speed": "AssertionError: 1000 != 10000 : eth0 must run at 10G",
    "test_jumbo_mtu": "KeyError: 'mtu'",
}


def _by_method(runs) -> dict:
    return {run.test_id.rsplit(".", 1)[-1].rsplit(":", 1)[-1]: run for run in runs}


def test_junit_from_pytest(py_results: PytestRun) -> None:
    results = read_results(py_results.junit)
    assert results.format == "junit"
    runs = _by_method(results.runs)
    assert set(runs) == {*FAILED_TESTS, "test_ports_known"}
    assert runs["test_ports_known"].verdict == "pass"
    for name in FAILED_TESTS:
        run = runs[name]
        assert run.verdict == "fail"
        assert run.error == ERRORS[name]
        scripts, warnings = find_scripts(run, Checkout.scan(py_results.root))
        assert [s.path for s in scripts][:1] == ["test_links.py"] and not warnings
        assert run.duration_s is not None and run.duration_s >= 0
    # the captured log (pytest.ini: junit_logging = all, log_level = INFO) is in the test's own log
    assert "link is slower than expected" in runs["test_link_speed"].log
    assert "checking jumbo frames on eth1" not in runs["test_link_speed"].log


def test_reportlog_from_pytest(py_results: PytestRun) -> None:
    results = read_results(py_results.reportlog)
    assert results.format == "reportlog"
    runs = {run.test_id: run for run in results.runs}
    assert set(runs) == {f"test_links.py::TestLinks::{n}" for n in (*FAILED_TESTS, "test_ports_known")}
    speed = runs["test_links.py::TestLinks::test_link_speed"]
    assert (speed.verdict, speed.error) == ("fail", ERRORS["test_link_speed"])
    assert "test_links.py:20: AssertionError" in speed.log
    assert "link is slower than expected" in speed.log
    mtu = runs["test_links.py::TestLinks::test_jumbo_mtu"]
    assert "helpers/inventory.py:22: KeyError" in mtu.log
    assert runs["test_links.py::TestLinks::test_ports_known"].verdict == "pass"


def test_reportlog_cut_off_mid_line_keeps_the_complete_records(py_results: PytestRun, tmp_path: Path) -> None:
    data = py_results.reportlog.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: len(data) - 40])
    results = read_results(cut, "reportlog")
    assert {r.test_id.rsplit("::", 1)[-1] for r in results.failed} == set(FAILED_TESTS)


def test_subunit_from_stestr(stestr_run: tuple[Path, Path]) -> None:
    stream, _console = stestr_run
    results = read_results(stream)
    assert results.format == "subunit"
    runs = {run.test_id: run for run in results.runs}
    assert set(runs) == {f"test_links.TestLinks.{n}" for n in (*FAILED_TESTS, "test_ports_known")}
    for name in FAILED_TESTS:
        run = runs[f"test_links.TestLinks.{name}"]
        assert run.verdict == "fail" and run.error == ERRORS[name]
        assert "Traceback (most recent call last)" in run.log
    assert runs["test_links.TestLinks.test_ports_known"].verdict == "pass"


def test_subunit_v1_gets_a_clear_error(stestr_run: tuple[Path, Path]) -> None:
    stream, _ = stestr_run
    repository = next((stream.parent / "stestr" / ".stestr").glob("[0-9]*"))
    with pytest.raises(IngestError, match="subunit v1"):
        read_results(repository, "subunit")


@pytest.mark.slow
def test_avocado_job_folder_and_its_xunit_agree(avocado_job: Path) -> None:
    job = read_results(avocado_job)
    xunit = read_results(avocado_job / "results.xml")
    assert job.format == "avocado" and xunit.format == "junit"
    a, b = _by_method(job.runs), _by_method(xunit.runs)
    assert set(a) == set(b) == {*FAILED_TESTS, "test_ports_known"}
    for name in FAILED_TESTS:
        assert a[name].test_id == b[name].test_id == f"test_links.py:TestLinks.{name}"
        assert a[name].verdict == b[name].verdict
        assert a[name].error == b[name].error == ERRORS[name]
        assert "Traceback (most recent call last)" in a[name].log  # the test's own debug.log
    assert a["test_link_speed"].verdict == "fail" and a["test_jumbo_mtu"].verdict == "error"


@pytest.mark.slow
def test_avocado_results_copied_elsewhere_still_find_their_logs(avocado_job: Path, tmp_path: Path) -> None:
    import shutil

    moved = tmp_path / "artifact"
    shutil.copytree(avocado_job, moved, symlinks=True)
    results = read_results(moved)
    assert all("Traceback" in run.log for run in results.failed)
    assert not results.warnings


def test_unknown_text_is_a_clear_error() -> None:
    with pytest.raises(IngestError, match="no test results found"):
        parse_bytes(b"just some words\nand more\n", "notes.txt")
    with pytest.raises(IngestError, match="empty"):
        parse_bytes(b"  \n", "empty.xml")
