"""What a triage asks for and what it answers (DESIGN section 3's triage result)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from app.analysis.logparse import check_prefix_format
from app.analysis.model import resolve_variant
from app.analysis.render import LEVELS
from app.localize.prompts import OUTPUT_FORMATS
from app.localize.repair import PostprocessCounts

RANKERS: tuple[str, ...] = ("auto", "llm", "heuristic")


@dataclass(frozen=True)
class TriageOptions:
    level: str = "block"
    k: int = 5
    trace: str = "tplus"
    ranker: str = "auto"  # auto = the model when a client is given, else the heuristic
    log_functions: tuple[str, ...] = ()
    output_format: str = "json_schema"  # or "paper": the paper's free-form answers
    two_phase: bool = False  # paper VI-G: functions first, then blocks/lines inside the top ones
    line_to_block: bool = False  # paper VI-D: ask for lines, answer with their blocks
    log_format: str | None = (
        None  # log prefix format: a known name or a regex with (?P<msg>...); None = detect
    )

    def validated(self) -> TriageOptions:
        """A copy with the trace name made canonical; ``ValueError`` naming the bad option otherwise."""
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"k must be an integer >= 1, got {self.k!r}")
        if self.ranker not in RANKERS:
            raise ValueError(f"ranker must be one of {', '.join(RANKERS)}, got {self.ranker!r}")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(
                f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, got {self.output_format!r}"
            )
        if isinstance(self.log_functions, str):
            raise ValueError("log_functions must be a list of patterns, not a single string")
        if self.log_format:
            check_prefix_format(self.log_format)
        return replace(self, trace=resolve_variant(self.trace), log_functions=tuple(self.log_functions))


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
    rationale: str | None = None  # the model's own words on why, when it gave any

    def to_dict(self) -> dict[str, Any]:
        out = {
            "rank": self.rank,
            "id": self.id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "code": self.code,
            "score": self.score,
            "reason": self.reason,
        }
        if self.rationale is not None:
            out["rationale"] = self.rationale
        return out


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

    def to_dict(self) -> dict[str, Any]:
        return {
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
        }
