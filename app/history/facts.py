"""What the CI history keeps of a run besides the record itself: its facts (pure, no I/O).

A run's facts are its err_sig, error message, estimated trace and printed values (docs/design.md §8.1):
computed once when the run is recorded, so spectra need no re-analysis. ``run_facts`` is the one
computation; ``batch_facts`` runs it over many records at once, as the service's analysis pool
does for a whole upload: one parse per script version, each version's scope and each test's
pass trace computed once, every script checked against the cost limits first.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from app.analysis.limits import CostLimits, check_text
from app.analysis.logparse import parse_log
from app.analysis.model import Loc, ParsedLog, State
from app.analysis.mustrun import must_run_lines
from app.analysis.parsed import ParseCache, ParsedScripts, log_patterns
from app.analysis.pipeline import analyze
from app.history.packed import pack_trace, packable
from app.history.rank import Values
from app.history.records import Facts, RunFacts, RunRecord, scoped
from app.history.signatures import analysis_signature, parsed_signature
from app.history.values import value_tuples


def run_facts(
    record: RunRecord,
    parses: ParseCache,
    limits: CostLimits | None = None,
    parsed_log: ParsedLog | None = None,
) -> Facts:
    """(err_sig, error message, estimated trace, printed values) from the run's log and scripts.

    A pass without a log (CI results files record passes so) still ran its test to the normal
    end: its trace is the test's must-run lines, the rest doubtful (``pass_trace``). A failure's
    err_sig is the one id of ``app.history.signatures``, or the one its record carries. With
    ``limits``, scripts over them raise ``InputTooCostly`` before any analysis. ``parsed_log``: the
    record's log parsed already (``parse_log``).
    """
    failed = record.verdict in ("fail", "error")
    if not record.log:
        trace = pass_trace(record, parses, limits) if record.verdict == "pass" else None
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
            trace: dict[str, Any] = {}
            tplus = analysis.traces["tplus"]
            for f in analysis.program.files:
                states: dict[str, list[int]] = {"E": [], "N": [], "D": []}
                for n in sorted(f.code_lines):
                    ev = tplus.evidence.get(Loc(f.path, n))
                    state = ev.state if ev is not None else None
                    kept = Loc(f.path, n) in tplus.kept
                    if state == State.EXE or (state is None and kept):
                        states["E" if state == State.EXE else "D"].append(n)
                    elif state == State.DBT:
                        states["D"].append(n)
                    else:
                        states["N"].append(n)
                trace[f.path] = states
            printed = values_json(value_tuples(analysis))
            if not failed:
                return None, None, trace, printed
            sig = record.err_sig or analysis_signature(analysis)
            return sig, analysis.log.error_message[:2000], trace, printed
    if not failed:
        return None, None, None, None
    return log_facts(record)


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
    record: RunRecord, parses: ParseCache, limits: CostLimits | None = None
) -> dict[str, Any] | None:
    """A log-less pass's trace from its scripts: must-run lines "E", the other code lines "D";
    None without scripts or when no function of the scripts is the test."""
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
        done = by_path.get(f.path, set())  # code lines (``must_run_lines``)
        doubtful = list(code)
        for n in sorted(done & f.code_lines, reverse=True):  # a few lines out of thousands
            del doubtful[bisect_left(doubtful, n)]
        trace[f.path] = {"E": sorted(done), "N": [], "D": doubtful}
    return trace


def _code_order(parsed: ParsedScripts) -> tuple[tuple[int, ...], ...]:
    """Each file's code lines, ascending: once per parse, for the many passes of its tests."""
    return tuple(tuple(sorted(f.code_lines)) for f in parsed.program.files)


def batch_facts(
    records: Sequence[RunRecord], limits: CostLimits | None = None, parses: ParseCache | None = None
) -> list[RunFacts]:
    """Each record's version scripts and facts, in order; a record whose scripts exceed ``limits``
    keeps its scripts, gets the facts its log alone gives, and a warning naming the limit.

    Records are grouped by their scripts, so each script set is parsed (and checked) once; a log-
    less pass of the same test and version is traced once however often the upload repeats it.
    """
    parses = ParseCache() if parses is None else parses
    refused: dict[tuple[tuple[str, str], ...], str] = {}
    checked: set[tuple[tuple[str, str], ...]] = set()
    traced: dict[tuple[Any, ...], RunFacts] = {}
    out: list[RunFacts] = []
    for record in records:
        files = tuple((s.path, s.content) for s in record.scripts)
        if files in refused:
            out.append(RunFacts(tuple(p for p, _ in files), log_facts(record), refused[files]))
            continue
        memo = (
            (files, record.key.key, record.verdict) if record.verdict == "pass" and not record.log else None
        )
        if memo is not None and memo in traced:
            out.append(traced[memo])
            continue
        paths = tuple(p for p, _ in files)
        if files and limits is not None and files not in checked:
            try:  # the scripts once per set: every run of them is refused alike
                check_text(record.scripts, "", limits)
                parses.get(list(record.scripts), log_patterns(()), limits)
            except ValueError as exc:  # a cost limit (InputTooCostly)
                refused[files] = f"{record.test_id[:200]}: no trace recorded: {exc}"
                out.append(RunFacts(paths, log_facts(record), refused[files]))
                continue
            checked.add(files)
        try:
            # a failure's log is read for its frames (the scope) and for its analysis: parsed once
            failed = record.log and record.scripts and record.verdict in ("fail", "error")
            parsed_log = parse_log(record.log) if failed and record.log else None
            kept = scoped(record, parses, parsed_log)
            facts = run_facts(kept, parses, limits, parsed_log)
        except ValueError as exc:  # this run's own log is past a limit: what its record carries
            out.append(RunFacts(paths, log_only(record), f"{record.test_id[:200]}: no trace recorded: {exc}"))
            continue
        trace = facts[2]
        if trace is not None and packable(trace):  # packed here, in the pool, not by the writer
            facts, packed = (facts[0], facts[1], None, facts[3]), pack_trace(trace, checked=True)
        else:
            packed = None
        found = RunFacts(tuple(s.path for s in kept.scripts), facts, packed=packed)
        if memo is not None:
            traced[memo] = found
        out.append(found)
    return out
