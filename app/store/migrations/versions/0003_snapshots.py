"""Analysis snapshots and the log in chunks: failure pages read what was stored, never recompute.

Triages stored before this revision get an index row (signature, error text, ranker) without a
snapshot; the dashboard computes their snapshot once, the first time their page is opened.

Revision ID: 0003_snapshots
Revises: 0004_history
Create Date: 2026-11-23 16:05:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.store.migrations.columns import blobs, ints, jsons, stamps, strings, texts

revision: str = "0003_snapshots"
down_revision: str | None = "0004_history"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BACKFILL_BATCH = 500


def upgrade() -> None:
    op.create_table(
        "analysis_snapshots",
        *ints("request_id"),
        *ints("version", nullable=True),
        *blobs("summary_z", nullable=True),
        *strings(signature=40),
        *texts("error_text"),
        *strings(ranker=16, top_path=1024, nullable=True),
        *ints("log_lines"),
        *stamps("created_at"),
        sa.ForeignKeyConstraint(["request_id"], ["triage_requests.id"]),
        sa.PrimaryKeyConstraint("request_id"),
    )
    with op.batch_alter_table("analysis_snapshots", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_analysis_snapshots_signature"), ["signature"], unique=False)
        batch_op.create_index(batch_op.f("ix_analysis_snapshots_ranker"), ["ranker"], unique=False)
    op.create_table(
        "log_chunks",
        *ints("request_id", "chunk", "first_line", "line_count"),
        *blobs("text_z"),
        *jsons("marks"),
        sa.ForeignKeyConstraint(["request_id"], ["triage_requests.id"]),
        sa.PrimaryKeyConstraint("request_id", "chunk"),
    )
    _index_existing()


def _index_existing() -> None:
    """One index row per stored result, so search and grouping cover earlier triages too."""
    from app.store.snapshots import index_values

    conn = op.get_bind()
    results = sa.table("results", sa.column("request_id", sa.Integer()), sa.column("data", sa.JSON()))
    snapshots = sa.table(
        "analysis_snapshots",
        sa.column("request_id", sa.Integer()),
        sa.column("signature", sa.String()),
        sa.column("error_text", sa.Text()),
        sa.column("ranker", sa.String()),
        sa.column("top_path", sa.String()),
        sa.column("log_lines", sa.Integer()),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    from datetime import UTC, datetime

    rows = conn.execute(sa.select(results.c.request_id, results.c.data)).all()
    now = datetime.now(UTC)
    values = [
        {"request_id": rid, "log_lines": 0, "created_at": now, **index_values(data or {})}
        for rid, data in rows
    ]
    for start in range(0, len(values), BACKFILL_BATCH):
        conn.execute(snapshots.insert(), values[start : start + BACKFILL_BATCH])


def downgrade() -> None:
    op.drop_table("log_chunks")
    with op.batch_alter_table("analysis_snapshots", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_analysis_snapshots_ranker"))
        batch_op.drop_index(batch_op.f("ix_analysis_snapshots_signature"))
    op.drop_table("analysis_snapshots")
