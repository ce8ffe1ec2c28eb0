"""How many model requests to keep in flight: enough for the server's continuous batching, not more.

A model server batches the requests it holds, so throughput grows with requests in flight until
the server saturates; past that point requests only queue (latency rises) or are refused (429,
503). ``AdaptiveLimit`` is a semaphore whose size follows that: it starts at the ceiling, halves
on a refusal, gives one back when an answer's latency rises well above the best seen, and grows
by one after a run of healthy answers (additive increase, multiplicative decrease).
"""

from __future__ import annotations

import asyncio
from types import TracebackType

OVERLOAD_STATUS = frozenset({429, 503})


class AdaptiveLimit:
    """An async semaphore with a moving size in ``[floor, ceiling]``; use ``async with``."""

    def __init__(self, ceiling: int, *, floor: int = 1, rise: float = 3.0, grow_after: int = 8) -> None:
        if ceiling < 1 or not 1 <= floor <= ceiling:
            raise ValueError(f"need 1 <= floor <= ceiling, got floor={floor}, ceiling={ceiling}")
        if rise <= 1.0 or grow_after < 1:
            raise ValueError("rise must be > 1 and grow_after >= 1")
        self.ceiling = ceiling
        self.floor = floor
        self.rise = rise  # latency above rise x the best seen counts as the server queueing
        self.grow_after = grow_after  # healthy answers in a row before the limit grows by one
        self._limit = ceiling
        self._held = 0
        self._healthy = 0
        self._best_s: float | None = None
        self._changed = asyncio.Condition()
        self.peak = 0  # most requests ever held at once (for reports and tests)

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def in_flight(self) -> int:
        return self._held

    async def __aenter__(self) -> AdaptiveLimit:
        async with self._changed:
            await self._changed.wait_for(lambda: self._held < self._limit)
            self._held += 1
            self.peak = max(self.peak, self._held)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        async with self._changed:
            self._held -= 1
            self._changed.notify_all()

    def overloaded(self) -> None:
        """The server refused for load (429/503): halve the limit."""
        self._limit = max(self.floor, self._limit // 2)
        self._healthy = 0

    def observed(self, latency_s: float) -> None:
        """One answer and its latency: grow after a healthy run, shrink by one when latency rises."""
        if self._best_s is None or latency_s < self._best_s:
            self._best_s = latency_s
        if latency_s > self.rise * self._best_s:
            self._limit = max(self.floor, self._limit - 1)
            self._healthy = 0
            return
        self._healthy += 1
        if self._healthy >= self.grow_after and self._limit < self.ceiling:
            self._limit += 1  # waiters see it at the next release
            self._healthy = 0
