"""Results files of every format with well-formed tests and mangled records mixed in, for the fuzz tests.

Each builder takes the well-formed tests (id, verdict) and the mangled records (already turned
into the format's text), so a test can check that every well-formed test is still reported
whatever the mangled ones hold. Mangled records keep the file's framing (XML stays nested
elements, report-log stays one record a line, subunit stays whole packets): a file whose
framing is broken is whole-file garbage, which must be a clear error instead.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import tarfile
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from app.ingest.base import Results
from app.ingest.clean import MAX_TEST_ID

FORMATS = ("junit", "reportlog", "subunit", "joblog", "avocado")


@dataclass(frozen=True)
class Good:
    test_id: str
    failed: bool


# -- values mangled by type, depth, encoding and size ------------------------------------------

ODD_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",
        "\x1b[31mred\x1b[0m",
        "\u2028",
        "NaN",
        "inf",
        "-1",
        "1,5",
        "1e999",
        "9" * 400,
        "x" * 3000,
        "../../etc/passwd",
        "/proc/self/environ",
        "t.py::test_\x00odd",
        "é" * 10,
    ]
) | st.text(max_size=40)
ODD_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.just(10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    ODD_STRINGS,
)
ODD_VALUES = st.recursive(
    ODD_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def deep(depth: int, leaf: Any = 1) -> Any:
    """A JSON value nested ``depth`` lists deep."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


# -- JUnit XML ---------------------------------------------------------------------------------


def _attr(value: bytes) -> bytes:
    return value.replace(b"&", b"&amp;").replace(b"<", b"&lt;").replace(b'"', b"&quot;")


def junit_good(test: Good) -> bytes:
    classname, _, name = test.test_id.rpartition(".")
    inner = b'<failure message="boom">Traceback\nValueError: boom</failure>' if test.failed else b""
    return f'<testcase classname="{classname}" name="{name}" time="0.5">'.encode() + inner + b"</testcase>"


@st.composite
def junit_mangled(draw: st.DrawFn) -> bytes:
    """One test case (or suite) whose attributes and text hold odd bytes, values or nesting."""
    raw = st.binary(max_size=30) | ODD_STRINGS.map(lambda s: s.encode("utf-8", "surrogatepass"))
    name = draw(raw)
    time = draw(raw | st.sampled_from([b"NaN", b"-1", b"1,5", b"inf", b"1e999", b"9" * 400]))
    body = draw(st.sampled_from([b"", b"<failure/>", b'<error message="', b"<skipped/><error/>", b"<x/>"]))
    if body == b'<error message="':
        body += _attr(draw(raw)) + b'">' + _attr(draw(raw)).replace(b">", b"&gt;") + b"</error>"
    case = b'<testcase name="' + _attr(name) + b'" time="' + _attr(time) + b'">' + body + b"</testcase>"
    if draw(st.booleans()):
        case = b'<testcase name="ok_&#0;_&#x1b;">' + case + b"</testcase>"  # a case in a case
    depth = draw(st.integers(0, 3))
    return b'<testsuite name="nested">' * depth + case + b"</testsuite>" * depth


def junit_file(good: list[Good], mangled: list[bytes], order: list[int]) -> bytes:
    parts = [junit_good(t) for t in good] + mangled
    body = b"".join(parts[i] for i in order)
    return (
        b'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="s">'
        + body
        + b"</testsuite></testsuites>"
    )


# -- pytest report-log -------------------------------------------------------------------------


def reportlog_good(test: Good) -> bytes:
    path = test.test_id.split("::", 1)[0]
    records = [
        {
            "$report_type": "TestReport",
            "nodeid": test.test_id,
            "location": [path, 1, test.test_id],
            "when": when,
            "outcome": "failed" if test.failed and when == "call" else "passed",
            "duration": 0.1,
            "longrepr": f"{path}:2: ValueError\nE   ValueError: boom"
            if test.failed and when == "call"
            else None,
            "sections": [],
        }
        for when in ("setup", "call", "teardown")
    ]
    return b"\n".join(json.dumps(r).encode() for r in records)


