"""The FastAPI application: ``create_app`` wires settings, storage, the worker and the routers.

``/`` is left to the dashboard: when ``app.service.dashboard`` exists, its ``router`` is included
(behind the API key like every route but ``/healthz``) and its ``STATIC_DIR``, if it has one, is
served at ``/static`` without a key.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.staticfiles import StaticFiles
from jinja2 import pass_context
from sqlalchemy.exc import DataError, SQLAlchemyError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.localize.llm import ModelClient
from app.service.deps import SECURITY, Runtime, require_api_key
from app.service.jobs import SyncLeases, Worker
from app.service.logs import request_id_var
from app.service.metrics import Metrics
from app.service.pool import AnalysisPool, PoolLimits, default_size
from app.service.routes import batches, health, history, ingest, launches, triage
from app.service.runner import HistoryReader, Runner
from app.service.schemas import BatchRequest
from app.service.security import (
    BrowserSafetyMiddleware,
    HostCheckMiddleware,
    csrf_field,
    csrf_token,
    require_csrf,
)
from app.service.writer import TriageWriter
from app.settings import Settings, get_settings
from app.store.history import HistoryStore
from app.store.store import Store, StoreUnavailable, make_engine, migrate, storage_error

log = logging.getLogger(__name__)

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
WORKER_STOP_TIMEOUT_S = 5.0
MODEL_PROBE_S = 10.0


def max_body_bytes(settings: Settings) -> int:
    """Twice the largest legal case, leaving room for JSON escaping; larger bodies are refused unread."""
    return 2 * (settings.max_log_bytes + settings.max_files_per_case * settings.max_script_bytes) + 1_000_000


def _history_reader(store: Store) -> HistoryReader:
    """The runner's way to the CI history: a test's newest recorded runs, oldest first."""
    history = HistoryStore(store)
    return lambda test, window, before: history.history_runs(test, limit=window, before=before)


def create_app(settings: Settings | None = None, *, worker_id: str | None = None) -> FastAPI:
    """Build an app. Migrations, the model client and the batch worker start with its lifespan."""
    settings = settings or get_settings()
    metrics = Metrics()
    store = Store(make_engine(settings.database_url))
    runtime = Runtime(
        settings=settings,
        store=store,
        metrics=metrics,
        runner=Runner(None, metrics, history=_history_reader(store)),
        worker_id=worker_id or f"{socket.gethostname()}:api",
        writer=TriageWriter(store),
    )
    app = FastAPI(
        title="tcfl",
        summary="Fault localization for failing test scripts, from the script and one failure log.",
        version=health.package_version(),
        lifespan=_lifespan,
    )
    app.state.runtime = runtime
    if not settings.service_keys():  # without keys only known Host names (DNS rebinding); logged, counted
        app.add_middleware(HostCheckMiddleware, allowed=settings.extra_hosts())
    app.add_middleware(RequestContextMiddleware, metrics=metrics, max_body=max_body_bytes(settings))
    app.add_middleware(BrowserSafetyMiddleware)  # outermost: its headers go on every response
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _internal_error)
    app.add_exception_handler(StoreUnavailable, _storage_error)
    app.add_exception_handler(SQLAlchemyError, _storage_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)

    keyed = [Depends(require_api_key)]
    app.include_router(health.router)
    app.include_router(triage.router, dependencies=keyed)
    app.include_router(batches.router, dependencies=keyed)
    app.include_router(history.router, dependencies=keyed)
    app.include_router(ingest.router, dependencies=keyed)
    app.include_router(ingest.pages, dependencies=keyed)
    app.include_router(launches.router, dependencies=keyed)
    _include_dashboard(app, keyed)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    runtime: Runtime = app.state.runtime
    await asyncio.to_thread(migrate, runtime.store.engine)
    settings = runtime.settings
    lease_s = settings.triage_lease_s
    runtime.leases = SyncLeases(runtime.store, heartbeat_s=lease_s / 4, lease_s=lease_s)
    await asyncio.to_thread(runtime.store.fail_interrupted, older_than_s=runtime.leases.lease_s)
    runtime.leases_task = asyncio.create_task(runtime.leases.run())
    runtime.client = ModelClient.from_settings(runtime.settings)
    runtime.runner.client = runtime.client
    if runtime.pool is None:
        runtime.pool = AnalysisPool(
            default_size(settings.analysis_workers),
            PoolLimits(
                cpu_s=settings.analysis_cpu_s,
                memory_bytes=settings.analysis_memory_bytes,
                wall_s=3 * settings.analysis_cpu_s + 10,
            ),
            parse_cache_chars=settings.parse_cache_chars,
        )
        await runtime.pool.start()
    runtime.runner.pool = runtime.pool
    runtime.runner.limits = settings.cost_limits()
    if runtime.client is not None:
        runtime.model_reachable = await runtime.client.health()
        runtime.probe_task = asyncio.create_task(_probe_model(runtime))
    if runtime.settings.worker_enabled:
        runtime.worker = Worker(
            runtime.store,
            runtime.runner,
            worker_id=runtime.worker_id,
            concurrency=runtime.settings.batch_concurrency,
            metrics=runtime.metrics,
        )
        runtime.worker_task = asyncio.create_task(runtime.worker.run())
    log.info("tcfl service started", extra={"worker": runtime.worker_state(), "worker_id": runtime.worker_id})
    # What start-up loaded (modules, routes, schemas) lives as long as the process: out of the
    # collector's sight, so that a full collection under load walks only the requests' objects.
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        # batch items go back to the queue before model calls are cut (see begin_shutdown)
        await begin_shutdown(runtime)
        if runtime.probe_task is not None:
            runtime.probe_task.cancel()
        if runtime.leases_task is not None:
            runtime.leases_task.cancel()
        if runtime.uploads is not None:  # uploads answered 202 finish, or are cut after a grace
            await runtime.uploads.close()
        if runtime.pool is not None:
            await runtime.pool.close()
            runtime.pool = None
        if runtime.client is not None:
            await runtime.client.aclose()
        if runtime.writer is not None:
            await asyncio.to_thread(runtime.writer.close)
        runtime.store.close()


async def begin_shutdown(runtime: Runtime) -> None:
    """A stop was asked for: hand batch items back first, then cut the model calls still waiting.

    In that order so that batch items go back to the queue (another run does them properly)
    instead of ending with a heuristic fallback; synchronous triages end with a labelled fallback.
    """
    if runtime.worker is not None and runtime.worker_task is not None:
        runtime.worker.stop()
        try:
            await asyncio.wait_for(asyncio.shield(runtime.worker_task), WORKER_STOP_TIMEOUT_S)
        except (TimeoutError, asyncio.CancelledError):
            log.warning("batch worker did not stop in time; its leases will be reclaimed")
    if runtime.client is not None:
        runtime.client.cancel_calls()


async def _probe_model(runtime: Runtime) -> None:
    """Ask the model server's /models now and then, so /healthz can answer without waiting on it."""
    while runtime.client is not None:
        await asyncio.sleep(MODEL_PROBE_S)
        runtime.model_reachable = await runtime.client.health()


