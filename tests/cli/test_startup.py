"""Start-up: `tcfl --version`, and a triage that loads no database, HTTP or graph stack it does not use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app import __version__
from tests.conftest import RUNNING

HEAVY = (
    "sqlalchemy",
    "alembic",
    "httpx",
    "networkx",
    "fastapi",
    "uvicorn",
    "pydantic",
    "pydantic_settings",
    "testtools",
    "subunit",
    "junitparser",
    "Levenshtein",
    "asyncio",
)
PROBE = f"""
import contextlib, io, json, sys
from app.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
orm = "sqlalchemy.orm" in sys.modules
print(json.dumps({{"code": code, "loaded": loaded, "orm": orm}}))
"""


def probe(tmp_path: Path, *args: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"tcfl {__version__}"


def test_version_loads_no_subcommand(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom app.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
    )
    code += "print(sorted(m for m in sys.modules if m.startswith('app.')))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "['app.cli']"


def test_triage_on_embedded_defaults_without_store_loads_no_heavy_stack(tmp_path: Path) -> None:
    script, log = str(RUNNING / "test_example.py"), str(RUNNING / "failure.log")
    out = probe(tmp_path, "triage", script, "--log", log, "--log-function", "Log.log", "--no-store")
    assert out == {"code": 0, "loaded": [], "orm": False}


@pytest.mark.slow
def test_triage_with_the_store_loads_the_database_but_not_http_or_graphs(tmp_path: Path) -> None:
    script, log = str(RUNNING / "test_example.py"), str(RUNNING / "failure.log")
    first = probe(tmp_path, "triage", script, "--log", log, "--log-function", "Log.log")
    assert first["code"] == 0 and "sqlalchemy" in first["loaded"]  # type: ignore[operator]
    again = probe(tmp_path, "triage", script, "--log", log, "--log-function", "Log.log")
    # schema current: the sqlite3 module writes it, no SQLAlchemy nor Alembic
    assert again == {"code": 0, "loaded": [], "orm": False}


@pytest.mark.slow
def test_stored_triage_at_the_current_schema_loads_no_sqlalchemy(tmp_path: Path) -> None:
    """The write is the ``sqlite3`` module's (``app.store.sqlite_plain``); a new database is still
    created and migrated through SQLAlchemy and Alembic."""
    from app.store.store import Store

    script, log = str(RUNNING / "test_example.py"), str(RUNNING / "failure.log")
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    args = ("triage", script, "--log", log, "--log-function", "Log.log", "--db", url)
    first = probe(tmp_path, *args)  # no schema yet: Alembic runs (its environment loads the ORM)
    assert first["code"] == 0 and "alembic" in first["loaded"]  # type: ignore[operator]
    again = probe(tmp_path, *args)
    assert again == {"code": 0, "loaded": [], "orm": False}
    store = Store.open(url)
    try:
        stored = [store.get_triage(i) for i in (1, 2)]
    finally:
        store.close()
    assert all(s is not None and s.status == "done" and s.result for s in stored)
    first_result, again_result = (dict(s.result, timings=None) for s in stored)  # type: ignore[union-attr, arg-type]
    assert first_result == again_result
