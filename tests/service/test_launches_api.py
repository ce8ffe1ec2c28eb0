"""Launches and labels over HTTP on a real server (SQLite and PostgreSQL), fed with CI jobs of a
real pytest suite (``tcfl_lab.launches``) through ``POST /v1/ingest``, none with a job URL."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tcfl_lab.launches import EXPECTED, KEYS, JobFiles, ingest, verdicts
from tests.ci_tools import launch_jobs
from tests.service.conftest import _database
from tests.service.helpers import Server

__all__ = ["launch_jobs"]
pytestmark = pytest.mark.slow  # nine real pytest jobs, then a server per backend fed with them
FED = 4  # jobs ingested by the module's fixture (the tests may add more, in any order)


def _runs(client: httpx.Client, key: str) -> Counter[str]:
    """A test's recorded runs by the commit of their job."""
    return Counter(r["ci"]["commit"] for r in client.get(f"/v1/tests/{key}/history").json()["runs"])


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, launch_jobs: list[JobFiles]
) -> Iterator[tuple[httpx.Client, list[dict[str, Any]]]]:
    """A server of its own per backend, the first jobs ingested (their answers)."""
    workdir = tmp_path_factory.mktemp(f"launches-{request.param}")
    with _database(request, workdir) as url:
        server = Server(
            url, workdir, env={"TCFL_DEFECT_TYPES": "product bug,automation bug,system issue"}
        ).start()
        try:
            with server.client() as client:
                yield client, [ingest(client, job, ranker="heuristic") for job in launch_jobs[:FED]]
        finally:
            server.stop()
        assert "unhandled error" not in server.log_text()


def test_every_job_is_a_launch_with_every_test(fed: tuple[httpx.Client, list[dict[str, Any]]]) -> None:
    client, answers = fed
    ids = [a["launch_id"] for a in answers]
    assert len(set(ids)) == FED and all(a["launch"] == f"/launches/{a['launch_id']}" for a in answers)
    listed = client.get("/v1/launches", params={"limit": 500}).json()
    assert [item["id"] for item in listed["items"] if item["id"] in ids] == ids[::-1]  # newest first
    page = client.get("/v1/launches", params={"limit": 1}).json()
    assert len(page["items"]) == 1 and page["next_offset"] == 1
    launches = [client.get(f"/v1/launches/{i}").json() for i in ids]
    assert all(len(launch["tests"]) == 4 for launch in launches)  # passes too
    assert all(t["duration_s"] is not None and t["run_id"] for launch in launches for t in launch["tests"])
    assert verdicts(launches) == {n: v for n, v in EXPECTED.items() if n <= FED}
    fourth = launches[-1]
    assert fourth["commit"] and fourth["source"] == "report.jsonl" and fourth["format"] == "reportlog"
    assert fourth["summary"]["passed"] == 3 and fourth["summary"]["failed"] == 1
    (group,) = fourth["groups"]
    (failure,) = group["tests"]
    assert failure["key"] == KEYS["many"] and failure["triage_id"] and failure["err_sig"] == group["err_sig"]
    assert client.get(f"/v1/triage/{failure['triage_id']}").json()["history"]["classification"] == "new"
    for key in KEYS.values():  # one run per job and test, though no job named itself by a URL
        assert all(_runs(client, key)[launch["commit"]] == 1 for launch in launches)


def test_sending_a_job_again_records_nothing_new(
    fed: tuple[httpx.Client, list[dict[str, Any]]], launch_jobs: list[JobFiles]
) -> None:
    client, answers = fed
    before = {key: _runs(client, key) for key in KEYS.values()}
    again = ingest(client, launch_jobs[FED - 1], ranker="heuristic")
    assert again["launch_id"] == answers[-1]["launch_id"]
    assert {key: _runs(client, key) for key in KEYS.values()} == before
    # the same results under a job id of a pipeline are another job: that one names it
    named = ingest(client, launch_jobs[0], pipeline="shop", job_id="77", commit="shop-77", ranker="heuristic")
    assert named["launch_id"] not in {a["launch_id"] for a in answers}
    renamed = ingest(
        client, launch_jobs[1], pipeline="shop", job_id="77", commit="shop-77", ranker="heuristic"
    )
    assert renamed["launch_id"] == named["launch_id"]  # pipeline + job id: one job whatever it sends
    trend = client.get("/v1/launches/trend", params={"pipeline": "shop"}).json()
    assert [t["id"] for t in trend["launches"]] == [named["launch_id"]]
    ids = [a["launch_id"] for a in answers]
    plain = [
        t for t in client.get("/v1/launches/trend", params={"last": 50}).json()["launches"] if t["id"] in ids
    ]
    assert [t["id"] for t in plain] == ids  # oldest first
    assert [t["pass_rate"] for t in plain] == [1.0, 0.75, 0.75, 0.75]
    assert [t["flaky"] for t in plain] == [0, 0, 1, 0] and [t["new"] for t in plain] == [0, 1, 0, 1]


