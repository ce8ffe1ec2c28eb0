"""Turns for uploads that record runs (``POST /v1/ingest``, ``POST /v1/runs``), and uploads run later.

Why: one upload may hold tens of thousands of runs, and each costs analysis (in the pool) and
writes (in this process). Without turns, seven large uploads at once kept every thread and
worker busy and small requests waited behind them. Here at most ``max_ingests_in_flight``
uploads run at once per process, one client at most ``max_ingests_per_client`` of them; the
others wait in arrival order (asyncio's semaphores wake waiters first come, first served). A
client with too many uploads waiting gets 429, a full queue 503, each naming its setting.
Uploads past ``ingest_async_bytes`` are answered 202 at once and run as a background task
whose state ``GET /v1/ingests/pending/{token}`` reads (in the process that took the upload).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import logging
import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import HTTPException, Request

log = logging.getLogger(__name__)

WAITING_PER_CLIENT = 8  # one client's uploads waiting beyond those it may run at once
KEPT_FINISHED = 1_000  # finished background uploads whose state is kept for their status URL
FULL_COLLECTION_EVERY = 16  # uploads finished between full collections while uploads keep running


class Refused(Exception):
    """An upload refused before it is read: the HTTP status and a message naming the limit."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Pending:
    """A background upload's state, as its status URL answers it."""

    status: str = "queued"  # queued, running, done, failed
    created: float = field(default_factory=time.time)
    result: dict[str, Any] = field(default_factory=dict)

    def view(self, token: str) -> dict[str, Any]:
        return {"token": token, "status": self.status, **self.result}


class Admission:
    """Turns for this process's uploads; use from one event loop."""

    def __init__(self, in_flight: int, per_client: int, queued: int) -> None:
        self.in_flight = in_flight
        self.per_client = per_client
        self.queued = queued
        self._slots = asyncio.Semaphore(in_flight)
        self._clients: dict[str, asyncio.Semaphore] = {}
        self._holding: Counter[str] = Counter()  # uploads admitted per client (running or waiting)
        self._waiting = 0
        self.pending: OrderedDict[str, Pending] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self._running = 0
        self._finished = 0
        self._thresholds = gc.get_threshold()

    def admit(self, client: str) -> None:
        """Count an upload in, or refuse it (``Refused``) before anything of it is read."""
        if self._holding[client] >= self.per_client + WAITING_PER_CLIENT:
            raise Refused(
                429,
                f"too many uploads in flight from this client: {self._holding[client]} "
                f"(max_ingests_per_client={self.per_client}, and {WAITING_PER_CLIENT} waiting)",
            )
        if self._waiting >= self.queued:
            raise Refused(
                503,
                f"too many uploads waiting: {self._waiting} (max_ingests_queued={self.queued})",
            )
        self._holding[client] += 1

    def leave(self, client: str) -> None:
        """An admitted upload is over (done, failed or refused while it was read)."""
        self._holding[client] -= 1
        if self._holding[client] <= 0:  # none of its uploads holds or waits on its semaphore now
            del self._holding[client]
            self._clients.pop(client, None)

    @contextlib.asynccontextmanager
    async def turn(self, client: str) -> AsyncIterator[None]:
        """Wait for the client's turn, then a free slot; held while the upload runs."""
        own = self._clients.setdefault(client, asyncio.Semaphore(self.per_client))
        self._waiting += 1
        try:
            await own.acquire()
            try:
                await self._slots.acquire()
            except BaseException:
                own.release()
                raise
        finally:
            self._waiting -= 1
        self._started()
        try:
            yield
        finally:
            self._ended()
            self._slots.release()
            own.release()

    def _started(self) -> None:
        """While uploads run, no automatic full collection: each walks every object an upload
        holds (many per run), and it stops the event loop (``/healthz`` included) while it does."""
        if self._running == 0:
            self._thresholds = gc.get_threshold()
            gc.set_threshold(self._thresholds[0], self._thresholds[1], 1_000_000)
        self._running += 1

    def _ended(self) -> None:
        """The usual collection again when none runs; a full one now and then while they keep
        coming, so that cyclic garbage stays bounded."""
        self._running -= 1
        self._finished += 1
        if self._running == 0:
            gc.set_threshold(*self._thresholds)
        elif self._finished % FULL_COLLECTION_EVERY == 0:
            gc.collect()

    def later(self, client: str, work: Callable[[], Awaitable[dict[str, Any]]]) -> str:
        """Run an admitted upload in the background, in its turn; the token of its status URL.

        ``work`` answers the fields of a finished upload (``id``, ``summary``, ...); an exception
        with ``status_code`` and ``detail`` (``HTTPException``) is kept as the upload's failure.
        """
        token = secrets.token_urlsafe(12)
        state = self.pending[token] = Pending()
        while len(self.pending) > KEPT_FINISHED:
            oldest = next(iter(self.pending))
            if self.pending[oldest].status in ("queued", "running"):
                break
            self.pending.popitem(last=False)

        async def run() -> None:
            try:
                async with self.turn(client):
                    state.status = "running"
                    state.result = await work()
                    state.status = "done"
            except asyncio.CancelledError:
                state.status, state.result = "failed", {"error_status": 503, "detail": "the server stopped"}
                raise
            except Exception as exc:
                code = getattr(exc, "status_code", None)
                if not isinstance(code, int):
                    log.exception("background upload failed")
                    code, detail = 500, "the upload could not be recorded; see the server log"
                else:
                    detail = getattr(exc, "detail", str(exc))
                state.status, state.result = "failed", {"error_status": code, "detail": detail}
            finally:
                self.leave(client)

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return token

    async def close(self, grace_s: float = 10.0) -> None:
        """Let the background uploads finish for ``grace_s``, then cancel the rest (the server stops)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace_s)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def client_of(request: Request) -> str:
    """Who sent the request, for per-client turns: its API key (a digest of it), else its address."""
    key = request.headers.get("x-api-key") or ""
    auth = request.headers.get("authorization") or ""
    if not key and auth.lower().startswith("bearer "):
        key = auth[7:].strip()
    if key:
        return "key:" + hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return "addr:" + (request.client.host if request.client is not None else "")


def admit_request(turns: Admission, request: Request) -> str:
    """The request's client counted in, or the HTTP error naming the limit it is past."""
    client = client_of(request)
    try:
        turns.admit(client)
    except Refused as exc:
        raise HTTPException(exc.status, str(exc), headers={"Retry-After": "5"}) from None
    return client
