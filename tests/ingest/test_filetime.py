"""When a job started, read from the results files of real pytest and avocado runs, and never an
error on any bytes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from app.ingest import merge, parse_bytes, read_results
from app.ingest.filetime import file_started, iso_time
from tests.ci_tools import PytestRun


def _recent(when: datetime | None) -> bool:
    return when is not None and when.tzinfo is not None and datetime.now(UTC) - when < timedelta(days=1)


def test_junit_and_report_log_of_one_real_session_give_its_start(py_results: PytestRun) -> None:
    junit = read_results(py_results.junit)
    reportlog = read_results(py_results.reportlog)
    assert _recent(junit.started_at) and _recent(reportlog.started_at)
    # the report log's first setup and the suite's timestamp are moments apart in one session
    assert junit.started_at is not None and reportlog.started_at is not None
    assert abs(junit.started_at - reportlog.started_at) < timedelta(minutes=2)
    both = merge([junit, reportlog])
    assert both.started_at == min(junit.started_at, reportlog.started_at)


def test_a_real_avocado_job_gives_its_start(avocado_job: Path) -> None:
    assert _recent(read_results(avocado_job).started_at)


def test_the_earliest_suite_is_the_start_and_a_zoneless_time_is_utc() -> None:
    xml = (
        b'<testsuites><testsuite name="b" tests="1" timestamp="2026-03-02T10:00:00">'
        b'<testcase classname="t" name="a"/></testsuite>'
        b'<testsuite name="a" tests="1" timestamp="2026-03-01T09:30:00+01:00">'
        b'<testcase classname="t" name="b"/></testsuite></testsuites>'
    )
    assert parse_bytes(xml, "r.xml").started_at == datetime(2026, 3, 1, 8, 30, tzinfo=UTC)
    assert iso_time("2026-03-02 10:00:00.5") == datetime(2026, 3, 2, 10, 0, 0, 500000, tzinfo=UTC)


def test_no_time_or_a_broken_clock_gives_none() -> None:
    plain = b'<testsuite name="s" tests="1"><testcase classname="t" name="a"/></testsuite>'
    assert parse_bytes(plain, "r.xml").started_at is None
    assert file_started(b'<testsuite timestamp="1970-01-01T00:00:00">', "junit") is None
    assert file_started(b'{"$report_type": "TestReport", "start": 99999999999.0}', "reportlog") is None
    assert file_started(b"anything", "subunit") is None


@given(st.binary(max_size=400), st.sampled_from(["junit", "reportlog", "joblog"]))
def test_any_bytes_give_a_time_or_none(data: bytes, fmt: str) -> None:
    found = file_started(b'<testsuite timestamp="' + data + b'">' + data, fmt)
    assert found is None or found.tzinfo is not None
