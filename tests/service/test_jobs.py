"""The batch worker survives kill -9, and several workers never share an item.

Each item asks the stand-in model server, which answers after a delay, so there is time to kill a
process mid-batch. Assertions read the database itself: one result row per item, nothing lost.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from app.store.store import BatchItemRow, ResultRow
from tests.service.helpers import Server, clean_env, example_body, jsonl, standin, tcfl_command, wait_for

pytestmark = pytest.mark.slow  # real serve/batch processes and a delayed model: tens of seconds each

CASES = 50
CONCURRENCY = 4
MODEL_DELAY_S = 0.4


def _rows(database_url: str, batch_id: int) -> tuple[list[BatchItemRow], list[ResultRow]]:
    engine = create_engine(database_url)
    try:
        with Session(engine) as session:
            items = list(session.scalars(select(BatchItemRow).where(BatchItemRow.batch_id == batch_id)))
            results = list(
                session.scalars(select(ResultRow).where(ResultRow.batch_item_id.in_([i.id for i in items])))
            )
            return items, results
    finally:
        engine.dispose()


def _assert_each_item_done_once(database_url: str, batch_id: int, total: int) -> list[BatchItemRow]:
    items, results = _rows(database_url, batch_id)
    assert len(items) == total
    assert all(item.status == "done" for item in items)
    assert len(results) == total
    assert sorted(r.batch_item_id for r in results) == sorted(item.id for item in items)
    assert {r.request_id for r in results} == {item.request_id for item in items}
    assert all(r.data["ranker"] == "llm" for r in results)
    return items


def test_serve_killed_mid_batch_resumes_with_nothing_lost_or_done_twice(
    database_url: str, tmp_path: Path
) -> None:
    with standin(MODEL_DELAY_S) as model:
        env = {"TCFL_MODEL_URL": model.url, "TCFL_BATCH_CONCURRENCY": str(CONCURRENCY)}
        first = Server(database_url, tmp_path, env=env, worker_id="restart-test").start()
        try:
            with first.client() as api:
                cases = [example_body(ranker="llm", test_id=f"case-{i}") for i in range(CASES)]
                batch_id = api.post("/v1/batches", json={"cases": cases}).json()["id"]
                wait_for(
                    lambda: api.get(f"/v1/batches/{batch_id}").json()["done"] >= 10,
                    what="10 items done before the kill",
                )
        finally:
            first.kill()
        items, results = _rows(database_url, batch_id)
        done_at_kill = len(results)
        assert 10 <= done_at_kill < CASES
        assert sum(1 for i in items if i.status == "running") <= CONCURRENCY

        second = Server(database_url, tmp_path, env=env, worker_id="restart-test").start()
        try:
            with second.client() as api:
                view = wait_for(
                    lambda: (v := api.get(f"/v1/batches/{batch_id}").json())["status"] == "done" and v,
                    what="the batch to finish after the restart",
                )
        finally:
            second.stop()
    assert view["done"] == CASES and view["failed"] == 0
    items = _assert_each_item_done_once(database_url, batch_id, CASES)
    attempts = Counter(item.attempts for item in items)
    assert set(attempts) <= {1, 2}
    assert attempts[2] <= CONCURRENCY
    assert model.served is not None
    assert CASES <= model.served <= CASES + CONCURRENCY


def test_two_worker_processes_never_take_the_same_item(database_url: str, tmp_path: Path) -> None:
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_bytes(jsonl([example_body(ranker="llm", test_id=f"mw-{i}") for i in range(40)]))
    gate = tmp_path / "gate"
    with standin(MODEL_DELAY_S, gate=gate) as model:
        env = clean_env(TCFL_DATABASE_URL=database_url, TCFL_MODEL_URL=model.url)

        def start(name: str, *extra: str) -> subprocess.Popen[str]:
            args = ["batch", str(cases_file), "--out", str(tmp_path / f"{name}.jsonl"), "--concurrency", "3"]
            return subprocess.Popen(
                tcfl_command(*args, "--worker-id", name, *extra),
                env=env,
                cwd=tmp_path,
                stderr=subprocess.PIPE,
                text=True,
            )

        first = start("worker-a")
        batch_id = wait_for(lambda: _first_batch(database_url), what="the first worker to queue the batch")
        second = start("worker-b", "--resume")
        # No model answer until both workers hold items. Without the gate worker-a drained the 40
        # items in about 5 s while worker-b was still starting (a new interpreter, imports, the
        # migration check), so on a busy machine worker-b found nothing left and the test failed.
        wait_for(
            lambda: _lease_holders(database_url, batch_id) == {"worker-a", "worker-b"},
            what="both workers to hold items",
        )
        gate.touch()
        out_a, out_b = first.communicate(timeout=300)[1], second.communicate(timeout=300)[1]
    assert first.returncode == 0, out_a
    assert second.returncode == 0, out_b
    assert f"resuming batch {batch_id}" in out_b
    items = _assert_each_item_done_once(database_url, batch_id, 40)
    assert all(item.attempts == 1 for item in items)
    by_worker = Counter(item.finished_by for item in items)
    assert set(by_worker) == {"worker-a", "worker-b"}
    for name in ("worker-a", "worker-b"):
        lines = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        assert [line["index"] for line in lines] == list(range(40))
        assert all(line["status"] == "done" and line["result"]["ranking"] for line in lines)


def _lease_holders(database_url: str, batch_id: int) -> set[str]:
    items, _ = _rows(database_url, batch_id)
    return {item.locked_by for item in items if item.status == "running" and item.locked_by}


def _first_batch(database_url: str) -> int | None:
    engine = create_engine(database_url)
    try:
        with Session(engine) as session:
            return session.scalar(select(BatchItemRow.batch_id).limit(1))
    except Exception:
        return None
    finally:
        engine.dispose()


def test_shutdown_mid_item_hands_the_item_back(database_url: str, tmp_path: Path) -> None:
    with standin(5.0) as model:
        env = {"TCFL_MODEL_URL": model.url, "TCFL_BATCH_CONCURRENCY": "2"}
        srv = Server(database_url, tmp_path, env=env, worker_id="graceful").start()
        with srv.client() as api:
            batch_id = api.post("/v1/batches", json={"cases": [example_body(ranker="llm")] * 2}).json()["id"]
            wait_for(lambda: api.get(f"/v1/batches/{batch_id}").json()["running"] == 2, what="items running")
        assert srv.proc is not None
        srv.proc.send_signal(signal.SIGTERM)
        srv.proc.wait(timeout=30)
    items, results = _rows(database_url, batch_id)
    assert results == []
    assert [item.status for item in items] == ["queued", "queued"]
    assert all(item.locked_by is None for item in items)
