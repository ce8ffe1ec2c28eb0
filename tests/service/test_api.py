"""The HTTP API against a real ``tcfl serve`` on loopback, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.service.helpers import LIMITS, Server, example_body, standin
from tests.support.openai_standin import closed_port_url

MAX_SCRIPT = int(LIMITS["TCFL_MAX_SCRIPT_BYTES"])
MAX_LOG = int(LIMITS["TCFL_MAX_LOG_BYTES"])
MAX_FILES = int(LIMITS["TCFL_MAX_FILES_PER_CASE"])


def _label() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def test_triage_returns_a_stored_ranked_result(api: httpx.Client) -> None:
    label = _label()
    response = api.post("/v1/triage", json=example_body(test_id=label))
    assert response.status_code == 200, response.text
    result = response.json()
    assert isinstance(result["id"], int)
    assert result["status"] == "done"
    assert result["test_id"] == label
    assert result["ranker"] == "heuristic"
    assert result["level"] == "block"
    assert result["k"] == 3
    assert result["trace"]["variant"] == "tplus"
    assert 0 < len(result["ranking"]) <= 3
    assert [item["rank"] for item in result["ranking"]] == list(range(1, len(result["ranking"]) + 1))
    for item in result["ranking"]:
        assert item["id"].startswith("BLOCK ")
        assert item["path"] == "test_example.py"
        assert 1 <= item["start_line"] <= item["end_line"]
    assert "ZeroDivisionError" in result["error_message"]
    assert set(result["timings"]) >= {"static_ms", "model_ms", "total_ms"}

    stored = api.get(f"/v1/triage/{result['id']}").json()
    assert stored == result


def test_a_named_log_format_is_accepted(api: httpx.Client) -> None:
    response = api.post("/v1/triage", json=example_body(log_format="bracket"))
    assert response.status_code == 200, response.text
    assert response.json()["ranking"][0]["id"] == "BLOCK 6"


def test_trace_shortcut_is_resolved_to_its_variant(api: httpx.Client) -> None:
    response = api.post("/v1/triage", json=example_body(trace="tmid"))
    assert response.status_code == 200, response.text
    assert response.json()["trace"]["variant"] == "CSR(T1_dbt_exe&T2)"


def test_listing_is_newest_first_with_filters_and_both_pagings(api: httpx.Client) -> None:
    label = _label()
    ids = [api.post("/v1/triage", json=example_body(test_id=label)).json()["id"] for _ in range(3)]
    listed = api.get("/v1/triage", params={"test_id": label}).json()
    assert [item["id"] for item in listed["items"]] == sorted(ids, reverse=True)
    assert listed["next_cursor"] is None
    assert all(item["status"] == "done" and item["test_id"] == label for item in listed["items"])

    walked, cursor = [], None
    while True:
        params: dict[str, Any] = {"test_id": label, "limit": 1}
        if cursor is not None:
            params["cursor"] = cursor
        page = api.get("/v1/triage", params=params).json()
        walked += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert walked == sorted(ids, reverse=True)

    second = api.get("/v1/triage", params={"test_id": label, "limit": 1, "offset": 1}).json()
    assert [item["id"] for item in second["items"]] == [sorted(ids, reverse=True)[1]]
    assert api.get("/v1/triage", params={"test_id": label, "status": "failed"}).json()["items"] == []


def test_a_body_without_log_is_422(api: httpx.Client) -> None:
    body = example_body()
    del body["log"]
    response = api.post("/v1/triage", json=body)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "log"]


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/triage/2147483000", 404),
        ("/v1/triage/abc", 422),
        ("/v1/triage/99999999999999", 422),
        ("/v1/triage/0", 422),
        ("/v1/batches/2147483000", 404),
        ("/v1/nothing", 404),
    ],
)
def test_unknown_ids_are_json_errors(api: httpx.Client, path: str, status: int) -> None:
    response = api.get(path)
    assert response.status_code == status
    assert "detail" in response.json()


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 10_000},
        {"offset": -1},
        {"cursor": "x"},
        {"status": "lost"},
        {"test_id": "a\x00b"},
        {"cursor": 2**40},
    ],
)
def test_bad_listing_parameters_are_422(api: httpx.Client, params: dict[str, Any]) -> None:
    response = api.get("/v1/triage", params=params)
    assert response.status_code == 422
    assert response.json()["detail"]


LONE_SURROGATE = b'{"scripts": [{"path": "a.py", "content": "x = 1"}], "log": "\\ud800 oops"}'

BAD_BODIES: list[tuple[str, bytes, str | None, str]] = [
    ("invalid JSON", b'{"scripts": [', "application/json", ""),
    ("binary junk", bytes(range(256)) * 4, "application/json", ""),
    ("empty body", b"", "application/json", ""),
    ("a list", b"[1, 2]", "application/json", ""),
    ("text body", b"hello", "text/plain", ""),
    ("lone surrogate", LONE_SURROGATE, "application/json", "Unicode"),
]


@pytest.mark.parametrize(("name", "raw", "media", "needle"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_malformed_bodies_are_422(api: httpx.Client, name: str, raw: bytes, media: str, needle: str) -> None:
    response = api.post("/v1/triage", content=raw, headers={"content-type": media})
    assert response.status_code == 422, f"{name}: {response.text}"
    assert needle in json.dumps(response.json()["detail"])


BAD_FIELDS: list[tuple[str, dict[str, Any], str]] = [
    ("k=0", {"k": 0}, "greater than or equal to 1"),
    ("k negative", {"k": -3}, "greater than or equal to 1"),
    ("k text", {"k": "five"}, "integer"),
    ("k float", {"k": 2.5}, "integer"),
    ("unknown trace", {"trace": "T9"}, "unknown trace variant"),
    ("unknown level", {"level": "module"}, "function"),
    ("unknown ranker", {"ranker": "gpt"}, "heuristic"),
    ("llm without a model server", {"ranker": "llm"}, "TCFL_MODEL_URL"),
    ("scripts not a list", {"scripts": "print(1)"}, "list"),
    ("no scripts", {"scripts": []}, "at least 1"),
    ("script without content", {"scripts": [{"path": "a.py"}]}, "content"),
    ("empty path", {"scripts": [{"path": "", "content": "x"}]}, "at least 1"),
    ("NUL in path", {"scripts": [{"path": "a\x00.py", "content": "x"}]}, "NUL"),
    ("log not text", {"log": ["a"]}, "string"),
    ("log null", {"log": None}, "valid string"),
    ("unknown field", {"levels": "block"}, "Extra inputs"),
    ("log_functions a string", {"log_functions": "Log.log"}, "list"),
    ("blank log function", {"log_functions": [" "]}, "non-empty"),
    ("test_id too long", {"test_id": "x" * 201}, "at most 200"),
    ("log_format a regex", {"log_format": "(?P<msg>.*)"}, "log_format must be one of"),
]


@pytest.mark.parametrize(("name", "change", "needle"), BAD_FIELDS, ids=[b[0] for b in BAD_FIELDS])
def test_invalid_fields_are_422_naming_the_problem(
    api: httpx.Client, name: str, change: dict[str, Any], needle: str
) -> None:
    response = api.post("/v1/triage", json=example_body(**change))
    assert response.status_code == 422, f"{name}: {response.text}"
    assert needle in json.dumps(response.json()["detail"])


ODD_BUT_VALID: list[tuple[str, dict[str, Any], bool]] = [
    ("empty log", {"log": ""}, True),
    ("binary log", {"log": "".join(chr(c) for c in range(1, 0xD7FF, 7))}, True),
    (
        "NUL bytes in the log and script",
        {"log": "a\x00b\n" * 50, "scripts": [{"path": "t.py", "content": "x=1\x00\n"}]},
        True,
    ),
    ("a C file", {"scripts": [{"path": "main.c", "content": "int main(void) { return *(int*)0; }\n"}]}, True),
    ("syntax errors", {"scripts": [{"path": "t.py", "content": "def f(:\n  return ))\n"}]}, True),
    ("empty script", {"scripts": [{"path": "t.py", "content": ""}]}, True),
    ("k larger than the code", {"k": 1000}, False),
]


@pytest.mark.parametrize(("name", "change", "warns"), ODD_BUT_VALID, ids=[b[0] for b in ODD_BUT_VALID])
def test_odd_inputs_are_triaged_with_warnings(
    api: httpx.Client, name: str, change: dict[str, Any], warns: bool
) -> None:
    response = api.post("/v1/triage", json=example_body(**change))
    assert response.status_code == 200, f"{name}: {response.status_code} {response.text}"
    body = response.json()
    assert body["status"] == "done"
    assert bool(body["warnings"]) is warns, body["warnings"]
    assert api.get(f"/v1/triage/{body['id']}").json() == body


@pytest.mark.parametrize(
    ("change", "limit"),
    [
        ({"scripts": [{"path": "big.py", "content": "#" * (MAX_SCRIPT + 1)}]}, "max_script_bytes"),
        ({"scripts": [{"path": "wide.py", "content": "é" * (MAX_SCRIPT // 2 + 1)}]}, "max_script_bytes"),
        ({"log": "x" * (MAX_LOG + 1)}, "max_log_bytes"),
        (
            {"scripts": [{"path": f"m{i}.py", "content": "x = 1"} for i in range(MAX_FILES + 1)]},
            "max_files_per_case",
        ),
    ],
    ids=["script", "script-multibyte", "log", "files"],
)
def test_size_limits_are_413_naming_the_setting(
    api: httpx.Client, change: dict[str, Any], limit: str
) -> None:
    response = api.post("/v1/triage", json=example_body(**change))
    assert response.status_code == 413, response.text
    assert limit in response.json()["detail"]


def test_a_case_exactly_at_the_limits_is_accepted(api: httpx.Client) -> None:
    scripts = [{"path": f"m{i}.py", "content": "#" * (MAX_SCRIPT - 1) + "\n"} for i in range(MAX_FILES)]
    response = api.post("/v1/triage", json=example_body(scripts=scripts, log="y" * MAX_LOG))
    assert response.status_code == 200, response.text[:300]


def test_oversized_bodies_are_refused_before_parsing(api: httpx.Client) -> None:
    cap = 2 * (MAX_LOG + MAX_FILES * MAX_SCRIPT) + 1_000_000
    response = api.post(
        "/v1/triage", content=b"{" + b" " * cap + b"}", headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert "max_log_bytes" in response.json()["detail"]

    def chunks():  # no Content-Length: the cap is applied while reading
        for _ in range(cap // 65536 + 2):
            yield b" " * 65536

    streamed = api.post("/v1/triage", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413


def test_bad_input_never_loses_what_is_stored(api: httpx.Client) -> None:
    kept = api.post("/v1/triage", json=example_body(test_id=_label())).json()
    for raw in (b"\x00\xff" * 100, b'{"scripts": 1}', LONE_SURROGATE):
        assert (
            api.post("/v1/triage", content=raw, headers={"content-type": "application/json"}).status_code
            == 422
        )
    assert api.post("/v1/triage", json=example_body(log="x" * (MAX_LOG + 1))).status_code == 413
    assert (
        api.post("/v1/batches", content=b"not json", headers={"content-type": "application/json"}).status_code
        == 422
    )
    assert api.get(f"/v1/triage/{kept['id']}").json() == kept


def test_a_bad_log_function_is_422_and_stores_nothing(api: httpx.Client) -> None:
    label = _label()
    response = api.post("/v1/triage", json=example_body(test_id=label, log_functions=["Log..log"]))
    assert response.status_code == 422
    assert "invalid log function pattern 'Log..log'" in response.json()["detail"]
    assert api.get("/v1/triage", params={"test_id": label}).json()["items"] == []


def test_request_ids_are_echoed_or_made(api: httpx.Client) -> None:
    assert (
        api.get("/healthz", headers={"X-Request-ID": "ci-job-42.7"}).headers["X-Request-ID"] == "ci-job-42.7"
    )
    made = api.get("/healthz").headers["X-Request-ID"]
    assert len(made) == 32 and int(made, 16) >= 0
    replaced = api.get("/healthz", headers={"X-Request-ID": "has spaces and\ttabs"}).headers["X-Request-ID"]
    assert replaced != "has spaces and\ttabs" and len(replaced) == 32


def test_healthz_reports_database_model_worker_and_version(api: httpx.Client) -> None:
    body = api.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["model_server"] == "not configured"
    assert body["worker"] == "running"
    assert body["version"] not in ("", "unknown")


def test_metrics_count_requests_phases_and_queue(api: httpx.Client) -> None:
    def samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        text = api.get("/metrics").text
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    before = samples()
    assert api.post("/v1/triage", json=example_body()).status_code == 200
    after = samples()
    posted = ("tcfl_http_requests_total", (("method", "POST"), ("route", "/v1/triage"), ("status", "200")))
    assert after[posted] == before.get(posted, 0) + 1
    static = ("tcfl_triage_phase_seconds_count", (("phase", "static"),))
    assert after[static] == before.get(static, 0) + 1
    heuristic = ("tcfl_triages_total", (("ranker", "heuristic"),))
    assert after[heuristic] == before.get(heuristic, 0) + 1
    assert ("tcfl_batch_queue_depth", (("status", "queued"),)) in after
    written = ("tcfl_store_triages_written", ())
    assert after[written] == before.get(written, 0) + 1
    assert after[("tcfl_store_write_transactions", ())] >= 1
    # the example is what every analysis worker warms up on: its parse is kept
    hit = ("tcfl_parse_cache_analyses", (("result", "hit"),))
    assert after[hit] == before.get(hit, 0) + 1


def test_openapi_documents_bodies_with_the_running_example(api: httpx.Client) -> None:
    spec = api.get("/openapi.json").json()
    request = spec["components"]["schemas"]["TriageRequest"]
    example = request["examples"][0]
    assert (
        example["scripts"][0]["content"]
        == (Path(__file__).parents[1] / "data/running-example/test_example.py").read_text()
    )
    assert "failure log" in request["properties"]["log"]["description"]
    assert "BatchRequest" in spec["components"]["schemas"]
    batch_body = spec["paths"]["/v1/batches"]["post"]["requestBody"]["content"]
    assert set(batch_body) == {"application/json", "application/x-ndjson", "multipart/form-data"}
    assert api.get("/docs").status_code == 200


def test_openapi_names_the_key_schemes_on_every_keyed_route_and_only_there(api: httpx.Client) -> None:
    """The key check reads its headers itself; the schema names its schemes as FastAPI would."""
    spec = api.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["APIKeyHeader"] == {
        "type": "apiKey",
        "description": "One of TCFL_SERVICE_API_KEYS",
        "in": "header",
        "name": "X-API-Key",
    }
    assert schemes["HTTPBearer"]["scheme"] == "bearer" and set(schemes) == {"APIKeyHeader", "HTTPBearer"}
    keyed = [{"APIKeyHeader": []}, {"HTTPBearer": []}]
    for path, method in (("/v1/triage", "post"), ("/v1/triage/{triage_id}", "get"), ("/metrics", "get")):
        assert spec["paths"][path][method]["security"] == keyed, path
    assert "security" not in spec["paths"]["/healthz"]["get"]


@pytest.mark.slow
def test_api_keys_guard_every_route_but_healthz(tmp_path: Path) -> None:
    srv = Server(
        f"sqlite:///{tmp_path / 'keys.db'}", tmp_path, env={"TCFL_SERVICE_API_KEYS": "alpha, beta"}
    ).start()
    try:
        with srv.client() as anon:
            assert anon.get("/healthz").status_code == 200
            for method, path in (
                ("GET", "/v1/triage"),
                ("GET", "/v1/batches"),
                ("GET", "/metrics"),
                ("POST", "/v1/triage"),
                ("GET", "/v1/triage/1"),
            ):
                denied = anon.request(method, path, json=example_body())
                assert denied.status_code == 401, path
                assert "API key" in denied.json()["detail"]
            assert anon.get("/v1/triage", headers={"X-API-Key": "gamma"}).status_code == 401
            assert anon.get("/v1/triage", headers={"Authorization": "Bearer alph"}).status_code == 401
            assert anon.get("/v1/triage", headers={"X-API-Key": "é".encode()}).status_code == 401
            assert anon.get("/v1/triage", headers={"X-API-Key": "beta"}).status_code == 200
            assert anon.get("/metrics", headers={"Authorization": "Bearer alpha"}).status_code == 200
            posted = anon.post("/v1/triage", json=example_body(), headers={"X-API-Key": "alpha"})
            assert posted.status_code == 200
    finally:
        srv.stop()


def _metric(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


@pytest.mark.slow
def test_model_server_health_tokens_and_fallbacks_are_reported(tmp_path: Path) -> None:
    with standin(0.0) as model:
        srv = Server(f"sqlite:///{tmp_path / 'm.db'}", tmp_path, env={"TCFL_MODEL_URL": model.url}).start()
        try:
            with srv.client() as api:
                assert api.get("/healthz").json()["model_server"] == "ok"
                result = api.post("/v1/triage", json=example_body(ranker="auto")).json()
                assert result["ranker"] == "llm"
                assert result["model"] == "standin-model"
                metrics = api.get("/metrics").text
        finally:
            srv.stop()
    assert _metric(metrics, "tcfl_model_tokens_total", direction="in") == result["tokens"]["input"] > 0
    assert _metric(metrics, "tcfl_model_tokens_total", direction="out") == result["tokens"]["output"] > 0
    assert _metric(metrics, "tcfl_triage_phase_seconds_count", phase="model") == 1

    env = {"TCFL_MODEL_URL": closed_port_url(), "TCFL_MODEL_RETRIES": "0"}
    down = Server(f"sqlite:///{tmp_path / 'd.db'}", tmp_path, env=env).start()
    try:
        with down.client() as api:
            health = api.get("/healthz")
            assert health.status_code == 200
            assert health.json()["model_server"] == "unreachable"
            assert health.json()["status"] == "degraded"
            fallback = api.post("/v1/triage", json=example_body(ranker="auto")).json()
            assert fallback["ranker"] == "heuristic" and fallback["fallback_reason"]
            metrics = api.get("/metrics").text
    finally:
        down.stop()
    assert _metric(metrics, "tcfl_ranker_fallbacks_total") == 1
    assert _metric(metrics, "tcfl_model_errors_total") == 1


@pytest.mark.slow
def test_logs_are_json_lines_carrying_the_request_id(tmp_path: Path) -> None:
    srv = Server(f"sqlite:///{tmp_path / 'l.db'}", tmp_path, log_level="info").start()
    try:
        with srv.client() as api:
            api.post("/v1/triage", json=example_body(), headers={"X-Request-ID": "trace-me-7"})
    finally:
        srv.stop()
    entries = [json.loads(line) for line in srv.log_text().splitlines() if line.startswith("{")]
    access = [e for e in entries if e.get("request_id") == "trace-me-7" and e["msg"] == "request"]
    assert len(access) == 1
    assert access[0]["route"] == "/v1/triage"
    assert access[0]["status"] == 200
    assert access[0]["duration_ms"] > 0
