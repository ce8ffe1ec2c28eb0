"""The one options record of a triage, and the one place it is resolved.

Every entry point (CLI triage/trace/eval/batch, HTTP, dashboard) builds its options with
``resolve_options``: defaults < settings (environment, ``.env``) < what the caller asked for.
The analysis core reads no settings; it gets this record. The record is stored whole with each
result (``to_dict``/``from_dict``) so a stored triage says exactly how it was made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.analysis.model import resolve_variant

if TYPE_CHECKING:
    from app.settings import Settings

LEVELS: tuple[str, ...] = ("function", "block", "line")
OUTPUT_FORMATS: tuple[str, ...] = ("json_schema", "paper")
PROMPT_STYLES: tuple[str, ...] = ("full", "paper")  # as app.localize.prompts.PROMPT_STYLES
RANKERS: tuple[str, ...] = ("auto", "llm", "heuristic")  # the built-in names; app.rankers has them all
HISTORY_MODES: tuple[str, ...] = ("auto", "off")


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


def option(default: Any, help: str, **flag: Any) -> Any:
    """A field of the options record with what its command-line flag needs (``app/cli/flags.py``
    builds the flags from it): ``help``, and ``metavar``, ``choices``, ``type``, ``flag`` (the flag's
    name, when not ``--`` + the field name), ``model_only`` (only the model ranker reads it) or
    ``cli=False`` for fields no command line sets."""
    return field(default=default, metadata={"help": help, **flag})


@dataclass(frozen=True)
class TriageOptions:
    """How one triage runs: the one record every entry point resolves (``resolve_options``)."""

    level: str = option("block", "granularity of the ranking (default: block)", choices=LEVELS)
    k: int = option(5, "how many elements to rank (default: 5)", type=int, metavar="N", flag="-k")
    trace: str = option("tplus", "t0, tmin, tmid, tmax, tplus (default) or a variant name", metavar="VARIANT")
    # auto = the model when a client is given, else the heuristic; choices come from the registry
    ranker: str = option("auto", "auto (default) = the model when one is configured")
    log_functions: tuple[str, ...] = option(
        (),
        "extra log-function callee pattern, e.g. Log.log (repeatable)",
        flag="--log-function",
        metavar="PATTERN",
    )
    # "paper": the paper's free-form answers
    output_format: str = option(
        "json_schema", "json_schema (default) or paper", choices=OUTPUT_FORMATS, model_only=True
    )
    # paper VI-G: functions first, then blocks/lines inside the top ones
    two_phase: bool = option(
        False, "rank functions first, then elements inside the top ones", model_only=True
    )
    # paper VI-D: ask for lines, answer with their blocks
    line_to_block: bool = option(False, "block level: ask for lines, map them to blocks", model_only=True)
    # a known format name or a regex with (?P<msg>...); None = detect
    log_format: str | None = option(
        None,
        "log prefix format: a known name (avocado, python, ...) or a regex with (?P<msg>...)",
        metavar="NAME_OR_REGEX",
    )
    # evidence channels switched off (ablation)
    disabled_channels: frozenset[str] = option(frozenset(), "evidence channels switched off", cli=False)
    # "full": error, script frames and a log window; "paper": Figure 4 exactly
    prompt_style: str = option(
        "full",
        "full (default: error, script frames, log window) or paper (the error message alone)",
        choices=PROMPT_STYLES,
        model_only=True,
    )
    prompt_budget: int = option(
        400, "tokens of log context in the prompt (default 400)", type=int, metavar="TOKENS", model_only=True
    )
    history_window: int = option(
        30, "newest recorded runs of the test to read (default 30)", type=int, metavar="N"
    )
    history_k: int = option(
        0,
        "runs kept of those, chosen to cover and split what the failure ran (default 0: all)",
        type=int,
        metavar="N",
    )
    ranker_model: str | None = option(None, RANKER_MODEL_HELP, metavar="FILE")
    # "auto" fuses the test's recorded runs (when a test key is given and the ranker is a built-in
    # one), "off" never reads them
    history: str = option(
        "auto",
        "fuse the failing test's recorded CI runs into the ranking (built-in rankers; default auto)",
        choices=HISTORY_MODES,
    )
    # a failure is ranked with its past only: the runs that started before it (its CI job's start)
    history_before: str | None = option(
        None,
        "read only the test's runs recorded before this time, ISO 8601 (default: every run)",
        metavar="TIME",
    )

    def validated(self) -> TriageOptions:
        """A copy with the trace name made canonical; ``ValueError`` naming the bad option otherwise.

        Only the record's own rules: names that registries hold (rankers, channels, the ranker's
        model file, log formats) are checked by ``app.triage.check_options``, above those registries.
        """
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"k must be an integer >= 1, got {self.k!r}")
        if not isinstance(self.ranker, str) or not self.ranker:
            raise ValueError(f"ranker must be a ranker name, got {self.ranker!r}")
        if self.history not in HISTORY_MODES:
            raise ValueError(f"history must be one of {', '.join(HISTORY_MODES)}, got {self.history!r}")
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
        if self.ranker_model is not None and not isinstance(self.ranker_model, str):
            raise ValueError(f"ranker_model must be a file path, got {self.ranker_model!r}")
        if self.log_format is not None and not isinstance(self.log_format, str):
            raise ValueError(f"log_format must be a format name or a regex, got {self.log_format!r}")
        if isinstance(self.disabled_channels, str):
            raise ValueError("disabled_channels must be a set of channel names, not a single string")
        canonical = {
            "history_before": before_time(self.history_before),
            "trace": resolve_variant(self.trace),
            "log_functions": tuple(self.log_functions),
            "disabled_channels": frozenset(self.disabled_channels),
        }
        if all(
            getattr(self, name) == value and type(getattr(self, name)) is type(value)
            for name, value in canonical.items()
        ):
            return self  # already canonical (options validated twice: resolved, then checked)
        return replace(self, **canonical)

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


def before_time(value: Any) -> str | None:
    """``history_before`` in one form (ISO 8601 in UTC); ``ValueError`` for a value that is no time."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        when = value
    else:
        try:
            when = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"history_before must be an ISO 8601 time, got {value!r}") from None
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat()


