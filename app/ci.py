"""Triage every failed test of a CI job: results in, one triage per failed test, groups out.

The shell between the readers (``app.ingest``) and the emitters (``app.emit``): it finds each
failed test's scripts in the checkout and hands them, with the test's own log, to a triager that
goes through ``app.triage`` (in this process, or the service's pool). A test whose scripts cannot
be found, or whose triage is refused, is reported by name, never dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from app.analysis.context import REFINEMENTS
from app.analysis.limits import CostLimits
from app.analysis.logparse import parse_log
from app.analysis.model import Analysis, ParsedLog, Script
from app.analysis.parsed import ParseCache, grouped, script_set
from app.history.signatures import log_signature, normalise_error
from app.ingest.base import Results, TestRun
from app.ingest.resolve import Checkout, find_scripts, id_paths
from app.localize.result import TriageResult
from app.options import TriageOptions, before_of
from app.triage import history_skipped, triage

if TYPE_CHECKING:
    from app.history.records import RunFacts
    from app.localize.llm import ModelClient

_NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)
CONCURRENCY = 4  # triages at once (model calls dominate; the static phase is milliseconds)
# parses of script sets kept by a job's triager: a module's failures are triaged together (at most
# CONCURRENCY sets in flight) and then its runs recorded together (``grouped``: its set and its
# scope's), so this many suffice, and each holds many times its text
PARSES = CONCURRENCY


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
    # what ``POST /v1/triage`` answers this failure with when it is refused: 413 past a size
    # limit, 422 past a cost limit or for bad input (``problem`` is its message)
    refused_status: int | None = None

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

    @cached_property
    def signature(self) -> str:
        """The failure's id (``app.history.signatures``), the one its stored run, its stored triage
        and ``/v1/signatures`` show: from the test's log and the scripts it was triaged with (a
        test the results give no log for is known by its error text); never from the ranking."""
        return log_signature(self.run.log or self.run.error, self.sources)

    def with_triage_id(self, triage_id: int | None, *, on_result: bool = False) -> TriagedRun:
        """This failure with its stored triage's id (``on_result``: on its result too), its
        signature kept: ``replace`` makes a new object, and the signature hashes the whole log
        and scripts."""
        result = self.result
        if on_result and result is not None and triage_id is not None:
            result = replace(result, id=str(triage_id))
        out = replace(self, triage_id=triage_id, result=result)
        if "signature" in self.__dict__:  # cached_property keeps its value in the instance dict
            out.__dict__["signature"] = self.__dict__["signature"]
        return out

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
            "refused_status": self.refused_status,
        }


@dataclass(frozen=True)
class Group:
    """Failed tests with one signature (a cause across tests, whatever each ranking put first)."""

    signature: str
    error: str  # the first member's, normalised (``app.history.signatures.normalise_error``)
    top: str | None  # the first member's top location
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
    # failed test id -> its known issue (``app.launch.Known``), where the job was recorded
    known: Mapping[str, Any] = field(default_factory=dict, compare=False)
    launch_id: int | None = None

    @property
    def untriaged(self) -> tuple[TriagedRun, ...]:
        return tuple(t for t in self.triaged if t.result is None)

    def known_issue(self, item: TriagedRun) -> Any:
        """The failure's known issue (its label), or None for a new failure."""
        return self.known.get(item.run.test_id)

    @property
    def new_failures(self) -> tuple[TriagedRun, ...]:
        """The failures that are not known issues (``--fail-on new`` fails on these)."""
        return tuple(t for t in self.triaged if self.known_issue(t) is None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "launch_id": self.launch_id,
            "summary": {
                "tests": self.total,
                "passed": self.passed,
                "skipped": self.skipped,
                "failed": len(self.triaged),
                "triaged": len(self.triaged) - len(self.untriaged),
                "not_triaged": [t.run.test_id for t in self.untriaged],
                "groups": len(self.groups),
                "known_issues": len(self.triaged) - len(self.new_failures),
                "new_failures": len(self.new_failures),
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
            "tests": [
                {**t.to_dict(), "known_issue": None if k is None else k.to_dict()}
                for t, k in ((t, self.known_issue(t)) for t in self.triaged)
            ],
            "warnings": list(self.warnings),
        }


def group(triaged: Sequence[TriagedRun]) -> tuple[Group, ...]:
    """Failures with the same signature id, in order of first appearance."""
    by_sig: dict[str, list[int]] = {}
    for i, item in enumerate(triaged):
        by_sig.setdefault(item.signature, []).append(i)
    groups = []
    for sig, members in by_sig.items():
        first = triaged[members[0]]
        groups.append(Group(sig, normalise_error(first.error), first.top, tuple(members)))
    return tuple(groups)


# one failed test's triage: its run and the scripts found for it in, the result out; ValueError
# when the triage is refused (options, cost limits). Built by ``local_triager`` (the CLI, the
# pytest plugin) or by the service around its runner (``POST /v1/ingest``).
Triager = Callable[[TestRun, Sequence[Script]], Awaitable[TriageResult]]
# (test key, newest runs to read, only those before this time) -> the test's recorded runs, oldest first
HistoryReader = Callable[[str, int, datetime | None], Sequence[Any]]


def history_key(run: TestRun) -> str:
    """The key a test's runs are recorded under in the CI history."""
    from app.history.records import parse_test_id

    return parse_test_id(run.test_id, run.suite)[0].key


class LocalTriager:
    """Triage in this process through ``app.triage``; the failed tests of one job share the scripts'
    parses. With ``history`` each test's recorded runs are read first and fused where they apply.

    A test's log is parsed once: ``triage_results`` finds the test's scripts from the frames of
    ``parse(run)`` and hands the same parse to the triage.
    """

    def __init__(
        self,
        options: TriageOptions,
        client: ModelClient | None,
        history: HistoryReader | None,
        limits: CostLimits | None,
        *,
        record: bool = False,
    ) -> None:
        self.options = options
        self.client = client
        self.history = history
        self.limits = limits
        self.parses = ParseCache(max_entries=PARSES)
        # with ``record``: each failure's history facts, from its triage's own analysis (``facts``),
        # and passing runs' scripts, with their facts where a failure's triage had them parsed (``passes``)
        self.facts: dict[TestRun, RunFacts] | None = {} if record else None
        self.passes: dict[TestRun, tuple[tuple[Script, ...], RunFacts | None]] | None = {} if record else None

    def records_facts(self) -> bool:
        """Whether a triage's analysis is the one recording the run would make: the estimated
        "tplus" trace of the log read as ``parse`` reads it, with every refinement and no extra
        log functions (``app.history.facts.run_facts``); then the facts are kept from it."""
        options = self.options
        return (
            self.facts is not None
            and options.trace == "tplus"
            and not options.log_functions
            and (options.log_format or "auto").strip() == "auto"
            and not any(name in REFINEMENTS for name in options.disabled_channels)
        )

    def record_passes(self, runs: Sequence[tuple[TestRun, tuple[Script, ...]]]) -> None:
        """The history facts of passing runs, each with its scripts (``find_scripts``, as
        ``app.launch.run_records`` finds a pass's), taken right after a failure with the same
        scripts was triaged, while their parse is still kept: recording them after the whole job
        would parse those scripts again. The facts ``app.store.history.HistoryStore.with_facts``
        computes (``app.history.facts.batch_facts``)."""
        if self.passes is None or not runs:
            return
        from app.history.facts import batch_facts
        from app.history.records import RunRecord, parse_test_id

        taken: list[tuple[TestRun, RunRecord]] = []
        for run, scripts in runs:
            try:
                key, params = parse_test_id(run.test_id, run.suite)
            except ValueError:  # no key, no record
                continue
            # a record's facts read its test, scripts, verdict and log, never its time or job
            record = RunRecord(
                key, run.test_id, params, "pass", _NO_TIME, scripts=scripts, log=run.log or None
            )
            taken.append((run, record))
        try:
            found = batch_facts([record for _, record in taken], parses=self.parses)
        except Exception:  # never costs the job's triage: recording computes them again, and warns
            return
        for (run, record), facts in zip(taken, found, strict=True):
            self.passes[run] = (record.scripts, facts)

    def parse(self, run: TestRun) -> ParsedLog | None:
        """The run's log parsed as finding its scripts reads it, when the triage reads it alike (a
        log format given by the options is the analysis' own: the two parse apart then)."""
        if (self.options.log_format or "auto").strip() != "auto" or not run.log:
            return None
        return parse_log(run.log)

    async def __call__(
        self, run: TestRun, scripts: Sequence[Script], parsed: ParsedLog | None = None
    ) -> TriageResult:
        options, client, history = self.options, self.client, self.history
        test, runs, note = None, (), None
        if history is not None:
            test = history_key(run)
            note = history_skipped(options, model_configured=client is not None)
            if note is None:
                window, before = options.history_window, before_of(options)
                runs = tuple(await asyncio.to_thread(history, test, window, before))
        keep = self.records_facts() and parsed is not None
        analysed: list[Analysis] = []
        result = await triage(
            scripts,
            run.log,
            options,
            client=client,
            limits=self.limits,
            parses=self.parses,
            test=test,
            history=runs,
            note=note,
            parsed_log=parsed,
            explain=keep,
            analysed=analysed.append if keep else None,
        )
        if analysed and self.facts is not None and parsed is not None:
            from app.history.facts import failure_facts
            from app.history.records import parse_test_id

            try:
                key = parse_test_id(run.test_id, run.suite)[0]
            except ValueError:  # no key, no record: nothing to keep
                return result
            found = failure_facts(key, tuple(scripts), run.log, analysed[0], self.parses, parsed)
            if found is not None:
                self.facts[run] = found
        return result


def _test_file(run: TestRun) -> str:
    """The file a run's test lives in, as its results or its id name it ("" when neither does)."""
    return (run.script_paths or id_paths(run.test_id) or ("",))[0]


def local_triager(
    options: TriageOptions,
    client: ModelClient | None,
    *,
    history: HistoryReader | None = None,
    limits: CostLimits | None = None,
    record: bool = False,
) -> LocalTriager:
    """A ``LocalTriager``: triage in this process, the job's parses shared; with ``record`` each
    failure's history facts are kept from its triage (``LocalTriager.facts``)."""
    return LocalTriager(options, client, history, limits, record=record)


async def triage_run(
    run: TestRun,
    scripts: Sequence[Script],
    triager: Triager,
    warnings: Sequence[str] = (),
    *,
    max_log_bytes: int | None = None,
    parsed: ParsedLog | None = None,
) -> TriagedRun:
    """One failed test's triage, or the reason it has none (never an exception); ``parsed``: the
    run's log as a ``LocalTriager`` parsed it."""
    names = tuple(s.path for s in scripts)
    size = len(run.log.encode("utf-8"))
    if max_log_bytes is not None and size > max_log_bytes:
        problem = f"the test's log is {size} bytes; max_log_bytes={max_log_bytes}"
        return TriagedRun(run, names, None, problem, tuple(warnings), refused_status=413)
    if not scripts:
        return TriagedRun(
            run, names, None, "no script of this test was found in the checkout", tuple(warnings)
        )
    if not run.log.strip():
        return TriagedRun(
            run, names, None, "the results hold no log or traceback for this test", tuple(warnings)
        )
    try:
        if parsed is not None and isinstance(triager, LocalTriager):
            result = await triager(run, scripts, parsed)
        else:
            result = await triager(run, scripts)
    except ValueError as exc:
        return TriagedRun(run, names, None, f"triage refused: {exc}", tuple(warnings), refused_status=422)
    triage_id = int(result.id) if result.id is not None and result.id.isdigit() else None
    return TriagedRun(run, names, result, None, tuple(warnings), triage_id=triage_id, sources=tuple(scripts))


async def triage_results(
    results: Results,
    checkout: Checkout,
    triager: Triager,
    *,
    max_files: int = 20,
    max_log_bytes: int | None = None,
) -> CiReport:
    """Triage every failed test of ``results``; scripts come from ``checkout``, ``max_files`` per test.

    Each test's scripts are found when its triage starts (at most ``CONCURRENCY`` at once), so
    that a log parsed for its frames is alive only until its triage has read it too.
    """
    gate = asyncio.Semaphore(CONCURRENCY)
    local = triager if isinstance(triager, LocalTriager) else None

    async def one(run: TestRun) -> TriagedRun:
        async with gate:
            # the log's frames and the scripts they name: off the event loop (a log may be large)
            parsed, (scripts, warnings) = await asyncio.to_thread(_found, run)
            return await triage_run(
                run,
                scripts,
                triager,
                [*run.warnings, *warnings],
                max_log_bytes=max_log_bytes,
                parsed=parsed,
            )

    def _found(run: TestRun) -> tuple[ParsedLog | None, tuple[list[Script], list[str]]]:
        parsed = local.parse(run) if local is not None else None
        frames = parsed.frames if parsed is not None else None
        return parsed, find_scripts(run, checkout, max_files=max_files, frames=frames)

    failed = results.failed
    order = grouped(failed, _test_file)  # a module's failures together: its parse is reused, then let go
    # passing runs by their scripts, when the triages parse scripts as recording does: each set's
    # passes get their facts right after a failure with that set is triaged (its parse still kept)
    waiting: dict[tuple[tuple[str, str], ...], list[tuple[TestRun, tuple[Script, ...]]]] = {}
    if local is not None and local.passes is not None and local.records_facts():
        for run in results.runs:
            if run.verdict == "pass":
                scripts = tuple(find_scripts(run, checkout)[0])
                waiting.setdefault(script_set(scripts), []).append((run, scripts))

    async def after(run: TestRun) -> TriagedRun:
        done = await one(run)
        if local is not None and waiting and done.sources:
            local.record_passes(waiting.pop(script_set(done.sources), ()))
        return done

    done = await asyncio.gather(*(after(failed[i]) for i in order))
    triaged = tuple(t for _, t in sorted(zip(order, done, strict=True), key=lambda pair: pair[0]))
    if local is not None and local.passes is not None:
        for rest in waiting.values():  # no failure has these scripts: their facts come when recorded
            local.passes.update((run, (scripts, None)) for run, scripts in rest)
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
