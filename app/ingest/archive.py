"""Safe extraction of uploaded archives (tar, tar.gz, zip) into a work folder.

Refused: absolute names, ``..`` components, links that point outside the folder, devices and
other special files, more than ``max_files`` members, more than ``max_bytes`` unpacked (counted
while writing, so a lying header cannot bomb us; links inside are copies and count too). The
``max_unpacked_bytes`` setting is a ceiling no caller can lift: a 2.9 MB upload once wrote
2.87 GB under the service's larger per-request limit. Nothing is written outside ``dest``, and
no error message names the work folder (a temporary path): members are named as in the archive.
"""

from __future__ import annotations

import io
import lzma
import os
import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from app.ingest.base import IngestError

MAX_FILES = 20_000
MAX_BYTES = 300_000_000  # the max_unpacked_bytes setting's default
MAX_NAME = 1024  # characters of a member's path (the history's path columns hold as many)
MAX_PART = 255  # bytes of one part of it: NAME_MAX of Linux file systems
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".tar.bz2", ".tar.xz")


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def unpacked_limit() -> int:
    """The ``max_unpacked_bytes`` setting (its default when the settings cannot be read)."""
    from app.settings import SettingsError, get_settings

    try:
        return get_settings().max_unpacked_bytes
    except SettingsError:
        return MAX_BYTES


def safe_name(name: str, what: str) -> str:
    if "\x00" in name:
        raise IngestError(f"{what}: member {name!r} has a NUL character in its name; refused")
    cleaned = name.replace("\\", "/")
    if cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        raise IngestError(f"{what}: member {name!r} has an absolute path; refused")
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise IngestError(f"{what}: member {name!r} climbs out of the folder ('..'); refused")
    # checked here, not left to the file system, whose error would name the work folder
    if len(cleaned) > MAX_NAME or any(len(p.encode("utf-8", "surrogateescape")) > MAX_PART for p in parts):
        shown = name if len(name) <= 80 else name[:77] + "..."
        raise IngestError(
            f"{what}: member {shown!r} has a name too long (over {MAX_NAME} characters, "
            f"or a part over {MAX_PART} bytes); refused"
        )
    return "/".join(parts)


# what a damaged stream raises while it is read: tarfile, gzip (OSError, EOFError), zlib, bz2 (OSError),
# xz (LZMAError), zipfile (BadZipFile, NotImplementedError for unknown methods, RuntimeError when encrypted)
_DAMAGED = (
    tarfile.TarError,
    zipfile.BadZipFile,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    NotImplementedError,
    RuntimeError,
)


def extract(
    data: bytes,
    dest: Path,
    *,
    name: str = "archive",
    max_files: int = MAX_FILES,
    max_bytes: int | None = None,
) -> list[str]:
    """Unpack ``data`` under ``dest``: the member paths written, or ``IngestError`` (a partial tree stays).

    ``max_bytes`` (default: the ``max_unpacked_bytes`` setting) can only lower that setting.
    """
    ceiling = unpacked_limit()
    limit = ceiling if max_bytes is None else min(max_bytes, ceiling)
    dest.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(io.BytesIO(data)):
        return _guarded(_unzip, data, dest, name, max_files, limit)
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115 (closed below)
    except (*_DAMAGED, OSError) as exc:
        raise IngestError(f"{name}: not a tar or zip archive ({_reason(exc)})") from None
    with archive:
        return _guarded(_untar, archive, dest, name, max_files, limit)


def _guarded(
    unpack: Callable[[Any, Path, str, int, int], list[str]],
    source: Any,
    dest: Path,
    name: str,
    max_files: int,
    limit: int,
) -> list[str]:
    """``unpack`` with every failure an ``IngestError`` that names the archive, never the work folder."""
    try:
        return unpack(source, dest, name, max_files, limit)
    except IngestError:
        raise
    except _Unwritable as exc:
        member = f"{name}: member {exc.member!r}"
        raise IngestError(f"{member} cannot be written ({exc.reason}); refused") from None
    except (*_DAMAGED, OSError, ValueError) as exc:
        raise IngestError(f"{name}: the archive is damaged or truncated ({_reason(exc)})") from None


def _too_big(name: str, limit: int) -> IngestError:
    return IngestError(
        f"{name}: unpacks to more than the limit of {limit} bytes (max_unpacked_bytes); refused"
    )


class _Unwritable(Exception):
    """A member the file system refuses: a name too long, a file where a folder is, a full disk."""

    def __init__(self, member: str, reason: str) -> None:
        super().__init__(member)
        self.member = member
        self.reason = reason


