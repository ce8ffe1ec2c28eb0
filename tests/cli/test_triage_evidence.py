"""`tcfl triage` shows the evidence under each ranked element and exits 3 when the ranking is a guess."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main

SCRIPT = "def helper():\n    return 2\n\n\ndef test_a():\n    y = helper()\n    assert y == 3\n"


def test_evidence_lines_and_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "t.py"
    script.write_text(SCRIPT)
    log = tmp_path / "f.log"
    log.write_text('Traceback (most recent call last):\n  File "t.py", line 7, in test_a\nAssertionError\n')
    assert main(["triage", str(script), "--log", str(log), "--no-store", "--level", "line", "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "[traceback] " in out and ":7 traceback frame (innermost)" in out
    assert "<- log line 2" in out

    log.write_text("the job ended without a word\n")
    assert main(["triage", str(script), "--log", str(log), "--no-store"]) == 3
    out = capsys.readouterr().out
    assert "guess" in out
