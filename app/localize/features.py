"""Per-element channel values and the feature vectors the built-in ranker's model scores.

``channel_table`` runs every evidence channel once and keeps, per rendered element, each
channel's best statement and its raw value in [0, 1] (LEXICAL: normalized BM25): the numbers the
hand-set weights and a learned model both weigh; and the element's priors (what it is, whatever
the failure says: ``app.localize.channels.priors``). ``features`` turns them into named columns:
one per channel, one per channel and context (``traceback*frame``), the context being what
changes how much a channel is worth in this failure (a script frame, a failing check, a long
log), and one per prior (``prior:size``). Pure: no I/O, no numpy (it runs on the triage path).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from app.analysis.gcpause import gc_paused
from app.analysis.model import Analysis
from app.analysis.render import Element, RenderedCode
from app.localize.channels import Context, Scores, Signal
from app.localize.channels.caller import caller_scores, shared_helper
from app.localize.channels.dataflow import check_scores, checks_in_place, data_scores, guards, is_check
from app.localize.channels.echo import echo_scores
from app.localize.channels.exceptions import exception_scores, smell_scores
from app.localize.channels.lexical import code_tokens, normalized_bm25
from app.localize.channels.message import last_logged, message_scores, proximity_scores
from app.localize.channels.priors import PRIORS, FailureWords, element_priors
from app.localize.channels.pseudo import pseudo_scores, structure_scores
from app.localize.channels.traceback import Frames, reveals_upstream, script_frames, traceback_scores
from app.localize.channels.values import value_scores
from app.localize.evidence import HEURISTIC_CHANNELS, Channel

# Channels that say something about this failure; the others only order code when nothing does.
WEAK = frozenset({Channel.LEXICAL, Channel.PROXIMITY, Channel.STRUCTURE, Channel.PRIOR})
# Channels only a learned model weighs (the hand-set weights predate them): they never stand in for
# the hand-set channels' evidence, so the hand-set ranking is what it was.
LEARNED_ONLY = frozenset({Channel.ECHO, Channel.CALLER, Channel.PRIOR})
# frame: a traceback frame lies in the scripts; check: the script's own check raised; long_log: the
# log's size; shared: the innermost frame's function is called from several places (a helper);
# upstream: the error only reveals a value made earlier (None, unbound, unset attribute)
CONTEXTS: tuple[str, ...] = ("frame", "check", "long_log", "shared", "upstream")
LONG_LOG_DECADES = 4.0  # long_log = log10(1 + messages) / 4: 1.0 from 10,000 messages on
CHANNEL_FEATURES: tuple[str, ...] = tuple(str(c) for c in HEURISTIC_CHANNELS if c is not Channel.PRIOR)
PRIOR_FEATURES: tuple[str, ...] = tuple(f"{Channel.PRIOR}:{name}" for name in PRIORS)
FEATURES: tuple[str, ...] = (
    *CHANNEL_FEATURES,
    *(f"{c}*{x}" for c in CHANNEL_FEATURES for x in CONTEXTS),
    *PRIOR_FEATURES,
)


def feature_channel(name: str) -> str:
    """The channel a feature column belongs to (``traceback*frame`` -> traceback, ``prior:size`` -> prior)."""
    return name.partition("*")[0].partition(":")[0]


@dataclass(frozen=True, slots=True)
class Hit:
    """One channel's best statement in an element: its raw value and where the evidence points."""

    value: float
    path: str
    line: int
    detail: str
    source: str | None = None
    source_line: int | None = None


@dataclass(frozen=True)
class ElementChannels:
    element: Element
    hits: tuple[tuple[Channel, Hit], ...]  # in the order the ranker sums them
    priors: tuple[tuple[str, float], ...] = ()  # the element's non-zero priors, by name


@dataclass(frozen=True)
class ChannelTable:
    """Every element's channel values, the failure's context, and the stack trace's first element."""

    level: str
    elements: tuple[ElementChannels, ...]
    context: dict[str, float]  # frame, check, long_log in [0, 1]
    innermost: int | None  # index of the element holding the innermost script frame (stack trace's top)


