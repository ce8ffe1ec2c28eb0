"""Safe extraction: traversal, absolute names, links out, special files, size and count limits."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from app.ingest import IngestError
from app.ingest.archive import extract


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _member(name: str, data: bytes = b"x", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


def _outside(tmp_path: Path) -> set[Path]:
    return {p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "dest")}


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([_member("../evil.py")], "climbs out"),
        ([_member("a/../../evil.py")], "climbs out"),
        ([_member("/etc/evil.py")], "absolute path"),
        ([_member("etc", kind=tarfile.SYMTYPE, link="/etc")], "points outside"),
        ([_member("up", kind=tarfile.SYMTYPE, link="../..")], "points outside"),
        ([_member("hard", kind=tarfile.LNKTYPE, link="../../etc/passwd")], "points outside"),
        ([_member("dev", kind=tarfile.CHRTYPE)], "special file"),
    ],
)
def test_hostile_tar_members_are_refused(tmp_path: Path, members: list, message: str) -> None:
    before = _outside(tmp_path)
    with pytest.raises(IngestError, match=message):
        extract(_tar(*members), tmp_path / "dest", name="up.tar.gz")
    assert _outside(tmp_path) == before


def test_links_inside_become_copies(tmp_path: Path) -> None:
    data = _tar(_member("src/a.py", b"print(1)\n"), _member("src/b.py", kind=tarfile.SYMTYPE, link="a.py"))
    written = extract(data, tmp_path / "dest")
    assert sorted(written) == ["src/a.py", "src/b.py"]
    copy = tmp_path / "dest" / "src" / "b.py"
    assert not copy.is_symlink() and copy.read_text() == "print(1)\n"


def test_size_and_count_limits(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="more than"):
        extract(_tar(_member("big.bin", b"0" * 5000)), tmp_path / "a", max_bytes=1000)
    with pytest.raises(IngestError, match="more than 3 members"):
        extract(_tar(*(_member(f"f{i}") for i in range(5))), tmp_path / "b", max_files=3)


def test_zip_bomb_is_stopped_while_writing(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zeros.txt", b"\0" * 2_000_000)
    with pytest.raises(IngestError, match="more than the limit"):
        extract(buffer.getvalue(), tmp_path / "dest", max_bytes=100_000)
    assert (tmp_path / "dest" / "zeros.txt").stat().st_size <= 100_000 + 65536


def test_zip_traversal_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../../evil.py", "x")
    with pytest.raises(IngestError, match="climbs out"):
        extract(buffer.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "evil.py").exists()


def test_truncated_and_foreign_data(tmp_path: Path) -> None:
    data = _tar(_member("a.py", b"x" * 100_000))
    with pytest.raises(IngestError, match=r"damaged or truncated|not a tar"):
        extract(data[: len(data) // 2], tmp_path / "a")
    with pytest.raises(IngestError, match="not a tar or zip"):
        extract(b"hello world", tmp_path / "b")
