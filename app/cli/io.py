"""Reading scripts and logs from disk for the CLI: bytes in, text and warnings out, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

from app.analysis.logparse import decode_log
from app.analysis.model import Script
from app.cli import UsageError

MAX_INPUT_BYTES = 200_000_000


def _read_bytes(name: str, what: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    path = Path(name)
    try:
        if path.is_dir():
            raise UsageError(f"{what} {name} is a directory")
        if path.stat().st_size > MAX_INPUT_BYTES:
            raise UsageError(f"{what} {name} is larger than {MAX_INPUT_BYTES} bytes")
        return path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{what} {name} does not exist") from None
    except PermissionError:
        raise UsageError(f"{what} {name} is not readable") from None


def decode_text(data: bytes, name: str) -> tuple[str, list[str]]:
    """Scripts: UTF-8 (with BOM) or, failing that, bad bytes replaced and a warning (logs: decode_log)."""
    warnings: list[str] = []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        warnings.append(f"{name}: not valid UTF-8; undecodable bytes were replaced")
    if "\x00" in text:
        text = text.replace("\x00", "")
        warnings.append(f"{name}: contains NUL bytes (binary content?); they were dropped")
    return text, warnings


def read_scripts(names: list[str]) -> tuple[list[Script], list[str]]:
    scripts: list[Script] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise UsageError(f"script {name} given twice")
        seen.add(name)
        text, w = decode_text(_read_bytes(name, "script"), name)
        scripts.append(Script(name, text))
        warnings.extend(w)
    return scripts, warnings


def read_log(name: str) -> tuple[str, list[str]]:
    return decode_log(_read_bytes(name, "log"))
