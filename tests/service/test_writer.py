"""The triage writer: triages finishing together are stored in one transaction, each answered.

Real databases (SQLite and PostgreSQL), real triages of the running example. To make a batch
certain, another connection holds the write lock while the triages arrive, as a busy database
does under load; the writer's first transaction waits on it and the rest queue up behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from app.analysis.model import Script
from app.service.metrics import Metrics
from app.service.runner import Runner
from app.service.writer import TriageWriter
from app.store.store import Store, StoreUnavailable, Submission

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "running-example"
OPTIONS = {"level": "block", "k": 3, "trace": "tplus", "ranker": "heuristic", "log_functions": ["Log.log"]}


@pytest.fixture(scope="module")
def finished() -> tuple[Submission, dict[str, Any]]:
    """A real finished triage (its result data and snapshot), as a runner hands it to be stored."""
    case = Submission(
        scripts=(Script("test_example.py", (EXAMPLE / "test_example.py").read_text()),),
        log=(EXAMPLE / "failure.log").read_text(),
        options=OPTIONS,
    )
    return case, asyncio.run(Runner(None, Metrics())(case))


@contextmanager
def write_lock(store: Store) -> Iterator[Any]:
    """Hold the database's write lock (SQLite) or the requests table (PostgreSQL) until released."""
    conn = store.engine.connect()
    try:
        if store.dialect == "sqlite":
            conn.begin()  # the engine's "begin" event issues BEGIN IMMEDIATE: the write lock
        else:
            conn.begin()
            conn.exec_driver_sql("LOCK TABLE triage_requests IN ACCESS EXCLUSIVE MODE")
        yield conn
    finally:
        conn.close()


@contextmanager
def sqlite_store(tmp_path: Path, kind: type[Store] = Store) -> Iterator[Store]:
    """A store on a SQLite file of its own, for the tests that break it on purpose."""
    store = kind.open(f"sqlite:///{tmp_path / 'tcfl.db'}")
    try:
        yield store
    finally:
        store.close()


def _commits(store: Store) -> list[int]:
    commits: list[int] = []
    event.listen(store.engine, "commit", lambda _conn: commits.append(1))
    return commits


def test_triages_finishing_together_share_one_transaction_and_each_reads_back(
    store: Store, finished: tuple[Submission, dict[str, Any]]
) -> None:
    case, data = finished
    cases = [replace(case, test_id=f"test_{i}") for i in range(40)]
    writer = TriageWriter(store)
    commits = _commits(store)

    async def main() -> list[Any]:
        with write_lock(store) as held:
            waiting = [asyncio.ensure_future(writer.record(c, dict(data))) for c in cases]
            await asyncio.sleep(0.3)  # every triage is queued; the first transaction waits
            assert not any(w.done() for w in waiting)
            held.rollback()
        return await asyncio.gather(*waiting)

    stored = asyncio.run(main())
    writer.close()
    assert writer.written == 40
    assert writer.batches <= 2 and len(commits) <= 2  # the first waited on the lock, the rest came together
    assert len({s.id for s in stored}) == 40
    for one, c in zip(stored, cases, strict=True):
        again = store.get_triage(one.id)
        assert again is not None and again.status == "done" and again.test_id == c.test_id
        assert again.result == one.result
        assert again.result["ranking"][0]["id"] == "BLOCK 6"
    assert len(store.list_triage(limit=100).items) == 40


def test_a_triage_that_cannot_be_stored_fails_alone(
    store: Store, finished: tuple[Submission, dict[str, Any]]
) -> None:
    """The batch fails as a whole, then each triage is written on its own: only the bad one fails."""
    case, data = finished
    writer = TriageWriter(store)
    bad = {**data, "ranking": [{"id": "BLOCK 1", "score": {1, 2}}]}  # a set: not JSON

    async def main() -> list[Any]:
        with write_lock(store) as held:
            waiting = [
                asyncio.ensure_future(
                    writer.record(replace(case, test_id=f"test_{i}"), dict(bad if i == 3 else data))
                )
                for i in range(6)
            ]
            await asyncio.sleep(0.3)
            held.rollback()
        return await asyncio.gather(*waiting, return_exceptions=True)

    outcomes = asyncio.run(main())
    writer.close()
    assert isinstance(outcomes[3], Exception)
    good = [o for i, o in enumerate(outcomes) if i != 3]
    assert all(not isinstance(o, BaseException) and o.status == "done" for o in good)
    assert sorted(t.test_id or "" for t in store.list_triage(limit=10).items) == [
        f"test_{i}" for i in range(6) if i != 3
    ]


def test_a_database_that_refuses_the_batch_fails_it_at_once(
    tmp_path: Path, finished: tuple[Submission, dict[str, Any]]
) -> None:
    """No retry one by one when the database itself refused (each would wait out the busy timeout)."""
    case, data = finished
    with sqlite_store(tmp_path) as store:
        with store.engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE log_chunks")  # every write now fails in the database
        writer = TriageWriter(store)
        begins: list[int] = []
        event.listen(store.engine, "begin", lambda _conn: begins.append(1))

        async def main() -> list[Any]:
            with write_lock(store) as held:
                waiting = [asyncio.ensure_future(writer.record(case, dict(data))) for _ in range(5)]
                await asyncio.sleep(0.3)
                held.rollback()
            return await asyncio.gather(*waiting, return_exceptions=True)

        begins.clear()
        outcomes = asyncio.run(main())
        writer.close()
        assert all(isinstance(o, StoreUnavailable) for o in outcomes)
        assert all(isinstance(o.__cause__, OperationalError) for o in outcomes)
        # one transaction tried per batch (the first may have left before the rest came), none per triage
        assert writer.batches <= 2 and len(begins) <= 3 and writer.written == 0
        assert store.list_triage(limit=10).items == []


def test_a_request_cancelled_while_its_triage_is_written_still_has_it_stored(
    store: Store, finished: tuple[Submission, dict[str, Any]]
) -> None:
    case, data = finished
    writer = TriageWriter(store)

    async def main() -> None:
        with write_lock(store) as held:
            task = asyncio.ensure_future(writer.record(replace(case, test_id="gone"), dict(data)))
            await asyncio.sleep(0.1)
            task.cancel()
            held.rollback()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    writer.close()  # stores what is queued before it returns
    assert [t.test_id for t in store.list_triage(limit=10).items] == ["gone"]


def test_a_closed_writer_refuses_new_triages(
    store: Store, finished: tuple[Submission, dict[str, Any]]
) -> None:
    case, data = finished
    writer = TriageWriter(store)
    first = asyncio.run(writer.record(case, dict(data)))
    writer.close()
    assert store.get_triage(first.id) is not None
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(writer.record(case, dict(data)))


class _ShortStore(Store):
    """A store whose first batch answer is one triage short (a bug the writer must survive)."""

    broken = True

    def record_triages(self, items):  # type: ignore[no-untyped-def]
        stored = super().record_triages(items)
        if self.broken:
            self.broken = False
            return stored[:-1]
        return stored


def test_a_writer_that_hits_a_bug_answers_with_the_error_and_goes_on(
    tmp_path: Path, finished: tuple[Submission, dict[str, Any]]
) -> None:
    case, data = finished
    with sqlite_store(tmp_path, _ShortStore) as store:
        writer = TriageWriter(store)
        with pytest.raises(ValueError):
            asyncio.run(writer.record(case, dict(data)))
        again = asyncio.run(writer.record(case, dict(data)))  # same thread, still serving
        assert again.status == "done" and store.get_triage(again.id) is not None
        writer.close()
