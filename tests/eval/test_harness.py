"""The harness outside the product: loaded from the checkout by its subcommands, never by triage."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import UsageError, harness, main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "data" / "running-example"


def _python(code: str, cwd: Path) -> str:
    """Run ``code`` in a fresh interpreter outside the checkout (no repository root on sys.path)."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_loads_the_checkouts_harness_without_putting_the_root_on_the_path(tmp_path: Path) -> None:
    out = _python(
        "import sys\n"
        "from app.cli.harness import load_harness\n"
        "before = list(sys.path)\n"
        "lab = load_harness()\n"
        "from tcfl_lab.eval.metrics import rank_scores\n"
        "print(lab.__file__)\n"
        "print(sys.path == before)\n",
        tmp_path,
    )
    lab_file, path_unchanged = out.split()
    assert Path(lab_file).resolve() == (REPO / "tcfl_lab" / "__init__.py").resolve()
    assert path_unchanged == "True"


def test_triage_and_help_never_import_the_harness(tmp_path: Path) -> None:
    argv = ["triage", str(EXAMPLE / "test_example.py"), "--log", str(EXAMPLE / "failure.log")]
    argv += ["--log-function", "Log.log", "--no-store", "--json"]
    out = _python(
        "import sys\n"
        "from app.cli import build_parser, main\n"
        "build_parser()\n"  # every subcommand registered, as for --help
        f"code = main({argv!r})\n"
        "print(code, sorted(m for m in sys.modules if m.startswith(('tcfl_lab', 'app.cli.harness'))))\n",
        tmp_path,
    )
    assert out.splitlines()[-1] == "0 []"


def test_a_missing_harness_is_a_usage_error_that_says_why(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(harness, "PACKAGE", "tcfl_lab_not_here")
    with pytest.raises(UsageError, match="ships with the source checkout, not the wheel"):
        harness.load_harness()
    assert main(["eval", str(REPO / "tests" / "data" / "benchmark" / "real")]) == 2
    assert "the evaluation harness is not installed" in capsys.readouterr().err
