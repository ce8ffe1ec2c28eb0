"""History at CI scale: packed traces, a test's last run on its row, indexes for the history reads.

- ``runs.trace_z``: the estimated trace packed (app.history.packed) instead of JSON; existing
  traces are packed in batches and their JSON cleared. A trace that does not round-trip exactly
  keeps its JSON (``runs.trace`` stays, read as the fallback), so nothing stored is lost.
- ``tests.last_run_at``: kept on insert, so listing tests newest first reads no runs.
- ``runs (test_id, started_at, id)`` replaces ``(test_id, started_at)``: a test's newest runs
  and retention's "last N per test" come from the index in order, ties included.
- ``tests.path``: sibling tests (same file) for file-scope history.

Revision ID: 0005_history_scale
Revises: 0003_snapshots
Create Date: 2026-11-25 17:00:00.000000
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from app.history.packed import pack_trace, packable, unpack_trace

revision: str = "0005_history_scale"
down_revision: str | None = "0003_snapshots"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 1000

_runs = sa.table(
    "runs",
    sa.column("id", sa.Integer()),
    sa.column("trace", sa.JSON(none_as_null=True)),
    sa.column("trace_z", sa.LargeBinary()),
)


def upgrade() -> None:
    op.add_column("runs", sa.Column("trace_z", sa.LargeBinary(), nullable=True))
    op.add_column("tests", sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True))
    op.drop_index("ix_runs_test_started", table_name="runs")
    op.create_index("ix_runs_test_started_id", "runs", ["test_id", "started_at", "id"], unique=False)
    op.create_index("ix_tests_path", "tests", ["path"], unique=False)
    op.execute(
        "UPDATE tests SET last_run_at = (SELECT max(runs.started_at) FROM runs WHERE runs.test_id = tests.id)"
    )
    _convert(
        sa.and_(_runs.c.trace.is_not(None), _runs.c.trace_z.is_(None)),
        _pack_json,
    )


def _pack_json(trace: Any, _blob: bytes | None) -> dict[str, Any] | None:
    """Packed when it round-trips; a JSON ``null`` becomes SQL NULL (no trace); else kept as JSON."""
    if trace is None:
        return {"trace": None}
    return {"trace_z": pack_trace(trace), "trace": None} if packable(trace) else None


def downgrade() -> None:
    _convert(
        _runs.c.trace_z.is_not(None), lambda _trace, blob: {"trace": unpack_trace(blob), "trace_z": None}
    )
    op.drop_index("ix_tests_path", table_name="tests")
    op.drop_index("ix_runs_test_started_id", table_name="runs")
    op.create_index("ix_runs_test_started", "runs", ["test_id", "started_at"], unique=False)
    op.drop_column("tests", "last_run_at")
    op.drop_column("runs", "trace_z")


def _convert(
    where: sa.ColumnElement[bool], change: Callable[[Any, bytes | None], dict[str, Any] | None]
) -> None:
    """Rewrite the matching runs' trace columns in id order, ``BATCH`` rows per round trip."""
    conn = op.get_bind()
    last = 0
    while True:
        rows = conn.execute(
            sa.select(_runs.c.id, _runs.c.trace, _runs.c.trace_z)
            .where(where, _runs.c.id > last)
            .order_by(_runs.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        for run_id, trace, blob in rows:
            values = change(trace, blob)
            if values is not None:
                conn.execute(sa.update(_runs).where(_runs.c.id == run_id).values(**values))
        last = rows[-1][0]
