"""What every results reader yields: one record per test run, failed or passed.

Readers know a format and nothing else: no triage, no script resolution (``resolve.py``), no
database. A bad file is an ``IngestError`` whose message says what is wrong, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.ingest.testkey import TestKey, parse_test_id

VERDICTS: tuple[str, ...] = ("pass", "fail", "error", "skip")
FAILED: frozenset[str] = frozenset({"fail", "error"})

MAX_RESULTS_BYTES = 200_000_000  # one results file or job log
MAX_TESTS = 100_000  # test runs in one results file


class IngestError(Exception):
    """A results file that cannot be read as its format (the message names the file and the problem)."""


@dataclass(frozen=True)
class TestRun:
    """One test's run as a CI job reported it: what the triage and the run history need."""

    __test__ = False  # not a pytest test class

    test_id: str  # as the tool reports it: pytest node id, avocado test id, subunit id
    verdict: str  # one of VERDICTS
    log: str = ""  # this test's own log section: captured output, then the failure report
    error: str = ""  # the error text (exception line or the tool's failure message); "" for passes
    duration_s: float | None = None
    script_paths: tuple[str, ...] = ()  # script paths the results name for this test (as printed)
    suite: str = ""  # the tool: pytest, avocado, subunit, junit, unittest, ...
    params: str | None = None  # [param] / ;variant, moved off the id (docs/design.md §8.1)
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.verdict in FAILED

    @property
    def key(self) -> TestKey:
        """The test's key, as the CI history records it (``app.ingest.testkey``)."""
        return parse_test_id(self.test_id, self.suite)[0]

    @property
    def base_id(self) -> str:
        """The id without parameters or variant, in the key's canonical form: the part that stays
        the same across runs of a test, whichever tool reported it."""
        try:
            return self.key.key
        except ValueError:  # no id, or one past the history's limit (``clean`` cuts those): as it is
            return self.test_id.strip()

    def to_dict(self) -> dict[str, Any]:
        return {
            "test_id": self.test_id,
            "base_id": self.base_id,
            "verdict": self.verdict,
            "suite": self.suite,
            "params": self.params,
            "duration_s": self.duration_s,
            "error": self.error,
            "script_paths": list(self.script_paths),
            "log": self.log,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Results:
    """Every test run of one results file, in the file's order, and what was odd about the file."""

    format: str
    runs: tuple[TestRun, ...]
    warnings: tuple[str, ...] = field(default=())
    raw: bytes | None = None  # the JUnit input, kept for the junit emitter
    started_at: datetime | None = None  # when the job started, as the file says (``filetime.py``)

    @property
    def failed(self) -> tuple[TestRun, ...]:
        return tuple(run for run in self.runs if run.failed)


def split_params(test_id: str) -> tuple[str, str | None]:
    """``test_x[a-1]`` -> params ``a-1``; avocado ``Class.test;variant`` -> ``variant`` (the id is
    kept whole: it is the run's name as the tool printed it)."""
    try:
        params = parse_test_id(test_id)[1]
    except ValueError:  # empty or too long: no parameters to tell
        params = ""
    return test_id, params or None


def first_line(text: str, limit: int = 500) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""
