"""Labels of known issues (``labels``, revision ``0009_launches_labels``).

A label is on one failure (a launch test) or on a group of failures (an error signature, or a
fault site); a label carried over to a new failure of a labelled group is stored on that failure
with ``auto`` set and the group label as its origin, so a person can take it off (``undo``) and it
is never carried over to that failure again. Which label a failure carries is
``app.launch.failure_label``; this module reads and writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text, or_, select
from sqlalchemy.orm import Mapped, mapped_column

from app.launch import Known, Label, failure_label, group_label
from app.store.launches import LaunchTestRow
from app.store.store import Base, Store, _view, utcnow


class LabelRow(Base):
    __tablename__ = "labels"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    err_sig: Mapped[str | None] = mapped_column(String(40), index=True)
    site: Mapped[str | None] = mapped_column(String(40), index=True)
    failure_id: Mapped[int | None] = mapped_column(ForeignKey("launch_tests.id"), index=True)
    defect_type: Mapped[str] = mapped_column(String(64))
    bug_url: Mapped[str | None] = mapped_column(String(2000))
    comment: Mapped[str | None] = mapped_column(Text)
    auto: Mapped[bool] = mapped_column(Boolean, default=False)
    origin_id: Mapped[int | None] = mapped_column(ForeignKey("labels.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    undone_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


def _label(row: LabelRow) -> Label:
    return Label(
        row.id,
        row.defect_type,
        row.bug_url,
        row.comment,
        row.err_sig,
        row.site,
        row.failure_id,
        row.auto,
        row.origin_id,
        row.undone_at is not None,
    )


_LABEL_VIEW = "id defect_type bug_url comment err_sig site failure_id auto origin_id created_at undone_at"


def label_view(row: LabelRow) -> dict[str, Any]:
    return _view(row, _LABEL_VIEW)


class LabelStore:
    """Label reads and writes on a ``Store``'s engine; each method is one transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(
        self,
        defect_type: str,
        *,
        bug_url: str | None = None,
        comment: str | None = None,
        err_sig: str | None = None,
        site: str | None = None,
        failure_id: int | None = None,
    ) -> dict[str, Any]:
        """A new label on one failure or on a group (exactly one of the three targets)."""
        if sum(x is not None for x in (err_sig, site, failure_id)) != 1:
            raise ValueError("a label goes on exactly one of: a failure, a signature, a fault site")
        with self.store._tx() as session:
            if failure_id is not None and session.get(LaunchTestRow, failure_id) is None:
                raise LookupError(f"no failure with id {failure_id}")
            row = LabelRow(
                defect_type=defect_type,
                bug_url=bug_url,
                comment=comment,
                err_sig=err_sig,
                site=site,
                failure_id=failure_id,
                auto=False,
                created_at=utcnow(),
            )
            session.add(row)
            session.flush()
            return label_view(row)

    def undo(self, label_id: int) -> dict[str, Any] | None:
        """Take a label off (kept, marked undone); None when there is no such label."""
        with self.store._tx() as session:
            row = session.get(LabelRow, label_id)
            if row is None:
                return None
            if row.undone_at is None:
                row.undone_at = utcnow()
            return label_view(row)

    def get(self, label_id: int) -> dict[str, Any] | None:
        with self.store._tx() as session:
            row = session.get(LabelRow, label_id)
            return None if row is None else label_view(row)

    def labels(
        self,
        *,
        err_sigs: Iterable[str] = (),
        failure_ids: Iterable[int] = (),
        undone: bool = False,
        limit: int = 200,
    ) -> list[dict[str, Any]]:
        """Labels on these signatures or failures (every label when none is named), newest first."""
        sigs, failures = sorted(set(err_sigs)), sorted(set(failure_ids))
        query = select(LabelRow)
        if sigs or failures:
            query = query.where(or_(LabelRow.err_sig.in_(sigs), LabelRow.failure_id.in_(failures)))
        if not undone:
            query = query.where(LabelRow.undone_at.is_(None))
        with self.store._tx() as session:
            rows = session.scalars(query.order_by(LabelRow.id.desc()).limit(limit)).all()
            return [label_view(r) for r in rows]

    def _failures(self, session: Any, launch_id: int) -> list[LaunchTestRow]:
        return list(
            session.scalars(
                select(LaunchTestRow)
                .where(LaunchTestRow.launch_id == launch_id, LaunchTestRow.verdict.in_(("fail", "error")))
                .order_by(LaunchTestRow.idx)
            ).all()
        )

    def _labels_of(
        self, session: Any, failures: list[LaunchTestRow]
    ) -> tuple[dict[int, list[Label]], list[Label]]:
        """(failure id -> its own labels, the group labels on their signatures and sites)."""
        ids = [f.id for f in failures]
        sigs = sorted({f.err_sig for f in failures if f.err_sig})
        sites = sorted({f.site for f in failures if f.site})
        own: dict[int, list[Label]] = {}
        for row in session.scalars(select(LabelRow).where(LabelRow.failure_id.in_(ids))).all():
            own.setdefault(row.failure_id, []).append(_label(row))
        groups = [
            _label(row)
            for row in session.scalars(
                select(LabelRow).where(
                    LabelRow.failure_id.is_(None),
                    LabelRow.undone_at.is_(None),
                    or_(LabelRow.err_sig.in_(sigs), LabelRow.site.in_(sites)),
                )
            ).all()
        ]
        return own, groups

    def carry_over(self, launch_id: int) -> int:
        """Label each failure of a new launch whose group is labelled (auto, undoable); how many."""
        made = 0
        with self.store._tx() as session:
            failures = self._failures(session, launch_id)
            own, groups = self._labels_of(session, failures)
            now = utcnow()
            for f in failures:
                if any(not label.undone for label in own.get(f.id, ())):
                    continue
                refused = {label.origin_id for label in own.get(f.id, ()) if label.undone and label.origin_id}
                group = group_label(groups, f.err_sig, f.site, {r for r in refused if r is not None})
                if group is None:
                    continue
                session.add(
                    LabelRow(
                        defect_type=group.defect_type,
                        bug_url=group.bug_url,
                        comment=group.comment,
                        failure_id=f.id,
                        auto=True,
                        origin_id=group.id,
                        created_at=now,
                    )
                )
                made += 1
        return made

    def known(self, launch_id: int) -> dict[str, Known]:
        """The launch's failures that are known issues: test id -> the label each carries."""
        with self.store._tx() as session:
            failures = self._failures(session, launch_id)
            own, groups = self._labels_of(session, failures)
        out: dict[str, Known] = {}
        for f in failures:
            label = failure_label(own.get(f.id, ()), groups, f.err_sig, f.site)
            if label is not None:
                out.setdefault(f.test_id, label.known())
        return out

    def for_failures(self, failure_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """failure id -> the label it carries (its own or its group's), for pages that list them."""
        ids = sorted(set(failure_ids))
        if not ids:
            return {}
        with self.store._tx() as session:
            failures = list(session.scalars(select(LaunchTestRow).where(LaunchTestRow.id.in_(ids))).all())
            own, groups = self._labels_of(session, failures)
            rows = {
                r.id: r
                for r in session.scalars(
                    select(LabelRow).where(
                        LabelRow.id.in_(
                            [g.id for g in groups] + [label.id for labels in own.values() for label in labels]
                        )
                    )
                ).all()
            }
        out = {}
        for f in failures:
            label = failure_label(own.get(f.id, ()), groups, f.err_sig, f.site)
            if label is not None:
                out[f.id] = {**label_view(rows[label.id]), "group": label.failure_id is None}
        return out
