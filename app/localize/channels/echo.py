"""Source echoes: a log line repeating a script line word for word points at that line.

The last echo in the log is the nearest to the failure (a traceback prints the innermost frame's
line last); a line pytest marked with ``>`` is the failing line of its frame. Earlier echoes are
outer frames or lines quoted on the way. A text several script lines share splits its value.
"""

from __future__ import annotations

from app.localize.channels import Context, Scores, Signal, put

MARKED = 1.0  # pytest's ``>`` line
LAST = 1.0  # the last echo in the log
EARLIER = 0.4  # any other echo


def echo_scores(ctx: Context) -> Scores:
    """Per statement, the strongest echo of one of its lines."""
    echoes = ctx.analysis.echoes
    scores: Scores = {}
    if not echoes:
        return scores
    last_line = echoes[-1].log_line
    for echo in echoes:
        if echo.marked:
            value, why = MARKED, "the log echoes this line as the failing line (pytest's '>')"
        elif echo.log_line == last_line:
            value, why = LAST, "the last line of the scripts the log echoes (nearest the failure)"
        else:
            value, why = EARLIER, "the log echoes this line"
        text = ctx.first_line(echo.sid).strip() if ctx.statements[echo.sid].start_line == echo.line else None
        put(scores, echo.sid, Signal(value / echo.shared, why, text, echo.log_line))
    return scores
