"""Signatures, classification, first bad version and grouping on small synthetic histories."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.analysis.model import Script
from app.history.signatures import (
    Failure,
    Run,
    analysis_signature,
    classify,
    err_sig,
    first_bad_version,
    group,
    is_flaky,
    loc_sig,
    log_signature,
    mask,
    normalise_error,
    pairwise_f1,
    snapshot_signature,
    split_exception,
)
from tests.conftest import RUNNING


def test_mask_hides_run_specific_tokens() -> None:
    text = (
        "conn 10.0.0.7:8080 reset at 2024-05-01 12:00:03,120 id 0x7f3a"
        " uuid 123e4567-e89b-12d3-a456-426614174000 in /tmp/x/y.txt after 3.5 s"
    )
    assert mask(text) == "conn <ip> reset at <ts> id <hex> uuid <uuid> in <path> after <n> s"


def test_split_exception_reads_type_and_message() -> None:
    assert split_exception("AssertionError: 3 != 4") == ("AssertionError", "3 != 4")
    assert split_exception("E   requests.exceptions.ConnectionError: refused") == (
        "ConnectionError",
        "refused",
    )
    assert split_exception("something odd happened") == ("", "something odd happened")


def test_err_sig_is_stable_across_numbers_and_line_moves_but_not_causes() -> None:
    a = err_sig("AssertionError: 3 != 4", "test_x", "self.assertEqual(a, b)")
    assert a == err_sig("AssertionError: 7 != 9", "test_x", "  self.assertEqual(a,  b)")
    assert a != err_sig("KeyError: 'name'", "test_x", "self.assertEqual(a, b)")
    assert a != err_sig("AssertionError: 3 != 4", "test_y", "self.assertEqual(a, b)")
    assert loc_sig(a, "x = 1\ny = 2") == loc_sig(a, "x = 1  y = 2")


P, F = "pass", "fail"


def runs(spec: str, version: str = "v1", sig: str = "s") -> list[Run]:
    return [Run(P if c == "p" else F, version, "env", sig if c == "f" else None) for c in spec]


def test_classification() -> None:
    now = Run(F, "v2", "env", "s")
    assert classify(runs("ppp"), now) == "new"
    assert classify(runs("pf", "v1", "other"), now) == "new"
    assert classify(runs("pff", "v1"), now) == "recurring"
    assert classify(runs("pfpp", "v1"), now) == "regression"
    assert classify(runs("pfpfppfp", "v2"), now) == "flaky"
    assert not is_flaky(runs("pppp", "v2"), Run(F, "v3", "env", "s"))  # a new version is not a flip


def test_flakiness_is_per_environment() -> None:
    history = [Run(P, "v2", "a"), Run(F, "v2", "b", "s"), Run(P, "v2", "a"), Run(F, "v2", "b", "s")]
    assert not is_flaky(history, Run(F, "v2", "b", "s"))
    assert is_flaky(history, Run(F, "v2", "a", "s"))


def test_first_bad_version_and_range() -> None:
    history = [*runs("pp", "v1"), *runs("p", "v2"), *runs("f", "v4")]
    found = first_bad_version(history, Run(F, "v5", "env", "s"), ["v1", "v2", "v3", "v4", "v5"])
    assert (found.last_good, found.first_bad, found.between) == ("v2", "v4", ("v3",))
    assert found.script_changed
    same = first_bad_version(runs("pp", "v5"), Run(F, "v5", "env", "s"))
    assert not same.script_changed and "unchanged" in same.note
    assert first_bad_version([], Run(F, "v1", "env", "s")).last_good is None


def test_grouping_and_pairwise_f1() -> None:
    failures = [Failure(1, "a", "x"), Failure(2, "a", "x"), Failure(3, "a", "y"), Failure(4, "b", None)]
    groups = group(failures)
    assert [g.members for g in groups] == [(1, 2), (3,), (4,)]
    assert [g.members for g in group(failures, refine=False)] == [(1, 2, 3), (4,)]
    truth = {1: "t1", 2: "t1", 3: "t1", 4: "t2"}
    predicted = {m: i for i, g in enumerate(groups) for m in g.members}
    # true pairs 12 13 23; predicted 12: tp 1, fn 2 -> 2/(2+0+2)
    assert pairwise_f1(predicted, truth) == 0.5
    assert pairwise_f1(truth, truth) == 1.0


def test_mask_hides_addresses_durations_short_ids_and_temp_names() -> None:
    cases = {
        "connect to [2001:db8::8a2e:370:7334]:443 failed": "connect to <ip> failed",
        "host fe80::1ff:fe23:4567:890a%eth0 down; ::1 refused": "host <ip> down; <ip> refused",
        "nic 52:54:00:12:34:56 and 52-54-00-AB-CD-EF": "nic <mac> and <mac>",
        "timed out after 30.2s (150ms, 1m30s)": "timed out after <dur> (<dur>, <dur>)",
        "commit a3f9c2d job 1a2b3c4d5e": "commit <hex> job <hex>",
        "file tmpk3j4_x9q gone": "file <tmp> gone",
    }
    for text, masked in cases.items():
        assert mask(text) == masked, text
    # what is not run-specific stays: names with ::, hex-looking words, times of day are numbers
    assert mask("Foo::bar deadbeef") == "Foo::bar deadbeef"
    assert mask("at 12:00:03") == "at <n>:<n>:<n>"
    assert err_sig("TimeoutError: after 30.2s", "f", "x") == err_sig("TimeoutError: after 4.75s", "f", "x")


# -- the one id of a failure: the same from its log, its analysis and its stored snapshot -----


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (
            "TimeoutError: host 10.0.0.12:8080 did not answer in 30 s",
            "TimeoutError: host 10.0.0.7:80 did not answer in 5 s",
        ),
        ("KeyError: 'user-1842'", "KeyError: 'user-77'"),
        (
            "OSError: /tmp/run-a/data.bin missing at 0x7f3a2b",
            "OSError: /var/tmp/x/data.bin missing at 0xdeadbeef",
        ),
        (
            "Error: failed at 2026-11-23T10:00:01Z id 123e4567-e89b-12d3-a456-426614174000\nmore",
            "Error: failed at 2025-01-02 03:04:05.123 id 00000000-0000-0000-0000-000000000000\nother",
        ),
    ],
)
def test_the_id_and_the_shown_error_ignore_run_specific_values(one: str, other: str) -> None:
    assert normalise_error(one) == normalise_error(other) and "\n" not in normalise_error(one)
    assert log_signature(one) == log_signature(other)
    assert log_signature(one) != log_signature("ValueError: " + one)


@given(st.text(max_size=200))
def test_the_shown_error_is_one_masked_line(text: str) -> None:
    once = normalise_error(text)
    assert "\n" not in once and len(once) <= 500


TRACEBACK = """INFO checking
Traceback (most recent call last):
  File "/ci/work/tests/test_a.py", line {line}, in test_a
    check(x)
  File "/ci/work/tests/helpers.py", line 3, in check
    assert value == 2, value
