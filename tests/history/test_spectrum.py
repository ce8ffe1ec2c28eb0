"""Spectrum rows from estimated states and the SBFL formulas, against hand-computed values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.analysis.model import Loc, State
from app.history.spectrum import (
    Counts,
    RunTrace,
    dstar,
    map_states,
    ochiai,
    op2,
    rank,
    scores,
    spectrum,
    tarantula,
)
from app.history.versions import map_lines

A, B, C = Loc("t.py", 1), Loc("t.py", 2), Loc("t.py", 3)
E, N, D = State.EXE, State.NEXE, State.DBT


def runs() -> list[RunTrace]:
    return [
        RunTrace("fail", {A: E, B: D, C: N}),
        RunTrace("error", {A: E, B: D, C: E}),
        RunTrace("pass", {A: E, B: D, C: E}),
        RunTrace("pass", {A: N, B: D, C: E}),
        RunTrace("pass", {A: N, B: D}),  # C absent: this version had no such line
        RunTrace("skip", {A: E, B: E, C: E}),
        RunTrace("fail", {A: N, B: N, C: N}, flaky=True),
    ]


def test_counts_follow_the_default_state_weights() -> None:
    counts = spectrum(runs(), [A, B, C])
    assert counts[A] == Counts(aef=2, anf=0, aep=1, anp=2)
    assert counts[B] == Counts(aef=2, anf=0, aep=1.5, anp=1.5)  # doubtful: 1 in failures, 0.5 in passes
    assert counts[C] == Counts(aef=1, anf=1, aep=2, anp=0)


def test_a_pass_doubts_a_line_the_failure_doubts_at_least_as_much() -> None:
    # B: doubtful in the failure and in both passes; A: the fault, executed everywhere it ran
    history = [RunTrace("pass", {A: E, B: D}), RunTrace("pass", {A: E, B: D}), RunTrace("fail", {A: E, B: D})]
    failure = {A: E, B: D}
    counts = spectrum(history, [A, B], failure=failure)
    assert counts[B] == Counts(aef=1, anf=0, aep=2, anp=0)  # the passes' doubt counts as the failure's
    assert ochiai(counts[B]) == ochiai(counts[A])  # no longer above the certainly executed line
    # without the failure's states (or where the failure executed the line) passes' doubt stays at half
    assert spectrum(history, [B])[B] == Counts(aef=1, anf=0, aep=1, anp=1)
    assert spectrum(history, [B], failure={B: E})[B] == Counts(aef=1, anf=0, aep=1, anp=1)


def test_run_weight_scales_its_row() -> None:
    counts = spectrum([RunTrace("fail", {A: E}, weight=0.5), RunTrace("pass", {A: N}, weight=0.25)], [A])
    assert counts[A] == Counts(aef=0.5, anf=0, aep=0, anp=0.25)


def test_formulas_on_a_hand_computed_row() -> None:
    c = Counts(aef=2, anf=0, aep=1, anp=2)
    assert ochiai(c) == pytest.approx(2 / math.sqrt(2 * 3))
    assert dstar(c) == pytest.approx(4.0)
    assert op2(c) == pytest.approx(2 - 1 / 4)
    assert tarantula(c) == pytest.approx(1 / (1 + 1 / 3))
    assert dstar(Counts(aef=1)) == math.inf
    assert ochiai(Counts()) == 0.0 and tarantula(Counts()) == 0.0


def test_unknown_formula_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown formula"):
        scores({}, "jaccardish")


def test_ties_go_to_the_static_rank() -> None:
    blocks = {"BLOCK 1": 0.9, "BLOCK 2": 0.9, "BLOCK 3": 0.2}
    assert rank(blocks, {"BLOCK 2": 1, "BLOCK 1": 2}) == ["BLOCK 2", "BLOCK 1", "BLOCK 3"]


def test_states_of_an_older_version_move_with_the_line_map() -> None:
    old = ["def test():", "    x = 1", "    assert x"]
    new = ["def test():", "    # why", "    x = 1", "    assert x == 1", "    done()"]
    states = {Loc("t.py", 1): E, Loc("t.py", 2): E, Loc("t.py", 3): N, Loc("u.py", 1): E}
    moved = map_states(states, {"t.py": map_lines(old, new)})
    assert moved == {Loc("t.py", 1): E, Loc("t.py", 3): E}  # "assert x" was rewritten: no pre-image


def test_an_edited_line_counts_old_runs_only_when_asked() -> None:
    old = ["def test():", "    x = compute(1)"]
    new = ["def test():", "    x = compute(2)"]
    states = {Loc("t.py", 1): E, Loc("t.py", 2): E}
    maps = {"t.py": map_lines(old, new)}
    assert map_states(states, maps) == {Loc("t.py", 1): E}
    assert map_states(states, maps, keep_modified=True) == states


state = st.sampled_from([E, N, D])
run = st.builds(RunTrace, st.sampled_from(["pass", "fail"]), st.fixed_dictionaries({A: state}))


@given(st.lists(run, max_size=12))
def test_counts_sum_to_the_weighted_number_of_runs(history: list[RunTrace]) -> None:
    c = spectrum(history, [A])[A]
    assert c.aef + c.anf == pytest.approx(sum(r.verdict == "fail" for r in history))
    assert c.aep + c.anp == pytest.approx(sum(r.verdict == "pass" for r in history))
    for f in (ochiai, tarantula):
        assert 0.0 <= f(c) <= 1.0


@given(st.lists(run, max_size=12))
def test_a_line_every_failure_ran_and_no_pass_ran_scores_highest(history: list[RunTrace]) -> None:
    history = [*history, RunTrace("fail", {A: E, B: E}), RunTrace("pass", {A: N, B: E})]
    for r in history:
        if r.verdict == "fail":
            r.states[A] = E  # type: ignore[index]
        else:
            r.states[A] = N  # type: ignore[index]
    s = scores(spectrum(history, [A, B]))
    assert s[A] == pytest.approx(1.0)
    assert s[A] >= s.get(B, 0.0)
