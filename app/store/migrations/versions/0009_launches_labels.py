"""Launches and labels: a CI job as a record of its own, every test of it, and known issues.

``launches``: one row per CI job, unique on the job's identity (``app.ingest.job``): pipeline + job
id, its URL, or commit + results digest + time. ``launch_tests``: each test of a launch with its
verdict, duration, run in the CI history, signature, triage and history verdict. ``labels``: a
defect type, bug link and comment on one failure or on a signature (or fault-site) group; labels
carried over to a new failure are ``auto`` and point at their group label. Nothing stored before
changes: earlier jobs have no launch.

Revision ID: 0009_launches_labels
Revises: 0008_one_id
Create Date: 2026-11-28 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_launches_labels"
down_revision: str | None = "0008_one_id"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "launches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("identity", sa.String(length=64), nullable=False),
        sa.Column("pipeline", sa.String(length=1000), nullable=True),
        sa.Column("job_id", sa.String(length=1000), nullable=True),
        sa.Column("job_url", sa.String(length=2000), nullable=True),
        sa.Column("commit", sa.String(length=64), nullable=True),
        sa.Column("ci", sa.String(length=16), nullable=True),
        sa.Column("source", sa.String(length=255), nullable=True),
        sa.Column("format", sa.String(length=64), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.Column("ingest_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["ingest_id"], ["ci_runs.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("identity", name="uq_launches_identity"),
    )
    op.create_index("ix_launches_pipeline_started", "launches", ["pipeline", "started_at", "id"])
    op.create_index("ix_launches_started", "launches", ["started_at", "id"])
    op.create_table(
        "launch_tests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("launch_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=1100), nullable=False),
        sa.Column("test_id", sa.String(length=1000), nullable=False),
        sa.Column("verdict", sa.String(length=8), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("err_sig", sa.String(length=40), nullable=True),
        sa.Column("site", sa.String(length=40), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("triage_id", sa.Integer(), nullable=True),
        sa.Column("problem", sa.Text(), nullable=True),
        sa.Column("top", sa.String(length=1100), nullable=True),
        sa.Column("classification", sa.String(length=16), nullable=True),
        sa.Column("history", sa.JSON(none_as_null=True), nullable=True),
        sa.ForeignKeyConstraint(["launch_id"], ["launches.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("launch_id", "idx", name="uq_launch_tests_launch_idx"),
    )
    op.create_index("ix_launch_tests_launch_id", "launch_tests", ["launch_id"])
    op.create_index("ix_launch_tests_err_sig", "launch_tests", ["err_sig"])
    op.create_index("ix_launch_tests_triage_id", "launch_tests", ["triage_id"])
    op.create_table(
        "labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("err_sig", sa.String(length=40), nullable=True),
        sa.Column("site", sa.String(length=40), nullable=True),
        sa.Column("failure_id", sa.Integer(), nullable=True),
        sa.Column("defect_type", sa.String(length=64), nullable=False),
        sa.Column("bug_url", sa.String(length=2000), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("auto", sa.Boolean(), nullable=False),
        sa.Column("origin_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("undone_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["failure_id"], ["launch_tests.id"]),
        sa.ForeignKeyConstraint(["origin_id"], ["labels.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_labels_err_sig", "labels", ["err_sig"])
    op.create_index("ix_labels_site", "labels", ["site"])
    op.create_index("ix_labels_failure_id", "labels", ["failure_id"])


def downgrade() -> None:
    op.drop_index("ix_labels_failure_id", table_name="labels")
    op.drop_index("ix_labels_site", table_name="labels")
    op.drop_index("ix_labels_err_sig", table_name="labels")
    op.drop_table("labels")
    op.drop_index("ix_launch_tests_triage_id", table_name="launch_tests")
    op.drop_index("ix_launch_tests_err_sig", table_name="launch_tests")
    op.drop_index("ix_launch_tests_launch_id", table_name="launch_tests")
    op.drop_table("launch_tests")
    op.drop_index("ix_launches_started", table_name="launches")
    op.drop_index("ix_launches_pipeline_started", table_name="launches")
    op.drop_table("launches")
