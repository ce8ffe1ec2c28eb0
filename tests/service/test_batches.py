"""``/v1/batches`` against a real server: the three upload forms, progress, and refusals."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.service.helpers import LIMITS, example_body, jsonl, wait_for

MAX_CASES = int(LIMITS["TCFL_MAX_CASES_PER_BATCH"])


def _finished(api: httpx.Client, batch_id: int) -> dict[str, Any] | None:
    view = api.get(f"/v1/batches/{batch_id}").json()
    return view if view["status"] == "done" else None


def _check_done(api: httpx.Client, view: dict[str, Any], labels: list[str]) -> None:
    assert view["total"] == view["done"] == len(labels)
    assert view["failed"] == 0
    assert [item["index"] for item in view["items"]] == list(range(len(labels)))
    for item, label in zip(view["items"], labels, strict=True):
        assert item["status"] == "done"
        assert item["attempts"] == 1
        result = api.get(f"/v1/triage/{item['result_id']}").json()
        assert result["status"] == "done"
        assert result["test_id"] == label
        assert result["ranking"]


def test_json_batch_runs_every_case_in_the_background(api: httpx.Client) -> None:
    labels = [f"json-{i}" for i in range(5)]
    response = api.post("/v1/batches", json={"cases": [example_body(test_id=label) for label in labels]})
    assert response.status_code == 202, response.text
    created = response.json()
    assert created["status"] == "queued"
    assert created["total"] == 5
    view = wait_for(lambda: _finished(api, created["id"]), what="the JSON batch")
    _check_done(api, view, labels)
    listed = api.get("/v1/batches").json()["items"]
    assert created["id"] in [b["id"] for b in listed]
    assert [b["id"] for b in listed] == sorted((b["id"] for b in listed), reverse=True)


def test_ndjson_body_batch(api: httpx.Client) -> None:
    labels = ["nd-0", "nd-1", "nd-2"]
    body = jsonl([example_body(test_id=label) for label in labels])
    body = body.replace(b"\n", b"\n\n", 1)  # blank lines are skipped
    response = api.post("/v1/batches", content=body, headers={"content-type": "application/x-ndjson"})
    assert response.status_code == 202, response.text
    _check_done(api, wait_for(lambda: _finished(api, response.json()["id"]), what="the NDJSON batch"), labels)


def test_multipart_jsonl_upload_batch(api: httpx.Client) -> None:
    labels = ["up-0", "up-1"]
    files = {
        "file": ("cases.jsonl", jsonl([example_body(test_id=label) for label in labels]), "application/jsonl")
    }
    response = api.post("/v1/batches", files=files)
    assert response.status_code == 202, response.text
    _check_done(
        api, wait_for(lambda: _finished(api, response.json()["id"]), what="the uploaded batch"), labels
    )


REFUSED: list[tuple[str, dict[str, Any], int, str]] = [
    ("no cases", {"json": {"cases": []}}, 422, "at least 1"),
    ("cases not a list", {"json": {"cases": "all"}}, 422, "list"),
    ("a bad case", {"json": {"cases": [example_body(), example_body(k=0)]}}, 422, "cases.1.k"),
    (
        "llm without a model",
        {"json": {"cases": [example_body(), example_body(ranker="llm")]}},
        422,
        "cases[1]",
    ),
    ("too many cases", {"json": {"cases": [example_body()] * (MAX_CASES + 1)}}, 413, "max_cases_per_batch"),
    (
        "a case over a limit",
        {
            "json": {
                "cases": [example_body(), example_body(log="x" * (int(LIMITS["TCFL_MAX_LOG_BYTES"]) + 1))]
            }
        },
        413,
        "cases[1]: log",
    ),
    (
        "invalid JSON",
        {"content": b"{", "headers": {"content-type": "application/json"}},
        422,
        "not valid JSON",
    ),
    (
        "bad JSONL line",
        {
            "content": jsonl([example_body()]) + b'{"scripts": 3}\n',
            "headers": {"content-type": "application/x-ndjson"},
        },
        422,
        "line 2",
    ),
    (
        "empty JSONL",
        {"content": b"\n\n", "headers": {"content-type": "application/x-ndjson"}},
        422,
        "no cases",
    ),
    (
        "JSONL not UTF-8",
        {"content": b"\xff\xfe{}", "headers": {"content-type": "application/x-ndjson"}},
        422,
        "not UTF-8",
    ),
    ("multipart without file", {"files": {"other": ("x.jsonl", b"{}")}}, 422, "'file'"),
    ("unsupported type", {"content": b"a,b", "headers": {"content-type": "text/csv"}}, 415, "text/csv"),
]


@pytest.mark.parametrize(("name", "kwargs", "status", "needle"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_batches_queue_nothing(
    api: httpx.Client, name: str, kwargs: dict[str, Any], status: int, needle: str
) -> None:
    before = _newest_batch(api)
    response = api.post("/v1/batches", **kwargs)
    assert response.status_code == status, f"{name}: {response.text[:500]}"
    assert needle in json.dumps(response.json()["detail"])
    assert _newest_batch(api) == before


def _newest_batch(api: httpx.Client) -> int | None:
    items = api.get("/v1/batches", params={"limit": 1}).json()["items"]
    return items[0]["id"] if items else None


def test_batch_list_paging(api: httpx.Client) -> None:
    ids = [api.post("/v1/batches", json={"cases": [example_body()]}).json()["id"] for _ in range(2)]
    first = api.get("/v1/batches", params={"limit": 1}).json()["items"]
    second = api.get("/v1/batches", params={"limit": 1, "offset": 1}).json()["items"]
    assert [first[0]["id"], second[0]["id"]] == sorted(ids, reverse=True)
    assert api.get("/v1/batches", params={"limit": 0}).status_code == 422