def _include_dashboard(app: FastAPI, dependencies: list[Any]) -> None:
    try:
        dashboard = importlib.import_module("app.service.dashboard")
    except ModuleNotFoundError as exc:
        if exc.name == "app.service.dashboard":
            return
        raise
    router = getattr(dashboard, "router", None)
    if router is None:
        log.warning("app.service.dashboard has no router; the dashboard is not served")
        return
    pages = importlib.import_module("app.service.dashboard.pages")
    templates = getattr(pages, "templates", None)
    if templates is not None:  # every dashboard form writes {{ csrf_field() }}
        templates.env.globals["csrf_field"] = pass_context(csrf_field)
        templates.env.globals["csrf_token"] = pass_context(lambda ctx: csrf_token(ctx["request"]))
    dependencies = [*dependencies, Depends(require_csrf)]
    static_dir = getattr(dashboard, "STATIC_DIR", None)
    if static_dir is not None:
        app.mount("/static", StaticFiles(directory=static_dir), name="static")
    app.include_router(router, dependencies=dependencies)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated schema, plus BatchRequest: its route reads the body itself (three media
    types); and the API-key schemes on the routes that check a key (``_add_security``)."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        batch = BatchRequest.model_json_schema(ref_template="#/components/schemas/{model}")
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, nested in batch.pop("$defs", {}).items():
            components.setdefault(name, nested)
        components["BatchRequest"] = batch
        _add_security(schema, app.routes)
        app.openapi_schema = schema
    return app.openapi_schema


