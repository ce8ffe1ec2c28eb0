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

from sqlalchemy import (
    JSON,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    delete,
    select,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from app.analysis.snapshot import Snapshot, SnapshotError, check
from app.service.signature import signature
from app.service.store import Base, utcnow

SNAPSHOT_KEY = "_snapshot"  # where a runner hands the snapshot to the store beside the result's data
ERROR_TEXT_CHARS = 1000


class SnapshotRow(Base):
    """A triage's stored analysis (``summary_z`` may be NULL for triages stored before snapshots)."""

    __tablename__ = "analysis_snapshots"

    request_id: Mapped[int] = mapped_column(ForeignKey("triage_requests.id"), primary_key=True)
    version: Mapped[int | None] = mapped_column(Integer)
    summary_z: Mapped[bytes | None] = mapped_column(LargeBinary)
    signature: Mapped[str] = mapped_column(String(40), index=True)
    error_text: Mapped[str | None] = mapped_column(Text)
    ranker: Mapped[str | None] = mapped_column(String(16), index=True)
    top_path: Mapped[str | None] = mapped_column(String(1024))
    log_lines: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LogChunkRow(Base):
    __tablename__ = "log_chunks"

    request_id: Mapped[int] = mapped_column(ForeignKey("triage_requests.id"), primary_key=True)
    chunk: Mapped[int] = mapped_column(Integer, primary_key=True)
    first_line: Mapped[int] = mapped_column(Integer)
    line_count: Mapped[int] = mapped_column(Integer)
    text_z: Mapped[bytes] = mapped_column(LargeBinary)
    marks: Mapped[dict[str, Any]] = mapped_column(JSON)


@dataclass(frozen=True)
class LogLine:
    number: int
    text: str
    statements: tuple[int, ...]  # indexes into the summary's statements that this line matched


def _plain(value: str) -> str:
    return value.replace("\x00", "\\x00")


def index_values(data: Mapping[str, Any]) -> dict[str, Any]:
    """The list page's columns, from a result's data (also used to index triages stored earlier)."""
    ranking = data.get("ranking") or []
    top = ranking[0] if ranking else None
    message = data.get("error_message")
    return {
        "signature": signature(message if isinstance(message, str) else None, top),
        "error_text": _plain(message[:ERROR_TEXT_CHARS]) if isinstance(message, str) else None,
        "ranker": data.get("ranker"),
        "top_path": (str(top.get("path"))[:1024] if top else None),
    }


def write(session: Session, request_id: int, snapshot: Snapshot | None, data: Mapping[str, Any]) -> None:
    """Replace the triage's snapshot row and log chunks (in the caller's transaction)."""
    session.execute(delete(LogChunkRow).where(LogChunkRow.request_id == request_id))
    session.execute(delete(SnapshotRow).where(SnapshotRow.request_id == request_id))
    summary_z = None
    version = None
    log_lines = 0
    if snapshot is not None:
        summary_z = zlib.compress(json.dumps(snapshot.summary, separators=(",", ":")).encode("utf-8"), 6)
        version = int(snapshot.summary["version"])
        log_lines = int(snapshot.summary["log"]["lines"])
    session.add(
        SnapshotRow(
            request_id=request_id,
            version=version,
            summary_z=summary_z,
            log_lines=log_lines,
            created_at=utcnow(),
            **index_values(data),
        )
    )
    if snapshot is not None and snapshot.chunks:
        session.execute(
            LogChunkRow.__table__.insert(),
            [
                {
                    "request_id": request_id,
                    "chunk": c.index,
                    "first_line": c.first_line,
                    "line_count": len(c.lines),
                    "text_z": zlib.compress("\n".join(c.lines).encode("utf-8", "surrogatepass"), 6),
                    "marks": {str(k): list(v) for k, v in c.marks.items()},
                }
                for c in snapshot.chunks
            ],
        )


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
