"""Safe extraction: traversal, absolute names, links out, special files, size and count limits, and
errors that name the member, never the temporary work folder."""

from __future__ import annotations

import io
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.ingest import IngestError
from app.ingest.archive import extract, safe_name
from app.settings import get_settings


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
    written = tmp_path / "dest" / "zeros.txt"  # refused on its declared size, else while writing
    assert not written.exists() or written.stat().st_size <= 100_000 + 65536


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


@pytest.fixture
def unpacked_limit(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A small ``max_unpacked_bytes`` setting, read fresh from the environment."""
    monkeypatch.setenv("TCFL_MAX_UNPACKED_BYTES", "2000")
    get_settings.cache_clear()
    yield 2000
    get_settings.cache_clear()


def test_the_setting_is_a_ceiling_no_caller_lifts(tmp_path: Path, unpacked_limit: int) -> None:
    data = _tar(_member("big.bin", b"0" * (unpacked_limit + 1)))
    with pytest.raises(IngestError, match=r"more than the limit of 2000 bytes \(max_unpacked_bytes\)"):
        extract(data, tmp_path / "a", max_bytes=10**12)  # the service passes a per-request limit this large
    assert extract(_tar(_member("small.py", b"x" * 100)), tmp_path / "b", max_bytes=10**12) == ["small.py"]


def test_link_copies_count_against_the_limit(tmp_path: Path, unpacked_limit: int) -> None:
    links = [_member(f"copy{i}.py", kind=tarfile.SYMTYPE, link="a.py") for i in range(5)]
    with pytest.raises(IngestError, match="more than the limit"):
        extract(_tar(_member("a.py", b"x" * 600), *links), tmp_path / "dest")
    assert sum(p.stat().st_size for p in (tmp_path / "dest").rglob("*") if p.is_file()) <= unpacked_limit


def test_a_gzip_bomb_stops_at_the_setting(tmp_path: Path, unpacked_limit: int) -> None:
    data = _tar(_member("zeros.bin", bytes(5_000_000)))
    assert len(data) < 10_000  # 5 MB of zeros compresses to a few KB
    with pytest.raises(IngestError, match="max_unpacked_bytes"):
        extract(data, tmp_path / "dest")
    assert not any(p.stat().st_size > unpacked_limit for p in (tmp_path / "dest").rglob("*") if p.is_file())


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([_member("a" * 300 + ".py")], "has a name too long"),
        ([_member("a"), _member("a/b.py")], "cannot be written"),
        ([_member("a/b.py"), _member("a")], "cannot be written"),
    ],
)
def test_members_the_file_system_refuses_are_named_not_the_work_folder(
    tmp_path: Path, members: list, message: str
) -> None:
    with pytest.raises(IngestError) as info:
        extract(_tar(*members), tmp_path / "dest", name="up.tar.gz")
    assert message in str(info.value) and str(info.value).startswith("up.tar.gz: member ")
    assert str(tmp_path) not in str(info.value)


@pytest.mark.parametrize("mode", ["w:xz", "w:bz2"])  # gzip: truncation is tested above
def test_a_damaged_compressed_tar_is_a_clear_error(tmp_path: Path, mode: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for n in range(20):
            info = tarfile.TarInfo(f"f{n}.py")
            payload = bytes(range(256)) * 40
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    data = bytearray(buffer.getvalue())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    with pytest.raises(IngestError, match=r"damaged or truncated|not a tar") as info:
        extract(bytes(data), tmp_path / "dest", name="up.tar")
    assert str(tmp_path) not in str(info.value)


def test_a_nul_in_a_name_is_refused() -> None:
    with pytest.raises(IngestError, match="NUL"):
        safe_name("a\x00b.py", "up.zip")


def test_an_encrypted_zip_member_is_a_clear_error(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.py", "print(1)\n")
    data = bytearray(buffer.getvalue())
    # set the "encrypted" flag bit in the local and central headers: zipfile then asks for a password
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature) + offset
        data[at] |= 0x01
    with pytest.raises(IngestError, match="damaged or truncated"):
        extract(bytes(data), tmp_path / "dest", name="up.zip")


def test_a_hard_link_is_named_from_the_archive_root(tmp_path: Path) -> None:
    data = _tar(
        _member("src/a.py", b"print(1)\n"), _member("src/b.py", kind=tarfile.LNKTYPE, link="src/a.py")
    )
    assert sorted(extract(data, tmp_path / "dest")) == ["src/a.py", "src/b.py"]
    assert (tmp_path / "dest" / "src" / "b.py").read_text() == "print(1)\n"
