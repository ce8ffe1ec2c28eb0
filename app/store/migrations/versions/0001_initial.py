"""Initial schema: scripts, triage requests and results, batches and their items.

Revision ID: 0001
Revises: none
Create Date: 2026-11-21 19:41:55.024061
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "batches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("input_sha256", sa.String(length=64), nullable=True),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_batches_input_sha256"), ["input_sha256"], unique=False)

    op.create_table(
        "scripts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("content_z", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sha256"),
    )
    op.create_table(
        "triage_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_id", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("log_z", sa.LargeBinary(), nullable=False),
        sa.Column("log_sha256", sa.String(length=64), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("triage_requests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_triage_requests_status"), ["status"], unique=False)
        batch_op.create_index("ix_triage_requests_test_id_id", ["test_id", "id"], unique=False)

    op.create_table(
        "batch_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("locked_by", sa.String(length=200), nullable=True),
        sa.Column("locked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_by", sa.String(length=200), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
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
        sa.Column("request_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("script_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
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
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.Integer(), nullable=False),
        sa.Column("batch_item_id", sa.Integer(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
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
