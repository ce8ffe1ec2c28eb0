"""An ingest's idempotency key: a retried ``POST /v1/ingest`` finds the ingest it stored first.

``ci_runs.idempotency_key``: the SHA-256 of the ``Idempotency-Key`` header an upload came with
(none for uploads before this revision, or sent without one), unique. Nothing stored before
changes.

Revision ID: 0010_ingest_key
Revises: 0009_launches_labels
Create Date: 2026-11-28 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_ingest_key"
down_revision: str | None = "0009_launches_labels"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ci_runs") as batch:
        batch.add_column(sa.Column("idempotency_key", sa.String(length=64), nullable=True))
    op.create_index("ix_ci_runs_idempotency_key", "ci_runs", ["idempotency_key"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_ci_runs_idempotency_key", table_name="ci_runs")
    with op.batch_alter_table("ci_runs") as batch:
        batch.drop_column("idempotency_key")
