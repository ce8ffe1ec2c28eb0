"""The built-in ranker: deterministic evidence from the whole failure, channel by channel.

It is the default when no model server is configured and the baseline every model ranking is
compared with, so it only uses evidence that generalizes across test suites. Each channel
(``app.localize.channels``) scores statements in [0, 1]; an element takes each channel's best
statement, weighted by ``WEIGHTS``; ties keep source order. Every element carries its evidence as
typed ``Evidence`` records, strongest first, and a reason made from them.

Channels: traceback frames; pseudo error sites when no frame is in the scripts; deliberate
checks (their guards and checked values); data dependence; runtime values in the log traced to
literals (value provenance); the exception's kind mapped to the code that should have prevented
it, and code smells; literal text quoted by the error message; proximity in execution order;
lexical similarity (BM25). With no evidence at all, structure ranks (test bodies, checks, calls)
and the answer is a guess (``evidence_found`` false).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from app.analysis.model import Analysis
from app.analysis.render import Element, RenderedCode
from app.localize.channels import Context
from app.localize.channels.lexical import bm25, code_tokens, query_tokens
from app.localize.channels.priors import describe
from app.localize.channels.traceback import Frames, frame_source, script_frames
from app.localize.evidence import Channel, Evidence
from app.localize.features import WEAK, ChannelTable, channel_table
from app.localize.model_file import WEIGHTS, LevelModel

__all__ = [
    "WEIGHTS",
    "ScoredElement",
    "bm25",
    "code_tokens",
    "query_tokens",
    "rank_heuristic",
    "rank_stacktrace",
    "rank_table",
]

COMMENT_FACTOR = 0.25  # line level: a comment line may share words with the message but cannot fail
MAX_EVIDENCE = 8  # records kept per element
SAFETY_RANK = 3  # the stack trace's first element is never ranked below this ("never worse than a trace")


def has_evidence(evidence: Iterable[Evidence]) -> bool:
    """Some channel other than the weak ones (lexical, proximity, structure) points here."""
    return any(e.channel not in WEAK for e in evidence)


@dataclass(frozen=True)
class ScoredElement:
    """An element, its score and the evidence behind it (strongest first)."""

    element: Element
    score: float
    reason: str
    evidence: tuple[Evidence, ...] = field(default=(), compare=False, hash=False)

    @property
    def has_evidence(self) -> bool:
        """Some channel other than the weak ones points at this element."""
        return has_evidence(self.evidence)


def rank_heuristic(
    analysis: Analysis,
    rendered: RenderedCode,
    k: int,
    *,
    disabled: Iterable[str] = (),
    context: Context | None = None,
    model: LevelModel | None = None,
) -> list[ScoredElement]:
    """The ``k`` most suspicious elements of ``rendered``, best first; ``disabled`` names channels to skip.

    ``model`` None weighs channels with the hand-set ``WEIGHTS``; a model's weights also hold the
    stack trace's first element in the top ``SAFETY_RANK`` (unless the traceback channel is off).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    off = frozenset(disabled)
    table = channel_table(analysis, rendered, disabled=off, context=context)
    weights = WEIGHTS if model is None else model.channel_weights(table.context)
    priors = None if model is None else model.prior_weights()
    safety = model is not None and str(Channel.TRACEBACK) not in off
    return rank_table(table, weights, safety=safety, priors=priors)[:k]


def rank_table(
    table: ChannelTable,
    weights: dict[Channel, float],
    *,
    safety: bool,
    priors: dict[str, float] | None = None,
) -> list[ScoredElement]:
    """Every element of ``table``, best first, scored with per-channel ``weights`` and per-prior
    ``priors`` (ties: source order).

    A channel's record weighs its weight times its value; a negative or zero contribution of a
    channel that fired is counted in the score but not shown as evidence. The priors that raise
    an element make one record.
    """
    scored: list[tuple[float, int, ScoredElement]] = []
    for index, row in enumerate(table.elements):
        element = row.element
        evidence: list[Evidence] = []
        contributions: list[float] = []
        for channel, hit in row.hits:
            weight = weights.get(channel, 0.0) * hit.value
            contributions.append(weight)
            if weight > 0 or (weight == 0 and hit.value == 0):
                evidence.append(
                    Evidence(channel, weight, hit.path, hit.line, hit.detail, hit.source, hit.source_line)
                )
        if priors and row.priors:
            raised = [(name, priors.get(name, 0.0) * value) for name, value in row.priors]
            total = sum(weight for _, weight in raised)
            contributions.append(total)
            if total > 0:
                evidence.append(
                    Evidence(Channel.PRIOR, total, element.path, element.start_line, describe(raised))
                )
        score = sum(contributions)
        if table.level == "line" and element.code.lstrip().startswith("#"):
            score *= COMMENT_FACTOR
        evidence.sort(key=lambda e: -e.weight)
        reason = "; ".join(e.detail for e in evidence[:3]) or "no specific evidence"
        scored.append(
            (-score, index, ScoredElement(element, round(score, 4), reason, tuple(evidence[:MAX_EVIDENCE])))
        )
    scored.sort(key=lambda item: (item[0], item[1]))
    ranked = [item[2] for item in scored]
    if safety and table.innermost is not None:
        at = next(i for i, (_, index, _) in enumerate(scored) if index == table.innermost)
        if at >= SAFETY_RANK:
            held = ranked.pop(at)
            why = f"the stack trace's first element, held in the top {SAFETY_RANK}"
            ranked.insert(
                SAFETY_RANK - 1,
                ScoredElement(held.element, held.score, f"{why}; {held.reason}", held.evidence),
            )
    return ranked


def rank_stacktrace(
    analysis: Analysis, rendered: RenderedCode, k: int, *, context: Context | None = None
) -> list[ScoredElement]:
    """Stack-trace baseline: innermost script frame first, outer and earlier frames next, then source."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ctx = context if context is not None else Context.build(analysis, rendered.variant)
    frames: Frames = script_frames(ctx)
    order = {sid: rank for rank, sid in enumerate(frames.ordered)}
    statements = ctx.statements
    scored: list[tuple[int, int, ScoredElement]] = []
    for index, element in enumerate(rendered.elements):
        sids = [s for s in (ctx.sid_at(element.path, n) for n in element.lines) if s is not None]
        ranks = [(order[s], s) for s in sids if s in order]
        if not ranks:
            scored.append((len(order), index, ScoredElement(element, 0.0, "source order", ())))
            continue
        rank, sid = min(ranks)
        source, line = frame_source(frames.sources.get(sid))
        detail = (
            "traceback frame (innermost)" if rank == 0 else f"traceback frame {rank + 1} from the innermost"
        )
        value = 1.0 / (1 + rank)
        evidence = Evidence(
            Channel.TRACEBACK, value, statements[sid].path, statements[sid].start_line, detail, source, line
        )
        scored.append((rank, index, ScoredElement(element, round(value, 4), detail, (evidence,))))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in scored[:k]]
