"""Acknowledged means durable and whole: uploads through storage faults, on real servers.

Real ``tcfl serve`` processes on loopback ports, real SQLite files, PostgreSQL (the shared one for
the API tests; a private one, started with ``initdb``, for the restarts). The slow tests drive
``scripts/storebench.py``: a bounded load of uploads while PostgreSQL restarts twice, the SQLite
file is removed, or the disk fills, then every acknowledged upload looked up in the database.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from sqlalchemy import event, text

from app.ci import CiReport, TriagedRun, group
from app.ingest import parse_bytes
from app.ingest.job import Job
from app.launch import run_records
from app.store.jobs import record_ingest
from app.store.launches import LaunchStore
from app.store.store import Store, StoreUnavailable, Submission
from tests.ci_tools import SUITE, PytestRun, py_results
from tests.conftest import DATA
from tests.service.helpers import LIMITS, Server, clean_env, example_body, tcfl_command, wait_for

__all__ = ["py_results"]  # the session fixture, used by name

STORED_0009 = DATA / "store" / "store-0009.db"  # written by the version before 0010_ingest_key
JOB_0009 = "https://ci.example.test/jobs/store-0009"


def _storebench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "scripts" / "storebench.py"
    spec = importlib.util.spec_from_file_location("storebench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


BENCH = _storebench()


def _triages(api: httpx.Client, test_id: str) -> int:
    return len(api.get("/v1/triage", params={"test_id": test_id, "limit": 500}).json()["items"])


def _rows(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


# --------------------------------------------------------------------------------------------
# Retries and bad values
# --------------------------------------------------------------------------------------------


def test_a_retried_upload_stores_nothing_twice_and_answers_the_first(api: httpx.Client) -> None:
    """The same Idempotency-Key, or the same named job: one ingest, one triage per failure."""
    body = BENCH.upload(0)
    del body["job_url"]  # known by its key alone
    body["commit"] = uuid.uuid4().hex  # a job of its own on the shared server
    key = {"Idempotency-Key": uuid.uuid4().hex}
    before = _triages(api, "test_net.test_ping")
    first = api.post("/v1/ingest", json=body, headers=key)
    assert first.status_code == 200, first.text
    again = api.post("/v1/ingest", json=body, headers=key)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]
    assert [t["triage_id"] for t in again.json()["tests"]] == [t["triage_id"] for t in first.json()["tests"]]
    assert again.json()["launch"] == first.json()["launch"]
    assert _triages(api, "test_net.test_ping") == before + 1

    named = BENCH.upload(0) | {"job_url": f"https://ci.example.test/jobs/{uuid.uuid4().hex}"}
    first = api.post("/v1/ingest", json=named)
    again = api.post("/v1/ingest", json=named)
    assert first.status_code == again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["tests"][0]["triage_id"] == first.json()["tests"][0]["triage_id"]
    assert _triages(api, "test_net.test_ping") == before + 2


def test_a_bad_idempotency_key_is_refused(api: httpx.Client) -> None:
    answer = api.post("/v1/ingest", json=BENCH.upload(0), headers={"Idempotency-Key": "x" * 300})
    assert answer.status_code == 422 and "Idempotency-Key" in answer.json()["detail"]


def test_a_nan_duration_is_answered_as_json_and_stored_once(api: httpx.Client, py_results: PytestRun) -> None:
    """A report-log duration of NaN (Python's JSON writes it): valid JSON out, stored once."""
    lines = py_results.reportlog.read_text().splitlines()
    mangled = "\n".join(re.sub(r'"duration": [0-9.e-]+', '"duration": NaN', line) for line in lines)
    assert "NaN" in mangled
    body = {
        "results": {"name": "report.jsonl", "content": mangled},
        "scripts": [
            {"path": str(p.relative_to(SUITE)), "content": p.read_text()} for p in sorted(SUITE.rglob("*.py"))
        ],
        "ranker": "heuristic",
        "job_url": f"https://ci.example.test/jobs/{uuid.uuid4().hex}",
    }
    first = api.post("/v1/ingest", json=body)
    assert first.status_code == 200, first.text
    report = json.loads(first.text, parse_constant=lambda c: pytest.fail(f"{c} in the answer"))
    stored = api.get(f"/v1/ingests/{report['id']}")
    assert stored.status_code == 200 and [t["triage_id"] for t in stored.json()["tests"]] == [
        t["triage_id"] for t in report["tests"]
    ]
    again = api.post("/v1/ingest", json=body)
    assert again.status_code == 200 and again.json()["id"] == report["id"]


def test_values_a_database_cannot_hold_are_made_storable_before_anything_is_stored(store: Store) -> None:
    """Durations that are not numbers and NUL characters (PostgreSQL text refuses them) never reach
    the database, whatever a parser let through: each is a warning, the upload is stored once."""
    results = parse_bytes(BENCH.RESULTS.encode(), "junit.xml", "auto")
    odd = (float("nan"), float("inf"), None)
    runs = tuple(
        replace(r, duration_s=odd[i], test_id=r.test_id + ("\x00x" if i == 2 else ""))
        for i, r in enumerate(results.runs)
    )
    results = replace(results, runs=runs)
    triaged = tuple(TriagedRun(r, ("test_net.py",), None, "no script found") for r in runs if r.failed)
    report = CiReport(
        format=results.format,
        total=3,
        passed=2,
        skipped=0,
        triaged=triaged,
        groups=group(triaged),
        results=results,
    )
    job = Job(job_url=f"https://ci.example.test/jobs/{uuid.uuid4().hex}")
    started = datetime.now(UTC)
    records = run_records(report, job, started)
    stored, ingest_id = record_ingest(
        store, report, {}, source="junit.xml", job=job, started=started, records=records
    )
    json.dumps(stored.to_dict(), allow_nan=False)
    assert sum("not a finite number" in w for w in stored.warnings) == 2
    assert any("NUL" in w for w in stored.warnings)
    launch = LaunchStore(store).get(stored.launch_id or 0)
    assert launch is not None and launch["ingest_id"] == ingest_id
    assert [t["duration_s"] for t in launch["tests"]] == [None, None, None]
    assert not any("\x00" in t["test_id"] for t in launch["tests"])
    again, again_id = record_ingest(
        store, report, {}, source="junit.xml", job=job, started=started, records=records
    )
    assert again_id == ingest_id and again.launch_id == stored.launch_id


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("test_id", "test_a.py::test_\x00nul", "NUL"),
        ("test_id", "test_a.py::test_" + "x" * 1500, "1000 characters"),
        ("test_id", "  ", "empty"),
        ("commit", "c" * 65, "at most 64"),
    ],
)
def test_a_run_no_database_can_hold_is_refused_before_any_is_stored(
    api: httpx.Client, field: str, value: str, said: str
) -> None:
    """``POST /v1/runs``: one record a column cannot hold refuses the request, on both backends."""
    job = f"https://ci.example.test/runs/{uuid.uuid4().hex}"
    good = {"test_id": "test_a.py::test_ok", "verdict": "pass", "job_url": job}
    answer = api.post("/v1/runs", json={"runs": [good, {**good, "verdict": "fail", field: value}]})
    assert answer.status_code == 422 and said in answer.json()["detail"], answer.text
    assert api.post("/v1/runs", json={"runs": [good]}).json()["runs"][0]["duplicate"] is False


