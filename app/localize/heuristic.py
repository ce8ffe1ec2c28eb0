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
from app.localize.channels import Context, Scores, Signal
from app.localize.channels.dataflow import check_scores, checks_in_place, data_scores, guards, is_check
from app.localize.channels.exceptions import exception_scores, smell_scores
from app.localize.channels.lexical import bm25, code_tokens, normalized_bm25, query_tokens
from app.localize.channels.message import last_logged, message_scores, proximity_scores
from app.localize.channels.pseudo import pseudo_scores, structure_scores
from app.localize.channels.traceback import Frames, frame_source, script_frames, traceback_scores
from app.localize.channels.values import value_scores
from app.localize.evidence import Channel, Evidence

__all__ = [
    "WEIGHTS",
    "ScoredElement",
    "bm25",
    "code_tokens",
    "query_tokens",
    "rank_heuristic",
    "rank_stacktrace",
]

WEIGHTS: dict[Channel, float] = {
    Channel.TRACEBACK: 4.0,
    Channel.CHECK: 5.0,
    Channel.PSEUDO_ERROR: 3.0,
    Channel.MESSAGE: 3.0,
    Channel.DATA: 2.0,
    Channel.VALUE: 2.5,
    Channel.EXCEPTION: 2.0,
    Channel.SMELL: 2.0,
    Channel.LEXICAL: 1.0,
    Channel.PROXIMITY: 0.5,
    Channel.STRUCTURE: 0.3,
}
# Channels that say something about this failure; the others only order code when nothing does.
WEAK = frozenset({Channel.LEXICAL, Channel.PROXIMITY, Channel.STRUCTURE})
COMMENT_FACTOR = 0.25  # line level: a comment line may share words with the message but cannot fail
MAX_EVIDENCE = 8  # records kept per element


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


def _channel_scores(ctx: Context, rendered: RenderedCode, disabled: frozenset[str]) -> dict[Channel, Scores]:
    frames = script_frames(ctx)
    on = {c: str(c) not in disabled for c in Channel}
    message = message_scores(ctx) if on[Channel.MESSAGE] or on[Channel.PSEUDO_ERROR] else {}
    pseudo: Scores = {}
    site = frames.innermost
    if site is None:
        pseudo = pseudo_scores(ctx, message)
        if on[Channel.PSEUDO_ERROR] and pseudo:
            site = max(pseudo, key=lambda s: (pseudo[s].value, -s))
    check_site = site if on[Channel.CHECK] and site is not None and is_check(ctx, site) else None
    guarded = (
        check_site
        if check_site is not None and not checks_in_place(ctx, check_site) and guards(ctx, check_site)
        else None
    )
    scores: dict[Channel, Scores] = {
        Channel.TRACEBACK: traceback_scores(ctx, frames, guarded),
        Channel.PSEUDO_ERROR: pseudo,
        Channel.MESSAGE: message,
        Channel.CHECK: check_scores(ctx, check_site),
        Channel.DATA: data_scores(ctx, site),
        Channel.VALUE: value_scores(ctx),
        Channel.EXCEPTION: exception_scores(ctx, site),
        Channel.SMELL: smell_scores(ctx),
        Channel.PROXIMITY: proximity_scores(
            ctx, frames.ordered, site, last_logged(ctx), by_statement=rendered.level == "line"
        ),
    }
    if guarded is not None and guarded in scores[Channel.MESSAGE]:
        signal = scores[Channel.MESSAGE][guarded]  # the check's own message: where, not why
        scores[Channel.MESSAGE][guarded] = Signal(signal.value * 0.5, signal.detail, signal.source)
    if not any(scores[c] for c in scores if c not in WEAK and on[c]):
        scores[Channel.STRUCTURE] = structure_scores(ctx)
    return {c: s for c, s in scores.items() if on[c]}


def rank_heuristic(
    analysis: Analysis,
    rendered: RenderedCode,
    k: int,
    *,
    disabled: Iterable[str] = (),
    context: Context | None = None,
) -> list[ScoredElement]:
    """The ``k`` most suspicious elements of ``rendered``, best first; ``disabled`` names channels to skip."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    off = frozenset(disabled)
    ctx = context if context is not None else Context.build(analysis, rendered.variant)
    channels = _channel_scores(ctx, rendered, off)
    lexical = (
        normalized_bm25([code_tokens(e.code) for e in rendered.elements], ctx.message)
        if str(Channel.LEXICAL) not in off
        else [0.0] * len(rendered.elements)
    )
    statements = ctx.statements
    scored: list[tuple[float, int, ScoredElement]] = []
    for index, element in enumerate(rendered.elements):
        sids = sorted({s for s in (ctx.sid_at(element.path, n) for n in element.lines) if s is not None})
        evidence: list[Evidence] = []
        for channel, scores in channels.items():
            best = max((s for s in sids if s in scores), key=lambda s: scores[s].value, default=None)
            if best is None:
                continue
            signal = scores[best]
            evidence.append(
                Evidence(
                    channel,
                    WEIGHTS[channel] * signal.value,
                    statements[best].path,
                    statements[best].start_line,
                    signal.detail,
                    signal.source,
                    signal.source_line,
                )
            )
        if lexical[index] > 0:
            evidence.append(
                Evidence(
                    Channel.LEXICAL,
                    WEIGHTS[Channel.LEXICAL] * lexical[index],
                    element.path,
                    element.start_line,
                    f"shares words with the error message (BM25 {lexical[index]:.2f})",
                )
            )
        score = sum(e.weight for e in evidence)
        if rendered.level == "line" and element.code.lstrip().startswith("#"):
            score *= COMMENT_FACTOR
        evidence.sort(key=lambda e: -e.weight)
        reason = "; ".join(e.detail for e in evidence[:3]) or "no specific evidence"
        scored.append(
            (-score, index, ScoredElement(element, round(score, 4), reason, tuple(evidence[:MAX_EVIDENCE])))
        )
    scored.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in scored[:k]]


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
