"""When a CI job started, as its results file says: the job's time when the CI gives none.

JUnit XML carries ``timestamp`` on its ``<testsuite>`` elements, a pytest report log a ``start``
epoch on every test report, avocado's ``results.json`` the job's ``start``. The earliest one is the
job's start. A time without a zone is taken as UTC (pytest before 8 and avocado write local
times without one). Subunit streams are left out: their times are per packet and would mean a
second decode of the stream; a job read from one is timed by the CI or when it is recorded.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_JUNIT = re.compile(rb'<testsuites?\b[^>]*?\btimestamp="([^"]{10,40})"')
_REPORT_START = re.compile(rb'"start":\s*(\d{9,11}(?:\.\d+)?)')
_HEAD = 1 << 20  # the first suites' elements sit at the top of the document
# a time outside these years is a broken clock, not the job's start
_EARLIEST, _LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)


def _sane(when: datetime) -> datetime | None:
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return when if _EARLIEST <= when < _LATEST else None


def iso_time(text: str) -> datetime | None:
    """An ISO 8601 time (``T`` or a space between date and time), or None."""
    try:
        return _sane(datetime.fromisoformat(text.strip().replace("Z", "+00:00")))
    except ValueError:
        return None


def file_started(data: bytes, fmt: str) -> datetime | None:
    """The earliest start a JUnit or report-log file records, or None."""
    if fmt == "junit":
        found = [iso_time(m.group(1).decode("ascii", "replace")) for m in _JUNIT.finditer(data[:_HEAD])]
        times = [t for t in found if t is not None]
        return min(times) if times else None
    if fmt == "reportlog":
        # a report per test: the numbers are compared as they are, one of them made a time
        low, high = _EARLIEST.timestamp(), _LATEST.timestamp()
        starts = [n for n in map(float, _REPORT_START.findall(data)) if low <= n < high]
        return datetime.fromtimestamp(min(starts), UTC) if starts else None
    return None
