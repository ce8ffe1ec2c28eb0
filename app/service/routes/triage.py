"""``/v1/triage``: triage one failure now; read stored results."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request

from app.service.cases import InvalidInput, LimitExceeded, to_case
from app.service.deps import Runtime, RuntimeDep
from app.service.jobs import triage_now
from app.service.pool import PoolUnavailable
from app.service.schemas import Status, StoredTriage, TriagePage, TriageRequest
from app.service.views import triage_summary, triage_view

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1/triage", tags=["triage"])

MAX_ID = 2**31 - 1
IdPath = Annotated[int, Path(ge=1, le=MAX_ID, description="Triage id")]
ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "API key missing or wrong (only when keys are configured)"},
    413: {"description": "A size limit was exceeded; the message names the setting"},
    422: {"description": "Invalid request, or an input over a cost limit; the message says which"},
    503: {"description": "No analysis worker could take the request (shutting down, or a worker fault)"},
}


@router.post("", response_model=StoredTriage, responses=ERRORS)
async def create_triage(body: TriageRequest, request: Request) -> dict[str, Any]:
    """Triage one failing test now; the result is stored and returned with its id."""
    # the runtime read here, not as a dependency: FastAPI solves each dependency of every request
    # anew, and this route is the one that takes the load
    return await triage_one(body, request.app.state.runtime)


async def triage_one(body: TriageRequest, runtime: Runtime) -> dict[str, Any]:
    """``POST /v1/triage``'s work (the dashboard's submit form runs it too)."""
    try:
        case = to_case(body, runtime.settings)
    except LimitExceeded as exc:
        raise HTTPException(413, str(exc)) from None
    except InvalidInput as exc:
        raise HTTPException(422, str(exc)) from None
    try:
        stored = await triage_now(runtime.store, runtime.runner, runtime.leases, case, runtime.writer)
    except ValueError as exc:  # AnalysisRejected too: a limit the input exceeded
        raise HTTPException(422, str(exc)) from None
    except PoolUnavailable as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from None
    except Exception:
        log.exception("triage failed")
        raise
    return triage_view(stored)


@router.get("/{triage_id}", response_model=StoredTriage, responses=ERRORS)
async def get_triage(triage_id: IdPath, runtime: RuntimeDep) -> dict[str, Any]:
    """One stored triage, with its result once done."""
    found = await asyncio.to_thread(runtime.store.get_triage, triage_id)
    if found is None:
        raise HTTPException(404, f"no triage with id {triage_id}")
    return triage_view(found)


@router.get("", response_model=TriagePage, responses=ERRORS)
async def list_triage(
    runtime: RuntimeDep,
    limit: Annotated[int, Query(ge=1, le=500, description="Page size")] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000, description="Rows to skip (prefer cursor)")] = 0,
    cursor: Annotated[
        int | None, Query(ge=1, le=MAX_ID, description="next_cursor of the previous page")
    ] = None,
    test_id: Annotated[str | None, Query(max_length=200, pattern=r"^[^\x00]*$")] = None,
    status: Status | None = None,
) -> dict[str, Any]:
    """Stored triages, newest first; filter by test_id and status; page by cursor or offset."""
    page = await asyncio.to_thread(
        runtime.store.list_triage, limit=limit, offset=offset, cursor=cursor, test_id=test_id, status=status
    )
    return {"items": [triage_summary(t) for t in page.items], "next_cursor": page.next_cursor}
