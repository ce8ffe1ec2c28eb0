"""Signature groups at CI scale: one covering partial index over the failures.

``runs (err_sig, started_at, id, test_id) WHERE err_sig IS NOT NULL`` replaces ``runs (err_sig)``:
the signature groups (counts, distinct tests, first and last seen) read it alone, and one group's
newest failures come from it in order. Passes (most runs) have no err_sig and are not in it.

Revision ID: 0006_signature_scale
Revises: 0005_history_scale
Create Date: 2026-11-25 17:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_signature_scale"
down_revision: str | None = "0005_history_scale"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FAILURES = sa.text("err_sig IS NOT NULL")


def upgrade() -> None:
    op.create_index(
        "ix_runs_err_sig_started",
        "runs",
        ["err_sig", "started_at", "id", "test_id"],
        unique=False,
        postgresql_where=_FAILURES,
        sqlite_where=_FAILURES,
    )
    op.drop_index("ix_runs_err_sig", table_name="runs")


def downgrade() -> None:
    op.create_index("ix_runs_err_sig", "runs", ["err_sig"], unique=False)
    op.drop_index("ix_runs_err_sig_started", table_name="runs")
