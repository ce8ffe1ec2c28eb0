"""Launches: one row per CI job (``launches``), one per test of it (``launch_tests``); revision
``0009_launches_labels``.

A launch is unique on its job's identity (``app.ingest.job.Job.identity``), so a job sent twice
is one launch. Each test row keeps its verdict and duration and, for a failure, its signature,
its triage and what the history before the job said of it (``app.launch.launch_of`` computes
that; this module only reads and writes). ``run_id`` points at the test's run in the CI history
without a foreign key: retention may drop old runs, never a launch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from app.history.signatures import Run
from app.launch import Launch
from app.store.history import RunRow, TestRow
from app.store.ingests import CiRunRow
from app.store.store import Base, Store, _view, utcnow

PAGE = 50
PAST_RUNS = 200  # runs before a launch read per failing test (as a test's history page reads them)


class LaunchRow(Base):
    """One CI job: who ran it (pipeline, job, commit, link), when, and its counts."""

    __tablename__ = "launches"
    __table_args__ = (
        UniqueConstraint("identity", name="uq_launches_identity"),
        Index("ix_launches_pipeline_started", "pipeline", "started_at", "id"),
        Index("ix_launches_started", "started_at", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    identity: Mapped[str] = mapped_column(String(64))
    pipeline: Mapped[str | None] = mapped_column(String(1000))
    job_id: Mapped[str | None] = mapped_column(String(1000))
    job_url: Mapped[str | None] = mapped_column(String(2000))
    commit: Mapped[str | None] = mapped_column(String(64))
    ci: Mapped[str | None] = mapped_column(String(16))
    source: Mapped[str | None] = mapped_column(String(255))
    format: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    summary: Mapped[dict[str, Any]] = mapped_column(JSON)
    ingest_id: Mapped[int | None] = mapped_column(ForeignKey(CiRunRow.id))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LaunchTestRow(Base):
    """One test of a launch, passes too."""

    __tablename__ = "launch_tests"
    __table_args__ = (
        UniqueConstraint("launch_id", "idx", name="uq_launch_tests_launch_idx"),
        Index("ix_launch_tests_err_sig", "err_sig"),
        Index("ix_launch_tests_triage_id", "triage_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    launch_id: Mapped[int] = mapped_column(ForeignKey("launches.id"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column(String(1100))
    test_id: Mapped[str] = mapped_column(String(1000))
    verdict: Mapped[str] = mapped_column(String(8))
    duration_s: Mapped[float | None] = mapped_column(Float)
    run_id: Mapped[int | None] = mapped_column(Integer)
    err_sig: Mapped[str | None] = mapped_column(String(40))
    site: Mapped[str | None] = mapped_column(String(40))
    error: Mapped[str | None] = mapped_column(Text)
    triage_id: Mapped[int | None] = mapped_column(Integer)
    problem: Mapped[str | None] = mapped_column(Text)
    top: Mapped[str | None] = mapped_column(String(1100))
    classification: Mapped[str | None] = mapped_column(String(16))
    history: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))


_LAUNCH_VIEW = "id pipeline job_id job_url commit ci source format started_at ingest_id summary"


def _launch_view(row: LaunchRow) -> dict[str, Any]:
    return _view(row, _LAUNCH_VIEW)


_TEST_VIEW = (
    "id key test_id verdict duration_s run_id err_sig site error triage_id problem top classification history"
)


def _test_view(row: LaunchTestRow) -> dict[str, Any]:
    return _view(row, _TEST_VIEW)


class LaunchStore:
    """Launch reads and writes on a ``Store``'s engine; each method is one transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def find(self, identity: str) -> int | None:
        with self.store._tx() as session:
            return session.execute(
                select(LaunchRow.id).where(LaunchRow.identity == identity)
            ).scalar_one_or_none()

    def started_at(self, identity: str) -> datetime | None:
        """When the job with this identity started, as first recorded (None: never recorded)."""
        with self.store._tx() as session:
            found = session.execute(
                select(LaunchRow.started_at).where(LaunchRow.identity == identity)
            ).scalar_one_or_none()
        return found

    def create(self, launch: Launch, *, ingest_id: int | None = None) -> int:
        """The launch's id: a new row, or the one a writer racing on the same job stored first."""
        job = launch.job
        try:
            with self.store._tx() as session:
                row = LaunchRow(
                    identity=job.identity,
                    pipeline=job.pipeline,
                    job_id=job.job_id,
                    job_url=job.job_url,
                    commit=(job.commit or "")[:64] or None,
                    ci=job.ci,
                    source=(job.source or "")[:255] or None,
                    format=launch.format[:64],
                    started_at=launch.started_at,
                    summary={**launch.summary(), "warnings": list(launch.warnings)[:50]},
                    ingest_id=ingest_id,
                    created_at=utcnow(),
                )
                session.add(row)
                session.flush()
                rows = [
                    {
                        "launch_id": row.id,
                        "idx": idx,
                        "key": t.key[:1100],
                        "test_id": t.test_id[:1000],
                        "verdict": t.verdict,
                        "duration_s": t.duration_s,
                        "run_id": t.run_id,
                        "err_sig": t.err_sig,
                        "site": t.site,
                        "error": (t.error or None) and t.error.replace("\x00", ""),
                        "triage_id": t.triage_id,
                        "problem": (t.problem or None) and t.problem.replace("\x00", ""),
                        "top": (t.top or "")[:1100] or None,
                        "classification": t.classification,
                        "history": None if t.history is None else dict(t.history),
                    }
                    for idx, t in enumerate(launch.tests)
                ]
                for start in range(0, len(rows), 1000):  # in bulk: a large job holds the lock briefly
                    session.execute(LaunchTestRow.__table__.insert(), rows[start : start + 1000])
                return row.id
        except IntegrityError:
            found = self.find(job.identity)
            if found is None:
                raise
            return found

    def past_runs(self, keys: Iterable[str], *, before: datetime) -> dict[str, list[Run]]:
        """Each test's recorded runs that started before ``before`` (newest ``PAST_RUNS``), oldest
        first, with the commit, job and launch each came from."""
        out: dict[str, list[Run]] = {}
        with self.store._tx() as session:
            for key in sorted(set(keys)):
                test_id = session.execute(select(TestRow.id).where(TestRow.key == key)).scalar_one_or_none()
                if test_id is None:
                    continue
                rows = session.execute(
                    select(
                        RunRow.verdict,
                        RunRow.version_id,
                        RunRow.env_fp,
                        RunRow.err_sig,
                        RunRow.commit,
                        RunRow.job_url,
                        LaunchTestRow.launch_id,
                    )
                    .outerjoin(LaunchTestRow, LaunchTestRow.run_id == RunRow.id)
                    .where(RunRow.test_id == test_id, RunRow.started_at < before)
                    .order_by(RunRow.started_at.desc(), RunRow.id.desc())
                    .limit(PAST_RUNS)
                ).all()
                out[key] = [
                    Run(r.verdict, r.version_id or "", r.env_fp, r.err_sig, r.commit, r.job_url, r.launch_id)
                    for r in reversed(rows)
                ]
        return out

    def recent(
        self, *, pipeline: str | None = None, limit: int = PAGE, offset: int = 0
    ) -> list[dict[str, Any]]:
        """Launches, newest first (of one pipeline when given)."""
        query = select(LaunchRow)
        if pipeline is not None:
            query = query.where(LaunchRow.pipeline == pipeline)
        query = query.order_by(LaunchRow.started_at.desc(), LaunchRow.id.desc()).limit(limit).offset(offset)
        with self.store._tx() as session:
            return [_launch_view(row) for row in session.scalars(query).all()]

    def get(self, launch_id: int) -> dict[str, Any] | None:
        """One launch with every test, in the results' order."""
        with self.store._tx() as session:
            row = session.get(LaunchRow, launch_id)
            if row is None:
                return None
            tests = session.scalars(
                select(LaunchTestRow).where(LaunchTestRow.launch_id == launch_id).order_by(LaunchTestRow.idx)
            ).all()
            return {**_launch_view(row), "tests": [_test_view(t) for t in tests]}

    def tests(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Launch tests by id (labels name the failures they are on by these ids)."""
        if not ids:
            return {}
        with self.store._tx() as session:
            rows = session.scalars(select(LaunchTestRow).where(LaunchTestRow.id.in_(list(ids)))).all()
            return {r.id: {**_test_view(r), "launch_id": r.launch_id} for r in rows}

    def by_triage(self, triage_id: int) -> dict[str, Any] | None:
        """The launch test a stored triage was made for (its newest), with its launch id."""
        with self.store._tx() as session:
            row = session.scalars(
                select(LaunchTestRow)
                .where(LaunchTestRow.triage_id == triage_id)
                .order_by(LaunchTestRow.id.desc())
                .limit(1)
            ).first()
            return None if row is None else {**_test_view(row), "launch_id": row.launch_id}

    def pipelines(self) -> list[str]:
        """Every pipeline with a launch, the most recently launched first."""
        last = func.max(LaunchRow.started_at)
        with self.store._tx() as session:
            return [
                p
                for p, _ in session.execute(
                    select(LaunchRow.pipeline, last)
                    .where(LaunchRow.pipeline.is_not(None))
                    .group_by(LaunchRow.pipeline)
                    .order_by(last.desc())
                ).all()
            ]

    def trend(self, *, pipeline: str | None, last: int) -> list[dict[str, Any]]:
        """The last ``last`` launches (of one pipeline, or of launches without one when None), oldest
        first, each with its counts."""
        query = select(LaunchRow).where(
            LaunchRow.pipeline == pipeline if pipeline is not None else LaunchRow.pipeline.is_(None)
        )
        query = query.order_by(LaunchRow.started_at.desc(), LaunchRow.id.desc()).limit(last)
        with self.store._tx() as session:
            rows = session.scalars(query).all()
        return [_launch_view(row) for row in reversed(rows)]
