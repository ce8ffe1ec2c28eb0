"""MPF1 masking on the golden running example, with the real estimators."""

from __future__ import annotations

import random

import pytest

from app.analysis.estimate import estimate_all
from app.analysis.model import Analysis, Frame, MatchResult, Trace
from app.analysis.pipeline import analyze
from tcfl_lab.eval.masking import MaskingPlan, mask_frames, mask_match, mpf1, stratified_sample
from tests.conftest import running_example


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    scripts, log, expected = running_example()
    return analyze(scripts, log, log_functions=expected["log_function_patterns"])


def _estimator(analysis: Analysis):
    def estimate(match: MatchResult, frames: tuple[Frame, ...]) -> dict[str, Trace]:
        return estimate_all(analysis.program, match, analysis.blocks, frames)

    return estimate


def _sid(analysis: Analysis, line: int) -> int:
    return next(s.sid for s in analysis.program.statements if s.start_line == line)


def test_known_statements_are_the_golden_sets(analysis: Analysis) -> None:
    _, _, expected = running_example()
    lines = {s.sid: s.start_line for s in analysis.program.statements}
    assert sorted(lines[s] for s in analysis.match.exe) == expected["L_exe"]
    assert sorted(lines[s] for s in analysis.match.nexe) == expected["L_nexe"]


def test_zero_rate_scores_all_known_statements(analysis: Analysis) -> None:
    result = mpf1(
        "golden",
        analysis.program,
        analysis.match,
        analysis.error_frames,
        analysis.traces,
        _estimator(analysis),
        MaskingPlan(rates=(0.0,)),
    )
    # 7 executed and 2 not executed known statements (lines 18 and 24)
    assert result["T0"][0.0] == pytest.approx(2 * 7 / (2 * 7 + 2))  # keeps 18 and 24: 2 false positives
    assert result["T2"][0.0] == pytest.approx(14 / 16)  # node granularity keeps 18 and 24 too
    assert result["T1_dbt_exe"][0.0] == 1.0
    assert result["CSR(T1_dbt_nexe&T2)"][0.0] == 1.0
    assert result["tplus"][0.0] == 1.0


def test_masking_is_seeded_and_in_range(analysis: Analysis) -> None:
    args = (analysis.program, analysis.match, analysis.error_frames, analysis.traces, _estimator(analysis))
    first = mpf1("golden", *args, MaskingPlan(seed=3))
    again = mpf1("golden", *args, MaskingPlan(seed=3))
    assert first == again
    for per_rate in first.values():
        assert set(per_rate) == {0.0, 0.2, 0.5, 0.8}
        assert all(v is not None and 0.0 <= v <= 1.0 for v in per_rate.values())
    assert mpf1("golden", *args, MaskingPlan(seed=4)) != first  # another seed hides other statements


def test_stratified_quotas_keep_the_mix() -> None:
    rng = random.Random(0)
    exe, nexe = list(range(7)), [100, 101]
    # quotas: round(rate * 9) split 7:2 by largest remainder (0.8: 5.44 + 1.56 -> 5 + 2)
    for rate, want in ((0.2, (2, 0)), (0.5, (4, 1)), (0.8, (5, 2)), (1.0, (7, 2))):
        chosen = stratified_sample((exe, nexe), rate, rng)
        assert (len(chosen & set(exe)), len(chosen & set(nexe))) == want
    assert stratified_sample((exe, nexe), 0.0, rng) == frozenset()
    assert len(stratified_sample(([1], []), 0.2, rng)) == 1  # a positive rate hides at least one
    assert stratified_sample(([], []), 0.5, rng) == frozenset()
    with pytest.raises(ValueError):
        stratified_sample((exe,), 1.5, rng)


def test_masked_statements_lose_their_state_and_frames(analysis: Analysis) -> None:
    error_line = _sid(analysis, 17)
    log_line = _sid(analysis, 18)
    masked = frozenset({error_line, log_line})
    match = mask_match(analysis.match, masked)
    assert error_line not in match.exe and error_line not in match.error_sids
    assert log_line not in match.nexe
    frames = mask_frames(analysis.error_frames, analysis.program, masked)
    assert [f.line for f in frames] == [23]
    assert mask_frames(analysis.error_frames, analysis.program, frozenset()) == analysis.error_frames
