"""Reading scripts and logs from disk for the CLI: bytes in, text and warnings out, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO

from app.analysis.logparse import decode_log
from app.analysis.model import Script
from app.cli import UsageError

CHUNK_BYTES = 1 << 20


def _limits() -> tuple[int, int]:
    """(script, log) byte limits: the service's settings, so the CLI refuses what the service refuses."""
    from pydantic import ValidationError

    from app.settings import Settings

    try:
        settings = Settings()
    except ValidationError:
        settings = Settings.model_construct()
    return settings.max_script_bytes, settings.max_log_bytes


def read_bounded(stream: BinaryIO, limit: int, what: str, name: str, setting: str) -> bytes:
    """At most ``limit`` bytes, read in chunks; more is an error, never a silent cut.

    Never trusts ``stat``: ``/dev/zero``, pipes and ``/proc`` files report size 0 and may never end.
    """
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(CHUNK_BYTES, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise UsageError(
                f"{what} {name} is larger than {limit} bytes (the {setting} limit; "
                f"set TCFL_{setting.upper()} to change it)"
            )


def _read_bytes(name: str, what: str) -> bytes:
    script_limit, log_limit = _limits()
    limit, setting = (log_limit, "max_log_bytes") if what == "log" else (script_limit, "max_script_bytes")
    if name == "-":
        return read_bounded(sys.stdin.buffer, limit, what, "on standard input", setting)
    path = Path(name)
    try:
        if path.is_dir():
            raise UsageError(f"{what} {name} is a directory")
        with path.open("rb") as stream:
            return read_bounded(stream, limit, what, name, setting)
    except FileNotFoundError:
        raise UsageError(f"{what} {name} does not exist") from None
    except PermissionError:
        raise UsageError(f"{what} {name} is not readable") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {name} is a directory") from None
    except OSError as exc:
        raise UsageError(f"{what} {name} cannot be read: {exc.strerror or exc}") from None


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
