"""A SQLite file through the ``sqlite3`` module: its guard, its settings and the triage write.

No SQLAlchemy here, for two callers. The service's writer stores finished triages on the SQLite
connection of a SQLAlchemy transaction (``Store.record_triages``): the same statements through
SQLAlchemy's execution layer cost it most of its CPU per request. A cold ``tcfl triage`` stores
its result without importing SQLAlchemy at all (``record``), when the file exists at the
current schema; otherwise SQLAlchemy opens it (``app.store.record.record_to``: created, migrated).
The rows are ``app.store.rows``'s, as the Core path writes them; the schema is
``app.store.tables``'s (a test holds the column lists below to it, and both paths to one result).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from app.store.rows import (
    StoredTriage,
    Submission,
    link_rows,
    request_row,
    script_row,
    sha256_text,
    split_handed,
    stored,
    triage_rows,
    utcnow,
)

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
MARKER_SUFFIX = ".created"  # next to a SQLite database: it existed here, so a missing file is a loss
# every connection to a SQLite store, whichever module opens it
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
    "PRAGMA foreign_keys=ON",
    "PRAGMA synchronous=NORMAL",
)


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


# -- the triage write -------------------------------------------------------------------------

# The columns each INSERT names, in the table's order; the values are ``app.store.rows``'s.
COLUMNS: dict[str, tuple[str, ...]] = {
    "scripts": ("sha256", "size", "content_z", "created_at"),
    "triage_requests": (
        "test_id",
        "status",
        "options",
        "log_z",
        "log_sha256",
        "error",
        "created_at",
        "updated_at",
    ),
    "request_scripts": ("request_id", "position", "script_id", "path"),
    "results": ("request_id", "data", "created_at"),
    "analysis_snapshots": (
        "request_id",
        "version",
        "summary_z",
        "signature",
        "error_text",
        "ranker",
        "top_path",
        "log_lines",
        "created_at",
    ),
    "log_chunks": ("request_id", "chunk", "first_line", "line_count", "text_z", "marks"),
}
# Columns whose values SQLAlchemy's types convert on SQLite: JSON is stored as ``json.dumps``'s
# text, a timestamp as ``YYYY-MM-DD HH:MM:SS.ffffff`` (its zone dropped: they are all UTC).
JSON_COLUMNS = frozenset({("triage_requests", "options"), ("results", "data"), ("log_chunks", "marks")})
TIME_COLUMNS = frozenset({"created_at", "updated_at"})
_INSERT = {
    table: f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    for table, columns in COLUMNS.items()
}
_INSERT_SCRIPT = _INSERT["scripts"] + " ON CONFLICT (sha256) DO NOTHING"
_SCRIPT_CHUNK = 500  # hashes per lookup (SQLite's limit on parameters is 999 in old builds)


def sqlite_time(value: datetime) -> str:
    """A timestamp as SQLAlchemy's SQLite ``DateTime`` stores it."""
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"
    )


def _converter(table: str, column: str) -> Any:
    if (table, column) in JSON_COLUMNS:
        return json.dumps
    return sqlite_time if column in TIME_COLUMNS else None


# each table's columns with the conversion its values take (None: stored as given)
_PAIRS = {table: tuple((c, _converter(table, c)) for c in columns) for table, columns in COLUMNS.items()}


