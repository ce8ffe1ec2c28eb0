"""Traceback frames in the scripts (FauxPy's stack-trace baseline) and where the failure surfaced.

The innermost frame of the *last* traceback is where the failure surfaced; outer frames are
mostly call lines, so they count far less; frames of earlier tracebacks (a cancelled test
followed by a failing tearDown) count less still.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.analysis.logparse.pyerrors import python_error
from app.analysis.model import Frame
from app.localize.channels import Context, Scores, Signal, put

OUTER_FRAME = 0.25  # an outer frame of the failing traceback, relative to its innermost frame
OUTER_DECAY = 0.8  # each further outer frame
EARLIER_TRACEBACK = 0.25  # the innermost frame of an earlier traceback
UPSTREAM_SITE = 0.4  # the innermost frame where the error only reveals an upstream fault
UPSTREAM = (
    "UnboundLocalError",
    "referenced before assignment",
    "'NoneType' object",
    "not NoneType",
    "cannot access local variable",
)
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Frames:
    """Script frames as statements: the failing traceback's innermost first, then earlier tracebacks."""

    ordered: tuple[int, ...]  # sids, innermost of the last traceback first, no repeats
    last: tuple[int, ...]  # sids of the last traceback's frames, innermost first
    sources: dict[int, Frame]

    @property
    def innermost(self) -> int | None:
        return self.last[0] if self.last else None


def frame_sid(ctx: Context, frame: Frame) -> int | None:
    """The statement a frame points at; by its printed source text when the line number is stale."""
    sid = ctx.sid_at(frame.path, frame.line)
    printed = _SPACES.sub(" ", frame.code or "").strip()
    if not printed or (sid is not None and _in_statement(ctx, sid, printed)):
        return sid
    same = [
        s.sid
        for s in ctx.statements
        if s.path == frame.path and printed in _SPACES.sub(" ", ctx.first_line(s.sid))
    ]
    named = [s for s in same if ctx.functions[ctx.statements[s].function].name == frame.function] or same
    if not named:
        return sid
    return min(named, key=lambda s: (abs(ctx.statements[s].start_line - frame.line), s))


def _in_statement(ctx: Context, sid: int, printed: str) -> bool:
    """The frame's printed source is part of the statement (any of its lines)."""
    stmt = ctx.statements[sid]
    lines = ctx.analysis.program.files[[f.path for f in ctx.analysis.program.files].index(stmt.path)].lines
    text = " ".join(lines[n - 1] for n in range(stmt.start_line, stmt.end_line + 1) if 0 < n <= len(lines))
    return printed in _SPACES.sub(" ", text)


def script_frames(ctx: Context) -> Frames:
    analysis = ctx.analysis
    found = [
        (frame.traceback, sid, frame)
        for frame in analysis.error_frames
        if (sid := frame_sid(ctx, frame)) is not None
    ]
    if not found and analysis.error_statements:
        found = [(0, sid, None) for sid in analysis.error_statements]  # type: ignore[misc]
    if not found:
        return Frames((), (), {})
    last_tb = max(tb for tb, _, _ in found)
    ordered: list[int] = []
    last: list[int] = []
    sources: dict[int, Frame] = {}
    for tb in sorted({tb for tb, _, _ in found}, reverse=True):
        for _, sid, frame in reversed([item for item in found if item[0] == tb]):
            if tb == last_tb and sid not in last:
                last.append(sid)
            if sid not in ordered:
                ordered.append(sid)
            if frame is not None:
                sources.setdefault(sid, frame)
    return Frames(tuple(ordered), tuple(last), sources)


def frame_source(frame: Frame | None) -> tuple[str | None, int | None]:
    if frame is None:
        return None, None
    where = f'File "{frame.path}", line {frame.line}' + (f", in {frame.function}" if frame.function else "")
    return where, frame.log_line or None


def reveals_upstream(ctx: Context) -> bool:
    """Errors that only reveal a fault made earlier: the value or definition came from elsewhere.

    A missing attribute of an object counts when the scripts do set it somewhere (it was not set on
    this path); one set nowhere is a wrong name at the failing line.
    """
    head = ctx.message[:2000]
    if any(phrase in head for phrase in UPSTREAM):
        return True
    error = python_error(head)
    if error.kind == "unbound-local" or error.none:
        return True
    if error.kind != "missing-attribute" or error.owner == "module" or not error.attribute:
        return False
    wanted = f"attr:{error.attribute}"
    return any(wanted in names for names in ctx.facts.defs.values())


def traceback_scores(ctx: Context, frames: Frames, check_site: int | None) -> Scores:
    """Per statement, the frame evidence; a deliberate check's raise, or a line that only reveals an
    upstream fault (``UnboundLocalError``, ``'NoneType' object ...``), counts half."""
    upstream = reveals_upstream(ctx)
    scores: Scores = {}
    analysis = ctx.analysis
    found = [
        (frame.traceback, sid)
        for frame in analysis.error_frames
        if (sid := frame_sid(ctx, frame)) is not None
    ]
    if not found:
        found = [(0, sid) for sid in analysis.error_statements]
    if not found:
        return scores
    last = max(tb for tb, _ in found)
    for tb in sorted({tb for tb, _ in found}):
        sids = [sid for t, sid in found if t == tb]  # outermost first
        for depth, sid in enumerate(reversed(sids)):
            source, line = frame_source(frames.sources.get(sid))
            if tb == last and depth == 0:
                value, why = 1.0, "traceback frame (innermost)"
                if sid == check_site:
                    value, why = 0.5, "traceback frame (innermost): the script's own check raised"
                elif upstream:
                    value, why = (
                        UPSTREAM_SITE,
                        "traceback frame (innermost): the failing value came from earlier code",
                    )
            elif tb == last:
                value, why = (
                    OUTER_FRAME * OUTER_DECAY ** (depth - 1),
                    f"traceback frame (outer, depth {depth})",
                )
            else:
                value, why = EARLIER_TRACEBACK * OUTER_DECAY**depth, "frame of an earlier traceback"
            put(scores, sid, Signal(value, why, source, line))
    return scores
