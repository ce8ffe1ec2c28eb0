"""Migrations 0005 to 0007 on databases that already hold history, on SQLite files and PostgreSQL schemas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy.orm import Session

from app.analysis.model import Loc, State
from app.history.records import parse_run
from app.history.versions import content_hash, version_id
from app.store.history import HistoryStore, signature_runs
from app.store.store import MIGRATIONS_DIR, Base, Store

BEFORE = "0003_snapshots"
SCRIPT = "def test_a():\n    x = 1\n    assert x == 2\n"
PRINTING = "def test_a():\n    x = 2\n    print('x is', x)\n    assert x == 2\n"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TRACES: list[Any] = [
    {"t.py": {"E": [1, 2, 3], "N": [], "D": []}},  # what 0004's store wrote: packed on upgrade
    {"t.py": {"E": [3, 2], "N": [], "D": []}},  # unsorted: does not pack exactly, kept as JSON
    None,  # no trace (a pass without scripts)
]

_tests = sa.table(
    "tests",
    *(sa.column(c) for c in ("id", "key", "suite", "path", "base_id")),
    sa.column("created_at", sa.DateTime(timezone=True)),
)
_versions = sa.table(
    "versions", sa.column("id"), sa.column("files", sa.JSON()), sa.column("created_at", sa.DateTime(True))
)
_runs = sa.table(
    "runs",
    *(sa.column(c) for c in ("id", "identity", "test_id", "version_id", "external_id", "params", "verdict")),
    *(sa.column(c) for c in ("env_fp", "err_sig")),
    sa.column("env", sa.JSON()),
    sa.column("trace", sa.JSON()),
    sa.column("started_at", sa.DateTime(timezone=True)),
    sa.column("created_at", sa.DateTime(timezone=True)),
)


def _migrate(store: Store, to: str, *, down: bool = False) -> None:
    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(cfg, to)


def _fill(store: Store) -> str:
    """Runs as the store before 0005 wrote them (JSON traces, no last_run_at)."""
    vid = version_id({"t.py": SCRIPT})
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(_tests).values(
                id=1, key="t.py::test_a", suite="", path="t.py", base_id="test_a", created_at=T0
            )
        )
        conn.execute(sa.insert(_versions).values(id=vid, files={"t.py": content_hash(SCRIPT)}, created_at=T0))
        for n, trace in enumerate(TRACES):
            conn.execute(
                sa.insert(_runs).values(
                    id=n + 1,
                    identity=f"run-{n}",
                    test_id=1,
                    version_id=vid,
                    external_id="t.py::test_a",
                    params="",
                    verdict="fail" if n == 0 else "pass",
                    env={},
                    env_fp="e",
                    err_sig="sig" if n == 0 else None,
                    trace=trace,
                    started_at=T0 + timedelta(hours=n),
                    created_at=T0,
                )
            )
    with Session(store.engine) as session, session.begin():
        store._script_ids(session, [SCRIPT])
    return vid


def test_upgrade_packs_stored_traces_and_downgrade_restores_them(database_url: str) -> None:
    store = Store.open(database_url, run_migrations=False)
    try:
        _migrate(store, BEFORE)
        _fill(store)
        _migrate(store, "head")
        history = HistoryStore(store)
        assert [history.run(n + 1)["trace"] for n in range(3)] == TRACES  # type: ignore[index]
        with store.engine.connect() as conn:
            stored = conn.execute(
                sa.text("SELECT id, trace_z IS NOT NULL, trace IS NULL FROM runs ORDER BY id")
            ).all()
        assert [tuple(bool(v) for v in row[1:]) for row in stored] == [
            (True, True),
            (False, False),
            (False, True),
        ]
        (listed,) = history.tests()
        assert listed["runs"] == 3 and listed["last_run_at"].startswith("2026-01-01T02:00:00")
        runs = history.history_runs("t.py::test_a")
        assert [r.verdict for r in runs] == ["fail", "pass"]  # the run without a trace is not one
        assert runs[0].states == {Loc("t.py", n): State.EXE for n in (1, 2, 3)}
        assert runs[0].files == {"t.py": SCRIPT}
        _migrate(store, BEFORE, down=True)
        with store.engine.connect() as conn:
            columns = {c["name"] for c in sa.inspect(conn).get_columns("runs")}
            traces = conn.execute(sa.select(_runs.c.trace).order_by(_runs.c.id)).scalars().all()
        assert "trace_z" not in columns and traces == TRACES
    finally:
        store.close()


def test_the_history_tables_are_created_as_modelled(database_url: str) -> None:
    store = Store.open(database_url)
    try:
        with store.engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        tables = ("'tests'", "'runs'", "'versions'", "ix_tests_path", "ix_runs_")
        assert [d for d in diffs if any(t in repr(d) for t in tables)] == []
    finally:
        store.close()


def _run_indexes(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        return {i["name"] for i in sa.inspect(conn).get_indexes("runs") if i["name"]}


def test_0006_indexes_the_failures_of_a_filled_store_and_downgrade_restores_the_old_index(
    database_url: str,
) -> None:
    store = Store.open(database_url, run_migrations=False)
    try:
        _migrate(store, "0005_history_scale")
        _fill(store)
        _migrate(store, "0006_signature_scale")
        indexes = _run_indexes(store)
        assert "ix_runs_err_sig_started" in indexes and "ix_runs_err_sig" not in indexes
        history = HistoryStore(store)
        (group,) = history.signatures()
        assert (group["err_sig"], group["failures"], group["tests"], group["test_keys"]) == (
            "sig",
            1,
            1,
            ["t.py::test_a"],
        )
        assert group["first_seen"] == group["last_seen"] and group["last_seen"].startswith("2026-01-01T00:00")
        runs = signature_runs(store, "sig")
        assert runs is not None and [r["id"] for r in runs] == [1]
        _migrate(store, "0005_history_scale", down=True)
        indexes = _run_indexes(store)
        assert "ix_runs_err_sig" in indexes and "ix_runs_err_sig_started" not in indexes
        with store.engine.connect() as conn:
            sigs = conn.execute(sa.select(_runs.c.err_sig).order_by(_runs.c.id)).scalars().all()
        assert sigs == ["sig", None, None]
    finally:
        store.close()


def test_0007_adds_printed_values_to_a_filled_store_and_downgrade_drops_them(database_url: str) -> None:
    store = Store.open(database_url, run_migrations=False)
    try:
        _migrate(store, "0006_signature_scale")
        _fill(store)
        if store.engine.dialect.name == "postgresql":  # _fill wrote explicit ids: move the sequence on
            with store.engine.begin() as conn:
                conn.execute(sa.text("SELECT setval(pg_get_serial_sequence('runs', 'id'), 3)"))
        _migrate(store, "0007_run_values")
        history = HistoryStore(store)
        runs = history.history_runs("t.py::test_a")
        assert runs and all(r.values == {} for r in runs)  # rows stored before: the channel stays silent
        (created,) = history.add_runs(
            [
                parse_run(
                    {
                        "test_id": "t.py::test_a",
                        "verdict": "pass",
                        "started_at": "2026-01-02T00:00:00Z",
                        "scripts": [{"path": "t.py", "content": PRINTING}],
                        "log": "x is 2\n",
                    }
                )
            ]
        )
        newest = history.history_runs("t.py::test_a")[-1]
        assert newest.values == {Loc("t.py", 3): frozenset({("2",)})}
        _migrate(store, "0006_signature_scale", down=True)
        with store.engine.connect() as conn:
            columns = {c["name"] for c in sa.inspect(conn).get_columns("runs")}
            ids = conn.execute(sa.select(_runs.c.id).order_by(_runs.c.id)).scalars().all()
        assert "log_values" not in columns and ids == [1, 2, 3, created["run_id"]]
    finally:
        store.close()
