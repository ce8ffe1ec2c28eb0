"""CI history in the store: tests, content-addressed script versions, runs (DESIGN 8.1).

Passing runs are first-class. Ingestion is idempotent: a record re-sent (same job URL and test
id, or the same content when there is no job URL) returns the run already stored. Each failing
run gets its err_sig at ingestion, from its log and (when given) its scripts; each run with
scripts and a log keeps its estimated trace (tplus states), so spectra need no re-analysis.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
    func,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from app.analysis.logparse import parse_log
from app.analysis.model import State
from app.analysis.pipeline import analyze
from app.history.rank import HistoryRun
from app.history.records import RunRecord, env_fingerprint
from app.history.signatures import Run, classify, err_sig, first_bad_version, is_flaky
from app.history.versions import content_hash, version_id
from app.service.store import Base, ScriptRow, Store, _aware, _iso, _pack, _unpack, utcnow

RETENTION_DAYS = 180
RETENTION_RUNS = 500
FAILING_LOG_DAYS = 90
PASSING_LOG_DAYS = 14


class TestRow(Base):
    __tablename__ = "tests"
    __table_args__ = (UniqueConstraint("key", name="uq_tests_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(1100))
    suite: Mapped[str] = mapped_column(String(200))
    path: Mapped[str] = mapped_column(String(1024))
    base_id: Mapped[str] = mapped_column(String(1024))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class VersionRow(Base):
    __tablename__ = "versions"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)  # content address of its files
    files: Mapped[dict[str, Any]] = mapped_column(JSON)  # path -> sha256 (contents in ``scripts``)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RunRow(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_test_started", "test_id", "started_at"),
        Index("ix_runs_err_sig", "err_sig"),
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
    trace: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # path -> {"E": [...], "N": [...], "D": [...]}
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def _facts(record: RunRecord) -> tuple[str | None, str | None, dict[str, Any] | None]:
    """(err_sig, error message, estimated trace) from the run's log and scripts."""
    if not record.log:
        return None, None, None
    failed = record.verdict in ("fail", "error")
    if record.scripts:
        try:
            analysis = analyze(list(record.scripts), record.log)
        except ValueError:
            analysis = None
        if analysis is not None:
            trace: dict[str, Any] = {}
            tplus = analysis.traces["tplus"]
            for f in analysis.program.files:
                states: dict[str, list[int]] = {"E": [], "N": [], "D": []}
                for n in sorted(f.code_lines):
                    ev = tplus.evidence.get(_loc(f.path, n))
                    state = ev.state if ev is not None else None
                    kept = _loc(f.path, n) in tplus.kept
                    if state == State.EXE or (state is None and kept):
                        states["E" if state == State.EXE else "D"].append(n)
                    elif state == State.DBT:
                        states["D"].append(n)
                    else:
                        states["N"].append(n)
                trace[f.path] = states
            if not failed:
                return None, None, trace
            frame = analysis.error_frames[-1] if analysis.error_frames else None
            code = None
            if frame is not None:
                lines = next(f.lines for f in analysis.program.files if f.path == frame.path)
                code = lines[frame.line - 1] if 0 < frame.line <= len(lines) else None
            message = analysis.log.error_message
            return err_sig(message, frame.function if frame else None, code), message[:2000], trace
    if not failed:
        return None, None, None
    parsed = parse_log(record.log)
    frame = parsed.frames[-1] if parsed.frames else None
    return (
        err_sig(parsed.error_message, frame.function if frame else None, frame.code if frame else None),
        parsed.error_message[:2000],
        None,
    )


def _loc(path: str, line: int) -> Any:
    from app.analysis.model import Loc

    return Loc(path, line)


