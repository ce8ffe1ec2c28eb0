"""Property: whatever a client sends, the live server answers with JSON and never with a 5xx."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.service.helpers import Server, example_body

pytestmark = pytest.mark.slow  # hypothesis against a real server: many requests per test

ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
TEXT = st.text(ANY_CHAR, max_size=80)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=12,
)
FIELDS = ["scripts", "log", "level", "k", "trace", "ranker", "log_functions", "test_id"]
FIELD_VALUES = {
    "scripts": st.lists(
        st.fixed_dictionaries({"path": TEXT, "content": TEXT}) | JSON_VALUE, min_size=0, max_size=3
    ),
    "log": TEXT,
    "level": st.sampled_from(["function", "block", "line", "BLOCK", ""]) | JSON_VALUE,
    "k": st.integers(min_value=-(2**70), max_value=2**70) | JSON_VALUE,
    "trace": st.sampled_from(["tplus", "tmin", "T2", "CSR(T2)", "csr(t2)", "t9"]) | TEXT,
    "ranker": st.sampled_from(["auto", "heuristic", "llm", "HEURISTIC"]) | JSON_VALUE,
    "log_functions": st.lists(TEXT, max_size=3) | JSON_VALUE,
    "test_id": TEXT | JSON_VALUE,
}
FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mutated_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """The running example with some fields replaced by odd values, some dropped, some added."""
    body = example_body()
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
        if draw(st.booleans()):
            body[name] = draw(FIELD_VALUES[name])
        else:
            body.pop(name, None)
    if draw(st.booleans()):
        body[draw(TEXT)] = draw(JSON_VALUE)
    return body


def _check(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text[:1000]
    body = response.json()
    if response.status_code >= 400:
        assert body["detail"]


def _post(server: Server, path: str, **kwargs: Any) -> httpx.Response:
    with server.client() as client:
        return client.post(path, **kwargs)


@FUZZ
@given(body=mutated_bodies())
def test_mutated_triage_bodies_never_fail_the_server(server: Server, body: dict[str, Any]) -> None:
    _check(
        _post(server, "/v1/triage", content=json.dumps(body), headers={"content-type": "application/json"})
    )


@FUZZ
@given(body=JSON_VALUE)
def test_arbitrary_json_bodies_never_fail_the_server(server: Server, body: Any) -> None:
    raw = json.dumps(body)
    for path in ("/v1/triage", "/v1/batches"):
        _check(_post(server, path, content=raw, headers={"content-type": "application/json"}))


@FUZZ
@given(
    raw=st.binary(max_size=400),
    media=st.sampled_from(
        ["application/json", "application/x-ndjson", "multipart/form-data", "text/plain", ""]
    ),
)
def test_arbitrary_bytes_never_fail_the_server(server: Server, raw: bytes, media: str) -> None:
    for path in ("/v1/triage", "/v1/batches"):
        _check(_post(server, path, content=raw, headers={"content-type": media}))


@FUZZ
@given(cases=st.lists(mutated_bodies(), min_size=1, max_size=3))
def test_mutated_batches_never_fail_the_server(server: Server, cases: list[dict[str, Any]]) -> None:
    ndjson = "".join(json.dumps(c) + "\n" for c in cases)
    _check(_post(server, "/v1/batches", content=ndjson, headers={"content-type": "application/x-ndjson"}))


@FUZZ
@given(
    params=st.dictionaries(
        st.sampled_from(["limit", "offset", "cursor", "status", "test_id"]), st.text(max_size=30)
    )
)
def test_arbitrary_listing_queries_never_fail_the_server(server: Server, params: dict[str, str]) -> None:
    with server.client() as client:
        _check(client.get("/v1/triage", params=params))
        _check(client.get("/v1/batches", params=params))
