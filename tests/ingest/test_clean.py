"""Every value a reader yields is made safe before anything shows or stores it (app/ingest/clean.py)."""

from __future__ import annotations

import json
import math

import pytest

from app.history.records import parse_test_id
from app.ingest.base import Results, TestRun
from app.ingest.clean import MAX_TEST_ID, MAX_WARNINGS, clean_results, clean_run, duration, json_int, text


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (1.5, 1.5),
        ("0.25", 0.25),
        (" 3 ", 3.0),
        (0, 0.0),
        (None, None),
        ("", None),
        ("NaN", None),
        (math.nan, None),
        ("inf", None),
        (-math.inf, None),
        ("-1", None),
        (-0.5, None),
        ("1,5", None),
        ("1e999", None),
        (10**400, None),
        ("9" * 30, None),
        ("abc", None),
        (True, None),
        ([1], None),
        ({"s": 1}, None),
    ],
)
def test_durations_are_finite_non_negative_or_none(value: object, seconds: float | None) -> None:
    got, problem = duration(value)
    assert got == seconds
    assert (problem is None) == (seconds is not None or value in (None, ""))


def test_text_drops_nul_and_replaces_lone_surrogates() -> None:
    assert text("a\x00b") == "ab"
    cleaned = text("x\ud800y")
    cleaned.encode("utf-8")  # would raise on a surrogate
    assert cleaned == "x\ufffdy"
    assert text(3) == "3"


def test_the_id_limit_is_the_history_one() -> None:
    parse_test_id("a" * MAX_TEST_ID)
    with pytest.raises(ValueError, match="longer than"):
        parse_test_id("a" * (MAX_TEST_ID + 1))


def test_a_long_id_is_cut_with_a_warning_and_the_history_takes_it() -> None:
    run, problems = clean_run(TestRun("t.py::test_" + "a" * 3000 + "[p]", "fail"), "test #1")
    assert run is not None and len(run.test_id) <= MAX_TEST_ID
    assert any("cut to 1000" in p for p in problems)
    parse_test_id(run.test_id, "pytest")  # raised "longer than 1000 characters" before


@pytest.mark.parametrize("test_id", ["", "   ", "\x00", "\x00 \x00"])
def test_an_empty_id_is_dropped_with_a_warning_naming_the_record(test_id: str) -> None:
    run, problems = clean_run(TestRun(test_id, "fail"), "testcase #7")
    assert run is None
    assert problems == ["testcase #7: the test has no id (empty name); not read"]


def test_every_field_is_cleaned() -> None:
    run, problems = clean_run(
        TestRun(
            "t.py::test_\x00x",
            "weird",
            log="a\x00b",
            error="e\ud800",
            duration_s=math.nan,
            script_paths=("t.py\x00", "", "t.py"),
            suite="s" * 500,
            warnings=("w\x00",),
        ),
        "test #1",
    )
    assert run is not None
    assert (run.test_id, run.verdict, run.log, run.error) == ("t.py::test_x", "error", "ab", "e\ufffd")
    assert run.duration_s is None and run.script_paths == ("t.py",) and len(run.suite) == 200
    assert run.warnings == ("w",)
    assert len(problems) == 2  # the id's NUL, the duration
    json.dumps(run.to_dict(), allow_nan=False)


def test_problems_of_a_failed_run_stay_with_it_others_go_to_the_file() -> None:
    results = clean_results(
        Results(
            "junit",
            (
                TestRun("a", "fail", duration_s=math.inf),
                TestRun("b", "pass", duration_s=-1.0),
                TestRun("", "fail"),
            ),
        )
    )
    failed, passed = results.runs
    assert any("duration" in w for w in failed.warnings)
    assert passed.warnings == ()
    assert any(w.startswith("b: duration") for w in results.warnings)
    assert any("test #3" in w for w in results.warnings)


def test_warnings_are_capped() -> None:
    runs = tuple(TestRun(f"t{i}", "pass", duration_s=-1.0) for i in range(MAX_WARNINGS + 50))
    warnings = clean_results(Results("junit", runs)).warnings
    assert len(warnings) == MAX_WARNINGS + 1
    assert warnings[-1] == "50 more warnings like these left out"


def test_json_numbers_past_the_digit_limit_are_infinite_not_an_error() -> None:
    assert json.loads("9" * 5000, parse_int=json_int) == math.inf
    assert json.loads("12", parse_int=json_int) == 12
