"""Hostile CI uploads: a malformed record is a warning and every other test is still read.

Hand-made cases first (each once gave a traceback, an HTTP 500 or a lost report), then a fuzz
of every format: well-formed tests mixed with records mangled by type, depth, encoding and size
(tests/ingest/hostile.py). The property is the same for both: no exception but the documented
``IngestError``, every well-formed test reported with its verdict, every value safe to show
(JSON without NaN) and to store (no NUL, ids within the history's limit).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.ingest import IngestError, parse_bytes, read_folder, read_results
from app.ingest.clean import MAX_TEST_ID
from tests.ingest import hostile
from tests.ingest.hostile import GOOD_TESTS, Good, check_results, dotted

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

OK = '<testcase classname="pkg.T" name="test_ok" time="0.1"/>'


def _junit(*cases: str) -> bytes:
    return f'<testsuites><testsuite name="s">{OK}{"".join(cases)}</testsuite></testsuites>'.encode()


def _case(attrs: str, inner: str = '<failure message="m">ValueError: m</failure>') -> str:
    return f"<testcase {attrs}>{inner}</testcase>"


def _report(**fields: object) -> str:
    record = {
        "$report_type": "TestReport",
        "nodeid": "t.py::test_bad",
        "location": ["t.py", 1, "test_bad"],
        "when": "call",
        "outcome": "failed",
        "duration": 0.1,
        "longrepr": "E   ValueError: boom",
    }
    record.update(fields)
    return json.dumps(record)


REPORT_OK = _report(nodeid="t.py::test_ok", outcome="passed", longrepr=None)


def _reportlog(*lines: str) -> bytes:
    return "\n".join([REPORT_OK, *lines, REPORT_OK.replace("test_ok", "test_ok2")]).encode() + b"\n"


# (name, data, the good test ids that must be read, a warning that must be given or None)
CASES: list[tuple[str, bytes, set[str], str | None]] = [
    *(
        (
            f"junit time={t!r}",
            _junit(_case(f'classname="pkg.T" name="test_x" time="{t}"')),
            {"pkg.T.test_ok"},
            "time",
        )
        for t in ("NaN", "inf", "-inf", "-1", "1,5", "1e999", "abc", "9" * 400)
    ),
    ("junit empty name", _junit(_case('classname="" name=""')), {"pkg.T.test_ok"}, "no id"),
    ("junit no name", _junit(_case("")), {"pkg.T.test_ok"}, "no id"),
    (
        "junit 2000-character name",
        _junit(_case(f'classname="pkg.T" name="{"a" * 2000}"')),
        {"pkg.T.test_ok"},
        "cut to",
    ),
    (
        "junit nested testsuites",
        b'<testsuites><testsuite name="a"><testsuite name="b">'
        + _case('classname="pkg.T" name="test_x"').encode()
        + b"</testsuite>"
        + OK.encode()
        + b"</testsuite></testsuites>",
        {"pkg.T.test_ok", "pkg.T.test_x"},
        None,
    ),
    (
        "junit testsuites 5,000 deep",
        b"<testsuites>"
        + b'<testsuite name="a">' * 5000
        + OK.encode()
        + b"</testsuite>" * 5000
        + b"</testsuites>",
        {"pkg.T.test_ok"},
        None,
    ),
    (
        "junit NUL reference",
        _junit(_case('classname="pkg.T" name="test_&#0;x"')),
        {"pkg.T.test_ok"},
        "replaced",
    ),
    ("junit raw NUL", _junit(_case('classname="pkg.T" name="test_\x00x"')), {"pkg.T.test_ok"}, "replaced"),
    (
        "junit escape code",
        _junit(_case('name="x"', "<system-out>\x1b[31mred</system-out>")),
        {"pkg.T.test_ok"},
        None,
    ),
    (
        "junit latin-1 bytes",
        _junit(_case('name="x"')).replace(b'"m"', b'"caf\xe9"'),
        {"pkg.T.test_ok"},
        "replaced",
    ),
    ("junit surrogate reference", _junit(_case('name="x&#xD800;"')), {"pkg.T.test_ok"}, "replaced"),
    (
        "junit bad counts",
        _junit().replace(b"<testsuite ", b'<testsuite tests="x" time="NaN" '),
        {"pkg.T.test_ok"},
        None,
    ),
    (
        "junit case in a case",
        _junit('<testcase name="a"><testcase name="b"/></testcase>'),
        {"pkg.T.test_ok", "a"},
        None,
    ),
    ("junit huge line", _junit(_case(f'name="x" line="{"9" * 500}"')), {"pkg.T.test_ok"}, None),
    *(
        (f"reportlog {what}", _reportlog(_report(**fields)), {"t.py::test_ok", "t.py::test_ok2"}, warning)
        for what, fields, warning in [
            ("duration string", {"duration": "x"}, "duration"),
            ("duration NaN", {"duration": float("nan")}, "duration"),
            ("duration inf", {"duration": float("inf")}, "duration"),
            ("duration negative", {"duration": -5}, "duration"),
            ("duration 10**400", {"duration": 10**400}, "duration"),
            ("outcome 3", {"outcome": 3}, "outcome"),
            ("outcome list", {"outcome": ["failed"]}, "outcome"),
            ("longrepr chain 5", {"longrepr": {"chain": 5}}, None),
            ("longrepr chain of ints", {"longrepr": {"chain": [[5, 6, 7]]}}, None),
            (
                "longrepr odd entries",
                {"longrepr": {"reprtraceback": {"reprentries": [5, {"data": 3}]}}},
                None,
            ),
            ("longrepr crash list", {"longrepr": {"reprcrash": [1]}}, None),
            ("longrepr 900 deep", {"longrepr": hostile.deep(900)}, None),
            ("nodeid list", {"nodeid": ["a", "b"]}, "not a string"),
            ("nodeid null", {"nodeid": None}, "not a string"),
            ("nodeid empty", {"nodeid": ""}, "no id"),
            ("nodeid 2000 characters", {"nodeid": "t.py::" + "a" * 2000}, "cut to"),
            ("nodeid NUL", {"nodeid": "t.py::test_\x00x"}, "NUL"),
            ("location string", {"location": "x"}, None),
            ("sections int", {"sections": 5}, None),
            ("sections dict", {"sections": {"a": 1}}, None),
            ("when list", {"when": [1]}, None),
            ("report type int", {"$report_type": 5}, None),
            ("longrepr int", {"longrepr": 5}, None),
        ]
    ),
    (
        "reportlog JSON 100,000 deep",
        _reportlog('{"$report_type": "TestReport", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        {"t.py::test_ok", "t.py::test_ok2"},
        "nested too deeply",
    ),
    (
        "reportlog 5,000 digits",
        _reportlog(_report().replace('"duration": 0.1', '"duration": ' + "9" * 5000)),
        {"t.py::test_ok", "t.py::test_bad"},
        "duration",
    ),
    ("reportlog not UTF-8", _reportlog(_report()).replace(b"boom", b"bo\xffom"), {"t.py::test_bad"}, "UTF-8"),
    (
        "reportlog garbage line",
        _reportlog("{not json"),
        {"t.py::test_ok", "t.py::test_ok2"},
        "line 2 is not JSON",
    ),
    (
        "reportlog a list line",
        _reportlog("[1, 2]"),
        {"t.py::test_ok", "t.py::test_ok2"},
        "not a pytest report-log",
    ),
    (
        "reportlog NaN literal",
        _reportlog(_report().replace('"duration": 0.1', '"duration": NaN')),
        {"t.py::test_bad"},
        "duration",
    ),
    (
        "stestr time 1.2.3",
        b"{0} a.T.test_x [1.2.3s] ... FAILED\nValueError: x\n{0} a.T.test_y [0.1s] ... ok\n",
        {"a.T.test_x", "a.T.test_y"},
        None,
    ),
    (
        "stestr time of 400 digits",
        b"{0} a.T.test_x [" + b"9" * 400 + b".0s] ... FAILED\nValueError: x\n{0} a.T.test_y [0.1s] ... ok\n",
        {"a.T.test_x", "a.T.test_y"},
        None,
    ),
    (
        "stestr NUL in an id",
        b"{0} a.T.test_\x00x [1s] ... FAILED\nValueError\n{0} a.T.test_y [1s] ... ok\n",
        {"a.T.test_y"},
        None,
    ),
    (
        "stestr 3,000-character id",
        b"{0} a.T." + b"x" * 3000 + b" [1s] ... ok\n{0} a.T.test_y [1s] ... ok\n",
        {"a.T.test_y"},
        "cut to",
    ),
]


@pytest.mark.parametrize(("name", "data", "good", "warning"), CASES, ids=[c[0] for c in CASES])
def test_a_malformed_record_is_a_warning_and_the_rest_are_read(
    name: str, data: bytes, good: set[str], warning: str | None
) -> None:
    results = parse_bytes(data, "upload")
    ids = {run.test_id for run in results.runs}
    assert good <= ids
    check_results(results, [])
    if warning is not None:
        said = [*results.warnings, *(w for run in results.runs for w in run.warnings)]
        assert any(warning in w for w in said), said


@pytest.mark.parametrize(
    ("data", "fmt", "message"),
    [
        (b"", "auto", "empty results file"),
        (b"\x00\x01\x02" * 100, "auto", "no test results found"),
        (b"<testsuites", "auto", "not well-formed XML"),
        (b"<html/>", "junit", "not <testsuites>"),
        (b"{not json}\n[1]\n", "reportlog", "no pytest report-log records (line 1 is not JSON"),
        (b"\xb3" + bytes(200), "subunit", "not a readable subunit v2 stream"),
        (b"garbage, no markers\n" * 10, "joblog", "no test results found"),
    ],
)
def test_whole_file_garbage_is_a_clear_error(data: bytes, fmt: str, message: str) -> None:
    with pytest.raises(IngestError, match=r"^upload: ") as info:
        parse_bytes(data, "upload", fmt)
    assert message in str(info.value)


def test_a_damaged_subunit_packet_is_a_warning_and_the_others_are_read() -> None:
    good = [Good("a.T.test_ok", False), Good("a.T.test_bad", True)]
    damaged = hostile.subunit_good(Good("a.T.test_lost", True))
    damaged = damaged[:-1] + bytes([damaged[-1] ^ 0xFF])
    results = parse_bytes(
        hostile.subunit_good(good[0]) + damaged + hostile.subunit_good(good[1]), "s.subunit"
    )
    check_results(results, good)
    assert any("damaged packet" in w and "checksum" in w for w in results.warnings)
    assert "subunit.parser" not in {run.test_id for run in results.runs}


def test_avocado_entries_with_odd_types_are_warnings(tmp_path: Path) -> None:
    good = [Good("t.py:T.test_ok", False), Good("t.py:T.test_bad", True)]
    odd = [
        5,
        {"name": "x", "id": None, "status": "FAIL"},  # an id only in its name: its log is still looked up
        {"id": "3-y", "time_elapsed": 10**400, "status": "PASS"},
        {"id": "4-z", "logdir": "a\x00b", "status": "FAIL"},
        {"id": "5-w", "time_elapsed": "NaN", "status": "ERROR", "fail_reason": {"deep": [[[]]]}},
    ]
    (tmp_path / "results.json").write_bytes(
        hostile.avocado_json(good, odd, list(range(len(good) + len(odd))))
    )
    results = read_results(tmp_path)
    check_results(results, good)
    assert {"x", "y", "z", "w"} <= {run.test_id for run in results.runs}
    assert any("tests[2] has no id" in w for w in results.warnings)


def test_avocado_results_nested_too_deeply_are_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text('{"tests": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(IngestError, match="nested too deeply"):
        read_results(tmp_path)


# -- the fuzz ----------------------------------------------------------------------------------


def _order(draw: st.DrawFn, size: int) -> list[int]:
    return draw(st.permutations(list(range(size))))


@FUZZ
@given(GOOD_TESTS, st.lists(hostile.junit_mangled(), max_size=4), st.data())
def test_fuzz_junit(good: list[Good], mangled: list[bytes], data: st.DataObject) -> None:
    good = [dotted(t) for t in good]
    blob = hostile.junit_file(good, mangled, _order(data.draw, len(good) + len(mangled)))
    check_results(parse_bytes(blob, "fuzz.xml"), good)


@FUZZ
@given(GOOD_TESTS, st.lists(hostile.reportlog_mangled(), max_size=4), st.data())
def test_fuzz_reportlog(good: list[Good], mangled: list[bytes], data: st.DataObject) -> None:
    blob = hostile.reportlog_file(good, mangled, _order(data.draw, len(good) + len(mangled)))
    check_results(parse_bytes(blob, "fuzz.jsonl", "reportlog"), good)  # a garbage first line hides the format


@FUZZ
@given(GOOD_TESTS, st.lists(hostile.subunit_mangled(), max_size=4), st.data())
def test_fuzz_subunit(good: list[Good], mangled: list[bytes], data: st.DataObject) -> None:
    good = [dotted(t) for t in good]
    blob = hostile.subunit_file(good, mangled, _order(data.draw, len(good) + len(mangled)))
    check_results(parse_bytes(blob, "fuzz.subunit"), good)


@FUZZ
@given(GOOD_TESTS, st.lists(hostile.joblog_mangled(), max_size=4), st.data())
def test_fuzz_joblog(good: list[Good], mangled: list[bytes], data: st.DataObject) -> None:
    good = [dotted(t) for t in good]
    blob = hostile.joblog_file(good, mangled, _order(data.draw, len(good) + len(mangled)))
    check_results(parse_bytes(blob, "console.log"), good)


@FUZZ
@given(GOOD_TESTS, st.lists(hostile.avocado_mangled(), max_size=4), st.data())
def test_fuzz_avocado(good: list[Good], mangled: list[object], data: st.DataObject) -> None:
    good = [Good(t.test_id.replace("::", ":T."), t.failed) for t in good]
    blob = hostile.avocado_json(good, mangled, _order(data.draw, len(good) + len(mangled)))
    with tempfile.TemporaryDirectory() as folder:  # hypothesis reruns the body: a folder per example
        (Path(folder) / "results.json").write_bytes(blob)
        check_results(read_results(Path(folder)), good)


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["auto", "junit", "reportlog", "subunit", "joblog"]))
def test_fuzz_any_bytes_give_safe_runs_or_a_clear_error(data: bytes, fmt: str) -> None:
    try:
        results = parse_bytes(data, "fuzz", fmt)
    except IngestError as exc:
        assert str(exc).startswith("fuzz: ")
        return
    check_results(results, [])


def test_the_id_limit_holds_for_every_reader() -> None:
    long_id = "pkg.T.test_" + "x" * (2 * MAX_TEST_ID)
    junit = parse_bytes(_junit(_case(f'name="{long_id}"')), "j.xml")
    stestr = parse_bytes(f"{{0}} {long_id} [1s] ... FAILED\nValueError\n".encode(), "c.log")
    for results in (junit, stestr):
        assert max(len(run.test_id) for run in results.runs) <= MAX_TEST_ID


def test_messages_from_inside_an_archive_name_the_archive_not_the_work_folder(tmp_path: Path) -> None:
    folder = tmp_path / "tcfl-ingest-abc" / "results"
    job = folder / "job-1"
    job.mkdir(parents=True)
    (job / "results.json").write_text("{not json")
    with pytest.raises(IngestError) as info:
        read_folder(folder, "auto", "results.tar.gz")
    assert str(info.value).startswith("results.tar.gz/job-1/results.json: not valid JSON")
    (job / "results.json").write_text(json.dumps({"tests": [{"id": "1-t.py:T.test", "status": "FAIL"}, 3]}))
    (results,) = read_folder(folder, "auto", "results.tar.gz")
    said = json.dumps([results.warnings, [run.to_dict() for run in results.runs]])
    assert str(tmp_path) not in said and "results.tar.gz/job-1" in said