def _channel_scores(
    ctx: Context,
    rendered: RenderedCode,
    disabled: frozenset[str],
    frames: Frames,
) -> tuple[dict[Channel, Scores], int | None]:
    """Per channel, per statement, the best signal; and the error site (a frame or a pseudo site)."""
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
        Channel.EXCEPTION: exception_scores(ctx, site, framed=frames.innermost is not None),
        Channel.SMELL: smell_scores(ctx),
        Channel.PROXIMITY: proximity_scores(
            ctx, frames.ordered, site, last_logged(ctx), by_statement=rendered.level == "line"
        ),
        Channel.ECHO: echo_scores(ctx) if on[Channel.ECHO] else {},
        Channel.CALLER: caller_scores(ctx, frames) if on[Channel.CALLER] else {},
    }
    if guarded is not None and guarded in scores[Channel.MESSAGE]:
        signal = scores[Channel.MESSAGE][guarded]  # the check's own message: where, not why
        scores[Channel.MESSAGE][guarded] = Signal(signal.value * 0.5, signal.detail, signal.source)
    if not any(scores[c] for c in scores if c not in WEAK and c not in LEARNED_ONLY and on[c]):
        scores[Channel.STRUCTURE] = structure_scores(ctx)
    return {c: s for c, s in scores.items() if on[c]}, site


def channel_table(
    analysis: Analysis,
    rendered: RenderedCode,
    *,
    disabled: Iterable[str] = (),
    context: Context | None = None,
) -> ChannelTable:
    """Each element's best signal per channel (``disabled`` channels skipped) and the failure's context."""
    with gc_paused():  # as the analysis: many small acyclic records (a script's facts, its walks)
        return _channel_table(analysis, rendered, frozenset(disabled), context)


def _channel_table(
    analysis: Analysis, rendered: RenderedCode, off: frozenset[str], context: Context | None
) -> ChannelTable:
    ctx = context if context is not None else Context.build(analysis, rendered.variant)
    frames = script_frames(ctx)
    channels, site = _channel_scores(ctx, rendered, off, frames)
    lexical = (
        normalized_bm25([code_tokens(e.code) for e in rendered.elements], ctx.message)
        if str(Channel.LEXICAL) not in off
        else [0.0] * len(rendered.elements)
    )
    top = frames.ordered[0] if frames.ordered else None  # what the stack-trace baseline puts first
    words = FailureWords.read(ctx) if str(Channel.PRIOR) not in off else None
    statements = ctx.statements
    rows: list[ElementChannels] = []
    innermost: int | None = None
    for index, element in enumerate(rendered.elements):
        sids = sorted({s for s in (ctx.sid_at(element.path, n) for n in element.lines) if s is not None})
        if innermost is None and top is not None and top in sids:
            innermost = index
        hits: list[tuple[Channel, Hit]] = []
        for channel, scores in channels.items():
            best = max((s for s in sids if s in scores), key=lambda s: scores[s].value, default=None)
            if best is None:
                continue
            signal = scores[best]
            stmt = statements[best]
            hit = Hit(
                signal.value, stmt.path, stmt.start_line, signal.detail, signal.source, signal.source_line
            )
            hits.append((channel, hit))
        if lexical[index] > 0:
            detail = f"shares words with the error message (BM25 {lexical[index]:.2f})"
            hits.append((Channel.LEXICAL, Hit(lexical[index], element.path, element.start_line, detail)))
        priors = () if words is None else tuple(element_priors(ctx, element, sids, words).items())
        rows.append(ElementChannels(element, tuple(hits), priors))
    return ChannelTable(rendered.level, tuple(rows), failure_context(ctx, frames, site), innermost)


def failure_context(ctx: Context, frames: Frames, site: int | None) -> dict[str, float]:
    """The context columns: a script frame, the error raised by the script's own check, the log's size."""
    messages = len(ctx.analysis.log.messages)
    return {
        "frame": 1.0 if frames.innermost is not None else 0.0,
        "check": 1.0 if site is not None and is_check(ctx, site) else 0.0,
        "long_log": min(1.0, math.log10(1 + messages) / LONG_LOG_DECADES),
        "shared": 1.0 if shared_helper(ctx, frames) else 0.0,
        "upstream": 1.0 if frames.innermost is not None and reveals_upstream(ctx) else 0.0,
    }


def features(row: ElementChannels, context: dict[str, float]) -> dict[str, float]:
    """The element's non-zero feature columns: each channel's value and its products with the context,
    and its priors."""
    out: dict[str, float] = {f"{Channel.PRIOR}:{name}": value for name, value in row.priors}
    for channel, hit in row.hits:
        if hit.value == 0:
            continue
        name = str(channel)
        out[name] = hit.value
        for x in CONTEXTS:
            if context[x]:
                out[f"{name}*{x}"] = hit.value * context[x]
    return out
