"""`tcfl ci` records a CI job as a launch: named by its CI's environment, its flags or its results;
known issues in every output format; ``--fail-on``. Real pytest output of the small CI suite."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from app.cli import main
from app.store.history import HistoryStore
from app.store.labels import LabelStore
from app.store.launches import LaunchStore
from app.store.store import Store
from tests.ci_tools import FAILED_TESTS, PytestRun, py_results
from tests.cli.test_ci_cli import no_model_from_environment

__all__ = ["no_model_from_environment", "py_results"]  # fixtures, used by name (the first autouse)
GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "net/links",
    "GITHUB_WORKFLOW": "CI",
    "GITHUB_RUN_ID": "555",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_JOB": "unit",
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
}


def ci(capsys: pytest.CaptureFixture[str], results: Path, root: Path, *args: str) -> tuple[int, str, str]:
    code = main(["ci", str(results), "--root", str(root), "--ranker", "heuristic", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path / 'tcfl.db'}")


def test_the_ci_s_environment_names_the_job(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, py_results: PytestRun
) -> None:
    for name, value in GITHUB.items():
        monkeypatch.setenv(name, value)
    code, out, err = ci(capsys, py_results.junit, py_results.root, "--format", "json")
    assert code == 0 and "recorded 3 new run(s) of 3" in err
    body = json.loads(out)
    store = _store(tmp_path)
    try:
        launch = LaunchStore(store).get(body["launch_id"])
        assert launch is not None
        assert (launch["ci"], launch["pipeline"], launch["job_id"]) == (
            "github",
            "net/links:CI",
            "555.1.unit",
        )
        assert launch["commit"] == GITHUB["GITHUB_SHA"] and launch["job_url"].endswith(
            "/actions/runs/555/attempts/1"
        )
        assert [t["verdict"] for t in launch["tests"]].count("pass") == 1 and len(launch["tests"]) == 3
        code, _, err = ci(capsys, py_results.junit, py_results.root)  # the same job sent again
        assert "recorded 0 new run(s) of 3" in err and "recorded before" in err
        monkeypatch.setenv("GITHUB_RUN_ID", "556")
        code, _, err = ci(capsys, py_results.junit, py_results.root, "--commit", "feedface")
        assert "recorded 3 new run(s) of 3" in err  # the next run of the workflow: another job
        page = HistoryStore(store).history(f"test_links.py::TestLinks::{FAILED_TESTS[0]}")
        assert page is not None and [r["ci"]["commit"] for r in page["runs"]] == [
            "feedface",
            GITHUB["GITHUB_SHA"],
        ]
        assert len(LaunchStore(store).recent(pipeline="net/links:CI")) == 2
    finally:
        store.close()


def test_jobs_named_by_nothing_are_told_apart_by_their_results(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, py_results: PytestRun
) -> None:
    _, _, err = ci(capsys, py_results.junit, py_results.root)
    assert "recorded 3 new run(s) of 3" in err
    _, _, err = ci(capsys, py_results.junit, py_results.root)
    assert "recorded 0 new run(s) of 3" in err  # the same file again: the same job
    later = tmp_path / "junit-2.xml"  # another job of the same suite: the same outcome, other timings
    later.write_text(py_results.junit.read_text().replace('time="', 'time="1'))
    _, _, err = ci(capsys, later, py_results.root)
    assert "recorded 3 new run(s) of 3" in err
    _, _, err = ci(capsys, py_results.reportlog, py_results.root, "--commit", "c0ffee")
    assert "recorded 3 new run(s) of 3" in err  # report-log of a third job


def test_known_issues_are_said_in_every_format_and_fail_on_new_counts_only_the_others(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, py_results: PytestRun
) -> None:
    code, out, _ = ci(capsys, py_results.junit, py_results.root, "--format", "json", "--fail-on", "new")
    body = json.loads(out)
    assert code == 1 and body["summary"]["new_failures"] == 2 and body["summary"]["known_issues"] == 0
    sigs = {t["test_id"].rsplit(".", 1)[-1]: t["signature"] for t in body["tests"]}
    store = _store(tmp_path)
    try:
        labels = LabelStore(store)
        labels.add("product bug", bug_url="https://bugs.example.com/NET-7", err_sig=sigs[FAILED_TESTS[0]])
        code, out, _ = ci(
            capsys, py_results.junit, py_results.root, "--format", "markdown", "--fail-on", "new"
        )
        assert code == 1  # one failure is still new
        assert "known issue: product bug https://bugs.example.com/NET-7" in out and "new failure" in out
        labels.add("system issue", err_sig=sigs[FAILED_TESTS[1]])
        code, out, _ = ci(capsys, py_results.junit, py_results.root, "--fail-on", "new")
        assert code == 0 and out.count("known issue:") == 2 and "new failure" not in out
        assert ci(capsys, py_results.junit, py_results.root, "--fail-on", "any")[0] == 1
        assert ci(capsys, py_results.junit, py_results.root, "--fail-on", "never")[0] == 0
        _, github, _ = ci(capsys, py_results.junit, py_results.root, "--format", "github")
        assert github.count("known issue%3A product bug") == 1  # in the annotation's title
        _, sarif, _ = ci(capsys, py_results.junit, py_results.root, "--format", "sarif")
        statuses = {r["properties"]["status"] for r in json.loads(sarif)["runs"][0]["results"]}
        assert statuses == {
            "known issue: product bug https://bugs.example.com/NET-7",
            "known issue: system issue",
        }
        _, junit, _ = ci(capsys, py_results.junit, py_results.root, "--format", "junit")
        props = {
            p.get("value")
            for p in ET.fromstring(junit.split("\n", 1)[1]).iter("property")
            if p.get("name") == "tcfl.status"
        }
        assert props == statuses
    finally:
        store.close()
    # without the database nothing can be known: no status is made up
    code, out, _ = ci(capsys, py_results.junit, py_results.root, "--no-store", "--fail-on", "new")
    assert code == 1 and "known issue" not in out and "new failure" not in out


def test_junit_made_from_a_report_log_carries_the_traceback_and_the_log(
    capsys: pytest.CaptureFixture[str], py_results: PytestRun
) -> None:
    code, out, _ = ci(capsys, py_results.reportlog, py_results.root, "--format", "junit", "--no-store")
    assert code == 0
    cases = {
        c.get("name", "").rsplit("::", 1)[-1]: c
        for c in ET.fromstring(out.split("\n", 1)[1]).iter("testcase")
    }
    failure = cases[FAILED_TESTS[0]].find("failure")
    assert failure is not None and "Error" in (failure.text or "")
    assert "test_links.py" in (failure.text or "")  # the frames, as pytest printed them
    out_text = cases[FAILED_TESTS[0]].findtext("system-out") or ""
    assert "tcfl: top" in out_text and "score " in out_text


def test_a_job_without_a_time_from_its_ci_starts_when_its_results_file_says(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, py_results: PytestRun
) -> None:
    code, out, _ = ci(capsys, py_results.junit, py_results.root, "--no-ci-env", "--format", "json")
    assert code == 0
    suite = ET.parse(py_results.junit).getroot().iter("testsuite").__next__()
    store = _store(tmp_path)
    try:
        launch = LaunchStore(store).get(json.loads(out)["launch_id"])
        assert launch is not None
        # pytest writes the suite's timestamp in local time, with its zone from pytest 8 on
        stamp = suite.get("timestamp") or ""
        assert launch["started_at"][:19].replace("T", " ") == _utc(stamp)[:19].replace("T", " ")
    finally:
        store.engine.dispose()


def _utc(stamp: str) -> str:
    from app.ingest.filetime import iso_time

    found = iso_time(stamp)
    assert found is not None
    return found.isoformat()
