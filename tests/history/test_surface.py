"""What users see of a test's history, from real scripts and logs through the real pipeline."""

from __future__ import annotations

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.history.rank import HistoryRun, line_states
from app.history.surface import BAR_STEPS, channel_bars, history_section, spectrum_view, timeline
from app.history.versions import version_id
from app.localize.result import history_terms
from app.options import TriageOptions
from app.triage import finish, triage
from tests.history.test_rank import FAIL_LOG, NEW, OLD, PASS_LOG, PATH


def run_of(script: str, log: str, verdict: str) -> HistoryRun:
    analysis = analyze([Script(PATH, script)], log)
    return HistoryRun(verdict, {PATH: script}, line_states(analysis))


def test_bars_scale_to_the_widest_and_empty_ones_are_left_out() -> None:
    bars = channel_bars({"diff": 4.0, "spectrum": 1.0, "cp": 0.0}, widest=4.0)
    assert [(b.channel, b.step) for b in bars] == [("diff", BAR_STEPS), ("spectrum", BAR_STEPS // 4)]
    assert channel_bars({"cp": 0.001}, widest=10.0)[0].step == 1  # a contribution stays visible
    assert channel_bars({}, widest=0.0) == []


def test_history_terms_read_the_stored_evidence() -> None:
    item = {
        "score": 0.0,
        "evidence": [
            {"channel": "diff", "weight": 2.5},
            {"channel": "spectrum", "weight": 1.25},
            {"channel": "traceback", "weight": 3.0},  # a single-log channel: not history
        ],
    }
    assert history_terms(item) == {"posterior": 0.5, "channels": {"diff": 2.5, "spectrum": 1.25}}
    assert history_terms({"score": 3.0, "evidence": []}) == {"posterior": None, "channels": {}}


def test_timeline_ticks_where_the_version_changes() -> None:
    newest_first = [{"version_id": "b"}, {"version_id": "b"}, {"version_id": None}, {"version_id": "a"}]
    assert [r["new_version"] for r in timeline(newest_first)] == [True, False, True, False]


def test_history_section_and_fused_triage_of_an_edit_that_broke_the_test() -> None:
    history = [run_of(OLD, PASS_LOG, "pass")] * 4 + [run_of(NEW, FAIL_LOG, "fail")]
    result = finish(
        lambda: triage(
            [Script(PATH, NEW)],
            FAIL_LOG,
            TriageOptions(level="line", k=3),
            client=None,
            test="t",
            history=history,
        )
    )
    section = result.history
    assert section is not None and section["test"] == "t"
    assert result.ranker == "history" and result.ranking[0].start_line == 7  # the edited line
    assert section["version"] == version_id({PATH: NEW}) and section["runs_used"] == 5
    first_bad = section["first_bad_version"]
    assert first_bad["last_good"] == version_id({PATH: OLD}) and first_bad["script_changed"]
    assert [h["new_lines"] for h in first_bad["hunks"]] == [["    b = make(5)"]]
    alone = history_section("t", history[:4], history[:4], {PATH: OLD}, "sig", window=30, k=0)
    assert alone["first_bad_version"]["note"].startswith("script unchanged since last pass")
    # the ranker reports the runs it fused: every failure stays; FDC picks two of the passes
    picked = finish(
        lambda: triage(
            [Script(PATH, NEW)],
            FAIL_LOG,
            TriageOptions(level="line", k=3, history_k=2),
            client=None,
            test="t",
            history=history,
        )
    ).history
    assert picked is not None and (picked["runs_read"], picked["runs_used"], picked["k"]) == (5, 3, 2)
    body = result.to_dict()
    assert body["history"]["runs_used"] == 5 and all("history" in item for item in body["ranking"])


def test_a_named_test_without_runs_says_so_and_ranks_as_without_history() -> None:
    options = TriageOptions(level="line", k=3, ranker="heuristic")
    plain = finish(lambda: triage([Script(PATH, NEW)], FAIL_LOG, options, client=None))
    named = finish(lambda: triage([Script(PATH, NEW)], FAIL_LOG, options, client=None, test="t"))
    assert plain.history is None and "history" not in plain.to_dict()
    assert named.history is not None and named.history["runs_used"] == 0
    assert named.history["note"] in named.warnings
    assert [i.id for i in named.ranking] == [i.id for i in plain.ranking]


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


def test_the_text_report_says_what_the_history_said() -> None:
    from app.emit.text import format_result

    history = [run_of(OLD, PASS_LOG, "pass")] * 4 + [run_of(NEW, FAIL_LOG, "fail")]
    options = TriageOptions(level="line", k=3)
    result = finish(
        lambda: triage([Script(PATH, NEW)], FAIL_LOG, options, client=None, test="t", history=history)
    )
    text = format_result(result)
    assert "History of t: new; fused 5 of 5 recorded runs" in text  # the failing version is new
    new, old = version_id({PATH: NEW}), version_id({PATH: OLD})
    # no commit or job was recorded with these runs: the script versions name them
    assert f"First bad version: script version {new} (last good: script version {old})" in text
    assert "    + " + "    b = make(5)" in text
    none = finish(lambda: triage([Script(PATH, NEW)], FAIL_LOG, options, client=None, test="t"))
    assert "History of t: no CI history with traces recorded" in format_result(none)
