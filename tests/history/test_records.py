"""Run records: test identity across CI id formats, validation with clear messages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.history.records import env_fingerprint, parse_run, parse_test_id


@pytest.mark.parametrize(
    ("test_id", "key", "params"),
    [
        ("tests/test_a.py::TestX::test_y[1-foo]", "tests/test_a.py::TestX::test_y", "1-foo"),
        ("tests/test_a.py::test_plain", "tests/test_a.py::test_plain", ""),
        ("1-tests/foo.py:Foo.test_bar;run-variant-abc1", "tests/foo.py::Foo::test_bar", "run-variant-abc1"),
        (
            "tempest.api.compute.test_x.TestC.test_y[id-12ab,smoke]",
            "tempest/api/compute/test_x.py::TestC::test_y",
            "id-12ab,smoke",
        ),
        ("test.test_binop.RatTestCase.test_add", "test/test_binop.py::RatTestCase::test_add", ""),
    ],
)
def test_parameters_and_variants_leave_the_key(test_id: str, key: str, params: str) -> None:
    """One key whichever tool named the test (app.ingest.testkey; its own tests cover the forms)."""
    parsed, got = parse_test_id(test_id)
    assert (parsed.key, got) == (key, params)


def test_a_full_record() -> None:
    run = parse_run(
        {
            "test_id": "t.py::test_a[x]",
            "verdict": "FAILED",
            "started_at": "2026-01-02T03:04:05Z",
            "env": {"TZ": "UTC", "PY": 3},
            "ci": {"pipeline": "nightly", "job_url": "https://ci/1", "commit": "abc"},
            "scripts": [{"path": "t.py", "content": "def test_a():\n    assert 0\n"}],
            "log": "AssertionError",
        }
    )
    assert run.verdict == "fail" and run.params == "x" and run.key.key == "t.py::test_a"
    assert run.started_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert run.env == {"TZ": "UTC", "PY": "3"}
    assert (
        run.identity()
        == parse_run(
            {"test_id": "t.py::test_a[x]", "verdict": "fail", "ci": {"job_url": "https://ci/1"}}
        ).identity()
    )


def test_env_fingerprint_ignores_order() -> None:
    assert env_fingerprint({"a": 1, "b": "2"}) == env_fingerprint({"b": 2, "a": "1"})
    assert env_fingerprint({"a": 1}) != env_fingerprint({"a": 2})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "JSON object"),
        ({"verdict": "pass"}, "test_id"),
        ({"test_id": "t", "verdict": "maybe"}, "verdict must be one of"),
        ({"test_id": "t", "verdict": "pass", "started_at": "yesterday"}, "ISO 8601"),
        ({"test_id": "t", "verdict": "pass", "scripts": [{"path": "x"}]}, "scripts must be"),
        ({"test_id": "t", "verdict": "pass", "env": ["a"]}, "env must be"),
        ({"test_id": " ", "verdict": "pass"}, "empty"),
        ({"test_id": "t\x00", "verdict": "pass"}, "test_id must not contain NUL"),
        ({"test_id": "t", "verdict": "pass", "params": "p\x00"}, "params must not contain NUL"),
        ({"test_id": "t", "verdict": "pass", "ci": {"pipeline": "p\x00"}}, "pipeline must not contain NUL"),
        ({"test_id": "t", "verdict": "pass", "commit": "c\x00"}, "commit must not contain NUL"),
    ],
)
def test_bad_records_say_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_run(data)