@st.composite
def reportlog_mangled(draw: st.DrawFn) -> bytes:
    """One line: a record with odd types in any field, garbage, or JSON nested thousands deep."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        garbage = draw(st.binary(max_size=60)).replace(b"\n", b" ").replace(b"\r", b" ")
        return garbage or b"{"
    if kind == 1:
        return b'{"$report_type": "TestReport", "nodeid": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    record: dict[str, Any] = {
        "$report_type": "TestReport",
        "nodeid": "bad.py::test_" + str(draw(st.integers(0, 10**6))),
        "when": "call",
        "outcome": "failed",
        "duration": 0.1,
        "longrepr": "E   ValueError",
    }
    for key in draw(st.lists(st.sampled_from([*record, "location", "sections"]), max_size=4)):
        record[key] = draw(ODD_VALUES)
    if kind == 3:
        record["longrepr"] = {
            "reprcrash": draw(ODD_VALUES),
            "reprtraceback": {"reprentries": draw(st.lists(ODD_VALUES, max_size=3))},
            "chain": draw(ODD_VALUES),
        }
    if kind == 4:
        record["longrepr"] = deep(draw(st.integers(100, 900)))
    text = json.dumps(record)  # NaN, Infinity: what Python's json writes, and reads back
    return text.encode("utf-8", "surrogatepass")  # "\ud800" escapes stay escapes; raw ones are bad bytes


def reportlog_file(good: list[Good], mangled: list[bytes], order: list[int]) -> bytes:
    parts = [reportlog_good(t) for t in good] + mangled
    return b"\n".join(parts[i] for i in order) + b"\n"


# -- subunit v2 --------------------------------------------------------------------------------

_T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def packets(events: list[dict[str, Any]]) -> bytes:
    from subunit import StreamResultToBytes

    buffer = io.BytesIO()
    out = StreamResultToBytes(buffer)
    for event in events:
        out.status(**event)
    return buffer.getvalue()


def tar_gz(*members: tuple[str, bytes]) -> bytes:
    """A .tar.gz of regular files (name, content)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def subunit_good(test: Good) -> bytes:
    end = _T0 + dt.timedelta(seconds=1)
    events = [
        {"test_id": test.test_id, "test_status": "inprogress", "timestamp": _T0},
        {
            "test_id": test.test_id,
            "test_status": "fail" if test.failed else "success",
            "timestamp": end,
            **(
                {
                    "file_name": "traceback",
                    "file_bytes": b"Traceback\nValueError: boom\n",
                    "mime_type": "text/plain",
                }
                if test.failed
                else {}
            ),
        },
    ]
    return packets(events)


@st.composite
def subunit_mangled(draw: st.DrawFn) -> bytes:
    """Whole packets with odd ids, statuses, clocks and attachments, or one with a bad checksum."""
    test_id = draw(ODD_STRINGS | st.text(min_size=1, max_size=20))
    status = draw(st.sampled_from(["fail", "success", "skip", "xfail", "uxsuccess", "exists", "inprogress"]))
    when = draw(
        st.sampled_from([None, _T0, _T0 - dt.timedelta(days=400), dt.datetime(1970, 1, 1, tzinfo=dt.UTC)])
    )
    event: dict[str, Any] = {"test_id": test_id or "x", "test_status": status, "timestamp": when}
    if draw(st.booleans()):
        event.update(
            file_name=draw(st.sampled_from(["traceback", "stdout", "odd"])),
            file_bytes=draw(st.binary(max_size=40)),
            mime_type=draw(st.sampled_from(["text/plain;charset=utf8", "application/octet-stream"])),
        )
    try:
        data = packets([event])
    except (UnicodeEncodeError, ValueError):  # the writer refuses it: an id the format cannot hold
        data = packets([{"test_id": "x", "test_status": status}])
    if draw(st.booleans()):
        data = data[:-1] + bytes([data[-1] ^ 0xFF])  # the CRC: a damaged packet, framing intact
    return data


def subunit_file(good: list[Good], mangled: list[bytes], order: list[int]) -> bytes:
    parts = [subunit_good(t) for t in good] + mangled
    return b"".join(parts[i] for i in order)


