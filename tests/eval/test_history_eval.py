"""The history evaluation on a small real corpus (tests/data/history), end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tcfl_lab.eval.history_eval import ABLATIONS, evaluate_history, split_files

CORPUS = Path(__file__).resolve().parents[1] / "data" / "history"


@pytest.fixture(scope="module")
def report() -> dict:
    return evaluate_history(CORPUS, (0, 3, 10))


def test_report_has_the_contracted_shape(report: dict) -> None:
    assert report["cases"] == 4
    split = report["history_split"]
    assert split["calibration"] + split["test"] == 4 and split["calibration"] and split["test"]
    for n in ("0", "3", "10"):
        for ranker in ("static", "spectrum", "fused", "spectrum_true"):
            for level in ("line", "block"):
                for k in ("1", "3", "5"):
                    cell = report["history"][n][ranker][level][k]
                    assert set(cell) == {"hit", "map", "mrr"}
                    assert all(0.0 <= v <= 1.0 for v in cell.values())


def test_ablations_switch_each_history_channel_off(report: dict) -> None:
    ablations = report["history_ablations"]
    for n in ("0", "3", "10"):
        assert set(ablations[n]) == {"fused", *ABLATIONS}
        assert ablations[n]["fused"] == report["history"][n]["fused"]
    assert ablations["0"]["no_ochiai"] == ablations["0"]["no_cp"] == report["history"]["0"]["static"]


def test_state_weights_are_measured_against_the_true_traces(report: dict) -> None:
    weights = report["state_weights"]
    assert set(weights) == {"fail", "pass"}
    for verdict in weights.values():
        assert all(0.0 <= p <= 1.0 for p in verdict.values())
        assert verdict["DBT"] > verdict["NEXE"]  # a doubtful line ran more often than an excluded one


def test_without_history_fused_is_static(report: dict) -> None:
    assert report["history"]["0"]["fused"] == report["history"]["0"]["static"]
    low, high = report["history_ci"]["0"]["fused"]["block"]["1"]["hit_minus_static"]
    assert low == high == 0.0


def test_triage_features_are_measured(report: dict) -> None:
    features = report["history_features"]
    assert features["first_bad_version_cases"] == 2  # the two R1 groups
    assert features["first_bad_version_accuracy_r1"] == 1.0
    assert features["flaky_counts"]["tp"] + features["flaky_counts"]["fn"] > 0  # the 15 % noise group
    assert 0.0 <= features["grouping_pairwise_f1_err_sig_only"] <= features["grouping_pairwise_f1"] <= 1.0


def test_files_split_into_disjoint_halves() -> None:
    files = [f"f{i}.py" for i in range(9)]
    calib, test = split_files(files)
    assert not calib & test and calib | test == set(files) and abs(len(calib) - len(test)) <= 1


def test_cli_prints_the_history_report(tmp_path: Path) -> None:
    calibration = tmp_path / "calibration.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "eval",
            str(CORPUS),
            "--history-lengths",
            "0,1",
            "--json",
            "--quiet",
            "--write-calibration",
            str(calibration),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data["history"]) == {"0", "1"} and data["cases"] == 4
    shipped = json.loads(calibration.read_text())
    assert set(shipped) == {"line@short", "line@long", "block@short", "block@long"}
    assert shipped["block@short"]["version"] == 1
    bad = subprocess.run(
        [sys.executable, "-m", "app.cli", "eval", str(CORPUS), "--history-lengths", "a,b"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "comma-separated integers" in bad.stderr


def test_passes_without_logs_are_simulated_dropped_or_must_run(report: dict) -> None:
    """CI results files keep no passing logs: the passes either vanish or count by their must-run lines."""
    dropped = evaluate_history(CORPUS, (3,), passing_logs="drop")
    must_run = evaluate_history(CORPUS, (3,), passing_logs="must-run")
    assert dropped["cases"] == must_run["cases"] == report["cases"]
    spectrum = [r["history"]["3"]["spectrum"]["block"]["1"]["hit"] for r in (dropped, must_run)]
    assert all(0.0 <= hit <= 1.0 for hit in spectrum)
    with pytest.raises(ValueError):
        evaluate_history(CORPUS, (3,), passing_logs="sometimes")


def _eval_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "eval", str(CORPUS), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
def test_cli_simulates_passes_without_logs() -> None:
    """The must-run measurement is reproducible from the command line, and the mode is in the report."""
    done = _eval_cli("--history-lengths", "3", "--passing-logs", "drop", "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["passing_logs"] == "drop"
    assert data["history"] == evaluate_history(CORPUS, (3,), passing_logs="drop")["history"]
    bad = _eval_cli("--history-lengths", "3", "--passing-logs", "x")
    assert bad.returncode == 2 and "--passing-logs" in bad.stderr
