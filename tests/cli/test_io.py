"""Bounded reads for the CLI: the size limits hold for files, devices and standard input alike."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from app.cli import UsageError
from app.cli.io import read_bounded, read_log, read_scripts


def test_dev_zero_as_the_log_stops_at_the_limit_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``stat`` says 0 bytes for /dev/zero; only a bounded read notices it never ends."""
    monkeypatch.setenv("TCFL_MAX_LOG_BYTES", "300000")
    with pytest.raises(UsageError, match=r"log /dev/zero is larger than 300000 bytes.*TCFL_MAX_LOG_BYTES"):
        read_log("/dev/zero")


def test_an_oversized_log_on_stdin_is_an_error_not_a_silent_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TCFL_MAX_LOG_BYTES", "1000")

    class Stdin:
        buffer = io.BytesIO(b"x" * 1001)

    monkeypatch.setattr(sys, "stdin", Stdin())
    with pytest.raises(UsageError, match="on standard input is larger than 1000 bytes"):
        read_log("-")


def test_input_exactly_at_the_limit_is_read_whole(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TCFL_MAX_SCRIPT_BYTES", "5000")
    script = tmp_path / "t.py"
    script.write_bytes(b"x = 1\n" * 833 + b"yy")  # 5000 bytes
    scripts, warnings = read_scripts([str(script)])
    assert len(scripts[0].content) == 5000 and not warnings
    script.write_bytes(b"x = 1\n" * 834)
    with pytest.raises(UsageError, match="max_script_bytes"):
        read_scripts([str(script)])


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 3 * (1 << 20) + 7])
def test_read_bounded_returns_everything_up_to_the_limit(size: int) -> None:
    data = bytes(i % 251 for i in range(size))
    assert read_bounded(io.BytesIO(data), size, "log", "x", "max_log_bytes") == data
    if size:
        with pytest.raises(UsageError):
            read_bounded(io.BytesIO(data), size - 1, "log", "x", "max_log_bytes")


def test_a_directory_or_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        read_log(str(tmp_path))
    with pytest.raises(UsageError, match="does not exist"):
        read_log(str(tmp_path / "nope.log"))
