"""Channel values, feature columns and the model-weighted ranking, on real scripts and logs."""

from __future__ import annotations

import math
from functools import lru_cache

import pytest

from app.analysis.model import Analysis, Script
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.evidence import Channel
from app.localize.features import CONTEXTS, FEATURES, channel_table, features
from app.localize.heuristic import SAFETY_RANK, WEIGHTS, rank_heuristic, rank_stacktrace, rank_table
from app.localize.model_file import LevelModel, handset_model
from tests.conftest import BENCHMARK, benchmark_cases, load_case


@lru_cache(maxsize=32)
def _real(name: str) -> Analysis:
    scripts, log, case = load_case(BENCHMARK / f"{name}.json")
    return analyze(scripts, log, log_functions=case.get("log_functions", []))


def test_features_are_the_channel_values_the_hand_set_ranker_weighs() -> None:
    analysis = _real("tpl-mtu-unbound-local")
    rendered = render(analysis, "tplus", "block")
    table = channel_table(analysis, rendered)
    messages = len(analysis.log.messages)
    assert table.context["frame"] == 1.0
    assert table.context["long_log"] == min(1.0, math.log10(1 + messages) / 4)
    by_id = {s.element.id: s for s in rank_heuristic(analysis, rendered, len(rendered.elements))}
    for row in table.elements:
        columns = features(row, table.context)
        assert set(columns) <= set(FEATURES)
        for channel, hit in row.hits:
            assert columns[str(channel)] == hit.value
            for x in CONTEXTS:
                assert columns.get(f"{channel}*{x}", 0.0) == hit.value * table.context[x]
        scored = by_id[row.element.id]
        expected = sum(WEIGHTS.get(c, 0.0) * h.value for c, h in row.hits)  # learned-only channels: 0
        assert scored.score == round(expected, 4)
        for evidence in scored.evidence:
            hit = dict(row.hits)[evidence.channel]
            assert evidence.weight == WEIGHTS[evidence.channel] * hit.value


@pytest.mark.slow
@pytest.mark.parametrize("level", ["function", "block", "line"])
def test_a_model_of_the_hand_set_weights_reproduces_the_hand_set_ranking_on_the_real_cases(
    level: str,
) -> None:
    model = handset_model().levels[level]
    for path in benchmark_cases():
        analysis = _real(path.stem)
        rendered = render(analysis, "tplus", level)
        if not rendered.elements:
            continue
        every = len(rendered.elements)
        expected = [
            (s.element.id, s.score, s.reason, s.evidence) for s in rank_heuristic(analysis, rendered, every)
        ]
        top = rank_stacktrace(analysis, rendered, 1)[0]
        at = [e[0] for e in expected].index(top.element.id)
        if top.evidence and at >= SAFETY_RANK:  # the safety rule, the model path's only difference
            moved = expected.pop(at)
            reason = f"the stack trace's first element, held in the top {SAFETY_RANK}; {moved[2]}"
            expected.insert(SAFETY_RANK - 1, (moved[0], moved[1], reason, moved[3]))
        new = rank_heuristic(analysis, rendered, every, model=model)
        assert [(s.element.id, s.score, s.reason, s.evidence) for s in new] == expected, path.stem


SCRIPT = """\
def helper_alpha(value):
    if value:
        print("alpha widget size mismatch")
    return value


def helper_beta(value):
    if value:
        print("beta widget size mismatch")
    return value


def helper_gamma(value):
    if value:
        print("gamma widget size mismatch")
    return value


def test_widget():
    size = 3
    assert size == 4
"""
LOG = """\
Traceback (most recent call last):
  File "test_widget.py", line 21, in test_widget
    assert size == 4
AssertionError: widget size mismatch
"""


def test_the_stack_traces_first_element_is_held_in_the_model_rankings_top_three() -> None:
    analysis = analyze([Script("test_widget.py", SCRIPT)], LOG)
    rendered = render(analysis, "tplus", "block")
    first = rank_stacktrace(analysis, rendered, 1)[0].element.id
    # a model that weighs the frame against the element and the shared words for the others
    against = LevelModel({"traceback": -10.0, "lexical": 1.0, "message": 1.0})
    every = len(rendered.elements)
    table = channel_table(analysis, rendered)
    unsafe = [s.element.id for s in rank_table(table, against.channel_weights(table.context), safety=False)]
    ranked = rank_heuristic(analysis, rendered, every, model=against)
    assert unsafe.index(first) >= SAFETY_RANK  # without the rule it would rank lower
    assert [s.element.id for s in ranked].index(first) == SAFETY_RANK - 1
    held = ranked[SAFETY_RANK - 1]
    assert held.reason.startswith("the stack trace's first element")
    assert all(e.channel is not Channel.TRACEBACK for e in held.evidence)  # a negative weight is no evidence
    assert [s.element.id for s in rank_heuristic(analysis, rendered, 2, model=against)] == [
        s.element.id for s in ranked[:2]
    ]
    # the hand-set ranking has no such rule and is unchanged by it
    assert rank_heuristic(analysis, rendered, every)[0].element.id == first
