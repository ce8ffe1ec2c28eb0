"""Reading scripts and logs from disk for the CLI: bytes in, text and warnings out, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from app.analysis.logparse import check_prefix_format, decode_log
from app.analysis.model import Script
from app.cli import UsageError

if TYPE_CHECKING:
    from app.settings import Settings
    from app.store.store import Store

CHUNK_BYTES = 1 << 20


def _limits() -> tuple[int, int]:
    """(script, log) byte limits: the service's settings, so the CLI refuses what the service refuses."""
    from app.settings import Settings, SettingsError

    try:
        settings = Settings()
    except SettingsError:
        settings = Settings.model_construct()
    return settings.max_script_bytes, settings.max_log_bytes


def load_settings() -> Settings:
    """The TCFL_* settings; a bad one is a one-line usage error naming it, not a traceback."""
    from app.settings import SettingsError, get_settings

    try:
        return get_settings()
    except SettingsError as exc:
        error = exc.errors()[0]
        raise UsageError(f"invalid TCFL_* setting: {error['loc']}: {error['msg']}") from exc


def open_store(url: str | None) -> Store:
    """The store at ``url`` (default TCFL_DATABASE_URL, else per-user), migrated; a usage error if it
    cannot be opened, naming the database without its password."""
    from app.store.store import Store, safe_url

    url = url or load_settings().database_url
    try:
        return Store.open(url)
    except Exception as exc:
        raise UsageError(f"cannot open the database {safe_url(url)}: {type(exc).__name__}: {exc}") from exc


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


PYTHON_SUFFIXES = (".py", ".pyw", ".pyi")
_COMPRESSED = {
    b"\x1f\x8b": "gzip-compressed",
    b"BZh": "bzip2-compressed",
    b"\xfd7zXZ\x00": "xz-compressed",
    b"\x28\xb5\x2f\xfd": "zstd-compressed",
    b"PK\x03\x04": "a zip archive",
    b"\x7fELF": "an executable",
}
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\v\b\x1b")
_SNIFF_BYTES = 8192


def binary_kind(data: bytes) -> str | None:
    """What a file that is not text looks like ("gzip-compressed", "binary data"), or None for text.

    Judged on the first 8 KiB: a known magic number, a NUL byte, or more than 10 % control bytes.
    A UTF-16 byte-order mark is text (logs redirected by PowerShell).
    """
    head = data[:_SNIFF_BYTES]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    for magic, kind in _COMPRESSED.items():
        if head.startswith(magic):
            return kind
    if not head:
        return None
    controls = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROLS)
    if b"\x00" in head or controls / len(head) > 0.1:
        return "binary data"
    return None


def _is_python(name: str, data: bytes) -> bool:
    """A Python script by name (.py, .pyw, .pyi) or, without one of those, by a python shebang."""
    if name == "-" or name.lower().endswith(PYTHON_SUFFIXES):
        return True
    first = data.split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"python" in first


def read_scripts(names: list[str]) -> tuple[list[Script], list[str]]:
    scripts: list[Script] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise UsageError(f"script {name} given twice")
        seen.add(name)
        data = _read_bytes(name, "script")
        if not _is_python(name, data):
            raise UsageError(
                f"script {name} is not a Python file: tcfl analyses Python test scripts "
                "(a .py file, or a file whose first line is a python shebang)"
            )
        kind = binary_kind(data)
        if kind is not None:
            raise UsageError(f"script {name} is {kind}, not Python source")
        text, w = decode_text(data, name)
        scripts.append(Script(name, text))
        warnings.extend(w)
    return scripts, warnings


def read_log(name: str) -> tuple[str, list[str]]:
    """The log as text; a binary file is refused up front, never analysed or echoed to the terminal."""
    data = _read_bytes(name, "log")
    kind = binary_kind(data)
    if kind is not None:
        hint = " (decompress it first)" if kind.endswith("compressed") else ""
        raise UsageError(f"log {name} is {kind}, not a text log{hint}")
    return decode_log(data)


def check_log_format(spec: str | None, source: str = "--log-format") -> None:
    """A bad log prefix format is a usage error that names the option (or setting) it came from."""
    if spec is None:
        return
    try:
        check_prefix_format(spec)
    except ValueError as exc:
        reason = str(exc).replace("prefix_format regex", "the regex").replace("prefix_format", "the format")
        raise UsageError(f"{source} {spec!r}: {reason}") from None
