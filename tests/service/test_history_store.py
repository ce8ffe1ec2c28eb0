"""CI history in the store, on real SQLite files and real PostgreSQL schemas."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from app.analysis.model import Loc, Script, State
from app.analysis.pipeline import analyze
from app.history.rank import line_channels, map_runs, target_of
from app.history.records import RunRecord, parse_run
from app.store.history import SIGNATURE_KEYS, HistoryStore, signature_runs
from app.store.store import Store
from tests.support.value_script import FAIL_LOG as VALUE_FAIL_LOG
from tests.support.value_script import SCRIPT as VALUE_SCRIPT

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


def test_held_names_the_tests_the_history_holds_in_the_form_given(history: HistoryStore) -> None:
    assert history.held(["tests/test_answer.py::test_answer"]) == frozenset()
    history.add_runs([parse_run(record(0, "pass"))])
    given = ["tests/test_answer.py::test_answer", "tests/test_answer.py::test_other", "", "nope"]
    assert history.held(given) == {"tests/test_answer.py::test_answer"}
    for key in given:  # a key not held is one ``history_runs`` has nothing for
        assert (key in history.held(given)) == bool(history.history_runs(key))


def test_known_runs_are_skipped_and_a_run_repeated_in_one_batch_is_stored_once(history: HistoryStore) -> None:
    first = history.add_runs(
        [parse_run(record(1, "fail")), parse_run(record(1, "fail")), parse_run(record(2, "pass"))]
    )
    assert [r["duplicate"] for r in first] == [False, True, False]
    assert first[0]["run_id"] == first[1]["run_id"] != first[2]["run_id"]
    again = history.add_runs([parse_run(record(2, "pass")), parse_run(record(3, "pass"))])
    assert [r["duplicate"] for r in again] == [True, False] and again[0]["run_id"] == first[2]["run_id"]
    page = history.history("tests/test_answer.py::test_answer")
    assert page is not None and len(page["runs"]) == 3


def test_tests_are_listed_by_their_newest_run_whatever_the_ingestion_order(history: HistoryStore) -> None:
    late = record(9, "pass", test_id="tests/test_other.py::test_late", ci={"job_url": "https://ci/other"})
    history.add_runs([parse_run(record(5, "fail")), parse_run(late)])
    history.add_runs([parse_run(record(1, "pass"))])  # older than what is stored: the order stays
    listed = history.tests()
    assert [(t["key"], t["runs"], t["failures"]) for t in listed] == [
        ("tests/test_other.py::test_late", 1, 0),
        ("tests/test_answer.py::test_answer", 2, 1),
    ]
    assert listed[1]["last_run_at"].startswith("2026-01-01T05:00:00")
    assert [t["key"] for t in history.tests(limit=1, offset=1)] == ["tests/test_answer.py::test_answer"]


def test_history_runs_add_sibling_tests_of_the_same_file(history: HistoryStore) -> None:
    def other(n: int, test_id: str) -> dict[str, object]:
        return record(n, "pass", V2, test_id=test_id, ci={"job_url": f"https://ci/{test_id}/{n}"})

    history.add_runs([parse_run(record(n, "pass", V2)) for n in range(2)])
    history.add_runs([parse_run(record(4, "fail"))])
    history.add_runs([parse_run(other(n, "tests/test_answer.py::test_sibling")) for n in (1, 3)])
    history.add_runs([parse_run(other(2, "tests/test_elsewhere.py::test_answer"))])
    key = "tests/test_answer.py::test_answer"
    alone = history.history_runs(key, limit=10)
    assert [r.same_test for r in alone] == [True, True, True]
    scoped = history.history_runs(key, limit=10, siblings=5)
    assert [(r.verdict, r.same_test) for r in scoped] == [
        ("pass", True),
        ("pass", True),
        ("pass", False),  # the sibling's newest run only, in time order
        ("fail", True),
    ]
    assert scoped[2].files == {"tests/test_answer.py": V2} and scoped[2].versions_apart == 1


def test_retention_keeps_the_last_pass_and_the_first_failure_after_it(history: HistoryStore) -> None:
    verdicts = ["pass", "fail", "pass", "pass", "fail", "fail", "fail", "fail", "fail"]
    history.add_runs([parse_run(record(n, v, V2 if v == "pass" else V1)) for n, v in enumerate(verdicts)])
    key = "tests/test_answer.py::test_answer"
    before = history.history(key)
    assert before is not None
    now = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=10)
    counts = history.apply_retention(now, keep_days=5, keep_runs=2, dry_run=True)
    assert counts == {"runs": 5, "failing_logs": 0, "passing_logs": 0}
    assert len(history.history(key)["runs"]) == 9  # type: ignore[index]  # a dry run changes nothing
    assert history.apply_retention(now, keep_days=5, keep_runs=2) == counts
    after = history.history(key)
    assert after is not None
    kept = sorted(r["started_at"][11:13] for r in after["runs"])
    assert kept == ["03", "04", "07", "08"]  # last pass (3), first failure after it (4), newest two
    assert after["first_bad_version"] == before["first_bad_version"]
    assert history.tests()[0]["runs"] == 4


def test_retention_moves_a_tests_last_run_back_when_its_newest_run_goes(history: HistoryStore) -> None:
    history.add_runs(
        [parse_run(record(0, "pass")), parse_run(record(1, "fail")), parse_run(record(2, "skip"))]
    )
    now = datetime(2026, 3, 1, tzinfo=UTC)
    assert history.apply_retention(now, keep_runs=0, keep_days=1)["runs"] == 1
    (test,) = history.tests()
    assert test["runs"] == 2 and test["last_run_at"].startswith("2026-01-01T01:00:00")


def test_retention_anchors_break_time_ties_by_arrival(history: HistoryStore) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    later = (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=1)).isoformat()
    runs = [
        record(n, v, started_at=when)
        for n, (v, when) in enumerate([("pass", at), ("pass", at), ("fail", later), ("fail", later)])
    ]
    ids = [r["run_id"] for r in history.add_runs([parse_run(r) for r in runs])]
    assert history.apply_retention(datetime(2026, 6, 1, tzinfo=UTC), keep_days=1, keep_runs=0)["runs"] == 2
    page = history.history("tests/test_answer.py::test_answer")
    assert page is not None and sorted(r["id"] for r in page["runs"]) == [ids[1], ids[2]]


def failing(n: int, test: int, error: str) -> RunRecord:
    """A failure of test ``test`` at hour ``n`` whose last log line is ``error`` (one err_sig each)."""
    log = FAIL_LOG.replace("AssertionError: assert 41 == 42", error)
    body = record(n, "fail", test_id=f"tests/test_answer.py::test_{test}", log=log)
    body["ci"] = {"job_url": f"https://ci/job/{test}/{n}"}
    return parse_run(body)


def test_signature_groups_come_in_pages_newest_failure_first(history: HistoryStore) -> None:
    history.add_runs(
        [failing(n, n % 3, "ValueError: alpha") for n in range(6)]  # hours 0-5, tests 0-2
        + [failing(10, 7, "KeyError: 'beta'"), failing(11, 8, "KeyError: 'beta'")]
        + [failing(8, 9, "TypeError: gamma"), parse_run(record(20, "pass"))]
    )
    groups = history.signatures()
    assert [(g["failures"], g["tests"]) for g in groups] == [(2, 2), (1, 1), (6, 3)]
    alpha = groups[-1]
    assert alpha["first_seen"].startswith("2026-01-01T00:00") and alpha["last_seen"].startswith(
        "2026-01-01T05:00"
    )
    assert alpha["test_keys"] == [f"tests/test_answer.py::test_{k}" for k in range(3)]
    assert alpha["error_message"].startswith("ValueError")
    assert groups[0]["error_message"].startswith("KeyError")
    assert [g["failures"] for g in history.signatures(order="failures")] == [6, 2, 1]
    paged = history.signatures(limit=2) + history.signatures(limit=2, offset=2)
    assert paged == groups and history.signatures(offset=3) == []


def test_signature_groups_list_a_sample_of_their_tests_and_count_all(history: HistoryStore) -> None:
    history.add_runs([failing(n, n, "ValueError: alpha") for n in range(SIGNATURE_KEYS + 3)])
    (group,) = history.signatures()
    assert group["tests"] == group["failures"] == SIGNATURE_KEYS + 3
    assert group["test_keys"] == sorted(group["test_keys"]) and len(group["test_keys"]) == SIGNATURE_KEYS
    runs = signature_runs(history.store, group["err_sig"], limit=5)
    assert runs is not None and [r["started_at"][11:13] for r in runs] == ["22", "21", "20", "19", "18"]
    assert runs[0]["key"] == f"tests/test_answer.py::test_{SIGNATURE_KEYS + 2}"
    assert signature_runs(history.store, "0" * 40) is None


def test_a_pass_without_a_log_counts_with_its_must_run_trace(history: HistoryStore) -> None:
    """CI results files record passes without logs: the test's must-run lines ran, the rest is doubtful."""
    logless = {k: v for k, v in record(0, "pass", V2).items() if k != "log"}
    other = {
        **logless,
        "test_id": "tests/test_answer.py::test_missing",
        "ci": {"job_url": "https://ci/job/9"},
    }
    history.add_runs([parse_run(logless), parse_run(other), parse_run(record(1, "fail"))])
    runs = history.history_runs("tests/test_answer.py::test_answer", limit=10)
    assert [r.verdict for r in runs] == ["pass", "fail"]
    executed = sorted(loc.line for loc, state in runs[0].states.items() if state == State.EXE)
    assert executed == [1, 2, 5, 6, 7]  # the test, and the helper it surely called
    assert history.history_runs("tests/test_answer.py::test_missing") == []  # no such function: no trace


def test_stored_runs_keep_their_printed_values_for_the_values_channel(history: HistoryStore) -> None:
    """What a pass's log statements printed comes back with the run, so the ranker's values channel speaks."""
    path, key = "tests/test_value.py", "tests/test_value.py::test_value"
    runs = [
        {
            **record(n, "pass", VALUE_SCRIPT),
            "test_id": key,
            "scripts": [{"path": path, "content": VALUE_SCRIPT}],
            "log": f"a is 6 at {n}.5\nb is 8\n",
        }
        for n in range(3)
    ]
    history.add_runs([parse_run(r) for r in runs])
    stored = history.history_runs(key, limit=10)
    assert [r.values[Loc(path, 12)] for r in stored] == [frozenset({("8",)})] * 3
    assert stored[0].values[Loc(path, 11)] == frozenset({("6", "0.5")})
    failure = analyze([Script(path, VALUE_SCRIPT)], VALUE_FAIL_LOG)
    target = target_of(failure)
    assert line_channels(target, map_runs(target, stored))["values"][Loc(path, 10)] == 1.0  # b's assignment
