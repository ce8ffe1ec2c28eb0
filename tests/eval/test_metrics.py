"""Metrics against values computed by hand (paper equations (1) and (2))."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcfl_lab.eval.metrics import (
    distinct_top_k,
    f1,
    mean_or_none,
    preservation,
    rank_scores,
    set_scores,
    state_f1,
    summarize_ranks,
)


def test_first_answer_faulty() -> None:
    s = rank_scores(["a", "b", "c"], {"a"}, 1)
    assert (s.precision, s.recall, s.hit, s.ap, s.rr) == (1.0, 1.0, 1.0, 1.0, 1.0)


def test_worked_example_at_k3() -> None:
    # ranking a b c d, faulty {b, d, x}: top 3 = a b c, one hit at position 2
    s = rank_scores(["a", "b", "c", "d"], {"b", "d", "x"}, 3)
    assert s.precision == pytest.approx(1 / 3)
    assert s.recall == pytest.approx(1 / 3)
    assert s.hit == 1.0
    assert s.ap == pytest.approx(0.5)  # P(2) * rel(2) / m = (1/2) / 1
    assert s.rr == pytest.approx(0.5)


def test_average_precision_two_hits() -> None:
    # faulty at positions 1 and 3 of 4: AP = (1/1 + 2/3) / 2
    s = rank_scores(["f1", "n1", "f2", "n2"], {"f1", "f2", "f3"}, 4)
    assert s.ap == pytest.approx((1 + 2 / 3) / 2)
    assert s.precision == pytest.approx(0.5)
    assert s.recall == pytest.approx(2 / 3)
    assert s.rr == 1.0


def test_no_faulty_element_found() -> None:
    s = rank_scores(["a", "b", "c"], {"z"}, 3)
    assert (s.precision, s.recall, s.hit, s.ap, s.rr) == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert s.found == 0


def test_fewer_than_k_answers() -> None:
    # two answers for k = 5: precision over the answers given, positions as given
    s = rank_scores(["n", "f"], {"f"}, 5)
    assert s.answers == 2
    assert s.precision == pytest.approx(0.5)
    assert s.recall == 1.0
    assert s.ap == pytest.approx(0.5)
    assert s.rr == pytest.approx(0.5)


def test_empty_ranking() -> None:
    s = rank_scores([], {"f"}, 3)
    assert (s.precision, s.recall, s.hit, s.ap, s.rr, s.answers) == (0.0, 0.0, 0.0, 0.0, 0.0, 0)


def test_duplicates_count_once_and_positions_close_up() -> None:
    # cut at k first (a a f -> a f), then deduplicate: the faulty element is at distinct rank 2
    s = rank_scores(["a", "a", "f", "g"], {"f", "g"}, 3)
    assert s.answers == 2
    assert s.precision == pytest.approx(0.5)
    assert s.recall == pytest.approx(0.5)
    assert s.rr == pytest.approx(0.5)
    # a duplicate of a faulty element is not a second true positive
    twice = rank_scores(["f", "f", "n"], {"f", "g"}, 3)
    assert (twice.found, twice.answers) == (1, 2)
    assert twice.recall == pytest.approx(0.5)
    assert twice.ap == 1.0


def test_duplicates_beyond_k_do_not_pull_answers_in() -> None:
    assert distinct_top_k(["a", "a", "b"], 2) == ["a"]


def test_case_without_faulty_elements_is_an_error() -> None:
    with pytest.raises(ValueError, match="without faulty"):
        rank_scores(["a"], set(), 1)
    with pytest.raises(ValueError, match="k must be"):
        rank_scores(["a"], {"a"}, 0)


def test_means_over_cases() -> None:
    cases = [rank_scores(["a"], {"a"}, 1), rank_scores(["b"], {"a"}, 1), rank_scores(["c", "a"], {"a"}, 2)]
    summary = summarize_ranks(cases)
    assert summary.cases == 3
    assert summary.hit == pytest.approx(2 / 3)
    assert summary.map == pytest.approx((1 + 0 + 0.5) / 3)
    assert summary.mrr == pytest.approx((1 + 0 + 0.5) / 3)
    assert summary.precision == pytest.approx((1 + 0 + 0.5) / 3)
    assert summarize_ranks([]).cases == 0


@given(
    st.lists(st.sampled_from("abcdefgh"), max_size=12),
    st.sets(st.sampled_from("abcdefgh"), min_size=1),
    st.integers(min_value=1, max_value=12),
)
def test_rank_scores_are_rates(ranking: list[str], faulty: set[str], k: int) -> None:
    s = rank_scores(ranking, faulty, k)
    for value in (s.precision, s.recall, s.hit, s.ap, s.rr):
        assert 0.0 <= value <= 1.0
    assert s.rr <= s.hit and s.ap <= s.hit
    assert s.found <= min(k, len(faulty))
    assert (s.hit == 1.0) == (s.found > 0)


def test_set_scores() -> None:
    s = set_scores({1, 2, 3, 4}, {2, 3, 5})
    assert s.precision == pytest.approx(0.5)
    assert s.recall == pytest.approx(2 / 3)
    assert s.f1 == pytest.approx(2 * 2 / (2 * 2 + 2 + 1))
    assert set_scores(set(), set()).f1 == 1.0
    assert set_scores(set(), {1}).f1 == 0.0


def test_state_f1_executed_is_positive() -> None:
    truth = {1: True, 2: True, 3: False, 4: False}
    assert state_f1(truth, {1: True, 2: True, 3: False, 4: False}) == 1.0
    # predicting everything executed: tp 2, fp 2 -> 2*2 / (4 + 2) = 2/3, the paper's T0 effect
    assert state_f1(truth, dict.fromkeys(truth, True)) == pytest.approx(2 / 3)
    assert state_f1({3: False}, {3: False}) == 1.0  # nothing to find, nothing claimed
    assert state_f1({3: False}, {3: True}) == 0.0
    assert f1(0, 0, 0) == 1.0


def test_preservation() -> None:
    assert preservation({1, 2, 3}, {2, 9}) == preservation({2}, {2, 9})
    p = preservation({1, 2, 3}, {2, 9})
    assert (p.partial, p.full) == (True, False)
    assert preservation({1, 2}, {1, 2}).full
    assert not preservation({1}, {5}).partial
    with pytest.raises(ValueError):
        preservation({1}, set())


def test_mean_or_none() -> None:
    assert mean_or_none([None, 1.0, 0.0]) == 0.5
    assert mean_or_none([None]) is None