def _reason(exc: BaseException) -> str:
    """What went wrong, without a file name: an ``OSError``'s text would name the work folder."""
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return (str(exc) or type(exc).__name__)[:200]


def _copy(
    source: io.BufferedIOBase | io.RawIOBase | BinaryIO, target: Path, budget: list[int], name: str, rel: str
) -> None:
    try:
        out = target.open("wb")
    except (OSError, ValueError) as exc:
        raise _Unwritable(rel, _reason(exc)) from None
    with out:
        while True:
            chunk = source.read(1 << 16)
            if not chunk:
                break
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise _too_big(name, budget[1])
            try:
                out.write(chunk)
            except OSError as exc:
                raise _Unwritable(rel, _reason(exc)) from None


def _mkdir(folder: Path, rel: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:
        raise _Unwritable(rel, _reason(exc)) from None


def _untar(archive: tarfile.TarFile, dest: Path, name: str, max_files: int, max_bytes: int) -> list[str]:
    root = dest.resolve()
    budget = [max_bytes, max_bytes]  # bytes left, the limit (for the message)
    written: list[str] = []
    links: list[tuple[str, str, bool]] = []  # (member, target, a hard link: named from the archive's root)
    for count, member in enumerate(archive, 1):
        if count > max_files:
            raise IngestError(f"{name}: more than {max_files} members; refused")
        rel = safe_name(member.name, name)
        if not member.isfile():
            # a folder's or link's data is still decompressed to skip it: it counts like a file's
            budget[0] -= max(member.size, 0)
            if budget[0] < 0:
                raise _too_big(name, max_bytes)
        if not rel:
            continue
        target = root / rel
        if member.isdir():
            _check_inside(target, root, name, rel)
            _mkdir(target, rel)
        elif member.isfile():
            if member.size > budget[0]:
                raise _too_big(name, max_bytes)
            _check_inside(target.parent, root, name, rel)
            _mkdir(target.parent, rel)
            source = archive.extractfile(member)
            if source is None:
                continue
            _copy(source, target, budget, name, rel)
            written.append(rel)
        elif member.issym() or member.islnk():
            links.append((rel, member.linkname, member.islnk()))
        else:
            raise IngestError(f"{name}: member {member.name!r} is a device or special file; refused")
    for rel, target_name, hard in links:  # after the files, so a link can never be written through
        if "\x00" in target_name:
            raise IngestError(f"{name}: link {rel!r} has a NUL character in its target; refused")
        base = "" if hard else posixpath.dirname(rel)
        resolved = posixpath.normpath(posixpath.join(base, target_name.replace("\\", "/")))
        if target_name.startswith("/") or resolved.startswith("../") or resolved == "..":
            raise IngestError(f"{name}: link {rel!r} points outside the archive ({target_name!r}); refused")
        source_path = root / resolved
        if source_path.is_file() and _inside(source_path, root):
            _check_inside((root / rel).parent, root, name, rel)
            _mkdir((root / rel).parent, rel)
            with source_path.open("rb") as source:  # copied, never linked; the copy counts against the limit
                _copy(source, root / rel, budget, name, rel)
            written.append(rel)
    return written


def _unzip(data: bytes, dest: Path, name: str, max_files: int, max_bytes: int) -> list[str]:
    root = dest.resolve()
    budget = [max_bytes, max_bytes]
    written: list[str] = []
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        if len(infos) > max_files:
            raise IngestError(f"{name}: more than {max_files} members; refused")
        for info in infos:
            rel = safe_name(info.filename, name)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise IngestError(f"{name}: member {info.filename!r} is a symbolic link; refused")
            if not rel:
                continue
            target = root / rel
            if info.is_dir():
                _check_inside(target, root, name, rel)
                _mkdir(target, rel)
                continue
            if info.file_size > budget[0]:
                raise _too_big(name, max_bytes)
            _check_inside(target.parent, root, name, rel)
            _mkdir(target.parent, rel)
            with archive.open(info) as source:
                _copy(source, target, budget, name, rel)
            written.append(rel)
    return written


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError, ValueError):
        return False


def _check_inside(folder: Path, root: Path, name: str, rel: str) -> None:
    """A folder reached through an earlier member must still be under the root (no link detours)."""
    probe = folder
    while not probe.exists() and probe != root:
        probe = probe.parent
    if not _inside(probe, root) or (probe.exists() and os.path.islink(probe)):
        raise IngestError(f"{name}: member {rel!r} would be written outside the folder; refused")
