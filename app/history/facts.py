"""What the CI history keeps of a run besides the record itself: its facts (pure, no I/O).

A run's facts are its err_sig, error message, estimated trace and printed values (docs/design.md §8.1):
computed once when the run is recorded, so spectra need no re-analysis. ``run_facts`` is the one
computation; ``batch_facts`` runs it over many records at once, as the service's analysis pool
does for a whole upload: one parse per script version, each version's scope and each test's
pass trace computed once, every script checked against the cost limits first.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Sequence
from typing import Any

from app.analysis.limits import CostLimits, check_text
from app.analysis.logparse import parse_log
from app.analysis.memo import kept_while
from app.analysis.model import Analysis, ParsedLog, Program, Script, State
from app.analysis.mustrun import must_run_lines
from app.analysis.parsed import ParseCache, ParsedScripts, grouped, log_patterns, script_set
from app.analysis.pipeline import analyze
from app.history.packed import pack_trace
from app.history.rank import Values
from app.history.records import Facts, RunFacts, RunRecord, TestKey, scoped, scoped_scripts
from app.history.signatures import analysis_signature, parsed_signature
from app.history.values import value_tuples


def run_facts(
    record: RunRecord,
    parses: ParseCache,
    limits: CostLimits | None = None,
    parsed_log: ParsedLog | None = None,
    paths: Collection[str] | None = None,
) -> Facts:
    """(err_sig, error message, estimated trace, printed values) from the run's log and scripts.

    A pass without a log (CI results files record passes so) still ran its test to the normal
    end: its trace is the test's must-run lines, the rest doubtful (``pass_trace``). A failure's
    err_sig is the one id of ``app.history.signatures``, or the one its record carries. With
    ``limits``, scripts over them raise ``InputTooCostly`` before any analysis. ``parsed_log``: the
    record's log parsed already (``parse_log``); ``paths``: the files whose trace is kept (None: all).
    """
    failed = record.verdict in ("fail", "error")
    if not record.log:
        trace = pass_trace(record, parses, limits, paths) if record.verdict == "pass" else None
        return (record.err_sig if failed else None), None, trace, None
    if record.scripts:
        try:
            analysis = analyze(
                list(record.scripts),
                record.log,
                parses=parses,
                variants=("tplus",),
                limits=limits,
                parsed_log=parsed_log,
            )
        except ValueError:
            if limits is not None:
                raise
            analysis = None
        if analysis is not None:
            return analysis_facts(analysis, failed, record.err_sig, paths)
    if not failed:
        return None, None, None, None
    return log_facts(record)


def analysis_facts(
    analysis: Analysis, failed: bool, err_sig: str | None = None, paths: Collection[str] | None = None
) -> Facts:
    """A run's facts from its analysis (an explained "tplus" trace): err_sig (``err_sig``, else the
    analysis' own), error message, the lines of each file (of ``paths`` only, when given) by
    state, printed values."""
    trace: dict[str, Any] = {}
    tplus = analysis.traces["tplus"]
    evidence = tplus.evidence
    # the few lines executed or doubtful, by file; every other code line is "N". Read off the
    # evidence once, not looked up line by line (a failure's scripts hold thousands of lines)
    exe, dbt = State.EXE, State.DBT
    done: dict[str, set[int]] = {}
    doubtful: dict[str, set[int]] = {}
    for path, line in [loc for loc, ev in evidence.items() if ev.state == exe]:
        done.setdefault(path, set()).add(line)
    maybe = [loc for loc, ev in evidence.items() if ev.state == dbt]
    maybe += [loc for loc in tplus.kept if loc not in evidence]  # kept without evidence: doubtful
    for path, line in maybe:
        doubtful.setdefault(path, set()).add(line)
    program = analysis.program
    code = kept_while(_CODE_LINES, program, lambda: _code_lines(program))
    for f, (ordered, lines) in zip(program.files, code, strict=True):
        if paths is not None and f.path not in paths:
            continue
        ran, unsure = done.get(f.path, set()) & lines, doubtful.get(f.path, set()) & lines
        taken = ran | unsure
        never = [n for n in ordered if n not in taken] if taken else list(ordered)
        trace[f.path] = {"E": sorted(ran), "N": never, "D": sorted(unsure)}
    printed = values_json(value_tuples(analysis))
    if not failed:
        return None, None, trace, printed
    sig = err_sig or analysis_signature(analysis)
    return sig, analysis.log.error_message[:2000], trace, printed


_CODE_LINES: dict[int, tuple[tuple[tuple[int, ...], frozenset[int]], ...]] = {}


def _code_lines(program: Program) -> tuple[tuple[tuple[int, ...], frozenset[int]], ...]:
    """Each file's code lines, ascending and as a set: once per program (``kept_while``), for the
    many failures of its tests that a CI job records."""
    return tuple((tuple(sorted(f.code_lines)), frozenset(f.code_lines)) for f in program.files)


def failure_facts(
    key: TestKey,
    scripts: tuple[Script, ...],
    log: str,
    analysis: Analysis,
    parses: ParseCache,
    parsed_log: ParsedLog,
) -> RunFacts | None:
    """A failed run's facts from the analysis its triage made of ``scripts`` (explained, "tplus",
    the log read by ``parse_log``): what ``batch_facts`` gets for a record of the run without an
    err_sig. None where the scope's analysis is another one (``same_analysis``)."""
    kept = scoped_scripts(scripts, key, log, parses, parsed_log)
    paths = tuple(s.path for s in kept)
    if kept is not scripts and not same_analysis(parses, scripts, paths):
        return None
    return packed_facts(paths, analysis_facts(analysis, True, None, frozenset(paths)))


