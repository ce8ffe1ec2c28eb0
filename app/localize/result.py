"""What a triage answers: the one result model (docs/design.md §3) that CLI JSON, HTTP and storage share.

``to_dict`` writes the contract's JSON and ``from_dict`` reads it back (a stored result, an API
answer); nothing else spells the shape out. The options record lives in app/options.py and is
re-exported here for older imports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.localize.evidence import Evidence
from app.localize.repair import PostprocessCounts
from app.options import RANKERS, TriageOptions

__all__ = ["HISTORY_CHANNELS", "RANKERS", "RankedItem", "TriageOptions", "TriageResult", "history_terms"]

# the evidence channels the history ranker adds (app/history/rank.py names them)
HISTORY_CHANNELS: tuple[str, ...] = ("spectrum", "cp", "diff", "history_value", "new_lines")


def history_terms(item: Mapping[str, Any]) -> dict[str, Any]:
    """A ranked element's posterior and each history channel's log-likelihood term.

    The history ranker scores an element by its fused logit and records every positive channel
    term as evidence, so both come from the stored result alone (older results included).
    """
    channels: dict[str, float] = {}
    for ev in item.get("evidence") or ():
        channel, weight = ev.get("channel"), ev.get("weight")
        if channel in HISTORY_CHANNELS and isinstance(weight, int | float) and weight > 0:
            channels[channel] = round(channels.get(channel, 0.0) + float(weight), 4)
    score = item.get("score")
    posterior = None
    if isinstance(score, int | float) and channels:
        posterior = round(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, float(score))))), 4)
    return {"posterior": posterior, "channels": channels}


def relevance(scores: Sequence[float | None], ranker: str) -> list[int | None]:
    """Scores of a ranking, in rank order, on one 0-100 scale that never rises down the ranking.

    The history ranker's score is a fused log-odds: its relevance is the posterior in per cent.
    The built-in rankers' scores are evidence weights: relative to the first-ranked one. A model
    ranks without scores (None). An item ranked below a higher-scored one (the history ranker
    keeps an element's better rank with and without the passing runs) shows its predecessor's.
    """
    known = [s for s in scores if s is not None]
    if not known or len(known) < len(scores):  # a model's items (filled in or not): ranks only
        return [None] * len(scores)
    if ranker == "history":
        raw = [None if s is None else 100.0 / (1.0 + math.exp(-max(-50.0, min(50.0, s)))) for s in scores]
    else:
        top = max(known)
        raw = [None if s is None else (100.0 * s / top if top > 0 else 0.0) for s in scores]
    out: list[int | None] = []
    ceiling = 100
    for value in raw:
        if value is None:
            out.append(None)
            continue
        ceiling = min(ceiling, max(0, min(100, round(value))))
        out.append(ceiling)
    return out


@dataclass(frozen=True)
class RankedItem:
    rank: int
    id: str
    path: str
    start_line: int
    end_line: int
    code: str
    score: float | None  # heuristic score; None for the model's own items
    reason: str
    evidence: tuple[Evidence, ...] = ()  # why, strongest first
    filled: bool = False  # a heuristic item filling in another ranker's short answer
    rationale: str | None = None  # the model's own words on why, when it gave any
    relevance: int | None = None  # 0-100, never higher than the item ranked above (``relevance``)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "rank": self.rank,
            "id": self.id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "code": self.code,
            "score": self.score,
            "relevance": self.relevance,
            "reason": self.reason,
            "evidence": [e.to_dict() for e in self.evidence],
        }
        if self.rationale is not None:
            out["rationale"] = self.rationale
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RankedItem:
        return cls(
            rank=int(data["rank"]),
            id=str(data["id"]),
            path=str(data["path"]),
            start_line=int(data["start_line"]),
            end_line=int(data["end_line"]),
            code=str(data.get("code") or ""),
            score=data.get("score"),
            reason=str(data.get("reason") or ""),
            evidence=tuple(Evidence.from_dict(e) for e in data.get("evidence") or ()),
            rationale=data.get("rationale"),
            relevance=data.get("relevance"),
        )


@dataclass(frozen=True)
class TriageResult:
    error_message: str
    ranker: str  # "llm" or "heuristic": the ranker whose answer this is
    model: str | None
    fallback_reason: str | None
    level: str
    k: int
    variant: str
    pruning_rate: float
    kept_lines: int
    total_lines: int
    ranking: tuple[RankedItem, ...]
    tokens: tuple[int, int] | None  # (input, output) where a model answered
    static_ms: float
    model_ms: float
    total_ms: float
    postprocess: PostprocessCounts = field(default_factory=PostprocessCounts)
    prompt_chars: int = 0
    prompt_lines: int = 0
    warnings: tuple[str, ...] = ()
    id: str | None = None
    status: str = "done"
    evidence_found: bool = True  # False: nothing in the failure pointed anywhere; the ranking is a guess
    options: TriageOptions | None = None  # the resolved options the triage ran with, stored whole
    ranker_model: str | None = None  # the built-in ranker's model file, where it ranked or filled in
    # what the test's CI history said (runs read and used, classification, first bad version),
    # when the triage named a test; None otherwise (and then the key is left out)
    history: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "status": self.status,
            "error_message": self.error_message,
            "ranker": self.ranker,
            "model": self.model,
            "fallback_reason": self.fallback_reason,
            "level": self.level,
            "k": self.k,
            "trace": {
                "variant": self.variant,
                "pruning_rate": round(self.pruning_rate, 4),
                "kept_lines": self.kept_lines,
                "total_lines": self.total_lines,
            },
            "ranking": [item.to_dict() for item in self.ranking],
            "tokens": None if self.tokens is None else {"input": self.tokens[0], "output": self.tokens[1]},
            "timings": {
                "static_ms": round(self.static_ms, 3),
                "model_ms": round(self.model_ms, 3),
                "total_ms": round(self.total_ms, 3),
            },
            "postprocess": self.postprocess.to_dict(),
            "prompt": {"chars": self.prompt_chars, "lines": self.prompt_lines},
            "warnings": list(self.warnings),
            "evidence_found": self.evidence_found,
            "options": None if self.options is None else self.options.to_dict(),
            "ranker_model": self.ranker_model,
        }
        if self.history is not None:
            out["history"] = dict(self.history)
            for item in out["ranking"]:
                item["history"] = history_terms(item)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TriageResult:
        """Read a result written by ``to_dict`` (stored, or answered by the API); extra keys are ignored."""
        trace = data.get("trace") or {}
        timings = data.get("timings") or {}
        tokens = data.get("tokens")
        prompt = data.get("prompt") or {}
        counts = data.get("postprocess") or {}
        options = data.get("options")
        return cls(
            error_message=data.get("error_message") or "",
            ranker=data.get("ranker") or "heuristic",
            model=data.get("model"),
            fallback_reason=data.get("fallback_reason"),
            level=data.get("level") or "block",
            k=int(data.get("k") or 0),
            variant=trace.get("variant") or "",
            pruning_rate=float(trace.get("pruning_rate") or 0.0),
            kept_lines=int(trace.get("kept_lines") or 0),
            total_lines=int(trace.get("total_lines") or 0),
            ranking=tuple(RankedItem.from_dict(item) for item in data.get("ranking") or ()),
            tokens=None if not tokens else (int(tokens["input"]), int(tokens["output"])),
            static_ms=float(timings.get("static_ms") or 0.0),
            model_ms=float(timings.get("model_ms") or 0.0),
            total_ms=float(timings.get("total_ms") or 0.0),
            postprocess=PostprocessCounts(**{k: int(v) for k, v in counts.items()}),
            prompt_chars=int(prompt.get("chars") or 0),
            prompt_lines=int(prompt.get("lines") or 0),
            warnings=tuple(data.get("warnings") or ()),
            id=None if data.get("id") is None else str(data["id"]),
            status=data.get("status") or "done",
            options=None if options is None else TriageOptions.from_dict(options),
            evidence_found=bool(data.get("evidence_found", True)),
            ranker_model=data.get("ranker_model"),
            history=data.get("history"),
        )
