"""The pytest plugin in real pytest sessions (pytester): off by default, two failures -> two triages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import app.ci
import app.emit
import app.service.dashboard.feedback

# every mapped table, declared once: --tcfl-db records a session
import app.store.history
import app.store.ingests
import app.store.jobs
import app.store.labels
import app.store.launches
import app.store.snapshots
import app.store.tables  # noqa: F401
from tests.ci_tools import SUITE

# The plugin imports tcfl's analysis lazily, inside the session. pytester's in-process runs drop
# the modules a run imported when it ends, and some C extensions cannot be loaded twice in one
# process, so they are imported here once, before any run.

pytest_plugins = ["pytester"]

TWO_FAILURES = """
import logging

log = logging.getLogger(__name__)


def parse_rate(text):
    log.info("parsing rate %s", text)
    value, unit = text.split()
    if unit == "Mbps":
        return int(value)
    return int(value) * 1000


def test_rate_in_gbps():
    log.info("reading the link rate")
    rate = parse_rate("10 Gbps")
    log.info("rate is %d", rate)
    assert rate == 1000, "rate must be 1G"


def test_inventory_lookup():
    inventory = {"eth0": 1}
    log.info("looking up eth1")
    port = inventory["eth1"]
    assert port


def test_passes():
    assert parse_rate("5 Mbps") == 5
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("TCFL_MODEL_URL", "TCFL_MODEL", "TCFL_DEFAULT_K"):
        monkeypatch.delenv(name, raising=False)
    from app.settings import get_settings

    get_settings.cache_clear()
    pytester.makepyfile(test_two=TWO_FAILURES)
    pytester.makeini("[pytest]\nlog_level = INFO\n")
    return pytester


def test_two_different_failures_print_two_triages(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--tcfl", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2, passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # unchanged by the plugin
    result.stdout.fnmatch_lines(
        [
            "*tcfl triage of 2 failed test(s)*",
            "test_two.py::test_rate_in_gbps: AssertionError: rate must be 1G*",
            "    1. test_two.py:*",
            "test_two.py::test_inventory_lookup: KeyError: 'eth1'",
            "    1. test_two.py:*",
            "tcfl: 2 of 2 failed test(s) triaged, 2 failure group(s)",
        ]
    )
    text = result.stdout.str()
    source = (suite.path / "test_two.py").read_text().splitlines()
    for test, failing_line in (
        ("test_rate_in_gbps", "assert rate == 1000"),
        ("test_inventory_lookup", 'inventory["eth1"]'),
    ):
        error_line = next(n for n, line in enumerate(source, 1) if failing_line in line)
        top = text.split(f"{test}: ", 1)[1].split("1. test_two.py:", 1)[1].split()[0]
        start, _, end = top.partition("-")
        assert int(start) <= error_line <= int(end or start), (test, top, error_line)


def test_enabled_with_dash_p(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "tcfl", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*tcfl triage of 2 failed test(s)*"])


def test_off_by_default(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2, passed=1)
    assert "tcfl triage" not in result.stdout.str()


def test_writes_every_output_and_keeps_the_exit_status(suite: pytest.Pytester, tmp_path: Path) -> None:
    out = tmp_path / "tcfl-out"
    result = suite.runpytest("--tcfl", f"--tcfl-out={out}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        ["tcfl.txt", "tcfl.json", "tcfl.md", "tcfl.github.txt", "tcfl.junit.xml", "tcfl.sarif"]
    )
    body = json.loads((out / "tcfl.json").read_text())
    assert body["summary"]["failed"] == 2 and body["summary"]["passed"] == 1
    assert len((out / "tcfl.github.txt").read_text().splitlines()) == 2


def test_a_passing_session_prints_nothing_and_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ok="def test_ok():\n    assert True\n")
    result = pytester.runpytest("--tcfl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert "tcfl triage" not in result.stdout.str()


def test_a_triage_problem_never_changes_the_outcome(suite: pytest.Pytester, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    result = suite.runpytest("--tcfl", f"--tcfl-out={blocked / 'sub'}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["tcfl: triage failed: *"])


def test_the_shipped_suite_helper_is_found(pytester: pytest.Pytester) -> None:
    """The failure inside a helper module the test imports is placed in that module."""
    for path in SUITE.rglob("*.py"):
        target = pytester.path / path.relative_to(SUITE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    result = pytester.runpytest(
        "--tcfl", "--tcfl-ranker", "heuristic", "-p", "no:cacheprovider", "test_links.py"
    )
    result.stdout.fnmatch_lines(
        ["test_links.py::TestLinks::test_jumbo_mtu: KeyError: 'mtu'", "    1. helpers/inventory.py:*"]
    )


def test_loading_the_plugin_imports_nothing_else_of_tcfl() -> None:
    import subprocess
    import sys

    code = "import sys, app.pytest_plugin; print(sorted(m for m in sys.modules if m.startswith('app')))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "['app', 'app.pytest_plugin']"


@pytest.mark.slow
def test_a_session_is_recorded_as_a_ci_job(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--tcfl-db``: every test's run (passes too) goes to the CI history under the session's job,
    the CI's variables name it, and a later session ranks its failures with the earlier runs."""
    from app.store.history import HistoryStore
    from app.store.launches import LaunchStore
    from app.store.store import Store

    for name in ("GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL"):
        monkeypatch.delenv(name, raising=False)
    db = f"sqlite:///{suite.path / 'ci.db'}"
    first = suite.runpytest("--tcfl", "--tcfl-ranker", "heuristic", "--tcfl-db", db, "--tcfl-commit", "c1")
    first.assert_outcomes(failed=2, passed=1)
    first.stdout.fnmatch_lines(["tcfl: recorded 3 new run(s) of 3; launch 1"])
    monkeypatch.setenv("GITLAB_CI", "true")
    monkeypatch.setenv("CI_JOB_ID", "4242")
    monkeypatch.setenv("CI_PROJECT_PATH", "net/rates")
    monkeypatch.setenv("CI_COMMIT_SHA", "c2")
    second = suite.runpytest("--tcfl", "--tcfl-ranker", "heuristic", "--tcfl-db", db, "--tcfl-out", "out")
    second.stdout.fnmatch_lines(["*new failure*", "tcfl: recorded 3 new run(s) of 3; launch 2"])
    body = json.loads((suite.path / "out" / "tcfl.json").read_text())
    assert {t["result"]["history"]["runs_read"] for t in body["tests"]} == {1}  # the first session's run
    store = Store.open(db)
    try:
        launch = LaunchStore(store).get(2)
        assert launch is not None and (launch["pipeline"], launch["job_id"], launch["commit"]) == (
            "net/rates",
            "4242",
            "c2",
        )
        page = HistoryStore(store).history("test_two.py::test_passes")
        assert page is not None and [r["ci"]["commit"] for r in page["runs"]] == ["c2", "c1"]
    finally:
        store.close()
