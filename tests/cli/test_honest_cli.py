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

SCRIPT = str(RUNNING / "test_example.py")
LOG = str(RUNNING / "failure.log")
HEAVY = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "httpx", "starlette")


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
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data-home"))
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def child(*code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "\n".join(code)], capture_output=True, text=True, timeout=120
    )


def test_version_answers_without_loading_the_database_or_http_stacks() -> None:
    proc = child(
        "import sys",
        "from app.cli import main",
        "code = main(['--version'])",
        f"loaded = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))",
        "print('exit', code, 'loaded', loaded)",
    )
    assert proc.returncode == 0, proc.stderr
    first, last = proc.stdout.splitlines()[0], proc.stdout.splitlines()[-1]
    assert first.startswith("tcfl ") and first.split()[1][0].isdigit()
    assert last == "exit 0 loaded []"


def test_version_is_also_in_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["triage", "--help"])
    assert stop.value.code == 0
    assert "DESIGN" not in capsys.readouterr().out


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


@pytest.mark.parametrize("spec", ["apache", "^(?P<ts>\\S+) (?P<message>.*)$", "(?P<msg>(a+)+)"])
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
