"""``/healthz`` (never behind a key) and ``/metrics`` (Prometheus text)."""

from __future__ import annotations

import asyncio
from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Depends, Response

from app.service.deps import RuntimeDep, require_api_key
from app.service.metrics import CONTENT_TYPE
from app.service.schemas import Health

router = APIRouter(tags=["operations"])
DATABASE_PING_S = 2.0


def package_version() -> str:
    try:
        return version("tcfl")
    except PackageNotFoundError:
        return "unknown"


@router.get(
    "/healthz", response_model=Health, responses={503: {"model": Health, "description": "Database down"}}
)
async def healthz(runtime: RuntimeDep, response: Response) -> Health:
    """Liveness and readiness: database, model server (when configured), batch worker, version.

    The database is "ok" only when it can take writes: a SQLite file still the one opened, a small
    write committed (at most every few seconds), no write refused lately (``Store.health``).

    Never waits on the model server: its state comes from the last background probe and the
    circuit breaker, so a hung model server cannot hang the health check.
    """
    try:
        problem = await asyncio.wait_for(asyncio.to_thread(runtime.store.health), DATABASE_PING_S)
        database = "ok" if problem is None else f"error: {problem}"
    except TimeoutError:
        database = f"error: no answer within {DATABASE_PING_S:g} s"
    except Exception as exc:
        database = f"error: {type(exc).__name__}"
    circuit, detail = "not configured", ""
    if runtime.client is None:
        model_server = "not configured"
    else:
        circuit = runtime.client.breaker.state()
        model_server = "ok" if runtime.model_reachable and circuit == "closed" else "unreachable"
        if model_server != "ok":
            detail = runtime.client.status()
    healthy = database == "ok" and model_server != "unreachable"
    if database != "ok":
        response.status_code = 503
    return Health(
        status="ok" if healthy else "degraded",
        version=package_version(),
        database=database,
        model_server=model_server,
        worker=runtime.worker_state(),
        model_circuit=circuit,
        model_detail=detail,
        analysis_workers=runtime.pool.size if runtime.pool is not None else 0,
        analysis_busy=runtime.pool.busy() if runtime.pool is not None else 0,
    )


@router.get(
    "/metrics",
    response_class=Response,
    dependencies=[Depends(require_api_key)],
    responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text format"}},
)
async def metrics(runtime: RuntimeDep) -> Response:
    """Prometheus metrics for this process (queue depth is read from the database at scrape time)."""
    try:
        depth = await asyncio.wait_for(asyncio.to_thread(runtime.store.queue_depth), DATABASE_PING_S)
        runtime.metrics.set_queue_depth(depth)
    except Exception:
        runtime.metrics.queue_depth.clear()
    runtime.metrics.set_runtime_state(runtime.client, runtime.pool, runtime.writer)
    return Response(runtime.metrics.render(), media_type=CONTENT_TYPE)
