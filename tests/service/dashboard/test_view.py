"""The failure view's content, from the snapshot of the paper's running example (real pipeline)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from app.analysis import snapshot
from app.analysis.model import Loc, Script
from app.localize.result import TriageOptions
from app.service.dashboard.view import (
    MAX_WINDOW_LINES,
    FailureView,
    LogGap,
    LogRow,
    failure_view,
    log_rows,
    log_windows,
    scale_scores,
    with_gaps,
)
from app.store.snapshots import LogLine
from app.triage import finish, prepare, rank
from tests.service.helpers import EXAMPLE

EXPECTED = json.loads((EXAMPLE / "expected.json").read_text())
PATH = "test_example.py"
SCRIPTS = (Script(PATH, (EXAMPLE / "test_example.py").read_text()),)
LOG = (EXAMPLE / "failure.log").read_text()


@pytest.fixture(scope="module")
def stored() -> tuple[dict[str, Any], list[dict[str, Any]], list[LogLine]]:
    options = TriageOptions(level="block", k=3, ranker="heuristic", log_functions=("Log.log",))
    request = prepare(SCRIPTS, LOG, options, explain=True)  # each line's reason, as the service keeps it
    result = finish(lambda: rank(request, client=None))
    snap = snapshot.build(request.analysis, request.rendered, LOG)
    lines = [
        LogLine(chunk.first_line + i, text, chunk.marks.get(chunk.first_line + i, ()))
        for chunk in snap.chunks
        for i, text in enumerate(chunk.lines)
    ]
    return snap.summary, result.to_dict()["ranking"], lines


def view_of(stored: tuple[dict[str, Any], list[dict[str, Any]], list[LogLine]], **kw: Any) -> FailureView:
    summary, ranking, lines = stored
    return failure_view(summary, kw.get("ranking", ranking), lines, kw.get("marked", ()))


def lines(view: FailureView) -> dict[int, Any]:
    return {line.number: line for seg in view.files[0].segments for line in seg.lines}


def code_lines() -> set[int]:
    return {n for n, text in enumerate(SCRIPTS[0].content.splitlines(), 1) if text.strip()}


def test_pruned_runs_are_the_lines_the_ranked_variant_drops(stored: Any) -> None:
    view = view_of(stored)
    pruned = {
        line.number for seg in view.files[0].segments if seg.pruned for line in seg.lines if not line.blank
    }
    assert view.variant == "tplus"
    assert pruned == code_lines() - set(EXPECTED["enhanced"]["trace"])
    numbers = [line.number for seg in view.files[0].segments for line in seg.lines]
    assert numbers == list(range(1, len(SCRIPTS[0].content.splitlines()) + 1))
    for before, after in zip(view.files[0].segments, view.files[0].segments[1:], strict=False):
        assert before.pruned != after.pruned and not after.lines[0].blank
    states = view.files[0].states
    assert sum(states.values()) == len(code_lines()) and set(states) <= {
        "executed",
        "not_executed",
        "doubtful",
    }


def test_log_statements_carry_algorithm_1_state_and_their_log_lines(stored: Any) -> None:
    by_line = lines(view_of(stored))
    for number in EXPECTED["static_log_statements"]:
        log = by_line[number].log
        assert log is not None and log.static
        expected = "executed" if number in EXPECTED["L_exe"] else "not_executed"
        assert log.state == expected, number
        assert bool(log.matches) == (expected == "executed") == (log.match_count > 0)
    for number in EXPECTED["non_static_log_statements"]:
        log = by_line[number].log
        assert log is not None and not log.static and log.state == "doubtful" and not log.matches
    (match,) = by_line[2].log.matches
    assert (match.log_line, match.unique) == (4, True)
    assert by_line[1].log is None


def test_log_rows_link_back_to_their_statements_and_mark_the_error(stored: Any) -> None:
    view = view_of(stored)
    rows = {item.number: item for item in view.log if isinstance(item, LogRow)}
    assert rows[4].text == "[INFO] Test 1 executed!" and rows[4].targets == ((0, PATH, 2),) and rows[4].unique
    error = [n for n, row in rows.items() if row.error]
    assert "ZeroDivisionError" in rows[max(error)].text
    assert view.error_lines is not None and view.error_lines[0] == max(error)
    frames = {row.frame for row in rows.values() if row.frame}
    assert {line for _, line in frames} == set(EXPECTED["error_statements"])
    assert not any(isinstance(item, LogGap) for item in view.log)  # a short log is shown whole


def test_traceback_frames_are_marked_outermost_first(stored: Any) -> None:
    view = view_of(stored)
    marked = {n: line.frame for n, line in lines(view).items() if line.frame}
    assert set(marked) == set(EXPECTED["error_statements"])
    assert [n for n, frame in marked.items() if frame.innermost] == [17]
    assert [f.line for f in view.frames] == sorted(EXPECTED["error_statements"], reverse=True)
    assert all(f.file == 0 and f.log_line > 0 for f in view.frames)


def test_ranked_elements_have_full_code_scaled_scores_and_highlight_lines(stored: Any) -> None:
    summary, ranking, _ = stored
    view = view_of(stored)
    by_line = lines(view)
    source = SCRIPTS[0].content.splitlines()
    for item, shown in zip(ranking, view.ranking, strict=True):
        assert shown.code == tuple(
            (n, source[n - 1]) for n in range(item["start_line"], item["end_line"] + 1)
        )
        assert [b.rank for b in by_line[item["start_line"]].badges] == [item["rank"]]
        for number in range(item["start_line"], item["end_line"] + 1):
            assert by_line[number].rank is not None and by_line[number].rank <= item["rank"]
    assert view.ranking[0].scaled == 100
    assert all(r.scaled is not None and 0 <= r.scaled <= 100 for r in view.ranking)
    other_file = [{**ranking[0], "path": "elsewhere.py"}]
    moved = failure_view(summary, other_file)
    assert not any(line.rank for line in lines(moved).values()) and moved.ranking[0].file is None


def test_evidence_and_rationale_are_shown_per_element(stored: Any) -> None:
    summary, ranking, _ = stored
    evidence = [
        {
            "channel": "traceback",
            "weight": 3.0,
            "path": PATH,
            "line": 17,
            "detail": "innermost frame",
            "source": "ZeroDivisionError: division by zero",
            "source_line": 14,
        },
        {"channel": "lexical", "weight": 1.0, "path": PATH, "line": 16, "detail": "shares words"},
    ]
    item = {**ranking[0], "evidence": evidence, "rationale": "divides by an empty collection's length"}
    (shown,) = failure_view(summary, [item]).ranking
    assert shown.rationale == "divides by an empty collection's length"
    assert [(e.channel, e.share, e.source_line, e.file) for e in shown.evidence] == [
        ("traceback", 75, 14, 0),
        ("lexical", 25, None, 0),
    ]
    bare = {k: v for k, v in ranking[0].items() if k != "evidence"}
    assert failure_view(summary, [bare]).ranking[0].evidence == ()
    # the heuristic's own records: the traceback frame first, pointing at its log line
    real = failure_view(summary, [ranking[0]]).ranking[0].evidence
    assert real[0].channel == "traceback" and real[0].file == 0 and real[0].source_line == 11
    assert 98 <= sum(e.share for e in real) <= 102


def test_marks_are_per_path(stored: Any) -> None:
    view = view_of(stored, marked=[Loc(PATH, 3), Loc("other.py", 3)])
    assert [n for n, line in lines(view).items() if line.marked] == [3]


def test_scores_scale_to_the_top_one() -> None:
    assert scale_scores([4.0, 2.0, 1.0]) == [100, 50, 25]
    assert scale_scores([None, None]) == [None, None]
    assert scale_scores([0.0, 0.0]) == [100, 100]
    assert scale_scores([None, 3.0, 0.3]) == [None, 100, 10]


def big_summary(total: int, matched: list[int], error: tuple[int, int] | None) -> dict[str, Any]:
    return {
        "version": snapshot.SNAPSHOT_VERSION,
        "variant": "tplus",
        "files": [{"path": "t.py", "lines": ["x = 1"], "states": "E", "kept": [[1, 1]], "reasons": []}],
        "rules": [],
        "statements": [
            {
                "path": "t.py",
                "line": 1,
                "end_line": 1,
                "callee": "print",
                "static": True,
                "state": "executed",
                "matches": [[n, True]],
                "match_count": 1,
            }
            for n in matched
        ],
        "elements": [],
        "error": {
            "message": "E",
            "log_lines": list(error) if error else None,
            "frames": [],
            "log_frame_lines": [],
        },
        "log": {"lines": total, "format": "plain", "messages": total, "matched_lines": len(matched)},
    }


def test_log_windows_cover_the_failure_matches_and_focus_within_a_budget() -> None:
    summary = big_summary(200_000, [10, 5_000, 150_000], (199_990, 199_992))
    windows = log_windows(summary)
    covered = {n for first, last in windows for n in range(first, last + 1)}
    assert {1, 10, 5_000, 150_000, 199_990, 199_992} <= covered
    assert sum(last - first + 1 for first, last in windows) <= MAX_WINDOW_LINES
    assert all(a[1] + 1 < b[0] for a, b in itertools.pairwise(windows))  # merged, ordered
    assert 77_777 in {n for first, last in log_windows(summary, 77_777) for n in range(first, last + 1)}
    many = big_summary(200_000, list(range(100, 190_000, 97)), None)
    assert sum(last - first + 1 for first, last in log_windows(many)) <= MAX_WINDOW_LINES
    assert log_windows(big_summary(0, [], None)) == []


def test_gaps_fill_everything_not_shown() -> None:
    summary = big_summary(20, [5], None)
    rows = log_rows(summary, [LogLine(5, "hello", (0,)), LogLine(6, "next", ())])
    items = with_gaps(rows, 20)
    assert [(i.first, i.last) if isinstance(i, LogGap) else i.number for i in items] == [
        (1, 4),
        5,
        6,
        (7, 20),
    ]
    assert rows[0].targets == ((0, "t.py", 1),) and rows[1].targets == ()


def test_a_model_evidence_record_gives_the_rationale_when_the_item_has_none(stored: Any) -> None:
    summary, ranking, _ = stored
    said = {"channel": "model", "weight": 1.0, "path": PATH, "line": 17, "detail": "len(values) can be 0"}
    (shown,) = failure_view(summary, [{**ranking[0], "evidence": [said]}]).ranking
    assert shown.rationale == "len(values) can be 0"
    assert failure_view(summary, [ranking[0]]).ranking[0].rationale is None
