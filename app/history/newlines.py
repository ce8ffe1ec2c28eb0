"""Lines that only failures print: a failure's log messages whose masked text no passing run of
the test ever printed (README, "CI history": the failure page's "new" lines).

A line is compared with run-specific tokens masked (``app.history.signatures.mask``: numbers,
ids, paths, times), so the same statement printing another count is not new, and a statement
the passes never reached, or one printing words they never printed, is. The page lists the
failure's new lines as printed (``new_lines``); the evidence channel compares the messages its
log statements printed, prefix stripped (``app.analysis.logparse``), with the passes' messages
(``statement_messages``, ``newline_scores``). Pure: logs in, line numbers and statements out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.analysis.logparse import parse_log
from app.analysis.model import Analysis, Loc
from app.history.signatures import mask

MAX_PASS_LOGS = 10  # newest passing runs whose logs are read for one failure
MAX_MESSAGE = 2000  # characters of a message compared (a longer one is cut, as a person would)


def masked(text: str) -> str:
    return mask(text[:MAX_MESSAGE])


def printed(log: str) -> frozenset[str]:
    """Every message a log holds, masked."""
    return frozenset(masked(t) for t in parse_log(log).messages.texts() if t.strip())


def raw_lines(log: str) -> frozenset[str]:
    """Every non-blank line of a log as printed (prefix and all), masked."""
    return frozenset(masked(line.strip()) for line in log.splitlines() if line.strip())


def new_lines(log: str, pass_logs: Sequence[str]) -> tuple[int, ...] | None:
    """The 1-based lines of the failure's log whose masked text no passing log holds (its error
    and traceback among them, and whatever only the failure printed); None without a passing log
    to compare with. What a person reads first on the failure page."""
    if not pass_logs:
        return None
    seen: set[str] = set()
    for other in pass_logs[-MAX_PASS_LOGS:]:
        seen |= raw_lines(other)
    return tuple(
        n for n, line in enumerate(log.splitlines(), 1) if line.strip() and masked(line.strip()) not in seen
    )


def statement_messages(analysis: Analysis) -> tuple[tuple[str, tuple[Loc, ...], float], ...]:
    """Each message the failure's log statements printed (masked), with the lines of each
    statement it matched and that statement's share of it (a message several statements could
    have printed shares itself among them): what the new-lines channel scores."""
    statements = analysis.program.statements
    messages = analysis.log.messages
    out = []
    for index, sids in analysis.match.matches:
        text = masked(messages[index].text)
        for sid in sids:
            st = statements[sid]
            out.append(
                (text, tuple(Loc(st.path, n) for n in range(st.start_line, st.end_line + 1)), 1 / len(sids))
            )
    return tuple(out)


def newline_scores(
    printed_by_statements: Sequence[tuple[str, tuple[Loc, ...], float]], seen: frozenset[str]
) -> Mapping[Loc, float]:
    """Per statement line, the new messages it printed (each counted by the statement's share);
    lines that printed only messages the passes printed too: none."""
    out: dict[Loc, float] = {}
    for text, locs, share in printed_by_statements:
        if text not in seen:
            for loc in locs:
                out[loc] = out.get(loc, 0.0) + share
    return out