def before_of(options: TriageOptions) -> datetime | None:
    """The time ``history_before`` names, or None (every recorded run)."""
    return None if options.history_before is None else datetime.fromisoformat(options.history_before)


OPTION_NAMES: frozenset[str] = frozenset(f.name for f in fields(TriageOptions))


def resolve_options(settings: Settings | None = None, /, **given: Any) -> TriageOptions:
    """Defaults < settings < the caller's values (None, "" or False = not given); validated,
    ``ValueError`` if bad, ``TypeError`` for a name the record does not have.

    Log-function patterns add up: the caller's first, then the configured ones it did not repeat.
    """
    unknown = sorted(set(given) - OPTION_NAMES)
    if unknown:
        raise TypeError(f"unknown option(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    if settings is not None:
        values.update(
            level=settings.default_level,
            k=settings.default_k,
            trace=settings.default_trace,
            output_format=settings.output_format,
            log_format=settings.log_format or None,
            ranker_model=settings.ranker_model or None,
        )
    asked = list(dict.fromkeys(given.pop("log_functions", None) or ()))
    configured = settings.extra_log_functions() if settings is not None else []
    chosen = {name: value for name, value in given.items() if value is not None and value is not False}
    chosen = {name: value for name, value in chosen.items() if value != "" or name not in _TEXT_OR_NONE}
    values["log_functions"] = (*asked, *(p for p in configured if p not in asked))
    values.update(chosen)
    # one record built from defaults < settings < given (a request's options are resolved per request)
    return TriageOptions(**values).validated()


_TEXT_OR_NONE = frozenset({"log_format", "ranker_model"})  # "" means not given
