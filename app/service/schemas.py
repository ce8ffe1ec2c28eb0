"""HTTP request and response bodies (pydantic v2); their descriptions and examples feed ``/docs``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.analysis.logparse import KNOWN_FORMATS
from app.analysis.model import VARIANTS, resolve_variant

_EXAMPLES = Path(__file__).parent / "examples"
RUNNING_EXAMPLE: dict[str, Any] = {
    "scripts": [
        {
            "path": "test_example.py",
            "content": (_EXAMPLES / "running_example_script.txt").read_text(encoding="utf-8"),
        }
    ],
    "log": (_EXAMPLES / "running_example_log.txt").read_text(encoding="utf-8"),
    "level": "block",
    "k": 3,
    "trace": "tplus",
    "ranker": "heuristic",
    "log_functions": ["Log.log"],
    "test_id": "running-example",
}

Level = Literal["function", "block", "line"]
Ranker = Literal["auto", "llm", "heuristic"]
Status = Literal["queued", "running", "done", "failed"]


def _check_unicode(value: str) -> str:
    """JSON may carry lone surrogates (\\ud800); they cannot be stored or analysed as text."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"not valid Unicode text (lone surrogate at position {exc.start})") from None
    return value


def _check_label(value: str | None) -> str | None:
    """Paths and labels are stored as plain text columns, which cannot hold NUL."""
    if value is None:
        return None
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return _check_unicode(value)


class ScriptIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        min_length=1,
        max_length=1024,
        description="Path of the test file as the failing run saw it; traceback paths match it by suffix.",
    )
    content: str = Field(description="The file's full source text.")

    _path = field_validator("path")(_check_label)
    _content = field_validator("content")(_check_unicode)


class HistoryWindow(BaseModel):
    """How much CI history a triage reads: the newest ``window`` runs, ``k`` of them kept (0 = all)."""

    model_config = ConfigDict(extra="forbid")

    window: int | None = Field(None, ge=1, le=500, description="Newest runs read; default 30.")
    k: int | None = Field(None, ge=0, le=500, description="Runs kept by FDC selection; 0 = all.")


