"""Writes finished synchronous triages together: one transaction for all that finish at once.

Under load many ``POST /v1/triage`` finish in the same few milliseconds. Written one by one,
each paid a thread hop, a transaction (``BEGIN IMMEDIATE``, six statements, a commit) and a
fight with the event loop for the interpreter: much of the server process's CPU per request.
One writer thread takes every triage waiting, stores them in one transaction with one statement
per table (``Store.record_triages``: on SQLite through the ``sqlite3`` module, past SQLAlchemy's
execution layer) and answers each request. Alone, a triage is written at
once, as before; a batch grows only while the database is busy with the previous one.

A batch that fails on its data is written again one triage at a time, so a bad triage fails only
its own request and nothing of the others is lost; one the database refused (locked past its busy
timeout, unreachable) fails every request of the batch at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from typing import Any

from sqlalchemy.exc import OperationalError

from app.store.record import StoredTriage, Submission
from app.store.store import Store, StoreUnavailable

log = logging.getLogger(__name__)

MAX_BATCH = 64

_Item = tuple[Submission, dict[str, Any], asyncio.Future[StoredTriage], asyncio.AbstractEventLoop]


class TriageWriter:
    """``await record(case, data)`` stores one finished triage, batched with those waiting."""

    def __init__(self, store: Store, max_batch: int = MAX_BATCH) -> None:
        self.store = store
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.batches = 0  # transactions tried (for /metrics and tests)
        self.written = 0  # triages stored

    async def record(self, case: Submission, data: dict[str, Any]) -> StoredTriage:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[StoredTriage] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the triage writer is closed")
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="tcfl-triage-writer", daemon=True)
                self._thread.start()
            self._queue.put((case, data, future, loop))
        # shielded: a request cancelled now (its client gone) still has its triage stored
        return await asyncio.shield(future)

    def close(self) -> None:
        """Store what is queued, then stop the thread (blocking: call it from a thread)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            try:
                self._write(batch)
            except Exception as exc:  # a bug: the batch's requests hear of it, the thread goes on
                log.exception("the triage writer failed")
                self._answer(batch, [exc] * len(batch))
            if stop:
                return

    def _write(self, batch: list[_Item]) -> None:
        outcomes: list[StoredTriage | BaseException]
        try:
            outcomes = list(self.store.record_triages([(case, data) for case, data, _, _ in batch]))
        except Exception as exc:
            if len(batch) == 1 or isinstance(exc, OperationalError | StoreUnavailable):
                # a locked or unreachable database fails them all at once: trying each again
                # would make every request wait out the busy timeout once more
                outcomes = [exc] * len(batch)
            else:
                log.warning(
                    "a batch of triages failed to store; storing them one by one", extra={"size": len(batch)}
                )
                outcomes = [_outcome(self.store, item) for item in batch]
                self.batches += len(batch)
        self.batches += 1
        self.written += sum(not isinstance(o, BaseException) for o in outcomes)
        self._answer(batch, outcomes)

    @staticmethod
    def _answer(batch: list[_Item], outcomes: list[StoredTriage | BaseException]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[StoredTriage], Any]]] = {}
        for (_, _, future, loop), outcome in zip(batch, outcomes, strict=True):
            by_loop.setdefault(loop, []).append((future, outcome))
        for loop, settled in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, settled)  # one wake-up of the loop per batch


def _outcome(store: Store, item: _Item) -> StoredTriage | BaseException:
    case, data, _, _ = item
    try:
        return store.record_triages([(case, data)])[0]
    except Exception as exc:
        return exc


def _settle(settled: list[tuple[asyncio.Future[StoredTriage], Any]]) -> None:
    for future, outcome in settled:
        if future.done():
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
