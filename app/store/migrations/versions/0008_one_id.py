"""One failure, one id; one test, one key (``app.history.signatures``, ``app.ingest.testkey``).

Before, ``tcfl ci`` named a failure by a 12-digit hash of its error and top location, the failure
list by its error refined by the top-ranked code, and the history by its err_sig; and a test
had a key per tool that reported it (``a.TestX.test_y``, ``a.py::TestX.test_y``, ...). Now:

- ``tests.key`` (``path``, ``base_id``): each key re-parsed into the one canonical form; tests
  that get the same key are one test: their runs go to one row (the one already so named, else
  the oldest), the other rows go.
- ``analysis_snapshots.signature``: the failure's err_sig, from its stored snapshot when it has
  one and the triage had no ``log_format``, else from its stored log and scripts
  (``app.store.record.failure_id``, as stored triages get it now).
- ``ci_run_tests.signature``: a triaged test's is its triage's; an untriaged one's that of the
  failing run its ingest recorded in the history (same test id and pipeline, the newest at or
  before the ingest), kept when there is none; ``ci_runs.summary`` is regrouped by them.
- ``runs.err_sig`` is unchanged: that scheme is the one kept.

Downgrade changes nothing back: the old code reads the ids as opaque text, and merged tests stay
merged.

Revision ID: 0008_one_id
Revises: 0007_run_values
Create Date: 2026-11-26 21:30:00.000000
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0008_one_id"
down_revision: str | None = "0007_run_values"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500

_tests = sa.table(
    "tests",
    *(sa.column(c) for c in ("id", "key", "path", "base_id")),
    sa.column("last_run_at", sa.DateTime(timezone=True)),
)
_runs = sa.table(
    "runs",
    *(sa.column(c) for c in ("id", "test_id", "external_id", "pipeline", "verdict", "err_sig")),
    sa.column("started_at", sa.DateTime(timezone=True)),
)
_snapshots = sa.table(
    "analysis_snapshots",
    sa.column("request_id"),
    sa.column("summary_z", sa.LargeBinary()),
    sa.column("signature"),
)
_requests = sa.table("triage_requests", sa.column("id"), sa.column("options", sa.JSON()))
_ci_runs = sa.table(
    "ci_runs",
    sa.column("id"),
    sa.column("source"),
    sa.column("summary", sa.JSON()),
    sa.column("created_at", sa.DateTime(timezone=True)),
)
_ci_tests = sa.table(
    "ci_run_tests",
    *(sa.column(c) for c in ("id", "run_id", "idx", "test_id", "signature", "triage_id")),
    sa.column("data", sa.JSON()),
)


def upgrade() -> None:
    conn = op.get_bind()
    _one_key_per_test(conn)
    _triage_ids(conn)
    _ci_run_ids(conn)


def downgrade() -> None:
    """Nothing to undo: see the module's docstring."""


def _one_key_per_test(conn: sa.Connection) -> None:
    from app.ingest.testkey import TestKey, parse_test_id

    keyed: dict[str, list[tuple[int, str, TestKey]]] = {}
    for test_id, key in conn.execute(sa.select(_tests.c.id, _tests.c.key).order_by(_tests.c.id)):
        try:
            new = parse_test_id(key)[0]
        except ValueError:  # an empty key: nothing to parse, it stays as it is
            continue
        keyed.setdefault(new.key, []).append((test_id, key, new))
    for canonical, rows in keyed.items():
        keep = next((row for row in rows if row[1] == canonical), rows[0])
        merged = [row[0] for row in rows if row[0] != keep[0]]
        if merged:
            conn.execute(sa.update(_runs).where(_runs.c.test_id.in_(merged)).values(test_id=keep[0]))
            conn.execute(sa.delete(_tests).where(_tests.c.id.in_(merged)))
            newest = sa.select(sa.func.max(_runs.c.started_at)).where(_runs.c.test_id == keep[0])
            conn.execute(
                sa.update(_tests).where(_tests.c.id == keep[0]).values(last_run_at=newest.scalar_subquery())
            )
        if keep[1] != canonical or merged:
            new = keep[2]
            conn.execute(
                sa.update(_tests)
                .where(_tests.c.id == keep[0])
                .values(key=canonical, path=new.path[:1024], base_id=new.name[:1024])
            )


