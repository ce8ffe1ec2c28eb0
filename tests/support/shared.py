"""Build a folder once per test run, shared by every pytest-xdist worker of that run.

A session-scoped fixture runs once per worker; what it builds by running a real tool (a pytest, an
avocado, a stestr run) is the same on every worker, so the first worker to ask builds it under a
file lock and the others wait for it and read it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base temporary folder of the whole run: the workers' folders are made inside it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """The folder ``name``, filled by ``build(folder)`` (its value unused) in the first process to ask.

    A build that raised leaves no folder behind, so the next process to ask tries again (and fails
    the same way, with its own report).
    """
    root = run_root(tmp_path_factory)
    folder = root / f"shared-{name}"
    with (root / f"shared-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held while building: the others wait, then read
        if (folder / ".built").is_file():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        try:
            build(folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        (folder / ".built").touch()
    return folder
