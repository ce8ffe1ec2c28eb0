"""Which absences from the log are evidence.

Algorithm 1 reads "no message matched" as "not executed". That holds only where the log would
have shown the message: a trimmed log pasted from an issue (just the traceback) or a log kept at
INFO level says nothing about statements whose output it could never hold. The enhanced trace
uses this; faithful mode keeps the paper's reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

from app.analysis.echo import EXCEPTION_LINE
from app.analysis.logparse import LogMessages
from app.analysis.model import LogStatement, MatchResult, ParsedLog

LEVEL_RANK = {
    "DEBUG": 10,
    "INFO": 20,
    "WARNING": 30,
    "WARN": 30,
    "ERROR": 40,
    "EXCEPTION": 40,
    "CRITICAL": 50,
    "FATAL": 50,
}
_CALL_LEVEL = {
    "debug": "DEBUG",
    "info": "INFO",
    "warning": "WARNING",
    "warn": "WARNING",
    "error": "ERROR",
    "exception": "ERROR",
    "critical": "CRITICAL",
    "fatal": "CRITICAL",
}


@dataclass(frozen=True)
class Coverage:
    silent: frozenset[int]  # sids whose missing message proves nothing
    reasons: tuple[str, ...]


def call_level(callee: str) -> str | None:
    """The logging level a call writes at, from its method name (`logger.debug` -> DEBUG)."""
    return _CALL_LEVEL.get(callee.rsplit(".", 1)[-1].lower())


StaticLevels = tuple[tuple[int, int | None], ...]  # (sid, rank of its call's level or None)


def static_levels(statements: Sequence[LogStatement]) -> StaticLevels:
    """The static log statements that have a statement, each with the rank of the level its call
    writes at: what ``log_coverage`` reads of them, the same for every log of the same scripts."""
    return tuple(
        (s.sid, None if (lvl := call_level(s.callee)) is None else LEVEL_RANK[lvl])
        for s in statements
        if s.is_static and s.sid is not None
    )


def _holds_messages(match: MatchResult, log: ParsedLog) -> bool:
    """Whether a message of the log other than the error's own lines came from a log statement.

    The error's exception lines (which a generic template such as ``"Error: {}"`` matches) say
    nothing of how much of the log is there: a log holding only them is a trimmed one. The
    first message that is not one of them settles it, so a real log costs one look.
    """
    found = (match.exe - match.error_sids) | match.multi
    if not found:
        return False
    said = {
        text
        for line in log.error_message.splitlines()
        if EXCEPTION_LINE.match(text := " ".join(line.split()))
    }
    shown = log.messages
    return any(
        " ".join(shown[index].text.split()) not in said
        for index, sids in match.matches
        if not found.isdisjoint(sids)
    )


def log_coverage(
    statements: Sequence[LogStatement], match: MatchResult, log: ParsedLog, levels: StaticLevels | None = None
) -> Coverage:
    """The statements whose missing message proves nothing in this log; ``levels``: the
    statements' ``static_levels``, when the caller keeps them per parse."""
    static = static_levels(statements) if levels is None else levels
    unmatched = {sid for sid, _ in static if sid in match.nexe}
    if not unmatched:
        return Coverage(frozenset(), ())
    if not _holds_messages(match, log):
        return Coverage(
            frozenset(unmatched),
            (
                "no message in the log comes from the scripts' log statements (a trimmed log?): "
                "missing messages are not taken as not executed",
            ),
        )
    messages = log.messages
    written = messages.levels() if isinstance(messages, LogMessages) else [m.level for m in messages]
    levelled = [level for level in written if level]  # the column: no message objects made
    if len(levelled) < max(3, len(log.messages) // 2):
        return Coverage(frozenset(), ())
    lowest = min(map(LEVEL_RANK.get, map(str.upper, set(levelled)), repeat(20)))  # a few distinct levels
    silent = {sid for sid, rank in static if sid in unmatched and rank is not None and rank < lowest}
    if not silent:
        return Coverage(frozenset(), ())
    name = min((k for k, v in LEVEL_RANK.items() if v == lowest), key=len)
    return Coverage(
        frozenset(silent),
        (
            f"the log holds no message below {name}: {len(silent)} lower-level log statements are not "
            "taken as not executed",
        ),
    )