def same_analysis(parses: ParseCache, scripts: Sequence[Script], paths: Collection[str]) -> bool:
    """Whether the scripts of ``paths`` are analysed as all ``scripts`` are, file by file: the
    scripts left out hold no statement (an empty ``__init__.py``, a file of comments), so they
    change no other file's analysis and the job's parse of all of them serves."""
    try:
        coded = parses.get(list(scripts), log_patterns(())).kept(_coded_paths)
    except ValueError:
        return False
    return not any(s.path not in paths and s.path in coded for s in scripts)


def _coded_paths(parsed: ParsedScripts) -> frozenset[str]:
    """The files holding a statement: a function, or module-level code (once per parse)."""
    return frozenset(f.path for f in parsed.program.functions if f.kind != "module" or f.statements)


def log_facts(record: RunRecord) -> Facts:
    """A run's facts from its log alone (no scripts, or scripts past a cost limit)."""
    if record.verdict not in ("fail", "error"):
        return None, None, None, None
    if not record.log:
        return record.err_sig, None, None, None
    parsed = parse_log(record.log)
    return record.err_sig or parsed_signature(parsed, {}), parsed.error_message[:2000], None, None


def log_only(record: RunRecord) -> Facts:
    """The facts a run keeps when nothing of it may be analysed: the err_sig its record carries."""
    return (record.err_sig if record.verdict in ("fail", "error") else None), None, None, None


def values_json(values: Values) -> dict[str, Any] | None:
    """Printed values as JSON (path -> line -> sorted tuples); None when nothing was printed."""
    out: dict[str, dict[str, list[list[str]]]] = {}
    for loc, tuples in sorted(values.items()):
        out.setdefault(loc.path, {})[str(loc.line)] = [list(t) for t in sorted(tuples)]
    return out or None


def pass_trace(
    record: RunRecord,
    parses: ParseCache,
    limits: CostLimits | None = None,
    paths: Collection[str] | None = None,
) -> dict[str, Any] | None:
    """A log-less pass's trace from its scripts (the files of ``paths`` only, when given): must-run
    lines "E", the other code lines "D"; None without scripts or when no function of the scripts
    is the test."""
    if not record.scripts:
        return None
    try:
        parsed = parses.get(list(record.scripts), log_patterns(()), limits)
    except ValueError:
        if limits is not None:
            raise
        return None
    program = parsed.program
    # ``app.analysis.mustrun.passing_states``, by file: must-run lines "E", other code lines "D"
    ran = must_run_lines(program, record.key.key) or must_run_lines(program, record.key.name)
    if not ran:
        return None
    by_path: dict[str, set[int]] = {}
    for loc in ran:
        by_path.setdefault(loc.path, set()).add(loc.line)
    trace: dict[str, Any] = {}
    for f, code in zip(program.files, parsed.kept(_code_order), strict=True):
        if paths is not None and f.path not in paths:
            continue
        done = by_path.get(f.path, set())  # code lines (``must_run_lines``)
        doubtful = list(code)
        for n in sorted(done & f.code_lines, reverse=True):  # a few lines out of thousands
            del doubtful[bisect_left(doubtful, n)]
        trace[f.path] = {"E": sorted(done), "N": [], "D": doubtful}
    return trace


