"""``POST /v1/ingest`` triages through the same pool and cost limits as ``POST /v1/triage`` (real server)."""

from __future__ import annotations

import httpx

from tests.service.helpers import example_body

DEPTH = 120  # blocks nested deeper than the default max_nesting_depth (100)
DEEP = (
    "def test_deep():\n"
    + "".join("    " * (i + 1) + f"if x{i}:\n" for i in range(DEPTH))
    + "    " * (DEPTH + 1)
    + "assert False\n"
)
SHALLOW = "def test_ok():\n    value = compute()\n    assert value == 3, 'wrong value'\n"
LOG = (
    "Traceback (most recent call last):\n"
    '  File "tests/test_{name}.py", line 2, in test_{name}\n'
    "AssertionError\n"
)
JUNIT = f"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="2" failures="2">
<testcase classname="tests.test_deep" name="test_deep" file="tests/test_deep.py">
<failure message="AssertionError">{LOG.format(name="deep")}</failure></testcase>
<testcase classname="tests.test_ok" name="test_ok" file="tests/test_ok.py">
<failure message="AssertionError: wrong value">{LOG.format(name="ok")}</failure></testcase>
</testsuite></testsuites>
"""


def test_a_failure_over_the_cost_limits_gets_the_limits_error_and_the_others_are_triaged(
    api: httpx.Client,
) -> None:
    body = {
        "results": {"name": "junit.xml", "content": JUNIT},
        "scripts": [
            {"path": "tests/test_deep.py", "content": DEEP},
            {"path": "tests/test_ok.py", "content": SHALLOW},
        ],
        "ranker": "heuristic",
    }
    response = api.post("/v1/ingest", json=body)
    assert response.status_code == 200, response.text
    tests = {t["test_id"]: t for t in response.json()["tests"]}
    deep = next(t for name, t in tests.items() if name.endswith("test_deep"))
    ok = next(t for name, t in tests.items() if name.endswith("test_ok"))
    assert not deep["triaged"] and "max_nesting_depth" in deep["problem"]
    assert ok["triaged"] and ok["result"]["ranking"]

    # the same script is refused by POST /v1/triage with the same limit named
    single = example_body(
        scripts=[{"path": "tests/test_deep.py", "content": DEEP}], log=LOG.format(name="deep")
    )
    refused = api.post("/v1/triage", json=single)
    assert refused.status_code == 422 and "max_nesting_depth" in refused.text
    assert refused.json()["detail"].split(";")[0] in deep["problem"]


def test_ingest_refuses_options_that_triage_refuses(api: httpx.Client) -> None:
    base = {"results": {"name": "junit.xml", "content": JUNIT}, "scripts": [], "ranker": "heuristic"}
    for bad in (
        {"k": 100_000},
        {"log_format": "(?P<msg>.*)"},
        {"log_functions": ["x"] * 500},
        {"level": "file"},
    ):
        response = api.post("/v1/ingest", json={**base, **bad})
        assert response.status_code == 422, (bad, response.text)
        assert next(iter(bad)) in response.json()["detail"]


def test_scripts_that_clash_as_file_and_folder_are_a_422(api: httpx.Client) -> None:
    body = {
        "results": {"name": "junit.xml", "content": JUNIT},
        "scripts": [
            {"path": "tests", "content": "x = 1\n"},
            {"path": "tests/test_ok.py", "content": SHALLOW},
        ],
    }
    response = api.post("/v1/ingest", json=body)
    assert response.status_code == 422 and "cannot be written" in response.json()["detail"]
