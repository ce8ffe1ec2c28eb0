"""GitHub Actions workflow commands: one ``::error`` annotation per failed test, on its top-ranked lines."""

from __future__ import annotations

from app.ci import CiReport
from app.emit import status


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: CiReport) -> str:
    lines = []
    for item in report.triaged:
        said = status(report, item)
        title = escape_property(f"tcfl: {item.run.test_id} failed" + (f" ({said})" if said else ""))
        if item.result is None or not item.result.ranking:
            why = item.problem or "nothing left to rank"
            lines.append(f"::error title={title}::{escape_data(f'{item.error} (not triaged: {why})')}")
            continue
        top = item.result.ranking[0]
        others = ", ".join(f"{r.path}:{r.start_line}" for r in item.result.ranking[1:4])
        message = (
            f"{item.error}\nMost suspicious {item.result.level} ({item.result.ranker}): "
            f"{top.id} — {top.reason}" + (f"\nNext: {others}" if others else "")
        )
        props = f"file={escape_property(top.path)},line={top.start_line},endLine={top.end_line},title={title}"
        lines.append(f"::error {props}::{escape_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")
