"""The one options record of a triage, and the one place it is resolved.

Every entry point (CLI triage/trace/eval/batch, HTTP, dashboard) builds its options with
``resolve_options``: defaults < settings (environment, ``.env``) < what the caller asked for.
The analysis core reads no settings; it gets this record. The record is stored whole with each
result (``to_dict``/``from_dict``) so a stored triage says exactly how it was made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from app.analysis.model import resolve_variant

if TYPE_CHECKING:
    from app.settings import Settings

LEVELS: tuple[str, ...] = ("function", "block", "line")
OUTPUT_FORMATS: tuple[str, ...] = ("json_schema", "paper")
PROMPT_STYLES: tuple[str, ...] = ("full", "paper")  # as app.localize.prompts.PROMPT_STYLES
RANKERS: tuple[str, ...] = ("auto", "llm", "heuristic")  # the built-in names; app.rankers has them all


MAX_HISTORY_WINDOW = 500
RANKER_MODEL_HELP = (
    "the built-in (heuristic) ranker's model file, as `tcfl learn --out` writes it "
    "(default: TCFL_RANKER_MODEL, else the shipped one)"
)


def check_window(window: Any, k: Any) -> None:
    """The one rule for the CI-history window and k (options record, API, CLI alike)."""
    for name, v, low in (("window", window, 1), ("k", k, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= MAX_HISTORY_WINDOW:
            raise ValueError(
                f"history {name} must be an integer from {low} to {MAX_HISTORY_WINDOW}, got {v!r}"
            )


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
    log_format: str | None = None  # a known format name or a regex with (?P<msg>...); None = detect
    disabled_channels: frozenset[str] = frozenset()  # evidence channels switched off (ablation)
    prompt_style: str = "full"  # "full": error, script frames and a log window; "paper": Figure 4 exactly
    prompt_budget: int = 400  # tokens of failure context beyond the error message ("full" style)
    history_window: int = 30  # CI history: the test's newest runs read (history ranker)
    history_k: int = 0  # CI history: runs kept by FDC selection; 0 = every run of the window
    ranker_model: str | None = None  # the built-in ranker's model file; None = the shipped one

    def validated(self) -> TriageOptions:
        """A copy with the trace name made canonical; ``ValueError`` naming the bad option otherwise."""
        from app.rankers import ranker_names

        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"k must be an integer >= 1, got {self.k!r}")
        rankers = ("auto", *ranker_names())
        if self.ranker not in rankers:
            raise ValueError(f"ranker must be one of {', '.join(rankers)}, got {self.ranker!r}")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(
                f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, got {self.output_format!r}"
            )
        if isinstance(self.log_functions, str):
            raise ValueError("log_functions must be a list of patterns, not a single string")
        if self.prompt_style not in PROMPT_STYLES:
            raise ValueError(
                f"prompt_style must be one of {', '.join(PROMPT_STYLES)}, got {self.prompt_style!r}"
            )
        if (
            isinstance(self.prompt_budget, bool)
            or not isinstance(self.prompt_budget, int)
            or self.prompt_budget < 0
        ):
            raise ValueError(f"prompt_budget must be an integer >= 0 (tokens), got {self.prompt_budget!r}")
        check_window(self.history_window, self.history_k)
        if self.ranker_model is not None:
            if not isinstance(self.ranker_model, str):
                raise ValueError(f"ranker_model must be a file path, got {self.ranker_model!r}")
            from app.localize.model_file import load_model

            load_model(self.ranker_model)  # ModelFileError (a ValueError) says what is wrong with it
        if self.log_format:
            from app.analysis.logparse import check_prefix_format

            check_prefix_format(self.log_format)
        if isinstance(self.disabled_channels, str):
            raise ValueError("disabled_channels must be a set of channel names, not a single string")
        from app.analysis.context import REFINEMENTS
        from app.localize.evidence import SWITCHES

        # ranking channels, and the enhanced trace's refinements (the analysis reads those)
        known = SWITCHES | frozenset(REFINEMENTS)
        unknown = sorted(set(self.disabled_channels) - known)
        if unknown:
            raise ValueError(
                f"unknown channel(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}"
            )
        return replace(
            self,
            trace=resolve_variant(self.trace),
            log_functions=tuple(self.log_functions),
            disabled_channels=frozenset(self.disabled_channels),
        )

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready: what is stored with a result and shown by the API."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["log_functions"] = list(self.log_functions)
        out["disabled_channels"] = sorted(self.disabled_channels)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TriageOptions:
        """Read stored options; fields an older version did not store take their defaults."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "log_functions" in values:
            values["log_functions"] = tuple(values["log_functions"] or ())
        if "disabled_channels" in values:
            values["disabled_channels"] = frozenset(values["disabled_channels"] or ())
        return cls(**values)


def resolve_options(
    settings: Settings | None = None,
    *,
    level: str | None = None,
    k: int | None = None,
    trace: str | None = None,
    ranker: str | None = None,
    log_functions: Iterable[str] = (),
    output_format: str | None = None,
    two_phase: bool | None = None,
    line_to_block: bool | None = None,
    log_format: str | None = None,
    prompt_style: str | None = None,
    prompt_budget: int | None = None,
    history_window: int | None = None,
    history_k: int | None = None,
    ranker_model: str | None = None,
) -> TriageOptions:
    """Defaults < settings < the caller's values (None = not given); validated, ``ValueError`` if bad.

    Log-function patterns add up: the caller's first, then the configured ones it did not repeat.
    """
    base = TriageOptions()
    if settings is not None:
        base = replace(
            base,
            level=settings.default_level,
            k=settings.default_k,
            trace=settings.default_trace,
            output_format=settings.output_format,
            log_format=settings.log_format or None,
            ranker_model=settings.ranker_model or None,
        )
    given = list(dict.fromkeys(log_functions))
    configured = settings.extra_log_functions() if settings is not None else []
    chosen = {
        "level": level,
        "k": k,
        "trace": trace,
        "ranker": ranker,
        "output_format": output_format,
        "two_phase": two_phase,
        "line_to_block": line_to_block,
        "log_format": log_format or None,
        "prompt_style": prompt_style,
        "prompt_budget": prompt_budget,
        "history_window": history_window,
        "history_k": history_k,
        "ranker_model": ranker_model or None,
    }
    options = replace(
        base,
        log_functions=(*given, *(p for p in configured if p not in given)),
        **{name: value for name, value in chosen.items() if value is not None},
    )
    return options.validated()
