"""Evaluation metrics: the paper's equations (1)-(2) for rankings, and set metrics for traces.

Conventions (the paper leaves them implicit; these follow its wording and Table X):

- A ranking is cut to its first ``k`` answers, then duplicates are dropped (first occurrence
  kept), so positions, ``Precision@k`` and ``AP@k`` refer to the distinct answers. This is why
  line-to-block mapping yields fewer than ``k`` blocks in the paper's Table X while its
  precision rises.
- ``Precision@k`` = TP / (TP + FP) over those distinct answers (0 when there are none);
  ``Recall@k`` = TP / number of faulty elements; ``Hit@k`` = 1 when TP > 0.
- ``AP@k`` = sum_j P(j) * rel(j) / m with m the faulty elements found in the top k
  (equation 1); 0 when m = 0. ``RR`` = 1 / rank of the first faulty answer, 0 when none
  (equation 2). MAP@k and MRR@k are their means over cases.
- State F1 treats "executed" as the positive class, as the paper's MPF1 numbers imply (the
  all-executed trace T0 scores 2p/(1+p) with p the executed share). When there is nothing
  positive to find and nothing was predicted positive, the prediction is perfect: F1 = 1.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean


@dataclass(frozen=True)
class RankScores:
    """One case's scores for one ranking at one k."""

    precision: float
    recall: float
    hit: float
    ap: float
    rr: float
    answers: int  # distinct answers within the top k
    found: int  # faulty elements among them


def distinct_top_k(ranking: Sequence[Hashable], k: int) -> list[Hashable]:
    """The first ``k`` answers with repeats removed, in rank order."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return list(dict.fromkeys(ranking[:k]))


def rank_scores(ranking: Sequence[Hashable], faulty: Collection[Hashable], k: int) -> RankScores:
    """Scores of one ranking against the case's faulty elements (equations (1) and (2))."""
    if not faulty:
        raise ValueError("a case without faulty elements cannot be scored")
    answers = distinct_top_k(ranking, k)
    truth = set(faulty)
    found = 0
    ap_sum = 0.0
    first: int | None = None
    for position, element in enumerate(answers, start=1):
        if element in truth:
            found += 1
            ap_sum += found / position  # P(j) * rel(j)
            if first is None:
                first = position
    return RankScores(
        precision=found / len(answers) if answers else 0.0,
        recall=found / len(truth),
        hit=1.0 if found else 0.0,
        ap=ap_sum / found if found else 0.0,
        rr=1.0 / first if first else 0.0,
        answers=len(answers),
        found=found,
    )


@dataclass(frozen=True)
class RankSummary:
    """Means over cases: Precision@k, Recall@k, Hit@k, MAP@k, MRR@k."""

    precision: float
    recall: float
    hit: float
    map: float
    mrr: float
    cases: int
    mean_answers: float


def summarize_ranks(scores: Iterable[RankScores]) -> RankSummary:
    items = list(scores)
    if not items:
        return RankSummary(0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0)
    return RankSummary(
        precision=fmean(s.precision for s in items),
        recall=fmean(s.recall for s in items),
        hit=fmean(s.hit for s in items),
        map=fmean(s.ap for s in items),
        mrr=fmean(s.rr for s in items),
        cases=len(items),
        mean_answers=fmean(s.answers for s in items),
    )


@dataclass(frozen=True)
class SetScores:
    precision: float
    recall: float
    f1: float


def set_scores(predicted: Collection[Hashable], actual: Collection[Hashable]) -> SetScores:
    """Precision, recall and F1 of a predicted set against the true one (both empty = perfect)."""
    pred, true = set(predicted), set(actual)
    tp = len(pred & true)
    precision = tp / len(pred) if pred else (1.0 if not true else 0.0)
    recall = tp / len(true) if true else 1.0
    return SetScores(precision, recall, f1(tp, len(pred) - tp, len(true) - tp))


def f1(tp: int, fp: int, fn: int) -> float:
    """F1 from counts; 1.0 when there was nothing to find and nothing was claimed."""
    if tp + fp + fn == 0:
        return 1.0
    return 2 * tp / (2 * tp + fp + fn)


def state_f1(truth: Mapping[Hashable, bool], predicted: Mapping[Hashable, bool]) -> float:
    """F1 of "executed" predictions over the keys of ``truth`` (True = executed)."""
    tp = fp = fn = 0
    for key, executed in truth.items():
        guess = predicted[key]
        if guess and executed:
            tp += 1
        elif guess:
            fp += 1
        elif executed:
            fn += 1
    return f1(tp, fp, fn)


@dataclass(frozen=True)
class Preservation:
    partial: bool  # some faulty line kept
    full: bool  # every faulty line kept


def preservation(kept: Collection[Hashable], faulty: Collection[Hashable]) -> Preservation:
    """Whether a trace keeps some / all of a case's faulty lines (paper V-B3)."""
    if not faulty:
        raise ValueError("a case without faulty lines has no fault preservation")
    inside = [loc in kept for loc in faulty]
    return Preservation(partial=any(inside), full=all(inside))


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values; None when none is defined."""
    defined = [v for v in values if v is not None]
    return fmean(defined) if defined else None