def _add_security(schema: dict[str, Any], routes: Sequence[BaseRoute]) -> None:
    """What FastAPI writes for a route whose dependencies declare the key schemes: ``require_api_key``
    reads them without declaring them (``app.service.deps.SECURITY``), so they are added here."""
    schemes = {s.scheme_name: jsonable_encoder(s.model, by_alias=True, exclude_none=True) for s in SECURITY}
    keyed = False
    for route in iter_route_contexts(routes):  # included routers' routes with their dependencies
        if not isinstance(route.original_route, APIRoute) or not route.include_in_schema:
            continue
        if not _checks_key(route):
            continue
        for method in route.methods:
            operation = schema.get("paths", {}).get(route.path_format, {}).get(method.lower())
            if operation is not None:
                operation.setdefault("security", []).extend({name: []} for name in schemes)
                keyed = True
    if keyed:
        schema.setdefault("components", {}).setdefault("securitySchemes", {}).update(schemes)


def _checks_key(route: Any) -> bool:
    """Whether ``require_api_key`` is among the route's dependencies, at any depth."""
    pending = list(route.dependant.dependencies)
    while pending:
        dependency = pending.pop()
        if dependency.call is require_api_key:
            return True
        pending.extend(dependency.dependencies)
    return False


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    """422 without echoing the input back: it may be huge, or bytes that are not text."""
    assert isinstance(exc, RequestValidationError)
    detail = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
        for e in exc.errors()
    ]
    return JSONResponse({"detail": detail}, status_code=422)


async def _http_error(request: Request, exc: Exception) -> Response:
    """FastAPI answers 400 for a body its JSON parser gave up on; a body nested too deeply is 422."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
        detail = [{"loc": ["body"], "msg": "JSON nested too deeply to read", "type": "json_invalid"}]
        return JSONResponse({"detail": detail}, status_code=422)
    return await http_exception_handler(request, exc)


async def _storage_error(request: Request, exc: Exception) -> JSONResponse:
    """The database refused: 507 when its disk is full, else 503, with what happened; never a 500."""
    if isinstance(exc, DataError):  # a value the database cannot hold: the input's fault
        log.warning("a value the database refused: %s", exc.orig)
        first = str(exc.orig).strip().splitlines()[0][:200] if str(exc.orig).strip() else "refused"
        return JSONResponse(
            {"detail": f"a value cannot be stored ({first}): nothing was stored"}, status_code=422
        )
    refused = storage_error(exc)
    if refused is None:
        return await _internal_error(request, exc)
    runtime: Runtime = request.app.state.runtime
    runtime.store.write_failed(refused)
    # our own refusal (a removed file, a busy lock) says all in its message; a driver's error keeps
    # its traceback for whoever looks into it
    log.error("database error: %s", refused, exc_info=None if exc is refused else exc)
    return JSONResponse(
        {"detail": str(refused), "request_id": request_id_var.get()},
        status_code=507 if refused.disk_full else 503,
        headers={"Retry-After": "30"},
    )


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, DataError) or storage_error(exc) is not None:
        return await _storage_error(request, exc)
    log.error("unhandled error", exc_info=exc)
    return JSONResponse({"detail": "internal error", "request_id": request_id_var.get()}, status_code=500)


class RequestContextMiddleware:
    """Request id in and out, the body size cap, per-route metrics and one JSON access-log line."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, max_body: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"])
        incoming = headers.get("x-request-id", "")
        request_id = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = 500

        started_response = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                started_response = True
                status = message["status"]
                MutableHeaders(scope=message)["X-Request-ID"] = request_id
            await send(message)

        received = 0
        limit = self.max_body
        too_large = (
            f"request body exceeds {limit} bytes "
            "(2 x (max_log_bytes + max_files_per_case x max_script_bytes) + 1 MB)"
        )

        async def capped_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise HTTPException(413, too_large)
            return message

        try:
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                await JSONResponse({"detail": too_large}, status_code=413)(scope, receive, send_with_id)
            else:
                try:
                    await self.app(scope, capped_receive, send_with_id)
                except Exception as exc:
                    if started_response:
                        raise
                    if isinstance(exc, HTTPException):  # the body cap, raised from capped_receive
                        body = {"detail": exc.detail}
                        await JSONResponse(body, status_code=exc.status_code)(scope, receive, send_with_id)
                    else:
                        log.error("unhandled error", exc_info=exc)
                        body = {"detail": "internal error", "request_id": request_id}
                        await JSONResponse(body, status_code=500)(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.request_answered(method, route, status, elapsed)
            log.info(
                "request",
                extra={
                    "method": method,
                    "path": scope.get("path", ""),
                    "route": route,
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 2),
                },
            )
            request_id_var.reset(token)
