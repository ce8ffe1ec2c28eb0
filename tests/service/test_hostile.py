"""Hostile input and failing model servers, against real ``tcfl serve`` processes on loopback.

Inputs are built here (deep nesting, long chains, huge brackets); model servers are the real
stand-in over a socket (trickling, silent, failing). No assert is on a duration: each checks an
order of events or an outcome that a stalled or crashed server could not produce.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.service.helpers import Server, example_body, standin, wait_for

pytestmark = pytest.mark.slow  # real servers, failing model servers and deadlines: tens of seconds each


def nested_ifs(depth: int) -> str:
    lines = ["def test_x():"] + ["    " * (i + 1) + f"if x{i}:" for i in range(depth)]
    return "\n".join([*lines, "    " * (depth + 1) + "print('deep')"]) + "\n"


def nested_defs(depth: int) -> str:
    lines = ["    " * i + f"def f{i}():" for i in range(depth)]
    return "\n".join([*lines, "    " * depth + "print('deep')"]) + "\n"


def nested_calls(depth: int) -> str:
    return "def test_x():\n    x = " + "f(" * depth + "1" + ")" * depth + "\n"


def elif_chain(branches: int) -> str:
    head = "def test_x(v):\n    if v == 0:\n        print('0')\n"
    return head + "".join(f"    elif v == {i}:\n        print('{i}')\n" for i in range(1, branches))


def body_for(script: str) -> dict[str, Any]:
    log = 'Traceback (most recent call last):\n  File "t.py", line 3, in test_x\nZeroDivisionError: x\n'
    return {"scripts": [{"path": "t.py", "content": script}], "log": log, "ranker": "heuristic"}


def metric(text: str, name: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    return 0.0


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server, one analysis worker, a 1 s CPU deadline; limits otherwise at their defaults.

    The deadline test's case (a 4,900-branch chain and a 40,000-line log) costs about 2 s of CPU:
    a 2x margin; the example costs a few hundredths of a second.
    """
    workdir = tmp_path_factory.mktemp("hostile")
    env = {"TCFL_ANALYSIS_WORKERS": "1", "TCFL_ANALYSIS_CPU_S": "1"}
    server = Server(f"sqlite:///{workdir / 'h.db'}", workdir, env=env).start()
    try:
        yield server
    finally:
        server.stop()
    assert "unhandled error" not in server.log_text()


@pytest.mark.parametrize(
    ("script", "limit"),
    [
        (nested_ifs(330), "max_nesting_depth"),
        (nested_defs(400), "max_nesting_depth"),
        (nested_calls(5_000), "max_syntax_depth"),
        (elif_chain(10_000), "max_branches_per_function"),
    ],
    ids=["if-330", "def-400", "calls-5000", "elif-10000"],
)
def test_costly_inputs_are_422_naming_the_limit(srv: Server, script: str, limit: str) -> None:
    with srv.client() as api:
        refused = api.post("/v1/triage", json=body_for(script))
        assert refused.status_code == 422, refused.text
        assert limit in refused.json()["detail"]
        assert refused.headers["X-Request-ID"]
        assert api.post("/v1/triage", json=example_body()).status_code == 200


def test_nesting_under_the_limits_is_triaged(srv: Server) -> None:
    with srv.client() as api:
        for script in (nested_ifs(90), nested_defs(90), nested_calls(150)):
            done = api.post("/v1/triage", json=body_for(script))
            assert done.status_code == 200, done.text
            assert done.json()["ranking"]


def test_over_the_cpu_deadline_is_422_and_the_server_carries_on(srv: Server) -> None:
    with srv.client() as api:
        before = metric(api.get("/metrics").text, "tcfl_analysis_workers_recycled")
        # about 3.5 CPU seconds with this log, within every other limit (the CPU limit fires
        # between 1 and 2 s: it is set in whole seconds)
        costly = body_for(elif_chain(4_900))
        costly["log"] = "".join(f"print {i} value\n" for i in range(160_000)) + costly["log"]
        slow = api.post("/v1/triage", json=costly)
        assert slow.status_code == 422, slow.text
        assert "CPU-time deadline of 1 s" in slow.json()["detail"]
        assert api.post("/v1/triage", json=example_body()).status_code == 200
        after = metric(api.get("/metrics").text, "tcfl_analysis_workers_recycled")
        assert after == before + 1
        stored = api.get("/v1/triage", params={"status": "failed"}).json()["items"]
        assert any("CPU-time deadline" in (item.get("error") or "") for item in stored)


