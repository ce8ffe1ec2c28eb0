"""``/v1/batches``: queue many failures; follow their progress."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request
from starlette.datastructures import UploadFile

from app.service.cases import InvalidInput, LimitExceeded, parse_batch_json, parse_jsonl, to_case
from app.service.deps import RuntimeDep
from app.service.routes.triage import ERRORS, MAX_ID
from app.service.schemas import BatchCreated, BatchDetail, BatchPage, TriageRequest
from app.settings import Settings
from app.store.store import Submission

router = APIRouter(prefix="/v1/batches", tags=["batches"])

JSONL_TYPES = frozenset(
    {"application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/ndjson"}
)


def body_doc(content: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI's entry for a required request body in these media types (the route reads the body itself)."""
    return {"requestBody": {"required": True, "content": content}}


_BODY_DOC = body_doc(
    {
        "application/json": {"schema": {"$ref": "#/components/schemas/BatchRequest"}},
        "application/x-ndjson": {
            "schema": {"type": "string", "description": "One triage request body (JSON) per line"}
        },
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary", "description": "A JSONL file"}},
                "required": ["file"],
            }
        },
    }
)


@router.post(
    "",
    status_code=202,
    response_model=BatchCreated,
    responses={**ERRORS, 415: {"description": "Unsupported content type"}},
    openapi_extra=_BODY_DOC,
)
async def create_batch(request: Request, runtime: RuntimeDep) -> dict[str, Any]:
    """Queue many failures: JSON {"cases": [...]}, an NDJSON body, or a multipart JSONL file field "file"."""
    settings = runtime.settings
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        if media == "multipart/form-data":
            requests = parse_jsonl(await _uploaded(request), settings)
        elif media in JSONL_TYPES:
            requests = parse_jsonl(await request.body(), settings)
        elif media in ("application/json", ""):
            requests = parse_batch_json(await request.body(), settings)
        else:
            raise HTTPException(415, f"unsupported content type {media!r}: send JSON, NDJSON or multipart")
        cases = _cases(requests, settings)
    except LimitExceeded as exc:
        raise HTTPException(413, str(exc)) from None
    except InvalidInput as exc:
        raise HTTPException(422, str(exc)) from None
    batch_id = await asyncio.to_thread(runtime.store.create_batch, cases, source="api")
    runtime.wake_worker()
    return {"id": batch_id, "status": "queued", "total": len(cases)}


@router.get("/{batch_id}", response_model=BatchDetail, responses=ERRORS)
async def get_batch(batch_id: Annotated[int, Path(ge=1, le=MAX_ID)], runtime: RuntimeDep) -> dict[str, Any]:
    """A batch's progress and every item's status and result id."""
    found = await asyncio.to_thread(runtime.store.get_batch, batch_id)
    if found is None:
        raise HTTPException(404, f"no batch with id {batch_id}")
    return found


@router.get("", response_model=BatchPage, responses=ERRORS)
async def list_batches(
    runtime: RuntimeDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> dict[str, Any]:
    """Batches, newest first, with their counts."""
    items = await asyncio.to_thread(runtime.store.list_batches, limit=limit, offset=offset)
    return {"items": items}


async def _uploaded(request: Request) -> bytes:
    form = await request.form(max_files=1, max_fields=10)
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise InvalidInput("multipart upload needs a JSONL file in a field named 'file'")
    return await upload.read()


def _cases(requests: list[TriageRequest], settings: Settings) -> list[Submission]:
    return [to_case(r, settings, where=f"cases[{i}]: ") for i, r in enumerate(requests)]
