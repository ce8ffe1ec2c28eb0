"""Typed dependencies shared by the routers: the per-app runtime, its store, and the API-key check."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPBearer
from fastapi.security.base import SecurityBase

from app.localize.llm import ModelClient
from app.service.admission import Admission
from app.service.jobs import SyncLeases, Worker
from app.service.metrics import Metrics
from app.service.pool import AnalysisPool
from app.service.runner import Runner
from app.service.writer import TriageWriter
from app.settings import Settings
from app.store.store import Store


@dataclass
class Runtime:
    """Everything one app instance owns; built by ``create_app``, started and stopped by its lifespan."""

    settings: Settings
    store: Store
    metrics: Metrics
    runner: Runner
    worker_id: str
    writer: TriageWriter | None = None  # finished synchronous triages, written in batches
    client: ModelClient | None = None
    worker: Worker | None = None
    pool: AnalysisPool | None = None
    leases: SyncLeases | None = None
    leases_task: asyncio.Task[None] | None = field(default=None, repr=False)
    model_reachable: bool = False  # the last background probe of the model server answered
    probe_task: asyncio.Task[None] | None = field(default=None, repr=False)
    worker_task: asyncio.Task[None] | None = field(default=None, repr=False)
    uploads: Admission | None = field(default=None, repr=False)  # turns for uploads that record runs

    def upload_turns(self) -> Admission:
        """This process's turns for uploads (made on first use, on the running loop)."""
        if self.uploads is None:
            s = self.settings
            self.uploads = Admission(s.max_ingests_in_flight, s.max_ingests_per_client, s.max_ingests_queued)
        return self.uploads

    def wake_worker(self) -> None:
        if self.worker is not None:
            self.worker.wake()

    def worker_state(self) -> str:
        if self.worker_task is None:
            return "off"
        return "stopped" if self.worker_task.done() else "running"


async def get_runtime(request: Request) -> Runtime:
    # async: FastAPI runs a plain ``def`` dependency in a thread, a hop per request for an attribute
    return request.app.state.runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]

_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="One of TCFL_SERVICE_API_KEYS")
_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <one of TCFL_SERVICE_API_KEYS>")


def key_matches(given: str | None, keys: Sequence[str]) -> bool:
    """Whether ``given`` is one of ``keys``; every key is compared, in constant time."""
    if not given:
        return False
    offered = given.encode("utf-8", "surrogateescape")
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(offered, key.encode("utf-8"))
    return matched


async def require_api_key(request: Request) -> None:
    """When keys are configured, accept X-API-Key or a Bearer token matching one (constant-time).

    The two headers are read by ``_api_key`` and ``_bearer`` themselves, called here rather than
    declared as sub-dependencies: FastAPI solves each dependency of every request anew, and
    these two and the runtime's were most of a small request's dependency work. The OpenAPI
    schema still names both schemes on every route that has this dependency (``SECURITY``,
    added by ``app.service.api._openapi``).
    """
    runtime: Runtime = request.app.state.runtime
    keys = runtime.settings.service_keys()
    if not keys:
        return
    api_key = await _api_key(request)
    bearer = await _bearer(request)
    given = api_key or (bearer.credentials if bearer else None)
    if key_matches(given, keys):
        return
    raise HTTPException(
        status_code=401,
        detail="missing or invalid API key: send X-API-Key or Authorization: Bearer",
        headers={"WWW-Authenticate": "Bearer"},
    )


# The schemes ``require_api_key`` reads, as the OpenAPI schema declares them
SECURITY: tuple[SecurityBase, ...] = (_api_key, _bearer)
