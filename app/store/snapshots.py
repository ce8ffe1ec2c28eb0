"""Storage of analysis snapshots: one row per triage and its log in chunks of lines.

The failure page reads the summary row and only the log chunks its windows touch, so its cost
does not grow with the log. The same row indexes the failure for the list page: its signature,
error text, ranker and top path, which search, filters and grouping read without the results'
JSON. Writes happen inside the store's transactions (the result and its snapshot land together).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Mapped, Session

from app.analysis.snapshot import Snapshot, SnapshotError, check
from app.store import tables
from app.store.record import (  # noqa: F401  (re-exported)
    ERROR_TEXT_CHARS,
    SNAPSHOT_KEY,
    index_values,
    write_snapshot,
)
from app.store.store import Base


class SnapshotRow(Base):
    """A triage's stored analysis (``summary_z`` may be NULL for triages stored before snapshots)."""

    __table__ = tables.analysis_snapshots

    request_id: Mapped[int]
    version: Mapped[int | None]
    summary_z: Mapped[bytes | None]
    signature: Mapped[str]
    error_text: Mapped[str | None]
    ranker: Mapped[str | None]
    top_path: Mapped[str | None]
    log_lines: Mapped[int]
    created_at: Mapped[datetime]


class LogChunkRow(Base):
    __table__ = tables.log_chunks

    request_id: Mapped[int]
    chunk: Mapped[int]
    first_line: Mapped[int]
    line_count: Mapped[int]
    text_z: Mapped[bytes]
    marks: Mapped[dict[str, Any]]


@dataclass(frozen=True)
class LogLine:
    number: int
    text: str
    statements: tuple[int, ...]  # indexes into the summary's statements that this line matched


def write(session: Session, request_id: int, snapshot: Snapshot | None, data: Mapping[str, Any]) -> None:
    """Replace the triage's snapshot row and log chunks (in the caller's transaction)."""
    write_snapshot(session.connection(), request_id, snapshot, data)


def read_summary(session: Session, request_id: int) -> dict[str, Any] | None:
    """The stored summary, or None when the triage has none (stored before snapshots, or not done)."""
    blob = session.scalar(select(SnapshotRow.summary_z).where(SnapshotRow.request_id == request_id))
    if blob is None:
        return None
    try:
        return check(json.loads(zlib.decompress(blob)))
    except (zlib.error, json.JSONDecodeError) as exc:
        raise SnapshotError(f"the stored analysis cannot be read: {exc}") from None


def read_lines(session: Session, request_id: int, first: int, last: int) -> list[LogLine]:
    """Log lines ``first``..``last`` (1-based, inclusive) with their matches, from the chunks they lie in."""
    if last < first:
        return []
    rows = session.execute(
        select(LogChunkRow.first_line, LogChunkRow.text_z, LogChunkRow.marks)
        .where(
            LogChunkRow.request_id == request_id,
            LogChunkRow.first_line <= last,
            LogChunkRow.first_line + LogChunkRow.line_count > first,
        )
        .order_by(LogChunkRow.chunk)
    ).all()
    out: list[LogLine] = []
    for start, text_z, marks in rows:
        lines = zlib.decompress(text_z).decode("utf-8", "surrogatepass").split("\n")
        for offset in range(max(first - start, 0), min(last - start + 1, len(lines))):
            number = start + offset
            out.append(LogLine(number, lines[offset], tuple(marks.get(str(number), ()))))
    return out


def save(engine: Engine, request_id: int, snapshot: Snapshot, data: Mapping[str, Any]) -> None:
    """Store a snapshot computed after the fact (a triage stored before snapshots existed)."""
    with Session(engine) as session, session.begin():
        write(session, request_id, snapshot, data)


def load(
    engine: Engine, request_id: int, windows: Callable[[dict[str, Any]], Sequence[tuple[int, int]]]
) -> tuple[dict[str, Any], list[LogLine]] | None:
    """The summary and the log lines of the windows it asks for, in one read transaction."""
    with Session(engine) as session, session.begin():
        summary = read_summary(session, request_id)
        if summary is None:
            return None
        lines: list[LogLine] = []
        for first, last in windows(summary):
            lines.extend(read_lines(session, request_id, first, last))
        return summary, lines
