"""The CLI says what it knows and no more: exit statuses, version, warnings, errors a user can act on.

Through ``app.cli.main`` in-process, or the real command in a child interpreter where the process
itself is under test (imports, exit status), with real scripts and logs.
"""

from __future__ import annotations

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
