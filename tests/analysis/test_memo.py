"""Per-program memos (``app.analysis.memo``): built once per live owner, let go with it, and
giving what a fresh computation gives."""

from __future__ import annotations

import gc

from app.analysis import estimate
from app.analysis.memo import kept_while
from app.analysis.model import Loc, State, TraceReason
from app.analysis.pipeline import analyze
from tests.conftest import benchmark_cases, load_case, running_example


class _Owner:
    pass


def test_a_memo_is_built_once_per_owner_and_dropped_with_it() -> None:
    memo: dict[int, list[int]] = {}
    owner, builds = _Owner(), []

    def build() -> list[int]:
        builds.append(1)
        return [len(builds)]

    assert kept_while(memo, owner, build) == [1]
    assert kept_while(memo, owner, build) == [1] and len(builds) == 1
    del owner
    gc.collect()
    assert memo == {}  # bounded by the live owners


def _fresh_evidence(program, why, kept, *, proven_headers=False):
    """``_evidence_by_line`` as it read the program before its per-program memo."""
    out = {}
    for s, ev in why.items():
        st = program.statements[s]
        for ln in st.lines:
            out[Loc(st.path, ln)] = ev
    for f in program.functions:
        if f.kind != "function":
            continue
        state = State.NEXE
        if f.header_lines and Loc(f.path, f.header_lines[0]) in kept:
            state = State.EXE
            if proven_headers and not any(
                (ev := why.get(s)) is not None and ev.state is State.EXE for s in f.statements
            ):
                state = State.DBT
        for ln in f.header_lines:
            loc = Loc(f.path, ln)
            out[loc] = TraceReason(
                state if loc in kept else State.NEXE, "header", f"header of `{f.qualname}`"
            )
    return out


def test_evidence_by_line_is_the_fresh_computations_in_its_order() -> None:
    cases = [running_example()[:2], *(load_case(path)[:2] for path in benchmark_cases()[:4])]
    for scripts, log in cases:
        a = analyze(scripts, log)
        for trace in a.traces.values():
            why = {s: TraceReason(State.EXE, "log-match") for s in range(0, len(a.program.statements), 3)}
            for proven in (False, True):
                got = estimate._evidence_by_line(a.program, why, trace.kept, proven_headers=proven)
                want = _fresh_evidence(a.program, why, trace.kept, proven_headers=proven)
                assert list(got.items()) == list(want.items())


def test_a_programs_flow_graphs_are_built_once_and_equal_fresh_ones() -> None:
    from app.analysis.cfg import flow_graph, program_graph

    scripts, log = running_example()[:2]
    program = analyze(scripts, log).program
    for f in program.functions:
        kept = program_graph(program, f)
        assert kept == flow_graph(program, f)
        assert program_graph(program, f) is kept  # the parse and the must-run lines share it


def test_the_lifecycles_program_parts_are_kept_and_equal_fresh_ones() -> None:
    from app.analysis.lifecycle import _find_parts, _program_parts

    for scripts, log in [running_example()[:2], *(load_case(path)[:2] for path in benchmark_cases()[:6])]:
        program = analyze(scripts, log).program
        kept = _program_parts(program)
        assert kept == _find_parts(program)
        assert _program_parts(program) is kept
