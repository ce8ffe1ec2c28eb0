"""Runs keep the values their log statements printed, for the history ranker's values channel.

``runs.log_values``: path -> line -> the value tuples that statement printed (``app.history.values``),
written at ingestion from the run's log; null where the run had no log or printed nothing.
Rows stored before keep null: their channel stays silent, as it was.

Revision ID: 0007_run_values
Revises: 0006_signature_scale
Create Date: 2026-11-25 18:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_run_values"
down_revision: str | None = "0006_signature_scale"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("log_values", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "log_values")