def test_job_fields_are_checked(
    fed: tuple[httpx.Client, list[dict[str, Any]]], launch_jobs: list[JobFiles]
) -> None:
    client, _ = fed
    job = launch_jobs[0]
    body = {"results": {"name": "r.jsonl", "content": job.reportlog.read_text()}, "started_at": "soon"}
    answer = client.post("/v1/ingest", json=body)
    assert answer.status_code == 422 and "ISO 8601" in answer.json()["detail"]
    answer = client.post("/v1/ingest", json={**body, "started_at": None, "commit": 7})
    assert answer.status_code == 422 and "commit must be a string" in answer.json()["detail"]
    assert client.get("/v1/launches/999999").status_code == 404


def _failure(client: httpx.Client, launch_id: int, key: str) -> dict[str, Any]:
    launch = client.get(f"/v1/launches/{launch_id}").json()
    return next(t for t in launch["tests"] if t["key"] == key)


def test_a_group_label_is_carried_to_the_next_failure_and_can_be_undone(
    fed: tuple[httpx.Client, list[dict[str, Any]]], launch_jobs: list[JobFiles]
) -> None:
    client, answers = fed
    failure = _failure(client, answers[-1]["launch_id"], KEYS["many"])
    bad = [
        ({"defect_type": "cosmic ray", "err_sig": failure["err_sig"]}, 422, "defect_type must be one of"),
        ({"defect_type": "product bug"}, 422, "exactly one of"),
        (
            {"defect_type": "product bug", "err_sig": failure["err_sig"], "failure_id": failure["id"]},
            422,
            "exactly one",
        ),
        ({"defect_type": "product bug", "failure_id": failure["id"], "bug_url": "javascript:x"}, 422, "http"),
        ({"defect_type": "product bug", "failure_id": 999999}, 404, "no failure"),
    ]
    for body, status, words in bad:
        answer = client.post("/v1/labels", json=body)
        assert answer.status_code == status and words in answer.text, (body, answer.text)
    label = client.post(
        "/v1/labels",
        json={
            "defect_type": "automation bug",
            "err_sig": failure["err_sig"],
            "bug_url": "https://bugs.example.com/SHOP-42",
            "comment": "total() forgets earlier lines",
        },
    )
    assert label.status_code == 201, label.text
    group = label.json()
    assert (
        _failure(client, answers[-1]["launch_id"], KEYS["many"])["label"]["id"] == group["id"]
    )  # its group's
    fifth = ingest(client, launch_jobs[FED], ranker="heuristic")
    many = next(t for t in fifth["tests"] if t["test_id"].endswith("test_many_items"))
    assert many["known_issue"]["auto"] and many["known_issue"]["text"] == (
        "known issue: automation bug https://bugs.example.com/SHOP-42"
    )
    carried = _failure(client, fifth["launch_id"], KEYS["many"])["label"]
    assert carried["auto"] and carried["origin_id"] == group["id"] and carried["failure_id"] is not None
    undone = client.delete(f"/v1/labels/{carried['id']}")
    assert undone.status_code == 200 and undone.json()["undone_at"]
    assert _failure(client, fifth["launch_id"], KEYS["many"])["label"] is None  # its group's stays off it
    assert client.delete("/v1/labels/999999").status_code == 404
    listed = client.get("/v1/labels", params={"err_sig": failure["err_sig"], "undone": True}).json()
    assert {item["id"] for item in listed["items"]} >= {group["id"]}
    assert listed["defect_types"] == ["product bug", "automation bug", "system issue"]
