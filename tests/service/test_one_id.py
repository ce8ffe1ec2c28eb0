"""One failure, one signature id; one test, one key: ``tcfl ci --json``, ``POST /v1/ingest``,
``GET /v1/signatures``, the dashboard's failure list and test page, and ``tcfl history``.

The results are a real JUnit XML: pytest run on the small suite of tests/data/ci (its JUnit ids
are dotted, ``test_links.TestLinks.test_jumbo_mtu``; the history's key is the node id).
"""

from __future__ import annotations

import json
import subprocess
from urllib.parse import quote

import httpx
import pytest

from app.ingest.testkey import canonical_key
from tests.ci_tools import FAILED_TESTS, SUITE, PytestRun, py_results
from tests.service.helpers import Server, clean_env, tcfl_command

__all__ = ["py_results"]  # the session fixture, used by name


def _tcfl(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(TCFL_DATABASE_URL=db)
    return subprocess.run(tcfl_command(*args), capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_one_failure_has_one_id_and_one_test_one_key_everywhere(
    api: httpx.Client, server: Server, py_results: PytestRun
) -> None:
    # tcfl ci on the job's JUnit XML, its checkout beside it
    ci = _tcfl(
        "ci", str(py_results.junit), "--root", str(py_results.root), "--ranker", "heuristic",
        "--format", "json", "--no-store", db=server.database_url,
    )  # fmt: skip
    assert ci.returncode == 0, ci.stderr
    report = json.loads(ci.stdout)
    ids = {t["test_id"]: t["signature"] for t in report["tests"]}
    assert len(ids) == len(FAILED_TESTS) == len(set(ids.values()))
    assert {g["signature"] for g in report["groups"]} == set(ids.values())

    # the same file through the API: the same ids, and each failure stored under them
    scripts = [
        {"path": str(p.relative_to(SUITE)), "content": p.read_text()} for p in sorted(SUITE.rglob("*.py"))
    ]
    body = {"results": {"name": "one-id.xml", "content": py_results.junit.read_text()}, "scripts": scripts}
    ingested = api.post("/v1/ingest", json={**body, "ranker": "heuristic"})
    assert ingested.status_code == 200, ingested.text
    answer = ingested.json()
    assert {t["test_id"]: t["signature"] for t in answer["tests"]} == ids
    triage_of = {t["test_id"]: t["triage_id"] for t in answer["tests"]}

    groups = api.get("/v1/signatures", params={"limit": 1000}).json()["items"]
    listed = {g["err_sig"]: set(g["test_keys"]) for g in groups}
    for test_id, signature in ids.items():
        key = canonical_key(test_id)
        assert key == f"test_links.py::TestLinks::{test_id.rsplit('.', 1)[-1]}"
        # GET /v1/signatures: the failure's group, with the test under its one key
        assert key in listed[signature]
        assert key in api.get(f"/v1/signatures/{signature}").json()["tests"]
        # the dashboard's failure list: the stored triage is in the signature's group
        page = api.get("/", params={"sig": signature})
        assert page.status_code == 200 and f'href="/triage/{triage_of[test_id]}"' in page.text
        assert f"/?sig={signature}" in api.get("/", params={"group": "1"}).text
        # the test page, by its key and by the id the JUnit XML gave it: the failures' id on it
        for name in (key, test_id):
            test_page = api.get(f"/tests/{quote(name, safe='')}")
            assert test_page.status_code == 200, name
            assert f'<h1 class="path">{key}' in test_page.text and f"/?sig={signature}" in test_page.text
        # /v1/tests/{key}/history and tcfl history, by the JUnit id
        history = api.get(f"/v1/tests/{quote(test_id, safe='')}/history").json()
        assert history["key"] == key and signature in {r["err_sig"] for r in history["runs"]}
        shown = _tcfl("history", test_id, "--json", db=server.database_url)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["key"] == key

    # the tests list counts each test once, under its key
    keys = [t["key"] for t in api.get("/v1/tests", params={"limit": 1000}).json()["items"]]
    assert len(keys) == len(set(keys)) and not any(k.startswith("test_links.TestLinks") for k in keys)
