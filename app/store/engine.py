"""The database engine and the schema check: SQLAlchemy Core only, no ORM and no Alembic import.

A CLI triage opens the store through this module and ``app.store.record``; Alembic (and with it
the mapped classes its environment loads) is imported only when the schema needs an upgrade.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
MARKER_SUFFIX = ".created"  # next to a SQLite database: it existed here, so a missing file is a loss


class StoreUnavailable(RuntimeError):
    """The database cannot take this write (or any): nothing of the request was stored.

    ``disk_full`` tells the service to answer 507 rather than 503.
    """

    def __init__(self, message: str, *, disk_full: bool = False, lost: bool = True) -> None:
        super().__init__(message)
        self.disk_full = disk_full
        self.lost = lost  # the storage itself failed (``/healthz`` hears of it), not a race


class DatabaseMissing(StoreUnavailable):
    """A SQLite database this machine had is gone: refused, never replaced by an empty one."""


class SqliteFile:
    """The SQLite file an engine opened, known by its inode, and the one writer allowed at a time.

    A file removed (or replaced) under a running server would take writes into an unlinked inode
    that no restart sees again, so every transaction first checks that the path still names the
    inode opened (one ``stat``), and refuses when it does not. Connections after the first open
    the file with ``mode=rw``: they never create a new, empty file where the database was. The
    marker file records that the database existed, so a restart refuses a missing file too.

    Transactions in this process queue on one lock (``lock``, one per file) before their
    ``BEGIN IMMEDIATE``: alone, that statement lets waiting writers poll SQLite's busy handler, and
    under load some waited out the whole busy timeout and failed with "database is locked" while
    others kept winning.
    """

    def __init__(self, path: Path, lock: threading.Lock) -> None:
        self.path = path
        self.marker = path.with_name(path.name + MARKER_SUFFIX)
        self.inode: tuple[int, int] | None = None
        self.lock = lock

    def before_connect(self) -> bool:
        """Whether SQLite may create the file (the first connection, no marker of an earlier one)."""
        if self.inode is not None:
            self.check()
            return False
        if self.path.exists():
            return True
        if self.marker.exists():
            raise DatabaseMissing(
                f"the SQLite database {self.path} is missing, but {self.marker} says it was created "
                f"there ({_marker_text(self.marker)}): restore the file, or remove the marker to "
                "start with an empty database"
            )
        return True

    def opened(self) -> None:
        """Record the inode of the file just opened (and the marker, the first time)."""
        if self.inode is not None:
            return
        found = os.stat(self.path)
        self.inode = (found.st_dev, found.st_ino)
        if not self.marker.exists():
            stamp = f"{datetime.now(UTC).isoformat()} inode {found.st_ino}\n"
            try:
                self.marker.write_text(stamp, encoding="utf-8")
            except OSError as exc:  # a read-only folder: the database still opens, unguarded on restart
                log.warning(
                    "no marker written beside %s (%s): a missing file will not be noticed", self.path, exc
                )

    def check(self) -> None:
        """``StoreUnavailable`` when the path no longer names the file opened."""
        if self.inode is None:
            return
        problem = None
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            problem = f"the SQLite database {self.path} was removed while in use"
        except OSError as exc:
            problem = f"the SQLite database {self.path} cannot be read: {exc.strerror}"
        else:
            if (found.st_dev, found.st_ino) != self.inode:
                problem = f"the SQLite database {self.path} was replaced while in use"
        if problem is not None:
            raise StoreUnavailable(
                f"{problem}: nothing is written until it is restored and the process restarted"
            )


def _marker_text(marker: Path) -> str:
    try:
        return marker.read_text(encoding="utf-8").strip()[:100]
    except OSError:
        return "unreadable marker"


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
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
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
