"""History at scale: build a store of T tests x R runs, then time the history reads and writes.

Fills ``tests``/``versions``/``runs`` directly (PostgreSQL: COPY, then VACUUM ANALYZE; SQLite: bulk
inserts): every run carries a packed estimated trace, failures (10 %) one of 300 error signatures
and a log. Then, for a sample of tests, it times in this process the history page
(``HistoryStore.history``), a page of signature groups (``HistoryStore.signatures``) and what a
history-aware triage adds (loading the runs with versions, traces and sibling runs, and ranking with
them, minus the same triage without history); over HTTP against ``tcfl serve`` on loopback
``GET /v1/tests/{key}/history``, ``GET /v1/tests``, ``GET /v1/signatures`` (a page of 50 groups), one
group (``GET /v1/signatures/{err_sig}``) and ``POST /v1/runs`` (runs with scripts and logs, so each
is analysed); and retention (dry run, then for real). Prints medians and 95th percentiles in
milliseconds, the build time and the database size. Run from the repository root:

    createdb -h 127.0.0.1 -U postgres histbench
    .venv/bin/python scripts/historybench.py --db postgresql+psycopg://postgres@127.0.0.1:5432/histbench \\
        --tests 10000 --runs 500          # the issue's scale (minutes to build)
    dropdb -h 127.0.0.1 -U postgres histbench
    .venv/bin/python scripts/historybench.py --tests 200 --runs 100 --json   # a temporary SQLite file

The database must be empty (or built by this script: ``--skip-build`` measures it again).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
from sqlalchemy import func, insert, select, text  # noqa: E402

from app.analysis.model import Script  # noqa: E402
from app.history.packed import pack_trace  # noqa: E402
from app.history.versions import content_hash, version_id  # noqa: E402
from app.options import TriageOptions  # noqa: E402
from app.rankers.history import HistoryRanker  # noqa: E402
from app.store.history import HistoryStore, RunRow, TestRow, VersionRow  # noqa: E402
from app.store.store import Store, _pack  # noqa: E402
from app.triage import prepare  # noqa: E402

PATH = "tests/test_bench.py"
SCRIPT = "\n".join(
    [
        "import logging",
        "log = logging.getLogger('t')",
        "",
        "def helper(n):",
        "    total = 0",
        "    for i in range(n):",
        "        total += i",
        "    return total",
        "",
        *(
            line
            for k in range(12)
            for line in (
                f"def test_case_{k}():",
                f"    value = helper({k + 3})",
                "    log.info('value %s', value)",
                f"    assert value == {sum(range(k + 3))}",
                "",
            )
        ),
    ]
)
FAIL_LOG = (
    "INFO t: value 3\nTraceback (most recent call last):\n"
    f'  File "/ci/{PATH}", line 13, in test_case_0\n    assert value == 3\nAssertionError\n'
)
VERSIONS = [SCRIPT.replace("helper(3)", f"helper({3 + v})") for v in range(5)]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TRACE_POOL = 256  # distinct traces, packed once (packing 5 M of them would time the packer)
SIG_GROUPS = 300  # err_sigs the failures spread over, each shared by neighbouring tests
COLUMNS = (
    "identity",
    "test_id",
    "version_id",
    "external_id",
    "params",
    "verdict",
    "started_at",
    "env",
    "env_fp",
    "log_z",
    "err_sig",
    "error_message",
    "trace_z",
    "created_at",
)


def key_of(i: int) -> str:
    return f"{PATH}::test_case_{i}"


def build(store: Store, tests: int, runs: int, seed: int) -> float:
    """Versions, tests and runs, in bulk; seconds taken."""
    started = time.perf_counter()
    rng = random.Random(seed)
    vids = [version_id({PATH: t}) for t in VERSIONS]
    with store._tx() as session:
        store._script_ids(session, VERSIONS)
        session.execute(
            insert(VersionRow),
            [
                {"id": v, "files": {PATH: content_hash(t)}, "created_at": T0}
                for v, t in zip(vids, VERSIONS, strict=True)
            ],
        )
        last = T0 + timedelta(hours=runs - 1)
        for start in range(0, tests, 1000):
            session.execute(
                insert(TestRow),
                [
                    {
                        "key": key_of(i),
                        "suite": "bench",
                        "path": PATH,
                        "base_id": f"test_case_{i}",
                        "created_at": T0,
                        "last_run_at": last,
                    }
                    for i in range(start, min(tests, start + 1000))
                ],
            )
        ids = list(session.execute(select(TestRow.id).order_by(TestRow.id)).scalars())
    lines = len(SCRIPT.splitlines())
    traces = []
    for _ in range(TRACE_POOL):
        ran = sorted(rng.sample(range(1, lines + 1), lines // 2))
        traces.append(
            pack_trace({PATH: {"E": ran, "N": sorted(set(range(1, lines + 1)) - set(ran)), "D": []}})
        )
    log_z = _pack(FAIL_LOG)

    def rows() -> Iterator[tuple[Any, ...]]:
        for test_id in ids:
            for n in range(runs):
                fail = rng.random() < 0.1
                yield (
                    hashlib.sha256(f"{test_id}:{n}".encode()).hexdigest(),
                    test_id,
                    vids[min(4, n * 5 // runs)],
                    key_of(test_id),
                    "",
                    "fail" if fail else "pass",
                    T0 + timedelta(hours=n),
                    '{"TZ": "UTC"}',
                    "e",
                    log_z if fail else None,
                    _sig(test_id, n) if fail else None,
                    "AssertionError" if fail else None,
                    traces[rng.randrange(TRACE_POOL)],
                    T0,
                )

    if store.dialect == "postgresql":
        _copy(store, rows())
    else:
        _insert(store, rows())
    return time.perf_counter() - started


def _sig(test_id: int, n: int) -> str:
    """A failure's err_sig: groups span a few neighbouring tests and change over the runs."""
    return hashlib.sha1(f"sig-{(test_id // 5 + n // 100) % SIG_GROUPS}".encode()).hexdigest()


