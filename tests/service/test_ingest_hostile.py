"""POST /v1/ingest with hostile uploads: malformed records, archive bombs, odd member names.

Each once gave a 500 or a report without the other tests: now a record is a warning, an
archive a clear 422 that names the archive and never the server's temporary folder.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.ingest.hostile import tar_gz

SCRIPT = "def test_good():\n    raise ValueError('boom')\n\n\ndef test_ok():\n    pass\n"
TRACE = 'Traceback (most recent call last):\n  File "/ci/test_mod.py", line 2, in test_good\nValueError: boom'
GOOD = (
    '<testcase classname="test_mod" name="test_good">'
    f'<failure message="ValueError: boom">{TRACE}</failure></testcase>'
)
OK = '<testcase classname="test_mod" name="test_ok" time="0.1"/>'


def _no_nan(constant: str) -> None:
    raise AssertionError(f"{constant} in the JSON answer")


@pytest.mark.parametrize(
    "record",
    [
        '<testcase classname="test_mod" name="test_t" time="NaN"><failure/></testcase>',
        '<testcase classname="test_mod" name="test_u" time="1,5"><failure/></testcase>',
        '<testcase classname="" name=""><failure/></testcase>',
        f'<testcase classname="test_mod" name="{"x" * 1500}"><failure/></testcase>',
        '<testcase classname="test_mod" name="test_&#0;nul"><failure message="&#x1b;[31m"/></testcase>',
        '<testsuite name="in"><testsuite name="deeper">'
        '<testcase classname="test_mod" name="test_n"/></testsuite></testsuite>',
    ],
    ids=["time-nan", "time-comma", "empty-name", "long-name", "nul", "nested-suites"],
)
def test_a_malformed_junit_record_keeps_the_other_tests(api: httpx.Client, record: str) -> None:
    junit = f'<testsuites><testsuite name="pytest">{GOOD}{record}{OK}</testsuite></testsuites>'
    body = {
        "results": {"name": "junit.xml", "content": junit},
        "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
        "ranker": "heuristic",
    }
    response = api.post("/v1/ingest", json=body)
    assert response.status_code == 200, response.text
    report = json.loads(response.text, parse_constant=_no_nan)
    tests = {t["test_id"]: t for t in report["tests"]}
    assert tests["test_mod.test_good"]["triaged"]
    assert report["summary"]["passed"] >= 1
    stored = api.get(f"/v1/ingests/{report['id']}")
    assert stored.status_code == 200


def test_a_malformed_report_log_line_is_a_warning(api: httpx.Client) -> None:
    def record(**fields: object) -> str:
        base = {"$report_type": "TestReport", "nodeid": "test_mod.py::test_good", "when": "call"}
        return json.dumps({**base, "location": ["test_mod.py", 0, "test_good"], **fields})

    lines = [
        record(outcome="failed", longrepr="test_mod.py:2: ValueError\nE   ValueError: boom", duration=0.1),
        "{not json",
        record(nodeid=["a", "list"], outcome="failed"),
        record(nodeid="test_mod.py::test_x", outcome=3, duration="NaN", longrepr={"chain": 5}),
        record(nodeid="test_mod.py::test_ok", outcome="passed", duration=10**30),
    ]
    body = {
        "results": {"name": "report.jsonl", "content": "\n".join(lines) + "\n"},
        "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
        "ranker": "heuristic",
    }
    response = api.post("/v1/ingest", json=body)
    assert response.status_code == 200, response.text
    report = json.loads(response.text, parse_constant=_no_nan)
    assert [t["test_id"] for t in report["tests"]] == ["test_mod.py::test_good"]
    assert any("line 2 is not JSON" in w for w in report["warnings"])
    assert any("line 3: nodeid" in w for w in report["warnings"])


def test_a_checkout_bomb_is_422_at_the_setting(api: httpx.Client) -> None:
    bomb = tar_gz(("zeros.py", bytes(6_000_000)))  # over the servers' TCFL_MAX_UNPACKED_BYTES (5 MB)
    junit = f'<testsuites><testsuite name="pytest">{GOOD}</testsuite></testsuites>'
    files = {"results": ("junit.xml", junit.encode()), "archive": ("repo.tar.gz", bomb)}
    response = api.post("/v1/ingest", files=files)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert "max_unpacked_bytes" in detail and detail.startswith("repo.tar.gz: ")


@pytest.mark.parametrize(
    ("members", "needle"),
    [
        ((("a" * 300 + ".py", b"x"),), "has a name too long"),
        ((("a", b"x"), ("a/b.py", b"x")), "cannot be written"),
    ],
    ids=["long-name", "file-then-folder"],
)
def test_members_the_server_cannot_write_are_422_naming_them(
    api: httpx.Client, members: tuple[tuple[str, bytes], ...], needle: str
) -> None:
    junit = f'<testsuites><testsuite name="pytest">{GOOD}</testsuite></testsuites>'
    files = {"results": ("junit.xml", junit.encode()), "archive": ("repo.tar.gz", tar_gz(*members))}
    response = api.post("/v1/ingest", files=files)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert needle in detail and "/tmp" not in detail and "tcfl-ingest" not in detail


def test_a_bad_avocado_job_in_a_results_archive_names_the_archive(api: httpx.Client) -> None:
    archive = tar_gz(("job-1/results.json", b"{not json"))
    response = api.post("/v1/ingest", files={"results": ("results.tar.gz", archive)})
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail.startswith("results.tar.gz/job-1/results.json: not valid JSON"), detail
    assert "tcfl-ingest" not in detail
