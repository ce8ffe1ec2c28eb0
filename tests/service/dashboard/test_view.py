"""The failure view's content on the paper's running example, through the real pipeline."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.analysis.model import VARIANTS, Analysis, Loc, Script
from app.analysis.pipeline import analyze
from app.localize.result import TriageOptions
from app.service.dashboard.view import FailureView, failure_view
from app.triage import triage
from tests.service.dashboard.conftest import run_async
from tests.service.helpers import EXAMPLE

EXPECTED = json.loads((EXAMPLE / "expected.json").read_text())
PATH = "test_example.py"
SCRIPTS = (Script(PATH, (EXAMPLE / "test_example.py").read_text()),)
LOG = (EXAMPLE / "failure.log").read_text()


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    return analyze(SCRIPTS, LOG, log_functions=["Log.log"])


@pytest.fixture(scope="module")
def ranking() -> list[dict[str, Any]]:
    options = TriageOptions(level="block", k=3, ranker="heuristic", log_functions=("Log.log",))
    return run_async(lambda: triage(SCRIPTS, LOG, options, client=None)).to_dict()["ranking"]


def lines(view: FailureView) -> dict[int, Any]:
    return {line.number: line for seg in view.files[0].segments for line in seg.lines}


def pruned(view: FailureView) -> set[int]:
    return {
        line.number for seg in view.files[0].segments if seg.pruned for line in seg.lines if not line.blank
    }


def code_lines() -> set[int]:
    return {n for n, text in enumerate(SCRIPTS[0].content.splitlines(), 1) if text.strip()}


def test_pruned_runs_are_the_lines_each_variant_drops(analysis: Analysis) -> None:
    enhanced = failure_view(analysis, "tplus", [])
    assert pruned(enhanced) == code_lines() - set(EXPECTED["enhanced"]["trace"])
    assert pruned(failure_view(analysis, "T0", [])) == set()
    assert pruned(failure_view(analysis, "T2", [])) == code_lines() - set(EXPECTED["faithful"]["T2"])


def test_segments_keep_every_line_in_order_and_never_start_blank(analysis: Analysis) -> None:
    view = failure_view(analysis, "tplus", [])
    numbers = [line.number for seg in view.files[0].segments for line in seg.lines]
    assert numbers == list(range(1, len(SCRIPTS[0].content.splitlines()) + 1))
    for before, after in zip(view.files[0].segments, view.files[0].segments[1:], strict=False):
        assert before.pruned != after.pruned
        assert not after.lines[0].blank
    for seg in view.files[0].segments:
        code = [line.number for line in seg.lines if not line.blank]
        assert (seg.first, seg.last, seg.code_lines) == (code[0], code[-1], len(code))


def test_log_statements_carry_algorithm_1_state_and_their_log_lines(analysis: Analysis) -> None:
    by_line = lines(failure_view(analysis, "tplus", []))
    for number in EXPECTED["static_log_statements"]:
        log = by_line[number].log
        assert log is not None and log.static
        expected = "executed" if number in EXPECTED["L_exe"] else "not_executed"
        assert log.state == expected, number
        assert bool(log.matches) == (expected == "executed")
    for number in EXPECTED["non_static_log_statements"]:
        log = by_line[number].log
        assert log is not None and not log.static and log.state == "doubtful" and not log.matches
    (match,) = by_line[2].log.matches
    assert (match.log_line, match.text, match.unique) == (4, "Test 1 executed!", True)
    assert by_line[1].log is None


def test_traceback_frames_are_marked_outermost_first(analysis: Analysis) -> None:
    by_line = lines(failure_view(analysis, "tplus", []))
    marked = {n: line.frame for n, line in by_line.items() if line.frame}
    assert set(marked) == set(EXPECTED["error_statements"])
    innermost = [n for n, frame in marked.items() if frame.innermost]
    assert innermost == [17]
    assert {frame.total for frame in marked.values()} == {2}


def test_ranked_elements_highlight_their_lines_with_the_best_rank(
    analysis: Analysis, ranking: list[dict[str, Any]]
) -> None:
    by_line = lines(failure_view(analysis, "tplus", ranking))
    for item in ranking:
        assert [b.rank for b in by_line[item["start_line"]].badges] == [item["rank"]]
        for number in range(item["start_line"], item["end_line"] + 1):
            assert by_line[number].rank is not None and by_line[number].rank <= item["rank"]
    covered = {n for item in ranking for n in range(item["start_line"], item["end_line"] + 1)}
    assert {n for n, line in by_line.items() if line.rank} == covered
    overlapping = [{**ranking[0], "rank": 1}, {**ranking[0], "rank": 2, "id": "again"}]
    first = lines(failure_view(analysis, "tplus", overlapping))[ranking[0]["start_line"]]
    assert first.rank == 1 and [b.rank for b in first.badges] == [1, 2]
    other_file = [{**ranking[0], "path": "elsewhere.py"}]
    assert not any(line.rank for line in lines(failure_view(analysis, "tplus", other_file)).values())


def test_marks_and_variant_options(analysis: Analysis) -> None:
    view = failure_view(analysis, "tplus", [], [Loc(PATH, 3), Loc("other.py", 3)])
    assert [n for n, line in lines(view).items() if line.marked] == [3]
    assert [v.name for v in view.variants] == list(VARIANTS)
    sizes = {v.name: v.kept for v in view.variants}
    assert sizes["T0"] == len(EXPECTED["faithful"]["T0"])
    assert sizes["T2"] == len(EXPECTED["faithful"]["T2"])
    assert sizes["tplus"] == len(EXPECTED["enhanced"]["trace"]) == view.files[0].kept
    assert {v.alias for v in view.variants if v.alias} == {"t0", "tmin", "tmid", "tmax"}
    assert EXPECTED["error_message_contains"] in view.error_message
