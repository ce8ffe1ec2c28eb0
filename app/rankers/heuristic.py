"""The built-in ranker behind the ranker interface: channel values weighed by a model file.

``heuristic`` scores with the shipped model (``app/localize/ranker_model.json``) or the one the
``ranker_model`` option names, and holds the stack trace's first element in its top 3;
``handset`` scores with the hand-set weights, for comparison.
"""

from __future__ import annotations

from typing import Any

from app.localize.heuristic import rank_heuristic
from app.localize.model_file import HANDSET_LABEL, load_model
from app.options import TriageOptions
from app.rankers.base import Pick, RankAnswer, RankRequest


def model_label(options: TriageOptions) -> str:
    """Which model file the built-in ranker scores with under these options, in a few words."""
    return load_model(options.ranker_model).label


class HeuristicRanker:
    name = "heuristic"

    def __init__(self, client: Any = None) -> None:
        del client  # needs no model server

    async def rank(self, request: RankRequest, k: int) -> RankAnswer:
        return RankAnswer(self.name, self.picks(request, k), ranker_model=model_label(request.options))

    @staticmethod
    def picks(request: RankRequest, k: int) -> tuple[Pick, ...]:
        """Synchronous: the heuristic does no I/O (triage uses it to fill in after another ranker)."""
        ahead = request.heuristic
        if ahead is not None and ahead[0] is request.rendered and len(ahead[1]) >= k:
            return ahead[1][:k]  # the ranking is a sorted list cut at k: a prefix is the same answer
        model = load_model(request.options.ranker_model).levels[request.rendered.level]
        scored = rank_heuristic(
            request.analysis,
            request.rendered,
            k,
            disabled=request.options.disabled_channels,
            model=model,
        )
        return tuple(Pick(s.element, s.score, s.reason, s.evidence) for s in scored)


class HandsetRanker:
    name = "handset"

    def __init__(self, client: Any = None) -> None:
        del client  # needs no model server

    async def rank(self, request: RankRequest, k: int) -> RankAnswer:
        scored = rank_heuristic(
            request.analysis, request.rendered, k, disabled=request.options.disabled_channels
        )
        picks = tuple(Pick(s.element, s.score, s.reason, s.evidence) for s in scored)
        return RankAnswer(self.name, picks, ranker_model=HANDSET_LABEL)
