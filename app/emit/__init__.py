"""One emitter per ``--format``: a CI report in, text for where CI users already look.

Each module has ``render(report) -> str``; emitters read the report and never triage.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the triage report's text (app.emit.text) is also the CLI's, which needs no CI code
    from app.ci import CiReport

FORMATS: tuple[str, ...] = ("text", "json", "markdown", "github", "junit", "sarif")
SUFFIXES: dict[str, str] = {
    "text": ".txt",
    "json": ".json",
    "markdown": ".md",
    "github": ".github.txt",
    "junit": ".junit.xml",
    "sarif": ".sarif",
}


def emit(report: CiReport, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    module = importlib.import_module(f"app.emit.{'json_' if fmt == 'json' else fmt}")
    return module.render(report)


NEW_FAILURE = "new failure"


def status(report: CiReport, item: Any) -> str | None:
    """``known issue: <label> <link>`` for a failure that carries a label, ``new failure`` for one
    that does not; None where the job was not recorded (no known issue could be looked up)."""
    known = report.known_issue(item)
    if known is not None:
        return str(known.text())
    return NEW_FAILURE if report.launch_id is not None else None


def span(start: int, end: int) -> str:
    return f"{start}" if start == end else f"{start}-{end}"
