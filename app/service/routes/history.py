"""CI history: ``POST /v1/runs``, ``/v1/tests``, ``/v1/tests/{key}/history``, ``/v1/signatures``."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query, Request

from app.history.records import RunRecord, parse_run
from app.history.surface import spectrum_view
from app.ingest.testkey import canonical_key
from app.service.admission import admit_request
from app.service.deps import RuntimeDep
from app.service.pool import PoolUnavailable
from app.service.routes.batches import JSONL_TYPES, body_doc
from app.service.routes.ingest import facts_warnings
from app.service.routes.triage import ERRORS
from app.settings import Settings
from app.store.history import SIGNATURE_PAGE, HistoryStore, SignatureOrder, signature_runs, unstorable

router = APIRouter(tags=["history"])
_BODY_DOC = body_doc(
    {
        "application/json": {
            "schema": {
                "description": 'One run record, a list of them, or {"runs": [...]}: test_id, verdict'
                " (pass/fail/error/skip), optional started_at, env, params, ci {pipeline, job_url,"
                " commit}, scripts [{path, content}], log",
                "type": "object",
            }
        },
        "application/x-ndjson": {"schema": {"type": "string", "description": "One run record per line"}},
    }
)


def parse_runs(body: bytes, media: str, settings: Settings) -> list[RunRecord]:
    """Records from a JSON or NDJSON body; ``ValueError`` naming the record that is wrong."""
    if media in JSONL_TYPES:
        items = []
        for n, line in enumerate(body.decode("utf-8", errors="replace").splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"line {n} is not JSON: {exc.msg}") from None
    else:
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"the body is not JSON: {exc}") from None
        items = data.get("runs") if isinstance(data, dict) and "runs" in data else data
        items = items if isinstance(items, list) else [items]
    if not items:
        raise ValueError("no run record in the body")
    if len(items) > settings.max_cases_per_batch:
        raise ValueError(
            f"at most {settings.max_cases_per_batch} runs per request (TCFL_MAX_CASES_PER_BATCH)"
        )
    out = []
    for n, item in enumerate(items, 1):
        try:
            record = parse_run(item)
        except ValueError as exc:
            raise ValueError(f"run {n}: {exc}") from None
        if record.log is not None and len(record.log.encode("utf-8")) > settings.max_log_bytes:
            raise ValueError(f"run {n}: log larger than {settings.max_log_bytes} bytes (TCFL_MAX_LOG_BYTES)")
        if any(len(s.content.encode("utf-8")) > settings.max_script_bytes for s in record.scripts):
            raise ValueError(f"run {n}: a script is larger than {settings.max_script_bytes} bytes")
        problem = unstorable(record)
        if problem is not None:  # refused before anything of the request is stored
            raise ValueError(f"run {n}: {problem}")
        out.append(record)
    return out


@router.post("/v1/runs", status_code=201, responses=ERRORS, openapi_extra=_BODY_DOC)
async def create_runs(request: Request, runtime: RuntimeDep) -> dict[str, Any]:
    """Record CI runs, passes too (idempotent on job URL and test id): run_id, version_id, err_sig each."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    turns = runtime.upload_turns()
    client = admit_request(turns, request)
    try:
        body = await request.body()
        try:
            records = await asyncio.to_thread(parse_runs, body, media, runtime.settings)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        async with turns.turn(client):
            try:  # the runs' facts in the analysis pool, under its limits, many runs a job
                records = await runtime.runner.with_facts(records)
            except PoolUnavailable as exc:
                raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from None
            created = await asyncio.to_thread(HistoryStore(runtime.store).add_runs, records)
    finally:
        turns.leave(client)
    out: dict[str, Any] = {"runs": created}
    warnings = facts_warnings(records)
    if warnings:
        out["warnings"] = warnings
    return out


@router.get("/v1/tests", responses=ERRORS)
async def list_tests(
    runtime: RuntimeDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> dict[str, Any]:
    """Tests with recorded runs, most recently run first."""
    items = await asyncio.to_thread(HistoryStore(runtime.store).tests, limit=limit, offset=offset)
    return {"items": items}


@router.get("/v1/tests/{key:path}/history", responses={**ERRORS, 404: {"description": "No such test"}})
async def test_history(
    key: str, runtime: RuntimeDep, limit: Annotated[int, Query(ge=1, le=1000)] = 200
) -> dict[str, Any]:
    """A test's runs newest first, versions, new/recurring/regression/flaky, first bad version."""
    page = await asyncio.to_thread(HistoryStore(runtime.store).history, key, limit=limit)
    if page is None:
        raise HTTPException(404, f"no runs recorded for test {key!r}")
    return page


@router.get("/v1/signatures", responses=ERRORS)
async def signatures(
    runtime: RuntimeDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = SIGNATURE_PAGE,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    order: Annotated[
        SignatureOrder, Query(description="recent: newest failure first; failures: largest group first")
    ] = "recent",
) -> dict[str, Any]:
    """A page of failures grouped by error signature across tests; next_offset is null on the last."""
    store = HistoryStore(runtime.store)
    items = await asyncio.to_thread(store.signatures, limit=limit + 1, offset=offset, order=order)
    return {"items": items[:limit], "next_offset": offset + limit if len(items) > limit else None}


@router.get(
    "/v1/tests/{key:path}/spectrum", responses={**ERRORS, 404: {"description": "No such test or version"}}
)
async def test_spectrum(
    key: str,
    runtime: RuntimeDep,
    version: Annotated[
        str | None, Query(max_length=64, description="Script version id; default the newest")
    ] = None,
    level: Literal["line", "block"] = "line",
    window: Annotated[int, Query(ge=1, le=500, description="Newest runs with a trace to count")] = 200,
) -> dict[str, Any]:
    """Per line or block of a script version: the weighted counts (ef, ep, nf, np) and the scores."""

    def build() -> dict[str, Any] | None:
        runs = HistoryStore(runtime.store).history_runs(key, target_version=version, limit=window)
        return spectrum_view(runs, version, level)

    page = await asyncio.to_thread(build)
    if page is None:
        what = f"version {version!r} of test {key!r}" if version else f"test {key!r}"
        raise HTTPException(404, f"no runs with a trace recorded for {what}")
    return {"key": canonical_key(key), **page}  # the key in any tool's form found it


@router.get("/v1/runs/{run_id}", responses={**ERRORS, 404: {"description": "No such run"}})
async def get_run(run_id: Annotated[int, Path(ge=1, le=2**31 - 1)], runtime: RuntimeDep) -> dict[str, Any]:
    """One recorded run of the CI history (as ``POST /v1/runs`` answered its run_id), log and trace too.

    An ingested CI job (``POST /v1/ingest``) is ``GET /v1/ingests/{id}``.
    """
    found = await asyncio.to_thread(HistoryStore(runtime.store).run, run_id)
    if found is None:
        raise HTTPException(404, f"no recorded run with id {run_id} (an ingest is /v1/ingests/{{id}})")
    return found


@router.get("/v1/signatures/{sig}", responses={**ERRORS, 404: {"description": "No failure with it"}})
async def signature(
    sig: Annotated[
        str, Path(pattern="^[0-9a-f]{40}$", description="err_sig, as GET /v1/signatures lists it")
    ],
    runtime: RuntimeDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict[str, Any]:
    """One signature group: its failures across tests, newest first, and the tests they came from."""
    runs = await asyncio.to_thread(signature_runs, runtime.store, sig, limit=limit)
    if runs is None:
        raise HTTPException(404, f"no recorded failure has signature {sig}")
    return {"err_sig": sig, "tests": sorted({r["key"] for r in runs}), "runs": runs}
