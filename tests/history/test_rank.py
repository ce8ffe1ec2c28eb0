"""History-aware ranking on a small synthetic test whose last edit broke it, through the real pipeline."""

from __future__ import annotations

from app.analysis.model import Loc, Script
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.history.fusion import Sample, fit
from app.history.rank import HistoryRun, line_states, rank_with_history
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


def test_line_states_cover_every_code_line() -> None:
    analysis, _, _ = setup()
    states = line_states(analysis)
    assert set(states) == {Loc(PATH, n) for n in analysis.program.files[0].code_lines}
