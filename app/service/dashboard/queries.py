"""Read-only queries the list page needs beyond ``Store.list_triage``: file names and result summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.service.store import RequestScriptRow, ResultRow

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
