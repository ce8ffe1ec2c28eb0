"""Nothing outside the checkout is read: links leaving the root, FIFOs and devices are refused by name."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from app.ingest.base import TestRun
from app.ingest.resolve import MAX_SCRIPT_BYTES, Checkout, find_scripts

SECRET = "TOKEN=s3cr3t-value-never-shown"
LOG = 'Traceback (most recent call last):\n  File "/ci/{path}", line 1, in test_x\nValueError: x\n'


def _run(path: str) -> TestRun:
    return TestRun(f"{path}::test_x", "fail", log=LOG.format(path=path), script_paths=(path,))


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def test_a_link_leaving_the_root_is_refused_and_named(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "root"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_leak.py").symlink_to(secret)
    checkout = Checkout.scan(root)
    scripts, warnings = find_scripts(_run("tests/test_leak.py"), checkout)
    assert scripts == []
    assert warnings == ["tests/test_leak.py: a link to a file outside the checkout; refused"]
    assert checkout.read("tests/test_leak.py") is None


def test_a_link_through_a_relative_path_and_to_proc_is_refused(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "test_up.py").symlink_to(Path("..") / "outside" / "secret.txt")
    (root / "test_env.py").symlink_to("/proc/self/environ")
    checkout = Checkout.scan(root)
    for name in ("test_up.py", "test_env.py"):
        content, why = checkout.read_checked(name)
        assert content is None and why == "a link to a file outside the checkout; refused"


def test_a_link_inside_the_root_is_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "real.py").write_text("def test_x():\n    raise ValueError('x')\n")
    (root / "test_alias.py").symlink_to(Path("lib") / "real.py")
    scripts, warnings = find_scripts(_run("test_alias.py"), Checkout.scan(root))
    assert [s.path for s in scripts] == ["test_alias.py"] and warnings == []


def test_a_folder_linked_from_outside_is_not_indexed(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (secret.parent / "test_there.py").write_text(SECRET)
    (root / "linked").symlink_to(secret.parent, target_is_directory=True)
    checkout = Checkout.scan(root)
    assert "test_there.py" not in checkout.by_name
    assert checkout.read("linked/test_there.py") is None


def test_a_link_loop_is_unreadable_not_an_error(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "test_a.py").symlink_to(root / "test_b.py")
    (root / "test_b.py").symlink_to(root / "test_a.py")
    scripts, warnings = find_scripts(_run("test_a.py"), Checkout.scan(root))
    assert scripts == [] and warnings == ["test_a.py: unreadable; left out"]


@pytest.mark.timeout(20)
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    os.mkfifo(root / "test_fifo.py")
    found: list[object] = []
    worker = threading.Thread(
        target=lambda: found.append(find_scripts(_run("test_fifo.py"), Checkout.scan(root)))
    )
    worker.start()
    worker.join(10)
    if worker.is_alive():  # unblock the reader so the test process can end, then fail
        with open(root / "test_fifo.py", "wb"):
            pass
        pytest.fail("reading a FIFO in the checkout blocked")
    scripts, warnings = found[0]  # type: ignore[misc]
    assert scripts == []
    assert warnings == ["test_fifo.py: not a regular file (a device, FIFO or socket); refused"]


def test_a_device_reached_by_a_link_inside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "dev").symlink_to("/dev", target_is_directory=True)  # a link out: refused before the type
    (root / "test_zero.py").symlink_to("/dev/zero")
    content, why = Checkout.scan(root).read_checked("test_zero.py")
    assert content is None and why is not None and "refused" in why


def test_too_large_and_hostile_paths(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "test_big.py").write_bytes(b"x" * (MAX_SCRIPT_BYTES + 1))
    checkout = Checkout.scan(root)
    assert checkout.read_checked("test_big.py") == (None, f"larger than {MAX_SCRIPT_BYTES} bytes; left out")
    for printed in ("/" + "a" * 5000 + ".py", "/tmp/a\x00b.py", "a\x00.py"):
        run = TestRun("x", "fail", script_paths=(printed,), log=LOG.format(path=printed))
        assert find_scripts(run, checkout) == ([], [])


def test_the_scan_warning_does_not_name_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.ingest.resolve.MAX_INDEXED_FILES", 2)
    root = tmp_path / "tcfl-ingest-x" / "checkout"
    root.mkdir(parents=True)
    for n in range(3):
        (root / f"m{n}.py").write_text("")
    (warning,) = Checkout.scan(root).warnings
    assert str(tmp_path) not in warning and "more than 2 Python files" in warning
