"""Calibrated log-odds fusion: rank bins, Laplace-smoothed LRs, no-history equals static."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.history.fusion import (
    LONG_HISTORY,
    Calibration,
    Sample,
    bin_names,
    bucket,
    fit,
    fuse,
    pick_calibration,
    rank_bin,
    tied_ranks,
)


def test_bins_and_tied_ranks() -> None:
    assert bin_names() == ("1", "2-3", "4-5", "6-10", "11-20", "21+", "none")
    assert [rank_bin(r) for r in (1, 2, 3.5, 10, 20.5, 300, None)] == [
        "1",
        "2-3",
        "4-5",
        "6-10",
        "21+",
        "21+",
        "none",
    ]
    assert tied_ranks({"a": 1.0, "b": 0.5, "c": 0.5, "d": 0.1}) == {"a": 1, "b": 2.5, "c": 2.5, "d": 4}


def test_fit_gives_laplace_smoothed_likelihood_ratios() -> None:
    samples = [
        Sample({"static": "1"}, True),
        Sample({"static": "1"}, False),
        Sample({"static": "2-3"}, False),
        Sample({"static": "2-3"}, False),
        Sample({"static": "none"}, False),
    ]
    cal = fit(samples, ["static"])
    # faulty: 1 of 1 in bin "1" -> (1+1)/(1+7); others: 1 of 4 -> (1+1)/(4+7)
    assert cal.log_lr["static"]["1"] == pytest.approx(math.log((2 / 8) / (2 / 11)))
    assert cal.log_lr["static"]["2-3"] == pytest.approx(math.log((1 / 8) / (3 / 11)))
    assert cal.counts["static"]["2-3"] == (0, 2)
    # "4-5" saw nothing: LR 1/8 / (1/11) would exceed bin 2-3; kept non-increasing
    assert cal.log_lr["static"]["4-5"] == cal.log_lr["static"]["2-3"]
    assert Calibration.from_dict(cal.to_dict()).log_lr["static"]["1"] == pytest.approx(
        cal.log_lr["static"]["1"], abs=1e-6
    )


def test_a_strong_history_channel_overrides_a_weak_static_rank() -> None:
    samples = [Sample({"static": "1", "ochiai": "4-5"}, False)] * 5 + [
        Sample({"static": "2-3", "ochiai": "1"}, True)
    ] * 5
    cal = fit(samples, ["static", "ochiai"])
    fused = fuse({"static": {"a": 2, "b": 1}, "ochiai": {"a": 0.9, "b": 0.1}}, ["a", "b"], cal, ["a", "b"])
    assert [f.element for f in fused] == ["a", "b"]
    assert set(fused[0].terms) == {"static", "ochiai"}
    assert 0 < fused[0].posterior < 1


def test_absent_channel_adds_nothing() -> None:
    cal = fit(
        [Sample({"static": "1", "cp": "1"}, True), Sample({"static": "2-3", "cp": "none"}, False)],
        ["static", "cp"],
    )
    fused = fuse({"static": {"a": 1.0, "b": 0.5}}, ["a", "b"], cal)
    assert all(set(f.terms) == {"static"} for f in fused)


@given(
    st.lists(st.tuples(st.sampled_from(bin_names()), st.booleans()), min_size=1, max_size=40),
    st.permutations(list("abcdefghijklmnopqrstuvwxyz")),
)
def test_with_only_the_static_channel_the_fused_order_is_the_static_order(
    data: list[tuple[str, bool]], order: list[str]
) -> None:
    cal = fit([Sample({"static": b}, f) for b, f in data], ["static"])
    static_scores = {e: float(len(order) - i) for i, e in enumerate(order[:22])}  # the rest unranked
    fused = fuse({"static": static_scores}, sorted(order), cal, order)
    assert [f.element for f in fused] == order


def test_calibration_is_picked_by_level_and_history_length_bucket() -> None:
    a, b, c = (fit([Sample({"static": "1"}, True)] * n, ["static"]) for n in (1, 2, 3))
    shipped = {"line@short": a, "line@long": b, "block": c}
    assert bucket(LONG_HISTORY - 1) == "short" and bucket(LONG_HISTORY) == "long"
    assert pick_calibration(shipped, "line", 1) is a
    assert pick_calibration(shipped, "line", 30) is b
    assert pick_calibration(shipped, "block", 30) is c  # an older file: one calibration per level
    assert pick_calibration(shipped, "function", 0) is a  # no such level: line's
