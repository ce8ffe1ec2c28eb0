"""A run's history facts computed in bulk (``batch_facts``) are the ones computed one by one."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from app.analysis.limits import CostLimits
from app.analysis.logparse import parse_log
from app.analysis.model import Analysis, Script
from app.analysis.parsed import ParseCache
from app.history.facts import batch_facts, failure_facts, run_facts, same_analysis
from app.history.packed import unpack_trace
from app.history.records import RunRecord, parse_test_id, scoped

HELPER = Script("helpers.py", "def check(v):\n    assert v\n")
TESTS = Script(
    "test_mod.py",
    "from helpers import check\n\n\ndef test_a():\n    check(1)\n\n\ndef test_b():\n    x = 2\n    if x:\n"
    "        print('x is', x)\n\n\ndef test_c():\n    raise ValueError('boom')\n",
)
OTHER = Script("test_other.py", "def test_z():\n    pass\n")
LOG = (
    "Traceback (most recent call last):\n"
    '  File "test_mod.py", line 15, in test_c\n'
    "    raise ValueError('boom')\nValueError: boom\n"
)
WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def _record(
    test_id: str, verdict: str, log: str | None = None, scripts: tuple[Script, ...] = ()
) -> RunRecord:
    key, params = parse_test_id(test_id, "")
    return RunRecord(key, test_id, params, verdict, WHEN, scripts=scripts or (TESTS, HELPER, OTHER), log=log)


def test_batch_facts_are_each_records_facts() -> None:
    records = [
        _record("test_mod.py::test_a", "pass"),
        _record("test_mod.py::test_b", "pass"),
        _record("test_mod.py::test_a", "pass"),  # again: the same trace
        _record("test_mod.py::test_c", "fail", LOG),
        _record("test_mod.py::test_b", "pass", "x is 2\n"),
        _record("test_other.py::test_z", "skip"),
    ]
    found = batch_facts(records)
    parses = ParseCache()
    for record, got in zip(records, found, strict=True):
        kept = scoped(record, parses)
        want = run_facts(kept, parses)
        assert got.paths == tuple(s.path for s in kept.scripts)
        trace = unpack_trace(got.packed) if got.packed is not None else got.facts[2]
        assert (got.facts[0], got.facts[1], trace, got.facts[3]) == want
        assert got.warning is None
    assert found[0].paths == ("test_mod.py", "helpers.py")  # its version: what the test reaches


def test_scripts_over_a_cost_limit_give_the_logs_facts_and_a_warning() -> None:
    records = [_record("test_mod.py::test_a", "pass"), _record("test_mod.py::test_c", "fail", LOG)]
    found = batch_facts(records, CostLimits(max_script_lines=5))
    assert all(f.facts[2] is None and f.packed is None for f in found)
    assert found[1].facts[0] is not None and "ValueError" in (found[1].facts[1] or "")  # from the log
    assert all("max_script_lines=5" in (f.warning or "") for f in found)


INIT = Script("pkg/__init__.py", "")
NOTES = Script("pkg/notes.py", "# nothing but comments\n# and a second line\n")


def test_scripts_left_out_without_a_statement_give_the_facts_of_the_scope() -> None:
    scripts = (TESTS, INIT, HELPER, NOTES)
    records = [
        _record("test_mod.py::test_a", "pass", scripts=scripts),
        _record("test_mod.py::test_c", "fail", LOG, scripts=scripts),
        _record("test_mod.py::test_b", "pass", "x is 2\n", scripts=scripts),
    ]
    parses = ParseCache()
    found = batch_facts(records, parses=parses)
    assert same_analysis(parses, scripts, ("test_mod.py", "helpers.py"))
    for record, got in zip(records, found, strict=True):
        kept = scoped(record, ParseCache())
        assert got.paths == tuple(s.path for s in kept.scripts)
        assert not {INIT.path, NOTES.path} & set(got.paths)  # left out: the shared parse served
        trace = unpack_trace(got.packed) if got.packed is not None else got.facts[2]
        assert (got.facts[0], got.facts[1], trace, got.facts[3]) == run_facts(kept, ParseCache())


def test_a_left_out_script_with_code_is_analysed_apart() -> None:
    parses = ParseCache()
    assert not same_analysis(parses, (TESTS, HELPER, OTHER), ("test_mod.py", "helpers.py"))
    assert same_analysis(parses, (TESTS, HELPER, OTHER), ("test_mod.py", "helpers.py", "test_other.py"))


LOG_A = (
    "Traceback (most recent call last):\n"
    '  File "test_mod.py", line 5, in test_a\n    check(1)\n'
    '  File "helpers.py", line 2, in check\n    assert v\nAssertionError\n'
)


def test_a_triages_analysis_gives_the_failures_facts() -> None:
    from app.options import TriageOptions
    from app.triage import finish, triage

    parsed = parse_log(LOG_A)
    options = TriageOptions(ranker="heuristic")
    for scripts, reused in (((TESTS, INIT, HELPER, NOTES), True), ((TESTS, HELPER, OTHER), False)):
        record = _record("test_mod.py::test_a", "fail", LOG_A, scripts=scripts)
        parses = ParseCache()
        seen: list[Analysis] = []
        run = partial(triage, scripts, LOG_A, options, client=None, parses=parses, explain=True)
        finish(partial(run, analysed=seen.append))
        got = failure_facts(record.key, scripts, LOG_A, seen[0], parses, parsed)
        if not reused:
            assert got is None  # the scope leaves out test_other.py, which holds code
            continue
        assert got is not None and got.paths == ("test_mod.py", "helpers.py")
        assert got == batch_facts([record])[0]  # paths, err_sig, message, packed trace, values


def test_interleaved_script_sets_cost_no_more_parses_than_sorted_ones() -> None:
    other = (Script("test_two.py", "def test_y():\n    pass\n"),)
    mine = [_record(f"test_mod.py::test_{t}", "pass") for t in "ab"] + [
        _record("test_mod.py::test_c", "fail", LOG)
    ]
    theirs = [
        _record("test_two.py::test_y", v, "E boom\n" if v == "fail" else None, scripts=other)
        for v in ("pass", "fail")
    ]
    interleaved = [mine[0], theirs[0], mine[1], theirs[1], mine[2]]
    parses = ParseCache(max_entries=2)
    found = batch_facts(interleaved, parses=parses)
    alone = ParseCache(max_entries=2)
    batch_facts([*mine, *theirs], parses=alone)
    assert parses.misses == alone.misses  # each script set's records taken together
    assert found == [batch_facts([r])[0] for r in interleaved]  # in the records' order


def test_the_traces_facts_are_made_of_are_packable() -> None:
    """``packed_facts`` packs its traces unchecked: both builders give sorted, distinct lines."""
    from app.history.facts import pass_trace
    from app.history.packed import packable

    parses = ParseCache()
    for name in ("test_a", "test_b"):
        trace = pass_trace(_record(f"test_mod.py::{name}", "pass"), parses)
        assert trace is not None and packable(trace)
    for record in (
        _record("test_mod.py::test_c", "fail", LOG),
        _record("test_mod.py::test_b", "pass", "x is 2\n"),
    ):
        trace = run_facts(record, parses)[2]
        assert trace is not None and packable(trace)


def _states_line_by_line(analysis: Analysis) -> dict[str, dict[str, list[int]]]:
    """``analysis_facts``' trace as it was first computed: each code line's evidence looked up."""
    from app.analysis.model import Loc, State

    tplus = analysis.traces["tplus"]
    out: dict[str, dict[str, list[int]]] = {}
    for f in analysis.program.files:
        states: dict[str, list[int]] = {"E": [], "N": [], "D": []}
        for n in sorted(f.code_lines):
            ev = tplus.evidence.get(Loc(f.path, n))
            state = ev.state if ev is not None else None
            if state == State.EXE:
                states["E"].append(n)
            elif state == State.DBT or (state is None and Loc(f.path, n) in tplus.kept):
                states["D"].append(n)
            else:
                states["N"].append(n)
        out[f.path] = states
    return out


def test_a_runs_trace_states_are_each_code_lines_evidence() -> None:
    from app.analysis.pipeline import analyze
    from app.history.facts import analysis_facts
    from tests.conftest import benchmark_cases, load_case

    cases = [((TESTS, HELPER, OTHER), LOG), ((TESTS, HELPER), LOG_A)]
    cases += [load_case(path)[:2] for path in benchmark_cases()[:6]]
    for scripts, log in cases:
        analysis = analyze(list(scripts), log, variants=("tplus",))
        assert analysis_facts(analysis, True)[2] == _states_line_by_line(analysis)
