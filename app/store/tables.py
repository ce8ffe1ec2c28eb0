"""The core tables of the store, in SQLAlchemy Core: no ORM import.

A stored CLI triage writes these with Core statements (``app.store.record``), so a cold
``tcfl triage`` does not load ``sqlalchemy.orm`` nor build the mapped classes (a large part of
its start). The mapped classes of ``app.store.store`` and ``app.store.snapshots`` map
onto these same ``Table`` objects, so there is one schema; the migrations stay its source.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.schema import SchemaItem

from app.store.rows import utcnow

metadata = MetaData()


def _stamp(name: str) -> Column[datetime]:
    return Column(name, DateTime(timezone=True), nullable=False, default=utcnow)


def _table(name: str, *items: SchemaItem) -> Table:
    """A table of ``metadata`` with an integer key ``id`` first."""
    return Table(name, metadata, Column("id", Integer, primary_key=True), *items)


scripts = _table(
    "scripts",
    Column("sha256", String(64), nullable=False, unique=True),
    Column("size", Integer, nullable=False),
    Column("content_z", LargeBinary, nullable=False),
    _stamp("created_at"),
)

triage_requests = _table(
    "triage_requests",
    Column("test_id", String(200)),
    Column("status", String(16), nullable=False, index=True),
    Column("options", JSON, nullable=False),
    Column("log_z", LargeBinary, nullable=False),
    Column("log_sha256", String(64), nullable=False),
    Column("error", Text),
    _stamp("created_at"),
    _stamp("updated_at"),
    Index("ix_triage_requests_test_id_id", "test_id", "id"),
)

request_scripts = Table(
    "request_scripts",
    metadata,
    Column("request_id", ForeignKey("triage_requests.id"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("script_id", ForeignKey("scripts.id"), nullable=False, index=True),
    Column("path", String(1024), nullable=False),
)

results = _table(
    "results",
    Column("request_id", ForeignKey("triage_requests.id"), nullable=False, unique=True),
    Column("batch_item_id", ForeignKey("batch_items.id"), unique=True),
    Column("data", JSON, nullable=False),
    _stamp("created_at"),
)

batches = _table(
    "batches",
    Column("source", String(16), nullable=False),
    Column("input_sha256", String(64), index=True),
    Column("total", Integer, nullable=False),
    _stamp("created_at"),
)

batch_items = _table(
    "batch_items",
    Column("batch_id", ForeignKey("batches.id"), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("request_id", ForeignKey("triage_requests.id"), nullable=False, unique=True),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("locked_by", String(200)),
    Column("locked_at", DateTime(timezone=True)),
    Column("finished_by", String(200)),
    Column("error", Text),
    _stamp("updated_at"),
    UniqueConstraint("batch_id", "idx", name="uq_batch_items_batch_idx"),
    Index("ix_batch_items_status_id", "status", "id"),
)

analysis_snapshots = Table(
    "analysis_snapshots",
    metadata,
    Column("request_id", ForeignKey("triage_requests.id"), primary_key=True),
    Column("version", Integer),
    Column("summary_z", LargeBinary),
    Column("signature", String(40), nullable=False, index=True),
    Column("error_text", Text),
    Column("ranker", String(16), index=True),
    Column("top_path", String(1024)),
    Column("log_lines", Integer, nullable=False, default=0),
    _stamp("created_at"),
)

log_chunks = Table(
    "log_chunks",
    metadata,
    Column("request_id", ForeignKey("triage_requests.id"), primary_key=True),
    Column("chunk", Integer, primary_key=True),
    Column("first_line", Integer, nullable=False),
    Column("line_count", Integer, nullable=False),
    Column("text_z", LargeBinary, nullable=False),
    Column("marks", JSON, nullable=False),
)
