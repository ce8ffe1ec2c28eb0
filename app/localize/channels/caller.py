"""The callers of the failing frame: where the fault often is when the failure surfaced deeper.

A traceback's innermost script frame is where the failure surfaced; when that frame is in a
helper many places call (a shared library function, a property), the helper is rarely wrong and
the caller passed it the wrong thing, or called it at the wrong moment. Each outer frame of the
last traceback is scored by its distance from the innermost (the immediate caller first); how
much that is worth, and when, is the ranker's model's business (the ``shared`` and ``upstream``
context columns).
"""

from __future__ import annotations

from app.localize.channels import Context, Scores, Signal, put
from app.localize.channels.traceback import Frames, frame_source

DECAY = 0.7  # each frame further out


def caller_scores(ctx: Context, frames: Frames) -> Scores:
    """Per statement, its nearest position as an outer frame of the failing traceback."""
    scores: Scores = {}
    for depth, sid in enumerate(frames.last[1:], start=1):
        source, line = frame_source(frames.sources.get(sid))
        put(
            scores,
            sid,
            Signal(DECAY ** (depth - 1), f"calls the failing code ({depth} frame(s) out)", source, line),
        )
    return scores


def shared_helper(ctx: Context, frames: Frames) -> bool:
    """The innermost frame is in a function the scripts call from two or more places."""
    if frames.innermost is None:
        return False
    function = ctx.statements[frames.innermost].function
    sites = ctx.analysis.parsed.sites if ctx.analysis.parsed is not None else {}
    return len(sites.get(function, ())) >= 2
