"""The database engine and the schema check: SQLAlchemy Core only, no ORM and no Alembic import.

A CLI triage opens the store through this module and ``app.store.record``; Alembic (and with it
the mapped classes its environment loads) is imported only when the schema needs an upgrade.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def safe_url(url: str) -> str:
    """The URL with any password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"


def _make_sqlite_folder(url: str) -> None:
    """The default database lives in a per-user data folder that may not exist yet."""
    database = make_url(url).database
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)


def make_engine(url: str) -> Engine:
    """SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` (one writer, no upgrade deadlocks)."""
    if url.startswith("sqlite"):
        _make_sqlite_folder(url)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(.+)$", re.MULTILINE)


@cache
def script_heads() -> frozenset[str]:
    """The head revisions of the migration scripts, read from their text (no Alembic import)."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        found = _REVISION.search(text)
        if found is None:
            continue
        revisions.add(found.group(1))
        down = _DOWN_REVISION.search(text)
        if down is not None:
            downs.update(re.findall(r"['\"]([^'\"]+)['\"]", down.group(1)))
    return frozenset(revisions - downs)


def schema_is_current(engine: Engine) -> bool:
    """Whether the database is at the scripts' head(s); any doubt (no table yet, an error) says no."""
    try:
        with engine.connect() as conn:
            stored = {row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))}
    except Exception:
        return False
    heads = script_heads()
    return bool(heads) and stored == heads


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (idempotent; safe with concurrent starters).

    Alembic is loaded and run only when the stored revision differs from the scripts' head: a
    store opened on a current schema (every CLI triage) pays one query, not the migration check.
    """
    if schema_is_current(engine):
        return
    from alembic import command
    from alembic.config import Config

    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(7431001)"))
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
