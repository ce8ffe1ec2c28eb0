"""`tcfl eval` and `tcfl corpus build` through the real console entry point (app/cli/eval.py, corpus.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.cli import main
from tcfl_lab.eval.corpus import cpython_test_dir
from tests.conftest import DATA, running_example
from tests.support.openai_standin import OpenAIStandin, Reply

CORPUS = DATA / "corpus" / "cpython"


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for path in sorted(CORPUS.glob("cpython-*.json"))[:3]:
        shutil.copy(path, folder / path.name)
    return folder


def test_eval_json_and_out_file(cases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code = main(
        [
            "eval",
            str(cases),
            "--json",
            "--quiet",
            "--level",
            "block",
            "-k",
            "1",
            "-k",
            "3",
            "--trace",
            "tmin,tplus",
            "--repetitions",
            "1",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert printed["cases"] == 3
    assert set(printed["localization"]) == {"block"}
    assert set(printed["localization"]["block"]) == {"1", "3"}
    assert set(printed["localization_by_trace"]) == {"T2", "tplus"}
    assert printed["settings"]["rank_traces"] == ["T2", "tplus"]


def test_eval_is_deterministic_for_a_seed(cases: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", str(cases), "--json", "--quiet", "--no-localize", "--seed", "5", "--repetitions", "2"]
    main(argv)
    first = json.loads(capsys.readouterr().out)
    main(argv)
    second = json.loads(capsys.readouterr().out)
    first.pop("seconds"), second.pop("seconds")
    for report in (first, second):
        report["corpus"].pop("analysis_ms_mean"), report["corpus"].pop("eval_ms_mean")
    assert first == second


@pytest.mark.slow
def test_eval_table_and_plots(cases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    plots = tmp_path / "plots"
    assert main(["eval", str(cases), "--quiet", "--level", "line", "--plot", str(plots), "--ablation"]) == 0
    table = capsys.readouterr().out
    assert "CSR(T1_dbt_exe&T2) (tmid)" in table and "block LM" in table and "ablation" in table
    written = sorted(p.name for p in plots.iterdir())
    assert written == ["hit_at_k_tplus.png", "pruning_vs_preservation.png"]
    assert all((plots / name).read_bytes().startswith(b"\x89PNG") for name in written)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "/nonexistent/cases"], "neither a case file nor a folder"),
        (["eval", "{cases}", "--trace", "T9"], "unknown trace variant"),
        (["eval", "{cases}", "-k", "0"], "-k must be at least 1"),
        (["eval", "{empty}"], "no readable case"),
        (["eval", "{cases}", "--ranker", "llm", "--model-url", ""], "needs a model server"),
    ],
)
def test_eval_bad_input_is_one_line(
    argv: list[str],
    message: str,
    cases: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TCFL_MODEL_URL", raising=False)
    (tmp_path / "empty").mkdir()
    argv = [a.format(cases=cases, empty=tmp_path / "empty") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _has_cpython_tests() -> bool:
    try:
        cpython_test_dir()
    except FileNotFoundError:
        return False
    return True


@pytest.mark.skipif(not _has_cpython_tests(), reason="CPython's test suite is not installed")
def test_corpus_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "corpus"
    assert main(["corpus", "build", "--out", str(out), "--max-cases", "1", "--seed", "3", "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cases"] == 1
    assert len([p for p in out.glob("*.json") if p.name != "index.json"]) == 1
    assert main(["corpus", "build", "--out", str(out), "--max-cases", "1"]) == 2
    assert "empty folder" in capsys.readouterr().err


def test_eval_with_a_model_counts_tokens_and_bad_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripts, log, expected = running_example()
    case = {
        "id": "golden",
        "test_files": [{"path": s.path, "content": s.content} for s in scripts],
        "failure_log": log,
        "faulty_lines": [{"path": "test_example.py", "line": 3}],
        "log_functions": expected["log_function_patterns"],
    }
    (tmp_path / "golden.json").write_text(json.dumps(case))
    answer = '{"faulty_blocks": ["BLOCK 1", "BLOCK 99", "BLOCK 1"]}'  # one valid, one invalid, one repeat
    with OpenAIStandin(default=Reply(content=answer)) as server:
        argv = ["eval", str(tmp_path), "--json", "--quiet", "--no-localize"]
        assert main(argv) == 0  # trace quality alone never calls the model
        capsys.readouterr()
        argv = ["eval", str(tmp_path), "--json", "--quiet", "--ranker", "llm", "--model-url", server.url]
        assert main([*argv, "--level", "block", "-k", "3"]) == 0
        assert len(server.chat_requests()) == 1
    report = json.loads(capsys.readouterr().out)
    cost = report["validity_and_cost"]["tplus"]["block"]
    assert cost["rankers"] == ["llm"]
    assert (cost["input_tokens_mean"], cost["output_tokens_mean"]) == (11, 7)
    assert cost["invalid_rate"] == pytest.approx(1 / 3, abs=1e-4) and cost["duplicate_rate"] == pytest.approx(
        1 / 3, abs=1e-4
    )
    assert cost["fallback_rate"] == 1.0 and cost["fill_in_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert report["localization"]["block"]["3"]["mrr"] == 1.0  # the model put faulty block 1 first
