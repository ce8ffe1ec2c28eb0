"""Masked prediction F1 (MPF1, paper V-B1): how well each estimator recovers hidden known states.

Our reading of V-B1, made exact:

- The known statements are ``L_exe`` (uniquely matched log statements and error statements)
  and ``L_nexe``. Each rate in 20/50/80 % hides ``round(rate * |known|)`` of them (at least
  one), split between the executed and not-executed strata in proportion to their sizes
  (largest remainder), drawn with a seeded RNG; five repetitions per rate.
- Hiding a statement removes it from ``L_exe``/``L_nexe`` (and from the error statements and
  the traceback frames that point at it, so the refinements of ``tplus`` cannot peek), then
  every estimator runs again on what is left.
- The F1 of a run is computed over the hidden statements, "executed" being the positive class;
  a statement counts as predicted executed when its first code line is in the trace. At 0 %
  nothing is hidden and the F1 is over all known statements: it shows whether an estimator
  contradicts evidence it was given (T2 does, at node granularity).
- A case's MPF1 for a variant is the mean over the four rates of the mean over repetitions;
  a case with no known statement has none.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import fmean

from app.analysis.model import Frame, Loc, MatchResult, Program, Trace
from tcfl_lab.eval.metrics import state_f1

Estimator = Callable[[MatchResult, tuple[Frame, ...]], Mapping[str, Trace]]
"""Re-runs every trace estimator on reduced evidence (wraps ``estimate_all``)."""

MPF1_RATES: tuple[float, ...] = (0.0, 0.2, 0.5, 0.8)


@dataclass(frozen=True)
class MaskingPlan:
    rates: tuple[float, ...] = MPF1_RATES
    repetitions: int = 5
    seed: int = 0


def case_rng(seed: int, case_id: str, purpose: str) -> random.Random:
    """An RNG that depends on the seed and the case, not on the order cases are evaluated in."""
    return random.Random(f"{seed}:{purpose}:{case_id}")


def stratified_sample(strata: Sequence[Sequence[int]], rate: float, rng: random.Random) -> frozenset[int]:
    """Draw ``rate`` of all items, keeping each stratum's share (largest-remainder quotas)."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate}")
    sizes = [len(s) for s in strata]
    total = sum(sizes)
    if total == 0 or rate == 0.0:
        return frozenset()
    want = max(1, math.floor(rate * total + 0.5))
    exact = [n * want / total for n in sizes]
    quotas = [math.floor(x) for x in exact]
    order = sorted(range(len(strata)), key=lambda i: (-(exact[i] - quotas[i]), i))
    for i in order[: want - sum(quotas)]:
        quotas[i] += 1
    chosen: set[int] = set()
    for items, quota in zip(strata, quotas, strict=True):
        chosen.update(rng.sample(sorted(items), min(quota, len(items))))
    return frozenset(chosen)


def mask_match(match: MatchResult, masked: frozenset[int]) -> MatchResult:
    """The matching result as if the masked statements' states were unknown."""
    return replace(
        match,
        exe=match.exe - masked,
        nexe=match.nexe - masked,
        error_sids=match.error_sids - masked,
    )


def mask_frames(frames: Sequence[Frame], program: Program, masked: frozenset[int]) -> tuple[Frame, ...]:
    """Drop traceback frames that point into a masked statement."""
    if not masked:
        return tuple(frames)
    hidden = {
        (st.path, line)
        for st in program.statements
        if st.sid in masked
        for line in range(st.start_line, st.end_line + 1)
    }
    return tuple(f for f in frames if (f.path, f.line) not in hidden)


def predicted_states(program: Program, trace: Trace, sids: frozenset[int]) -> dict[int, bool]:
    """Executed = the statement's first code line is kept."""
    stmts = program.statements
    return {sid: Loc(stmts[sid].path, stmts[sid].start_line) in trace.kept for sid in sids}


def known_truth(match: MatchResult) -> dict[int, bool]:
    truth = dict.fromkeys(match.nexe, False)
    truth.update(dict.fromkeys(match.exe, True))
    return truth


def mpf1(
    case_id: str,
    program: Program,
    match: MatchResult,
    frames: Sequence[Frame],
    base: Mapping[str, Trace],
    estimate: Estimator,
    plan: MaskingPlan,
) -> dict[str, dict[float, float | None]]:
    """Variant -> masking rate -> mean F1 over repetitions (None: no known statements)."""
    truth = known_truth(match)
    known = frozenset(truth)
    strata = (sorted(match.exe), sorted(match.nexe - match.exe))
    rng = case_rng(plan.seed, case_id, "mpf1")
    per_rate: dict[float, dict[str, list[float]]] = {}
    for rate in plan.rates:
        runs: dict[str, list[float]] = {name: [] for name in base}
        if known:
            repetitions = 1 if rate == 0.0 else plan.repetitions
            for _ in range(repetitions):
                masked = stratified_sample(strata, rate, rng)
                if masked:
                    traces = estimate(mask_match(match, masked), mask_frames(frames, program, masked))
                    scored = masked
                else:
                    traces, scored = base, known
                sub_truth = {sid: truth[sid] for sid in scored}
                for name in base:
                    runs[name].append(state_f1(sub_truth, predicted_states(program, traces[name], scored)))
        per_rate[rate] = runs
    return {
        name: {rate: (fmean(runs[name]) if runs[name] else None) for rate, runs in per_rate.items()}
        for name in base
    }
