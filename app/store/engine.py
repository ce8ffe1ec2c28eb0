"""The database engine and the schema check: SQLAlchemy Core only, no ORM and no Alembic import.

Alembic (and with it the mapped classes its environment loads) is imported only when the schema
needs an upgrade. The SQLite file's guard and settings are ``app.store.sqlite_plain``'s, shared
with the writes that go through the ``sqlite3`` module (a CLI triage at the current schema
imports neither this module nor SQLAlchemy).
"""

from __future__ import annotations

import logging
import threading
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url

from app.store.sqlite_plain import (  # noqa: F401  (re-exported: the engine's part of the store API)
    MARKER_SUFFIX,
    MIGRATIONS_DIR,
    PRAGMAS,
    SQLITE_BUSY_TIMEOUT_MS,
    DatabaseMissing,
    SqliteFile,
    StoreUnavailable,
    script_heads,
)

log = logging.getLogger(__name__)

_FILES: weakref.WeakKeyDictionary[Engine, SqliteFile] = weakref.WeakKeyDictionary()
_LOCKS: dict[str, threading.Lock] = {}  # one writer per database file in this process
_LOCKS_GUARD = threading.Lock()


def sqlite_file(engine: Engine) -> SqliteFile | None:
    """The SQLite file an engine writes (None: PostgreSQL, or an in-memory database)."""
    return _FILES.get(engine)


def _sqlite_path(url: str) -> Path | None:
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).expanduser().absolute()


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
    """SQLite gets WAL, a busy timeout, ``BEGIN IMMEDIATE`` (no upgrade deadlocks) behind one
    in-process writer lock, and the checks of ``SqliteFile``."""
    if url.startswith("sqlite"):
        _make_sqlite_folder(url)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        path = _sqlite_path(url)
        if path is not None:
            _watch_file(engine, path)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None
            cursor = dbapi_conn.cursor()
            for pragma in PRAGMAS:
                cursor.execute(pragma)
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            found = _FILES.get(conn.engine)
            if found is None:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return
            found.check()
            if not found.lock.acquire(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000):
                raise StoreUnavailable("the database is busy: no write slot within the busy timeout")
            conn.info["tcfl_write_lock"] = found.lock
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            except BaseException:
                _release(conn.info)
                raise

        @event.listens_for(engine, "commit")
        def _on_commit(conn: Any) -> None:
            found = _FILES.get(conn.engine)
            if found is not None:
                # removed while this transaction ran: refused, so it is not acknowledged into a file
                # no restart will see (the rollback that follows releases the lock)
                found.check()
            _release(conn.info)

        @event.listens_for(engine, "rollback")
        def _on_rollback(conn: Any) -> None:
            _release(conn.info)

        @event.listens_for(engine.pool, "checkin")
        def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
            _release(record.info)  # a connection given back mid-transaction (an error) holds nothing

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def _release(info: dict[str, Any]) -> None:
    """Let the next transaction of this file begin. The commit and rollback events run just before
    the statement is sent: the next ``BEGIN IMMEDIATE`` may wait that long in the busy handler."""
    lock = info.pop("tcfl_write_lock", None)
    if lock is not None:
        lock.release()


def _watch_file(engine: Engine, path: Path) -> None:
    """Connections open the file ``SqliteFile`` knows, and never create one after the first."""
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(str(path), threading.Lock())
    found = SqliteFile(path, lock)
    _FILES[engine] = found

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> None:
        if not found.before_connect():
            cargs[:] = [f"file:{quote(path.as_posix())}?mode=rw"]
            cparams["uri"] = True

    @event.listens_for(engine, "connect")
    def _opened(_dbapi_conn: Any, _record: Any) -> None:
        found.opened()


def probe_write(engine: Engine) -> None:
    """A small committed write that needs no table: raises when the database cannot take a write
    (removed, read-only, disk full, unreachable). SQLite rewrites its ``user_version`` with itself
    (one page into the WAL); PostgreSQL takes a transaction id (refused on a read-only server)."""
    with engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            version = int(conn.exec_driver_sql("PRAGMA user_version").scalar() or 0)
            conn.exec_driver_sql(f"PRAGMA user_version = {version}")
        else:
            conn.execute(text("SELECT txid_current()"))


def storage_error(exc: BaseException) -> StoreUnavailable | None:
    """A database error as what the client hears: disk full (507) or unavailable (503); None when
    ``exc`` is not the database's."""
    if isinstance(exc, StoreUnavailable):
        return exc
    from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, SQLAlchemyError

    if not isinstance(exc, SQLAlchemyError) or isinstance(exc, DataError):
        return None  # a value the database refuses is the input's fault: the service answers 422
    if isinstance(exc, IntegrityError):  # two writers raced on one row: nothing wrong with storage
        return StoreUnavailable(
            "the request conflicted with a concurrent write: nothing of it was stored; retry", lost=False
        )
    orig = getattr(exc, "orig", None)
    words = str(orig if orig is not None else exc).lower()
    if (
        "disk is full" in words
        or "no space left" in words
        or getattr(orig, "pgcode", None) == "53100"
        or getattr(orig, "sqlite_errorname", "") == "SQLITE_FULL"
    ):
        return StoreUnavailable(
            "the database's disk is full: nothing of this request was stored", disk_full=True
        )
    if isinstance(exc, DBAPIError):
        first = str(orig if orig is not None else exc).strip().splitlines()[0][:200] if words.strip() else ""
        kind = type(orig).__name__ if orig is not None else type(exc).__name__
        return StoreUnavailable(
            f"the database could not store this request ({kind}: {first}): "
            "nothing of it was stored; retry later"
        )
    return None


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
