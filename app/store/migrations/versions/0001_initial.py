"""Initial schema: scripts, triage requests and results, batches and their items.

Revision ID: 0001
Revises: none
Create Date: 2026-11-21 19:41:55.024061
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.store.migrations.columns import blobs, ints, jsons, stamps, strings, texts

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "batches",
        *ints("id"),
        *strings(source=16),
        *strings(input_sha256=64, nullable=True),
        *ints("total"),
        *stamps("created_at"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_batches_input_sha256"), ["input_sha256"], unique=False)

    op.create_table(
        "scripts",
        *ints("id"),
        *strings(sha256=64),
        *ints("size"),
        *blobs("content_z"),
        *stamps("created_at"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sha256"),
    )
    op.create_table(
        "triage_requests",
        *ints("id"),
        *strings(test_id=200, nullable=True),
        *strings(status=16),
        *jsons("options"),
        *blobs("log_z"),
        *strings(log_sha256=64),
        *texts("error"),
        *stamps("created_at", "updated_at"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("triage_requests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_triage_requests_status"), ["status"], unique=False)
        batch_op.create_index("ix_triage_requests_test_id_id", ["test_id", "id"], unique=False)

    op.create_table(
        "batch_items",
        *ints("id", "batch_id", "idx", "request_id"),
        *strings(status=16),
        *ints("attempts"),
        *strings(locked_by=200, nullable=True),
        *stamps("locked_at", nullable=True),
        *strings(finished_by=200, nullable=True),
        *texts("error"),
        *stamps("updated_at"),
        sa.ForeignKeyConstraint(
            ["batch_id"],
            ["batches.id"],
        ),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["triage_requests.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("batch_id", "idx", name="uq_batch_items_batch_idx"),
        sa.UniqueConstraint("request_id"),
    )
    with op.batch_alter_table("batch_items", schema=None) as batch_op:
        batch_op.create_index("ix_batch_items_status_id", ["status", "id"], unique=False)

    op.create_table(
        "request_scripts",
        *ints("request_id", "position", "script_id"),
        *strings(path=1024),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["triage_requests.id"],
        ),
        sa.ForeignKeyConstraint(
            ["script_id"],
            ["scripts.id"],
        ),
        sa.PrimaryKeyConstraint("request_id", "position"),
    )
    with op.batch_alter_table("request_scripts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_request_scripts_script_id"), ["script_id"], unique=False)

    op.create_table(
        "results",
        *ints("id", "request_id"),
        *ints("batch_item_id", nullable=True),
        *jsons("data"),
        *stamps("created_at"),
        sa.ForeignKeyConstraint(
            ["batch_item_id"],
            ["batch_items.id"],
        ),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["triage_requests.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("batch_item_id"),
        sa.UniqueConstraint("request_id"),
    )


def downgrade() -> None:
    op.drop_table("results")
    with op.batch_alter_table("request_scripts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_request_scripts_script_id"))

    op.drop_table("request_scripts")
    with op.batch_alter_table("batch_items", schema=None) as batch_op:
        batch_op.drop_index("ix_batch_items_status_id")

    op.drop_table("batch_items")
    with op.batch_alter_table("triage_requests", schema=None) as batch_op:
        batch_op.drop_index("ix_triage_requests_test_id_id")
        batch_op.drop_index(batch_op.f("ix_triage_requests_status"))

    op.drop_table("triage_requests")
    op.drop_table("scripts")
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_batches_input_sha256"))

    op.drop_table("batches")
