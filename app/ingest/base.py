"""What every results reader yields: one record per test run, failed or passed.

Readers know a format and nothing else: no triage, no script resolution (``resolve.py``), no
database. A bad file is an ``IngestError`` whose message says what is wrong, never a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

VERDICTS: tuple[str, ...] = ("pass", "fail", "error", "skip")
FAILED: frozenset[str] = frozenset({"fail", "error"})

MAX_RESULTS_BYTES = 200_000_000  # one results file or job log
MAX_TESTS = 100_000  # test runs in one results file

_PARAM = re.compile(r"\[[^\]]*\]$")  # pytest [param], tempest [tags]


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
    params: str | None = None  # [param] / ;variant, moved off the id (DESIGN 8.1)
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.verdict in FAILED

    @property
    def base_id(self) -> str:
        """The id without parameters or tags: the part that stays the same across runs of a test."""
        base = self.test_id.split(";", 1)[0]
        return _PARAM.sub("", base)

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

    @property
    def failed(self) -> tuple[TestRun, ...]:
        return tuple(run for run in self.runs if run.failed)


def split_params(test_id: str) -> tuple[str, str | None]:
    """``test_x[a-1]`` -> params ``a-1``; avocado ``Class.test;variant`` -> ``variant``."""
    if ";" in test_id:
        _, variant = test_id.split(";", 1)
        return test_id, variant or None
    found = _PARAM.search(test_id)
    return test_id, (found.group(0)[1:-1] if found else None)


def first_line(text: str, limit: int = 500) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""
