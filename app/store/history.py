"""CI history in the store: tests, content-addressed script versions, runs (docs/design.md §8.1).

Passing runs are first-class. Ingestion is idempotent: a record re-sent (same job URL and test
id, or the same content when there is no job URL) returns the run already stored. Each failing
run gets its err_sig at ingestion, from its log and (when given) its scripts; each run with
scripts and a log keeps its estimated trace (tplus states), so spectra need no re-analysis.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
    and_,
    case,
    delete,
    func,
    or_,
    select,
    text,
    union,
    union_all,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, aliased, mapped_column

from app.analysis.model import Loc, Script, State
from app.analysis.parsed import ParseCache
from app.history.facts import batch_facts, run_facts
from app.history.newlines import MAX_PASS_LOGS
from app.history.packed import pack_trace, packable, unpack_trace
from app.history.rank import HistoryRun, Values
from app.history.records import Facts, RunRecord, env_fingerprint, scoped
from app.history.signatures import Run, verdict_of
from app.history.versions import content_hash, version_id
from app.ingest.testkey import TestKey, canonical_key
from app.store.store import Base, ScriptRow, Store, _aware, _iso, _pack, _unpack, utcnow, values_by

RETENTION_DAYS = 180
RETENTION_RUNS = 500
FAILING_LOG_DAYS = 90
PASSING_LOG_DAYS = 14
FAILING = ("fail", "error")
CHUNK = 500  # ids per IN (...) list
SIGNATURE_PAGE = 50  # signature groups per page
SIGNATURE_KEYS = 20  # test keys shown per group (``tests`` counts them all)
CACHE_ENTRIES = 256  # versions and script texts kept decoded (both content-addressed)
SignatureOrder = Literal["recent", "failures"]  # newest failure first, or largest group first
_STATE_OF = {"E": State.EXE, "N": State.NEXE, "D": State.DBT}


class TestRow(Base):
    __tablename__ = "tests"
    __table_args__ = (UniqueConstraint("key", name="uq_tests_key"), Index("ix_tests_path", "path"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(1100))
    suite: Mapped[str] = mapped_column(String(200))
    path: Mapped[str] = mapped_column(String(1024))
    base_id: Mapped[str] = mapped_column(String(1024))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_run_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # kept on insert


class VersionRow(Base):
    __tablename__ = "versions"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)  # content address of its files
    files: Mapped[dict[str, Any]] = mapped_column(JSON)  # path -> sha256 (contents in ``scripts``)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RunRow(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_test_started_id", "test_id", "started_at", "id"),
        # Failures only (passes have no err_sig): signature groups and one group's newest failures
        # come from the index alone, test_id included for the groups' distinct tests.
        Index(
            "ix_runs_err_sig_started",
            "err_sig",
            "started_at",
            "id",
            "test_id",
            postgresql_where=text("err_sig IS NOT NULL"),
            sqlite_where=text("err_sig IS NOT NULL"),
        ),
        UniqueConstraint("identity", name="uq_runs_identity"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    identity: Mapped[str] = mapped_column(String(64))
    test_id: Mapped[int] = mapped_column(ForeignKey("tests.id"))
    version_id: Mapped[str | None] = mapped_column(ForeignKey("versions.id"))
    external_id: Mapped[str] = mapped_column(String(1000))  # the test id as CI reported it
    params: Mapped[str] = mapped_column(String(1000))
    verdict: Mapped[str] = mapped_column(String(8))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    env: Mapped[dict[str, Any]] = mapped_column(JSON)
    env_fp: Mapped[str] = mapped_column(String(12))
    pipeline: Mapped[str | None] = mapped_column(String(200))
    job_url: Mapped[str | None] = mapped_column(String(2000))
    commit: Mapped[str | None] = mapped_column(String(64))
    log_z: Mapped[bytes | None] = mapped_column(LargeBinary)
    err_sig: Mapped[str | None] = mapped_column(String(40))
    error_message: Mapped[str | None] = mapped_column(String(2000))
    # The estimated trace, path -> {"E": [...], "N": [...], "D": [...]}: packed (app.history.packed),
    # or as JSON where it does not pack exactly (and in rows written before 0005 that failed to).
    trace_z: Mapped[bytes | None] = mapped_column(LargeBinary)
    trace: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    # what its log statements printed, path -> line -> value tuples (app.history.values); 0007
    log_values: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def _values_of(data: dict[str, Any] | None) -> Values:
    """The stored JSON back as the ranker reads it (``HistoryRun.values``)."""
    return {
        Loc(path, int(line)): frozenset(tuple(t) for t in tuples)
        for path, lines in (data or {}).items()
        for line, tuples in lines.items()
    }


class _Lru:
    """A small thread-safe map of the most recently used entries (content-addressed values only)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        with self._lock:
            found = {}
            for k in keys:
                if k in self._items:
                    self._items.move_to_end(k)
                    found[k] = self._items[k]
            return found

    def put_many(self, items: dict[str, Any]) -> None:
        with self._lock:
            self._items.update(items)
            for k in items:
                self._items.move_to_end(k)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


