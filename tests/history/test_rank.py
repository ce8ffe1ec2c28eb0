"""History-aware ranking on a small synthetic test whose last edit broke it, through the real pipeline."""

from __future__ import annotations

import pytest

from app.analysis.model import Loc, Script, State
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.history.fusion import Sample, fit
from app.history.rank import (
    SELECTIONS,
    HistoryRun,
    final_order,
    line_channels,
    line_states,
    map_runs,
    rank_with_history,
    select_runs,
    target_of,
)
from app.history.selection import run_weight
from app.history.signatures import err_sig, group_key, site_sig
from app.localize.evidence import Channel
from app.localize.heuristic import rank_heuristic

OLD = """def make(n):
    return n * 2


def test_value():
    a = make(3)
    b = make(4)
    print("a", a)
    print("b", b)
    assert a + b == 14
"""
NEW = OLD.replace("b = make(4)", "b = make(5)")
PASS_LOG = "a 6\nb 8\n"
FAIL_LOG = """a 6
b 10
Traceback (most recent call last):
  File "/ci/tests/test_value.py", line 10, in test_value
    assert a + b == 14
AssertionError
"""
PATH = "tests/test_value.py"

# a calibration in which history channels that put an element first are strong evidence
CALIBRATION = fit(
    [Sample({"static": "1", "ochiai": "2-3", "diff": "none"}, False)] * 20
    + [Sample({"static": "2-3", "ochiai": "1", "diff": "1"}, True)] * 20
    + [Sample({"static": "4-5", "ochiai": "4-5", "diff": "none"}, False)] * 20,
    ["static", "ochiai", "cp", "diff"],
)


def setup() -> tuple:
    analysis = analyze([Script(PATH, NEW)], FAIL_LOG)
    rendered = render(analysis, "tplus", "line")
    static = [s.element.id for s in rank_heuristic(analysis, rendered, len(rendered.elements))]
    return analysis, rendered, static


def passes(n: int) -> list[HistoryRun]:
    old = analyze([Script(PATH, OLD)], PASS_LOG)
    states = line_states(old)
    return [HistoryRun("pass", {PATH: OLD}, states, env="e", versions_apart=1) for _ in range(n)]


def test_without_history_the_static_order_stands() -> None:
    analysis, rendered, static = setup()
    ranking = rank_with_history(analysis, rendered, static, [], CALIBRATION)
    assert list(ranking.order[: len(static)]) == static and ranking.runs_used == 0


def test_passes_of_the_old_version_point_at_the_edited_line() -> None:
    analysis, rendered, static = setup()
    faulty = next(e.id for e in rendered.elements if e.path == PATH and 7 in e.lines)
    assert static[0] != faulty  # alone, the log points at the assert
    ranking = rank_with_history(analysis, rendered, static, passes(5), CALIBRATION)
    assert ranking.order[0] == faulty and ranking.runs_used == 5
    channels = {e.channel for e in ranking.evidence[faulty]}
    assert {Channel.SPECTRUM, Channel.DIFF} <= channels
    assert all(e.path == PATH and e.line == 7 for e in ranking.evidence[faulty])
    assert ranking.fused[faulty].posterior > ranking.fused[static[0]].posterior


def test_a_sibling_tests_run_did_not_execute_the_failing_tests_body() -> None:
    analysis, _, _ = setup()
    target = target_of(analysis)
    doubtful = {loc: State.DBT for loc in line_states(analysis)}
    sibling = HistoryRun("pass", {PATH: NEW}, doubtful, same_test=False)
    own = HistoryRun("pass", {PATH: NEW}, doubtful)
    theirs, mine = (r.states for r in map_runs(target, [sibling, own]))
    assert theirs[Loc(PATH, 6)] == State.NEXE and theirs[Loc(PATH, 10)] == State.NEXE  # test_value's body
    assert theirs[Loc(PATH, 2)] == State.DBT  # the shared helper may have run
    assert mine[Loc(PATH, 6)] == State.DBT  # the test's own run keeps its doubt


def test_line_states_cover_every_code_line() -> None:
    analysis, _, _ = setup()
    states = line_states(analysis)
    assert set(states) == {Loc(PATH, n) for n in analysis.program.files[0].code_lines}


