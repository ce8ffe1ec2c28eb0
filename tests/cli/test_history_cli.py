"""`tcfl ingest` and `tcfl history` as a user runs them, on a real SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci_tools import PytestRun, avocado_job, py_results, stestr_run
from tests.service.helpers import Server, clean_env

__all__ = ["avocado_job", "py_results", "stestr_run"]  # the session fixtures, used by name

REPO = Path(__file__).resolve().parents[2]
SCRIPT = "def test_answer():\n    value = 41\n    assert value == 42\n"
LOG = (
    'Traceback (most recent call last):\n  File "/ci/t.py", line 3, in test_answer\n'
    "    assert value == 42\nAssertionError\n"
)


def tcfl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, check=False, env=clean_env()
    )


def record(n: int, verdict: str, script: str) -> str:
    return json.dumps(
        {
            "test_id": "t.py::test_answer[fast]",
            "verdict": verdict,
            "started_at": f"2026-03-01T00:0{n}:00Z",
            "ci": {"job_url": f"https://ci/{n}"},
            "scripts": [{"path": "t.py", "content": script}],
            "log": LOG if verdict == "fail" else "ok",
        }
    )


@pytest.mark.slow
def test_ingest_then_history(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    runs = tmp_path / "runs.jsonl"
    good = SCRIPT.replace("41", "42")
    runs.write_text(
        "\n".join([record(1, "pass", good), record(2, "pass", good), record(3, "fail", SCRIPT)]) + "\n"
    )
    first = tcfl("ingest", str(runs), "--db", db, "--json")
    assert first.returncode == 0, first.stderr
    assert [r["duplicate"] for r in json.loads(first.stdout)["runs"]] == [False, False, False]
    again = tcfl("ingest", str(runs), "--db", db)
    assert again.returncode == 0 and "0 runs stored, 3 already known" in again.stderr
    shown = tcfl("history", "t.py::test_answer", "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert "timeline (oldest first, | = new script version): |..|F" in shown.stdout
    assert "last failure: new" in shown.stdout and "first bad version:" in shown.stdout
    page = json.loads(tcfl("history", "t.py::test_answer", "--db", db, "--json").stdout)
    assert page["classification"] == "new" and len(page["runs"]) == 3


@pytest.mark.slow
def test_bad_input_is_a_usage_error(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"test_id": "x", "verdict": "pass"}\n{"test_id": "x", "verdict": "sorta"}\n')
    done = tcfl("ingest", str(bad), "--db", db)
    assert done.returncode == 2 and "bad.jsonl:2: verdict must be one of" in done.stderr
    assert "1 runs stored" in done.stderr  # the good record is not lost
    assert tcfl("ingest", str(tmp_path / "missing.jsonl"), "--db", db).returncode == 2
    unknown = tcfl("history", "nope::x", "--db", db)
    assert unknown.returncode == 2 and "no runs recorded" in unknown.stderr


def passing_history(tmp_path: Path, n: int) -> str:
    """``n`` recorded passes of the old version (tcfl ingest), the failing version and log beside; the DB."""
    from tests.history.test_rank import FAIL_LOG, NEW, OLD, PASS_LOG, PATH

    db = f"sqlite:///{tmp_path / 'h.db'}"
    runs = tmp_path / "runs.jsonl"
    lines = [
        json.dumps(
            {
                "test_id": f"{PATH}::test_value",
                "verdict": "pass",
                "started_at": f"2026-03-01T00:0{i}:00Z",
                "ci": {"job_url": f"https://ci/{i}"},
                "scripts": [{"path": PATH, "content": OLD}],
                "log": PASS_LOG,
            }
        )
        for i in range(n)
    ]
    runs.write_text("\n".join(lines) + "\n")
    assert tcfl("ingest", str(runs), "--db", db).returncode == 0
    (tmp_path / "tests").mkdir()
    (tmp_path / PATH).write_text(NEW)
    (tmp_path / "fail.log").write_text(FAIL_LOG)
    return db


@pytest.mark.slow
def test_triage_fuses_the_recorded_history(tmp_path: Path) -> None:
    from tests.history.test_rank import PATH

    db = passing_history(tmp_path, 5)
    env = {**os.environ, "TCFL_DATABASE_URL": db}
    args = [PATH, "--log", "fail.log", "--level", "line", "-k", "3", "--json", "--no-store"]
    fused = subprocess.run(
        [sys.executable, "-m", "app.cli", "triage", *args, "--test", f"{PATH}::test_value"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
    )
    assert fused.returncode == 0, fused.stderr
    result = json.loads(fused.stdout)
    assert result["ranker"] == "history"
    assert result["ranking"][0]["start_line"] == 7  # the line the last edit changed
    alone = subprocess.run(
        [sys.executable, "-m", "app.cli", "triage", *args, "--test", "other::test", "--history", "auto"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
    )
    assert alone.returncode in (0, 3), alone.stderr
    assert json.loads(alone.stdout)["ranker"] == "heuristic"
    assert any("no CI history" in w for w in json.loads(alone.stdout)["warnings"])


@pytest.mark.slow
def test_ci_records_every_run_under_one_key_per_test(tmp_path: Path, py_results: PytestRun) -> None:
    """JUnit XML and report-log of one real pytest session name each test alike in the history."""
    db = f"sqlite:///{tmp_path / 'h.db'}"
    root = str(py_results.root)
    common = ["--root", root, "--ranker", "heuristic", "--format", "json", "--db", db, "--commit", "c0ffee"]
    junit = tcfl("ci", str(py_results.junit), *common, "--job-url", "https://ci/job/1")
    assert junit.returncode == 0, junit.stderr
    total = json.loads(junit.stdout)["summary"]["tests"]
    assert f"recorded {total} new run(s) of {total}" in junit.stderr
    again = tcfl("ci", str(py_results.junit), *common, "--job-url", "https://ci/job/1")
    assert f"recorded 0 new run(s) of {total}" in again.stderr  # one run per job and test
    report = tcfl("ci", str(py_results.reportlog), *common, "--job-url", "https://ci/job/2")
    assert report.returncode == 0, report.stderr
    listing = json.loads(
        tcfl("history", "test_links.py::TestLinks::test_jumbo_mtu", "--db", db, "--json").stdout
    )
    assert [r["verdict"] for r in listing["runs"]] == ["fail", "fail"]
    assert {r["ci"]["commit"] for r in listing["runs"]} == {"c0ffee"}
    assert listing["runs"][0]["version_id"]  # the scripts came from the checkout
    from app.store.history import HistoryStore
    from app.store.store import Store

    store = Store.open(db)
    try:
        tests = HistoryStore(store).tests(limit=1000)
    finally:
        store.close()
    assert len(tests) == total and all(t["runs"] == 2 for t in tests)
    passing = next(t for t in tests if t["failures"] == 0)
    assert passing["key"].startswith("test_links.py::")
    skipped = tcfl("ci", str(py_results.junit), *common, "--job-url", "https://ci/job/3", "--no-store")
    assert skipped.returncode == 0 and "recorded" not in skipped.stderr


@pytest.mark.slow  # five tcfl ci runs and a server
def test_one_test_is_one_key_whichever_tool_ran_it(
    tmp_path: Path, py_results: PytestRun, avocado_job: Path, stestr_run: tuple[Path, Path]
) -> None:
    """pytest's JUnit XML and report-log, avocado's xUnit and job folder, stestr's subunit of the
    same suite: five jobs, each test recorded once per job under one key, found by any tool's id,
    and listed once on the dashboard's tests page."""
    db = f"sqlite:///{tmp_path / 'h.db'}"
    avocado_root = avocado_job.parents[1] / "avocado"
    sent = [
        (py_results.junit, py_results.root),
        (py_results.reportlog, py_results.root),
        (avocado_job / "results.xml", avocado_root),
        (avocado_job, avocado_root),
        (stestr_run[0], stestr_run[0].parent / "stestr"),
    ]
    for n, (results, root) in enumerate(sent):
        done = tcfl(
            "ci", str(results), "--root", str(root), "--ranker", "heuristic", "--db", db, "--commit", f"c{n}"
        )
        assert "recorded 3 new run(s) of 3" in done.stderr, (results, done.stderr)
    for key in (
        "test_links.py::TestLinks::test_jumbo_mtu",  # pytest
        "test_links.TestLinks.test_jumbo_mtu",  # JUnit XML, unittest, subunit
        "1-test_links.py:TestLinks.test_jumbo_mtu",  # avocado
        "<unknown>.test_links.py:TestLinks.test_jumbo_mtu",  # avocado's xUnit on a CI's page
    ):
        page = json.loads(tcfl("history", key, "--db", db, "--json").stdout)
        assert page["key"] == "test_links.py::TestLinks::test_jumbo_mtu"
        assert sorted(r["ci"]["commit"] for r in page["runs"]) == [f"c{n}" for n in range(len(sent))]
    server = Server(db, tmp_path).start()
    try:
        with server.client() as client:
            html = client.get("/tests").text
    finally:
        server.stop()
    assert html.count('data-testid="test-row"') == 3