# --------------------------------------------------------------------------------------------
# Write failures: an error to the client, nothing half stored
# --------------------------------------------------------------------------------------------


@pytest.mark.slow  # a server of its own
def test_an_upload_the_database_refuses_is_a_503_and_leaves_nothing(tmp_path: Path) -> None:
    db = tmp_path / "tcfl.db"
    server = Server(f"sqlite:///{db}", tmp_path, env=dict(LIMITS), workers_off=True).start()
    try:
        with server.client() as api:
            assert api.post("/v1/ingest", json=BENCH.upload(1)).status_code == 200
            counts = {t: _rows(db, t) for t in ("triage_requests", "ci_runs", "runs", "launches")}
            with sqlite3.connect(db) as conn:  # the launch's tests can no longer be written
                conn.execute("DROP TABLE launch_tests")
            refused = api.post("/v1/ingest", json=BENCH.upload(2))
            assert refused.status_code == 503, refused.text
            assert "nothing of it was stored" in refused.json()["detail"]
            assert {t: _rows(db, t) for t in counts} == counts  # not the triage, ingest nor runs
            health = api.get("/healthz")
            assert health.status_code == 503 and "a write was refused" in health.json()["database"]
            with sqlite3.connect(db) as conn:  # a triage's log can no longer be written
                conn.execute("DROP TABLE log_chunks")
            triage = api.post("/v1/triage", json=example_body(ranker="heuristic"))
            assert triage.status_code == 503 and "nothing of it was stored" in triage.json()["detail"]
            assert _rows(db, "triage_requests") == counts["triage_requests"]
    finally:
        server.stop()
    assert "unhandled error" not in server.log_text()


