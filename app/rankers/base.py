"""What every ranker takes and gives: the analysis and rendered code in, picks out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from app.analysis.model import Analysis, Script
from app.analysis.render import Element, RenderedCode
from app.localize.evidence import Evidence
from app.localize.repair import PostprocessCounts
from app.options import TriageOptions

if TYPE_CHECKING:  # the history core (numpy) loads only where a history ranker runs
    from app.history.rank import HistoryRun


@dataclass(frozen=True)
class Prompt:
    """The prompt of a triage: the code as the model sees it and the chat messages holding it."""

    rendered: RenderedCode  # at the level asked of the model (lines for line_to_block)
    messages: tuple[dict[str, str], ...]

    @property
    def chars(self) -> int:
        return sum(len(m["content"]) for m in self.messages)

    @property
    def lines(self) -> int:
        return sum(m["content"].count("\n") + 1 for m in self.messages)


@dataclass(frozen=True)
class RankRequest:
    """One triage's static phase, done once, as every ranker reads it."""

    analysis: Analysis
    rendered: RenderedCode  # at the requested level: the elements a ranking may name
    prompt: Prompt
    options: TriageOptions
    # the heuristic's best picks for ``rendered``, computed ahead where the analysis ran (the
    # service's worker process), so ranking in the server does not redo that work
    heuristic: tuple[RenderedCode, tuple[Pick, ...]] | None = field(default=None, compare=False, repr=False)
    # earlier runs of the failing test and its siblings (oldest first), for the history ranker
    history: tuple[HistoryRun, ...] = field(default=(), compare=False, repr=False)
    test: str | None = None  # the failing test's key in the CI history, when the caller named one
    scripts: tuple[Script, ...] = field(default=(), compare=False, repr=False)  # the version triaged
    log: str = field(default="", compare=False, repr=False)  # the failure's log as given


@dataclass(frozen=True)
class Pick:
    element: Element
    score: float | None  # None for a model's own choice
    reason: str
    evidence: tuple[Evidence, ...] = ()  # typed records behind the pick, strongest first


@dataclass(frozen=True)
class RankAnswer:
    """A ranker's answer; ``name`` is the ranker whose picks these are (``heuristic`` after a fallback)."""

    name: str
    picks: tuple[Pick, ...]
    model: str | None = None
    tokens: tuple[int, int] | None = None  # (input, output) where a model counted them
    model_ms: float = 0.0
    counts: PostprocessCounts = field(default_factory=PostprocessCounts)
    warnings: tuple[str, ...] = ()
    fallback: str | None = None  # why the asked-for ranker did not answer (fully)
    ranker_model: str | None = None  # the built-in ranker's model file that scored the picks
    history_used: tuple[HistoryRun, ...] = ()  # the recorded runs fused into the picks, oldest first


class Ranker(Protocol):
    name: str

    async def rank(self, request: RankRequest, k: int) -> RankAnswer:
        """The ``k`` most suspicious elements of ``request.rendered``, best first (fewer is allowed)."""
        ...