@pytest.mark.slow
def test_triage_history_window_and_k(tmp_path: Path) -> None:
    from tests.history.test_rank import PATH

    db = passing_history(tmp_path, 6)
    base = [sys.executable, "-m", "app.cli", "triage", PATH, "--log", "fail.log", "--json", "--no-store"]
    base += ["--db", db, "--test", f"{PATH}::test_value", "--history", "auto"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def triage(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *extra], capture_output=True, text=True, cwd=tmp_path, env=env)

    found = triage("--history-window", "4", "--history-k", "2")
    assert found.returncode == 0, found.stderr
    history = json.loads(found.stdout)["history"]
    assert (history["runs_read"], history["runs_used"], history["window"], history["k"]) == (4, 2, 4, 2)
    assert history["classification"] == "new" and history["first_bad_version"]["hunks"]
    bad = triage("--history-window", "0")
    assert bad.returncode == 2 and "history window must be an integer from 1 to 500" in bad.stderr


@pytest.mark.slow
def test_ci_ranks_each_failure_with_the_runs_recorded_before_it(
    tmp_path: Path, py_results: PytestRun
) -> None:
    """`tcfl ci --ranker history` reads each failed test's recorded runs (none from this job) and
    fuses them; the text says so and names no model."""
    db = f"sqlite:///{tmp_path / 'h.db'}"
    common = ["--root", str(py_results.root), "--db", db]
    # the first job ran a day before the results file the next job sends (its time is the file's)
    first = tcfl(
        "ci",
        str(py_results.junit),
        *common,
        "--ranker",
        "heuristic",
        "--job-url",
        "https://ci/1",
        "--started-at",
        _day_before(py_results.junit),
    )
    assert first.returncode == 0, first.stderr
    fused = tcfl(
        "ci", str(py_results.junit), *common, "--ranker", "history", "--format", "json", "--no-store"
    )
    assert fused.returncode == 0, fused.stderr
    tests = [t for t in json.loads(fused.stdout)["tests"] if t["triaged"]]
    assert tests
    for test in tests:
        history = test["result"]["history"]
        assert history["runs_read"] == 1 and history["runs_used"] == 1  # the first job's run only
        assert test["result"]["ranker"] == "history" and test["result"]["fallback_reason"] is None
    text = tcfl("ci", str(py_results.junit), *common, "--ranker", "history", "--no-store")
    assert "History of " in text.stdout and "the model did not answer" not in text.stdout
    off = tcfl("ci", str(py_results.junit), *common, "--history", "off", "--format", "json", "--no-store")
    assert all("history" not in t["result"] for t in json.loads(off.stdout)["tests"] if t["triaged"])


def _day_before(results: Path) -> str:
    from datetime import timedelta

    from app.ingest import read_results

    started = read_results(results).started_at
    assert started is not None
    return (started - timedelta(days=1)).isoformat()


def test_the_history_key_of_a_run_is_its_canonical_text() -> None:
    from app.ci import history_key
    from app.ingest.base import TestRun

    run = TestRun(test_id="tests.test_cart.TestCart.test_many_items", verdict="fail", log="x")
    assert history_key(run) == "tests/test_cart.py::TestCart::test_many_items"
