"""The CLI says what it knows and no more: exit statuses, version, warnings, errors a user can act on.

Through ``app.cli.main`` in-process, or the real command in a child interpreter where the process
itself is under test (imports, exit status), with real scripts and logs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.settings import get_settings
from tests.conftest import RUNNING
from tests.support.terminal import run_on_terminal

SCRIPT = str(RUNNING / "test_example.py")
LOG = str(RUNNING / "failure.log")


@pytest.fixture(autouse=True)
def clean_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "TCFL_MODEL_URL",
        "TCFL_MODEL",
        "TCFL_LOG_FUNCTIONS",
        "TCFL_DATABASE_URL",
        "TCFL_LOG_FORMAT",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def child(*code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "\n".join(code)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("command", ["triage", "trace", "eval", "batch", "serve"])
def test_help_cites_nothing_outside_the_repository(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "DESIGN" not in out and "section 3" not in out


def test_top_level_help_documents_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "3 triage ranked without evidence" in out and "2 usage error" in out and "1 failure" in out


def test_an_unexpected_failure_is_one_line_and_exit_1(tmp_path: Path) -> None:
    # a defect inside a subcommand (injected: real ones are bugs) is a failure, not a usage error
    proc = child(
        "import sys, app.cli.trace as t",
        "def boom(args): raise RuntimeError('disk on fire')",
        "t.run = boom",
        "from app.cli import main",
        f"sys.exit(main(['trace', {SCRIPT!r}, '--log', {LOG!r}]))",
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == "tcfl: failed: RuntimeError: disk on fire"


# -- input a user can get wrong ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("run.sh", "#!/bin/sh\necho hello\nexit 1\n"),
        ("suite.yaml", "tests:\n  - name: test_a\n"),
        ("Test.java", "class Test { void testA() { assert false; } }\n"),
    ],
)
def test_a_non_python_script_is_a_usage_error(
    name: str, content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / name).write_text(content)
    for command in ("triage", "trace"):
        assert main([command, name, "--log", LOG]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"tcfl: error: script {name} is not a Python file")


def test_a_python_script_without_suffix_is_known_by_its_shebang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "check_disk").write_text(
        "#!/usr/bin/env python3\ndef test_a():\n    x = 0\n    assert x == 1\n"
    )
    (tmp_path / "f.log").write_text(
        'Traceback (most recent call last):\n  File "check_disk", line 4, in test_a\nAssertionError\n'
    )
    assert main(["trace", "check_disk", "--log", "f.log"]) == 0
    assert "check_disk" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4, "gzip-compressed"),
        (b"\x7fELF\x02\x01\x01" + bytes(200), "an executable"),
        (bytes(range(256)) * 8, "binary data"),
    ],
)
def test_a_binary_log_is_refused_and_never_echoed(
    data: bytes, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "failure.log").write_bytes(data)
    for command in ("triage", "trace"):
        assert main([command, SCRIPT, "--log", "failure.log"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.strip().startswith(f"tcfl: error: log failure.log is {kind}, not a text log")
        assert all(ch.isprintable() for ch in captured.err.strip())


def test_a_utf16_log_is_text_not_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "failure.log").write_bytes((RUNNING / "failure.log").read_text().encode("utf-16"))
    assert main(["trace", SCRIPT, "--log", "failure.log", "--log-function", "Log.log", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["error_message"].startswith("ZeroDivisionError")


@pytest.mark.parametrize(
    "spec", ["apache", "^(?P<ts>\\S+) (?P<message>.*)$", "(?=x)(?P<msg>.*)", "(?P<msg>[)"]
)
def test_a_bad_log_format_error_names_the_option(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("triage", "trace"):
        assert main([command, SCRIPT, "--log", LOG, "--log-format", spec]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"tcfl: error: --log-format {spec!r}: ")
        assert "prefix_format" not in err and "Traceback" not in err


def test_a_bad_log_format_setting_names_the_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TCFL_LOG_FORMAT", "apache")
    get_settings.cache_clear()
    assert main(["triage", SCRIPT, "--log", LOG]) == 2
    assert capsys.readouterr().err.startswith("tcfl: error: TCFL_LOG_FORMAT 'apache': ")


def test_trace_takes_trace_like_triage_and_keeps_variant(capsys: pytest.CaptureFixture[str]) -> None:
    reports = []
    for flag in ("--trace", "--variant"):
        assert main(["trace", SCRIPT, "--log", LOG, "--log-function", "Log.log", flag, "tmin"]) == 0
        reports.append(capsys.readouterr().out)
    assert reports[0] == reports[1]
    assert "Per line, variant T2" in reports[0]


# -- exit status and warnings of triage ----------------------------------------------------------


def _write_case(tmp_path: Path, script: str, log: str) -> tuple[str, str]:
    (tmp_path / "test_case.py").write_text(script)
    (tmp_path / "case.log").write_text(log)
    return "test_case.py", "case.log"


HELPER_SCRIPT = """\
class Log:
    @staticmethod
    def log(msg):
        print(msg)


