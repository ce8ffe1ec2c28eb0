"""Fuzz: results files of every format, mangled, sent to the three routes that record runs.

Each file holds one good failed test (its script uploaded with it, its traceback naming it) and
one good pass, mixed with records mangled by type, depth, encoding and size
(``tests.ingest.hostile``'s strategies). Against a real server: no answer is a 5xx; ``/v1/ingest``
reads every such file and still triages the good failure and counts the pass; ``/v1/runs`` and
``/v1/batches`` either take the good records or refuse the body with a 4xx that says why.
The quick lane sends a few fixed examples of each format to each route; the slow lane many.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ingest import hostile

SCRIPT = "def test_good():\n    x = 1\n    raise ValueError('boom')\n\n\ndef test_ok():\n    pass\n"
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/ci/test_mod.py", line 3, in test_good\n'
    "    raise ValueError('boom')\nValueError: boom\n"
)
FORMATS = ("junit", "reportlog", "subunit", "avocado")
ROUTES = ("ingest", "runs", "batches")
QUICK = settings(
    max_examples=2,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
MANY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;").replace("'", "&apos;")


def _junit(mangled: list[bytes], at: int) -> bytes:
    good = (
        '<testcase classname="test_mod" name="test_good" time="0.5">'
        f'<failure message="ValueError: boom">{_attr(TRACE)}</failure></testcase>'
        '<testcase classname="test_mod" name="test_ok" time="0.1"/>'
    ).encode()
    parts = [*mangled[:at], good, *mangled[at:]]
    return (
        b'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="s">'
        + b"".join(parts)
        + (b"</testsuite></testsuites>")
    )


def _reportlog(mangled: list[bytes], at: int) -> bytes:
    def record(nodeid: str, outcome: str, longrepr: str | None) -> bytes:
        location = ["test_mod.py", 0, nodeid]
        fields = {"nodeid": nodeid, "location": location, "when": "call", "outcome": outcome, "duration": 0.1}
        return json.dumps({"$report_type": "TestReport", **fields, "longrepr": longrepr}).encode()

    good = [record("test_mod.py::test_good", "failed", TRACE), record("test_mod.py::test_ok", "passed", None)]
    return b"\n".join([*mangled[:at], *good, *mangled[at:]]) + b"\n"


def _subunit(mangled: list[bytes], at: int) -> bytes:
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    good = hostile.packets(
        [
            {"test_id": "test_mod.test_good", "test_status": "inprogress", "timestamp": t0},
            {
                "test_id": "test_mod.test_good",
                "test_status": "fail",
                "timestamp": t0 + dt.timedelta(seconds=1),
                "file_name": "traceback",
                "file_bytes": TRACE.encode(),
                "mime_type": "text/plain",
            },
            {"test_id": "test_mod.test_ok", "test_status": "success", "timestamp": t0},
        ]
    )
    return b"".join([*mangled[:at], good, *mangled[at:]])


def _avocado(mangled: list[Any], at: int) -> bytes:
    good = [
        {
            "id": "1-test_mod.py:test_good",
            "name": "test_mod.py:test_good",
            "status": "FAIL",
            "fail_reason": "boom",
            "time_elapsed": 0.5,
            "logdir": "/job/test-results/1-test_mod.py_test_good",
        },
        {
            "id": "2-test_mod.py:test_ok",
            "status": "PASS",
            "time_elapsed": 0.1,
            "logdir": "/job/test-results/2",
        },
    ]
    tests = [*mangled[:at], *good, *mangled[at:]]
    return hostile.tar_gz(
        ("job-1/results.json", json.dumps({"tests": tests}).encode("utf-8", "surrogatepass")),
        ("job-1/test-results/1-test_mod.py_test_good/debug.log", TRACE.encode()),
    )


MANGLED = {
    "junit": hostile.junit_mangled(),
    "reportlog": hostile.reportlog_mangled(),
    "subunit": hostile.subunit_mangled(),
    "avocado": hostile.avocado_mangled(),
}
BUILD = {"junit": _junit, "reportlog": _reportlog, "subunit": _subunit, "avocado": _avocado}
NAMES = {
    "junit": "junit.xml",
    "reportlog": "report.jsonl",
    "subunit": "stream.subunit",
    "avocado": "job.tar.gz",
}


def _file(data: st.DataObject, fmt: str, most: int = 4) -> bytes:
    mangled = data.draw(st.lists(MANGLED[fmt], min_size=1, max_size=most), label="mangled")
    return BUILD[fmt](mangled, data.draw(st.integers(0, len(mangled)), label="at"))


def _ingest(api: httpx.Client, fmt: str, blob: bytes) -> None:
    if fmt == "avocado":  # archives: multipart, as CI uploads them
        checkout = hostile.tar_gz(("test_mod.py", SCRIPT.encode()))
        files = {"results": (NAMES[fmt], blob), "archive": ("repo.tar.gz", checkout)}
        response = api.post("/v1/ingest", files=files, data={"ranker": "heuristic"})
    else:
        results = {"name": NAMES[fmt], "content": base64.b64encode(blob).decode(), "encoding": "base64"}
        body = {
            "results": results,
            "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
            "ranker": "heuristic",
        }
        response = api.post("/v1/ingest", json=body)
    assert response.status_code == 200, response.text[:2000]
    report = response.json()
    good = [t for t in report["tests"] if t["test_id"].endswith("test_good") and "test_mod" in t["test_id"]]
    assert good and all(t["triaged"] for t in good), report["tests"][:3]
    assert report["summary"]["passed"] >= 1


def _runs(api: httpx.Client, data: st.DataObject) -> None:
    good = [
        {
            "test_id": "test_mod.py::test_ok",
            "verdict": "pass",
            "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
        },
        {"test_id": "test_mod.py::test_good", "verdict": "fail", "log": TRACE},
    ]
    odd = data.draw(
        st.lists(
            st.fixed_dictionaries(
                {"test_id": st.just("bad.py::test_x") | hostile.ODD_VALUES, "verdict": st.just("fail")},
                optional={
                    k: hostile.ODD_VALUES
                    for k in ("started_at", "env", "ci", "scripts", "log", "params", "suite")
                },
            ),
            max_size=3,
        ),
        label="odd runs",
    )
    body = json.dumps({"runs": [*good, *odd]}).encode("utf-8", "surrogatepass")  # NaN, Infinity too
    response = api.post("/v1/runs", content=body, headers={"content-type": "application/json"})
    assert response.status_code < 500, response.text[:2000]
    if not odd:
        assert response.status_code == 201, response.text[:2000]
    if response.status_code == 201:
        assert all(r["run_id"] for r in response.json()["runs"])
    else:
        assert response.json()["detail"]


def _batches(api: httpx.Client, data: st.DataObject) -> None:
    good = {"scripts": [{"path": "test_mod.py", "content": SCRIPT}], "log": TRACE, "ranker": "heuristic"}
    fields = ("scripts", "log", "k", "level", "trace", "log_functions", "test_id", "log_format")
    odd = data.draw(st.dictionaries(st.sampled_from(fields), hostile.ODD_VALUES, max_size=2), label="odd")
    lines = [json.dumps(good), json.dumps({**good, **odd})]
    body = "\n".join(lines).encode("utf-8", "surrogatepass")
    response = api.post("/v1/batches", content=body, headers={"content-type": "application/x-ndjson"})
    assert response.status_code < 500, response.text[:2000]
    if not odd:
        assert response.status_code == 202, response.text[:2000]
    if response.status_code >= 400:
        assert response.json()["detail"]


def _send(api: httpx.Client, fmt: str, route: str, data: st.DataObject) -> None:
    if route == "ingest":
        _ingest(api, fmt, _file(data, fmt))
    elif route == "runs":
        _runs(api, data)
    else:
        _batches(api, data)


@pytest.mark.parametrize(
    ("fmt", "route"), [*((fmt, "ingest") for fmt in FORMATS), ("junit", "runs"), ("junit", "batches")]
)
@QUICK
@given(data=st.data())
def test_a_few_mangled_uploads_never_get_a_5xx(
    api: httpx.Client, fmt: str, route: str, data: st.DataObject
) -> None:
    _send(api, fmt, route, data)


@pytest.mark.slow
@MANY
@given(fmt=st.sampled_from(FORMATS), route=st.sampled_from(ROUTES), data=st.data())
def test_mangled_uploads_never_get_a_5xx(
    api: httpx.Client, fmt: str, route: str, data: st.DataObject
) -> None:
    _send(api, fmt, route, data)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_large_file_of_mangled_records_keeps_its_good_tests(
    api: httpx.Client, fmt: str, data: st.DataObject
) -> None:
    """Size: hundreds of mangled records around the good ones, still read and triaged."""
    _ingest(api, fmt, _file(data, fmt, most=300))
