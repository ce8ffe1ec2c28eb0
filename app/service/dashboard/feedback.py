"""Engineers' feedback: which lines really held the fault, stored beside the triages.

The table lives on the service's declarative ``Base`` so one Alembic history covers it
(revision ``0002_feedback``); the arithmetic of Hit@k is in ``accuracy`` (pure).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, Engine, ForeignKey, Integer, String, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from app.analysis.model import Loc
from app.service.dashboard.accuracy import ACCURACY_KS, Accuracy, hit_at_k
from app.store.store import Base, ResultRow, Store, utcnow


class FeedbackRow(Base):
    """One line an engineer marked as (part of) the real fault of a triaged failure."""

    __tablename__ = "feedback"
    __table_args__ = (UniqueConstraint("triage_id", "path", "line", name="uq_feedback_triage_path_line"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    triage_id: Mapped[int] = mapped_column(ForeignKey("triage_requests.id"), index=True)
    path: Mapped[str] = mapped_column(String(1024))
    line: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class FeedbackStore:
    """Reads and writes feedback through the service's engine, one transaction per call."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def lines(self, triage_id: int) -> list[Loc]:
        query = select(FeedbackRow.path, FeedbackRow.line).where(FeedbackRow.triage_id == triage_id)
        with Session(self.engine) as session, session.begin():
            return sorted(Loc(path, line) for path, line in session.execute(query).all())

    def set_lines(self, triage_id: int, locs: Iterable[Loc]) -> list[Loc]:
        """Make the marked set exactly ``locs``; lines kept from before keep their ``created_at``."""
        wanted = set(locs)
        with Session(self.engine) as session, session.begin():
            rows = session.scalars(select(FeedbackRow).where(FeedbackRow.triage_id == triage_id)).all()
            have = {Loc(r.path, r.line): r for r in rows}
            gone = [r.id for loc, r in have.items() if loc not in wanted]
            if gone:
                session.execute(delete(FeedbackRow).where(FeedbackRow.id.in_(gone)))
            now = utcnow()
            session.add_all(
                FeedbackRow(triage_id=triage_id, path=loc.path, line=loc.line, created_at=now)
                for loc in sorted(wanted - set(have))
            )
        return sorted(wanted)

    def marked_cases(self, store: Store) -> list[dict[str, Any]]:
        """Every triage with marked lines as a benchmark case (scripts, log, faulty lines): what
        ``tcfl learn --db`` learns from beside mined cases. Marks outside the triage's scripts are
        dropped; a triage left with none is skipped."""
        marked: dict[int, list[Loc]] = {}
        with Session(self.engine) as session, session.begin():
            for triage_id, path, line in session.execute(
                select(FeedbackRow.triage_id, FeedbackRow.path, FeedbackRow.line).order_by(
                    FeedbackRow.triage_id
                )
            ).all():
                marked.setdefault(triage_id, []).append(Loc(path, line))
        cases = []
        for triage_id, locs in marked.items():
            case = store.load_case(triage_id)
            paths = {s.path for s in case.scripts}
            lines = [{"path": loc.path, "line": loc.line} for loc in sorted(locs) if loc.path in paths]
            if not lines:
                continue
            cases.append(
                {
                    "id": f"dashboard-{triage_id}",
                    "repo": "dashboard",
                    "test_files": [{"path": s.path, "content": s.content} for s in case.scripts],
                    "failure_log": case.log,
                    "faulty_lines": lines,
                    "log_functions": list(case.options.get("log_functions") or []),
                }
            )
        return cases

    def accuracy(self, ks: Sequence[int] = ACCURACY_KS) -> Accuracy:
        """Hit@k over every triage with feedback so far (those without a stored ranking are skipped)."""
        marked: dict[int, list[Loc]] = {}
        with Session(self.engine) as session, session.begin():
            for triage_id, path, line in session.execute(
                select(FeedbackRow.triage_id, FeedbackRow.path, FeedbackRow.line)
            ).all():
                marked.setdefault(triage_id, []).append(Loc(path, line))
            rankings: dict[int, list[dict[str, Any]]] = {}
            ids = list(marked)
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                for request_id, data in session.execute(
                    select(ResultRow.request_id, ResultRow.data).where(ResultRow.request_id.in_(chunk))
                ).all():
                    rankings[request_id] = list((data or {}).get("ranking") or [])
        return hit_at_k(((locs, rankings.get(tid, [])) for tid, locs in marked.items()), ks)