def test_copy():
    Log.log("copy started")
    size = 10
    Log.log("copied %d blocks" % size)
    assert size == 12
"""


def test_ranked_with_evidence_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--no-store"]) == 0
    captured = capsys.readouterr()
    assert "no evidence" not in captured.err and "guess" not in captured.out


def test_no_matched_message_and_no_frame_exits_3_with_the_options_to_try(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the helper's messages are in the log, but without --log-function nothing recognises Log.log,
    # and the log has no traceback: the ranking can only be a guess
    script, log = _write_case(tmp_path, HELPER_SCRIPT, "copy started\ncopied 10 blocks\nFAIL: test_copy\n")
    assert main(["triage", script, "--log", log, "--no-store", "-k", "2"]) == 3
    captured = capsys.readouterr()
    assert "No evidence in the log: this ranking is a guess" in captured.out
    hints = [line for line in captured.err.splitlines() if line.startswith("tcfl: warning: no evidence: ")]
    assert len(hints) == 1
    assert "--log-function" in hints[0] and "no Python traceback" in hints[0]
    # the hint works: with the helper named, the log's lines match its calls and the hint is gone
    main(["triage", script, "--log", log, "--no-store", "--log-function", "Log.log"])
    assert "tcfl: warning: no evidence: " not in capsys.readouterr().err


def test_messages_that_match_nothing_point_at_the_log_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, log = _write_case(
        tmp_path,
        'import logging\n\n\ndef test_a():\n    logging.info("step one done")\n    assert False\n',
        "unrelated line\nanother one\n",
    )
    assert main(["triage", script, "--log", log, "--no-store", "--json"]) == 3
    captured = capsys.readouterr()
    body = json.loads(captured.out)
    assert body["evidence_found"] is False
    gap = next(w for w in body["warnings"] if w.startswith("no evidence: "))
    assert "--log-format" in gap and "--log-function" in gap and "2 message(s)" in gap


def test_top_n_header_counts_the_items_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script, log = _write_case(
        tmp_path,
        "def test_a():\n    x = 1\n    assert x == 2\n",
        'Traceback (most recent call last):\n  File "test_case.py", line 3, in test_a\nAssertionError\n',
    )
    assert main(["triage", script, "--log", log, "--no-store", "-k", "5", "--level", "line"]) == 0
    out = capsys.readouterr().out
    listed = [line for line in out.splitlines() if line[:3].strip().endswith(".")]
    assert len(listed) == 2  # the script has three lines; nothing points at its def line (score 0)
    assert (
        f"Top {len(listed)} lines (of 5 asked: the trace holds no more; 1 more scored 0/100 not listed)"
        in out
    )


@pytest.mark.parametrize(
    "flags",
    [["--model", "m"], ["--two-phase"], ["--output-format", "paper", "--line-to-block"]],
)
def test_model_only_flags_with_the_heuristic_ranker_are_a_warning(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "triage",
        SCRIPT,
        "--log",
        LOG,
        "--log-function",
        "Log.log",
        "--no-store",
        "--ranker",
        "heuristic",
    ]
    assert main([*args, *flags]) == 0
    err = capsys.readouterr().err
    named = [f for f in flags if f.startswith("--")]
    assert (
        f"tcfl: warning: {', '.join(named)} only affect(s) the model ranker; ignored with --ranker heuristic"
        in err
    )


def test_model_flag_without_any_model_server_is_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--no-store", "--model", "m"]) == 0
    )
    assert (
        "--model only affect(s) the model ranker; ignored without a model server" in capsys.readouterr().err
    )


@pytest.mark.slow
def test_explicit_llm_ranker_falling_back_answers_and_says_so_once_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.support.openai_standin import closed_port_url

    args = ["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--no-store", "--ranker", "llm"]
    assert main([*args, "--model-url", closed_port_url(), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["ranker"] == "heuristic"
    assert captured.err.count("model unavailable") == 1


# -- where results are stored; serve ---------------------------------------------------------------


def test_db_flag_records_the_result_where_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from app.store.store import Store

    url = f"sqlite:///{tmp_path / 'chosen' / 'results.db'}"
    args = ["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--db", url, "--json"]
    assert main(args) == 0
    saved = json.loads(capsys.readouterr().out)["id"]
    store = Store.open(url)
    try:
        stored = store.get_triage(saved)
        assert stored is not None and stored.status == "done"
    finally:
        store.close()


def test_the_default_database_is_per_user_not_the_working_folder(
    tmp_path: Path, user_data_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["triage", SCRIPT, "--log", LOG, "--log-function", "Log.log"]) == 0
    assert (user_data_home / "tcfl" / "tcfl.db").is_file()
    assert list(tmp_path.glob("*.db")) == []


def test_serve_on_a_busy_port_is_a_usage_error_before_anything_is_created(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        database = tmp_path / "serve.db"
        proc = subprocess.run(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--db", f"sqlite:///{database}"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"tcfl: error: cannot listen on 127.0.0.1:{port}: ")
    assert proc.stderr.count("\n") == 1  # one line: no start-up log, no traceback
    assert not database.exists()


# -- tcfl trace: three states, each with its reason ------------------------------------------------


def _trace_lines(out: str) -> dict[int, str]:
    import re

    rows = {}
    for line in out.splitlines():
        found = re.match(r"[+ ] *(\d+) ", line)
        if found:
            rows[int(found.group(1))] = line
    return rows


def test_trace_text_shows_three_states_and_never_claims_a_line_ran_without_evidence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["trace", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--trace", "T2"]) == 0
    out = capsys.readouterr().out
    rows = _trace_lines(out)
    # test_2 has no known statement: T2 keeps it whole, which proves nothing about line 6
    assert " doubtful " in rows[6] and "no-evidence: " in rows[6]
    assert " executed " in rows[17] and "cfg-path: " in rows[17]
    for row in rows.values():
        assert any(f" {word} " in row for word in ("executed", "not executed", "doubtful")), row
        assert row.rstrip().split("  ")[-1].strip(), f"no reason: {row}"
    assert "Lines: 20 executed, 0 not executed, 1 doubtful" in out


def test_trace_json_lines_use_the_same_three_states(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", SCRIPT, "--log", LOG, "--log-function", "Log.log", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    line6 = next(row for row in report["lines"] if row["line"] == 6)
    assert line6["T2"]["state"] == "doubtful" and line6["T2"]["rule"] == "no-evidence"
    states = {row[name]["state"] for row in report["lines"] for name in ("T1_dbt_exe", "T2", "tplus")}
    assert states <= {"executed", "not_executed", "doubtful"}


def test_a_line_the_estimate_keeps_without_any_record_is_doubtful(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # nothing in the log at all: no variant can know anything about these lines
    (tmp_path / "test_quiet.py").write_text("def test_a():\n    x = 1\n    y = x + 1\n")
    (tmp_path / "empty.log").write_text("run started\n")
    assert main(["trace", "test_quiet.py", "--log", "empty.log", "--trace", "t0"]) == 0
    rows = _trace_lines(capsys.readouterr().out)
    assert all(" doubtful " in rows[n] and "kept by T0 without direct evidence" in rows[n] for n in (2, 3))


# -- progress bars on a terminal -------------------------------------------------------------------


def on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run the real command with stderr on a pseudo-terminal; its exit status and what it drew."""
    import os

    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    return run_on_terminal([sys.executable, "-m", "app.cli", *args], cwd, env)