def _code_order(parsed: ParsedScripts) -> tuple[tuple[int, ...], ...]:
    """Each file's code lines, ascending: once per parse, for the many passes of its tests."""
    return tuple(tuple(sorted(f.code_lines)) for f in parsed.program.files)


def packed_facts(paths: tuple[str, ...], facts: Facts) -> RunFacts:
    """A run's facts with its trace packed (``app.history.packed``): done where the facts are
    computed (the analysis pool, a CI job's triage), not by the writer. The trace is this module's
    (``pass_trace``, ``analysis_facts``): each state's lines are distinct code lines in ascending
    order, which ``pack_trace`` takes unchecked (``packable`` would scan every line of every run
    again; a test holds both builders to it)."""
    trace = facts[2]
    if trace is not None:
        return RunFacts(paths, (facts[0], facts[1], None, facts[3]), packed=pack_trace(trace, checked=True))
    return RunFacts(paths, facts)


def batch_facts(
    records: Sequence[RunRecord], limits: CostLimits | None = None, parses: ParseCache | None = None
) -> list[RunFacts]:
    """Each record's version scripts and facts, in order; a record whose scripts exceed ``limits``
    keeps its scripts, gets the facts its log alone gives, and a warning naming the limit.

    Records are taken a script set at a time (in order of first sight), so each set is parsed
    (and checked) once however the results interleave them and however few parses ``parses``
    keeps; a log-less pass of the same test and version is traced once however often the upload
    repeats it.
    """
    parses = ParseCache() if parses is None else parses
    batch = _Batch(parses, limits)
    found: dict[int, RunFacts] = {}
    for index in grouped(records, _files):  # a set's records together: its parse is reused, then let go
        found[index] = batch.facts(records[index])
    return [found[i] for i in range(len(records))]


def _files(record: RunRecord) -> tuple[tuple[str, str], ...]:
    return script_set(record.scripts)


class _Batch:
    """``batch_facts``' memos: script sets refused or checked against the limits, passes traced."""

    def __init__(self, parses: ParseCache, limits: CostLimits | None) -> None:
        self.parses = parses
        self.limits = limits
        self.refused: dict[tuple[tuple[str, str], ...], str] = {}
        self.checked: set[tuple[tuple[str, str], ...]] = set()
        self.traced: dict[tuple[Any, ...], RunFacts] = {}

    def facts(self, record: RunRecord) -> RunFacts:
        """One record's ``RunFacts``."""
        parses, limits = self.parses, self.limits
        files = _files(record)
        paths = tuple(p for p, _ in files)
        if files in self.refused:
            return RunFacts(paths, log_facts(record), self.refused[files])
        memo = (
            (files, record.key.key, record.verdict) if record.verdict == "pass" and not record.log else None
        )
        if memo is not None and memo in self.traced:
            return self.traced[memo]
        if files and limits is not None and files not in self.checked:
            try:  # the scripts once per set: every run of them is refused alike
                check_text(record.scripts, "", limits)
                parses.get(list(record.scripts), log_patterns(()), limits)
            except ValueError as exc:  # a cost limit (InputTooCostly)
                self.refused[files] = f"{record.test_id[:200]}: no trace recorded: {exc}"
                return RunFacts(paths, log_facts(record), self.refused[files])
            self.checked.add(files)
        try:
            # a failure's log is read for its frames (the scope) and for its analysis: parsed once
            failed = record.log and record.scripts and record.verdict in ("fail", "error")
            parsed_log = parse_log(record.log) if failed and record.log else None
            kept = scoped(record, parses, parsed_log)
            version = tuple(s.path for s in kept.scripts)
            if kept is not record and same_analysis(parses, record.scripts, version):
                facts = run_facts(record, parses, limits, parsed_log, frozenset(version))
            else:
                facts = run_facts(kept, parses, limits, parsed_log)
        except ValueError as exc:  # this run's own log is past a limit: what its record carries
            return RunFacts(paths, log_only(record), f"{record.test_id[:200]}: no trace recorded: {exc}")
        found = packed_facts(version, facts)
        if memo is not None:
            self.traced[memo] = found
        return found
