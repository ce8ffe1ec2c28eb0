"""History where users see it, over HTTP on loopback: triage with a test's history, spectra."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from app.analysis.model import Script
from app.history.fusion import pick_calibration
from app.history.rank import rank_with_history, selection_of
from app.options import TriageOptions
from app.rankers.heuristic import HeuristicRanker
from app.rankers.history import shipped_calibration
from app.store.history import HistoryStore
from app.store.store import Store
from app.triage import prepare
from tests.service.helpers import Server, clean_env, example_body, tcfl_command, wait_for

GOOD = """def helper(x):
    return x * 2


def test_answer():
    value = helper(21)
    print("value", value)
    assert value == 42


if __name__ == "__main__":
    test_answer()
"""
BAD = GOOD.replace("return x * 2\n", "return x * 2 + 1\n")


def real_log(script: str, tmp: Path) -> str:
    """The script run for real: its output and, when it fails, the traceback."""
    folder = tmp / uuid.uuid4().hex
    folder.mkdir()
    (folder / "t.py").write_text(script)
    done = subprocess.run([sys.executable, "t.py"], cwd=folder, capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


def record_history(api: httpx.Client, tmp: Path) -> tuple[str, dict[str, str]]:
    """Three passes of the good version, then two failures of the edited one; the key and logs."""
    key = f"t.py::test_answer_{uuid.uuid4().hex[:8]}"
    logs = {"good": real_log(GOOD, tmp), "bad": real_log(BAD, tmp)}
    runs = []
    for n, (script, verdict) in enumerate([(GOOD, "pass")] * 3 + [(BAD, "fail")] * 2):
        runs.append(
            {
                "test_id": key,
                "verdict": verdict,
                "started_at": f"2026-03-01T00:{n:02d}:00Z",
                "env": {"python": "3.12"},
                "ci": {"job_url": f"https://ci/{key}/{n}", "commit": f"{n:040x}"},
                "scripts": [{"path": "t.py", "content": script}],
                "log": logs["good" if verdict == "pass" else "bad"],
            }
        )
    created = api.post("/v1/runs", json={"runs": runs})
    assert created.status_code == 201, created.text
    return key, logs


def test_triage_with_history_fuses_the_runs(api: httpx.Client, tmp_path: Path) -> None:
    key, logs = record_history(api, tmp_path)
    assert "AssertionError" in logs["bad"] and "value 42" in logs["good"]
    body = {"scripts": [{"path": "t.py", "content": BAD}], "log": logs["bad"], "ranker": "heuristic"}
    plain = api.post("/v1/triage", json=body).json()
    assert "history" not in plain
    found = api.post("/v1/triage", json={**body, "test": key, "level": "line"})
    assert found.status_code == 200, found.text
    result = found.json()
    assert result["ranker"] == "history"
    history = result["history"]
    assert history["test"] == key and history["runs_read"] == 5 and history["runs_used"] == 5
    assert history["classification"] == "recurring" and history["flaky"] is False
    first_bad = history["first_bad_version"]
    assert first_bad["script_changed"] and first_bad["first_bad"] == history["version"]
    assert [h["new_lines"] for h in first_bad["hunks"]] == [["    return x * 2 + 1"]]
    # the edited line ran only in failures and changed since the last pass: it leads, by diff and spectrum
    top = result["ranking"][0]
    assert (top["start_line"], top["path"]) == (2, "t.py")
    assert {"diff", "spectrum"} <= set(top["history"]["channels"])
    assert 0 < top["history"]["posterior"] <= 1
    stored = api.get(f"/v1/triage/{result['id']}").json()
    assert stored["history"] == history  # kept with the result
    off = api.post("/v1/triage", json={**body, "test": key, "history": "off"}).json()
    assert off["ranker"] == "heuristic" and "history" not in off
    few = api.post("/v1/triage", json={**body, "test": key, "history": {"window": 5, "k": 1}}).json()
    assert (few["history"]["runs_read"], few["history"]["runs_used"]) == (5, 3)  # both failures, one pass


def test_triage_history_edge_cases_answer_clearly(api: httpx.Client) -> None:
    body = example_body(ranker="heuristic")
    unknown = api.post("/v1/triage", json={**body, "test": "never::recorded"})
    assert unknown.status_code == 200
    assert unknown.json()["history"]["runs_used"] == 0
    assert any("no CI history" in w for w in unknown.json()["warnings"])
    for bad in ({"window": 0}, {"k": -1}, {"window": 10, "z": 1}, "sometimes"):
        answer = api.post("/v1/triage", json={**body, "test": "x", "history": bad})
        assert answer.status_code == 422, (bad, answer.text)
    bad_time = api.post("/v1/triage", json={**body, "test": "x", "history_before": "yesterday"})
    assert bad_time.status_code == 422, bad_time.text


def test_triage_and_batches_read_only_the_runs_before_the_failure(api: httpx.Client, tmp_path: Path) -> None:
    """A failure is ranked with its past: ``history_before`` (the failure's time) keeps the runs
    recorded after it out, on ``POST /v1/triage`` and on a batch item alike."""
    key, logs = record_history(api, tmp_path)  # three passes at 00:00-00:02, failures at 00:03 and 00:04
    body = {"scripts": [{"path": "t.py", "content": BAD}], "log": logs["bad"], "ranker": "heuristic"}
    first = {**body, "test": key, "history_before": "2026-03-01T00:03:00Z"}
    answer = api.post("/v1/triage", json=first).json()
    assert answer["history"]["runs_read"] == 3 and answer["history"]["classification"] == "new"
    batch = api.post("/v1/batches", json={"cases": [first, {**body, "test": key}]})
    assert batch.status_code == 202, batch.text
    url = f"/v1/batches/{batch.json()['id']}"
    done = wait_for(lambda: (b := api.get(url).json())["status"] == "done" and b, what="the batch")
    results = [api.get(f"/v1/triage/{item['result_id']}").json() for item in done["items"]]
    assert [r["history"]["runs_read"] for r in results] == [3, 5]
    assert [r["history"]["classification"] for r in results] == ["new", "recurring"]


def test_spectrum_counts_the_runs_on_the_current_version(api: httpx.Client, tmp_path: Path) -> None:
    key, _ = record_history(api, tmp_path)
    page = api.get(f"/v1/tests/{key}/spectrum")
    assert page.status_code == 200, page.text
    body = page.json()
    assert (body["runs"], body["failing_runs"], body["passing_runs"]) == (5, 2, 3)
    rows = {r["line"]: r for r in body["elements"]}
    edited, shared = rows[2], rows[6]
    # the edited line: the passes ran its old text, which does not count for the new one
    assert edited["ef"] == 2 and edited["ep"] == 0 and edited["scores"]["ochiai"] == 1.0
    # a line both versions share: the passes count, each one version older at weight 0.5^(1/2)
    assert shared["ef"] == 2 and shared["ep"] == pytest.approx(3 * 0.5**0.5, abs=1e-3)
    assert 0 < shared["scores"]["ochiai"] < 1.0
    blocks = api.get(f"/v1/tests/{key}/spectrum", params={"level": "block"}).json()["elements"]
    top = max(blocks, key=lambda b: b["scores"]["ochiai"])
    assert top["start_line"] <= 2 <= top["end_line"]
    versions = api.get(f"/v1/tests/{key}/history").json()["versions"]
    old = api.get(f"/v1/tests/{key}/spectrum", params={"version": versions[0]}).json()
    assert old["version"] == versions[0] and {r["line"]: r for r in old["elements"]}[2]["ep"] == 3
    assert api.get(f"/v1/tests/{key}/spectrum", params={"version": "0" * 16}).status_code == 404
    assert api.get("/v1/tests/never::seen/spectrum").status_code == 404
    assert api.get(f"/v1/tests/{key}/spectrum", params={"level": "function"}).status_code == 422


def test_a_recorded_run_and_its_signature_group_read_back(api: httpx.Client, tmp_path: Path) -> None:
    key, logs = record_history(api, tmp_path)
    newest = api.get(f"/v1/tests/{key}/history").json()["runs"][0]
    run = api.get(f"/v1/runs/{newest['id']}")
    assert run.status_code == 200, run.text
    body = run.json()
    assert body["id"] == newest["id"] and body["verdict"] == "fail" and body["log"] == logs["bad"]
    assert set(body["trace"]["t.py"]) == {"E", "N", "D"}
    missing = api.get("/v1/runs/2147483647")
    assert missing.status_code == 404 and "/v1/ingests/" in missing.json()["detail"]

    group = api.get(f"/v1/signatures/{newest['err_sig']}")
    assert group.status_code == 200, group.text
    found = group.json()
    mine = [r for r in found["runs"] if r["key"] == key]
    assert key in found["tests"] and [r["verdict"] for r in mine] == ["fail", "fail"]
    assert all(r["err_sig"] == newest["err_sig"] for r in found["runs"])
    assert api.get(f"/v1/signatures/{'0' * 40}").status_code == 404
    assert api.get("/v1/signatures/not-a-signature").status_code == 422


@pytest.mark.slow
@pytest.mark.parametrize("k", [0, 2])
def test_api_cli_and_ranker_give_one_order(api: httpx.Client, server: Server, tmp_path: Path, k: int) -> None:
    """The same recorded runs rank alike over HTTP, from ``tcfl triage --test`` and in the ranker."""
    key, logs = record_history(api, tmp_path)
    body = {"scripts": [{"path": "t.py", "content": BAD}], "log": logs["bad"], "ranker": "heuristic"}
    found = api.post("/v1/triage", json={**body, "test": key, "level": "line", "history": {"k": k}})
    assert found.status_code == 200, found.text
    via_api = [(e["path"], e["start_line"]) for e in found.json()["ranking"]]

    (tmp_path / "t.py").write_text(BAD)
    (tmp_path / "fail.log").write_text(logs["bad"])
    args = ["triage", "t.py", "--log", "fail.log", "--json", "--no-store", "--db", server.database_url]
    args += ["--ranker", "heuristic", "--level", "line", "--test", key, "--history-k", str(k)]
    done = subprocess.run(
        tcfl_command(*args), cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    via_cli = [(e["path"], e["start_line"]) for e in json.loads(done.stdout)["ranking"]]

    store = Store.open(server.database_url)
    try:
        runs = HistoryStore(store).history_runs(key, limit=30)
    finally:
        store.close()
    options = TriageOptions(level="line", ranker="heuristic", k=len(via_api))
    request = prepare([Script("t.py", BAD)], logs["bad"], options, explain=True)
    static = [p.element.id for p in HeuristicRanker.picks(request, len(request.rendered.elements))]
    calibration = pick_calibration(shipped_calibration(), "line", len(runs))
    ranking = rank_with_history(
        request.analysis, request.rendered, static, runs, calibration, selection=selection_of(k), k=k
    )
    by_id = {e.id: (e.path, e.start_line) for e in request.rendered.elements}
    direct = [by_id[e] for e in ranking.order]
    assert via_api == via_cli == direct[: len(via_api)]
    assert via_api[0] == ("t.py", 2)  # the edited line
