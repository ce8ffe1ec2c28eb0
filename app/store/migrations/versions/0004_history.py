"""CI history: tests, content-addressed script versions, and runs (passes too).

Revision ID: 0004_history
Revises: 0002_feedback
Create Date: 2026-11-23 16:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_history"
down_revision: str | None = "0003_ci_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=1100), nullable=False),
        sa.Column("suite", sa.String(length=200), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("base_id", sa.String(length=1024), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key", name="uq_tests_key"),
    )
    op.create_table(
        "versions",
        sa.Column("id", sa.String(length=16), nullable=False),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("identity", sa.String(length=64), nullable=False),
        sa.Column("test_id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.String(length=16), nullable=True),
        sa.Column("external_id", sa.String(length=1000), nullable=False),
        sa.Column("params", sa.String(length=1000), nullable=False),
        sa.Column("verdict", sa.String(length=8), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("env", sa.JSON(), nullable=False),
        sa.Column("env_fp", sa.String(length=12), nullable=False),
        sa.Column("pipeline", sa.String(length=200), nullable=True),
        sa.Column("job_url", sa.String(length=2000), nullable=True),
        sa.Column("commit", sa.String(length=64), nullable=True),
        sa.Column("log_z", sa.LargeBinary(), nullable=True),
        sa.Column("err_sig", sa.String(length=40), nullable=True),
        sa.Column("error_message", sa.String(length=2000), nullable=True),
        sa.Column("trace", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
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
