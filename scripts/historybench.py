"""History at scale: build a store of T tests x R runs, then time what a history-aware triage adds.

Fills the ``tests``/``versions``/``runs`` tables directly (bulk inserts; every run carries an
estimated trace, failures an error signature), then for a sample of tests times the history page
(``HistoryStore.history``, what ``GET /v1/tests/{key}/history`` serves) and the history part of a
triage (loading the runs with their versions and traces + ranking with them). Prints medians and
95th percentiles in milliseconds. Run from the repository root:

    .venv/bin/python scripts/historybench.py --db postgresql+psycopg://postgres@127.0.0.1:5432/test \\
        --tests 10000 --runs 500          # the issue's scale (long to build)
    .venv/bin/python scripts/historybench.py --tests 200 --runs 100 --json   # a temporary SQLite file
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert

from app.analysis.model import Script
from app.history.versions import content_hash, version_id
from app.options import TriageOptions
from app.rankers.history import HistoryRanker
from app.service.history_store import HistoryStore, RunRow, TestRow, VersionRow
from app.service.store import Store, _pack
from app.triage import prepare

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
    '  File "/ci/tests/test_bench.py", line 13, in test_case_0\n    assert value == 3\nAssertionError\n'
)


def build(store: Store, tests: int, runs: int, seed: int) -> float:
    started = time.perf_counter()
    rng = random.Random(seed)
    versions = [SCRIPT.replace("helper(3)", f"helper({3 + v})") for v in range(5)]
    lines = len(SCRIPT.splitlines())
    with store._tx() as session:
        store._script_ids(session, versions)
        for text in versions:
            vid = version_id({"tests/test_bench.py": text})
            session.execute(
                insert(VersionRow).values(
                    id=vid, files={"tests/test_bench.py": content_hash(text)}, created_at=datetime.now(UTC)
                )
            )
    vids = [version_id({"tests/test_bench.py": t}) for t in versions]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for start in range(0, tests, 200):
        with store._tx() as session:
            session.execute(
                insert(TestRow),
                [
                    {
                        "key": f"tests/test_bench.py::test_case_{i}",
                        "suite": "bench",
                        "path": "tests/test_bench.py",
                        "base_id": f"test_case_{i}",
                        "created_at": t0,
                    }
                    for i in range(start, min(tests, start + 200))
                ],
            )
    with store._tx() as session:
        ids = [r[0] for r in session.execute(TestRow.__table__.select().with_only_columns(TestRow.id)).all()]
    log_z = _pack(FAIL_LOG)
    batch: list[dict] = []
    for test_id in ids:
        for n in range(runs):
            fail = rng.random() < 0.1
            ran = sorted(rng.sample(range(1, lines + 1), lines // 2))
            batch.append(
                {
                    "identity": f"{test_id}:{n}",
                    "test_id": test_id,
                    "version_id": vids[min(4, n * 5 // runs)],
                    "external_id": f"t{test_id}",
                    "params": "",
                    "verdict": "fail" if fail else "pass",
                    "started_at": t0 + timedelta(hours=n),
                    "env": {"TZ": "UTC"},
                    "env_fp": "e",
                    "pipeline": None,
                    "job_url": None,
                    "commit": None,
                    "log_z": log_z if fail else None,
                    "err_sig": "sig" if fail else None,
                    "error_message": "AssertionError" if fail else None,
                    "trace": {"tests/test_bench.py": {"E": ran, "N": [], "D": []}},
                    "created_at": t0,
                }
            )
            if len(batch) >= 5000:
                with store._tx() as session:
                    session.execute(insert(RunRow), batch)
                batch = []
    if batch:
        with store._tx() as session:
            session.execute(insert(RunRow), batch)
    return time.perf_counter() - started


def measure(store: Store, tests: int, samples: int, seed: int) -> dict[str, dict[str, float]]:
    rng = random.Random(seed + 1)
    history = HistoryStore(store)
    page_ms, triage_ms = [], []
    ranker = HistoryRanker()
    request = prepare([Script("tests/test_bench.py", versions_last())], FAIL_LOG, _options())
    for _ in range(samples):
        key = f"tests/test_bench.py::test_case_{rng.randrange(tests)}"
        t = time.perf_counter()
        history.history(key)
        page_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        runs = tuple(history.history_runs(key, limit=30))
        asyncio.run(ranker.rank(replace(request, history=runs), 5))
        triage_ms.append((time.perf_counter() - t) * 1000)
    return {"history_page_ms": _stats(page_ms), "history_triage_extra_ms": _stats(triage_ms)}


def versions_last() -> str:
    return SCRIPT.replace("helper(3)", "helper(7)")


def _options() -> TriageOptions:
    return TriageOptions(level="block", k=5, ranker="history")


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
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        url = args.db or f"sqlite:///{Path(scratch) / 'bench.db'}"
        store = Store.open(url)
        try:
            seconds = build(store, args.tests, args.runs, args.seed)
            figures = measure(store, args.tests, args.samples, args.seed)
        finally:
            store.close()
    report = {"tests": args.tests, "runs_per_test": args.runs, "build_s": round(seconds, 1), **figures}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for name, value in report.items():
            print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
