"""Storage: the SQLAlchemy models and the one class (``Store``) that reads and writes them.

Every change that must be all-or-nothing is one ``Store`` method with one transaction, so a
process killed at any instant leaves either the old state or the new one. The batch queue lives
in the same database (``batch_items``): claims use the database's own locking, so there is no
broker to run and nothing to keep in step with it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, QueryableAttribute, Session, relationship, sessionmaker

from app.analysis.model import Script
from app.store import record, sqlite_plain, tables
from app.store.engine import (  # noqa: F401  (re-exported: the store's engine and schema API)
    MIGRATIONS_DIR,
    SQLITE_BUSY_TIMEOUT_MS,
    DatabaseMissing,
    StoreUnavailable,
    make_engine,
    migrate,
    probe_write,
    safe_url,
    schema_is_current,
    script_heads,
    sqlite_file,
    storage_error,
)
from app.store.record import StoredTriage, Submission, sha256_text  # noqa: F401  (re-exported)
from app.store.record import aware as _aware
from app.store.record import pack as _pack  # noqa: F401  (history_store's)
from app.store.record import plain as _plain
from app.store.tables import utcnow

STATUSES = ("queued", "running", "done", "failed")
PROBE_EVERY_S = 2.0  # /healthz writes at most this often; between probes it answers the last one
FAILURE_MEMORY_S = 60.0  # a failed write keeps /healthz degraded this long unless a write succeeds


def _iso(value: datetime | None) -> str | None:
    aware = _aware(value)
    return aware.isoformat() if aware else None


def _view(row: Any, names: str) -> dict[str, Any]:
    """A row's attributes ``names`` (space-separated, as ``namedtuple``'s field names) as a dict in
    that order, datetimes as ISO text (``_iso``)."""
    values = {name: getattr(row, name) for name in names.split()}
    return {name: _iso(value) if isinstance(value, datetime) else value for name, value in values.items()}


def values_by(
    session: Session, key: QueryableAttribute[Any], value: QueryableAttribute[Any], keys: list[Any]
) -> dict[Any, Any]:
    """``{key: value}`` of the rows whose ``key`` is one of ``keys``, in one ``IN`` query."""
    return dict(session.execute(select(key, value).where(key.in_(keys))).all())


def _unpack(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8")


class Base(DeclarativeBase):
    """The mapped classes; their tables are the Core ones of ``app.store.tables`` (one schema)."""

    metadata = tables.metadata


class ScriptRow(Base):
    """A script's content, stored once however many requests name it."""

    __table__ = tables.scripts

    id: Mapped[int]
    sha256: Mapped[str]
    size: Mapped[int]
    content_z: Mapped[bytes]
    created_at: Mapped[datetime]


class TriageRequestRow(Base):
    """One failure to triage, as submitted, with its defaults already resolved."""

    __table__ = tables.triage_requests

    id: Mapped[int]
    test_id: Mapped[str | None]
    status: Mapped[str]
    options: Mapped[dict[str, Any]]
    log_z: Mapped[bytes]
    log_sha256: Mapped[str]
    error: Mapped[str | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    scripts: Mapped[list[RequestScriptRow]] = relationship(
        order_by="RequestScriptRow.position", cascade="all, delete-orphan"
    )
    result: Mapped[ResultRow | None] = relationship(back_populates="request", uselist=False)


class RequestScriptRow(Base):
    """Which scripts a request named, under which path, in which order."""

    __table__ = tables.request_scripts

    request_id: Mapped[int]
    position: Mapped[int]
    script_id: Mapped[int]
    path: Mapped[str]

    script: Mapped[ScriptRow] = relationship()


class ResultRow(Base):
    """A finished triage. Unique per request and per batch item: a retry can never write a second one."""

    __table__ = tables.results

    id: Mapped[int]
    request_id: Mapped[int]
    batch_item_id: Mapped[int | None]
    data: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]

    request: Mapped[TriageRequestRow] = relationship(back_populates="result")


