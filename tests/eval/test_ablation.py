"""Log-statement ablation: Algorithm 1 re-applied without the removed statements."""

from __future__ import annotations

import pytest

from app.analysis.estimate import estimate_all
from app.analysis.model import Frame, Loc, MatchResult, Trace
from app.analysis.pipeline import analyze
from tcfl_lab.eval.ablation import ablate, remove_log_statements, static_sids
from tests.conftest import running_example


def _match() -> MatchResult:
    # message 0 matched statements 1 and 2, message 1 only 3, message 2 both 2 and 4; 9 is an error line
    return MatchResult(
        exe=frozenset({3, 9}),
        nexe=frozenset({5}),
        multi=frozenset({1, 2, 4}),
        matches=((0, (1, 2)), (1, (3,)), (2, (2, 4))),
        error_sids=frozenset({9}),
    )


def test_removal_promotes_statements_left_alone_on_a_message() -> None:
    after = remove_log_statements(_match(), frozenset({2}))
    assert after.exe == {1, 3, 4, 9}
    assert after.multi == frozenset()
    assert after.nexe == {5}
    assert after.matches == ((0, (1,)), (1, (3,)), (2, (4,)))


def test_removed_statements_become_unknown_and_errors_stay() -> None:
    after = remove_log_statements(_match(), frozenset({3, 5, 9}))
    assert after.exe == {9}  # the traceback still says line 9 ran
    assert 3 not in after.nexe and 5 not in after.nexe
    assert remove_log_statements(_match(), frozenset()) == _match()


def test_golden_ablation_end_points() -> None:
    scripts, log, expected = running_example()
    analysis = analyze(scripts, log, log_functions=expected["log_function_patterns"])
    assert len(static_sids(analysis.log_statements)) == len(expected["static_log_statements"])

    def estimate(match: MatchResult, frames: tuple[Frame, ...]) -> dict[str, Trace]:
        return estimate_all(analysis.program, match, analysis.blocks, frames)

    faulty = frozenset({Loc("test_example.py", 3)})
    a = analysis
    result = ablate(
        "golden",
        a.program,
        a.match,
        a.log_statements,
        a.error_frames,
        a.traces,
        estimate,
        faulty,
        rates=(0.0, 1.0),
        seed=1,
    )
    # 0 %: F1 over all 9 known statements, as MPF1 at 0 %
    assert result["T0"][0.0].mpf1 == pytest.approx(14 / 16)
    assert result["T1_dbt_exe"][0.0].mpf1 == 1.0
    assert result["T1_dbt_nexe"][0.0].partial_preservation == 0.0  # the paper's known Tmax weakness
    # 100 %: the 7 static log statements (5 executed, 2 not) are gone; T0 calls all of them executed
    assert result["T0"][1.0].mpf1 == pytest.approx(2 * 5 / (2 * 5 + 2))
    assert result["T0"][1.0].pruning_rate == 0.0
    # without log evidence, Algorithm 2 keeps every function that has no known statement whole
    assert result["T1_dbt_exe"][1.0].partial_preservation == 1.0
    for per_rate in result.values():
        for point in per_rate.values():
            assert 0.0 <= point.pruning_rate <= 1.0
