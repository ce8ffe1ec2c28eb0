"""``/healthz`` (never behind a key) and ``/metrics`` (Prometheus text)."""

from __future__ import annotations

import asyncio
from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Depends, Response

from app.service.deps import RuntimeDep, require_api_key
from app.service.metrics import CONTENT_TYPE
from app.service.schemas import Health

router = APIRouter(tags=["operations"])


def package_version() -> str:
    try:
        return version("tcfl")
    except PackageNotFoundError:
        return "unknown"


@router.get(
    "/healthz", response_model=Health, responses={503: {"model": Health, "description": "Database down"}}
)
async def healthz(runtime: RuntimeDep, response: Response) -> Health:
    """Liveness and readiness: database, model server (when configured), batch worker, version."""
    try:
        await asyncio.to_thread(runtime.store.ping)
        database = "ok"
    except Exception as exc:
        database = f"error: {type(exc).__name__}"
    if runtime.client is None:
        model_server = "not configured"
    else:
        model_server = "ok" if await runtime.client.health() else "unreachable"
    healthy = database == "ok" and model_server != "unreachable"
    if database != "ok":
        response.status_code = 503
    return Health(
        status="ok" if healthy else "degraded",
        version=package_version(),
        database=database,
        model_server=model_server,
        worker=runtime.worker_state(),
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
        runtime.metrics.set_queue_depth(await asyncio.to_thread(runtime.store.queue_depth))
    except Exception:
        runtime.metrics.queue_depth.clear()
    return Response(runtime.metrics.render(), media_type=CONTENT_TYPE)