AssertionError: {value}
"""
TEST_A = "from helpers import check\n\n\ndef test_a():\n    x = 1\n    check(x)\n"
HELPERS = "# helper\n\ndef check(value):\n    assert value == 2, value\n"
SCRIPTS = (Script("tests/test_a.py", TEST_A), Script("tests/helpers.py", HELPERS))


def test_the_id_is_the_innermost_script_frame_not_its_line_number() -> None:
    log = TRACEBACK.format(line=6, value=1)
    moved = TRACEBACK.format(line=9, value=7)  # the test file grew by three lines elsewhere
    edited = (Script("tests/test_a.py", "\n\n\n" + TEST_A), SCRIPTS[1])
    assert log_signature(log, SCRIPTS) == log_signature(moved, edited)
    assert log_signature(log, SCRIPTS) == err_sig(
        "AssertionError: 1", "check", "    assert value == 2, value"
    )
    # only the test file known: its frame is the innermost in the scripts
    assert log_signature(log, SCRIPTS[:1]) == err_sig("AssertionError: 1", "test_a", "check(x)")
    # no scripts: the innermost frame as printed
    assert log_signature(log) == err_sig("AssertionError: 1", "check", "assert value == 2, value")


def test_an_analysis_and_its_snapshot_give_the_id_the_log_gives() -> None:
    from app.analysis.pipeline import analyze
    from app.analysis.render import render
    from app.analysis.snapshot import build

    for scripts, log in (
        (SCRIPTS, TRACEBACK.format(line=6, value=1)),
        (
            (Script("test_example.py", (RUNNING / "test_example.py").read_text()),),
            (RUNNING / "failure.log").read_text(),
        ),
    ):
        analysis = analyze(scripts, log)
        assert analysis.error_frames, "the example fails in a script"
        want = log_signature(log, scripts)
        assert analysis_signature(analysis) == want
        summary = build(analysis, render(analysis, "tplus", "block"), log).summary
        assert snapshot_signature(json.loads(json.dumps(summary))) == want  # as stored: JSON
