"""The stack-trace baseline (FauxPy's): innermost script frame first, then outer frames, then source order.

Registered so that ``tcfl eval --ranker stacktrace`` reports the baseline beside the heuristic.
"""

from __future__ import annotations

from typing import Any

from app.localize.heuristic import rank_stacktrace
from app.rankers.base import Pick, RankAnswer, RankRequest


class StacktraceRanker:
    name = "stacktrace"

    def __init__(self, client: Any = None) -> None:
        del client  # needs no model

    async def rank(self, request: RankRequest, k: int) -> RankAnswer:
        scored = rank_stacktrace(request.analysis, request.rendered, k)
        return RankAnswer(self.name, tuple(Pick(s.element, s.score, s.reason, s.evidence) for s in scored))
