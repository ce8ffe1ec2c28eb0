"""A CI job as a launch (``app.launch``): its runs' identity, each failure's history verdict, and
which label a failure carries. Real pytest results of the small CI suite (tests/data/ci)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from app.ci import local_triager, triage_results
from app.history.signatures import Run
from app.ingest import read_results
from app.ingest.job import Job, digest
from app.ingest.resolve import Checkout
from app.launch import KNOWN, Label, failure_label, group_label, launch_of, run_records
from app.options import resolve_options
from tests.ci_tools import PytestRun, py_results

__all__ = ["py_results"]
T0 = datetime(2026, 11, 28, 10, tzinfo=UTC)


def _report(py: PytestRun):  # type: ignore[no-untyped-def]
    results = read_results(py.junit)
    triager = local_triager(resolve_options(ranker="heuristic"), None)
    return asyncio.run(triage_results(results, Checkout.scan(py.root), triager))


def test_every_run_of_a_job_is_named_by_the_job(py_results: PytestRun) -> None:
    report = _report(py_results)
    data = py_results.junit.read_bytes()
    job = Job(commit="abc", digest=digest(data), source="junit.xml")
    records = run_records(report, job, T0, checkout=Checkout.scan(py_results.root))
    assert len(records) == report.total and all(r.commit == "abc" and r.job_url is None for r in records)
    again = run_records(report, job, T0)
    assert [r.identity() for r in records] == [r.identity() for r in again]  # the same job: the same runs
    other = run_records(report, Job(commit="abc", digest=digest(data + b" ")), T0 + timedelta(hours=1))
    assert not {r.identity() for r in records} & {r.identity() for r in other}  # another job: new runs
    passes = [r for r in records if r.verdict == "pass"]
    assert passes and all(r.scripts for r in passes)  # from the checkout: they count in the spectra
    failures = {t.run.test_id: t.signature for t in report.triaged}
    assert {r.test_id: r.err_sig for r in records if r.verdict == "fail"} == failures


def test_a_test_reported_twice_in_one_job_is_two_runs(py_results: PytestRun) -> None:
    report = _report(py_results)
    assert report.results is not None
    doubled = report.results.runs + report.results.runs[:1]
    from dataclasses import replace

    twice = replace(report, results=replace(report.results, runs=doubled))
    records = run_records(twice, Job(job_url="https://ci/7"), T0)
    assert len({r.identity() for r in records}) == len(records)
    assert records[-1].job == "https://ci/7#2" and records[0].job == "https://ci/7"


def test_a_failure_is_judged_by_the_runs_before_its_job(py_results: PytestRun) -> None:
    report = _report(py_results)
    job = Job(commit="c3", digest="d")
    records = run_records(report, job, T0)
    stored = [{"run_id": n, "version_id": "v2", "err_sig": r.err_sig} for n, r in enumerate(records, 1)]
    failing = next(r for r in records if r.verdict == "fail")
    sig = failing.err_sig
    past = {
        failing.key.key: [
            Run("fail", "v1", "", sig, "c1", "https://ci/1", 1),
            Run("pass", "v1", "", None, "c2", "https://ci/2", 2),
        ]
    }
    launch = launch_of(report, job, T0, records, stored, past)
    test = next(t for t in launch.tests if t.key == failing.key.key)
    assert test.classification == "regression" and test.run_id is not None
    found = (test.history or {})["first_bad_version"]
    assert (found["first_bad_commit"], found["last_good_commit"], found["last_good_job"]) == (
        "c3",
        "c2",
        "https://ci/2",
    )
    summary = launch.summary()
    assert summary["tests"] == report.total and summary["failed"] == len(report.triaged)
    assert summary["regression"] == 1 and summary["pass_rate"] == round(
        summary["passed"] / summary["tests"], 4
    )


def test_which_label_a_failure_carries() -> None:
    group = Label(1, "product bug", "https://bugs/1", err_sig="s1")
    newer = Label(4, "system issue", err_sig="s1")
    site = Label(2, "automation bug", site="site9")
    assert group_label([group, newer, site], "s1", None, set()) == newer  # the newest of its group
    assert group_label([group, site], "s2", "site9", set()) == site  # no signature label: the fault site's
    assert group_label([group], "s1", None, {1}) is None  # a person took it off this failure
    auto = Label(7, "product bug", failure_id=3, auto=True, origin_id=1)
    own = Label(8, "no defect", failure_id=3)
    assert (
        failure_label([auto, own], [group], "s1", None) == own
    )  # a person's label wins over an automatic one
    undone = Label(7, "product bug", failure_id=3, auto=True, origin_id=1, undone=True)
    assert failure_label([undone], [group], "s1", None) is None  # undone: the group label stays off it
    assert failure_label([], [group], "s1", None) == group
    assert group.known().text() == f"{KNOWN}: product bug https://bugs/1"
