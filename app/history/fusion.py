"""Fusion of evidence channels by calibrated log-odds (docs/design.md §8.2e).

logit P(e faulty) = logit π + Σ_c log LR_c(bin_c(e)), π = 1/|candidates|. Each channel
(static ranking, Ochiai, CP, diff, ...) contributes through the rank bin it gives the element,
so unbounded scores (CP) and bounded ones (Ochiai) fuse alike; LR_c comes from a calibration
half of the corpus with Laplace smoothing and ships as JSON data. A channel that has nothing to
say for a case (no history) adds 0, so with no history the fused order is the static order.
The per-channel terms are the explanation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

BIN_EDGES: tuple[int, ...] = (1, 3, 5, 10, 20)
UNRANKED = "none"


def bin_names(edges: Sequence[int] = BIN_EDGES) -> tuple[str, ...]:
    names, low = [], 1
    for high in edges:
        names.append(str(high) if high == low else f"{low}-{high}")
        low = high + 1
    return (*names, f"{low}+", UNRANKED)


def rank_bin(rank: float | None, edges: Sequence[int] = BIN_EDGES) -> str:
    if rank is None:
        return UNRANKED
    names = bin_names(edges)
    for name, high in zip(names, edges, strict=False):
        if rank <= high:
            return name
    return names[-2]


def tied_ranks(scores: Mapping[str, float]) -> dict[str, float]:
    """1-based ranks, best first; tied elements share their mean rank (a 30-way tie is not rank 1)."""
    ordered = sorted(scores, key=lambda e: -scores[e])
    out: dict[str, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and scores[ordered[j + 1]] == scores[ordered[i]]:
            j += 1
        mean = (i + j) / 2 + 1
        for e in ordered[i : j + 1]:
            out[e] = mean
        i = j + 1
    return out


@dataclass(frozen=True)
class Calibration:
    """log LR per channel and rank bin, and the counts they were learned from."""

    log_lr: Mapping[str, Mapping[str, float]]
    counts: Mapping[str, Mapping[str, tuple[int, int]]] = field(default_factory=dict)  # (faulty, other)
    edges: tuple[int, ...] = BIN_EDGES
    cases: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "bin_edges": list(self.edges),
            "cases": self.cases,
            "log_lr": {c: {b: round(v, 6) for b, v in bins.items()} for c, bins in self.log_lr.items()},
            "counts": {c: {b: list(v) for b, v in bins.items()} for c, bins in self.counts.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        if data.get("version") != 1:
            raise ValueError(f"unsupported calibration version {data.get('version')!r}")
        return cls(
            log_lr={c: {b: float(v) for b, v in bins.items()} for c, bins in data["log_lr"].items()},
            counts={
                c: {b: (int(v[0]), int(v[1])) for b, v in bins.items()} for c, bins in data["counts"].items()
            },
            edges=tuple(int(e) for e in data["bin_edges"]),
            cases=int(data.get("cases", 0)),
        )


@dataclass(frozen=True)
class Sample:
    """One candidate element of one calibration case: its bin per channel and whether it is faulty."""

    bins: Mapping[str, str]
    faulty: bool


def fit(
    samples: Iterable[Sample], channels: Sequence[str], edges: Sequence[int] = BIN_EDGES, cases: int = 0
) -> Calibration:
    """LR_c(bin) = P(bin | faulty) / P(bin | other), both Laplace-smoothed over the bins."""
    names = bin_names(edges)
    counts = {c: {b: [0, 0] for b in names} for c in channels}
    for s in samples:
        for c in channels:
            b = s.bins.get(c)
            if b is not None:
                counts[c][b][0 if s.faulty else 1] += 1
    log_lr: dict[str, dict[str, float]] = {}
    for c in channels:
        total_f = sum(v[0] for v in counts[c].values())
        total_o = sum(v[1] for v in counts[c].values())
        log_lr[c] = {
            b: math.log((v[0] + 1) / (total_f + len(names))) - math.log((v[1] + 1) / (total_o + len(names)))
            for b, v in counts[c].items()
        }
        # a better rank is never less likely to be faulty: keep LR non-increasing down the bins, so
        # that a channel alone (no history: the static one) never reorders its own ranking
        floor = math.inf
        for b in names:
            floor = min(floor, log_lr[c][b])
            log_lr[c][b] = floor
    frozen = {c: {b: (v[0], v[1]) for b, v in bins.items()} for c, bins in counts.items()}
    return Calibration(log_lr, frozen, tuple(edges), cases)


@dataclass(frozen=True)
class Fused:
    element: str
    logit: float
    terms: Mapping[str, float]  # channel -> its log LR for this element (the explanation)

    @property
    def posterior(self) -> float:
        return 1.0 / (1.0 + math.exp(-self.logit))


def channel_bins(
    channel_scores: Mapping[str, Mapping[str, float]],
    elements: Iterable[str],
    edges: Sequence[int] = BIN_EDGES,
) -> dict[str, dict[str, str]]:
    """Per element, the rank bin each present channel gives it (unscored elements: ``none``)."""
    ranks = {c: tied_ranks(s) for c, s in channel_scores.items()}
    return {e: {c: rank_bin(r.get(e), edges) for c, r in ranks.items()} for e in elements}


def fuse(
    channel_scores: Mapping[str, Mapping[str, float]],
    elements: Sequence[str],
    calibration: Calibration,
    static_order: Sequence[str] = (),
) -> list[Fused]:
    """Elements by posterior, best first; ties go to the static order, then to the given order."""
    if not elements:
        return []
    prior = 1.0 / len(elements)
    base = math.log(prior / (1.0 - prior)) if prior < 1.0 else 0.0
    bins = channel_bins(channel_scores, elements, calibration.edges)
    position = {e: i for i, e in enumerate(static_order)}
    out = []
    for e in elements:
        terms = {c: calibration.log_lr.get(c, {}).get(b, 0.0) for c, b in bins[e].items()}
        out.append(Fused(e, base + sum(terms.values()), terms))
    fallback = {e: i for i, e in enumerate(elements)}
    out.sort(key=lambda f: (-round(f.logit, 9), position.get(f.element, math.inf), fallback[f.element]))
    return out


LONG_HISTORY = 5  # own runs from which a history counts as long: the channels' reliability differs
BUCKETS = ("short", "long")


def bucket(n_runs: int) -> str:
    """The history length bucket of ``n_runs`` earlier runs of the failing test itself."""
    return "long" if n_runs >= LONG_HISTORY else "short"


def pick_calibration(calibration: Mapping[str, Calibration], level: str, n_runs: int) -> Calibration:
    """``level@bucket`` when shipped, else the level's, else line's, else any (older files)."""
    for key in (f"{level}@{bucket(n_runs)}", level, f"line@{bucket(n_runs)}", "line"):
        if key in calibration:
            return calibration[key]
    return next(iter(calibration.values()))
