"""Log-statement ablation (paper V-B4): how traces degrade as static log statements disappear.

A removed log statement no longer matches any message. Rather than re-parse edited code, we
re-apply Algorithm 1 to the recorded match table: a removed statement loses its state, and a
message that matched several statements may now match exactly one, which then becomes
executed. Error statements keep their traceback evidence. Removal is stratified over the
executed / not executed / unknown static log statements, seeded, five repetitions per rate
(one at 0 %). MPF1 is the F1 over the removed statements whose state was known (over all known
statements at 0 %), as in V-B1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import fmean

from app.analysis.model import Frame, Loc, LogStatement, MatchResult, Program, Trace
from tcfl_lab.eval.masking import Estimator, case_rng, known_truth, predicted_states, stratified_sample
from tcfl_lab.eval.metrics import preservation, state_f1

ABLATION_RATES: tuple[float, ...] = (0.0, 0.2, 0.5, 0.8, 1.0)


def static_sids(log_statements: Sequence[LogStatement]) -> frozenset[int]:
    return frozenset(ls.sid for ls in log_statements if ls.is_static and ls.sid is not None)


def remove_log_statements(match: MatchResult, removed: frozenset[int]) -> MatchResult:
    """Algorithm 1 again, as if the removed log statements were not in the code."""
    if not removed:
        return match
    promoted: set[int] = set()
    matches: list[tuple[int, tuple[int, ...]]] = []
    for message, sids in match.matches:
        left = tuple(s for s in sids if s not in removed)
        if left:
            matches.append((message, left))
        if len(left) == 1 and len(sids) > 1:
            promoted.add(left[0])
    exe = (match.exe - removed) | promoted | match.error_sids
    return replace(
        match,
        exe=exe,
        nexe=match.nexe - removed - exe,
        multi=match.multi - removed - exe,
        matches=tuple(matches),
    )


@dataclass(frozen=True)
class AblationPoint:
    """One variant at one removal rate, averaged over repetitions."""

    mpf1: float | None
    pruning_rate: float
    partial_preservation: float | None
    full_preservation: float | None


def ablate(
    case_id: str,
    program: Program,
    match: MatchResult,
    log_statements: Sequence[LogStatement],
    frames: Sequence[Frame],
    base: Mapping[str, Trace],
    estimate: Estimator,
    faulty: frozenset[Loc],
    *,
    rates: Sequence[float] = ABLATION_RATES,
    repetitions: int = 5,
    seed: int = 0,
) -> dict[str, dict[float, AblationPoint]]:
    """Variant -> removal rate -> averaged metrics for one case."""
    statics = static_sids(log_statements)
    truth = known_truth(match)
    strata = (
        sorted(statics & match.exe),
        sorted(statics & (match.nexe - match.exe)),
        sorted(statics - match.exe - match.nexe),
    )
    rng = case_rng(seed, case_id, "ablation")
    result: dict[str, dict[float, AblationPoint]] = {name: {} for name in base}
    for rate in rates:
        runs: dict[str, list[tuple[float | None, float, bool | None, bool | None]]] = {n: [] for n in base}
        for _ in range(1 if rate == 0.0 else repetitions):
            removed = stratified_sample(strata, rate, rng) if statics else frozenset()
            traces = estimate(remove_log_statements(match, removed), tuple(frames)) if removed else base
            scored = frozenset(truth) if rate == 0.0 else removed & frozenset(truth)
            for name in base:
                trace = traces[name]
                score = (
                    state_f1({s: truth[s] for s in scored}, predicted_states(program, trace, scored))
                    if scored
                    else None
                )
                kept = preservation(trace.kept, faulty) if faulty else None
                runs[name].append(
                    (score, trace.pruning_rate, kept.partial if kept else None, kept.full if kept else None)
                )
        for name, items in runs.items():
            scores = [s for s, _, _, _ in items if s is not None]
            result[name][rate] = AblationPoint(
                mpf1=fmean(scores) if scores else None,
                pruning_rate=fmean(p for _, p, _, _ in items),
                partial_preservation=fmean(float(x) for _, _, x, _ in items) if faulty else None,
                full_preservation=fmean(float(x) for _, _, _, x in items) if faulty else None,
            )
    return result
