"""`tcfl bench` prints numbers (it asserts nothing): its rows are complete and consistent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from tcfl_lab.bench import log_for, main

PERF = Path(__file__).parent / "data" / "perf" / "test_qos_sai.py"
KEYS = {
    "script",
    "script_lines",
    "log_lines",
    "log_bytes",
    "parse_ms",
    "static_ms",
    "static_seen_ms",
    "rank_ms",
    "trace_ms",
    "static_x_parse",
    "triage_x_parse",
    "trace_x_parse",
    "peak_mib",
    "peak_x_log",
}


def test_json_rows_for_synthetic_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--script-lines", "60", "120", "--log-lines", "80", "200", "--repeat", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"]
    assert [(r["log_lines"] >= 70, r["script_lines"] >= 50) for r in rows] == [(True, True)] * 2
    for row in rows:
        assert set(row) == KEYS
        assert row["parse_ms"] > 0 and row["static_ms"] > 0 and row["trace_ms"] > 0
        assert row["static_x_parse"] == pytest.approx(row["static_ms"] / row["parse_ms"], rel=0.01)
        assert row["peak_mib"] > 0


def test_a_real_script_gets_a_log_of_its_own_messages(capsys: pytest.CaptureFixture[str]) -> None:
    script = Script(PERF.name, PERF.read_text())
    log = log_for(script, 300)
    assert len(log.splitlines()) >= 290
    analysis = analyze([script], log, variants=("tplus",), explain=False)
    assert analysis.match.exe, "the generated messages must match some of the script's log statements"
    assert analysis.error_frames, "the generated traceback must point into the script"
    assert main(["--script", str(PERF), "--log-lines", "300", "--repeat", "1", "--no-trace", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["script"] == PERF.name and row["trace_ms"] is None and row["script_lines"] > 2700
    assert 0 < row["static_seen_ms"] < row["static_ms"]  # a short log: the parse is most of the work


def test_the_table_has_a_row_per_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--script-lines", "60", "--log-lines", "80", "--repeat", "1", "--no-trace"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "x parse" in lines[1] and len(lines) == 4


@pytest.mark.slow
def test_startup_times_each_cold_start(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--startup", "--repeat", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["startup"]) == {
        "python_ms",
        "import_fastapi_ms",
        "version_ms",
        "triage_ms",
        "triage_store_ms",
    }
    assert all(value > 0 for value in out["startup"].values())
    assert set(out["startup_cpu"]) == set(out["startup"])


@pytest.mark.slow
def test_log_parsing_figures_for_each_kind_of_log(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--logs", "300", "--repeat", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["logs"]
    assert [r["log"] for r in rows] == ["prefixed", "plain", "avocado"]
    for r in rows:
        assert r["lines"] >= 290 and r["us_per_line"] > 0 and r["peak_x_log"] > 0


def test_ci_job_is_seeded_and_tcfl_ci_triages_it(tmp_path: Path) -> None:
    from tcfl_lab.bench import make_ci_job

    one = make_ci_job(tmp_path / "a", tests=60, failures=6, modules=3, seed=3)
    two = make_ci_job(tmp_path / "b", tests=60, failures=6, modules=3, seed=3)
    assert one.results.read_bytes() == two.results.read_bytes()
    assert [p.read_text() for p in one.scripts] == [p.read_text() for p in two.scripts]
    text = one.results.read_text()
    assert text.count("<testcase ") == 60 and text.count("<failure ") == 6
    from app.ingest import read_results
    from app.ingest.resolve import Checkout, find_scripts

    results = read_results(one.results, "auto")
    checkout = Checkout.scan(one.root)
    for run in results.failed:  # each failure's traceback points at its test's own lines
        scripts, _ = find_scripts(run, checkout)
        assert scripts[0].path.startswith("tests/test_mod_") and "lib/helpers.py" in {s.path for s in scripts}
        analysis = analyze(scripts, run.log, variants=("tplus",), explain=False)
        assert analysis.error_frames and analysis.match.exe


@pytest.mark.slow  # `tcfl ci` twice in processes of its own, and the static phase on a real script
def test_ci_figures_for_the_job_and_the_log_points(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--ci", "--ci-parts", "job", "logs", "--ci-tests", "40", "--ci-failures", "4"]
    assert main([*argv, "--ci-modules", "2", "--log-lines", "300", "--repeat", "1", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)["ci"]
    job = body["job"]
    assert (job["tests"], job["failures"], job["modules"]) == (40, 4, 2)
    for mode in ("no_store", "stored"):
        assert job[mode]["exit_status"] == 0 and job[mode]["cpu_s"] > 0 and job[mode]["peak_mib"] > 0
        assert job[mode]["ms_per_failed_test"] == pytest.approx(job[mode]["cpu_s"] * 1000 / 4, rel=0.01)
    assert job["parse_scripts_ms"] > 0
    [row] = body["logs"]
    assert row["log_lines"] >= 290 and row["script_lines"] > 2700 and row["static_x_parse"] > 0
    assert "server" not in body


@pytest.mark.slow  # starts `tcfl serve` with its analysis workers, and the trivial endpoint
def test_ci_server_figures_beside_the_trivial_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--ci", "--ci-parts", "server", "--ci-requests", "30", "--json"]) == 0
    server = json.loads(capsys.readouterr().out)["ci"]["server"]
    for name in ("tcfl", "trivial"):
        assert server[name]["ok"] == 30 and server[name]["server_main_cpu_ms_per_request"] >= 0
    # the process clock ticks in 10 ms steps: 30 trivial answers may all fall inside one tick, 30
    # triages may not
    assert server["tcfl"]["server_main_cpu_ms_per_request"] > 0
    assert server["throughput_x_trivial"] > 0
