"""Triage every failed test of a CI job: results in, one triage per failed test, groups out.

The shell between the readers (``app.ingest``) and the emitters (``app.emit``): it finds each
failed test's scripts in the checkout and runs ``app.triage.triage`` on the test's own log. A
test whose scripts cannot be found, or whose triage fails, is reported by name, never dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.analysis.model import Script
from app.analysis.parsed import ParseCache
from app.ingest.base import Results, TestRun
from app.ingest.resolve import Checkout, find_scripts
from app.ingest.signature import normalise_error, signature
from app.localize.llm import ModelClient
from app.localize.result import TriageOptions, TriageResult
from app.triage import triage

CONCURRENCY = 4  # triages at once (model calls dominate; the static phase is milliseconds)


@dataclass(frozen=True)
class TriagedRun:
    """One failed test and its triage (or why there is none)."""

    run: TestRun
    scripts: tuple[str, ...]
    result: TriageResult | None
    problem: str | None = None
    warnings: tuple[str, ...] = ()
    triage_id: int | None = None
    sources: tuple[Script, ...] = field(default=(), repr=False, compare=False)  # what was triaged

    @property
    def top(self) -> str | None:
        """``path:line`` of the top-ranked element."""
        if self.result is None or not self.result.ranking:
            return None
        item = self.result.ranking[0]
        return f"{item.path}:{item.start_line}"

    @property
    def error(self) -> str:
        return self.run.error or (self.result.error_message if self.result else "")

    @property
    def signature(self) -> str:
        return signature(self.error, self.top)

    def to_dict(self) -> dict[str, Any]:
        return {
            "test_id": self.run.test_id,
            "base_id": self.run.base_id,
            "verdict": self.run.verdict,
            "suite": self.run.suite,
            "duration_s": self.run.duration_s,
            "error": self.error,
            "signature": self.signature,
            "scripts": list(self.scripts),
            "triaged": self.result is not None,
            "problem": self.problem,
            "triage_id": self.triage_id,
            "result": None if self.result is None else self.result.to_dict(),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Group:
    signature: str
    error: str  # normalised
    top: str | None
    members: tuple[int, ...]  # indices into CiReport.triaged


@dataclass(frozen=True)
class CiReport:
    format: str
    total: int
    passed: int
    skipped: int
    triaged: tuple[TriagedRun, ...]
    groups: tuple[Group, ...]
    warnings: tuple[str, ...] = ()
    results: Results | None = field(default=None, compare=False)

    @property
    def untriaged(self) -> tuple[TriagedRun, ...]:
        return tuple(t for t in self.triaged if t.result is None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "summary": {
                "tests": self.total,
                "passed": self.passed,
                "skipped": self.skipped,
                "failed": len(self.triaged),
                "triaged": len(self.triaged) - len(self.untriaged),
                "not_triaged": [t.run.test_id for t in self.untriaged],
                "groups": len(self.groups),
            },
            "groups": [
                {
                    "signature": g.signature,
                    "error": g.error,
                    "top": g.top,
                    "tests": [self.triaged[i].run.test_id for i in g.members],
                }
                for g in self.groups
            ],
            "tests": [t.to_dict() for t in self.triaged],
            "warnings": list(self.warnings),
        }


def group(triaged: Sequence[TriagedRun]) -> tuple[Group, ...]:
    """Failures with the same signature, in order of first appearance."""
    by_sig: dict[str, list[int]] = {}
    for i, item in enumerate(triaged):
        by_sig.setdefault(item.signature, []).append(i)
    groups = []
    for sig, members in by_sig.items():
        first = triaged[members[0]]
        groups.append(Group(sig, normalise_error(first.error), first.top, tuple(members)))
    return tuple(groups)


async def triage_run(
    run: TestRun,
    scripts: Sequence[Script],
    options: TriageOptions,
    client: ModelClient | None,
    warnings: Sequence[str] = (),
    *,
    max_log_bytes: int | None = None,
    parses: ParseCache | None = None,
) -> TriagedRun:
    names = tuple(s.path for s in scripts)
    size = len(run.log.encode("utf-8"))
    if max_log_bytes is not None and size > max_log_bytes:
        problem = f"the test's log is {size} bytes; max_log_bytes={max_log_bytes}"
        return TriagedRun(run, names, None, problem, tuple(warnings))
    if not scripts:
        return TriagedRun(
            run, names, None, "no script of this test was found in the checkout", tuple(warnings)
        )
    if not run.log.strip():
        return TriagedRun(
            run, names, None, "the results hold no log or traceback for this test", tuple(warnings)
        )
    try:
        result = await triage(scripts, run.log, options, client=client, parses=parses)
    except ValueError as exc:
        return TriagedRun(run, names, None, f"triage refused: {exc}", tuple(warnings))
    return TriagedRun(run, names, result, None, tuple(warnings), sources=tuple(scripts))


async def triage_results(
    results: Results,
    checkout: Checkout,
    options: TriageOptions,
    client: ModelClient | None,
    *,
    max_files: int = 20,
    max_log_bytes: int | None = None,
) -> CiReport:
    """Triage every failed test of ``results``; scripts come from ``checkout``, ``max_files`` per test."""
    gate = asyncio.Semaphore(CONCURRENCY)
    parses = ParseCache()  # the failed tests of one file share its parse

    async def one(run: TestRun) -> TriagedRun:
        scripts, warnings = find_scripts(run, checkout, max_files=max_files)
        async with gate:
            return await triage_run(
                run,
                scripts,
                options,
                client,
                [*run.warnings, *warnings],
                max_log_bytes=max_log_bytes,
                parses=parses,
            )

    triaged = tuple(await asyncio.gather(*(one(run) for run in results.failed)))
    return CiReport(
        format=results.format,
        total=len(results.runs),
        passed=sum(1 for r in results.runs if r.verdict == "pass"),
        skipped=sum(1 for r in results.runs if r.verdict == "skip"),
        triaged=triaged,
        groups=group(triaged),
        warnings=(*results.warnings, *checkout.warnings),
        results=results,
    )
