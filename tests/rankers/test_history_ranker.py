"""The history ranker behind the ranker interface, with the shipped calibration."""

from __future__ import annotations

import asyncio

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.history.rank import HistoryRun, line_states
from app.localize.evidence import Channel
from app.options import TriageOptions
from app.rankers import make_ranker, ranker_names
from app.rankers.base import Prompt, RankRequest
from app.rankers.history import shipped_calibration
from tests.history.test_rank import FAIL_LOG, NEW, OLD, PASS_LOG, PATH


def request(history: tuple[HistoryRun, ...]) -> RankRequest:
    analysis = analyze([Script(PATH, NEW)], FAIL_LOG)
    rendered = render(analysis, "tplus", "line")
    return RankRequest(analysis, rendered, Prompt(rendered, ()), TriageOptions(level="line"), history=history)


def test_registered_and_calibrated() -> None:
    assert "history" in ranker_names()
    calibrations = shipped_calibration()
    assert {"line@short", "line@long", "block@short", "block@long"} <= set(calibrations)
    assert {"static", "ochiai", "cp", "diff", "values"} <= set(calibrations["line@long"].log_lr)


def test_without_runs_it_says_the_heuristic_answered() -> None:
    answer = asyncio.run(make_ranker("history").rank(request(()), 3))
    assert answer.name == "heuristic" and answer.fallback and len(answer.picks) == 3


def test_with_passes_of_the_old_version_the_edit_ranks_first() -> None:
    old = line_states(analyze([Script(PATH, OLD)], PASS_LOG))
    runs = tuple(HistoryRun("pass", {PATH: OLD}, old, env="e", versions_apart=1) for _ in range(5))
    answer = asyncio.run(make_ranker("history").rank(request(runs), 3))
    assert answer.name == "history"
    top = answer.picks[0]
    assert 7 in top.element.lines and "posterior" in top.reason
    assert Channel.SPECTRUM in {e.channel for e in top.evidence}