def test_healthz_answers_while_a_large_request_is_analysed(srv: Server) -> None:
    """Before the pool, one analysis blocked the event loop: /healthz waited for it to finish."""
    finished = threading.Event()
    outcome: dict[str, int] = {}

    # an analysis that runs until the CPU deadline stops it (as in the test below): it lasts a
    # second or more however fast the machine, long enough for ten /healthz answers
    costly = body_for(elif_chain(4_900))
    costly["log"] = "".join(f"print {i} value\n" for i in range(160_000)) + costly["log"]

    def large() -> None:
        with srv.client() as api:
            outcome["status"] = api.post("/v1/triage", json=costly).status_code
        finished.set()

    thread = threading.Thread(target=large)
    thread.start()
    answered_meanwhile = 0
    with srv.client() as api:
        wait_for(lambda: api.get("/healthz").json()["analysis_busy"] == 1, what="the analysis to start")
        while not finished.is_set() and answered_meanwhile < 10:
            assert api.get("/healthz").status_code == 200
            answered_meanwhile += 1
    thread.join()
    assert answered_meanwhile == 10, "healthz was not answered while the analysis ran"
    assert outcome["status"] in (200, 422)


@pytest.mark.parametrize("path", ["/v1/triage", "/v1/batches"])
def test_json_nested_100000_deep_is_the_documented_422(srv: Server, path: str) -> None:
    deep = b'{"cases": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with srv.client() as api:
        response = api.post(path, content=deep, headers={"Content-Type": "application/json"})
        assert response.status_code == 422, response.text
        assert "nested too deeply" in response.text
        ndjson = api.post(
            "/v1/batches", content=b"[" * 100_000 + b"\n", headers={"Content-Type": "application/x-ndjson"}
        )
        assert ndjson.status_code == 422


def test_every_response_carries_the_security_headers(srv: Server) -> None:
    with srv.client() as api:
        responses = [
            api.get("/"),
            api.get("/submit"),
            api.get("/healthz"),
            api.get("/v1/triage"),
            api.get("/v1/triage/999999"),
            api.get("/docs"),
            api.get("/static/dashboard.css"),
            api.post("/v1/triage", json={"scripts": []}),
        ]
    for response in responses:
        headers = response.headers
        assert headers["X-Content-Type-Options"] == "nosniff", response.url
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"]
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "script-src 'self';" in responses[0].headers["Content-Security-Policy"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
    ],
    ids=["other-origin", "null-origin", "cross-site", "same-site-other-port"],
)
def test_cross_origin_writes_are_403_whether_or_not_keys_are_set(
    srv: Server, headers: dict[str, str]
) -> None:
    with srv.client() as api:
        count = len(api.get("/v1/triage", params={"limit": 500}).json()["items"])
        for path, kwargs in (
            ("/v1/triage", {"json": example_body()}),
            ("/v1/batches", {"json": {"cases": [example_body()]}}),
            ("/submit", {"data": {"log": "x"}}),
        ):
            refused = api.post(path, headers=headers, **kwargs)
            assert refused.status_code == 403, (path, refused.text)
            assert "refused" in refused.json()["detail"]
        assert len(api.get("/v1/triage", params={"limit": 500}).json()["items"]) == count
        same = api.post("/v1/triage", json=example_body(), headers={"Origin": srv.url})
        assert same.status_code == 200


def test_a_dashboard_form_without_its_csrf_token_is_403(srv: Server) -> None:
    with srv.client() as api:
        triage_id = api.post("/v1/triage", json=example_body()).json()["id"]
        refused = api.post(f"/triage/{triage_id}/feedback", data={"line": "24@test_example.py"})
        assert refused.status_code == 403 and "CSRF" in refused.text


# --------------------------------------------------------------------------------------------
# failing model servers
# --------------------------------------------------------------------------------------------

MODEL_DEADLINE_S = 3.0


