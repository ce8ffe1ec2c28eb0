"""The heuristic ranker on the golden case and the real benchmark faults, through the real pipeline."""

from __future__ import annotations

from functools import lru_cache

import pytest

from app.analysis.model import Analysis, Loc, Script
from app.analysis.pipeline import analyze
from app.analysis.render import LEVELS, render
from app.localize.evidence import Channel
from app.localize.heuristic import bm25, code_tokens, query_tokens, rank_heuristic
from tests.conftest import BENCHMARK, load_case, running_example


@lru_cache(maxsize=1)
def golden() -> Analysis:
    scripts, log, expected = running_example()
    return analyze(scripts, log, log_functions=expected["log_function_patterns"])


@lru_cache(maxsize=16)
def real(name: str) -> tuple[Analysis, tuple[Loc, ...]]:
    scripts, log, case = load_case(BENCHMARK / f"{name}.json")
    faulty = tuple(Loc(f["path"], f["line"]) for f in case["faulty_lines"])
    return analyze(scripts, log, log_functions=case.get("log_functions", [])), faulty


def test_golden_block_ranking_starts_at_the_error_and_follows_values_back() -> None:
    ranked = rank_heuristic(golden(), render(golden(), "tplus", "block"), 3)
    ids = [s.element.id for s in ranked]
    assert ids[0] == "BLOCK 6"
    assert {"BLOCK 1", "BLOCK 4"} <= set(ids)
    assert ranked[0].reason.startswith("traceback frame (innermost)")
    reasons = {s.element.id: s.reason for s in ranked}
    assert "`values`" in reasons["BLOCK 4"]
    assert "returns the value of `values`" in reasons["BLOCK 1"]


@pytest.mark.parametrize("level", LEVELS)
def test_every_level_ranks_deterministically_with_decreasing_scores(level: str) -> None:
    rendered = render(golden(), "T0", level)
    first = rank_heuristic(golden(), rendered, 50)
    assert first == rank_heuristic(golden(), rendered, 50)
    assert len(first) == len(rendered.elements)
    scores = [s.score for s in first]
    assert scores == sorted(scores, reverse=True)
    assert all(s.reason for s in first)
    top = {"function": "execute_tests", "block": "BLOCK 6", "line": "17"}[level]
    assert first[0].element.id == top


def test_k_limits_the_answer_and_must_be_positive() -> None:
    rendered = render(golden(), "tplus", "line")
    assert len(rank_heuristic(golden(), rendered, 2)) == 2
    with pytest.raises(ValueError, match="k"):
        rank_heuristic(golden(), rendered, 0)


def test_a_later_traceback_outranks_an_earlier_one() -> None:
    analysis, _ = real("amt-pmem-dm-teardown-attr")
    ranked = rank_heuristic(analysis, render(analysis, "tplus", "line"), 10)
    ids = [s.element.id for s in ranked]
    assert "205" in ids[:2]  # tearDown's `if self.dm_disk:`, not the cancel at line 140
    assert ids.index("140") > ids.index("205")
    setup = next(s for s in ranked if s.element.id in ("74", "76"))
    assert "setUp never sets `dm_disk`" in setup.reason


def test_a_log_without_traceback_is_localized_by_the_literal_it_quotes() -> None:
    analysis, faulty = real("tpq-enospc-cleanup-ignore-status")
    assert not analysis.error_frames
    ranked = rank_heuristic(analysis, render(analysis, "T0", "line"), 3)
    assert ranked[0].element.lines[0] == faulty[0].line
    assert "'fuser -k' is in the error message" in ranked[0].reason


def test_unbound_local_points_at_the_conditional_assignment() -> None:
    analysis, _ = real("tpl-mtu-unbound-local")
    ranked = rank_heuristic(analysis, render(analysis, "tplus", "line"), 5)
    ids = [s.element.id for s in ranked]
    assert set(ids[:3]) >= {"176", "177"}  # the conditional assignment, not the use it failed to reach
    assert "179" in ids


def test_scripts_without_any_failure_evidence_still_rank() -> None:
    scripts = [Script("t.py", "def test_a():\n    x = 1\n    assert x == 2\n")]
    analysis = analyze(scripts, "nothing useful here\n")
    ranked = rank_heuristic(analysis, render(analysis, "T0", "block"), 3)
    assert [s.element.id for s in ranked] == ["BLOCK 1"]
    assert ranked[0].reason


def test_code_tokens_split_identifiers_and_drop_keywords() -> None:
    assert code_tokens("self.lvtest_device = getNextValue(x) if ok else None") == [
        "lvtest",
        "device",
        "get",
        "next",
        "value",
        "ok",
    ]
    assert query_tokens("AttributeError: 'module' object has no attribute 'NotFound'") == [
        "module",
        "attribute",
        "found",
    ]


def test_bm25_prefers_rare_matching_terms() -> None:
    docs = [["run", "fuser", "device"], ["run", "device"], ["sleep"]]
    scores = bm25(docs, ["fuser", "device"])
    assert scores[0] > scores[1] > scores[2] == 0.0
    assert bm25(docs, []) == [0.0, 0.0, 0.0]
    assert bm25([], ["x"]) == []


ANCHORED_SCRIPT = """import logging


def test_x(cfg):
    logging.info("starting the run")
    if cfg:
        cfg = cfg * 2
    logging.info("prepared everything")
    for i in range(3):
        poke(i)
    verify(cfg)
    logging.info("verified all")
"""
ANCHORED_LOG = """2024-01-01 10:00:00 INFO starting the run
2024-01-01 10:00:02 INFO prepared everything
2024-01-01 10:00:03 ERROR Test failed: device did not answer
"""


def test_without_traceback_the_code_after_the_last_logged_line_is_suspected() -> None:
    analysis = analyze([Script("t.py", ANCHORED_SCRIPT)], ANCHORED_LOG)
    assert not analysis.error_frames
    ranked = rank_heuristic(analysis, render(analysis, "T0", "line"), 4)
    assert [s.element.id for s in ranked] == ["9", "10", "11", "12"]
    assert all(Channel.PROXIMITY in {e.channel for e in s.evidence} for s in ranked[:3])
