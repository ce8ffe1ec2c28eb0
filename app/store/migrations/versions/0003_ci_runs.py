"""CI runs: each ingested results file and its failed tests, linked to their stored triages.

Revision ID: 0003_ci_runs
Revises: 0002_feedback
Create Date: 2026-11-23 16:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_ci_runs"
down_revision: str | None = "0002_feedback"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ci_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("format", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=255), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "ci_run_tests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("test_id", sa.String(length=1024), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("signature", sa.String(length=40), nullable=False),
        sa.Column("triage_id", sa.Integer(), nullable=True),
        sa.Column("problem", sa.Text(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["ci_runs.id"]),
        sa.ForeignKeyConstraint(["triage_id"], ["triage_requests.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "idx", name="uq_ci_run_tests_run_idx"),
    )
    with op.batch_alter_table("ci_run_tests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ci_run_tests_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_ci_run_tests_triage_id"), ["triage_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ci_run_tests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ci_run_tests_triage_id"))
        batch_op.drop_index(batch_op.f("ix_ci_run_tests_run_id"))
    op.drop_table("ci_run_tests")
    op.drop_table("ci_runs")
