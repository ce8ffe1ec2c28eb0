"""The launch scenario end to end, with its figures: eight CI jobs of a small real pytest suite.

Builds the suite's git repository (``tcfl_lab.launches``: one commit per job; a flaky test, a
regression, a recurring failure), runs pytest for nine jobs, then:

1. sends jobs 1-8 through ``tcfl ci`` (JUnit XML, the commit only: no job URL) into a SQLite
   database, and checks every job is recorded (8 runs per test), each failure's verdict and the
   first bad commit;
2. runs ``tcfl ci --ranker history`` on job 8 and shows what it ranked first with how many runs;
3. labels the group of job 8's ``test_many_items`` failure over the API, then runs job 8 again and
   job 9 with ``--fail-on new`` (exit 1, then 0) and ``--format markdown``;
4. sends jobs 1-8 through ``POST /v1/ingest`` (report-log and a checkout archive, the commit only)
   into ``--ingest-db`` (default: another SQLite file) and checks the same;
5. with ``--screenshots DIR``, opens the launches list, job 8's launch page, the trends and one
   failure's page in headless Chromium (/usr/bin/chromium) and saves them there.

Run from the repository root:

    .venv/bin/python scripts/launch_scenario.py --screenshots docs/screenshots
    .venv/bin/python scripts/launch_scenario.py --ingest-db postgresql+psycopg://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tcfl_lab.launches import (  # noqa: E402
    EXPECTED,
    FIRST_BAD,
    JOBS,
    KEYS,
    JobFiles,
    first_bad_commits,
    ingest,
    run_jobs,
    tcfl_ci,
    verdicts,
)
from tests.service.helpers import Server  # noqa: E402

BUG = "https://bugs.example.com/SHOP-42"
PIPELINE = "shop/tests"
SHOTS = (
    ("launches-1280.png", "/launches"),
    ("launch-1280.png", "/launches/{last}"),
    ("trend-1280.png", f"/launches/trend?pipeline={PIPELINE}"),
    ("failure-new-lines-1280.png", "/triage/{triage}"),
)


def _check(answers: list[dict[str, Any]], client: Any, jobs: list[JobFiles]) -> dict[str, Any]:
    launches = [client.get(f"/v1/launches/{a['launch_id']}").json() for a in answers]
    runs = {key: len(client.get(f"/v1/tests/{key}/history").json()["runs"]) for key in KEYS.values()}
    found = verdicts(launches)
    bad = first_bad_commits(launches[-1])
    want = {key: jobs[n - 1].commit for key, n in FIRST_BAD.items()}
    return {
        "launches": len({a["launch_id"] for a in answers}),
        "runs_per_test": runs,
        "verdicts_right": found == EXPECTED,
        "verdicts": {str(n): v for n, v in found.items()},
        "first_bad_right": bad == want,
        "first_bad": {key: (commit or "")[:12] for key, commit in bad.items()},
    }


def _shots(server: Server, folder: Path, last: int, triage: int) -> list[str]:
    from playwright.sync_api import sync_playwright

    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as play:
        browser = play.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for name, url in SHOTS:
            page.goto(server.url + url.format(last=last, triage=triage))
            page.screenshot(path=str(folder / name), full_page=True)
            saved.append(str(folder / name))
        browser.close()
    return saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=Path, help="folder for the repository and the jobs (default: temporary)"
    )
    parser.add_argument("--ingest-db", metavar="URL", help="database of the POST /v1/ingest path")
    parser.add_argument("--screenshots", type=Path, metavar="DIR", help="save the dashboard's pages here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tcfl-launches-") as tmp:
        work = args.work or Path(tmp)
        report: dict[str, Any] = {}
        started = time.perf_counter()
        jobs = run_jobs(work / "repo", work / "jobs")
        report["jobs_run_s"] = round(time.perf_counter() - started, 1)
        report["pytest_exit_codes"] = [j.exit_code for j in jobs]

        # 1. tcfl ci, SQLite, no job URL
        db = f"sqlite:///{work / 'ci.db'}"
        started = time.perf_counter()
        ci_answers = []
        for job in jobs[:JOBS]:
            done = tcfl_ci(job, db, "--ranker", "heuristic", "--format", "json", "--pipeline", PIPELINE)
            if done.returncode not in (0, 1):
                raise SystemExit(f"tcfl ci on job {job.number}: exit {done.returncode}\n{done.stderr}")
            ci_answers.append(json.loads(done.stdout))
        report["tcfl_ci_s_per_job"] = round((time.perf_counter() - started) / JOBS, 2)
        server = Server(db, work).start()
        try:
            with server.client() as client:
                report["tcfl_ci"] = _check(ci_answers, client, jobs)

                # 2. the history ranker on the last job
                done = tcfl_ci(
                    jobs[JOBS - 1], db, "--ranker", "history", "--format", "json", "--pipeline", PIPELINE
                )
                ranked = json.loads(done.stdout)
                report["history_ranker_on_job_8"] = {
                    t["test_id"]: {
                        "ranker": t["result"]["ranker"],
                        "fallback": t["result"]["fallback_reason"],
                        "runs_used": t["result"]["history"]["runs_used"],
                        "first": "{path}:{start_line}".format(**t["result"]["ranking"][0]),
                        "relevance": [r["relevance"] for r in t["result"]["ranking"]],
                    }
                    for t in ranked["tests"]
                }

                # 3. a label on a group, the next job, --fail-on new
                many = next(t for t in ci_answers[-1]["tests"] if t["test_id"].endswith("test_many_items"))
                label = client.post(
                    "/v1/labels",
                    json={"defect_type": "automation bug", "err_sig": many["signature"], "bug_url": BUG},
                )
                label.raise_for_status()
                again = tcfl_ci(
                    jobs[JOBS - 1], db, "--ranker", "heuristic", "--fail-on", "new", "--pipeline", PIPELINE
                )
                nine = tcfl_ci(
                    jobs[JOBS],
                    db,
                    "--ranker",
                    "heuristic",
                    "--format",
                    "markdown",
                    "--fail-on",
                    "new",
                    "--pipeline",
                    PIPELINE,
                )
                report["fail_on_new_exit"] = {
                    "job 8 (one failure not labelled)": again.returncode,
                    "job 9": nine.returncode,
                }
                report["job_9_markdown_says"] = [
                    line for line in nine.stdout.splitlines() if "known issue" in line
                ][:2]
                if args.screenshots:
                    last = ci_answers[-1]["launch_id"]
                    ping = next(t for t in ci_answers[2]["tests"] if t["test_id"].endswith("test_ping"))
                    report["screenshots"] = _shots(server, args.screenshots, last, ping["triage_id"])
        finally:
            server.stop()

        # 4. POST /v1/ingest, no job URL
        url = args.ingest_db or f"sqlite:///{work / 'ingest.db'}"
        server = Server(url, work).start()
        try:
            with server.client() as client:
                started = time.perf_counter()
                answers = [ingest(client, job, ranker="heuristic", pipeline=PIPELINE) for job in jobs[:JOBS]]
                report["ingest_s_per_job"] = round((time.perf_counter() - started) / JOBS, 2)
                report["post_ingest"] = _check(answers, client, jobs)
                resent = ingest(client, jobs[JOBS - 1], ranker="heuristic", pipeline=PIPELINE)
                report["post_ingest"]["resent_job_8_same_launch"] = (
                    resent["launch_id"] == answers[-1]["launch_id"]
                )
        finally:
            server.stop()
    print(json.dumps(report, indent=1))
    ok = all(report[p]["verdicts_right"] and report[p]["first_bad_right"] for p in ("tcfl_ci", "post_ingest"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
