"""CI runs: one ``POST /v1/ingest`` = one row, each failed test a row pointing at its stored triage.

The tables live on the service's declarative ``Base`` (revision ``0003_ci_runs``); each triage is
an ordinary stored triage (``triage_requests``), so the dashboard lists it like any other, with
the test id as its label.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Engine, ForeignKey, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from app.store.store import Base, _view, utcnow


class CiRunRow(Base):
    """One ingested CI results file (or archive): its format and what it held."""

    __tablename__ = "ci_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    format: Mapped[str] = mapped_column(String(64))
    source: Mapped[str | None] = mapped_column(String(255))
    summary: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # SHA-256 of the upload's Idempotency-Key header (revision 0010_ingest_key)
    idempotency_key: Mapped[str | None] = mapped_column(String(64), unique=True, index=True)


class CiRunTestRow(Base):
    """One failed test of a CI run: its triage (``triage_id``) or why it has none (``problem``)."""

    __tablename__ = "ci_run_tests"
    __table_args__ = (UniqueConstraint("run_id", "idx", name="uq_ci_run_tests_run_idx"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("ci_runs.id"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    test_id: Mapped[str] = mapped_column(String(1024))
    verdict: Mapped[str] = mapped_column(String(16))
    signature: Mapped[str] = mapped_column(String(40))
    triage_id: Mapped[int | None] = mapped_column(ForeignKey("triage_requests.id"), index=True)
    problem: Mapped[str | None] = mapped_column(Text)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


class CiRunStore:
    """Reads and writes CI runs through the service's engine, one transaction per call."""

    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def create(
        self, fmt: str, source: str | None, summary: dict[str, Any], tests: list[dict[str, Any]]
    ) -> int:
        with self._sessions() as session, session.begin():
            return add_ingest(session, fmt, source, summary, tests)

    def get(self, run_id: int) -> dict[str, Any] | None:
        with self._sessions() as session:
            run = session.get(CiRunRow, run_id)
            if run is None:
                return None
            rows = session.scalars(
                select(CiRunTestRow).where(CiRunTestRow.run_id == run_id).order_by(CiRunTestRow.idx)
            ).all()
            return {
                **_view(run, "id format source created_at"),
                **run.summary,
                "tests": [dict(row.data, triage_id=row.triage_id, problem=row.problem) for row in rows],
            }


def add_ingest(
    session: Session,
    fmt: str,
    source: str | None,
    summary: dict[str, Any],
    tests: list[dict[str, Any]],
    *,
    key: str | None = None,
) -> int:
    """One ingest and its failed tests, in the caller's transaction; the ingest's id. ``key``: the
    hash of the upload's idempotency key."""
    run = CiRunRow(format=fmt[:64], source=(source or "")[:255] or None, summary=summary, idempotency_key=key)
    session.add(run)
    session.flush()
    session.add_all(
        CiRunTestRow(
            run_id=run.id,
            idx=idx,
            test_id=str(test["test_id"])[:1024],
            verdict=str(test["verdict"])[:16],
            signature=str(test["signature"])[:40],
            triage_id=test.get("triage_id"),
            problem=(test.get("problem") or None) and str(test["problem"]).replace("\x00", ""),
            data={k: v for k, v in test.items() if k != "result"},
        )
        for idx, test in enumerate(tests)
    )
    session.flush()
    return run.id


def ingest_triages(session: Session, run_id: int) -> list[int | None]:
    """The triage id of each failed test of an ingest, in order."""
    return list(
        session.scalars(
            select(CiRunTestRow.triage_id).where(CiRunTestRow.run_id == run_id).order_by(CiRunTestRow.idx)
        )
    )


def ingest_by_key(session: Session, key: str) -> int | None:
    """The ingest stored with this idempotency key hash, if any."""
    return session.scalar(select(CiRunRow.id).where(CiRunRow.idempotency_key == key))
