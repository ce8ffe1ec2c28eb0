"""The judged scenario end to end: a small real pytest suite run for eight CI jobs (passes, a flaky
test, a regression, a recurring failure), sent once through `tcfl ci` (SQLite) and once through
`POST /v1/ingest` (PostgreSQL when it is there, else SQLite), neither with a job URL; then the
history ranker on the last job, a label on a failure's group, the next job and ``--fail-on new``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.store.launches import LaunchStore
from app.store.store import Store
from tcfl_lab.launches import (
    EXPECTED,
    FIRST_BAD,
    JOBS,
    KEYS,
    JobFiles,
    clean_env,
    first_bad_commits,
    ingest,
    tcfl_ci,
    verdicts,
)
from tests.ci_tools import launch_jobs
from tests.service.helpers import Server, pg_available, pg_schema, tcfl_command

__all__ = ["launch_jobs"]
pytestmark = pytest.mark.slow
BUG = "https://bugs.example.com/SHOP-42"


def _history(db: str, key: str) -> dict:
    done = subprocess.run(
        [*tcfl_command("history", key, "--db", db, "--json")],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_tcfl_ci_records_every_job_and_labels_carry_over(launch_jobs: list[JobFiles], tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'ci.db'}"
    jobs = launch_jobs[:JOBS]
    for job in jobs:
        done = tcfl_ci(job, db, "--ranker", "heuristic", "--format", "json")
        assert done.returncode in (0, 1) and "new run(s) of 4" in done.stderr, done.stderr
    store = Store.open(db)
    try:
        launches = [LaunchStore(store).get(i) for i in range(1, JOBS + 1)]
        assert verdicts(launches) == EXPECTED
        assert first_bad_commits(launches[-1]) == {key: jobs[n - 1].commit for key, n in FIRST_BAD.items()}
    finally:
        store.close()
    # every job recorded: eight runs of each test, found by JUnit's dotted id as well as by its node id
    for key in KEYS.values():
        assert len(_history(db, key)["runs"]) == JOBS
    dotted = _history(db, "tests.test_cart.test_many_items")
    assert dotted["key"] == KEYS["many"] and dotted["classification"] == "recurring"
    assert dotted["first_bad_version"]["first_bad_commit"] == jobs[3].commit

    # the history ranker on the last job: it ranks with the seven runs before it, and says so
    done = tcfl_ci(jobs[-1], db, "--ranker", "history", "--format", "json")
    body = json.loads(done.stdout)
    for test in body["tests"]:
        result = test["result"]
        assert result["ranker"] == "history" and result["fallback_reason"] is None
        assert result["history"]["runs_used"] == JOBS - 1
    many = next(t for t in body["tests"] if t["test_id"].endswith("test_many_items"))
    assert many["result"]["ranking"][0]["path"] == "tests/cartlib.py"  # the fault in the shared helper
    assert [r["relevance"] for r in many["result"]["ranking"]] == sorted(
        (r["relevance"] for r in many["result"]["ranking"]), reverse=True
    )
    text = tcfl_ci(jobs[-1], db, "--ranker", "history").stdout
    assert "History of tests/test_cart.py::test_many_items: recurring; fused 7 of 7 recorded runs" in text
    assert f"First bad version: commit {jobs[3].commit[:12]}" in text and "fallback" not in text

    # a label on the group of job 8's failure, over the API of a server on the same database
    server = Server(db, tmp_path).start()
    try:
        with server.client() as client:
            answer = client.post(
                "/v1/labels",
                json={"defect_type": "automation bug", "err_sig": many["signature"], "bug_url": BUG},
            )
            assert answer.status_code == 201, answer.text
    finally:
        server.stop()
    # job 8 again: its test_discount failure is not a known issue
    assert tcfl_ci(jobs[-1], db, "--ranker", "heuristic", "--fail-on", "new").returncode == 1
    # job 9 (test_discount fixed): its only failure is the labelled one
    done = tcfl_ci(launch_jobs[JOBS], db, "--ranker", "heuristic", "--format", "markdown", "--fail-on", "new")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"known issue: automation bug {BUG}" in done.stdout and "new failure" not in done.stdout


def test_post_ingest_records_every_job_without_a_job_url(launch_jobs: list[JobFiles], tmp_path: Path) -> None:
    user, _ = pg_available()
    if user is not None:
        with pg_schema(user) as url:
            _ingest_all(launch_jobs[:JOBS], url, tmp_path)
    else:
        _ingest_all(launch_jobs[:JOBS], f"sqlite:///{tmp_path / 'ingest.db'}", tmp_path)


def _ingest_all(jobs: list[JobFiles], url: str, tmp_path: Path) -> None:
    server = Server(url, tmp_path).start()
    try:
        with server.client() as client:
            answers = [ingest(client, job, ranker="heuristic") for job in jobs]
            launches = [client.get(f"/v1/launches/{a['launch_id']}").json() for a in answers]
            assert verdicts(launches) == EXPECTED
            assert first_bad_commits(launches[-1]) == {
                key: jobs[n - 1].commit for key, n in FIRST_BAD.items()
            }
            for key in KEYS.values():
                assert len(client.get(f"/v1/tests/{key}/history").json()["runs"]) == JOBS
            again = ingest(client, jobs[-1], ranker="heuristic")
            assert again["launch_id"] == answers[-1]["launch_id"]
            assert all(
                len(client.get(f"/v1/tests/{k}/history").json()["runs"]) == JOBS for k in KEYS.values()
            )
    finally:
        server.stop()
    assert "unhandled error" not in server.log_text()