def _triage_ids(conn: sa.Connection) -> None:
    from app.store.record import failure_id, stored_case

    last = -1
    while True:
        rows = conn.execute(
            sa.select(_snapshots.c.request_id, _snapshots.c.summary_z, _requests.c.options)
            .join(_requests, _requests.c.id == _snapshots.c.request_id)
            .where(_snapshots.c.request_id > last)
            .order_by(_snapshots.c.request_id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        for request_id, summary_z, options in rows:
            summary = json.loads(zlib.decompress(summary_z)) if summary_z is not None else None
            signature = failure_id(options or {}, summary, lambda rid=request_id: stored_case(conn, rid))
            conn.execute(
                sa.update(_snapshots).where(_snapshots.c.request_id == request_id).values(signature=signature)
            )
        last = rows[-1].request_id


def _ci_run_ids(conn: sa.Connection) -> None:
    from app.history.signatures import normalise_error

    for run_id, source, summary, created_at in conn.execute(
        sa.select(_ci_runs.c.id, _ci_runs.c.source, _ci_runs.c.summary, _ci_runs.c.created_at).order_by(
            _ci_runs.c.id
        )
    ).all():
        tests = conn.execute(
            sa.select(
                _ci_tests.c.id,
                _ci_tests.c.test_id,
                _ci_tests.c.signature,
                _ci_tests.c.triage_id,
                _ci_tests.c.data,
            )
            .where(_ci_tests.c.run_id == run_id)
            .order_by(_ci_tests.c.idx)
        ).all()
        groups: dict[str, dict[str, Any]] = {}
        old_groups = {t: g for g in (summary or {}).get("groups") or () for t in g.get("tests") or ()}
        for row_id, test_id, old, triage_id, data in tests:
            new = _triaged_id(conn, triage_id) if triage_id else _run_id(conn, test_id, source, created_at)
            new = new or old
            if new != old:
                conn.execute(
                    sa.update(_ci_tests)
                    .where(_ci_tests.c.id == row_id)
                    .values(signature=new, data={**(data or {}), "signature": new})
                )
            first = old_groups.get(test_id) or {}
            group = groups.setdefault(
                new,
                {
                    "signature": new,
                    "error": normalise_error((data or {}).get("error")),
                    "top": first.get("top"),
                },
            )
            group.setdefault("tests", []).append(test_id)
        if summary and "groups" in summary:
            regrouped = {**summary, "groups": list(groups.values())}
            if isinstance(regrouped.get("summary"), dict):
                regrouped["summary"] = {**regrouped["summary"], "groups": len(groups)}
            conn.execute(sa.update(_ci_runs).where(_ci_runs.c.id == run_id).values(summary=regrouped))


def _triaged_id(conn: sa.Connection, triage_id: int) -> str | None:
    return conn.execute(
        sa.select(_snapshots.c.signature).where(_snapshots.c.request_id == triage_id)
    ).scalar_one_or_none()


def _run_id(conn: sa.Connection, test_id: str, source: str | None, before: Any) -> str | None:
    """The err_sig of the failing run an ingest recorded for ``test_id`` (``records_from_ci``)."""
    pipeline = _runs.c.pipeline.is_(None) if not source else _runs.c.pipeline == source
    return conn.execute(
        sa.select(_runs.c.err_sig)
        .where(
            _runs.c.external_id == test_id,
            pipeline,
            _runs.c.verdict.in_(("fail", "error")),
            _runs.c.err_sig.is_not(None),
            _runs.c.started_at <= before,
        )
        .order_by(_runs.c.started_at.desc(), _runs.c.id.desc())
        .limit(1)
    ).scalar_one_or_none()
