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

from app.store.migrations.columns import ints, jsons, stamps, strings, texts

revision: str = "0009_launches_labels"
down_revision: str | None = "0008_one_id"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "launches",
        *ints("id"),
        *strings(identity=64),
        *strings(pipeline=1000, job_id=1000, job_url=2000, commit=64, ci=16, source=255, nullable=True),
        *strings(format=64),
        *stamps("started_at"),
        *jsons("summary"),
        *ints("ingest_id", nullable=True),
        *stamps("created_at"),
        sa.ForeignKeyConstraint(["ingest_id"], ["ci_runs.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("identity", name="uq_launches_identity"),
    )
    op.create_index("ix_launches_pipeline_started", "launches", ["pipeline", "started_at", "id"])
    op.create_index("ix_launches_started", "launches", ["started_at", "id"])
    op.create_table(
        "launch_tests",
        *ints("id", "launch_id", "idx"),
        *strings(key=1100, test_id=1000, verdict=8),
        sa.Column("duration_s", sa.Float(), nullable=True),
        *ints("run_id", nullable=True),
        *strings(err_sig=40, site=40, nullable=True),
        *texts("error"),
        *ints("triage_id", nullable=True),
        *texts("problem"),
        *strings(top=1100, classification=16, nullable=True),
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
        *ints("id"),
        *strings(err_sig=40, site=40, nullable=True),
        *ints("failure_id", nullable=True),
        *strings(defect_type=64),
        *strings(bug_url=2000, nullable=True),
        *texts("comment"),
        sa.Column("auto", sa.Boolean(), nullable=False),
        *ints("origin_id", nullable=True),
        *stamps("created_at"),
        *stamps("undone_at", nullable=True),
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
