"""CI runs: each ingested results file and its failed tests, linked to their stored triages.

Revision ID: 0003_ci_runs
Revises: 0002_feedback
Create Date: 2026-11-23 16:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.store.migrations.columns import ints, jsons, stamps, strings, texts

revision: str = "0003_ci_runs"
down_revision: str | None = "0002_feedback"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ci_runs",
        *ints("id"),
        *strings(format=64),
        *strings(source=255, nullable=True),
        *jsons("summary"),
        *stamps("created_at"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "ci_run_tests",
        *ints("id", "run_id", "idx"),
        *strings(test_id=1024, verdict=16, signature=40),
        *ints("triage_id", nullable=True),
        *texts("problem"),
        *jsons("data"),
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
