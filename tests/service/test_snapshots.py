"""Snapshot storage on both database backends, and migration 0003 on a database with earlier results."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.analysis import snapshot
from app.analysis.model import Script
from app.history.signatures import log_signature
from app.localize.result import TriageOptions
from app.service.pool_jobs import stored_data
from app.store import snapshots
from app.store.snapshots import SNAPSHOT_KEY, LogChunkRow, SnapshotRow
from app.store.store import MIGRATIONS_DIR, Store, Submission, TriageRequestRow
from app.triage import finish, prepare, rank
from tests.service.helpers import EXAMPLE

PATH = "test_example.py"
SCRIPTS = (Script(PATH, (EXAMPLE / "test_example.py").read_text()),)
EXAMPLE_LOG = (EXAMPLE / "failure.log").read_text()
OPTIONS = TriageOptions(level="block", k=3, ranker="heuristic", log_functions=("Log.log",))


def padded_log(extra: int) -> str:
    """The running example's log with ``extra`` unrelated lines between its messages and its traceback."""
    lines = EXAMPLE_LOG.splitlines()
    return "\n".join([*lines[:5], *(f"[DEBUG] poll {i} ok" for i in range(extra)), *lines[5:]]) + "\n"


def triage_data(log: str) -> dict[str, Any]:
    """A triage's data as a runner hands it to the store: the result and its snapshot."""
    request = prepare(SCRIPTS, log, OPTIONS, explain=True)
    data = stored_data(finish(lambda: rank(request, client=None)))
    data[SNAPSHOT_KEY] = snapshot.build(request.analysis, request.rendered, log)
    return data


def case(log: str) -> Submission:
    return Submission(
        scripts=SCRIPTS, log=log, options={"trace": "tplus", "log_functions": ["Log.log"]}, test_id="t"
    )


def test_result_and_snapshot_are_stored_together_and_read_by_window(database_url: str) -> None:
    store = Store.open(database_url)
    try:
        log = padded_log(2_500)
        data = triage_data(log)
        answer = store.record_triage(case(log), data)
        request_id = answer.id
        assert answer.result is not None and SNAPSHOT_KEY not in answer.result
        assert store.get_triage(request_id) == answer
        summary, lines = snapshots.load(
            store.engine, request_id, lambda s: [(998, 1003), (2_505, 2_600)]
        ) or ({}, [])
        assert summary == data[SNAPSHOT_KEY].summary
        all_lines = log.splitlines()
        assert [(line.number, line.text) for line in lines] == [
            *((n, all_lines[n - 1]) for n in range(998, 1004)),
            *((n, all_lines[n - 1]) for n in range(2_505, len(all_lines) + 1)),
        ]
        matched = {
            line.number: line.statements
            for line in snapshots.load(store.engine, request_id, lambda s: [(1, 5)])[1]
        }
        assert all(matched[n] for n in range(1, 6))  # the five messages matched their statements
        with Session(store.engine) as session:
            row = session.get_one(SnapshotRow, request_id)
            # read off the snapshot, the failure's one id: what its log and scripts give it
            assert row.signature == log_signature(log, SCRIPTS)
            assert row.ranker == "heuristic" and "ZeroDivisionError" in (row.error_text or "")
            assert row.log_lines == len(all_lines)
            chunks = session.scalars(select(LogChunkRow).where(LogChunkRow.request_id == request_id)).all()
            assert len(chunks) == -(-len(all_lines) // 1000)
        assert snapshots.load(store.engine, request_id + 1, lambda s: [(1, 1)]) is None
    finally:
        store.close()


def test_a_batch_item_stores_its_snapshot_too(database_url: str) -> None:
    store = Store.open(database_url)
    try:
        batch_id = store.create_batch([case(EXAMPLE_LOG)], source="json")
        claim = store.claim("w1", lease_s=60, batch_id=batch_id)
        assert claim is not None
        assert store.complete_item(claim, triage_data(EXAMPLE_LOG), worker_id="w1")
        loaded = snapshots.load(store.engine, claim.request_id, lambda s: [(1, 3)])
        assert loaded is not None and [line.number for line in loaded[1]] == [1, 2, 3]
    finally:
        store.close()


def _alembic() -> Config:
    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


def test_migration_indexes_results_stored_before_snapshots(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'tcfl.db'}", run_migrations=False)
    try:
        cfg = _alembic()
        with store.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0002_feedback")
        data = triage_data(EXAMPLE_LOG)
        data.pop(SNAPSHOT_KEY)
        with Session(store.engine) as session, session.begin():  # what 0002's store wrote: no snapshot
            from app.store.store import ResultRow

            request_id = store._add_request(session, case(EXAMPLE_LOG), "done")
            session.add(ResultRow(request_id=request_id, data=data))
        with store.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        with Session(store.engine) as session:
            row = session.get_one(SnapshotRow, request_id)
            # 0008 gave it the failure's one id, from its stored log and scripts
            assert row.summary_z is None and row.signature == log_signature(EXAMPLE_LOG, SCRIPTS)
            assert session.get_one(TriageRequestRow, request_id).status == "done"
        assert snapshots.load(store.engine, request_id, lambda s: [(1, 1)]) is None  # computed on first view
        with store.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0002_feedback")
        with store.engine.connect() as conn:
            assert "analysis_snapshots" not in set(conn.dialect.get_table_names(conn))
    finally:
        store.close()


def test_the_snapshot_tables_are_created_as_modelled(tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from app.store.store import Base

    store = Store.open(f"sqlite:///{tmp_path / 'tcfl.db'}")
    try:
        with store.engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert [d for d in diffs if "analysis_snapshots" in repr(d) or "log_chunks" in repr(d)] == []
    finally:
        store.close()


def test_the_cli_write_stores_the_rows_the_store_does(database_url: str) -> None:
    """``record_to`` (the CLI's Core-only path) and ``Store.record_triage`` write the same rows."""
    from app.store import tables
    from app.store.record import record_to

    log = padded_log(300)
    data = triage_data(log)
    store = Store.open(database_url)
    try:
        by_store = store.record_triage(case(log), dict(data))
        by_cli = record_to(database_url, case(log), dict(data))
        assert by_cli.id != by_store.id
        assert store.get_triage(by_cli.id) == replace(
            store.get_triage(by_store.id),  # type: ignore[arg-type]
            id=by_cli.id,
            created_at=store.get_triage(by_cli.id).created_at,  # type: ignore[union-attr]
        )
        assert store.load_case(by_cli.id) == store.load_case(by_store.id)
        skip = {"id", "request_id", "created_at", "updated_at"}
        with store.engine.connect() as conn:
            for table in (
                tables.triage_requests,
                tables.request_scripts,
                tables.results,
                tables.analysis_snapshots,
                tables.log_chunks,
            ):
                key = table.c.id if table is tables.triage_requests else table.c.request_id
                rows = {}
                for request_id in (by_store.id, by_cli.id):
                    found = conn.execute(select(table).where(key == request_id)).mappings().all()
                    rows[request_id] = [{k: v for k, v in r.items() if k not in skip} for r in found]
                assert rows[by_store.id] and rows[by_cli.id] == rows[by_store.id], table.name
    finally:
        store.close()
