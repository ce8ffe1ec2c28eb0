"""Uploads that record runs take turns, run in the analysis pool, and answer 202 when asked or large.

``Admission`` is exercised directly (its limits and their messages); the routes through the
shared real server.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from app.service.admission import WAITING_PER_CLIENT, Admission, Refused

SCRIPT = "def test_good():\n    x = 1\n    raise ValueError('boom')\n\n\ndef test_ok():\n    pass\n"
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/ci/test_mod.py", line 3, in test_good\n'
    "    raise ValueError('boom')\nValueError: boom\n"
)
JUNIT = (
    '<testsuites><testsuite name="s"><testcase classname="test_mod" name="test_good">'
    '<failure message="ValueError: boom">{trace}</failure></testcase>'
    '<testcase classname="test_mod" name="test_ok"/></testsuite></testsuites>'
)
DEEP = (
    "def test_ok():\n" + "".join("    " * (i + 1) + f"if x{i}:\n" for i in range(120)) + " " * 484 + "pass\n"
)


def _body(**extra: object) -> dict[str, object]:
    junit = JUNIT.format(trace=TRACE.replace("'", "&apos;"))
    return {
        "results": {"name": "junit.xml", "content": junit},
        "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
        "ranker": "heuristic",
        **extra,
    }


def test_one_client_waits_its_turn_and_is_refused_past_its_queue() -> None:
    async def scenario() -> list[str]:
        turns = Admission(in_flight=1, per_client=1, queued=100)
        said: list[str] = []
        for _ in range(1 + WAITING_PER_CLIENT):
            turns.admit("a")
        with pytest.raises(Refused) as refused:
            turns.admit("a")
        assert refused.value.status == 429
        said.append(str(refused.value))
        turns.admit("b")  # another client is not refused

        order: list[str] = []

        async def upload(client: str, name: str) -> None:
            async with turns.turn(client):
                order.append(name)
                await asyncio.sleep(0.01)
            turns.leave(client)

        await asyncio.gather(upload("a", "a1"), upload("a", "a2"), upload("b", "b1"))
        said.append(",".join(order))
        return said

    message, order = asyncio.run(scenario())
    assert "max_ingests_per_client=1" in message
    assert order.split(",")[0] == "a1" and "b1" in order  # first come first served, b not starved


def test_a_full_queue_is_503_naming_its_setting() -> None:
    async def scenario() -> Refused:
        turns = Admission(in_flight=1, per_client=5, queued=1)
        turns.admit("a")
        first = asyncio.ensure_future(_hold(turns, "a"))
        await asyncio.sleep(0)
        turns.admit("b")
        waiting = asyncio.ensure_future(_hold(turns, "b"))
        await asyncio.sleep(0)
        try:
            turns.admit("c")
        except Refused as exc:
            return exc
        finally:
            first.cancel()
            waiting.cancel()
            await asyncio.gather(first, waiting, return_exceptions=True)
        raise AssertionError("not refused")

    refused = asyncio.run(scenario())
    assert refused.status == 503 and "max_ingests_queued=1" in str(refused)


async def _hold(turns: Admission, client: str) -> None:
    async with turns.turn(client):
        await asyncio.sleep(10)


def test_an_upload_asked_to_run_later_answers_202_then_its_ingest(api: httpx.Client) -> None:
    response = api.post(
        "/v1/ingest", json=_body(pipeline="later", job_id="1"), headers={"Prefer": "respond-async"}
    )
    assert response.status_code == 202, response.text
    where = response.headers["location"]
    assert where == response.json()["status_url"] and where.startswith("/v1/ingests/pending/")
    deadline = time.monotonic() + 60
    state = api.get(where).json()
    while state["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.1)
        state = api.get(where).json()
    assert state["status"] == "done", state
    assert state["summary"]["passed"] == 1 and state["summary"]["failed"] == 1
    stored = api.get(state["ingest"])
    assert stored.status_code == 200
    assert api.get("/v1/ingests/pending/nope").status_code == 404


def test_a_pass_whose_script_is_over_a_cost_limit_is_recorded_without_a_trace(api: httpx.Client) -> None:
    body = _body(pipeline="deep", job_id="1")
    body["scripts"] = [{"path": "test_mod.py", "content": DEEP}]
    response = api.post("/v1/ingest", json=body)
    assert response.status_code == 200, response.text
    warnings = response.json()["warnings"]
    assert any("no trace recorded" in w and "max_nesting_depth" in w for w in warnings), warnings

    run = {
        "test_id": "deep_mod.py::test_ok",
        "verdict": "pass",
        "scripts": [{"path": "deep_mod.py", "content": DEEP}],
    }
    recorded = api.post("/v1/runs", json=[run])
    assert recorded.status_code == 201, recorded.text
    assert any("max_nesting_depth" in w for w in recorded.json()["warnings"])


def test_a_failure_over_a_cost_limit_says_what_triage_answers(api: httpx.Client) -> None:
    body = _body(pipeline="costly", job_id="1")
    costly = "def test_good():\n    x = " + "f(" * 500 + "1" + ")" * 500 + "\n    raise ValueError('boom')\n"
    body["scripts"] = [{"path": "test_mod.py", "content": costly}]
    triage = api.post("/v1/triage", json={"scripts": body["scripts"], "log": TRACE, "ranker": "heuristic"})
    assert triage.status_code == 422
    response = api.post("/v1/ingest", json=body)
    assert response.status_code == 200, response.text
    (failed,) = [t for t in response.json()["tests"] if t["test_id"].endswith("test_good")]
    assert failed["refused_status"] == 422
    assert failed["problem"] == f"triage refused: {triage.json()['detail']}"


@pytest.mark.parametrize("path", ["/v1/tests", "/v1/signatures", "/v1/launches"])
def test_a_huge_offset_is_422(api: httpx.Client, path: str) -> None:
    assert api.get(path, params={"offset": "9" * 30}).status_code == 422
    assert api.get(path, params={"offset": str(2**63)}).status_code == 422
