"""CI history: tests, content-addressed script versions, and runs (passes too).

Revision ID: 0004_history
Revises: 0002_feedback
Create Date: 2026-11-23 16:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.store.migrations.columns import blobs, ints, jsons, stamps, strings

revision: str = "0004_history"
down_revision: str | None = "0003_ci_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tests",
        *ints("id"),
        *strings(key=1100, suite=200, path=1024, base_id=1024),
        *stamps("created_at"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key", name="uq_tests_key"),
    )
    op.create_table(
        "versions",
        *strings(id=16),
        *jsons("files"),
        *stamps("created_at"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "runs",
        *ints("id"),
        *strings(identity=64),
        *ints("test_id"),
        *strings(version_id=16, nullable=True),
        *strings(external_id=1000, params=1000, verdict=8),
        *stamps("started_at"),
        *jsons("env"),
        *strings(env_fp=12),
        *strings(pipeline=200, job_url=2000, commit=64, nullable=True),
        *blobs("log_z", nullable=True),
        *strings(err_sig=40, error_message=2000, nullable=True),
        *jsons("trace", nullable=True),
        *stamps("created_at"),
        sa.ForeignKeyConstraint(["test_id"], ["tests.id"]),
        sa.ForeignKeyConstraint(["version_id"], ["versions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("identity", name="uq_runs_identity"),
    )
    op.create_index("ix_runs_test_started", "runs", ["test_id", "started_at"], unique=False)
    op.create_index("ix_runs_err_sig", "runs", ["err_sig"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_runs_err_sig", table_name="runs")
    op.drop_index("ix_runs_test_started", table_name="runs")
    op.drop_table("runs")
    op.drop_table("versions")
    op.drop_table("tests")
