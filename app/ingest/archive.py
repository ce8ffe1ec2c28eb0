"""Safe extraction of uploaded archives (tar, tar.gz, zip) into a work folder.

Refused: absolute names, ``..`` components, links that point outside the folder, devices and
other special files, more than ``max_files`` members, more than ``max_bytes`` unpacked (counted
while writing, so a lying header cannot bomb us). Nothing is written outside ``dest``.
"""

from __future__ import annotations

import io
import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

from app.ingest.base import IngestError

MAX_FILES = 20_000
MAX_BYTES = 500_000_000
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".tar.bz2", ".tar.xz")


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def safe_name(name: str, what: str) -> str:
    cleaned = name.replace("\\", "/")
    if cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        raise IngestError(f"{what}: member {name!r} has an absolute path; refused")
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise IngestError(f"{what}: member {name!r} climbs out of the folder ('..'); refused")
    return "/".join(parts)


def extract(
    data: bytes, dest: Path, *, name: str = "archive", max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES
) -> list[str]:
    """Unpack ``data`` under ``dest``: the member paths written, or ``IngestError`` (a partial tree stays)."""
    dest.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(io.BytesIO(data)):
        return _unzip(data, dest, name, max_files, max_bytes)
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115 (closed below)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise IngestError(f"{name}: not a tar or zip archive ({exc})") from None
    with archive:
        return _untar(archive, dest, name, max_files, max_bytes)


def _copy(source: io.BufferedIOBase | io.RawIOBase, target: Path, budget: list[int], name: str) -> None:
    with target.open("wb") as out:
        while True:
            chunk = source.read(1 << 16)
            if not chunk:
                break
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise IngestError(f"{name}: unpacks to more than the limit of bytes; refused")
            out.write(chunk)


def _untar(archive: tarfile.TarFile, dest: Path, name: str, max_files: int, max_bytes: int) -> list[str]:
    root = dest.resolve()
    budget = [max_bytes]
    written: list[str] = []
    links: list[tuple[str, str]] = []
    try:
        members = iter(archive)
        for count, member in enumerate(members, 1):
            if count > max_files:
                raise IngestError(f"{name}: more than {max_files} members; refused")
            rel = safe_name(member.name, name)
            if not rel:
                continue
            target = root / rel
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                if member.size > budget[0]:
                    raise IngestError(f"{name}: unpacks to more than {max_bytes} bytes; refused")
                _check_inside(target.parent, root, name, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                if source is None:
                    continue
                _copy(source, target, budget, name)
                written.append(rel)
            elif member.issym() or member.islnk():
                links.append((rel, member.linkname))
            else:
                raise IngestError(f"{name}: member {member.name!r} is a device or special file; refused")
    except (tarfile.TarError, EOFError, zlib_error()) as exc:
        raise IngestError(f"{name}: the archive is damaged or truncated ({exc})") from None
    for rel, target_name in links:  # after the files, so a link can never be written through
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target_name.replace("\\", "/")))
        if target_name.startswith("/") or resolved.startswith("../") or resolved == "..":
            raise IngestError(f"{name}: link {rel!r} points outside the archive ({target_name!r}); refused")
        source = root / resolved
        if source.is_file() and _inside(source, root):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / rel)  # copied, never linked
            written.append(rel)
    return written


def zlib_error() -> type[Exception]:
    import zlib

    return zlib.error


def _unzip(data: bytes, dest: Path, name: str, max_files: int, max_bytes: int) -> list[str]:
    root = dest.resolve()
    budget = [max_bytes]
    written: list[str] = []
    try:
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
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                _check_inside(target.parent, root, name, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source:
                    _copy(source, target, budget, name)
                written.append(rel)
    except (zipfile.BadZipFile, zlib_error(), EOFError, NotImplementedError) as exc:
        raise IngestError(f"{name}: the archive is damaged or truncated ({exc})") from None
    return written


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


def _check_inside(folder: Path, root: Path, name: str, rel: str) -> None:
    """A folder reached through an earlier member must still be under the root (no link detours)."""
    probe = folder
    while not probe.exists() and probe != root:
        probe = probe.parent
    if not _inside(probe, root) or (probe.exists() and os.path.islink(probe)):
        raise IngestError(f"{name}: member {rel!r} would be written outside the folder; refused")
