"""Coverage spectra from estimated traces, and the SBFL formulas that score them (docs/design.md §8.2a).

A run's estimated trace says per line executed / not executed / doubtful; its spectrum row is
x = w[verdict][state], the chance the line truly ran (doubtful lines count fully in failures,
where dbt=EXE keeps faults, and half in passes, except where the failure itself left
the line doubtful: there a pass's doubt counts as much as the failure's). Counts are weighted by
the run's weight (older versions count less). A line a run's version did not have is absent from
that run, not "not executed". Blocks and functions take the max of their lines (docs/design.md §8.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from app.analysis.model import Loc, State
from app.history.versions import LineMap

FAILING = frozenset({"fail", "error"})
PASSING = frozenset({"pass"})


@dataclass(frozen=True)
class StateWeights:
    """P(truly ran | estimated state, verdict); calibrated on the corpus, these are the defaults."""

    fail: Mapping[State, float] = field(
        default_factory=lambda: {State.EXE: 1.0, State.NEXE: 0.0, State.DBT: 1.0, State.UNKNOWN: 1.0}
    )
    passed: Mapping[State, float] = field(
        default_factory=lambda: {State.EXE: 1.0, State.NEXE: 0.0, State.DBT: 0.5, State.UNKNOWN: 0.5}
    )


@dataclass(frozen=True)
class RunTrace:
    """One run as the spectrum sees it: verdict, per-line states in the target version, weight."""

    verdict: str  # pass | fail | error | skip
    states: Mapping[Loc, State]
    weight: float = 1.0
    flaky: bool = False  # a failure classified flaky leaves the failing set


@dataclass(frozen=True)
class Counts:
    aef: float = 0.0
    anf: float = 0.0
    aep: float = 0.0
    anp: float = 0.0


def map_states(
    states: Mapping[Loc, State], maps: Mapping[str, LineMap], *, keep_modified: bool = False
) -> dict[Loc, State]:
    """A run's states in its own version's lines -> the target version's (unmapped lines vanish).

    An edited line is a new statement: by default runs of the old text do not count for it (they
    would vouch for code they never ran; on the history corpus, keeping them let every pass before
    a faulty edit hide the fault). ``keep_modified`` restores the version map's pairing
    (docs/design.md §8.1).
    """
    out: dict[Loc, State] = {}
    for loc, state in states.items():
        lmap = maps.get(loc.path)
        if lmap is None:
            continue
        target = lmap.forward.get(loc.line)
        if target is not None and (keep_modified or target not in lmap.modified):
            out[Loc(loc.path, target)] = state
    return out


DOUBTFUL = frozenset({State.DBT, State.UNKNOWN})


def spectrum(
    runs: Iterable[RunTrace],
    elements: Iterable[Loc],
    weights: StateWeights | None = None,
    *,
    failure: Mapping[Loc, State] | None = None,
) -> dict[Loc, Counts]:
    """Weighted (a_ef, a_nf, a_ep, a_np) per element; skips and flaky failures are ignored.

    ``failure`` (the failing run's own states): where it left a line doubtful, a pass's doubt on
    that line counts at least as much as the failure's. A failing test stops at its error, so a
    pass ran at least as far; counting the failure's doubt fully and the passes' at half made
    lines no log speaks about outrank the certainly executed fault (on the history corpus: line-level
    misses the true traces did not have).
    """
    w = weights or StateWeights()
    acc = {e: [0.0, 0.0, 0.0, 0.0] for e in elements}
    doubted = {loc for loc, s in (failure or {}).items() if s in DOUBTFUL}
    for run in runs:
        if run.verdict in FAILING and not run.flaky:
            table, base = w.fail, 0
        elif run.verdict in PASSING:
            table, base = w.passed, 2
        else:
            continue
        for loc, row in acc.items():
            state = run.states.get(loc)
            if state is None:
                continue
            x = table.get(state, 0.0)
            if base == 2 and state in DOUBTFUL and loc in doubted:
                x = max(x, w.fail.get(state, 0.0))
            row[base] += run.weight * x
            row[base + 1] += run.weight * (1.0 - x)
    return {e: Counts(*row) for e, row in acc.items()}


def ochiai(c: Counts) -> float:
    denom = math.sqrt((c.aef + c.anf) * (c.aef + c.aep))
    return c.aef / denom if denom > 0 else 0.0


def dstar(c: Counts, star: int = 2) -> float:
    denom = c.aep + c.anf
    if denom <= 0:
        return math.inf if c.aef > 0 else 0.0
    return c.aef**star / denom


def op2(c: Counts) -> float:
    return c.aef - c.aep / (c.aep + c.anp + 1.0)


def tarantula(c: Counts) -> float:
    failed, passed = c.aef + c.anf, c.aep + c.anp
    fr = c.aef / failed if failed > 0 else 0.0
    pr = c.aep / passed if passed > 0 else 0.0
    return fr / (fr + pr) if fr + pr > 0 else 0.0


FORMULAS: dict[str, Callable[[Counts], float]] = {
    "ochiai": ochiai,
    "dstar": dstar,
    "op2": op2,
    "tarantula": tarantula,
}


def scores(counts: Mapping[Loc, Counts], formula: str = "ochiai") -> dict[Loc, float]:
    try:
        fn = FORMULAS[formula]
    except KeyError:
        raise ValueError(f"unknown formula {formula!r}; choose one of {', '.join(FORMULAS)}") from None
    return {loc: fn(c) for loc, c in counts.items()}


def rank(element_scores: Mapping[str, float], tiebreak: Mapping[str, float] | None = None) -> list[str]:
    """Elements best first; ties (all executed lines tie with no pass) broken by the static rank."""
    order = tiebreak or {}
    return sorted(element_scores, key=lambda e: (-element_scores[e], order.get(e, math.inf), e))