@pytest.mark.parametrize("mode", ["trickle", "silent", "fail"])
def test_a_failing_model_server_ends_in_a_labelled_fallback_and_opens_the_circuit(
    tmp_path: Path, mode: str
) -> None:
    env = {
        "TCFL_MODEL_TIMEOUT_S": str(MODEL_DEADLINE_S),
        "TCFL_MODEL_BREAKER_FAILURES": "2",
        "TCFL_MODEL_BREAKER_COOLDOWN_S": "600",
        "TCFL_ANALYSIS_WORKERS": "1",
    }
    with standin(0.0, mode=mode) as model:
        srv = Server(f"sqlite:///{tmp_path / 'm.db'}", tmp_path, env={**env, "TCFL_MODEL_URL": model.url})
        srv.start()
        try:
            with srv.client() as api:
                for _ in range(2):
                    started = time.monotonic()
                    result = api.post("/v1/triage", json=example_body(ranker="auto")).json()
                    took = time.monotonic() - started
                    assert result["ranker"] == "heuristic"
                    assert "model unavailable" in result["fallback_reason"]
                    print(f"{mode}: fallback after {took:.1f} s (deadline {MODEL_DEADLINE_S} s)")
                health = api.get("/healthz").json()
                assert health["model_circuit"] == "open"
                assert health["model_server"] == "unreachable" and "circuit open" in health["model_detail"]
                assert metric(api.get("/metrics").text, "tcfl_model_circuit_open") == 1
                skipped = api.post("/v1/triage", json=example_body(ranker="auto")).json()
                assert "circuit open" in skipped["fallback_reason"]
        finally:
            srv.stop()


def test_the_server_stops_soon_after_sigterm_with_a_model_call_in_flight(tmp_path: Path) -> None:
    with standin(0.0, mode="silent") as model:
        env = {"TCFL_MODEL_URL": model.url, "TCFL_MODEL_TIMEOUT_S": "300", "TCFL_ANALYSIS_WORKERS": "1"}
        srv = Server(f"sqlite:///{tmp_path / 's.db'}", tmp_path, env=env).start()
        answers: list[int] = []

        def waiting() -> None:
            try:
                with srv.client() as api:
                    answers.append(api.post("/v1/triage", json=example_body(ranker="auto")).status_code)
            except httpx.HTTPError:
                answers.append(-1)

        thread = threading.Thread(target=waiting)
        thread.start()
        with srv.client() as api:
            wait_for(
                lambda: api.get("/v1/triage", params={"status": "running"}).json()["items"],
                what="a model call in flight",
            )
        assert srv.proc is not None
        srv.proc.send_signal(signal.SIGTERM)
        try:
            srv.proc.wait(timeout=10)
        except Exception:
            srv.kill()
            pytest.fail("the server did not stop within 10 s of SIGTERM")
        thread.join(timeout=30)
        assert answers and answers[0] in (200, -1)


def test_an_interrupted_triage_is_marked_failed_while_the_service_runs(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'lease.db'}"
    env = {"TCFL_TRIAGE_LEASE_S": "2", "TCFL_ANALYSIS_WORKERS": "1"}
    with standin(0.0, mode="silent") as model:
        doomed = Server(database, tmp_path, env={**env, "TCFL_MODEL_URL": model.url}, worker_id="a").start()
        survivor = Server(database, tmp_path, env=env, worker_id="b").start()
        try:
            thread = threading.Thread(
                target=lambda: _ignore_errors(doomed, example_body(ranker="auto")), daemon=True
            )
            thread.start()
            with survivor.client() as api:
                running = wait_for(
                    lambda: api.get("/v1/triage", params={"status": "running"}).json()["items"],
                    what="the triage to start",
                )
                triage_id = running[0]["id"]
                time.sleep(3)  # longer than the lease: the live server's heartbeat keeps it running
                assert api.get(f"/v1/triage/{triage_id}").json()["status"] == "running"
                doomed.kill()
                failed = wait_for(
                    lambda: api.get(f"/v1/triage/{triage_id}").json()["status"] == "failed",
                    timeout=60,
                    what="the interrupted triage to be marked failed",
                )
                assert failed
                assert "interrupted" in api.get(f"/v1/triage/{triage_id}").json()["error"]
        finally:
            doomed.stop()
            survivor.stop()


def _ignore_errors(server: Server, body: dict[str, Any]) -> None:
    try:
        with server.client() as api:
            api.post("/v1/triage", json=body)
    except httpx.HTTPError:
        pass
