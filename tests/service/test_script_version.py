"""A run's script version is its test's own file and the files it reaches, and a failure is
ranked only with the runs recorded before it: on real SQLite files and PostgreSQL schemas, with
real logs of the scripts run."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.analysis.model import Script
from app.history.records import parse_run
from app.options import resolve_options
from app.store.history import HistoryStore
from app.triage import finish, triage
from tests.service.test_history_store import history

__all__ = ["history"]  # the fixture, used by name
KEY = "tests/test_cart.py::test_total"
HELPER = "def total(prices):\n    amount = 0\n    for p in prices:\n        amount += p\n    return amount\n"
BROKEN = HELPER.replace("amount += p", "amount = p")
TEST = (
    "from cart import total\n\n\n"
    "def test_total():\n    value = total([1, 2, 3])\n    print('total', value)\n    assert value == 6\n"
)
CONFTEST = (
    "import pytest\n\n\n@pytest.fixture\ndef shop():\n"
    + "".join(f"    x{i} = {i}\n" for i in range(25))
    + "    return x0\n"
)


def _log(tmp: Path, helper: str) -> str:
    folder = tmp / f"run{abs(hash(helper))}"
    (folder / "tests").mkdir(parents=True, exist_ok=True)
    (folder / "tests" / "cart.py").write_text(helper)
    (folder / "tests" / "test_cart.py").write_text(TEST + "\n\ntest_total()\n")
    done = subprocess.run(
        [sys.executable, "tests/test_cart.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(folder / "tests")},
    )
    return done.stdout + done.stderr


def _scripts(helper: str, *extra: Script) -> list[dict[str, str]]:
    files = [Script("tests/test_cart.py", TEST), Script("tests/cart.py", helper), *extra]
    return [{"path": s.path, "content": s.content} for s in files]


def test_a_script_given_along_and_never_reached_is_no_part_of_the_version(
    history: HistoryStore, tmp_path: Path
) -> None:
    good, bad = _log(tmp_path, HELPER), _log(tmp_path, BROKEN)
    assert "AssertionError" in bad
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    runs = [
        parse_run(
            {
                "test_id": KEY,
                "verdict": verdict,
                "started_at": (t0 + timedelta(hours=n)).isoformat(),
                "ci": {"job_url": f"https://ci/{n}", "commit": f"c{n}"},
                # the later runs were sent with the suite's conftest.py too: same version
                "scripts": _scripts(helper, *([Script("tests/conftest.py", CONFTEST)] if n >= 2 else [])),
                "log": log,
            }
        )
        for n, (verdict, helper, log) in enumerate(
            [("pass", HELPER, good), ("pass", HELPER, good), ("pass", HELPER, good), ("fail", BROKEN, bad)]
        )
    ]
    stored = history.add_runs(runs)
    versions = [s["version_id"] for s in stored]
    assert versions[0] == versions[1] == versions[2] != versions[3]
    page = history.history(KEY)
    assert page is not None and len(page["versions"]) == 2
    first_bad = page["first_bad_version"]
    assert (first_bad["first_bad_commit"], first_bad["last_good_commit"]) == ("c3", "c2")

    # the failure triaged again with conftest.py given along: neither the version nor the ranking moves
    options = resolve_options(ranker="history", level="line")
    scripts = [Script("tests/test_cart.py", TEST), Script("tests/cart.py", BROKEN)]
    before = history.history_runs(KEY, before=t0 + timedelta(hours=3))
    assert [r.verdict for r in before] == ["pass"] * 3  # the failure's own run is not its past
    plain = finish(lambda: triage(scripts, bad, options, client=None, test=KEY, history=before))
    both = finish(
        lambda: triage(
            [*scripts, Script("tests/conftest.py", CONFTEST)],
            bad,
            options,
            client=None,
            test=KEY,
            history=before,
        )
    )
    assert plain.history is not None and both.history is not None
    assert both.history["version"] == plain.history["version"] == versions[3]
    hunks = both.history["first_bad_version"]["hunks"]
    assert [h["path"] for h in hunks] == ["tests/cart.py"]  # conftest.py "added 25 lines": no
    assert [(i.path, i.start_line) for i in both.ranking[:3]] == [
        (i.path, i.start_line) for i in plain.ranking[:3]
    ]
    assert (both.ranking[0].path, both.ranking[0].start_line) == ("tests/cart.py", 4)


def test_history_read_for_a_failure_stops_at_its_time(history: HistoryStore, tmp_path: Path) -> None:
    good, bad = _log(tmp_path, HELPER), _log(tmp_path, BROKEN)
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    verdicts = ["pass", "fail", "pass", "pass"]
    history.add_runs(
        [
            parse_run(
                {
                    "test_id": KEY,
                    "verdict": v,
                    "started_at": (t0 + timedelta(hours=n)).isoformat(),
                    "scripts": _scripts(BROKEN if v == "fail" else HELPER),
                    "log": bad if v == "fail" else good,
                }
            )
            for n, v in enumerate(verdicts)
        ]
    )
    assert [r.verdict for r in history.history_runs(KEY)] == verdicts
    assert [r.verdict for r in history.history_runs(KEY, before=t0 + timedelta(hours=1))] == ["pass"]
    assert history.history_runs(KEY, before=t0) == []
