"""Storage: the SQLAlchemy models and the one class (``Store``) that reads and writes them.

Every change that must be all-or-nothing is one ``Store`` method with one transaction, so a
process killed at any instant leaves either the old state or the new one. The batch queue lives
in the same database (``batch_items``): claims use the database's own locking, so there is no
broker to run and nothing to keep in step with it.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Engine,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    func,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, sessionmaker

from app.analysis.model import Script

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
STATUSES = ("queued", "running", "done", "failed")
SQLITE_BUSY_TIMEOUT_MS = 30_000


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back without a zone; they were written in UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _iso(value: datetime | None) -> str | None:
    aware = _aware(value)
    return aware.isoformat() if aware else None


def _pack(text_value: str) -> bytes:
    return zlib.compress(text_value.encode("utf-8"), 6)


def _unpack(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8")


def _plain(message: str) -> str:
    """Error text goes into text columns, which cannot hold NUL on PostgreSQL."""
    return message.replace("\x00", "\\x00")


def sha256_text(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class Base(DeclarativeBase):
    pass


class ScriptRow(Base):
    """A script's content, stored once however many requests name it."""

    __tablename__ = "scripts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    size: Mapped[int] = mapped_column(Integer)
    content_z: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TriageRequestRow(Base):
    """One failure to triage, as submitted, with its defaults already resolved."""

    __tablename__ = "triage_requests"
    __table_args__ = (Index("ix_triage_requests_test_id_id", "test_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    test_id: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16), index=True)
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    log_z: Mapped[bytes] = mapped_column(LargeBinary)
    log_sha256: Mapped[str] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    scripts: Mapped[list[RequestScriptRow]] = relationship(
        order_by="RequestScriptRow.position", cascade="all, delete-orphan"
    )
    result: Mapped[ResultRow | None] = relationship(back_populates="request", uselist=False)


class RequestScriptRow(Base):
    """Which scripts a request named, under which path, in which order."""

    __tablename__ = "request_scripts"

    request_id: Mapped[int] = mapped_column(ForeignKey("triage_requests.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    script_id: Mapped[int] = mapped_column(ForeignKey("scripts.id"), index=True)
    path: Mapped[str] = mapped_column(String(1024))

    script: Mapped[ScriptRow] = relationship()


class ResultRow(Base):
    """A finished triage. Unique per request and per batch item: a retry can never write a second one."""

    __tablename__ = "results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    request_id: Mapped[int] = mapped_column(ForeignKey("triage_requests.id"), unique=True)
    batch_item_id: Mapped[int | None] = mapped_column(ForeignKey("batch_items.id"), unique=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    request: Mapped[TriageRequestRow] = relationship(back_populates="result")


class BatchRow(Base):
    __tablename__ = "batches"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String(16))
    input_sha256: Mapped[str | None] = mapped_column(String(64), index=True)
    total: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BatchItemRow(Base):
    """One queued case. ``locked_by``/``locked_at`` are the lease of the worker running it."""

    __tablename__ = "batch_items"
    __table_args__ = (
        UniqueConstraint("batch_id", "idx", name="uq_batch_items_batch_idx"),
        Index("ix_batch_items_status_id", "status", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    batch_id: Mapped[int] = mapped_column(ForeignKey("batches.id"))
    idx: Mapped[int] = mapped_column(Integer)
    request_id: Mapped[int] = mapped_column(ForeignKey("triage_requests.id"), unique=True)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    locked_by: Mapped[str | None] = mapped_column(String(200))
    locked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_by: Mapped[str | None] = mapped_column(String(200))
    error: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# --------------------------------------------------------------------------------------------
# Plain records handed out by the store
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submission:
    """A submitted triage, validated, its options resolved: what the pipeline needs, and a label.

    (A benchmark case with its known faults is ``app.eval.cases.Case``, another thing.)
    """

    scripts: tuple[Script, ...]
    log: str
    options: dict[str, Any]
    test_id: str | None = None


@dataclass(frozen=True)
class StoredTriage:
    """One stored triage: its request's state and, where it was read, the result's data.

    The API's and the dashboard's JSON are built from it in one place (``app.service.views``).
    """

    id: int
    status: str
    test_id: str | None
    created_at: datetime | None
    options: dict[str, Any]
    error: str | None
    result: dict[str, Any] | None = None  # None until done, and in list pages (not read there)

    @property
    def summary_index(self) -> dict[str, Any]:
        """The options a list row shows (level, k, trace, ranker)."""
        return {key: self.options.get(key) for key in ("level", "k", "trace", "ranker")}


@dataclass(frozen=True)
class Claim:
    """A batch item this worker now holds the lease on."""

    item_id: int
    batch_id: int
    index: int
    request_id: int
    attempts: int


@dataclass(frozen=True)
class Page:
    items: list[Any]  # StoredTriage from the store; the dashboard's search pages its own rows
    next_cursor: int | None


# --------------------------------------------------------------------------------------------
# Engine
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Store
# --------------------------------------------------------------------------------------------


class Store:
    """All reads and writes. Thread-safe (one session per call); call it via a thread from async code."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @classmethod
    def open(cls, url: str, *, run_migrations: bool = True) -> Store:
        engine = make_engine(url)
        if run_migrations:
            migrate(engine)
        return cls(engine)

    def close(self) -> None:
        self.engine.dispose()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def _tx(self) -> Iterator[Session]:
        with self._sessions() as session, session.begin():
            yield session

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    # -- requests and results -----------------------------------------------------------------

    def create_request(self, case: Submission, *, status: str = "running") -> int:
        with self._tx() as session:
            return self._add_request(session, case, status).id

    def record_triage(self, case: Submission, data: dict[str, Any]) -> StoredTriage:
        """Store a finished synchronous triage (request, result, snapshot) in one transaction.

        A fast ``POST /v1/triage`` writes once, after the analysis: one commit, not one to mark
        it running and another to store its result (``jobs.triage_now``).
        """
        data, snapshot = _split_snapshot(data)
        with self._tx() as session:
            request = self._add_request(session, case, "done")
            session.add(ResultRow(request_id=request.id, data=data))
            _write_snapshot(session, request.id, snapshot, data)
            session.flush()
            return stored_triage(request, data)

    def record_failure(self, case: Submission, error: str) -> int:
        """Store a synchronous triage that failed (its input kept for a look), in one transaction."""
        with self._tx() as session:
            request = self._add_request(session, case, "failed")
            request.error = _plain(error)
            return request.id

    def save_result(self, request_id: int, data: dict[str, Any]) -> StoredTriage:
        """Store a slow triage's result and snapshot into its running request, and mark it done."""
        data, snapshot = _split_snapshot(data)
        with self._tx() as session:
            request = session.get_one(TriageRequestRow, request_id)
            session.add(ResultRow(request_id=request_id, data=data))
            _write_snapshot(session, request_id, snapshot, data)
            request.status = "done"
            request.updated_at = utcnow()
            session.flush()
            return stored_triage(request, data)

    def fail_request(self, request_id: int, error: str) -> None:
        with self._tx() as session:
            request = session.get_one(TriageRequestRow, request_id)
            request.status = "failed"
            request.error = _plain(error)
            request.updated_at = utcnow()

    def touch_requests(self, request_ids: Sequence[int]) -> None:
        """Heartbeat of synchronous triages in flight: a fresh ``updated_at`` keeps the sweep off them."""
        if not request_ids:
            return
        with self._tx() as session:
            session.execute(
                update(TriageRequestRow)
                .where(TriageRequestRow.id.in_(list(request_ids)), TriageRequestRow.status == "running")
                .values(updated_at=utcnow())
            )

    def fail_interrupted(self, *, older_than_s: float) -> int:
        """Mark synchronous triages left running by a stopped process (batch items requeue instead)."""
        cutoff = utcnow() - timedelta(seconds=older_than_s)
        in_batches = select(BatchItemRow.request_id)
        with self._tx() as session:
            result = session.execute(
                update(TriageRequestRow)
                .where(
                    TriageRequestRow.status == "running",
                    TriageRequestRow.updated_at < cutoff,
                    TriageRequestRow.id.not_in(in_batches),
                )
                .values(
                    status="failed",
                    error="interrupted: the server stopped while triaging",
                    updated_at=utcnow(),
                )
            )
            return int(result.rowcount or 0)

    def get_triage(self, request_id: int) -> StoredTriage | None:
        with self._tx() as session:
            request = session.get(TriageRequestRow, request_id)
            if request is None:
                return None
            return stored_triage(request, request.result.data if request.result else None)

    def load_case(self, request_id: int) -> Submission:
        with self._tx() as session:
            request = session.get_one(TriageRequestRow, request_id)
            scripts = tuple(
                Script(path=link.path, content=_unpack(link.script.content_z)) for link in request.scripts
            )
            return Submission(
                scripts=scripts,
                log=_unpack(request.log_z),
                options=dict(request.options),
                test_id=request.test_id,
            )

    def list_triage(
        self,
        *,
        limit: int,
        offset: int = 0,
        cursor: int | None = None,
        test_id: str | None = None,
        status: str | None = None,
    ) -> Page:
        """Newest first. ``cursor`` is the last id of the previous page (stable under inserts)."""
        query = select(TriageRequestRow).order_by(TriageRequestRow.id.desc())
        if cursor is not None:
            query = query.where(TriageRequestRow.id < cursor)
        if test_id is not None:
            query = query.where(TriageRequestRow.test_id == test_id)
        if status is not None:
            query = query.where(TriageRequestRow.status == status)
        with self._tx() as session:
            rows = session.scalars(query.offset(offset).limit(limit + 1)).all()
            items = [stored_triage(r, None) for r in rows[:limit]]
        return Page(items=items, next_cursor=items[-1].id if len(rows) > limit else None)

    # -- batches --------------------------------------------------------------------------------

    def create_batch(
        self, cases: Sequence[Submission], *, source: str, input_sha256: str | None = None
    ) -> int:
        """Batch, requests and items in one transaction: once this returns, every case is queued."""
        with self._tx() as session:
            ids = self._script_ids(session, [s.content for c in cases for s in c.scripts])
            batch = BatchRow(source=source, input_sha256=input_sha256, total=len(cases))
            session.add(batch)
            session.flush()
            for index, case in enumerate(cases):
                request = self._add_request(session, case, "queued", script_ids=ids)
                session.add(
                    BatchItemRow(batch_id=batch.id, idx=index, request_id=request.id, status="queued")
                )
            return batch.id

    def find_batch(self, input_sha256: str) -> int | None:
        """The newest batch submitted with this input hash (``tcfl batch --resume``)."""
        query = (
            select(BatchRow.id)
            .where(BatchRow.input_sha256 == input_sha256)
            .order_by(BatchRow.id.desc())
            .limit(1)
        )
        with self._tx() as session:
            return session.scalar(query)

    def get_batch(self, batch_id: int, *, with_items: bool = True) -> dict[str, Any] | None:
        with self._tx() as session:
            batch = session.get(BatchRow, batch_id)
            if batch is None:
                return None
            counts = self._item_counts(session, [batch_id]).get(batch_id, {})
            view = _batch_view(batch, counts)
            if with_items:
                rows = session.scalars(
                    select(BatchItemRow).where(BatchItemRow.batch_id == batch_id).order_by(BatchItemRow.idx)
                ).all()
                view["items"] = [_item_view(r) for r in rows]
            return view

    def list_batches(self, *, limit: int, offset: int = 0) -> list[dict[str, Any]]:
        with self._tx() as session:
            batches = session.scalars(
                select(BatchRow).order_by(BatchRow.id.desc()).offset(offset).limit(limit)
            ).all()
            counts = self._item_counts(session, [b.id for b in batches])
            return [_batch_view(b, counts.get(b.id, {})) for b in batches]

    def batch_results(self, batch_id: int) -> list[dict[str, Any]]:
        """Every item of a batch in index order, with its result when it has one."""
        query = (
            select(BatchItemRow, TriageRequestRow.test_id, ResultRow.data)
            .join(TriageRequestRow, TriageRequestRow.id == BatchItemRow.request_id)
            .outerjoin(ResultRow, ResultRow.batch_item_id == BatchItemRow.id)
            .where(BatchItemRow.batch_id == batch_id)
            .order_by(BatchItemRow.idx)
        )
        with self._tx() as session:
            out = []
            for item, test_id, data in session.execute(query).all():
                view = _item_view(item)
                view["test_id"] = test_id
                view["result"] = {**data, "id": item.request_id} if data is not None else None
                out.append(view)
            return out

    def queue_depth(self) -> dict[str, int]:
        query = (
            select(BatchItemRow.status, func.count())
            .where(BatchItemRow.status.in_(("queued", "running")))
            .group_by(BatchItemRow.status)
        )
        with self._tx() as session:
            depth = {"queued": 0, "running": 0}
            depth.update({status: n for status, n in session.execute(query).all()})
            return depth

    # -- the queue ------------------------------------------------------------------------------

    def claim(self, worker_id: str, *, lease_s: float, batch_id: int | None = None) -> Claim | None:
        """Take the oldest queued item, or one whose lease ran out, and mark it running under our lease."""
        now = utcnow()
        claimable = (BatchItemRow.status == "queued") | (
            (BatchItemRow.status == "running") & (BatchItemRow.locked_at < now - timedelta(seconds=lease_s))
        )
        pick = select(BatchItemRow.id).where(claimable).order_by(BatchItemRow.id).limit(1)
        if batch_id is not None:
            pick = pick.where(BatchItemRow.batch_id == batch_id)
        values = {
            "status": "running",
            "locked_by": worker_id,
            "locked_at": now,
            "attempts": BatchItemRow.attempts + 1,
            "updated_at": now,
        }
        returning = (
            BatchItemRow.id,
            BatchItemRow.batch_id,
            BatchItemRow.idx,
            BatchItemRow.request_id,
            BatchItemRow.attempts,
        )
        with self._tx() as session:
            if self.dialect == "postgresql":
                item_id = session.scalar(pick.with_for_update(skip_locked=True))
                if item_id is None:
                    return None
                stmt = update(BatchItemRow).where(BatchItemRow.id == item_id)
            else:
                stmt = update(BatchItemRow).where(BatchItemRow.id == pick.scalar_subquery())
            row = session.execute(stmt.values(**values).returning(*returning)).first()
            if row is None:
                return None
            self._set_request_status(session, [row[3]], "running")
            return Claim(item_id=row[0], batch_id=row[1], index=row[2], request_id=row[3], attempts=row[4])

    def heartbeat(self, worker_id: str, item_ids: Sequence[int]) -> None:
        """Renew our leases so that live, slow items are not taken over."""
        if not item_ids:
            return
        now = utcnow()
        with self._tx() as session:
            session.execute(
                update(BatchItemRow)
                .where(
                    BatchItemRow.id.in_(list(item_ids)),
                    BatchItemRow.locked_by == worker_id,
                    BatchItemRow.status == "running",
                )
                .values(locked_at=now)
            )

    def release_own(self, worker_id: str) -> int:
        """Requeue items this worker id left running (a crash, or a shutdown mid-item)."""
        with self._tx() as session:
            held = select(BatchItemRow.request_id).where(
                BatchItemRow.locked_by == worker_id, BatchItemRow.status == "running"
            )
            self._set_request_status(session, list(session.scalars(held)), "queued")
            result = session.execute(
                update(BatchItemRow)
                .where(BatchItemRow.locked_by == worker_id, BatchItemRow.status == "running")
                .values(status="queued", locked_by=None, locked_at=None, updated_at=utcnow())
            )
            return int(result.rowcount or 0)

    def complete_item(self, claim: Claim, data: dict[str, Any], *, worker_id: str) -> bool:
        """Result, snapshot and item status in one transaction. False when the item was already finished."""
        data, snapshot = _split_snapshot(data)
        try:
            with self._tx() as session:
                item = session.get_one(BatchItemRow, claim.item_id, with_for_update=True)
                if item.status in ("done", "failed"):
                    return False
                now = utcnow()
                session.add(ResultRow(request_id=item.request_id, batch_item_id=item.id, data=data))
                _write_snapshot(session, item.request_id, snapshot, data)
                item.status = "done"
                item.error = None
                item.locked_by = None
                item.locked_at = None
                item.finished_by = worker_id
                item.updated_at = now
                session.execute(
                    update(TriageRequestRow)
                    .where(TriageRequestRow.id == item.request_id)
                    .values(status="done", updated_at=now)
                )
        except IntegrityError:
            return False
        return True

    def fail_item(self, claim: Claim, error: str, *, final: bool, worker_id: str) -> None:
        """Record an error; a final one fails the item, otherwise it goes back to the queue."""
        with self._tx() as session:
            item = session.get_one(BatchItemRow, claim.item_id, with_for_update=True)
            if item.status in ("done", "failed"):
                return
            now = utcnow()
            error = _plain(error)
            item.error = error
            item.locked_by = None
            item.locked_at = None
            item.updated_at = now
            item.status = "failed" if final else "queued"
            if final:
                item.finished_by = worker_id
                session.execute(
                    update(TriageRequestRow)
                    .where(TriageRequestRow.id == item.request_id)
                    .values(status="failed", error=error, updated_at=now)
                )
            else:
                self._set_request_status(session, [item.request_id], "queued")

    def open_items(self, batch_id: int) -> int:
        with self._tx() as session:
            return (
                session.scalar(
                    select(func.count())
                    .select_from(BatchItemRow)
                    .where(BatchItemRow.batch_id == batch_id, BatchItemRow.status.in_(("queued", "running")))
                )
                or 0
            )

    # -- helpers ----------------------------------------------------------------------------------

    def _add_request(
        self, session: Session, case: Submission, status: str, *, script_ids: dict[str, int] | None = None
    ) -> TriageRequestRow:
        ids = (
            script_ids
            if script_ids is not None
            else self._script_ids(session, [s.content for s in case.scripts])
        )
        now = utcnow()
        request = TriageRequestRow(
            test_id=case.test_id,
            status=status,
            options=case.options,
            log_z=_pack(case.log),
            log_sha256=sha256_text(case.log),
            created_at=now,
            updated_at=now,
        )
        request.scripts = [
            RequestScriptRow(position=i, path=s.path, script_id=ids[sha256_text(s.content)])
            for i, s in enumerate(case.scripts)
        ]
        session.add(request)
        session.flush()
        return request

    def _script_ids(self, session: Session, contents: Sequence[str]) -> dict[str, int]:
        """Insert unseen contents (racing inserts of the same content are harmless) and map hash -> id."""
        unique = {sha256_text(c): c for c in contents}
        if not unique:
            return {}
        if self.dialect == "postgresql":  # each dialect loads when used: postgresql's costs ~20 ms
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        hashes = list(unique)
        ids: dict[str, int] = {}
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            known = dict(
                session.execute(
                    select(ScriptRow.sha256, ScriptRow.id).where(ScriptRow.sha256.in_(chunk))
                ).all()
            )
            missing = [h for h in chunk if h not in known]
            if missing:
                rows = [
                    {
                        "sha256": h,
                        "size": len(unique[h].encode("utf-8")),
                        "content_z": _pack(unique[h]),
                        "created_at": utcnow(),
                    }
                    for h in missing
                ]
                session.execute(
                    dialect_insert(ScriptRow).values(rows).on_conflict_do_nothing(index_elements=["sha256"])
                )
                known.update(
                    session.execute(
                        select(ScriptRow.sha256, ScriptRow.id).where(ScriptRow.sha256.in_(missing))
                    ).all()
                )
            ids.update(known)
        return ids

    @staticmethod
    def _set_request_status(session: Session, request_ids: Sequence[int], status: str) -> None:
        """A batch item's request mirrors the item, so listings show where it stands."""
        if request_ids:
            session.execute(
                update(TriageRequestRow)
                .where(TriageRequestRow.id.in_(list(request_ids)))
                .values(status=status, updated_at=utcnow())
            )

    @staticmethod
    def _item_counts(session: Session, batch_ids: Sequence[int]) -> dict[int, dict[str, int]]:
        if not batch_ids:
            return {}
        rows = session.execute(
            select(BatchItemRow.batch_id, BatchItemRow.status, func.count())
            .where(BatchItemRow.batch_id.in_(list(batch_ids)))
            .group_by(BatchItemRow.batch_id, BatchItemRow.status)
        ).all()
        counts: dict[int, dict[str, int]] = {}
        for batch_id, status, n in rows:
            counts.setdefault(batch_id, {})[status] = n
        return counts


def _split_snapshot(data: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A runner hands the analysis snapshot beside the result's data; it is stored in its own tables."""
    from app.service.snapshots import SNAPSHOT_KEY

    if SNAPSHOT_KEY not in data:
        return data, None
    rest = dict(data)
    return rest, rest.pop(SNAPSHOT_KEY)


def _write_snapshot(session: Session, request_id: int, snapshot: Any, data: dict[str, Any]) -> None:
    from app.service import snapshots

    snapshots.write(session, request_id, snapshot, data)


# --------------------------------------------------------------------------------------------
# Rows -> records (batches still as the JSON the API answers with)
# --------------------------------------------------------------------------------------------


def stored_triage(request: TriageRequestRow, data: dict[str, Any] | None) -> StoredTriage:
    return StoredTriage(
        id=request.id,
        status=request.status,
        test_id=request.test_id,
        created_at=_aware(request.created_at),
        options=dict(request.options),
        error=request.error,
        result=data,
    )


def batch_status(counts: dict[str, int]) -> str:
    """Derived from the items, so it can never disagree with them."""
    open_items = counts.get("queued", 0) + counts.get("running", 0)
    if open_items == 0:
        return "done"
    if counts.get("running", 0) == 0 and counts.get("done", 0) == 0 and counts.get("failed", 0) == 0:
        return "queued"
    return "running"


def _batch_view(batch: BatchRow, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "id": batch.id,
        "status": batch_status(counts),
        "source": batch.source,
        "created_at": _iso(batch.created_at),
        "total": batch.total,
        "queued": counts.get("queued", 0),
        "running": counts.get("running", 0),
        "done": counts.get("done", 0),
        "failed": counts.get("failed", 0),
    }


def _item_view(item: BatchItemRow) -> dict[str, Any]:
    return {
        "index": item.idx,
        "status": item.status,
        "result_id": item.request_id if item.status == "done" else None,
        "error": item.error,
        "attempts": item.attempts,
    }
