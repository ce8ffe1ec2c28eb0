"""Read-only queries the list page needs beyond ``Store.list_triage``: file names and result summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import Engine, Select, func, or_, select
from sqlalchemy.orm import Session

from app.ingest.testkey import canonical_key
from app.service.views import triage_summary
from app.store.snapshots import SnapshotRow
from app.store.store import (
    Page,
    RequestScriptRow,
    ResultRow,
    TriageRequestRow,
    _iso,
    stored_triage,
    values_by,
)

ERROR_PREVIEW_CHARS = 240


@dataclass(frozen=True)
class Extra:
    """What the list shows of a triage besides its summary row."""

    files: tuple[str, ...]
    error_message: str | None
    ranker: str | None  # the ranker actually used (llm | heuristic), once done
    model: str | None
    top: dict[str, Any] | None  # the rank-1 element


def extras(engine: Engine, ids: Sequence[int]) -> dict[int, Extra]:
    if not ids:
        return {}
    files: dict[int, list[str]] = {}
    results: dict[int, dict[str, Any]] = {}
    with Session(engine) as session, session.begin():
        rows = session.execute(
            select(RequestScriptRow.request_id, RequestScriptRow.path)
            .where(RequestScriptRow.request_id.in_(list(ids)))
            .order_by(RequestScriptRow.request_id, RequestScriptRow.position)
        ).all()
        for request_id, path in rows:
            files.setdefault(request_id, []).append(path)
        for request_id, data in session.execute(
            select(ResultRow.request_id, ResultRow.data).where(ResultRow.request_id.in_(list(ids)))
        ).all():
            results[request_id] = data or {}
    out: dict[int, Extra] = {}
    for request_id in ids:
        data = results.get(request_id, {})
        ranking = data.get("ranking") or []
        message = data.get("error_message")
        out[request_id] = Extra(
            files=tuple(files.get(request_id, ())),
            error_message=message[:ERROR_PREVIEW_CHARS] if isinstance(message, str) else None,
            ranker=data.get("ranker"),
            model=data.get("model"),
            top=ranking[0] if ranking else None,
        )
    return out


@dataclass(frozen=True)
class Filters:
    """The list page's search and filters; empty values filter nothing."""

    q: str = ""  # a substring of the test id, a script path or the error text (any case)
    status: str = ""
    ranker: str = ""  # the ranker that answered: llm | heuristic
    since: date | None = None  # created on or after this day (UTC)
    until: date | None = None  # created on or before this day (UTC)
    signature: str = ""

    @property
    def active(self) -> bool:
        return bool(self.q or self.status or self.ranker or self.since or self.until or self.signature)


@dataclass(frozen=True)
class GroupRow:
    """One signature's row of the failure list's grouped view."""

    signature: str
    count: int
    tests: int  # distinct tests (their ids' keys)
    latest_id: int
    first_seen: str | None
    last_seen: str | None
    extra: Extra


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _filtered(query: Select[Any], filters: Filters) -> Select[Any]:
    if filters.q:
        pattern = _like(filters.q)
        in_paths = (
            select(RequestScriptRow.request_id)
            .where(RequestScriptRow.path.ilike(pattern, escape="\\"))
            .scalar_subquery()
        )
        query = query.where(
            or_(
                TriageRequestRow.test_id.ilike(pattern, escape="\\"),
                SnapshotRow.error_text.ilike(pattern, escape="\\"),
                TriageRequestRow.error.ilike(pattern, escape="\\"),
                TriageRequestRow.id.in_(in_paths),
            )
        )
    if filters.status:
        query = query.where(TriageRequestRow.status == filters.status)
    if filters.ranker:
        query = query.where(SnapshotRow.ranker == filters.ranker)
    if filters.since:
        query = query.where(TriageRequestRow.created_at >= datetime.combine(filters.since, time(), UTC))
    if filters.until:
        end = datetime.combine(filters.until + timedelta(days=1), time(), UTC)
        query = query.where(TriageRequestRow.created_at < end)
    if filters.signature:
        query = query.where(SnapshotRow.signature == filters.signature)
    return query


def search(engine: Engine, filters: Filters, *, limit: int, cursor: int | None) -> Page:
    """Triages matching the filters, newest first, a page at a time (``cursor`` = last id shown)."""
    query = (
        select(TriageRequestRow)
        .outerjoin(SnapshotRow, SnapshotRow.request_id == TriageRequestRow.id)
        .order_by(TriageRequestRow.id.desc())
    )
    if cursor is not None:
        query = query.where(TriageRequestRow.id < cursor)
    with Session(engine) as session, session.begin():
        rows = session.scalars(_filtered(query, filters).limit(limit + 1)).all()
        items = [triage_summary(stored_triage(r, None)) for r in rows[:limit]]
        signatures = values_by(
            session, SnapshotRow.request_id, SnapshotRow.signature, [i["id"] for i in items]
        )
    for item in items:
        item["signature"] = signatures.get(item["id"])
    return Page(items=items, next_cursor=items[-1]["id"] if len(rows) > limit else None)


def groups(engine: Engine, filters: Filters, *, limit: int, offset: int) -> tuple[list[GroupRow], bool]:
    """Failures with the same signature together, biggest group first; and whether more follow."""
    query = (
        select(
            SnapshotRow.signature,
            func.count(),
            func.max(TriageRequestRow.id),
            func.min(TriageRequestRow.created_at),
            func.max(TriageRequestRow.created_at),
        )
        .join(SnapshotRow, SnapshotRow.request_id == TriageRequestRow.id)
        .group_by(SnapshotRow.signature)
        .order_by(func.count().desc(), func.max(TriageRequestRow.id).desc())
    )
    with Session(engine) as session, session.begin():
        rows = session.execute(_filtered(query, filters).offset(offset).limit(limit + 1)).all()
        labels = session.execute(
            _filtered(
                select(SnapshotRow.signature, TriageRequestRow.test_id)
                .join(SnapshotRow, SnapshotRow.request_id == TriageRequestRow.id)
                .where(SnapshotRow.signature.in_([r[0] for r in rows[:limit]]))
                .distinct(),
                filters,
            )
        ).all()
    tested: dict[str, set[str]] = {}
    for sig, label in labels:  # one test under two tools' ids is one test (app.ingest.testkey)
        if label and label.strip():
            tested.setdefault(sig, set()).add(canonical_key(label))
    more = extras(engine, [int(r[2]) for r in rows[:limit]])
    out = [
        GroupRow(
            signature=str(sig),
            count=int(count),
            tests=len(tested.get(sig, ())),
            latest_id=int(latest),
            first_seen=_iso(first),
            last_seen=_iso(last),
            extra=more[int(latest)],
        )
        for sig, count, latest, first, last in rows[:limit]
    ]
    return out, len(rows) > limit
