"""Whether a failure gave the analysis anything to go on, and if not, what was missing.

A triage is grounded when the log matched at least one static log statement of the scripts or a
traceback frame points into them. Without either, any ranking is a guess from the code alone; the
shells say so (the CLI exits 3) and tell the user which input to fix.
"""

from __future__ import annotations

from app.analysis.model import Analysis


def missing_evidence(analysis: Analysis) -> tuple[str, ...]:
    """Empty when the log grounds the analysis; otherwise one warning naming what was missing."""
    if analysis.match.matches or analysis.error_frames:
        return ()
    static = sum(1 for s in analysis.log_statements if s.is_static)
    messages = len(analysis.log.messages)
    frames = len(analysis.log.frames)
    parts: list[str] = []
    if static == 0:
        parts.append(
            "the scripts hold no log statement the analysis recognises: if they log through their "
            "own helpers, name them with --log-function (e.g. --log-function Log.log)"
        )
    elif messages == 0:
        parts.append("the log holds no message to match against the scripts' log statements")
    else:
        parts.append(
            f"none of the log's {messages} message(s) matched any of the scripts' {static} static log "
            f"statement(s): check --log-function (the helpers that print those lines) and --log-format "
            f"(the prefix format detected was {analysis.log.format!r})"
        )
    if frames:
        parts.append(
            f"the log's tracebacks have {frames} frame(s), none in the submitted scripts "
            "(frames are matched by path suffix: submit the files the traceback names)"
        )
    else:
        parts.append("the log holds no Python traceback")
    return ("no evidence: " + "; ".join(parts) + ". The ranking is a guess from the code alone",)
