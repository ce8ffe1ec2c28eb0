"""The values channel on a real script and real logs: a printed value that changed points home."""

from __future__ import annotations

from app.analysis.model import Loc, Script
from app.analysis.pipeline import analyze
from app.history.rank import HistoryRun, line_channels, line_states, map_runs, target_of
from app.history.values import divergent, dynamic_parts, value_tuples
from tests.support.value_script import FAIL_LOG, PATH, SCRIPT


def _pass_log(stamp: str) -> str:
    return f"a is 6 at {stamp}\nb is 8\n"


def test_dynamic_parts_are_what_lies_around_the_static_ones() -> None:
    assert dynamic_parts(("a is", "at"), "a is 6 at 17.5") == ("6", "17.5")
    assert dynamic_parts(("b is",), "b is  10 ") == ("10",)
    assert dynamic_parts(("nope",), "b is 10") == ()


def test_a_value_the_passes_agreed_on_points_at_its_assignment() -> None:
    failure = analyze([Script(PATH, SCRIPT)], FAIL_LOG)
    printed = value_tuples(failure)
    assert printed[Loc(PATH, 12)] == frozenset({("10",)})
    passes = [analyze([Script(PATH, SCRIPT)], _pass_log(s)) for s in ("1.5", "2.5", "3.5")]
    # the time differs between passes: that statement says nothing; b's value does
    assert divergent(printed, [value_tuples(p) for p in passes]) == [Loc(PATH, 12)]
    target = target_of(failure)
    history = [
        HistoryRun("pass", {PATH: SCRIPT}, line_states(p), "e", values=value_tuples(p)) for p in passes
    ]
    scores = line_channels(target, map_runs(target, history))["values"]
    assert scores == {Loc(PATH, 10): 1.0, Loc(PATH, 12): 0.5}  # b's assignment, then its print
    assert "values" not in line_channels(target, map_runs(target, history[:0]))