@pytest.mark.slow  # a migrated database of its own
def test_a_full_database_is_refused_as_disk_full_and_health_says_so(tmp_path: Path) -> None:
    """SQLite's page limit stands in for the disk (the slow test fills a real tmpfs)."""
    store = Store.open(f"sqlite:///{tmp_path / 'full.db'}")
    try:
        with store.engine.connect() as conn:
            pages = int(conn.execute(text("PRAGMA page_count")).scalar_one())
        store.engine.dispose()

        @event.listens_for(store.engine, "connect")
        def _limit(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.execute(f"PRAGMA max_page_count={pages + 8}")

        assert store.health() is None
        case = Submission(scripts=(), log=uuid.uuid4().hex * 4_000, options={}, test_id="t")  # incompressible
        stored = 0
        with pytest.raises(StoreUnavailable) as refused:
            for _ in range(100):
                store.record_triages([(case, {"ranking": []})])
                stored += 1
        assert refused.value.disk_full and "disk is full" in str(refused.value)
        assert len(store.list_triage(limit=500).items) == stored
        problem = store.health()
        assert problem is not None and "disk is full" in problem
    finally:
        store.close()


# --------------------------------------------------------------------------------------------
# The SQLite file removed
# --------------------------------------------------------------------------------------------


def test_a_removed_sqlite_file_degrades_health_refuses_writes_and_a_restart(tmp_path: Path) -> None:
    """The quick version (the slow one removes it under load and counts what was acknowledged)."""
    db = tmp_path / "tcfl.db"
    url = f"sqlite:///{db}"
    server = Server(url, tmp_path, env=dict(LIMITS), workers_off=True).start()
    try:
        with server.client() as api:
            assert api.post("/v1/ingest", json=BENCH.upload(1)).status_code == 200
            db.unlink()
            health = wait_for(
                lambda: (h := api.get("/healthz")).status_code == 503 and h,
                timeout=5,
                interval=0.05,
                what="/healthz to say degraded",
            )
            assert "was removed" in health.json()["database"] and health.json()["status"] == "degraded"
            refused = api.post("/v1/ingest", json=BENCH.upload(2))
            assert refused.status_code == 503 and "was removed" in refused.json()["detail"]
            assert not db.exists()  # no connection made a new, empty file there
    finally:
        server.stop()
    again = subprocess.run(
        tcfl_command("serve", "--port", "0"),
        env=clean_env(TCFL_DATABASE_URL=url),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode != 0 and "is missing" in again.stderr and "tcfl.db.created" in again.stderr
    assert not db.exists()  # a restart refused too: no empty database where this one was


def test_a_replaced_sqlite_file_is_refused_not_written(tmp_path: Path) -> None:
    """A file put in the database's place (a backup copied back under a running server) is not the
    database the process opened: writes and /healthz say so, the new file is left alone."""
    db = tmp_path / "tcfl.db"
    store = Store.open(f"sqlite:///{db}")
    try:
        case = Submission(scripts=(), log="boom", options={}, test_id="kept")
        store.record_triages([(case, {"ranking": []})])
        shutil.copy(db, tmp_path / "copy.db")
        os.replace(tmp_path / "copy.db", db)
        problem = store.health()
        assert problem is not None and "was replaced" in problem
        with pytest.raises(StoreUnavailable, match="was replaced"):
            store.record_triages([(case, {"ranking": []})])
    finally:
        store.close()


# --------------------------------------------------------------------------------------------
# Concurrent writers and readers
# --------------------------------------------------------------------------------------------


def test_concurrent_writers_and_readers_all_get_answers(server: Server) -> None:
    """Uploads, triages and reads at once: every one answered 2xx, none "database is locked"."""
    statuses: list[int] = []
    lock = threading.Lock()
    run = uuid.uuid4().hex

    def client(n: int) -> None:
        with server.client() as api:
            for i in range(3):
                body = BENCH.upload(0) | {"job_url": f"https://ci.example.test/{run}/{n}/{i}"}
                answers = [api.post("/v1/ingest", json=body), api.get("/v1/triage", params={"limit": 20})]
                answers.append(api.get(f"/v1/ingests/{answers[0].json().get('id', 1)}"))
                with lock:
                    statuses.extend(a.status_code for a in answers)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * len(statuses) and len(statuses) == 54
    assert "locked" not in server.log_text()


# --------------------------------------------------------------------------------------------
# Data stored by the version before
# --------------------------------------------------------------------------------------------


@pytest.mark.slow  # a server of its own
def test_data_stored_before_0010_is_read_and_its_job_answers_a_retry(tmp_path: Path) -> None:
    db = tmp_path / "tcfl.db"
    shutil.copy(STORED_0009, db)
    server = Server(f"sqlite:///{db}", tmp_path, env=dict(LIMITS), workers_off=True).start()
    try:
        with server.client() as api:
            stored = api.get("/v1/ingests/1").json()
            assert [t["triage_id"] for t in stored["tests"]] == [1, 2]
            assert all(t["result"]["ranking"] for t in stored["tests"])
            body = {
                "results": {
                    "name": "junit.xml",
                    "content": (DATA / "store" / "store-0009-junit.xml").read_text(),
                },
                "scripts": [
                    {"path": str(p.relative_to(SUITE)), "content": p.read_text()}
                    for p in sorted(SUITE.rglob("*.py"))
                ],
                "ranker": "heuristic",
                "job_url": JOB_0009,
            }
            again = api.post("/v1/ingest", json=body)
            assert again.status_code == 200, again.text
            assert again.json()["id"] == 1 and [t["triage_id"] for t in again.json()["tests"]] == [1, 2]
    finally:
        server.stop()
    assert _rows(db, "ci_runs") == 1 and _rows(db, "triage_requests") == 2


# --------------------------------------------------------------------------------------------
# Faults under load (scripts/storebench.py)
# --------------------------------------------------------------------------------------------


def _whole(row: dict[str, Any]) -> None:
    assert row["acknowledged"] > 0, row
    assert row["missing"] == 0 and row["partial"] == 0, row
    assert row["present_whole"] == row["acknowledged"], row
    assert row["ingests_without_launch"] == 0 and row["runs_not_once"] == 0, row
    assert row["triages_not_once"] == 0, row


@pytest.mark.slow
def test_postgresql_restarted_twice_under_load_loses_no_acknowledged_upload() -> None:
    missing = BENCH.postgres_missing()
    if missing:
        pytest.skip(f"no private PostgreSQL: {missing}")
    row = BENCH.pg_restarts(restarts=2, clients=2, between_s=2.0)
    _whole(row)
    assert row["healthz_after"][0] == 200, row


@pytest.mark.slow
def test_the_sqlite_file_removed_under_load_loses_no_acknowledged_upload() -> None:
    row = BENCH.sqlite_removed(clients=2, before_s=2.0, after_s=2.0)
    _whole(row)
    assert row["acked_after_removal"] == 0, row
    assert row["to_degraded_s"] is not None and row["to_degraded_s"] <= 5, row
    assert row["restart_exit"] not in (None, 0) and not row["empty_database_created"], row


@pytest.mark.slow
def test_a_full_disk_under_load_is_507_and_loses_no_acknowledged_upload() -> None:
    missing = BENCH.tmpfs_missing()
    if missing:
        pytest.skip(f"no small tmpfs: {missing}")
    row = BENCH.disk_full(clients=2)
    _whole(row)
    assert row["statuses"].get("507"), row
    assert row["healthz_when_full"][0] == 503, row
