"""History over HTTP against a real server on loopback (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
import uuid

import httpx

from tests.ci_tools import SUITE, PytestRun, py_results
from tests.service.helpers import jsonl

__all__ = ["py_results"]  # the session fixture, used by name

SCRIPT = "def test_answer():\n    value = 41\n    assert value == 42\n"
LOG = """Traceback (most recent call last):
  File "/ci/t.py", line 3, in test_answer
    assert value == 42
AssertionError: assert 41 == 42
"""


def run(test_id: str, n: int, verdict: str, script: str = SCRIPT) -> dict[str, object]:
    return {
        "test_id": test_id,
        "verdict": verdict,
        "started_at": f"2026-02-01T00:{n:02d}:00Z",
        "ci": {"job_url": f"https://ci/{test_id}/{n}"},
        "scripts": [{"path": "t.py", "content": script}],
        "log": LOG if verdict == "fail" else "ok",
    }


def test_runs_in_history_out(api: httpx.Client) -> None:
    test_id = f"t.py::test_answer_{uuid.uuid4().hex[:8]}"
    created = api.post(
        "/v1/runs",
        json={"runs": [run(test_id, 1, "pass", SCRIPT.replace("41", "42")), run(test_id, 2, "fail")]},
    )
    assert created.status_code == 201, created.text
    first, second = created.json()["runs"]
    assert first["err_sig"] is None and second["err_sig"] and not second["duplicate"]
    resent = api.post(
        "/v1/runs", content=jsonl([run(test_id, 2, "fail")]), headers={"content-type": "application/x-ndjson"}
    )
    assert resent.json()["runs"][0] == {**second, "duplicate": True}
    page = api.get(f"/v1/tests/{test_id}/history").json()
    assert [r["verdict"] for r in page["runs"]] == ["fail", "pass"]
    assert page["classification"] == "new"
    assert page["first_bad_version"]["script_changed"] is True
    assert page["first_bad_version"]["first_bad"] == second["version_id"] != first["version_id"]
    keys = [t["key"] for t in api.get("/v1/tests", params={"limit": 1000}).json()["items"]]
    assert test_id in keys
    sigs = api.get("/v1/signatures").json()["items"]
    assert any(test_id in s["test_keys"] for s in sigs)


def test_bad_run_records_get_a_message(api: httpx.Client) -> None:
    bad = api.post("/v1/runs", json=[{"test_id": "x", "verdict": "pass"}, {"test_id": "y", "verdict": "meh"}])
    assert bad.status_code == 422 and "run 2: verdict must be one of" in bad.json()["detail"]
    assert (
        api.post("/v1/runs", content=b"{nope", headers={"content-type": "application/json"}).status_code
        == 422
    )
    assert api.post("/v1/runs", json=[]).status_code == 422
    assert api.get("/v1/tests/never::seen/history").status_code == 404


def _total_runs(api: httpx.Client) -> int:
    return sum(t["runs"] for t in api.get("/v1/tests", params={"limit": 1000}).json()["items"])


def test_ingested_results_record_every_test_run(api: httpx.Client, py_results: PytestRun) -> None:
    body = {
        "results": {"name": "junit.xml", "content": py_results.junit.read_text()},
        "scripts": [
            {"path": str(p.relative_to(SUITE)), "content": p.read_text()} for p in sorted(SUITE.rglob("*.py"))
        ],
        "ranker": "heuristic",
    }
    before = _total_runs(api)
    first = api.post("/v1/ingest", json=body)
    assert first.status_code == 200, first.text
    summary = first.json()["summary"]
    assert summary["passed"] >= 1 and summary["failed"] >= 1
    assert _total_runs(api) - before == summary["tests"]  # passes and skips too, not only failures
    assert api.post("/v1/ingest", json=body).status_code == 200
    assert _total_runs(api) - before == summary["tests"]  # the same file again records nothing new
    signatures = api.get("/v1/signatures").json()["items"]
    assert sum(s["failures"] for s in signatures) >= summary["failed"]


def test_signature_groups_page_newest_failure_first(api: httpx.Client) -> None:
    word = "".join(random.choice("ghijklmnopqrstuvwxyz") for _ in range(12))  # no digits or hex: unmasked
    runs = [
        {
            **run(f"t.py::test_{word}_{n}", n, "fail"),
            "started_at": f"2031-01-0{n}T00:00:00Z",
            "log": LOG.replace("assert 41 == 42", f"{word} {'x' * n}"),
        }
        for n in (1, 2, 3)
    ]
    assert api.post("/v1/runs", json=runs).status_code == 201
    first = api.get("/v1/signatures", params={"limit": 2}).json()
    second = api.get("/v1/signatures", params={"limit": 1, "offset": 2}).json()
    mine = first["items"] + second["items"]
    assert [g["test_keys"] for g in mine] == [[f"t.py::test_{word}_{n}"] for n in (3, 2, 1)]
    assert first["next_offset"] == 2 and second["next_offset"] == 3
    assert all(g["first_seen"] == g["last_seen"] and g["failures"] == 1 for g in mine)
    assert api.get("/v1/signatures", params={"order": "failures"}).status_code == 200
    assert api.get("/v1/signatures", params={"order": "size"}).status_code == 422
    group = api.get(f"/v1/signatures/{mine[0]['err_sig']}").json()
    assert group["tests"] == [f"t.py::test_{word}_3"] and len(group["runs"]) == 1
    dashboard = api.get("/signatures", params={"page": 2}).text
    assert 'href="/signatures?page=1"' in dashboard
