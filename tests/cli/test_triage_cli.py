"""`tcfl triage` in-process: real files, real pipeline, a real loopback model server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from app.settings import get_settings
from tests.conftest import BENCHMARK, RUNNING
from tests.support.openai_standin import OpenAIStandin, Reply

SCRIPT = str(RUNNING / "test_example.py")
LOG = str(RUNNING / "failure.log")


@pytest.fixture(autouse=True)
def no_model_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "TCFL_MODEL_URL",
        "TCFL_MODEL",
        "TCFL_LOG_FUNCTIONS",
        "TCFL_DEFAULT_K",
        "TCFL_OUTPUT_FORMAT",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_golden_block_report(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--level", "block", "-k", "3"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Error: ZeroDivisionError: division by zero" in out
    assert "Top 3 blocks by heuristic; trace tplus: 14/21 lines kept" in out
    ranks = [
        line.split()[1] + " " + line.split()[2] for line in out.splitlines() if line[:3].strip().endswith(".")
    ]
    assert ranks[0] == "BLOCK 6"
    assert {"BLOCK 1", "BLOCK 4"} & set(ranks[1:])
    assert "    |     var_2 = var_1 / len(values)  # Error (Failure)" in out
    first = out.split(" 1. BLOCK 6", 1)[1].split(" 2. ", 1)[0]
    assert "score 100/100" in first.splitlines()[0]
    # the evidence lines say why; the ranker's reason repeats none of them
    assert "[traceback]" in first and "traceback frame (innermost)" in first and "why: traceback" not in first
    assert "Time: static" in out


def test_json_output_is_the_triage_result(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "-k", "2", "--level", "line", "--json"]
    )
    body = json.loads(capsys.readouterr().out)
    assert code == 0
    assert body["ranker"] == "heuristic" and body["level"] == "line" and body["k"] == 2
    assert body["ranking"][0]["id"] == "17" and body["ranking"][0]["start_line"] == 17
    assert set(body["timings"]) == {"static_ms", "model_ms", "total_ms"}


def test_model_url_flag_uses_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIStandin(default=Reply(rank=True), model="served") as server:
        code = main(
            ["triage", SCRIPT, "--log", LOG, "--model-url", server.url, "--model", "picked", "-k", "1"]
        )
        sent = server.chat_requests()[0].body
    out = capsys.readouterr().out
    assert code == 0
    assert sent["model"] == "picked"
    assert "Top 1 blocks by llm (picked)" in out
    assert "Tokens: 11 in, 7 out" in out


def test_heuristic_ranker_ignores_a_configured_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIStandin(default=Reply(rank=True)) as server:
        monkeypatch.setenv("TCFL_MODEL_URL", server.url)
        get_settings.cache_clear()
        code = main(["triage", SCRIPT, "--log", LOG, "--ranker", "heuristic", "--json"])
        assert server.chat_requests() == []
    assert code == 0 and json.loads(capsys.readouterr().out)["ranker"] == "heuristic"


@pytest.mark.slow
def test_unreachable_model_falls_back_with_a_visible_reason(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.openai_standin import closed_port_url

    code = main(["triage", SCRIPT, "--log", LOG, "--model-url", closed_port_url(), "-k", "1"])
    captured = capsys.readouterr()
    assert code == 0
    assert "by heuristic (fallback: the model did not answer; see the warning)" in captured.out
    assert "model unavailable" not in captured.out
    assert captured.err.count("model unavailable") == 1


def test_multi_file_real_case(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    case = json.loads((BENCHMARK / "sonic-fib-utils-dict-keys.json").read_text())
    paths = []
    for item in case["test_files"]:
        target = tmp_path / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(item["content"])
        paths.append(item["path"])
    (tmp_path / "failure.log").write_text(case["failure_log"])
    code = main(["triage", *paths, "--log", "failure.log", "--level", "function", "-k", "2", "--json"])
    body = json.loads(capsys.readouterr().out)
    assert code == 0
    assert body["ranking"][0]["id"].endswith("get_t2_fib_info")
    assert body["ranking"][0]["path"] == "tests/common/fixtures/fib_utils.py"


def test_non_utf8_script_is_decoded_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = tmp_path / "t.py"
    script.write_bytes(b"def test_a():\n    x = '\xff\xfe'\n    assert x == 1\n")
    log = tmp_path / "f.log"
    log.write_text('Traceback (most recent call last):\n  File "t.py", line 3, in test_a\nAssertionError\n')
    code = main(["triage", str(script), "--log", str(log)])
    captured = capsys.readouterr()
    assert code == 0
    assert "not valid UTF-8" in captured.err
    assert "BLOCK 1" in captured.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no/such/script.py", "--log", LOG], "no/such/script.py does not exist"),
        ([SCRIPT, "--log", "missing.log"], "missing.log does not exist"),
        ([SCRIPT, "--log", LOG, "--trace", "T9"], "unknown trace variant"),
        ([SCRIPT, "--log", LOG, "-k", "0"], "k must be"),
        ([SCRIPT, "--log", LOG, "--ranker", "llm"], "needs a model server"),
        ([SCRIPT, "--log", LOG, "--model-url", "ftp://x"], "model URL"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["triage", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tcfl: error: ") and message in err
    assert "Traceback" not in err


def test_a_bad_setting_in_the_environment_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TCFL_DEFAULT_K", "many")
    get_settings.cache_clear()
    assert main(["triage", SCRIPT, "--log", LOG]) == 2
    assert "invalid TCFL_* setting" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("TCFL_MAX_LOG_LINES", "5", "the log has 15 lines; max_log_lines=5"),
        ("TCFL_MAX_NESTING_DEPTH", "1", "blocks nested over 1 deep; max_nesting_depth=1"),
    ],
)
def test_a_case_over_a_cost_limit_is_a_usage_error_naming_the_setting(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
    value: str,
    message: str,
) -> None:
    monkeypatch.setenv(setting, value)
    get_settings.cache_clear()
    assert main(["triage", SCRIPT, "--log", LOG, "--no-store"]) == 2
    err = capsys.readouterr().err
    assert message in err and f"set {setting} to raise the limit" in err


def test_results_are_recorded_in_the_embedded_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], user_data_home: Path
) -> None:
    from app.store.store import Store

    code = main(
        ["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "-k", "3", "--test-id", "golden"]
    )
    assert code == 0
    out = capsys.readouterr().out
    database = user_data_home / "tcfl" / "tcfl.db"
    assert f"Saved as triage 1 in sqlite:///{database}" in out
    assert not (tmp_path / "tcfl.db").exists()  # never the working folder
    store = Store.open(f"sqlite:///{database}")
    try:
        stored = store.get_triage(1)
    finally:
        store.close()
    assert stored is not None and stored.status == "done" and stored.result is not None
    assert stored.result["ranking"][0]["id"] == "BLOCK 6" and stored.test_id == "golden"


def test_no_store_leaves_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], user_data_home: Path
) -> None:
    assert main(["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--no-store", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] is None
    assert not (tmp_path / "tcfl.db").exists()
    assert not (user_data_home / "tcfl").exists()


def test_the_options_are_stored_whole_and_given_back(
    user_data_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """two_phase and line_to_block used to be dropped from the stored options."""
    from app.localize.result import TriageResult
    from app.options import TriageOptions
    from app.store.store import Store

    args = ["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--two-phase", "--line-to-block"]
    assert main([*args, "--json", "--ranker", "heuristic"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["options"]["two_phase"] is True and body["options"]["line_to_block"] is True
    store = Store.open(f"sqlite:///{user_data_home / 'tcfl' / 'tcfl.db'}")
    try:
        case = store.load_case(body["id"])
        stored = store.get_triage(body["id"])
    finally:
        store.close()
    options = TriageOptions.from_dict(case.options)
    assert options.two_phase and options.line_to_block and options.ranker == "heuristic"
    assert options.log_functions == ("Log.log",)
    assert stored is not None and stored.result is not None
    assert stored.result["options"] == body["options"]
    assert TriageResult.from_dict(stored.result).options == options


def test_settings_and_flags_resolve_in_one_order(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TCFL_DEFAULT_K", "2")
    monkeypatch.setenv("TCFL_LOG_FUNCTIONS", "Log.log")
    get_settings.cache_clear()
    assert main(["triage", SCRIPT, "--log", LOG, "--no-store", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["k"] == 2 and len(body["ranking"]) == 2
    assert body["options"]["log_functions"] == ["Log.log"]
    assert body["trace"]["kept_lines"] == 14  # the golden tplus needs the configured Log.log
    assert main(["triage", SCRIPT, "--log", LOG, "--no-store", "--json", "-k", "4"]) == 0
    assert json.loads(capsys.readouterr().out)["k"] == 4