# -- job log (stestr console) ------------------------------------------------------------------


def joblog_good(test: Good) -> bytes:
    status = "FAILED" if test.failed else "ok"
    line = f"{{0}} {test.test_id} [0.5s] ... {status}\n".encode()
    return line + (b"Traceback (most recent call last):\nValueError: boom\n" if test.failed else b"")


@st.composite
def joblog_mangled(draw: st.DrawFn) -> bytes:
    """A result line with an odd time, a huge or NUL-holding id, or bytes that are not UTF-8."""
    time = draw(st.sampled_from([b"1.2.3", b"9" * 400, b".", b"0" * 50]))
    test_id = draw(
        st.sampled_from([b"bad.T.test_" + b"x" * 3000, b"bad.T.test_\x00", b"bad.T.test_\xff\xfe"])
    )
    status = draw(st.sampled_from([b"ok", b"FAILED", b"ERROR", b"SKIPPED"]))
    return (
        b"{0} "
        + test_id
        + b" ["
        + time
        + b"s] ... "
        + status
        + b"\n"
        + draw(st.binary(max_size=20)).replace(b"{", b"(").replace(b"=", b"-")
        + b"\n"
    )


def joblog_file(good: list[Good], mangled: list[bytes], order: list[int]) -> bytes:
    parts = [joblog_good(t) for t in good] + mangled
    return b"".join(parts[i] for i in order)


# -- avocado results.json ----------------------------------------------------------------------


def avocado_good(test: Good) -> dict[str, Any]:
    return {
        "id": f"1-{test.test_id}",
        "name": test.test_id,
        "status": "FAIL" if test.failed else "PASS",
        "fail_reason": "boom" if test.failed else None,
        "time_elapsed": 0.5,
        "logdir": "/job/test-results/x",
    }


@st.composite
def avocado_mangled(draw: st.DrawFn) -> Any:
    """A test entry with odd types in any field, or no entry at all (a number, a list)."""
    if draw(st.integers(0, 5)) == 0:
        return draw(ODD_VALUES)
    entry: dict[str, Any] = {"id": "2-bad.py:T.test", "status": "FAIL", "time_elapsed": 1}
    for key in draw(
        st.lists(st.sampled_from(["id", "name", "status", "fail_reason", "time_elapsed", "logdir"]))
    ):
        entry[key] = draw(ODD_VALUES)
    return entry


def avocado_json(good: list[Good], mangled: list[Any], order: list[int]) -> bytes:
    parts = [avocado_good(t) for t in good] + mangled
    text = json.dumps({"tests": [parts[i] for i in order]})
    return text.encode("utf-8", "surrogatepass")


# -- the property ------------------------------------------------------------------------------


def check_results(results: Results, good: list[Good]) -> None:
    """Every well-formed test reported with its verdict; every value safe to show and to store."""
    verdicts = {run.test_id: run.verdict for run in results.runs}
    for test in good:
        assert test.test_id in verdicts, (test.test_id, sorted(verdicts)[:20])
        assert verdicts[test.test_id] == ("fail" if test.failed else "pass"), test.test_id
    for run in results.runs:
        assert run.test_id.strip() and len(run.test_id) <= MAX_TEST_ID
        assert not any(ch < " " or ch == "\x7f" for ch in run.test_id + run.suite), run.test_id[:100]
        assert run.duration_s is None or (math.isfinite(run.duration_s) and run.duration_s >= 0)
        data = run.to_dict()
        blob = json.dumps(data, allow_nan=False)
        assert "\\u0000" not in blob
        blob.encode("utf-8")
    for warning in results.warnings:
        assert "\x00" not in warning
        warning.encode("utf-8")


GOOD_TESTS = st.lists(
    st.builds(
        Good,
        st.integers(0, 10**6).map(lambda n: f"pkg/test_mod.py::test_{n}"),
        st.booleans(),
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda t: t.test_id,
)


def dotted(test: Good) -> Good:
    """The same test as a dotted id (stestr, JUnit classname + name)."""
    name = test.test_id.rsplit("::", 1)[-1]
    return Good(f"pkg.test_mod.TestCase.{name}", test.failed)
