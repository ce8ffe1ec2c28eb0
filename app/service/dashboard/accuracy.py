"""Hit@k from engineers' feedback: did a marked faulty line fall in one of the top-k ranked elements?"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.analysis.model import Loc

ACCURACY_KS: tuple[int, ...] = (1, 3, 5)


@dataclass(frozen=True)
class Accuracy:
    """Hit@k over the triages that have feedback and a ranking; ``hits[k]`` counts them."""

    cases: int
    hits: dict[int, int]

    def rate(self, k: int) -> float | None:
        return None if self.cases == 0 else self.hits.get(k, 0) / self.cases


def _covers(item: Mapping[str, Any], loc: Loc) -> bool:
    return item.get("path") == loc.path and int(item["start_line"]) <= loc.line <= int(item["end_line"])


def hit_at_k(
    cases: Iterable[tuple[Sequence[Loc], Sequence[Mapping[str, Any]]]], ks: Sequence[int] = ACCURACY_KS
) -> Accuracy:
    """A case is a hit at k when a marked line lies in one of its ranked elements of rank <= k."""
    total = 0
    hits = dict.fromkeys(ks, 0)
    for marked, ranking in cases:
        if not marked or not ranking:
            continue
        total += 1
        best = min(
            (int(item["rank"]) for item in ranking if any(_covers(item, loc) for loc in marked)),
            default=None,
        )
        for k in ks:
            if best is not None and best <= k:
                hits[k] += 1
    return Accuracy(cases=total, hits=hits)
