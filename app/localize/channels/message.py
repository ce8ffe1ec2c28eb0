"""Literal text of the code quoted by the error message, and proximity in execution order.

A string literal of the code (its static pieces, around %s/{} holes) that occurs in the error
message produced it: a failing command, an assertion or fail() message. Pieces near the start of
the message (its headline) count more. Proximity: code that ran shortly before the failure
(earlier blocks of the failing function, the callees those blocks called) is likelier than
distant code.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from app.analysis.model import Block, Loc
from app.localize.channels import Context, Scores, Signal, put
from app.localize.channels.facts import Facts, build_facts

if TYPE_CHECKING:
    from collections.abc import Sequence

    from app.analysis.parsed import ParsedScripts

HEADLINE_SLOPE = 0.5  # a literal found at the end of the error message counts half as much as at its start
LOGGED_LITERAL = 0.5  # text of a log/context statement: where execution was, not what failed
CONTEXT_CALLS = frozenset({"context", "step", "section"})  # avocado-vt error.context() and the like
CALLEE_PROXIMITY = 0.9  # a callee of a nearby statement ran just before the failure too
MAX_MESSAGE = 20_000
_SPACES = re.compile(r"\s+")


def logging_sids(ctx: Context) -> frozenset[int]:
    found = {ls.sid for ls in ctx.analysis.log_statements if ls.sid is not None}
    return frozenset(found | _message_facts(ctx)[1])


def message_scores(ctx: Context) -> Scores:
    """Statements with a literal piece found in the message; earlier in the message = higher."""
    text = _SPACES.sub(" ", ctx.message[:MAX_MESSAGE])
    scores: Scores = {}
    if not text.strip():
        return scores
    logged = logging_sids(ctx)
    headline = ctx.message.strip().splitlines()[0][:200] if ctx.message.strip() else None
    find = text.find
    for sid, piece, spaced in _message_facts(ctx)[0]:
        at = find(spaced)
        if at < 0:  # most pieces: the loop is over every literal of the scripts
            continue
        value = (1.0 - HEADLINE_SLOPE * at / len(text)) * (LOGGED_LITERAL if sid in logged else 1.0)
        shown = piece if len(piece) <= 40 else piece[:37] + "..."
        what = "its log text" if sid in logged else "its text"
        put(scores, sid, Signal(value, f"{what} {shown!r} is in the error message", headline))
    return scores


MessageFacts = tuple[tuple[tuple[int, str, str], ...], frozenset[int]]


def _message_facts(ctx: Context) -> MessageFacts:
    """Each literal piece as (statement, piece, the piece with its runs of white space made one
    space), in statement order, and the statements calling a context function: script-only, so
    once per parse, not per failure; flat, as each failure scans every piece."""
    return ctx.per_parse(_parse_message_facts, lambda: _facts_of(ctx.facts))


def _parse_message_facts(parsed: ParsedScripts) -> MessageFacts:
    return _facts_of(parsed.derived(build_facts))


def _facts_of(facts: Facts) -> MessageFacts:
    spaced = tuple(
        (sid, piece, _SPACES.sub(" ", piece)) for sid, pieces in facts.literals.items() for piece in pieces
    )
    context = frozenset(
        sid for sid, calls in facts.calls.items() if any(c.callee in CONTEXT_CALLS for c in calls)
    )
    return spaced, context


def proximity_scores(
    ctx: Context, frames: tuple[int, ...], innermost: int | None, anchor: int | None, *, by_statement: bool
) -> Scores:
    """1 / (1 + blocks, or statements at line level, between) for kept code that ran just before the failure.

    With traceback frames, "just before" is backwards from each frame in its function (outer
    frames at half weight). Without any, the failure came after ``anchor`` (the last log message
    that matched exactly one statement): code after it in its function is suspected.
    """
    statements = ctx.statements
    block_of = {} if by_statement else ctx.per_parse(_parse_block_of, lambda: _block_of(ctx.analysis.blocks))
    frame_functions = {statements[sid].function for sid in frames}
    scores: Scores = {}

    def spread(origin: int, scale: float, forward: bool) -> None:
        stop = statements[origin]
        ran = sorted(
            (
                s
                for s in ctx.functions[stop.function].statements
                if Loc(stop.path, statements[s].start_line) in ctx.kept
                and (
                    statements[s].start_line >= stop.start_line
                    if forward
                    else statements[s].start_line <= stop.start_line
                )
            ),
            key=lambda s: statements[s].start_line,
        )
        position: dict[int, int] = {}
        for s in ran:
            position.setdefault(block_of.get(s, -1 - s), len(position))
        here = position.get(block_of.get(origin, -1 - origin), 0 if forward else len(position) - 1)
        for s in ran:
            value = scale / (1 + abs(position[block_of.get(s, -1 - s)] - here))
            if not forward or s != origin:  # the anchor is a log statement: it ran, it did not fail
                put(scores, s, Signal(value, "ran shortly before the failure"))
            for call in ctx.facts.calls.get(s, ()) if s != origin or forward else ():
                for fid in ctx.by_name.get(call.callee, ()):
                    if fid not in frame_functions:
                        for callee in ctx.functions[fid].statements:
                            put(
                                scores,
                                callee,
                                Signal(value * CALLEE_PROXIMITY, "ran shortly before the failure"),
                            )

    for sid in frames:
        spread(sid, 1.0 if sid == innermost else 0.5, forward=False)
    if innermost is None and anchor is not None:
        spread(anchor, 1.0, forward=True)
    return scores


def _block_of(blocks: Sequence[Block]) -> dict[int, int]:
    """Each statement's block id."""
    return {sid: b.bid for b in blocks for sid in b.sids}


def _parse_block_of(parsed: ParsedScripts) -> dict[int, int]:
    return _block_of(parsed.blocks)  # an analysis sharing the parse has the parse's blocks


def last_logged(ctx: Context) -> int | None:
    """The statement that printed the last log message matching exactly one statement."""
    unique = [(index, sids[0]) for index, sids in ctx.analysis.match.matches if len(sids) == 1]
    return max(unique)[1] if unique else None
