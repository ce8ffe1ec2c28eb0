"""CI history in the store, on real SQLite files and real PostgreSQL schemas."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from app.history.records import parse_run
from app.service.history_store import HistoryStore
from app.service.store import Store

V1 = "def helper():\n    return 41\n\n\ndef test_answer():\n    value = helper()\n    assert value == 42\n"
V2 = V1.replace("return 41", "return 42")
FAIL_LOG = """Traceback (most recent call last):
  File "/ci/tests/test_answer.py", line 7, in test_answer
    assert value == 42
AssertionError: assert 41 == 42
"""


@pytest.fixture
def history(database_url: str) -> Iterator[HistoryStore]:
    store = Store.open(database_url)
    try:
        yield HistoryStore(store)
    finally:
        store.close()


def record(n: int, verdict: str, content: str = V1, **extra: object) -> dict[str, object]:
    start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=n)
    return {
        "test_id": "tests/test_answer.py::test_answer",
        "verdict": verdict,
        "started_at": start.isoformat(),
        "env": {"TZ": "UTC"},
        "ci": {"job_url": f"https://ci/job/{n}"},
        "scripts": [{"path": "tests/test_answer.py", "content": content}],
        "log": FAIL_LOG if verdict == "fail" else "1 passed",
        **extra,
    }


def test_ingestion_is_idempotent_and_fingerprints_failures(history: HistoryStore) -> None:
    first = history.add_runs([parse_run(record(1, "pass", V2)), parse_run(record(2, "fail"))])
    again = history.add_runs([parse_run(record(2, "fail"))])
    assert [r["duplicate"] for r in first] == [False, False] and again[0]["duplicate"]
    assert again[0]["run_id"] == first[1]["run_id"]
    assert first[0]["err_sig"] is None and first[1]["err_sig"]
    assert first[0]["version_id"] != first[1]["version_id"]
    stored = history.run(first[1]["run_id"])
    assert stored is not None and stored["log"] == FAIL_LOG
    assert 7 in stored["trace"]["tests/test_answer.py"]["E"]


def test_history_classifies_the_last_failure_and_finds_the_first_bad_version(history: HistoryStore) -> None:
    history.add_runs([parse_run(record(n, "pass", V2)) for n in range(3)])
    history.add_runs([parse_run(record(3, "fail")), parse_run(record(4, "fail"))])
    page = history.history("tests/test_answer.py::test_answer")
    assert page is not None
    assert [r["verdict"] for r in page["runs"]] == ["fail", "fail", "pass", "pass", "pass"]
    assert page["classification"] == "recurring" and not page["flaky"]
    fbv = page["first_bad_version"]
    assert (
        fbv["last_good"] == page["runs"][-1]["version_id"]
        and fbv["first_bad"] == page["runs"][0]["version_id"]
    )
    assert fbv["script_changed"]
    assert history.history("nope") is None
    (test,) = history.tests()
    assert (test["key"], test["runs"], test["failures"]) == ("tests/test_answer.py::test_answer", 5, 2)


def test_signatures_group_failures_across_tests(history: HistoryStore) -> None:
    other = record(5, "fail", test_id="tests/test_answer.py::test_answer[slow]")
    other["ci"] = {"job_url": "https://ci/job/other"}
    history.add_runs([parse_run(record(1, "fail")), parse_run(other)])
    (group,) = history.signatures()
    assert group["failures"] == 2 and group["tests"] == 1  # [slow] is a parameter of the same test


def test_retention_drops_old_logs_and_runs(history: HistoryStore) -> None:
    history.add_runs([parse_run(record(0, "pass")), parse_run(record(1, "fail"))])
    now = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=30)
    assert history.apply_retention(now) == {"runs": 0, "failing_logs": 0, "passing_logs": 1}
    page = history.history("tests/test_answer.py::test_answer")
    assert page is not None and [r["has_log"] for r in page["runs"]] == [True, False]


def test_history_runs_come_back_with_their_versions_and_traces(history: HistoryStore) -> None:
    history.add_runs([parse_run(record(n, "pass", V2)) for n in range(3)])
    history.add_runs([parse_run(record(3, "fail"))])
    runs = history.history_runs("tests/test_answer.py::test_answer", limit=10)
    assert [r.verdict for r in runs] == ["pass", "pass", "pass", "fail"]
    assert runs[0].files == {"tests/test_answer.py": V2} and runs[-1].files == {"tests/test_answer.py": V1}
    assert [r.versions_apart for r in runs] == [1, 1, 1, 0]
    assert any(loc.line == 7 for loc in runs[-1].states)
    assert history.history_runs("nope") == []