def test_eval_draws_a_progress_bar_on_a_terminal_and_plain_lines_elsewhere(tmp_path: Path) -> None:
    from tests.conftest import benchmark_cases

    cases = tmp_path / "cases"
    cases.mkdir()
    for path in benchmark_cases()[:2]:
        (cases / path.name).write_bytes(path.read_bytes())
    args = ["eval", str(cases), "--no-localize", "--repetitions", "1", "--json"]
    code, drawn = on_a_terminal(args, tmp_path)
    assert code == 0
    assert "eval" in drawn and "2/2" in drawn and "(0 failed)" in drawn and "\x1b[" in drawn
    piped = subprocess.run(
        [sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert piped.returncode == 0
    assert piped.stderr.splitlines()[-1].startswith("[2/2] ") and "\x1b[" not in piped.stderr


@pytest.mark.slow
def test_serve_logs_text_on_a_terminal(tmp_path: Path) -> None:
    import os
    import pty
    import select
    import signal
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    leader, follower = pty.openpty()
    args = ["serve", "--port", str(port), "--db", f"sqlite:///{tmp_path / 's.db'}", "--workers-off"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args], stderr=follower, stdout=subprocess.DEVNULL, cwd=tmp_path
    )
    os.close(follower)
    seen = ""
    deadline = time.monotonic() + 90
    try:
        while "startup complete" not in seen.lower() and time.monotonic() < deadline:
            if select.select([leader], [], [], 1.0)[0]:
                seen += os.read(leader, 4096).decode(errors="replace")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        os.close(leader)
    lines = [line for line in seen.splitlines() if line.strip()]
    assert lines, "serve logged nothing"
    assert not any(line.lstrip().startswith("{") for line in lines), lines
    assert any(" INFO " in line for line in lines)
