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
        scored = rank_heuristic(request.analysis, request.rendered, k)
        return tuple(Pick(s.element, s.score, s.reason) for s in scored)
