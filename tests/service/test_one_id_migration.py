"""Migration 0008 on a database the previous version wrote (tests/data/store/store-0007.db).

That version gave one failure three ids (its CI ingest's, its stored triage's, its history runs')
and one test four keys; after the upgrade each has one, the history's err_sig kept as it was.
On PostgreSQL the same rows are copied into a schema at 0007 first.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from app.cli import main
from app.history.signatures import log_signature
from app.service.dashboard.queries import Filters, groups
from app.store.history import HistoryStore
from app.store.ingests import CiRunStore
from app.store.launches import LaunchStore
from app.store.store import MIGRATIONS_DIR, Store
from tests.ci_tools import PytestRun, py_results
from tests.conftest import DATA

__all__ = ["py_results"]

STORED = DATA / "store" / "store-0007.db"
KEYS = {
    f"test_links.py::TestLinks::{name}" for name in ("test_jumbo_mtu", "test_link_speed", "test_ports_known")
}
MTU = "test_links.py::TestLinks::test_jumbo_mtu"
# the ids the test jumbo_mtu's runs were stored under, each a key of its own before
MTU_FORMS = (
    "test_links.TestLinks.test_jumbo_mtu",
    "1-test_links.py:TestLinks.test_jumbo_mtu;run-1",
    "TestLinks.test_links.py:TestLinks.test_jumbo_mtu",
    "test_links.py::TestLinks.test_jumbo_mtu",
)


def _stored(database_url: str, tmp_path: Path) -> sa.Engine:
    """The fixture's rows in ``database_url`` at 0007 (a copy of the file on SQLite)."""
    source = sa.create_engine(f"sqlite:///{tmp_path / 'source.db'}")
    shutil.copy(STORED, tmp_path / "source.db")
    if database_url.startswith("sqlite"):
        shutil.copy(STORED, database_url.removeprefix("sqlite:///"))
        return source
    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    target = sa.create_engine(database_url)
    with target.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0007_run_values")
    read, write = sa.MetaData(), sa.MetaData()
    read.reflect(source)
    write.reflect(target)
    with source.connect() as src, target.begin() as dst:
        for table in write.sorted_tables:
            if table.name == "alembic_version":
                continue
            rows = [dict(r) for r in src.execute(sa.select(read.tables[table.name])).mappings()]
            if rows:
                dst.execute(table.insert(), rows)
            if rows and isinstance(table.c.get("id", sa.column("x")).type, sa.Integer):
                top = max(r["id"] for r in rows)  # ids were copied: the sequence goes on after them
                dst.execute(sa.text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), {top})"))
    target.dispose()
    return source


@pytest.mark.slow
def test_upgrade_gives_each_failure_one_id_and_each_test_one_key(database_url: str, tmp_path: Path) -> None:
    source = _stored(database_url, tmp_path)
    with source.connect() as conn:
        before = dict(conn.execute(sa.text("SELECT id, err_sig FROM runs")).all())
        old_ci = {r[0] for r in conn.execute(sa.text("SELECT signature FROM ci_run_tests"))}
    source.dispose()
    store = Store.open(database_url)  # migrates to the head
    try:
        history = HistoryStore(store)
        with store.engine.connect() as conn:
            after = dict(conn.execute(sa.text("SELECT id, err_sig FROM runs")).all())
            ci_rows = conn.execute(sa.text("SELECT test_id, signature, triage_id FROM ci_run_tests")).all()
            indexed = dict(
                conn.execute(sa.text("SELECT request_id, signature FROM analysis_snapshots")).all()
            )
        assert after == before  # the history's ids were the scheme kept: untouched
        # one key per test: the four keys of jumbo_mtu are one test with all its runs
        assert {t["key"] for t in history.tests()} == KEYS
        pages = [history.history(form) for form in (MTU, *MTU_FORMS)]
        assert all(p is not None and p["key"] == MTU and len(p["runs"]) == 9 for p in pages)
        # one id per failure: the CI run's tests, their stored triages and the history agree
        by_sig = {g["err_sig"]: set(g["test_keys"]) for g in history.signatures()}
        assert len(by_sig) == 2 and not old_ci & set(by_sig)
        for test_id, signature, triage_id in ci_rows:
            assert indexed[triage_id] == signature
            assert by_sig[signature] == {history.history(test_id)["key"]}  # type: ignore[index]
        listed, _ = groups(store.engine, Filters(), limit=10, offset=0)
        assert set(by_sig) <= {g.signature for g in listed}
        run = CiRunStore(store.engine).get(1)
        assert run is not None and [g["signature"] for g in run["groups"]] == [s for _, s, _ in ci_rows]
        assert {t["signature"] for t in run["tests"]} == set(by_sig)
        # the triage with a snapshot: read off it, the id its log and scripts give
        example = store.load_case(3)
        assert indexed[3] == log_signature(example.log, example.scripts)
    finally:
        store.close()


def test_a_job_recorded_after_the_upgrade_is_a_launch_judged_by_the_old_runs(
    database_url: str, tmp_path: Path, py_results: PytestRun, capsys: pytest.CaptureFixture[str]
) -> None:
    """0009 adds launches and labels to a store the previous versions wrote: a CI job recorded
    after the upgrade reads the runs they stored as its past (the same test, the same failure)."""
    _stored(database_url, tmp_path)
    store = Store.open(database_url)  # migrates to the head
    try:
        before = HistoryStore(store).history(MTU)
        assert before is not None and before["runs"]
        where = ["--root", str(py_results.root), "--db", database_url, "--commit", "after-upgrade"]
        code = main(
            ["ci", str(py_results.junit), *where, "--ranker", "heuristic", "--format", "json", "--no-ci-env"]
        )
        body = json.loads(capsys.readouterr().out)
        assert code == 0 and body["launch_id"] == 1
        launch = LaunchStore(store).get(1)
        assert launch is not None and len(launch["tests"]) == 3
        mtu = next(t for t in launch["tests"] if t["key"] == MTU)
        assert mtu["classification"] == "recurring"  # the failure the old version stored, seen again
        assert len(HistoryStore(store).history(MTU)["runs"]) == len(before["runs"]) + 1
    finally:
        store.close()