def _copy(store: Store, rows: Iterator[tuple[Any, ...]]) -> None:
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        with cursor.copy(f"COPY runs ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        raw.commit()
        raw.driver_connection.autocommit = True  # VACUUM runs outside a transaction
        try:
            cursor.execute("VACUUM ANALYZE runs")  # settled, as autovacuum leaves it: index-only scans
            cursor.execute("ANALYZE tests")
        finally:
            raw.driver_connection.autocommit = False
    finally:
        raw.close()


def _insert(store: Store, rows: Iterator[tuple[Any, ...]]) -> None:
    batch: list[dict[str, Any]] = []
    for row in rows:
        item = dict(zip(COLUMNS, row, strict=True))
        item["env"] = json.loads(item["env"])
        batch.append(item)
        if len(batch) >= 5000:
            with store._tx() as session:
                session.execute(insert(RunRow), batch)
            batch = []
    if batch:
        with store._tx() as session:
            session.execute(insert(RunRow), batch)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1000, out


def measure_inprocess(store: Store, tests: int, samples: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed + 1)
    history = HistoryStore(store)
    ranker = HistoryRanker()
    request = prepare(
        [Script(PATH, VERSIONS[-1])], FAIL_LOG, TriageOptions(level="block", k=5, ranker="history")
    )
    page, added, load, used, groups = [], [], [], [], []
    history.history_runs(key_of(0), limit=30, siblings=5)  # warm-up, as a running service is: the
    asyncio.run(ranker.rank(request, 5))  # connection pool, the caches, the shipped calibration
    for _ in range(samples):
        key = key_of(rng.randrange(tests))
        page.append(_timed(lambda key=key: history.history(key))[0])
        static_ms, _ = _timed(lambda: asyncio.run(ranker.rank(request, 5)))
        t = time.perf_counter()
        runs = tuple(history.history_runs(key, limit=30, siblings=5))
        load.append((time.perf_counter() - t) * 1000)
        asyncio.run(ranker.rank(replace(request, history=runs), 5))
        added.append((time.perf_counter() - t) * 1000 - static_ms)
        used.append(len(runs))
        groups.append(_timed(lambda: history.signatures(limit=50))[0])
    return {
        "signatures_ms": _stats(groups),
        "history_page_ms": _stats(page),
        "history_triage_added_ms": _stats(added),
        "history_load_ms": _stats(load),
        "history_runs_used": max(used),
    }


@contextmanager
def serve(url: str, workdir: Path) -> Iterator[str]:
    """``tcfl serve`` on a free loopback port, on the bench database."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
    env.update(TCFL_DATABASE_URL=url, TCFL_MAX_CASES_PER_BATCH="100")
    log = (workdir / "serve.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli",
            "serve",
            "--port",
            str(port),
            "--workers-off",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError((workdir / "serve.log").read_text())
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("tcfl serve did not start")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def measure_http(base: str, tests: int, samples: int, seed: int, post_runs: int) -> dict[str, Any]:
    rng = random.Random(seed + 2)
    page, listing, groups, group = [], [], [], []
    with httpx.Client(base_url=base, timeout=120) as client:
        client.get(f"/v1/tests/{key_of(0)}/history").raise_for_status()  # warm-up
        for _ in range(samples):
            key = key_of(rng.randrange(tests))
            ms, response = _timed(lambda key=key: client.get(f"/v1/tests/{key}/history"))
            response.raise_for_status()
            page.append(ms)
            ms, response = _timed(lambda: client.get("/v1/tests", params={"limit": 100}))
            response.raise_for_status()
            listing.append(ms)
            ms, response = _timed(lambda: client.get("/v1/signatures", params={"limit": 50}))
            response.raise_for_status()
            groups.append(ms)
            sig = rng.choice(response.json()["items"])["err_sig"]
            ms, response = _timed(lambda sig=sig: client.get(f"/v1/signatures/{sig}"))
            response.raise_for_status()
            group.append(ms)
        batch = 20
        started = time.perf_counter()
        for start in range(0, post_runs, batch):
            body = [
                {
                    "test_id": key_of(rng.randrange(tests)),
                    "verdict": "fail" if n % 10 == 0 else "pass",
                    "started_at": (T0 + timedelta(days=60, seconds=n)).isoformat(),
                    "ci": {"job_url": f"https://ci/bench/{seed}/{n}"},
                    "scripts": [{"path": PATH, "content": VERSIONS[-1]}],
                    "log": FAIL_LOG if n % 10 == 0 else "INFO t: value 7\n",
                }
                for n in range(start, min(post_runs, start + batch))
            ]
            client.post("/v1/runs", json={"runs": body}).raise_for_status()
        rate = post_runs / (time.perf_counter() - started)
    return {
        "http_history_page_ms": _stats(page),
        "http_tests_list_ms": _stats(listing),
        "http_signatures_ms": _stats(groups),
        "http_signature_runs_ms": _stats(group),
        "http_post_runs_per_s": round(rate, 1),
    }


def measure_retention(store: Store, runs: int) -> dict[str, Any]:
    """Retention as scheduled a year on: keep 180 days or the newest 80 % of each test's runs."""
    history = HistoryStore(store)
    now = T0 + timedelta(days=400)
    keep = max(1, runs * 4 // 5)
    dry_ms, would = _timed(lambda: history.apply_retention(now, keep_runs=keep, dry_run=True))
    real_ms, done = _timed(lambda: history.apply_retention(now, keep_runs=keep))
    return {
        "retention_keep_runs": keep,
        "retention_dry_run_s": round(dry_ms / 1000, 2),
        "retention_s": round(real_ms / 1000, 2),
        "retention_dropped": done,
        "retention_dry_run_matches": would == done,
    }


def db_size_mb(store: Store, url: str) -> float:
    if store.dialect == "postgresql":
        with store.engine.connect() as conn:
            return round(
                conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one() / 2**20, 1
            )
    database = store.engine.url.database or ""
    return round(
        sum(os.path.getsize(p) for p in (database, database + "-wal") if os.path.exists(p)) / 2**20, 1
    )


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 1),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--post-runs", type=int, default=200, help="runs to POST for the ingest rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-build", action="store_true", help="measure a store this script built before")
    parser.add_argument("--no-retention", action="store_true", help="leave the store as built")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the server and scratch go too
    report: dict[str, Any] = {"tests": args.tests, "runs_per_test": args.runs}
    with tempfile.TemporaryDirectory() as scratch:
        url = args.db or f"sqlite:///{Path(scratch) / 'bench.db'}"
        store = Store.open(url)
        try:
            with store._tx() as session:
                present = session.execute(select(func.count(TestRow.id))).scalar_one()
            if args.skip_build:
                report["build_s"] = None
            elif present:
                parser.error("the database already holds tests: give an empty one, or --skip-build")
            else:
                report["build_s"] = round(build(store, args.tests, args.runs, args.seed), 1)
            report["db_mb"] = db_size_mb(store, url)
            report.update(measure_inprocess(store, args.tests, args.samples, args.seed))
            with serve(url, Path(scratch)) as base:
                report.update(measure_http(base, args.tests, args.samples, args.seed, args.post_runs))
            if not args.no_retention:
                report.update(measure_retention(store, args.runs))
        finally:
            store.close()
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for name, value in report.items():
            print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