# Version ids and script hashes are content addresses: an entry is right for every database.
_VERSION_FILES = _Lru(CACHE_ENTRIES)  # version id -> {path: sha256}
_SCRIPT_TEXTS = _Lru(CACHE_ENTRIES)  # sha256 -> content


def unstorable(record: RunRecord) -> str | None:
    """Why a run record cannot be stored as it is (a text longer than its column, a NUL character,
    an empty test id), or None. Checked before anything of a request is written: PostgreSQL
    refuses these where SQLite would take them, and no backend should keep what the other refuses."""
    if not record.test_id.strip():
        return "test_id is empty"
    fields = {
        "test_id": (record.test_id, RunRow.__table__.c.external_id),
        "params": (record.params, RunRow.__table__.c.params),
        "pipeline": (record.pipeline, RunRow.__table__.c.pipeline),
        "job_url": (record.job_url, RunRow.__table__.c.job_url),
        "commit": (record.commit, RunRow.__table__.c.commit),
        "the test's key": (record.key.key, TestRow.__table__.c.key),
        "suite": (record.key.suite, TestRow.__table__.c.suite),
        "the test's path": (record.key.path, TestRow.__table__.c.path),
        "the test's name": (record.key.name, TestRow.__table__.c.base_id),
    }
    for name, (value, column) in fields.items():
        if value is None:
            continue
        if "\x00" in value:
            return f"{name} holds a NUL character"
        length = getattr(column.type, "length", None)
        if length is not None and len(value) > length:
            return f"{name} is {len(value)} characters; at most {length} are stored"
    texts = [record.log or "", *record.env.keys(), *record.env.values(), *(s.path for s in record.scripts)]
    if any("\x00" in t for t in texts):
        return "the log, env or a script path holds a NUL character"
    return None


