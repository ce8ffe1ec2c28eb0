"""The store and its queue on real SQLite files and real PostgreSQL schemas."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.analysis.model import Script
from app.store.migrations import import_models
from app.store.store import (
    Base,
    BatchItemRow,
    ResultRow,
    ScriptRow,
    Store,
    Submission,
    batch_status,
)
from tests.service.helpers import REPO, clean_env

OPTIONS = {"level": "block", "k": 3, "trace": "tplus", "ranker": "heuristic", "log_functions": []}


def _case(n: int = 0, content: str = "def test():\n    assert 1 == 2\n") -> Submission:
    return Submission(
        scripts=(Script("t.py", content),), log=f"log {n}\nAssertionError", options=OPTIONS, test_id=f"c{n}"
    )


def _count(store: Store, column: object) -> int:
    with Session(store.engine) as session:
        return session.scalar(select(func.count(column))) or 0


def test_scripts_are_stored_once_per_content(store: Store) -> None:
    shared = "def shared():\n    pass\n"
    store.create_request(
        Submission(scripts=(Script("a.py", shared), Script("b.py", "x = 1\n")), log="l", options=OPTIONS)
    )
    store.create_batch([_case(1, shared), _case(2, shared)], source="api")
    assert _count(store, ScriptRow.id) == 2
    loaded = store.load_case(store.create_request(_case(3, shared)))
    assert loaded.scripts == (Script("t.py", shared),)


def test_text_with_nul_and_non_ascii_round_trips(store: Store) -> None:
    case = Submission(scripts=(Script("ü.py", "x = '\x00é'\n"),), log="\x00\x01 ✓ log", options=OPTIONS)
    stored = store.record_triage(case, {"ranking": [{"code": "x = '\x00'"}], "warnings": []})
    assert store.load_case(stored.id) == case
    assert store.get_triage(stored.id) == stored
    assert stored.status == "done" and stored.result is not None
    assert stored.result["ranking"][0]["code"] == "x = '\x00'"


def test_claims_are_exclusive_under_concurrent_workers(store: Store) -> None:
    batch_id = store.create_batch([_case(i) for i in range(40)], source="api")
    claimed: list[tuple[str, int]] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        while (claim := store.claim(name, lease_s=600)) is not None:
            with lock:
                claimed.append((name, claim.item_id))

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = [item_id for _, item_id in claimed]
    assert len(ids) == 40
    assert len(set(ids)) == 40
    view = store.get_batch(batch_id)
    assert view is not None
    assert view["running"] == 40
    assert all(item["attempts"] == 1 for item in view["items"])


def test_stale_leases_are_taken_over_and_live_ones_are_not(store: Store) -> None:
    store.create_batch([_case(0), _case(1)], source="api")
    first = store.claim("a", lease_s=600)
    assert first is not None
    other = store.claim("b", lease_s=600)
    assert other is not None and other.item_id != first.item_id
    assert store.claim("b", lease_s=600) is None
    taken = store.claim("b", lease_s=0)
    assert taken is not None
    assert taken.item_id == first.item_id
    assert taken.attempts == 2


def test_heartbeat_keeps_a_lease_alive(store: Store) -> None:
    store.create_batch([_case(0)], source="api")
    claim = store.claim("a", lease_s=600)
    assert claim is not None
    with Session(store.engine) as session, session.begin():
        item = session.get_one(BatchItemRow, claim.item_id)
        before = item.locked_at
    store.heartbeat("a", [claim.item_id])
    store.heartbeat("someone-else", [claim.item_id])
    with Session(store.engine) as session:
        item = session.get_one(BatchItemRow, claim.item_id)
        assert item.locked_at is not None and before is not None and item.locked_at > before
        assert item.locked_by == "a"


def test_release_own_requeues_only_this_workers_items(store: Store) -> None:
    batch_id = store.create_batch([_case(i) for i in range(3)], source="api")
    mine = store.claim("me", lease_s=600)
    theirs = store.claim("them", lease_s=600)
    assert mine is not None and theirs is not None
    assert store.release_own("me") == 1
    view = store.get_batch(batch_id)
    assert view is not None
    statuses = {item["index"]: item["status"] for item in view["items"]}
    assert statuses[mine.index] == "queued"
    assert statuses[theirs.index] == "running"


def test_an_item_gets_exactly_one_result(store: Store) -> None:
    batch_id = store.create_batch([_case(0)], source="api")
    first = store.claim("a", lease_s=600)
    assert first is not None
    second = store.claim("b", lease_s=0)
    assert second is not None and second.item_id == first.item_id
    assert store.complete_item(second, {"ranking": [], "by": "b"}, worker_id="b") is True
    assert store.complete_item(first, {"ranking": [], "by": "a"}, worker_id="a") is False
    store.fail_item(first, "late failure", final=True, worker_id="a")
    assert _count(store, ResultRow.id) == 1
    view = store.get_batch(batch_id)
    assert view is not None
    assert view["status"] == "done"
    assert view["items"][0]["status"] == "done"
    result = store.get_triage(view["items"][0]["result_id"])
    assert result is not None and result.status == "done"
    assert result.result is not None and result.result["by"] == "b"

    with pytest.raises(IntegrityError), Session(store.engine) as session, session.begin():
        session.add(ResultRow(request_id=first.request_id, batch_item_id=first.item_id, data={}))


def test_failures_retry_then_fail_for_good(store: Store) -> None:
    batch_id = store.create_batch([_case(0)], source="api")
    claim = store.claim("a", lease_s=600)
    assert claim is not None
    store.fail_item(claim, "model hiccup", final=False, worker_id="a")
    view = store.get_batch(batch_id)
    assert view is not None
    assert view["items"][0]["status"] == "queued"
    again = store.claim("a", lease_s=600)
    assert again is not None and again.attempts == 2
    store.fail_item(again, "broken \x00 for good", final=True, worker_id="a")
    view = store.get_batch(batch_id)
    assert view is not None
    assert view["status"] == "done"
    assert view["failed"] == 1
    assert view["items"][0]["error"] == "broken \\x00 for good"
    triage = store.get_triage(again.request_id)
    assert triage is not None and triage.status == "failed"


def test_claim_can_be_confined_to_one_batch(store: Store) -> None:
    one = store.create_batch([_case(0)], source="api")
    two = store.create_batch([_case(1)], source="cli", input_sha256="f" * 64)
    claim = store.claim("cli", lease_s=600, batch_id=two)
    assert claim is not None and claim.batch_id == two
    assert store.claim("cli", lease_s=600, batch_id=two) is None
    assert store.open_items(one) == 1
    assert store.find_batch("f" * 64) == two
    assert store.find_batch("0" * 64) is None


@pytest.mark.parametrize(
    ("counts", "status"),
    [
        ({"queued": 3}, "queued"),
        ({"queued": 2, "running": 1}, "running"),
        ({"queued": 2, "done": 1}, "running"),
        ({"done": 2, "failed": 1}, "done"),
        ({}, "done"),
    ],
)
def test_batch_status_follows_its_items(counts: dict[str, int], status: str) -> None:
    assert batch_status(counts) == status


def test_listing_pages_and_filters(store: Store) -> None:
    ids = [store.create_request(_case(i % 2), status="done") for i in range(5)]
    page = store.list_triage(limit=2)
    assert [item.id for item in page.items] == ids[::-1][:2]
    assert page.next_cursor == ids[3]
    rest = store.list_triage(limit=10, cursor=page.next_cursor)
    assert [item.id for item in rest.items] == ids[::-1][2:]
    assert rest.next_cursor is None
    assert [i.id for i in store.list_triage(limit=10, test_id="c1").items] == [ids[3], ids[1]]
    assert store.list_triage(limit=10, status="failed").items == []


def test_migrations_match_the_models(store: Store) -> None:
    import_models()
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []
    assert set(inspect(store.engine).get_table_names()) >= {
        "scripts",
        "triage_requests",
        "request_scripts",
        "results",
        "batches",
        "batch_items",
        "alembic_version",
    }


@pytest.mark.slow
def test_alembic_command_line_upgrade(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    alembic = [sys.executable, "-m", "alembic", "-c", str(REPO / "app/store/migrations/alembic.ini")]
    env = clean_env(TCFL_DATABASE_URL=url)
    done = subprocess.run(
        [*alembic, "upgrade", "head"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    current = subprocess.run([*alembic, "current"], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert current.stdout.strip().endswith("(head)"), current.stdout
    reopened = Store.open(url)
    assert reopened.list_triage(limit=1).items == []
    reopened.close()


def test_interrupted_synchronous_triages_are_marked_failed(store: Store) -> None:
    orphan = store.create_request(_case(0))
    store.create_batch([_case(1)], source="api")
    claim = store.claim("w", lease_s=600)
    assert claim is not None
    assert store.fail_interrupted(older_than_s=3600) == 0
    assert store.fail_interrupted(older_than_s=0) == 1
    triage = store.get_triage(orphan)
    assert triage is not None
    assert triage.status == "failed" and "interrupted" in (triage.error or "")
    batch_request = store.get_triage(claim.request_id)
    assert batch_request is not None and batch_request.status == "running"
    store.release_own("w")
    requeued = store.get_triage(claim.request_id)
    assert requeued is not None and requeued.status == "queued"


def test_the_migration_check_runs_only_when_the_schema_differs(tmp_path: Path) -> None:
    from app.store.store import make_engine, migrate, schema_is_current, script_heads

    assert script_heads() and all(isinstance(h, str) for h in script_heads())
    engine = make_engine(f"sqlite:///{tmp_path / 'schema.db'}")
    try:
        assert not schema_is_current(engine)  # no table yet
        migrate(engine)
        assert schema_is_current(engine)
        _downgrade(engine, "0001")  # back to a 0001 database: every later revision undone
        assert not schema_is_current(engine)  # an older schema: alembic upgrades it
        migrate(engine)
        assert schema_is_current(engine)
    finally:
        engine.dispose()


def _downgrade(engine: object, revision: str) -> None:
    """Alembic's own downgrade, with the same configuration ``migrate`` uses."""
    from alembic import command
    from alembic.config import Config

    from app.store.store import MIGRATIONS_DIR

    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as conn:  # type: ignore[attr-defined]
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def count_commits(store: Store) -> list[int]:
    """One entry per transaction committed from now on: SQLAlchemy's, and on SQLite those the
    triage writer commits on the driver's connection (``Store._record_sqlite``), past its events."""
    from sqlalchemy import event

    commits: list[int] = []
    if store.engine.dialect.name != "sqlite":
        event.listen(store.engine, "commit", lambda _conn: commits.append(1))
        return commits

    def traced(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.set_trace_callback(lambda sql: commits.append(1) if sql == "COMMIT" else None)

    store.engine.dispose()  # the connections made from now on are traced
    event.listen(store.engine, "connect", traced)
    return commits


def test_a_fast_synchronous_triage_is_written_in_one_transaction(store: Store) -> None:
    from app.service.jobs import triage_now
    from app.service.metrics import Metrics
    from app.service.runner import Runner

    commits = count_commits(store)
    runner = Runner(client=None, metrics=Metrics())  # in-process: the running example takes milliseconds
    example = Path(__file__).resolve().parents[1] / "data" / "running-example"
    case = Submission(
        scripts=(Script("test_example.py", (example / "test_example.py").read_text()),),
        log=(example / "failure.log").read_text(),
        options={**OPTIONS, "log_functions": ["Log.log"]},
    )
    stored = asyncio.run(triage_now(store, runner, None, case))
    assert len(commits) == 1
    assert stored.status == "done" and stored.result is not None
    assert stored.result["ranking"][0]["id"] == "BLOCK 6"
    assert store.get_triage(stored.id) == stored

    commits.clear()
    bad = replace(case, options={**case.options, "level": "everything"})
    with pytest.raises(ValueError, match="level must be one of"):
        asyncio.run(triage_now(store, runner, None, bad))
    assert len(commits) == 1  # the failure is stored with its input, in one transaction too
    failed = store.list_triage(limit=1, status="failed").items[0]
    assert "level must be one of" in (failed.error or "")


def _example_case() -> Submission:
    example = Path(__file__).resolve().parents[1] / "data" / "running-example"
    return Submission(
        scripts=(Script("test_example.py", (example / "test_example.py").read_text()),),
        log=(example / "failure.log").read_text(),
        options={**OPTIONS, "log_functions": ["Log.log"]},
    )


@pytest.mark.slow
def test_a_triage_queued_behind_a_busy_worker_is_still_written_once(store: Store) -> None:
    """Time spent waiting for an analysis worker is not analysis: no running row, one commit."""
    from app.service.jobs import RUNNING_AFTER_S, triage_now
    from app.service.metrics import Metrics
    from app.service.pool import AnalysisPool, PoolLimits
    from app.service.runner import Runner

    counted: list[list[int]] = []  # the commits made once the worker is busy

    async def main() -> tuple[object, float]:
        pool = AnalysisPool(1, PoolLimits())
        await pool.start()
        try:
            busy = asyncio.ensure_future(pool.run("burn", 3 * RUNNING_AFTER_S))
            while not pool.busy():
                await asyncio.sleep(0.01)
            counted.append(count_commits(store))
            started = asyncio.get_running_loop().time()
            stored = await triage_now(store, Runner(None, Metrics(), pool=pool), None, _example_case())
            waited = asyncio.get_running_loop().time() - started
            await busy
            return stored, waited
        finally:
            await pool.close()

    stored, waited = asyncio.run(main())
    assert waited > 2 * RUNNING_AFTER_S  # it did wait in the queue, past the threshold
    assert len(counted[0]) == 1
    assert stored.status == "done" and store.get_triage(stored.id) == stored  # type: ignore[attr-defined]


def test_a_triage_whose_analysis_outlasts_the_threshold_is_written_running_first(store: Store) -> None:
    from sqlalchemy import event

    from app.service.jobs import RUNNING_AFTER_S, triage_now
    from app.service.metrics import Metrics
    from app.service.runner import Runner

    runner = Runner(client=None, metrics=Metrics())
    seen: list[str] = []

    async def slow(case: Submission) -> dict[str, object]:
        await asyncio.sleep(2 * RUNNING_AFTER_S)  # a model call, say
        seen.extend(t.status for t in store.list_triage(limit=5).items)
        return await runner(case)

    commits: list[int] = []
    event.listen(store.engine, "commit", lambda _conn: commits.append(1))
    stored = asyncio.run(triage_now(store, slow, None, _example_case()))
    assert seen == ["running"] and len(commits) == 3  # the running row, this test's read, the result
    assert stored.status == "done" and store.get_triage(stored.id) == stored
