"""The batch worker: claims queued items from the database and runs a bounded number at once.

Why it is safe to kill at any instant: an item is claimed in one short transaction (status
running, lease = locked_by + locked_at), and its result row and its ``done`` status are written
in one later transaction. A worker that dies leaves only leases behind; they are taken back when
the same worker id starts again, or by anyone once ``lease_s`` passes without a heartbeat. The
unique ``results.batch_item_id`` makes a second result for an item impossible, whatever races.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from app.service.metrics import Metrics
from app.service.pool import JOB_CLOCK, JobClock, PoolUnavailable
from app.service.writer import TriageWriter
from app.store.store import Claim, Store, StoredTriage, Submission

log = logging.getLogger(__name__)

LEASE_S = 60.0
MAX_ATTEMPTS = 3
POLL_S = 1.0

RunCase = Callable[[Submission], Awaitable[dict[str, Any]]]


@dataclass(eq=False)  # a worker equals only itself, whatever its settings
class Worker:
    """Runs batch items; ``batch_id`` confines it to one batch (``tcfl batch``)."""

    store: Store
    run_case: RunCase
    _: KW_ONLY
    worker_id: str
    concurrency: int
    metrics: Metrics | None = None
    batch_id: int | None = None
    lease_s: float = LEASE_S
    poll_s: float = POLL_S
    _wake: asyncio.Event = field(init=False, repr=False, default_factory=asyncio.Event)
    _stopping: bool = field(init=False, repr=False, default=False)
    _inflight: dict[int, asyncio.Task[None]] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")

    def wake(self) -> None:
        """New items were queued by this process: look now instead of at the next poll."""
        self._wake.set()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()

    async def run(self, *, until_idle: bool = False) -> None:
        """Process items until ``stop()``; with ``until_idle``, until the batch has nothing open."""
        released = await asyncio.to_thread(self.store.release_own, self.worker_id)
        if released:
            log.info(
                "requeued items left running by an earlier run of this worker", extra={"items": released}
            )
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            await self._loop(until_idle)
        finally:
            heartbeat.cancel()
            for task in self._inflight.values():
                task.cancel()
            await asyncio.gather(heartbeat, *self._inflight.values(), return_exceptions=True)
            self._inflight.clear()
            await asyncio.to_thread(self.store.release_own, self.worker_id)

    async def _loop(self, until_idle: bool) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                await self._fill()
                if until_idle and not self._inflight and await self._idle():
                    return
            except Exception:
                log.exception("batch queue unavailable; retrying")
            wake = asyncio.ensure_future(self._wake.wait())
            await asyncio.wait(
                {wake, *self._inflight.values()}, timeout=self.poll_s, return_when=asyncio.FIRST_COMPLETED
            )
            wake.cancel()

    async def _fill(self) -> None:
        while len(self._inflight) < self.concurrency and not self._stopping:
            claim = await asyncio.to_thread(
                self.store.claim, self.worker_id, lease_s=self.lease_s, batch_id=self.batch_id
            )
            if claim is None:
                return
            self._inflight[claim.item_id] = asyncio.create_task(self._process(claim))

    async def _idle(self) -> bool:
        if self.batch_id is None:
            return False
        return await asyncio.to_thread(self.store.open_items, self.batch_id) == 0

    async def _process(self, claim: Claim) -> None:
        try:
            if claim.attempts > MAX_ATTEMPTS:
                await self._fail(
                    claim, f"abandoned after {claim.attempts - 1} attempts that never finished", True
                )
                return
            try:
                case = await asyncio.to_thread(self.store.load_case, claim.request_id)
                data = await self.run_case(case)
            except ValueError as exc:
                await self._fail(claim, f"invalid case: {exc}", True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("batch item failed", extra={"batch_id": claim.batch_id, "index": claim.index})
                final = claim.attempts >= MAX_ATTEMPTS
                await self._fail(claim, f"{type(exc).__name__}: {exc}", final)
            else:
                stored = await asyncio.to_thread(
                    self.store.complete_item, claim, data, worker_id=self.worker_id
                )
                if stored and self.metrics:
                    self.metrics.items.labels("done").inc()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not record a batch item; its lease will expire and it will run again")
        finally:
            self._inflight.pop(claim.item_id, None)
            self._wake.set()

    async def _fail(self, claim: Claim, error: str, final: bool) -> None:
        await asyncio.to_thread(self.store.fail_item, claim, error, final=final, worker_id=self.worker_id)
        if final and self.metrics:
            self.metrics.items.labels("failed").inc()

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 4)
            try:
                await asyncio.to_thread(self.store.heartbeat, self.worker_id, list(self._inflight))
            except Exception:
                log.exception("could not renew batch leases")


SYNC_HEARTBEAT_S = 10.0
SYNC_LEASE_S = 40.0  # with the sweep every heartbeat, an interrupted triage is failed within a minute
RUNNING_AFTER_S = 0.5  # a synchronous triage still going after this is written as running


class SyncLeases:
    """Heartbeat and sweep for synchronous triages (``POST /v1/triage``), like batch items' leases.

    Each server renews ``updated_at`` of the triages it is running; any server marks failed the
    running ones nobody renewed for ``lease_s`` (their server died). Several servers may share one
    database: each renews only its own, so a live triage is never swept.
    """

    def __init__(
        self, store: Store, *, heartbeat_s: float = SYNC_HEARTBEAT_S, lease_s: float = SYNC_LEASE_S
    ) -> None:
        self.store = store
        self.heartbeat_s = heartbeat_s
        self.lease_s = lease_s
        self.inflight: set[int] = set()

    async def run(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.store.touch_requests, sorted(self.inflight))
                swept = await asyncio.to_thread(self.store.fail_interrupted, older_than_s=self.lease_s)
                if swept:
                    log.warning("marked interrupted triages failed", extra={"triages": swept})
            except Exception:
                log.exception("could not renew or sweep triage leases")
            await asyncio.sleep(self.heartbeat_s)


async def triage_now(
    store: Store,
    runner: Callable[[Submission], Awaitable[dict[str, Any]]],
    leases: SyncLeases | None,
    case: Submission,
    writer: TriageWriter | None = None,
) -> StoredTriage:
    """Run one synchronous triage and store it; a failure is stored too, then re-raised.

    A fast triage is written once, when done (one transaction). One still running after
    ``RUNNING_AFTER_S`` of analysis (a model call, a large case; time queued for an analysis
    worker does not count) is written as running first, leased like a batch item, so that it
    shows on the dashboard and a dead server's triage is marked failed. ``writer`` stores the
    fast ones together with the others finishing at the same time (one transaction for them all).
    """
    clock = JobClock()
    token = JOB_CLOCK.set(clock)
    try:
        work = asyncio.ensure_future(runner(case))  # the task sees the clock (a copy of this context)
    finally:
        JOB_CLOCK.reset(token)
    request_id: int | None = None
    try:
        if not await _finished_within(work, clock, RUNNING_AFTER_S):
            request_id = await asyncio.to_thread(store.create_request, case)
            if leases is not None:
                leases.inflight.add(request_id)
        data = await work
    except BaseException as exc:
        work.cancel()
        if isinstance(exc, ValueError | PoolUnavailable):  # a limit or bad input; no worker
            reason = str(exc)
        elif isinstance(exc, asyncio.CancelledError):
            reason = "cancelled"
        else:
            reason = f"internal error ({type(exc).__name__})"
        await asyncio.shield(asyncio.to_thread(_fail, store, case, request_id, reason))
        raise
    finally:
        if request_id is not None and leases is not None:
            leases.inflight.discard(request_id)
    if request_id is None:
        if writer is not None:
            return await writer.record(case, data)
        return await asyncio.to_thread(store.record_triage, case, data)
    return await asyncio.to_thread(store.save_result, request_id, data)


async def _finished_within(work: asyncio.Future[Any], clock: JobClock, seconds: float) -> bool:
    """Whether ``work`` ended within ``seconds`` of analysis; time queued for a worker not counted."""
    while True:
        done, _ = await asyncio.wait({work}, timeout=seconds)
        if done:
            return True
        if not clock.waiting:
            return False
        started = asyncio.ensure_future(clock.started.wait())
        try:
            await asyncio.wait({work, started}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()
        if work.done():
            return True


def _fail(store: Store, case: Submission, request_id: int | None, reason: str) -> None:
    if request_id is None:
        store.record_failure(case, reason)
    else:
        store.fail_request(request_id, reason)
