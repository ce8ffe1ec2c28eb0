"""Run weights, FDC selection (002 Eq. 5-6) and similar runs (004), on hand-computed cases."""

from __future__ import annotations

import pytest

from app.history.selection import (
    RunFacts,
    ambiguity_groups,
    cover,
    input_similarity,
    path_similarity,
    run_weight,
    select_fdc,
    similar_runs,
    split,
)


def test_run_weight_halves_every_two_versions() -> None:
    assert run_weight(0) == 1.0
    assert run_weight(2) == pytest.approx(0.5)
    assert run_weight(4) == pytest.approx(0.25)
    assert run_weight(-3) == 1.0


def test_cover_is_jaccard_similarity() -> None:
    assert cover(frozenset({1, 2}), frozenset({1, 2, 3, 4})) == pytest.approx(0.5)
    assert cover(frozenset(), frozenset()) == 0.0


def test_split_rewards_even_splits_of_big_groups() -> None:
    failing = frozenset(range(1, 9))  # 8 lines in one group
    groups = ambiguity_groups(failing, [failing])
    assert groups == [failing]
    # half of the group: (8/8)·min(4,4) = 4; a quarter: min(2,6) = 2
    assert split(frozenset({1, 2, 3, 4}), groups, 8) == pytest.approx(4.0)
    assert split(frozenset({1, 2}), groups, 8) == pytest.approx(2.0)
    assert split(frozenset(range(1, 9)), groups, 8) == 0.0


def test_fdc_first_picks_by_cover_and_split_then_splits_what_is_left() -> None:
    failing = frozenset(range(1, 9))
    candidates = {
        "half": frozenset({1, 2, 3, 4}),
        "all": frozenset(range(1, 9)),
        "quarter": frozenset({5, 6}),
        "other": frozenset({1, 2, 5, 6, 99}),
    }
    # first: half = .5·1 + .5·.5 = .75; all = 0 + .5 = .5; quarter = .5·.5 + .5·.25 = .375;
    # other: split min(4,4)=4 -> 1, cover 4/9 -> .5 + .222 = .722
    picked = select_fdc(candidates, failing, k=2)
    assert picked[0] == "half"
    # groups after "half": {1-4}, {5-8}; other splits both evenly: split 2·(4/8·2)=4 -> .5 + .222
    assert picked[1] == "other"
    assert len(select_fdc(candidates, failing, k=10)) == 4


def test_similarity_of_decisions_and_inputs() -> None:
    f = RunFacts({"if@3": 4, "if@9": 10, "for@12": 13}, {"TZ": "UTC", "LANG": "C"})
    same_path = RunFacts({"if@3": 4, "if@9": 10}, {"TZ": "UTC", "LANG": "de_DE"})
    other = RunFacts({"if@3": 5, "if@9": 11, "for@12": 13}, {"TZ": "UTC", "LANG": "C"})
    assert path_similarity(f, same_path) == 100.0  # the unknown decision is skipped
    assert path_similarity(f, other) == pytest.approx(100 / 3)
    assert input_similarity(f, same_path) == 50.0
    assert similar_runs([f], {"a": other, "b": same_path}, k=1) == ["b"]
    assert similar_runs([], {"a": other}) == []