def test_final_order_keeps_each_elements_better_rank_ties_to_the_view_with_passes() -> None:
    with_passes = ["a", "b", "c", "d"]
    without = ["c", "a", "d", "b"]
    # c: min(2, 0) = 0 beats a: min(0, 1) = 0 only on the tie-break, which goes to the view with passes
    assert final_order(with_passes, without) == ["a", "c", "b", "d"]
    assert final_order(with_passes, with_passes) == with_passes


def test_runs_are_mapped_through_their_own_versions_and_a_fix_is_no_flip() -> None:
    analysis, _, _ = setup()
    target = target_of(analysis)
    failing = HistoryRun("fail", {PATH: NEW}, line_states(analysis), env="e")
    mapped = map_runs(target, [*passes(3), failing])
    # the old version's edited line 7 has no pre-image: the passes say nothing about it
    assert all(Loc(PATH, 7) not in r.states for r in mapped[:3])
    assert Loc(PATH, 7) in mapped[3].states and Loc(PATH, 6) in mapped[0].states
    # passes at the old version and a failure at the new one, same env: a regression, not flaky
    assert not any(r.flaky for r in mapped)
    assert [r.weight for r in mapped] == [run_weight(1)] * 3 + [1.0]


def test_run_selection_keeps_failures_and_picks_at_most_k_passes() -> None:
    analysis, _, _ = setup()
    target = target_of(analysis)
    failing = HistoryRun("fail", {PATH: NEW}, line_states(analysis), env="e")
    runs = map_runs(target, [*passes(6), failing])
    for mode in SELECTIONS:
        chosen = select_runs(target, runs, mode, k=2)
        assert runs[-1] in chosen
        assert sum(r.verdict == "pass" for r in chosen) == (6 if mode == "all" else 2)
    with pytest.raises(ValueError, match="unknown run selection"):
        select_runs(target, runs, "best")


def test_line_channels_without_passes_drop_them_from_spectrum_but_keep_the_diff() -> None:
    analysis, _, _ = setup()
    target = target_of(analysis)
    runs = map_runs(target, passes(4))
    with_p, without = line_channels(target, runs), line_channels(target, runs, passes=False)
    assert with_p["diff"] == without["diff"] == {Loc(PATH, 7): 1.0}
    assert with_p["ochiai"][Loc(PATH, 7)] > with_p["ochiai"][Loc(PATH, 6)]
    assert without["ochiai"][Loc(PATH, 7)] == without["ochiai"][Loc(PATH, 6)]  # failures alone tie


SHARED_OLD = """def make(n):
    return n * 2


def test_one():
    a = make(3)
    print("a", a)
    assert a == 6


def test_two():
    b = make(4)
    print("b", b)
    assert b + 1 == 9
"""
SHARED_NEW = SHARED_OLD.replace("return n * 2", "return n * 2 + 1")
SHARED = "tests/test_shared.py"


def _shared_failure(test: str, line: int, code: str, printed: str) -> tuple:
    log = (
        f"{printed}\nTraceback (most recent call last):\n"
        f'  File "/ci/{SHARED}", line {line}, in {test}\n    {code}\nAssertionError\n'
    )
    analysis = analyze([Script(SHARED, SHARED_NEW)], log)
    rendered = render(analysis, "tplus", "block")
    static = [s.element.id for s in rank_heuristic(analysis, rendered, len(rendered.elements))]
    old = analyze([Script(SHARED, SHARED_OLD)], printed.replace("7", "6").replace("9", "8"))
    history = [HistoryRun("pass", {SHARED: SHARED_OLD}, line_states(old), "e")] * 4
    top = rank_with_history(analysis, rendered, static, history, CALIBRATION).order[0]
    element = next(e for e in rendered.elements if e.id == top)
    frame = analysis.error_frames[-1]
    return err_sig(analysis.log.error_message, frame.function, code), element


def test_one_helper_fault_failing_two_tests_differently_groups_by_its_site() -> None:
    sig_one, top_one = _shared_failure("test_one", 8, "assert a == 6", "a 7")
    sig_two, top_two = _shared_failure("test_two", 14, "assert b + 1 == 9", "b 9")
    assert sig_one != sig_two  # different assertions in different tests
    assert 2 in top_one.lines and 2 in top_two.lines  # the history points both at the helper
    site_one, site_two = site_sig(top_one.code), site_sig(top_two.code)
    assert group_key(sig_one, site_one) == group_key(sig_two, site_two)
    assert group_key(sig_one) != group_key(sig_two)
