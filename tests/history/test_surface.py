"""What users see of a test's history, from real scripts and logs through the real pipeline."""

from __future__ import annotations

import pytest

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.history.rank import HistoryRun, line_states
from app.history.surface import (
    BAR_STEPS,
    HistoryChoice,
    channel_bars,
    element_channels,
    history_section,
    parse_history,
    select_runs,
    spectrum_view,
    timeline,
    triage_with_history,
)
from app.history.versions import version_id
from app.options import TriageOptions
from tests.history.test_rank import FAIL_LOG, NEW, OLD, PASS_LOG, PATH


def run_of(script: str, log: str, verdict: str) -> HistoryRun:
    analysis = analyze([Script(PATH, script)], log)
    return HistoryRun(verdict, {PATH: script}, line_states(analysis))


def test_parse_history_takes_auto_off_and_a_window() -> None:
    assert parse_history(None, window=30, k=0) == HistoryChoice("auto", 30, 0)
    assert parse_history("off", window=30, k=0).mode == "off"
    assert parse_history({"window": 5}, window=30, k=2) == HistoryChoice("auto", 5, 2)
    for bad in ({"window": 0}, {"k": 501}, {"size": 3}, "sometimes", 7):
        with pytest.raises(ValueError):
            parse_history(bad, window=30, k=0)


def test_bars_scale_to_the_widest_and_empty_ones_are_left_out() -> None:
    bars = channel_bars({"diff": 4.0, "spectrum": 1.0, "cp": 0.0}, widest=4.0)
    assert [(b.channel, b.step) for b in bars] == [("diff", BAR_STEPS), ("spectrum", BAR_STEPS // 4)]
    assert channel_bars({"cp": 0.001}, widest=10.0)[0].step == 1  # a contribution stays visible
    assert channel_bars({}, widest=0.0) == []


def test_element_channels_read_the_stored_evidence() -> None:
    item = {
        "score": 0.0,
        "evidence": [
            {"channel": "diff", "weight": 2.5},
            {"channel": "spectrum", "weight": 1.25},
            {"channel": "traceback", "weight": 3.0},  # a single-log channel: not history
        ],
    }
    assert element_channels(item) == {"posterior": 0.5, "channels": {"diff": 2.5, "spectrum": 1.25}}
    assert element_channels({"score": 3.0, "evidence": []}) == {"posterior": None, "channels": {}}


def test_timeline_ticks_where_the_version_changes() -> None:
    newest_first = [{"version_id": "b"}, {"version_id": "b"}, {"version_id": None}, {"version_id": "a"}]
    assert [r["new_version"] for r in timeline(newest_first)] == [True, False, True, False]


def test_history_section_and_fused_triage_of_an_edit_that_broke_the_test() -> None:
    history = [run_of(OLD, PASS_LOG, "pass")] * 4 + [run_of(NEW, FAIL_LOG, "fail")]
    choice = HistoryChoice("auto", 30, 0)
    result, request, section = triage_with_history(
        [Script(PATH, NEW)], FAIL_LOG, TriageOptions(level="line", k=3), history, choice
    )
    assert result.ranker == "history" and result.ranking[0].start_line == 7  # the edited line
    assert section["version"] == version_id({PATH: NEW}) and section["runs_used"] == 5
    first_bad = section["first_bad_version"]
    assert first_bad["last_good"] == version_id({PATH: OLD}) and first_bad["script_changed"]
    assert [h["new_lines"] for h in first_bad["hunks"]] == [["    b = make(5)"]]
    assert history_section(history[:4], history[:4], {PATH: OLD}, "sig", choice)["first_bad_version"][
        "note"
    ].startswith("script unchanged since last pass")
    picked = select_runs(history, request.analysis, 2)
    # every failure stays; FDC picks two of the passes, as the ranker and the evaluation pick them
    assert [p.verdict for p in picked] == ["pass", "pass", "fail"]
    assert all(any(p is h for h in history) for p in picked)


def test_spectrum_view_counts_per_line_and_block() -> None:
    history = [run_of(OLD, PASS_LOG, "pass")] * 3 + [run_of(NEW, FAIL_LOG, "fail")] * 2
    lines = spectrum_view(history, None, "line")
    assert lines is not None and (lines["runs"], lines["failing_runs"], lines["passing_runs"]) == (5, 2, 3)
    edited = next(r for r in lines["elements"] if r["line"] == 7)
    assert (edited["ef"], edited["ep"]) == (2.0, 0.0) and edited["scores"]["ochiai"] == 1.0
    blocks = spectrum_view(history, None, "block")
    assert blocks is not None and all("block" in r for r in blocks["elements"])
    assert spectrum_view(history, "0" * 16, "line") is None
    assert spectrum_view([], None, "line") is None
