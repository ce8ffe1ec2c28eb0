"""Every output format on a real CI report: pytest's JUnit file of two different failures, triaged."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from xml.etree.ElementTree import fromstring

import jsonschema
import pytest
from markdown_it import MarkdownIt

from app.ci import CiReport, local_triager, triage_results
from app.emit import FORMATS, emit
from app.emit.github import escape_data, escape_property
from app.ingest import read_results
from app.ingest.resolve import Checkout
from app.localize.result import TriageOptions
from tests.ci_tools import FAILED_TESTS, PytestRun

SCHEMA = Path(__file__).parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"


def _report(results_path: Path, root: Path) -> CiReport:
    results = read_results(results_path)
    options = TriageOptions(ranker="heuristic")
    return asyncio.run(triage_results(results, Checkout.scan(root), local_triager(options, None)))


@pytest.fixture(scope="module")
def report(py_results: PytestRun) -> CiReport:
    return _report(py_results.junit, py_results.root)


@pytest.fixture(scope="module")
def half_report(py_results: PytestRun, tmp_path_factory: pytest.TempPathFactory) -> CiReport:
    """The same results against an empty checkout: no script is found, so nothing can be triaged."""
    empty = tmp_path_factory.mktemp("empty-checkout")
    return _report(py_results.junit, empty)


def test_sarif_validates_against_the_2_1_0_schema(report: CiReport) -> None:
    document = json.loads(emit(report, "sarif"))
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(document, schema, cls=jsonschema.Draft4Validator)
    results = document["runs"][0]["results"]
    assert len(results) == len(FAILED_TESTS)
    for result in results:
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["endLine"] >= region["startLine"]


def test_sarif_of_untriaged_tests_validates_and_names_them(half_report: CiReport) -> None:
    document = json.loads(emit(half_report, "sarif"))
    jsonschema.validate(document, json.loads(SCHEMA.read_text()), cls=jsonschema.Draft4Validator)
    notes = document["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert len(notes) == len(FAILED_TESTS) and all("not triaged" in n["message"]["text"] for n in notes)
    assert document["runs"][0]["results"] == []


def test_github_is_one_annotation_per_failed_test(report: CiReport, half_report: CiReport) -> None:
    for rep in (report, half_report):
        lines = emit(rep, "github").splitlines()
        assert len(lines) == len(FAILED_TESTS)
        assert all(line.startswith("::error ") for line in lines)
    first = emit(report, "github").splitlines()
    for line, item in zip(first, report.triaged, strict=True):
        top = item.result.ranking[0]
        assert f"file={top.path},line={top.start_line},endLine={top.end_line}," in line
        assert "\n" not in line.split("::", 2)[2]


def test_github_escaping() -> None:
    assert escape_data("a%b\r\nc") == "a%25b%0D%0Ac"
    assert escape_property("x:y,z") == "x%3Ay%2Cz"


def test_markdown_parses_into_headings_and_tables(report: CiReport) -> None:
    text = emit(report, "markdown")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    kinds = [t.type for t in tokens]
    assert kinds.count("table_open") == 1 + len(report.triaged)  # the summary, one ranking per test
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[0].startswith("tcfl: 2 failed test(s)")
    for item in report.triaged:
        assert item.run.test_id in headings
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 1 + len(report.triaged) + sum(1 + len(t.result.ranking) for t in report.triaged)


def test_markdown_cells_survive_pipes_and_backticks(report: CiReport) -> None:
    from app.emit.markdown import cell

    table = f"| a | b |\n| --- | --- |\n| {cell('x | `y`')} | z |\n"
    tokens = MarkdownIt("commonmark").enable("table").parse(table)
    cells = [t.children[0].content for t in tokens if t.type == "inline"][2:]
    assert cells == ["x | `y`", "z"]


def test_junit_output_keeps_the_input_and_adds_the_ranking(report: CiReport, py_results: PytestRun) -> None:
    root = fromstring(emit(report, "junit"))
    original = fromstring(py_results.junit.read_bytes())
    assert len(root.findall(".//testcase")) == len(original.findall(".//testcase"))
    annotated = 0
    for case in root.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if case.find("failure") is None:
            assert not props
            continue
        annotated += 1
        item = next(t for t in report.triaged if t.run.test_id.endswith(case.get("name")))
        top = item.result.ranking[0]
        assert props["tcfl.rank.1"].startswith(f"{top.path}:{top.start_line}")
        assert "tcfl: top" in case.find("system-out").text
    assert annotated == len(FAILED_TESTS)


def test_junit_output_from_another_format_is_built(py_results: PytestRun) -> None:
    report = _report(py_results.reportlog, py_results.root)
    root = fromstring(emit(report, "junit"))
    cases = root.findall(".//testcase")
    assert len(cases) == 3
    assert sum(1 for c in cases if c.find("failure") is not None) == 2


def test_json_and_text_carry_every_failed_test(report: CiReport) -> None:
    body = json.loads(emit(report, "json"))
    assert body["summary"]["failed"] == 2 and body["summary"]["triaged"] == 2
    assert {t["test_id"] for t in body["tests"]} == {t.run.test_id for t in report.triaged}
    assert all(t["result"]["ranking"] for t in body["tests"])
    text = emit(report, "text")
    assert text.count("Group ") == len(report.groups) == 2
    assert all(f"--- {t.run.test_id}" in text for t in report.triaged)


def test_every_format_is_registered(report: CiReport) -> None:
    for fmt in FORMATS:
        assert emit(report, fmt).strip()
    with pytest.raises(ValueError, match="format must be one of"):
        emit(report, "html")
