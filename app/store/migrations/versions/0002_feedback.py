"""Dashboard feedback: the lines engineers marked as the real fault of a triage.

Revision ID: 0002_feedback
Revises: 0001
Create Date: 2026-11-21 20:05:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.store.migrations.columns import ints, stamps, strings

revision: str = "0002_feedback"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "feedback",
        *ints("id", "triage_id"),
        *strings(path=1024),
        *ints("line"),
        *stamps("created_at"),
        sa.ForeignKeyConstraint(["triage_id"], ["triage_requests.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("triage_id", "path", "line", name="uq_feedback_triage_path_line"),
    )
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_feedback_triage_id"), ["triage_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_feedback_triage_id"))
    op.drop_table("feedback")
