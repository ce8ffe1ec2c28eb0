"""Hostile or broken JUnit files: refused with a message, never expanded, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ingest import IngestError, parse_bytes
from tests.ci_tools import PytestRun

BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<testsuites><testsuite name="s"><testcase name="t"><failure message="&lol3;"/></testcase></testsuite>
</testsuites>
"""
EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE x [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<testsuite name="s"><testcase name="t"><failure message="&secret;"/></testcase></testsuite>
"""


def test_xml_bomb_is_refused() -> None:
    with pytest.raises(IngestError, match="unsafe XML"):
        parse_bytes(BOMB, "bomb.xml")


def test_external_entity_is_refused() -> None:
    with pytest.raises(IngestError, match="unsafe XML") as info:
        parse_bytes(EXTERNAL, "xxe.xml")
    assert "root:" not in str(info.value)


def test_truncated_junit_from_pytest_is_a_clear_error(py_results: PytestRun) -> None:
    data = py_results.junit.read_bytes()
    with pytest.raises(IngestError, match=r"not well-formed XML.*truncated"):
        parse_bytes(data[: len(data) // 2], "junit.xml")


def test_xml_that_is_not_junit() -> None:
    with pytest.raises(IngestError, match="not <testsuites>"):
        parse_bytes(b"<html><body/></html>", "page.xml", "junit")


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_as_junit_give_runs_or_a_clear_error(data: bytes) -> None:
    try:
        parse_bytes(b"<testsuite>" + data, "fuzz.xml", "junit")
    except IngestError as exc:
        assert "fuzz.xml" in str(exc)


def test_same_file_path_reading(py_results: PytestRun, tmp_path: Path) -> None:
    copy = tmp_path / "results.xml"
    copy.write_bytes(py_results.junit.read_bytes())
    assert len(parse_bytes(copy.read_bytes(), str(copy)).failed) == 2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(max_size=40), st.just('{"$report_type": "TestReport", "nodeid": "a::b"}')),
        max_size=6,
    )
)
def test_any_lines_as_a_report_log_give_runs_or_a_clear_error(lines: list[str]) -> None:
    data = "\n".join(['{"$report_type": "SessionStart"}', *lines]).encode()
    try:
        results = parse_bytes(data, "fuzz.jsonl", "reportlog")
    except IngestError as exc:
        assert "fuzz.jsonl" in str(exc)
    else:
        assert all(run.verdict in ("pass", "fail", "error", "skip") for run in results.runs)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_as_subunit_give_runs_or_a_clear_error(data: bytes) -> None:
    try:
        parse_bytes(b"\xb3" + data, "fuzz.subunit", "subunit")
    except IngestError as exc:
        assert "fuzz.subunit" in str(exc)