def _values(table: str, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A row's values in the INSERT's column order, as SQLite stores them."""
    return tuple(
        [
            value if convert is None or value is None else convert(value)
            for column, convert in _PAIRS[table]
            for value in (row[column],)
        ]
    )


def _insert_many(db: sqlite3.Connection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    if rows:
        db.executemany(_INSERT[table], [_values(table, row) for row in rows])


def scripts_ids(db: sqlite3.Connection, contents: Sequence[str]) -> dict[str, int]:
    """As ``app.store.record.scripts_ids``: unseen contents inserted, hash -> script id."""
    unique = {sha256_text(c): c for c in contents}
    hashes = list(unique)
    ids: dict[str, int] = {}
    for start in range(0, len(hashes), _SCRIPT_CHUNK):
        chunk = hashes[start : start + _SCRIPT_CHUNK]
        lookup = f"SELECT sha256, id FROM scripts WHERE sha256 IN ({', '.join('?' * len(chunk))})"
        known = dict(db.execute(lookup, chunk).fetchall())
        missing = [h for h in chunk if h not in known]
        if missing:
            db.executemany(_INSERT_SCRIPT, [_values("scripts", script_row(unique[h], h)) for h in missing])
            again = f"SELECT sha256, id FROM scripts WHERE sha256 IN ({', '.join('?' * len(missing))})"
            known.update(db.execute(again, missing).fetchall())
        ids.update(known)
    return ids


def write_triages(
    db: sqlite3.Connection, items: Sequence[tuple[Submission, dict[str, Any]]]
) -> list[StoredTriage]:
    """Finished triages, as ``app.store.record.record_triages`` stores them, inside the caller's
    transaction on ``db`` (a connection to the store's SQLite file)."""
    if not items:
        return []
    handed = [split_handed(data) for _, data in items]  # the failure's id, when a worker computed it
    split = [(case, rest, snapshot) for (case, _), (rest, snapshot, _) in zip(items, handed, strict=True)]
    ids = scripts_ids(db, [s.content for case, _, _ in split for s in case.scripts])
    now = utcnow()
    insert_request = _INSERT["triage_requests"]
    request_ids: list[int] = []
    for case, _, _ in split:  # one by one: each row's id is its own statement's
        cursor = db.execute(insert_request, _values("triage_requests", request_row(case, "done", now)))
        request_ids.append(int(cursor.lastrowid or 0))
    links = [
        link
        for (case, _, _), rid in zip(split, request_ids, strict=True)
        for link in link_rows(case, rid, ids)
    ]
    results, snapshots, chunks = triage_rows(split, request_ids, [h[2] for h in handed])
    _insert_many(db, "request_scripts", links)
    _insert_many(db, "results", results)
    _insert_many(db, "analysis_snapshots", snapshots)
    _insert_many(db, "log_chunks", chunks)
    return [stored(case, rid, now, data) for (case, data, _), rid in zip(split, request_ids, strict=True)]


# -- a CLI triage's write ---------------------------------------------------------------------

# A plain file URL: SQLAlchemy passes the part after ``sqlite:///`` to sqlite3 as the file name.
# Anything else (options, ``file:`` names, memory, escapes, ``~``) is left to SQLAlchemy.
_FILE_URL = re.compile(r"^sqlite(?:\+pysqlite)?:///(?P<path>[^?#%~]+)$")


def file_of(url: str) -> Path | None:
    """The SQLite file a plain ``sqlite:///`` URL names, or None for any other URL."""
    found = _FILE_URL.match(url)
    if found is None or found["path"] == ":memory:" or found["path"].startswith("file:"):
        return None
    return Path(os.path.abspath(found["path"]))


def safe_url(url: str) -> str:
    """The URL for messages, any password hidden (``app.store.engine.safe_url``); a plain SQLite
    file's has none, and is shown without loading SQLAlchemy."""
    if file_of(url) is not None:
        return url
    from app.store.engine import safe_url as hidden

    return hidden(url)


def connect(found: SqliteFile) -> sqlite3.Connection:
    """A connection to an existing file (``mode=rw``: never a new one), with the store's settings."""
    found.before_connect()
    db = sqlite3.connect(
        f"file:{quote(found.path.as_posix())}?mode=rw",
        uri=True,
        timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,  # transactions are ours: BEGIN IMMEDIATE, COMMIT
        check_same_thread=False,
    )
    try:
        found.opened()
        for pragma in PRAGMAS:
            db.execute(pragma)
    except BaseException:
        db.close()
        raise
    return db


def schema_is_current(db: sqlite3.Connection) -> bool:
    """Whether the database is at the migration scripts' head(s); any doubt says no."""
    try:
        stored_heads = {row[0] for row in db.execute("SELECT version_num FROM alembic_version")}
    except sqlite3.Error:
        return False
    heads = script_heads()
    return bool(heads) and stored_heads == heads


def record(url: str, case: Submission, data: dict[str, Any]) -> StoredTriage:
    """Store one finished triage in the database at ``url``, in one transaction.

    A SQLite file at the current schema is written here, SQLAlchemy not imported; any other
    database, a new file or one behind the migrations goes through ``app.store.record.record_to``
    (which creates and migrates it).
    """
    path = file_of(url)
    if path is not None and path.is_file():
        found = SqliteFile(path, threading.Lock())
        db = connect(found)
        try:
            if schema_is_current(db):
                return _write_one(db, found, case, data)
        finally:
            db.close()
    from app.store.record import record_to

    return record_to(url, case, data)


@contextmanager
def transaction(db: sqlite3.Connection, found: SqliteFile | None) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` on ``db`` with what the engine's events add to every
    transaction (``app.store.engine.make_engine``): one writer of the file in this process at a
    time, and the file still the one opened, before the write and before the commit (removed
    meanwhile: not acknowledged into a file no later run sees)."""
    if found is not None:
        found.check()
        if not found.lock.acquire(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000):
            raise StoreUnavailable("the database is busy: no write slot within the busy timeout")
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
            if found is not None:
                found.check()
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    finally:
        if found is not None:
            found.lock.release()


def _write_one(
    db: sqlite3.Connection, found: SqliteFile, case: Submission, data: dict[str, Any]
) -> StoredTriage:
    with transaction(db, found):
        return write_triages(db, [(case, data)])[0]