class HistoryStore:
    """History reads and writes on a ``Store``'s engine; each method is one transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add_runs(self, records: Sequence[RunRecord]) -> list[dict[str, Any]]:
        """Store runs (idempotently); per record: run_id, version_id, err_sig, duplicate."""
        prepared = [(r, r.identity(), *_facts(r)) for r in records]
        out: list[dict[str, Any]] = []
        with self.store._tx() as session:
            for record, identity, sig, message, trace in prepared:
                known = session.execute(
                    select(RunRow).where(RunRow.identity == identity)
                ).scalar_one_or_none()
                if known is not None:
                    out.append(_created(known, duplicate=True))
                    continue
                test = self._test(session, record)
                vid = self._version(session, record)
                row = RunRow(
                    identity=identity,
                    test_id=test.id,
                    version_id=vid,
                    external_id=record.test_id,
                    params=record.params,
                    verdict=record.verdict,
                    started_at=record.started_at,
                    env=dict(record.env),
                    env_fp=env_fingerprint(record.env),
                    pipeline=record.pipeline,
                    job_url=record.job_url,
                    commit=record.commit,
                    log_z=_pack(record.log) if record.log else None,
                    err_sig=sig,
                    error_message=message,
                    trace=trace,
                    created_at=utcnow(),
                )
                session.add(row)
                session.flush()
                out.append(_created(row, duplicate=False))
        return out

    def _test(self, session: Session, record: RunRecord) -> TestRow:
        row = session.execute(select(TestRow).where(TestRow.key == record.key.key)).scalar_one_or_none()
        if row is None:
            row = TestRow(
                key=record.key.key,
                suite=record.key.suite,
                path=record.key.path,
                base_id=record.key.base_id,
                created_at=utcnow(),
            )
            session.add(row)
            session.flush()
        return row

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
        """Tests with run counts and their latest verdict, most recently run first."""
        with self.store._tx() as session:
            last = func.max(RunRow.started_at).label("last")
            stats = (
                select(
                    RunRow.test_id,
                    func.count(RunRow.id).label("runs"),
                    func.sum((RunRow.verdict.in_(("fail", "error"))).cast(Integer)).label("fails"),
                    last,
                )
                .group_by(RunRow.test_id)
                .subquery()
            )
            rows = session.execute(
                select(TestRow, stats.c.runs, stats.c.fails, stats.c.last)
                .join(stats, stats.c.test_id == TestRow.id)
                .order_by(stats.c.last.desc(), TestRow.id)
                .limit(limit)
                .offset(offset)
            ).all()
            return [
                {
                    "key": t.key,
                    "suite": t.suite,
                    "runs": int(runs),
                    "failures": int(fails or 0),
                    "last_run_at": _iso(at),
                }
                for t, runs, fails, at in rows
            ]

    def history(self, key: str, *, limit: int = 200) -> dict[str, Any] | None:
        """A test's runs (newest first), versions, and what the history says about its last failure."""
        with self.store._tx() as session:
            test = session.execute(select(TestRow).where(TestRow.key == key)).scalar_one_or_none()
            if test is None:
                return None
            rows = (
                session.execute(
                    select(RunRow)
                    .where(RunRow.test_id == test.id)
                    .order_by(RunRow.started_at.desc(), RunRow.id.desc())
                    .limit(limit)
                )
                .scalars()
                .all()
            )
        ordered = list(reversed(rows))
        runs = [Run(r.verdict, r.version_id or "", r.env_fp, r.err_sig) for r in ordered]
        versions = list(dict.fromkeys(r.version_id for r in ordered if r.version_id))
        summary: dict[str, Any] = {"classification": None, "first_bad_version": None, "flaky": False}
        fails = [i for i, r in enumerate(runs) if r.verdict in ("fail", "error")]
        if fails:
            i = fails[-1]
            summary["classification"] = classify(runs[:i], runs[i])
            summary["flaky"] = is_flaky(runs[:i], runs[i])
            found = first_bad_version(runs[:i], runs[i], versions)
            summary["first_bad_version"] = {
                "last_good": found.last_good,
                "first_bad": found.first_bad,
                "between": list(found.between),
                "script_changed": found.script_changed,
                "note": found.note,
            }
        return {
            "key": test.key,
            "suite": test.suite,
            "versions": versions,
            **summary,
            "runs": [_run_view(r) for r in rows],
        }

    def signatures(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """Failures grouped by err_sig across tests, largest groups first."""
        with self.store._tx() as session:
            rows = session.execute(
                select(
                    RunRow.err_sig,
                    func.count(RunRow.id),
                    func.count(func.distinct(RunRow.test_id)),
                    func.max(RunRow.started_at),
                    func.max(RunRow.error_message),
                )
                .where(RunRow.err_sig.is_not(None))
                .group_by(RunRow.err_sig)
                .order_by(func.count(RunRow.id).desc(), RunRow.err_sig)
                .limit(limit)
            ).all()
            out = []
            for sig, count, tests, last, message in rows:
                keys = session.execute(
                    select(func.distinct(TestRow.key))
                    .join(RunRow, RunRow.test_id == TestRow.id)
                    .where(RunRow.err_sig == sig)
                    .order_by(TestRow.key)
                    .limit(20)
                ).scalars()
                out.append(
                    {
                        "err_sig": sig,
                        "failures": int(count),
                        "tests": int(tests),
                        "test_keys": list(keys),
                        "last_seen": _iso(last),
                        "error_message": message,
                    }
                )
            return out

    def apply_retention(self, now: datetime | None = None) -> dict[str, int]:
        """Runs: 180 days, or the last 500 per test; logs: failing ones 90 days, passing ones 14."""
        now = now or utcnow()
        dropped = 0
        with self.store._tx() as session:
            old = now - timedelta(days=RETENTION_DAYS)
            for (test_id,) in session.execute(select(TestRow.id)).all():
                ids = session.execute(
                    select(RunRow.id, RunRow.started_at)
                    .where(RunRow.test_id == test_id)
                    .order_by(RunRow.started_at.desc(), RunRow.id.desc())
                ).all()
                doomed = [i for pos, (i, at) in enumerate(ids) if pos >= RETENTION_RUNS and _aware(at) < old]
                for start in range(0, len(doomed), 500):
                    chunk = doomed[start : start + 500]
                    session.query(RunRow).filter(RunRow.id.in_(chunk)).delete(synchronize_session=False)
                dropped += len(doomed)
            fail_logs = session.execute(
                update(RunRow)
                .where(RunRow.log_z.is_not(None))
                .where(RunRow.verdict.in_(("fail", "error")))
                .where(RunRow.started_at < now - timedelta(days=FAILING_LOG_DAYS))
                .values(log_z=None)
            ).rowcount
            pass_logs = session.execute(
                update(RunRow)
                .where(RunRow.log_z.is_not(None))
                .where(RunRow.verdict.not_in(("fail", "error")))
                .where(RunRow.started_at < now - timedelta(days=PASSING_LOG_DAYS))
                .values(log_z=None)
            ).rowcount
        return {"runs": dropped, "failing_logs": int(fail_logs or 0), "passing_logs": int(pass_logs or 0)}

    def history_runs(
        self, key: str, *, target_version: str | None = None, limit: int = 30
    ) -> list[HistoryRun]:
        """The test's last ``limit`` runs with a trace, oldest first, as the history ranker reads them.

        ``target_version`` is the failure's version (default: the newest in the history); a run's
        ``versions_apart`` counts the versions seen between its own and that one.
        """
        with self.store._tx() as session:
            test = session.execute(select(TestRow).where(TestRow.key == key)).scalar_one_or_none()
            if test is None:
                return []
            rows = (
                session.execute(
                    select(RunRow)
                    .where(
                        RunRow.test_id == test.id, RunRow.trace.is_not(None), RunRow.version_id.is_not(None)
                    )
                    .order_by(RunRow.started_at.desc(), RunRow.id.desc())
                    .limit(limit)
                )
                .scalars()
                .all()
            )
            versions = {
                v.id: v
                for v in session.execute(
                    select(VersionRow).where(VersionRow.id.in_({r.version_id for r in rows}))
                ).scalars()
            }
            hashes = {h for v in versions.values() for h in v.files.values()}
            contents = {
                sha: _unpack(blob)
                for sha, blob in session.execute(
                    select(ScriptRow.sha256, ScriptRow.content_z).where(ScriptRow.sha256.in_(hashes))
                ).all()
            }
        order = list(dict.fromkeys(r.version_id for r in reversed(rows)))
        if target_version is not None and target_version not in order:
            order.append(target_version)
        last = order.index(target_version) if target_version in order else len(order) - 1
        out = []
        for r in reversed(rows):
            files = {p: contents[h] for p, h in versions[r.version_id].files.items() if h in contents}
            states = {
                _loc(path, n): state
                for path, by_state in (r.trace or {}).items()
                for letter, state in (("E", State.EXE), ("N", State.NEXE), ("D", State.DBT))
                for n in by_state.get(letter, ())
            }
            apart = max(0, last - order.index(r.version_id))
            out.append(HistoryRun(r.verdict, files, states, r.env_fp, r.err_sig, apart))
        return out

    def run(self, run_id: int) -> dict[str, Any] | None:
        with self.store._tx() as session:
            row = session.get(RunRow, run_id)
            if row is None:
                return None
            view = _run_view(row)
            view["log"] = _unpack(row.log_z) if row.log_z else None
            view["trace"] = row.trace
            return view


def records_from_ci(report: Any, source: str, *, now: datetime | None = None) -> list[RunRecord]:
    """Every test run of an ingested CI results file (passes too) as history records.

    Results files carry no job link, so a run's identity is the file's name and the run's own
    content: ingesting the same file twice records its runs once.
    """
    from app.history.records import parse_test_id

    results = getattr(report, "results", None)
    if results is None:
        return []
    sources = {t.run.test_id: t.sources for t in report.triaged}
    started = now or utcnow()
    out = []
    for run in results.runs:
        verdict = run.verdict if run.verdict in ("pass", "fail", "error", "skip") else "error"
        key, params = parse_test_id(run.test_id, run.suite)
        basis = "\x1f".join((report.format, source, run.test_id, run.params or "", verdict, run.log))
        out.append(
            RunRecord(
                key=key,
                test_id=run.test_id,
                params=run.params or params,
                verdict=verdict,
                started_at=started,
                job_url=f"ingest:{hashlib.sha256(basis.encode('utf-8')).hexdigest()[:32]}",
                pipeline=source or None,
                scripts=tuple(sources.get(run.test_id, ())),
                log=run.log or None,
            )
        )
    return out


def _created(row: RunRow, *, duplicate: bool) -> dict[str, Any]:
    return {"run_id": row.id, "version_id": row.version_id, "err_sig": row.err_sig, "duplicate": duplicate}


def _run_view(row: RunRow) -> dict[str, Any]:
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
        "has_log": row.log_z is not None,
    }


def dumps(data: Any) -> str:
    return json.dumps(data, indent=1, default=str)
