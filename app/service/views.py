"""Stored records -> the JSON the API answers with and the dashboard shows: built here only."""

from __future__ import annotations

from typing import Any

from app.store.store import StoredTriage


def triage_view(stored: StoredTriage) -> dict[str, Any]:
    """``GET /v1/triage/{id}``: the result's data with the request's id, status, test and time."""
    view: dict[str, Any] = dict(stored.result) if stored.result is not None else {}
    view.update(
        {
            "id": stored.id,
            "status": stored.status,
            "test_id": stored.test_id,
            "created_at": stored.created_at.isoformat() if stored.created_at else None,
        }
    )
    if stored.result is None:
        view.update({"options": stored.options, "error": stored.error})
    return view


def triage_summary(stored: StoredTriage) -> dict[str, Any]:
    """One row of ``GET /v1/triage`` and of the dashboard's list: no result data."""
    return {
        "id": stored.id,
        "status": stored.status,
        "test_id": stored.test_id,
        "created_at": stored.created_at.isoformat() if stored.created_at else None,
        **stored.summary_index,
        "error": stored.error,
    }
