"""CP on small block graphs whose equation systems are solved by hand."""

from __future__ import annotations

import pytest

from app.analysis.model import State
from app.history.cp import CPRun, block_states, cp_scores, edge_state

E, N, D = State.EXE, State.NEXE, State.DBT
DIAMOND = [(1, 2), (1, 3), (2, 4), (3, 4)]


def run(verdict: str, ran: set[int], exits: frozenset[int] = frozenset()) -> CPRun:
    return CPRun(verdict, {b: (E if b in ran else N) for b in (1, 2, 3, 4)}, exits=exits)


def test_diamond_points_at_the_branch_failures_take() -> None:
    # failures take 1-2-4 twice; passes take 1-3-4 and 1-2-4:
    # Δ(1,2)=Δ(2,4)=(1-0.5)/(1+0.5)=1/3, Δ(1,3)=Δ(3,4)=-1; BR(4)=Σin=-2/3,
    # W(2,4)=(1/3)/(-2/3)=-1/2 -> BR(2)=1/3; W(1,2)=W(1,3)=1 -> BR(1)=BR(2)+BR(3)=1/3-1
    result = cp_scores(
        [1, 2, 3, 4],
        DIAMOND,
        [run("fail", {1, 2, 4}), run("fail", {1, 2, 4}), run("pass", {1, 3, 4}), run("pass", {1, 2, 4})],
    )
    assert result.edge_delta[(1, 2)] == pytest.approx(1 / 3)
    assert result.edge_delta[(1, 3)] == pytest.approx(-1.0)
    assert result.scores[4] == pytest.approx(-2 / 3)
    assert result.scores[2] == pytest.approx(1 / 3)
    assert result.scores[1] == pytest.approx(-2 / 3)
    assert 3 not in result.scores  # no failure reached block 3: it ranks last
    assert max(result.scores, key=result.scores.__getitem__) == 2


def test_without_passes_the_crash_block_collects_and_splits_backwards() -> None:
    result = cp_scores([1, 2, 3, 4], DIAMOND, [run("fail", {1, 2}, exits=frozenset({2}))])
    # only (1,2) was traversed: Δ=1; block 2 is the crash (exit): BR(2)=1, BR(1)=W(1,2)·BR(2)=1
    assert result.scores == {1: pytest.approx(1.0), 2: pytest.approx(1.0)}


def test_no_failing_run_says_so() -> None:
    result = cp_scores([1, 2], [(1, 2)], [run("pass", {1, 2})])
    assert result.scores == {} and result.warnings


def test_a_cycle_is_kept_and_still_solved() -> None:
    loop = [(1, 2), (2, 1), (2, 3)]
    runs = [
        CPRun("fail", {1: E, 2: E, 3: E}, exits=frozenset({3})),
        CPRun("pass", {1: E, 2: E, 3: N}),
    ]
    result = cp_scores([1, 2, 3], loop, runs)
    assert set(result.scores) == {1, 2, 3}
    assert all(abs(v) < 1e12 for v in result.scores.values())


def test_block_and_edge_states_from_line_states() -> None:
    states = block_states(
        {"a": E, "b": N, "c": N, "d": D, "e": N}, {1: ["a", "b"], 2: ["c"], 3: ["d", "e"], 4: ["z"]}
    )
    assert states == {1: E, 2: N, 3: D}
    assert edge_state(E, E) == E and edge_state(E, N) == N and edge_state(D, E) == D
    assert edge_state(None, E) is None
