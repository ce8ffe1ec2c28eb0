"""How long the dashboard takes to render a stored failure's page, by log size.

Stores the running example (tests/data/running-example) with its log padded to each size in a
temporary SQLite database, then times GET /triage/{id} in-process (database reads, view, template;
no network; wall time, and CPU time with the client's share included) and, for comparison, one
run of the analysis the page used to repeat on every view.

    .venv/bin/python scripts/pagebench.py [--sizes 1000,20000,200000] [--repeat 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

warnings.filterwarnings("ignore", message=".*httpx.*")
from fastapi.testclient import TestClient  # noqa: E402

from app.analysis.model import Script  # noqa: E402
from app.analysis.pipeline import analyze  # noqa: E402
from app.localize.result import TriageOptions  # noqa: E402
from app.service.api import create_app  # noqa: E402
from app.service.pool_jobs import TriageJob  # noqa: E402
from app.service.pool_jobs import triage as triage_job  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.snapshots import SNAPSHOT_KEY  # noqa: E402
from app.store.store import Store, Submission  # noqa: E402

EXAMPLE = REPO / "tests" / "data" / "running-example"


def padded_log(total: int) -> str:
    lines = (EXAMPLE / "failure.log").read_text().splitlines()
    messages, traceback = lines[:5], lines[5:]
    body = [f"[DEBUG] poll {i} ok" for i in range(max(0, total - len(lines)))]
    step = max(1, len(body) // 5)
    for k, message in enumerate(messages):
        body.insert(k * step, message)
    return "\n".join(body + traceback) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,20000,200000", help="log sizes in lines, comma-separated")
    parser.add_argument("--repeat", type=int, default=15, help="page loads timed per size")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    script = Script("test_example.py", (EXAMPLE / "test_example.py").read_text())
    options = TriageOptions(level="block", k=3, ranker="heuristic", log_functions=("Log.log",))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        store = Store.open(url)
        app = create_app(Settings(database_url=url, worker_enabled=False))
        with TestClient(app) as client:
            for size in sizes:
                log = padded_log(size)
                data, snap = triage_job(TriageJob((script,), log, options))
                case = Submission(
                    scripts=(script,), log=log, options={"trace": "tplus", "level": "block", "k": 3}
                )
                request_id = store.record_triage(case, {**data, SNAPSHOT_KEY: snap}).id
                client.get(f"/triage/{request_id}")  # warm caches (templates, connection pool)
                times, cpu = [], []
                for _ in range(args.repeat):
                    started, cpu_started = time.perf_counter(), time.process_time()
                    response = client.get(f"/triage/{request_id}")
                    times.append((time.perf_counter() - started) * 1000)
                    cpu.append((time.process_time() - cpu_started) * 1000)  # client and server: one process
                    assert response.status_code == 200
                started = time.perf_counter()
                analyze([script], log, log_functions=["Log.log"])
                recompute_ms = (time.perf_counter() - started) * 1000
                out.append(
                    {
                        "log_lines": size,
                        "render_ms_median": round(statistics.median(times), 1),
                        "render_ms_max": round(max(times), 1),
                        "render_cpu_ms_median": round(statistics.median(cpu), 1),
                        "page_kb": round(len(response.content) / 1024, 1),
                        "recompute_ms": round(recompute_ms, 1),
                    }
                )
        store.close()
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{'log lines':>10} {'render ms (median)':>19} {'max':>7} {'CPU ms':>7} {'page KiB':>9} "
            f"{'analysis ms':>12} {'ratio':>7}"
        )
        for row in out:
            ratio = row["recompute_ms"] / row["render_ms_median"] if row["render_ms_median"] else 0.0
            print(
                f"{row['log_lines']:>10,} {row['render_ms_median']:>19} {row['render_ms_max']:>7} "
                f"{row['render_cpu_ms_median']:>7} "
                f"{row['page_kb']:>9} {row['recompute_ms']:>12} {ratio:>6.0f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
