"""The history-aware ranker: the heuristic ranking fused with the test's CI history.

It reads the runs the edge attached to the request (``RankRequest.history``) and the
calibration shipped beside the history core (``app/history/calibration.json``, rebuilt by
``tcfl eval CORPUS --history-lengths ... --write-calibration FILE``). Without runs it answers
the heuristic's ranking and says so.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from app.history.fusion import Calibration, pick_calibration
from app.history.rank import rank_with_history, selection_of
from app.history.records import scope_paths
from app.rankers.base import Pick, RankAnswer, RankRequest
from app.rankers.heuristic import HeuristicRanker


@cache
def shipped_calibration() -> dict[str, Calibration]:
    """``level@bucket`` -> calibration, as shipped with the package (see ``pick_calibration``)."""
    data = json.loads(resources.files("app.history").joinpath("calibration.json").read_text(encoding="utf-8"))
    return {level: Calibration.from_dict(body) for level, body in data.items()}


class HistoryRanker:
    name = "history"

    def __init__(self, client: Any = None) -> None:
        del client  # needs no model

    async def rank(self, request: RankRequest, k: int) -> RankAnswer:
        elements = request.rendered.elements
        static = HeuristicRanker.picks(request, max(1, len(elements)))
        if not request.history:
            return RankAnswer(
                "heuristic", static[:k], fallback="no CI history for this test: the heuristic ranked"
            )
        own = sum(h.same_test for h in request.history)
        calibration = pick_calibration(shipped_calibration(), request.rendered.level, own)
        k_runs = request.options.history_k
        analysis = request.analysis
        scope = None
        if request.test is not None:
            frames = (f.path for f in analysis.error_frames)
            scope = scope_paths(analysis.program, str(request.test), frames)
        ranking = rank_with_history(
            request.analysis,
            request.rendered,
            [p.element.id for p in static],
            request.history,
            calibration,
            selection=selection_of(k_runs),
            k=k_runs,
            scope=scope,
        )
        by_id = {p.element.id: p for p in static}
        elements_by_id = {e.id: e for e in elements}
        picks = []
        for eid in ranking.order[:k]:
            base = by_id.get(eid)
            fused = ranking.fused[eid]
            terms = ", ".join(
                f"{c} {t:+.2f}" for c, t in sorted(fused.terms.items(), key=lambda kv: -kv[1]) if round(t, 2)
            )
            reason = f"posterior {fused.posterior:.0%}" + (f" from the terms {terms}" if terms else "")
            evidence = (*ranking.evidence.get(eid, ()), *(base.evidence if base else ()))
            picks.append(Pick(elements_by_id[eid], round(fused.logit, 4), reason, evidence))
        return RankAnswer(self.name, tuple(picks), history_used=ranking.runs)
