"""`tcfl trace` as a user runs it: a real process, real files, the DESIGN section 3 JSON contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.analysis.model import VARIANTS, Script
from app.analysis.pipeline import analyze
from app.cli.trace import format_trace, trace_report
from tests.conftest import RUNNING, benchmark_cases

TCFL = [sys.executable, "-m", "app.cli"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TCFL, *args], capture_output=True, text=True, timeout=120)


def trace_running_example(*extra: str) -> subprocess.CompletedProcess[str]:
    script, log = str(RUNNING / "test_example.py"), str(RUNNING / "failure.log")
    return run("trace", script, "--log", log, "--log-function", "Log.log", *extra)


def test_trace_json_contract_on_the_running_example():
    proc = trace_running_example("--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for key in (
        "files",
        "static_log_statements",
        "error_statements",
        "error_message",
        "L_exe",
        "L_nexe",
        "blocks",
        "variants",
        "aliases",
        "warnings",
    ):
        assert key in out
    assert set(VARIANTS) <= set(out["variants"])
    assert out["aliases"] == {
        "t0": "T0",
        "tmin": "T2",
        "tmid": "CSR(T1_dbt_exe&T2)",
        "tmax": "CSR(T1_dbt_nexe&T2)",
    }
    assert [loc["line"] for loc in out["L_nexe"]] == [18, 24]
    assert [loc["line"] for loc in out["variants"]["tplus"]["kept"]] == [
        1,
        2,
        3,
        8,
        9,
        10,
        11,
        12,
        13,
        16,
        17,
        21,
        22,
        23,
    ]
    assert out["variants"]["T0"]["pruning_rate"] == 0.0
    assert out["blocks"][0] == {
        "id": "BLOCK 1",
        "path": str(RUNNING / "test_example.py"),
        "function": "test_1",
        "start_line": 1,
        "end_line": 3,
    }
    line16 = next(s for s in out["static_log_statements"] if s["line"] == 16)
    assert line16["matched"][0]["text"] == "values: {}" and line16["state"] == "executed"


def test_trace_text_report_shows_each_line_with_its_rule():
    proc = trace_running_example("--variant", "tmax")
    assert proc.returncode == 0, proc.stderr
    assert "CSR(T1_dbt_nexe&T2) (tmax)" in proc.stdout
    assert "gap: bounds disagree" in proc.stdout  # line 3 is doubtful under T1


@pytest.mark.slow
def test_every_real_case_traces_without_error(tmp_path: Path):
    for case_path in benchmark_cases():
        case = json.loads(case_path.read_text())
        paths = []
        for f in case["test_files"]:
            p = tmp_path / case["id"] / f["path"]
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f["content"])
            paths.append(str(p))
        log = tmp_path / case["id"] / "failure.log"
        log.write_text(case["failure_log"])
        proc = run("trace", *paths, "--log", str(log), "--json")
        assert proc.returncode == 0, (case["id"], proc.stderr)
        assert json.loads(proc.stdout)["error_message"]


@pytest.mark.slow
def test_bad_input_gives_one_line_errors_or_warnings(tmp_path: Path):
    missing = run("trace", str(tmp_path / "nope.py"), "--log", str(RUNNING / "failure.log"))
    assert (
        missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    )
    binary = tmp_path / "bin.log"
    binary.write_bytes(bytes(range(256)) * 64)
    proc = run("trace", str(RUNNING / "test_example.py"), "--log", str(binary), "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "is binary data, not a text log" in proc.stderr
    bad_pattern = run(
        "trace",
        str(RUNNING / "test_example.py"),
        "--log",
        str(RUNNING / "failure.log"),
        "--log-function",
        "not a pattern!",
    )
    assert bad_pattern.returncode == 2 and "invalid log function pattern" in bad_pattern.stderr
    bad_variant = run(
        "trace", str(RUNNING / "test_example.py"), "--log", str(RUNNING / "failure.log"), "--variant", "T9"
    )
    assert bad_variant.returncode == 2 and "unknown trace variant" in bad_variant.stderr


def test_report_states_are_three_and_executed_only_where_proven():
    """In-process: tplus says executed only for proven lines; unproven kept lines are doubtful."""
    source = textwrap.dedent(
        """\
        import logging
        log = logging.getLogger(__name__)


        def test_states(x):
            prepared = x + 1
            if prepared:
                x = 1
            else:
                x = 2
            log.info("after the branch")
            assert x == 3
        """
    )
    log = "INFO:t:after the branch\nTraceback (most recent call last):\n"
    log += '  File "t.py", line 12, in test_states\n    assert x == 3\nAssertionError\n'
    report = trace_report(analyze([Script("test_s.py", source)], log))
    rows = {row["line"]: row["tplus"] for row in report["lines"]}
    assert {r["state"] for r in rows.values()} == {"executed", "doubtful"}
    assert rows[6]["state"] == "executed" and rows[8]["state"] == rows[10]["state"] == "doubtful"
    assert all(r["rule"] for r in rows.values())
    text = format_trace(analyze([Script("test_s.py", source)], log), "tplus", [])
    assert " doubtful " in text and "(executed / not executed / doubtful)" in text


def test_a_refinement_can_be_switched_off(tmp_path: Path):
    script = tmp_path / "test_s.py"
    script.write_text("def test_a():\n    if x:\n        y = 1\n    assert y\n")
    log = tmp_path / "f.log"
    log.write_text(
        'Traceback (most recent call last):\n  File "test_s.py", line 4, in test_a\n    assert y\nE\n'
    )
    on = run("trace", str(script), "--log", str(log))
    off = run("trace", str(script), "--log", str(log), "--without", "proven-states")
    assert on.returncode == off.returncode == 0
    states = [(line.split()[1], line.split()[2]) for line in on.stdout.splitlines() if line.startswith("+3 ")]
    assert states == [("doubtful", "y")]  # the branch may not have run
    assert "+3 executed " in off.stdout
    bad = run("trace", str(script), "--log", str(log), "--without", "nonsense")
    assert bad.returncode == 2 and "nonsense" in bad.stderr


def test_trace_reads_the_configured_log_format_and_log_functions(tmp_path: Path) -> None:
    """`tcfl trace` resolves its options like every entry point: TCFL_* settings count."""
    log = tmp_path / "custom.log"
    text = (RUNNING / "failure.log").read_text()
    log.write_text(text.replace("[INFO] ", "@@ INFO :: "))
    script = str(RUNNING / "test_example.py")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TCFL_")},
        "TCFL_LOG_FORMAT": r"^@@ (?P<level>[A-Z]+) :: (?P<msg>.*)$",
        "TCFL_LOG_FUNCTIONS": "Log.log",
    }
    configured = subprocess.run(
        [*TCFL, "trace", script, "--log", str(log), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert configured.returncode == 0, configured.stderr
    out = json.loads(configured.stdout)
    assert out["log_format"] == "custom"
    texts = [m["text"] for s in out["static_log_statements"] for m in s["matched"]]
    assert texts and not any(t.startswith("@@") for t in texts)
    assert [loc["line"] for loc in out["L_exe"]] == [2, 10, 11, 16, 17, 22, 23]

    bare = {k: v for k, v in env.items() if not k.startswith("TCFL_")}
    plain = subprocess.run(
        [*TCFL, "trace", script, "--log", str(log), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=bare,
        cwd=tmp_path,
    )
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["log_format"] != "custom"
    assert [loc["line"] for loc in json.loads(plain.stdout)["L_exe"]] == [17, 23]