class BatchRow(Base):
    __table__ = tables.batches

    id: Mapped[int]
    source: Mapped[str]
    input_sha256: Mapped[str | None]
    total: Mapped[int]
    created_at: Mapped[datetime]


class BatchItemRow(Base):
    """One queued case. ``locked_by``/``locked_at`` are the lease of the worker running it."""

    __table__ = tables.batch_items

    id: Mapped[int]
    batch_id: Mapped[int]
    idx: Mapped[int]
    request_id: Mapped[int]
    status: Mapped[str]
    attempts: Mapped[int]
    locked_by: Mapped[str | None]
    locked_at: Mapped[datetime | None]
    finished_by: Mapped[str | None]
    error: Mapped[str | None]
    updated_at: Mapped[datetime]


# --------------------------------------------------------------------------------------------
# Plain records handed out by the store (``Submission`` and ``StoredTriage``: app.store.record)
# --------------------------------------------------------------------------------------------


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
# Store
# --------------------------------------------------------------------------------------------


class Store:
    """All reads and writes. Thread-safe (one session per call); call it via a thread from async code."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._ambient = threading.local()  # the session of ``transaction()`` on this thread
        self._probe_lock = threading.Lock()
        self._probed: tuple[float, str | None] = (float("-inf"), None)  # (monotonic time, problem)
        self._failed: tuple[float, str] | None = None  # the last write refused, until one succeeds

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
        """One transaction, or the enclosing ``transaction()``'s when this thread is in one."""
        outer = getattr(self._ambient, "session", None)
        if outer is not None:
            yield outer
            return
        with self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """Everything the stores write on this thread inside the block is one transaction: all of
        it commits at the end, or none of it. A database error is ``StoreUnavailable`` (and is
        remembered for ``health``); others pass through, after the rollback."""
        if getattr(self._ambient, "session", None) is not None:
            raise RuntimeError("transactions do not nest")
        with self._writing(), self._sessions() as session, session.begin():
            self._ambient.session = session
            try:
                yield session
            finally:
                self._ambient.session = None

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """A write: its database error is raised as ``StoreUnavailable`` (``_refused``); its success
        clears the failure ``health`` remembers."""
        try:
            yield
        except Exception as exc:
            refused = self._refused(exc)
            if refused is exc:
                raise
            raise refused from exc
        self._failed = None

    def _refused(self, exc: Exception) -> Exception:
        """What to raise for a failed write: ``StoreUnavailable`` for a database error (remembered
        for ``health``), the error itself otherwise (an integrity error is the caller's)."""
        refused = storage_error(exc)
        if refused is None or isinstance(exc, IntegrityError):
            return exc
        self.write_failed(refused)
        return refused

    def write_failed(self, exc: StoreUnavailable) -> None:
        """A write the database refused: ``health`` says so until a later write succeeds."""
        if exc.lost:
            self._failed = (time.monotonic(), str(exc))

    def write_succeeded(self) -> None:
        self._failed = None

    def health(self) -> str | None:
        """Why the database cannot take writes now, or None. Checks that a SQLite file is still the
        one opened (one ``stat``), then a small committed write, at most every ``PROBE_EVERY_S``
        (other calls answer the last probe's verdict), and a write refused in the last
        ``FAILURE_MEMORY_S`` (a full disk may refuse a data write while the probe still fits)."""
        found = sqlite_file(self.engine)
        if found is not None:
            try:
                found.check()
            except StoreUnavailable as exc:
                return str(exc)
        now = time.monotonic()
        problem: str | None
        with self._probe_lock:
            at, problem = self._probed
            if now - at >= PROBE_EVERY_S:
                try:
                    probe_write(self.engine)
                    problem = None
                except Exception as exc:
                    refused = storage_error(exc)
                    problem = f"write probe failed: {type(exc).__name__}" if refused is None else str(refused)
                self._probed = (time.monotonic(), problem)
        if problem is not None:
            return problem
        failed = self._failed
        if failed is not None and now - failed[0] < FAILURE_MEMORY_S:
            return f"a write was refused {now - failed[0]:.0f} s ago: {failed[1]}"
        return None

    # -- requests and results -----------------------------------------------------------------

    def create_request(self, case: Submission, *, status: str = "running") -> int:
        with self._tx() as session:
            return self._add_request(session, case, status)

    def record_triage(self, case: Submission, data: dict[str, Any]) -> StoredTriage:
        """Store a finished synchronous triage (request, result, snapshot) in one transaction.

        A fast ``POST /v1/triage`` writes once, after the analysis: one commit, not one to mark
        it running and another to store its result (``jobs.triage_now``).
        """
        return self.record_triages([(case, data)])[0]

    def record_triages(self, items: Sequence[tuple[Submission, dict[str, Any]]]) -> list[StoredTriage]:
        """Finished synchronous triages, all in one transaction (``app.service.writer``); a database
        error is ``StoreUnavailable``, and ``health`` hears of it."""
        outer = getattr(self._ambient, "session", None)
        if outer is not None:
            return record.record_triages(outer.connection(), items)
        if self.engine.dialect.name == "sqlite":
            with self._writing():
                return self._record_sqlite(items)
        # Core only: an ORM session would add much to this write
        with self._writing(), self.engine.begin() as conn:
            return record.record_triages(conn, items)

    def _record_sqlite(self, items: Sequence[tuple[Submission, dict[str, Any]]]) -> list[StoredTriage]:
        """``record_triages`` on SQLite: the same rows, written on a pooled connection with the
        ``sqlite3`` module (``app.store.sqlite_plain``); SQLAlchemy's execution layer cost the
        service's writer more than the write itself. Its errors are raised as SQLAlchemy's."""
        pooled = self.engine.raw_connection()
        try:
            db = pooled.driver_connection
            with sqlite_plain.transaction(db, sqlite_file(self.engine)):
                return sqlite_plain.write_triages(db, items)
        except sqlite3.Error as exc:  # as SQLAlchemy raises it: the callers know its errors
            raise DBAPIError.instance(None, None, exc, sqlite3.Error) from exc
        finally:
            pooled.close()

    def record_failure(self, case: Submission, error: str) -> int:
        """Store a synchronous triage that failed (its input kept for a look), in one transaction."""
        with self._tx() as session:
            return self._add_request(session, case, "failed", error=_plain(error))

    def save_result(self, request_id: int, data: dict[str, Any]) -> StoredTriage:
        """Store a slow triage's result and snapshot into its running request, and mark it done."""
        data, snapshot = record.split_snapshot(data)
        with self._tx() as session:
            request = session.get_one(TriageRequestRow, request_id)
            session.add(ResultRow(request_id=request_id, data=data))
            record.write_snapshot(session.connection(), request_id, snapshot, data)
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
                request_id = self._add_request(session, case, "queued", script_ids=ids)
                session.add(
                    BatchItemRow(batch_id=batch.id, idx=index, request_id=request_id, status="queued")
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
        data, snapshot = record.split_snapshot(data)
        try:
            with self._tx() as session:
                item = session.get_one(BatchItemRow, claim.item_id, with_for_update=True)
                if item.status in ("done", "failed"):
                    return False
                now = utcnow()
                session.add(ResultRow(request_id=item.request_id, batch_item_id=item.id, data=data))
                record.write_snapshot(session.connection(), item.request_id, snapshot, data)
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
        self,
        session: Session,
        case: Submission,
        status: str,
        *,
        script_ids: dict[str, int] | None = None,
        error: str | None = None,
    ) -> int:
        """The request's id; written by ``record`` with Core on the session's connection."""
        conn = session.connection()
        return record.add_request(conn, case, status, script_ids=script_ids, error=error)[0]

    def _script_ids(self, session: Session, contents: Sequence[str]) -> dict[str, int]:
        """Insert unseen contents and map hash -> id (``record.scripts_ids``, in this session)."""
        return record.scripts_ids(session.connection(), contents)

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
