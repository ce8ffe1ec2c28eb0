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
from typing import Any

from app.service.metrics import Metrics
from app.service.store import Claim, Store, Submission

log = logging.getLogger(__name__)

LEASE_S = 60.0
MAX_ATTEMPTS = 3
POLL_S = 1.0

RunCase = Callable[[Submission], Awaitable[dict[str, Any]]]


class Worker:
    """Runs batch items; ``batch_id`` confines it to one batch (``tcfl batch``)."""

    def __init__(
        self,
        store: Store,
        run_case: RunCase,
        *,
        worker_id: str,
        concurrency: int,
        metrics: Metrics | None = None,
        batch_id: int | None = None,
        lease_s: float = LEASE_S,
        poll_s: float = POLL_S,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.store = store
        self.run_case = run_case
        self.worker_id = worker_id
        self.concurrency = concurrency
        self.metrics = metrics
        self.batch_id = batch_id
        self.lease_s = lease_s
        self.poll_s = poll_s
        self._wake = asyncio.Event()
        self._stopping = False
        self._inflight: dict[int, asyncio.Task[None]] = {}

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