class OptionsIn(BaseModel):
    """How to triage, as a caller may ask it (``POST /v1/triage`` and ``POST /v1/ingest`` alike)."""

    model_config = ConfigDict(extra="forbid")

    level: Level | None = Field(
        None, description="Granularity of the ranking; default from TCFL_DEFAULT_LEVEL."
    )
    k: int | None = Field(
        None, ge=1, le=1000, description="How many elements to rank; default TCFL_DEFAULT_K."
    )
    trace: str | None = Field(
        None,
        description=f"Trace variant used to prune the code: one of {', '.join(VARIANTS)} "
        "or the shortcuts t0, tmin, tmid, tmax; default TCFL_DEFAULT_TRACE.",
    )
    ranker: Ranker | None = Field(
        None,
        description="llm (model server), heuristic (built in), or auto (llm when configured); default auto.",
    )
    log_functions: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="Extra log-function patterns (e.g. Log.log), added to TCFL_LOG_FUNCTIONS.",
    )
    history_before: datetime | None = Field(
        None,
        description="With a test: read only its runs recorded before this time (ISO 8601), so a "
        "failure is ranked with its past; default every recorded run.",
    )
    log_format: str | None = Field(
        None,
        max_length=40,
        description="Log prefix format: one of "
        f"{', '.join((*KNOWN_FORMATS, 'plain'))}; default TCFL_LOG_FORMAT, else detected from the log.",
    )

    @field_validator("trace")
    @classmethod
    def _known_trace(cls, value: str | None) -> str | None:
        return None if value is None else resolve_variant(value)

    @field_validator("log_format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        # requests name a format; a custom regex is the operator's (TCFL_LOG_FORMAT), never a caller's
        if value is not None and value not in (*KNOWN_FORMATS, "plain", "auto"):
            raise ValueError(f"log_format must be one of {', '.join((*KNOWN_FORMATS, 'plain', 'auto'))}")
        return value

    @field_validator("log_functions")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            _check_unicode(pattern)
            if not pattern.strip() or len(pattern) > 200:
                raise ValueError("log function patterns must be non-empty and at most 200 characters")
        return value


OPTION_FIELDS: frozenset[str] = frozenset(OptionsIn.model_fields)  # each one a field of TriageOptions


class TriageRequest(OptionsIn):
    """One failing test: its script(s) and the log of the failed run."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [RUNNING_EXAMPLE]})

    scripts: list[ScriptIn] = Field(
        min_length=1, description="The test script and any helper modules it uses (at least one)."
    )
    log: str = Field(
        description="The failure log of the run, as produced (prefixes and tracebacks included)."
    )
    test_id: str | None = Field(
        None,
        max_length=200,
        description="Your label for the test (CI job, test name); filterable in listings.",
    )

    test: str | None = Field(
        None,
        max_length=1100,
        description="The failing test's key in the CI history (POST /v1/runs, tcfl ci --db): its "
        "recorded runs are fused into the ranking (history ranker) unless history is off.",
    )
    history: Literal["auto", "off"] | HistoryWindow | None = Field(
        None,
        description='With test: "auto" (default), "off", or {"window": n, "k": n}; batch items too.',
    )

    _log = field_validator("log")(_check_unicode)
    _test_id = field_validator("test_id")(_check_label)
    _test = field_validator("test")(_check_label)


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"cases": [RUNNING_EXAMPLE]}]})

    cases: list[TriageRequest] = Field(
        min_length=1, description="Triage request bodies, processed in the background in this order."
    )


class RankedElement(BaseModel):
    model_config = ConfigDict(extra="allow")

    rank: int
    id: str = Field(description="Element ID: a function name, 'BLOCK n', or a line ID.")
    path: str
    start_line: int
    end_line: int
    code: str | None = None
    score: float | None = None
    reason: str | None = None


class StoredTriage(BaseModel):
    """A stored triage. ``ranking`` and the analysis fields are present once ``status`` is ``done``."""

    model_config = ConfigDict(extra="allow")

    id: int = Field(description="Use with GET /v1/triage/{id}.")
    status: Status
    test_id: str | None = None
    created_at: str | None = None
    error_message: str | None = Field(None, description="The failure's error message, taken from the log.")
    ranker: str | None = Field(None, description="Ranker actually used: llm or heuristic.")
    model: str | None = None
    fallback_reason: str | None = Field(None, description="Why the LLM was not used when it was asked for.")
    level: str | None = None
    k: int | None = None
    trace: dict[str, Any] | None = Field(None, description="variant, pruning_rate, kept_lines, total_lines")
    ranking: list[RankedElement] | None = None
    tokens: dict[str, Any] | None = None
    timings: dict[str, Any] | None = Field(None, description="static_ms, model_ms, total_ms")
    warnings: list[str] | None = None
    error: str | None = Field(None, description="Why the triage failed (status failed).")


class TriageSummary(BaseModel):
    id: int
    status: Status
    test_id: str | None
    created_at: str | None
    level: str | None
    k: int | None
    trace: str | None
    ranker: str | None
    error: str | None


class TriagePage(BaseModel):
    items: list[TriageSummary]
    next_cursor: int | None = Field(
        description="Pass as ?cursor= for the next (older) page; null at the end."
    )


class BatchItem(BaseModel):
    index: int
    status: Status
    result_id: int | None = Field(
        description="Triage id of the item's result (GET /v1/triage/{id}) once done."
    )
    error: str | None
    attempts: int


class BatchCreated(BaseModel):
    id: int
    status: Literal["queued", "running", "done"]
    total: int


class BatchSummary(BaseModel):
    id: int
    status: Literal["queued", "running", "done"]
    source: str
    created_at: str | None
    total: int
    queued: int
    running: int
    done: int
    failed: int


class BatchDetail(BatchSummary):
    items: list[BatchItem]


class BatchPage(BaseModel):
    items: list[BatchSummary]


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    database: str = Field(description="ok, or the error")
    model_server: str = Field(description="not configured, ok, or unreachable")
    worker: str = Field(description="running, off, or stopped")
    model_circuit: str = Field(
        "not configured",
        description="closed, open (model calls paused for a cool-down after failures), or half-open",
    )
    model_detail: str = Field("", description="Why the model server is not being called, when it is not")
    analysis_workers: int = Field(0, description="Analysis worker processes")
    analysis_busy: int = Field(0, description="Analysis workers running a request now")
