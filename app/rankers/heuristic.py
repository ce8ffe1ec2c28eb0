"""The built-in ranker (DESIGN section 6) behind the ranker interface."""

from __future__ import annotations

from typing import Any

from app.localize.heuristic import rank_heuristic
from app.rankers.base import Pick, RankAnswer, RankRequest


class HeuristicRanker:
    name = "heuristic"

    def __init__(self, client: Any = None) -> None:
        del client  # needs no model

    async def rank(self, request: RankRequest, k: int) -> RankAnswer:
        return RankAnswer(self.name, self.picks(request, k))

    @staticmethod
    def picks(request: RankRequest, k: int) -> tuple[Pick, ...]:
        """Synchronous: the heuristic does no I/O (triage uses it to fill in after another ranker)."""
        ahead = request.heuristic
        if ahead is not None and ahead[0] is request.rendered and len(ahead[1]) >= k:
            return ahead[1][:k]  # the ranking is a sorted list cut at k: a prefix is the same answer
        scored = rank_heuristic(
            request.analysis, request.rendered, k, disabled=request.options.disabled_channels
        )
        return tuple(Pick(s.element, s.score, s.reason, s.evidence) for s in scored)