class HistoryStore:
    """History reads and writes on a ``Store``'s engine; each method is one transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add_runs(self, records: Sequence[RunRecord]) -> list[dict[str, Any]]:
        """Store runs (idempotently); per record: run_id, version_id, err_sig, duplicate.

        Runs already stored are found in one query and never analysed again; a record repeated
        within ``records`` is stored once. Two writers racing on the same run: the loser retries
        and finds the winner's row. A record whose ``facts`` were computed already (the service
        computes them in its analysis pool) is stored with them and its version's scripts.
        """
        identities = [r.identity() for r in records]
        facts: dict[str, Facts] = {
            i: r.facts.facts for r, i in zip(records, identities, strict=True) if r.facts
        }
        parses = ParseCache()  # the runs of one results file share their tests' scripts: parsed once
        records = [  # its version: the test's own scripts
            _version_of(r, r.facts.paths) if r.facts is not None else scoped(r, parses) for r in records
        ]
        for attempt in (1, 2):
            known = self._known(identities)
            for record, identity in zip(records, identities, strict=True):
                if identity not in known and identity not in facts:
                    facts[identity] = run_facts(record, parses)
            try:
                created = self._insert(records, identities, known, facts)
                break
            except IntegrityError:
                if attempt == 2:
                    raise
        out = []
        seen: set[str] = set()
        for identity in identities:
            if identity in known:
                out.append({**known[identity], "duplicate": True})
            else:
                out.append({**created[identity], "duplicate": identity in seen})
                seen.add(identity)
        return out

    def with_facts(self, records: Sequence[RunRecord], parses: ParseCache | None = None) -> list[RunRecord]:
        """The records, each run not stored yet with its facts (``batch_facts``: one parse per
        script version, a test's pass traced once), for ``add_runs`` to write as they are instead of
        analysing record by record; ``parses``: the job's parses (its triages read the same scripts)."""
        identities = [r.identity() for r in records]
        known = self._known(identities)
        todo: dict[str, RunRecord] = {}
        for record, identity in zip(records, identities, strict=True):
            if record.facts is None and identity not in known and identity not in todo:
                todo[identity] = record
        found = dict(zip(todo, batch_facts(list(todo.values()), parses=parses), strict=True))
        return [
            replace(r, facts=found[i]) if r.facts is None and i in found else r
            for r, i in zip(records, identities, strict=True)
        ]

    def _known(self, identities: Sequence[str]) -> dict[str, dict[str, Any]]:
        unique = list(dict.fromkeys(identities))
        known: dict[str, dict[str, Any]] = {}
        with self.store._tx() as session:
            for start in range(0, len(unique), CHUNK):
                for identity, run_id, vid, sig in session.execute(
                    select(RunRow.identity, RunRow.id, RunRow.version_id, RunRow.err_sig).where(
                        RunRow.identity.in_(unique[start : start + CHUNK])
                    )
                ).all():
                    known[identity] = {"run_id": run_id, "version_id": vid, "err_sig": sig}
        return known

    def _insert(
        self,
        records: Sequence[RunRecord],
        identities: Sequence[str],
        known: dict[str, dict[str, Any]],
        facts: dict[str, Facts],
    ) -> dict[str, dict[str, Any]]:
        """The new runs, written in bulk (``CHUNK`` rows a statement): an upload of many thousand
        runs holds the database's write lock for a moment, not for a round trip per run."""
        created: dict[str, dict[str, Any]] = {}
        todo: dict[str, RunRecord] = {}
        for record, identity in zip(records, identities, strict=True):
            if identity not in known and identity not in todo:
                todo[identity] = record
        if not todo:
            return created
        rows, vkeys = [], []  # made before the transaction: the write lock is held for the writes only
        # a job's thousands of runs share a few script sets: each set's contents hashed once
        vids: dict[tuple[Script, ...], str] = {}
        for identity, record in todo.items():
            sig, message, trace, printed = facts[identity]
            vkey = vids.get(record.scripts)
            if vkey is None:
                files = {s.path: s.content for s in record.scripts}
                vkey = vids[record.scripts] = version_id(files) if files else ""
            vkeys.append(vkey)
            packed = trace is not None and packable(trace)
            trace_z = pack_trace(trace) if packed and trace is not None else None
            if record.facts is not None and record.facts.packed is not None:
                trace_z = record.facts.packed  # packed where the facts were computed
            rows.append(
                {
                    "identity": identity,
                    "external_id": record.test_id,
                    "params": record.params,
                    "verdict": record.verdict,
                    "started_at": record.started_at,
                    "env": dict(record.env),
                    "env_fp": env_fingerprint(record.env),
                    "pipeline": record.pipeline,
                    "job_url": record.job_url,
                    "commit": record.commit,
                    "log_z": _pack(record.log) if record.log else None,
                    "err_sig": sig,
                    "error_message": message,
                    "trace_z": trace_z,
                    "trace": None if packed else trace,
                    "log_values": printed,
                    "created_at": utcnow(),
                }
            )
        newest: dict[str, datetime] = {}  # each test's newest new run
        for record in todo.values():
            key = record.key.key
            if key not in newest or _aware(newest[key]) < _aware(record.started_at):
                newest[key] = record.started_at
        with self.store._tx() as session:
            tests = self._tests(session, list(todo.values()), newest)
            versions: dict[str, str | None] = {}
            for row, record, vkey in zip(rows, todo.values(), vkeys, strict=True):
                if vkey not in versions:
                    versions[vkey] = self._version(session, record)
                row["test_id"] = tests[record.key.key][0]
                row["version_id"] = versions[vkey]
            for start in range(0, len(rows), CHUNK):
                part = rows[start : start + CHUNK]
                # one executemany (Core, no RETURNING: that is a statement a row on SQLite), then the ids
                session.execute(RunRow.__table__.insert(), part)
                ids = values_by(session, RunRow.identity, RunRow.id, [r["identity"] for r in part])
                for row in part:
                    created[row["identity"]] = {
                        "run_id": ids[row["identity"]],
                        "version_id": row["version_id"],
                        "err_sig": row["err_sig"],
                    }
            moved = [
                {"id": tests[key][0], "last_run_at": when}
                for key, when in newest.items()
                if tests[key][1] is None or _aware(tests[key][1]) < _aware(when)
            ]
            if moved:
                session.execute(update(TestRow), moved)
        return created

    def _tests(
        self, session: Session, records: Sequence[RunRecord], newest: dict[str, datetime]
    ) -> dict[str, tuple[int, datetime | None]]:
        """Each record's test (key -> id, last run), the missing ones inserted in bulk with their
        newest run's time as their last run."""
        first = {r.key.key: r.key for r in records}
        keys = list(first)
        found: dict[str, tuple[int, datetime | None]] = {}
        for start in range(0, len(keys), CHUNK):
            for key, test_id, last in session.execute(
                select(TestRow.key, TestRow.id, TestRow.last_run_at).where(
                    TestRow.key.in_(keys[start : start + CHUNK])
                )
            ).all():
                found[key] = (test_id, last)
        missing = [
            {
                "key": k.key,
                "suite": k.suite,
                "path": k.path,
                "base_id": k.name,
                "created_at": utcnow(),
                "last_run_at": newest[key],
            }
            for key, k in first.items()
            if key not in found
        ]
        for start in range(0, len(missing), CHUNK):
            part = missing[start : start + CHUNK]
            session.execute(TestRow.__table__.insert(), part)
            ids = values_by(session, TestRow.key, TestRow.id, [r["key"] for r in part])
            for row in part:
                found[row["key"]] = (ids[row["key"]], row["last_run_at"])
        return found

    def _version(self, session: Session, record: RunRecord) -> str | None:
        if not record.scripts:
            return None
        files = {s.path: s.content for s in record.scripts}
        vid = version_id(files)
        if session.get(VersionRow, vid) is None:
            self.store._script_ids(session, list(files.values()))
            session.add(
                VersionRow(id=vid, files={p: content_hash(c) for p, c in files.items()}, created_at=utcnow())
            )
            session.flush()
        return vid

    def tests(self, *, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """Tests with run counts and their latest verdict, most recently run first.

        The order comes from ``tests.last_run_at``; runs are counted for the page's tests only.
        """
        with self.store._tx() as session:
            page = (
                session.execute(
                    select(TestRow)
                    .where(TestRow.last_run_at.is_not(None))
                    .order_by(TestRow.last_run_at.desc(), TestRow.id)
                    .limit(limit)
                    .offset(offset)
                )
                .scalars()
                .all()
            )
            counts = {
                test_id: (runs, fails)
                for test_id, runs, fails in session.execute(
                    select(
                        RunRow.test_id,
                        func.count(RunRow.id),
                        func.sum(RunRow.verdict.in_(FAILING).cast(Integer)),
                    )
                    .where(RunRow.test_id.in_([t.id for t in page]))
                    .group_by(RunRow.test_id)
                ).all()
            }
        return [
            {
                "key": t.key,
                "suite": t.suite,
                "runs": int(counts[t.id][0]),
                "failures": int(counts[t.id][1] or 0),
                "last_run_at": _iso(t.last_run_at),
            }
            for t in page
            if t.id in counts
        ]

    def history(self, key: str | TestKey, *, limit: int = 200) -> dict[str, Any] | None:
        """A test's runs (newest first), versions, and what the history says about its last failure.

        ``key`` in any tool's form (``app.ingest.testkey``): each names the same test."""
        found = _canonical(key)
        if found is None:
            return None
        with self.store._tx() as session:
            test = session.execute(select(TestRow).where(TestRow.key == found)).scalar_one_or_none()
            if test is None:
                return None
            rows = session.execute(
                select(*_VIEW_COLUMNS)
                .where(RunRow.test_id == test.id)
                .order_by(RunRow.started_at.desc(), RunRow.id.desc())
                .limit(limit)
            ).all()
        ordered = list(reversed(rows))
        runs = [Run(r.verdict, r.version_id or "", r.env_fp, r.err_sig, r.commit, r.job_url) for r in ordered]
        versions = list(dict.fromkeys(r.version_id for r in ordered if r.version_id))
        summary: dict[str, Any] = {"classification": None, "first_bad_version": None, "flaky": False}
        fails = [i for i, r in enumerate(runs) if r.verdict in FAILING]
        if fails:
            summary.update(verdict_of(runs[: fails[-1]], runs[fails[-1]]))
        return {
            "key": test.key,
            "suite": test.suite,
            "versions": versions,
            **summary,
            "runs": [_run_view(r) for r in rows],
        }

    def signatures(
        self, *, limit: int = SIGNATURE_PAGE, offset: int = 0, order: SignatureOrder = "recent"
    ) -> list[dict[str, Any]]:
        """A page of failure groups by err_sig across tests: newest failure first, or ``failures``.

        Two statements whatever the page size: the groups' aggregates (from the covering partial
        index ``ix_runs_err_sig_started``, with the latest failure's message per page group), then
        the first ``SIGNATURE_KEYS`` test keys of each page group.
        """
        count = func.count(RunRow.id)
        last = func.max(RunRow.started_at)
        page = (
            select(
                RunRow.err_sig.label("sig"),
                count.label("failures"),
                func.count(func.distinct(RunRow.test_id)).label("tests"),
                func.min(RunRow.started_at).label("first"),
                last.label("last"),
            )
            .where(RunRow.err_sig.is_not(None))
            .group_by(RunRow.err_sig)
            .order_by((count if order == "failures" else last).desc(), RunRow.err_sig)
            .limit(limit)
            .offset(offset)
            .subquery()
        )
        latest = aliased(RunRow)
        message = (
            select(latest.error_message)
            .where(latest.err_sig == page.c.sig)
            .order_by(latest.started_at.desc(), latest.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        first_by = page.c.failures if order == "failures" else page.c.last
        with self.store._tx() as session:
            groups = session.execute(
                select(page, message.label("message")).order_by(first_by.desc(), page.c.sig)
            ).all()
            keys: dict[str, list[str]] = {g.sig: [] for g in groups}
            if keys:
                pairs = (
                    select(RunRow.err_sig, RunRow.test_id)
                    .where(RunRow.err_sig.in_(list(keys)))
                    .distinct()
                    .subquery()
                )
                ranked = (
                    select(
                        pairs.c.err_sig,
                        TestRow.key,
                        func.row_number().over(partition_by=pairs.c.err_sig, order_by=TestRow.key).label("n"),
                    )
                    .join(TestRow, TestRow.id == pairs.c.test_id)
                    .subquery()
                )
                for sig, key in session.execute(
                    select(ranked.c.err_sig, ranked.c.key)
                    .where(ranked.c.n <= SIGNATURE_KEYS)
                    .order_by(ranked.c.err_sig, ranked.c.key)
                ):
                    keys[sig].append(key)
        return [
            {
                "err_sig": g.sig,
                "failures": int(g.failures),
                "tests": int(g.tests),
                "test_keys": keys[g.sig],
                "first_seen": _iso(g.first),
                "last_seen": _iso(g.last),
                "error_message": g.message,
            }
            for g in groups
        ]

    def apply_retention(
        self,
        now: datetime | None = None,
        *,
        keep_days: int = RETENTION_DAYS,
        keep_runs: int = RETENTION_RUNS,
        failing_log_days: int = FAILING_LOG_DAYS,
        passing_log_days: int = PASSING_LOG_DAYS,
        dry_run: bool = False,
    ) -> dict[str, int]:
        """Drop runs older than ``keep_days`` beyond each test's newest ``keep_runs``; drop old logs.

        Each test keeps its anchors whatever their age: its last passing run and the first
        failure after it, so the first bad version and the diff since the last pass survive.
        Set-based (window functions, one statement per step) on both backends. ``dry_run``
        counts what would go and changes nothing.
        """
        now = now or utcnow()
        cutoff = now - timedelta(days=keep_days)
        doomed = _retention_doomed(keep_runs, cutoff)
        fail_logs = and_(
            RunRow.log_z.is_not(None),
            RunRow.verdict.in_(FAILING),
            RunRow.started_at < now - timedelta(days=failing_log_days),
        )
        pass_logs = and_(
            RunRow.log_z.is_not(None),
            RunRow.verdict.not_in(FAILING),
            RunRow.started_at < now - timedelta(days=passing_log_days),
        )
        with self.store._tx() as session:
            if self.store.dialect == "postgresql":  # the window sorts fit in memory, not on disk
                session.execute(text("SET LOCAL work_mem = '64MB'"))
            if dry_run:
                counts = [
                    session.execute(select(func.count()).select_from(doomed.subquery())).scalar_one(),
                    *(
                        session.execute(select(func.count(RunRow.id)).where(where)).scalar_one()
                        - session.execute(  # the runs that stay: an anti-join would not hash
                            select(func.count(RunRow.id)).where(where, RunRow.id.in_(doomed))
                        ).scalar_one()
                        for where in (fail_logs, pass_logs)
                    ),
                ]
            else:
                dropped = session.execute(delete(RunRow).where(RunRow.id.in_(doomed))).rowcount
                if dropped:  # a test's newest run goes only when it is older than the cutoff
                    newest = (
                        select(func.max(RunRow.started_at))
                        .where(RunRow.test_id == TestRow.id)
                        .scalar_subquery()
                    )
                    session.execute(
                        update(TestRow).where(TestRow.last_run_at < cutoff).values(last_run_at=newest)
                    )
                counts = [
                    dropped,
                    *(
                        session.execute(update(RunRow).where(where).values(log_z=None)).rowcount
                        for where in (fail_logs, pass_logs)
                    ),
                ]
        runs, failing, passing = (int(c or 0) for c in counts)
        return {"runs": runs, "failing_logs": failing, "passing_logs": passing}

    def held(self, keys: Iterable[str]) -> frozenset[str]:
        """Those of ``keys`` (in any tool's form) whose test the history holds, in a query per
        ``CHUNK``: ``history_runs`` has nothing for the others, and a job's reader asks for each
        of its failures (most of them new to a young history) without a query apiece."""
        stored: dict[str, list[str]] = {}
        for key in keys:
            found = _canonical(key)
            if found is not None:
                stored.setdefault(found, []).append(key)
        unique = list(stored)
        held: set[str] = set()
        with self.store._tx() as session:
            for start in range(0, len(unique), CHUNK):
                part = unique[start : start + CHUNK]
                for (found,) in session.execute(select(TestRow.key).where(TestRow.key.in_(part))).all():
                    held.update(stored.get(found, ()))
        return frozenset(held)

    def history_runs(
        self,
        key: str | TestKey,
        *,
        target_version: str | None = None,
        limit: int = 30,
        siblings: int = 0,
        before: datetime | None = None,
    ) -> list[HistoryRun]:
        """The test's last ``limit`` runs with a trace, oldest first, as the history ranker reads them.

        ``target_version`` is the failure's version (default: the newest in the history); a run's
        ``versions_apart`` counts the versions seen between its own and that one. ``siblings``
        adds file scope: the newest traced run of each of up to that many other tests of the
        same file (most recently run first), with ``same_test`` False. ``key`` in any tool's form.
        ``before`` keeps the runs that started before that time: a failure is ranked with its past.
        """
        found = _canonical(key)
        if found is None:
            return []
        with self.store._tx() as session:
            test = session.execute(select(TestRow.id, TestRow.path).where(TestRow.key == found)).one_or_none()
            if test is None:
                return []
            own = _traced_runs(test.id, before).limit(limit)
            rows = [(True, r) for r in session.execute(own).all()]
            if siblings > 0:
                others = (
                    session.execute(
                        select(TestRow.id)
                        .where(
                            TestRow.path == test.path, TestRow.id != test.id, TestRow.last_run_at.is_not(None)
                        )
                        .order_by(TestRow.last_run_at.desc(), TestRow.id)
                        .limit(siblings)
                    )
                    .scalars()
                    .all()
                )
                if others:
                    parts = [select(q.subquery()) for q in (_traced_runs(t, before).limit(1) for t in others)]
                    rows += [(False, r) for r in session.execute(union_all(*parts)).all()]
            files = _version_files(session, {r.version_id for _, r in rows})
        rows.sort(key=lambda item: (_aware(item[1].started_at), item[1].id))
        # the newest passes' logs: a failure's new lines are those none of them printed
        said = [r.id for same, r in rows if same and r.verdict == "pass" and r.log_z is not None]
        logs = set(said[-MAX_PASS_LOGS:])
        order = list(dict.fromkeys(r.version_id for _, r in rows))
        if target_version is not None and target_version not in order:
            order.append(target_version)
        last = order.index(target_version) if target_version in order else len(order) - 1
        out = []
        for same, r in rows:
            trace = unpack_trace(r.trace_z) if r.trace_z is not None else r.trace
            states = {
                Loc(path, n): _STATE_OF[letter]
                for path, by_state in (trace or {}).items()
                for letter, lines in by_state.items()
                if letter in _STATE_OF
                for n in lines
            }
            apart = max(0, last - order.index(r.version_id))
            out.append(
                HistoryRun(
                    r.verdict,
                    files[r.version_id],
                    states,
                    r.env_fp,
                    r.err_sig,
                    apart,
                    same_test=same,
                    values=_values_of(r.log_values),
                    commit=r.commit,
                    job_url=r.job_url,
                    log=_unpack(r.log_z) if r.id in logs else None,
                )
            )
        return out

    def run(self, run_id: int) -> dict[str, Any] | None:
        with self.store._tx() as session:
            row = session.get(RunRow, run_id)
            if row is None:
                return None
            view = _run_view(row, has_log=row.log_z is not None)
            view["log"] = _unpack(row.log_z) if row.log_z else None
            view["trace"] = unpack_trace(row.trace_z) if row.trace_z is not None else row.trace
            return view


def _version_of(record: RunRecord, paths: Collection[str]) -> RunRecord:
    """The record with only the scripts of ``paths``, those its facts were computed from (itself
    when it has no other: ``replace`` costs more than the filter, for each of a job's runs)."""
    kept = tuple(s for s in record.scripts if s.path in paths)
    return record if len(kept) == len(record.scripts) else replace(record, scripts=kept)


def _canonical(key: str | TestKey) -> str | None:
    """The stored form of a test key given in any form; None for one no test can have (empty)."""
    try:
        return canonical_key(key)
    except ValueError:
        return None


_VIEW_COLUMNS = (
    RunRow.id,
    RunRow.external_id,
    RunRow.params,
    RunRow.verdict,
    RunRow.started_at,
    RunRow.version_id,
    RunRow.env,
    RunRow.env_fp,
    RunRow.pipeline,
    RunRow.job_url,
    RunRow.commit,
    RunRow.err_sig,
    RunRow.error_message,
    RunRow.log_z.is_not(None).label("has_log"),
)


def _traced_runs(test_id: int, before: datetime | None = None) -> Any:
    """A test's runs that carry a trace and a version, newest first (the columns history_runs reads),
    those started before ``before`` when given."""
    past = () if before is None else (RunRow.started_at < before,)
    return (
        select(
            RunRow.id,
            RunRow.verdict,
            RunRow.version_id,
            RunRow.env_fp,
            RunRow.err_sig,
            RunRow.started_at,
            RunRow.trace_z,
            RunRow.trace,
            RunRow.log_values,
            RunRow.commit,
            RunRow.job_url,
            case((RunRow.verdict == "pass", RunRow.log_z), else_=None).label("log_z"),  # passes' only
        )
        .where(
            *past,
            RunRow.test_id == test_id,
            RunRow.version_id.is_not(None),
            or_(RunRow.trace_z.is_not(None), RunRow.trace.is_not(None)),
        )
        .order_by(RunRow.started_at.desc(), RunRow.id.desc())
    )


def _cached(
    cache: _Lru, keys: set[str], load: Callable[[list[str]], Iterable[tuple[str, Any]]]
) -> dict[str, Any]:
    """``keys`` from ``cache``, the misses loaded (``CHUNK`` at a time) and remembered."""
    found = cache.get_many(keys)
    missing = [k for k in keys if k not in found]
    loaded: dict[str, Any] = {}
    for start in range(0, len(missing), CHUNK):
        loaded.update(load(missing[start : start + CHUNK]))
    cache.put_many(loaded)
    return {**found, **loaded}


def _version_files(session: Session, version_ids: set[str]) -> dict[str, dict[str, str]]:
    """Version id -> {path: content}, through the small content-addressed caches."""
    hashes = _cached(
        _VERSION_FILES,
        version_ids,
        lambda ids: session.execute(
            select(VersionRow.id, VersionRow.files).where(VersionRow.id.in_(ids))
        ).all(),
    )
    texts = _cached(
        _SCRIPT_TEXTS,
        {h for files in hashes.values() for h in files.values()},
        lambda shas: (
            (sha, _unpack(blob))
            for sha, blob in session.execute(
                select(ScriptRow.sha256, ScriptRow.content_z).where(ScriptRow.sha256.in_(shas))
            ).all()
        ),
    )
    return {vid: {p: texts[h] for p, h in hashes.get(vid, {}).items() if h in texts} for vid in version_ids}


def _retention_doomed(keep_runs: int, cutoff: datetime) -> Any:
    """SELECT of the run ids retention drops: older than ``cutoff``, beyond the newest ``keep_runs``
    of their test, and neither the test's last pass nor the first failure after it."""
    newest_first = (RunRow.started_at.desc(), RunRow.id.desc())
    ranked = select(
        RunRow.id,
        RunRow.started_at,
        func.row_number().over(partition_by=RunRow.test_id, order_by=newest_first).label("pos"),
    ).subquery()
    # Anchors by hash aggregates (no sort over all runs): the last pass is the newest pass's time,
    # ties to the highest id; the first bad, the earliest failure after it, ties to the lowest id.
    pass_at = (
        select(RunRow.test_id, func.max(RunRow.started_at).label("at"))
        .where(RunRow.verdict == "pass")
        .group_by(RunRow.test_id)
        .cte("pass_at")
    )
    last_pass = (
        select(RunRow.test_id, pass_at.c.at, func.max(RunRow.id).label("id"))
        .join(pass_at, and_(pass_at.c.test_id == RunRow.test_id, pass_at.c.at == RunRow.started_at))
        .where(RunRow.verdict == "pass")
        .group_by(RunRow.test_id, pass_at.c.at)
        .cte("last_pass")
    )
    after_pass = and_(
        RunRow.verdict.in_(FAILING),
        or_(
            last_pass.c.id.is_(None),
            RunRow.started_at > last_pass.c.at,
            and_(RunRow.started_at == last_pass.c.at, RunRow.id > last_pass.c.id),
        ),
    )
    with_pass = RunRow.__table__.outerjoin(last_pass, last_pass.c.test_id == RunRow.test_id)
    bad_at = (
        select(RunRow.test_id, func.min(RunRow.started_at).label("at"))
        .select_from(with_pass)
        .where(after_pass)
        .group_by(RunRow.test_id)
        .cte("bad_at")
    )
    first_bad = (
        select(func.min(RunRow.id))
        .select_from(
            with_pass.join(bad_at, and_(bad_at.c.test_id == RunRow.test_id, bad_at.c.at == RunRow.started_at))
        )
        .where(after_pass)
        .group_by(RunRow.test_id)
    )
    anchors = union(select(last_pass.c.id), first_bad)
    return select(ranked.c.id).where(
        ranked.c.pos > keep_runs, ranked.c.started_at < cutoff, ranked.c.id.not_in(anchors)
    )


def _run_view(row: Any, *, has_log: bool | None = None) -> dict[str, Any]:
    """A run as the history page shows it, from a ``RunRow`` or a row of ``_VIEW_COLUMNS``."""
    return {
        "id": row.id,
        "test_id": row.external_id,
        "params": row.params,
        "verdict": row.verdict,
        "started_at": _iso(row.started_at),
        "version_id": row.version_id,
        "env": row.env,
        "env_fingerprint": row.env_fp,
        "ci": {"pipeline": row.pipeline, "job_url": row.job_url, "commit": row.commit},
        "err_sig": row.err_sig,
        "error_message": row.error_message,
        "has_log": bool(row.has_log if has_log is None else has_log),
    }


def dumps(data: Any) -> str:
    return json.dumps(data, indent=1, default=str)


def version_files(store: Store, ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """The scripts of the given versions (path -> content), for diffs between versions."""
    with store._tx() as session:
        return _version_files(session, set(ids))


def signature_runs(store: Store, sig: str, *, limit: int = 200) -> list[dict[str, Any]] | None:
    """The failures with one err_sig across tests, newest first, each with its test key; None if unseen."""
    with store._tx() as session:
        rows = session.execute(
            select(*_VIEW_COLUMNS, TestRow.key)
            .join(TestRow, TestRow.id == RunRow.test_id)
            .where(RunRow.err_sig == sig)
            .order_by(RunRow.started_at.desc(), RunRow.id.desc())
            .limit(limit)
        ).all()
    return [{"key": r.key, **_run_view(r)} for r in rows] or None
