"""``app.triage.finish``: a coroutine without I/O runs without an event loop, one with I/O under one."""

from __future__ import annotations

import asyncio

from app.triage import finish


async def _plain(value: int) -> int:
    return value * 2


async def _waits(value: int) -> int:
    await asyncio.sleep(0.001)  # suspends: needs the loop
    return value + 1


async def _asks_for_the_loop() -> str:
    return type(asyncio.get_running_loop()).__name__


def test_a_coroutine_that_never_suspends_finishes_without_a_loop() -> None:
    assert finish(lambda: _plain(21), no_io=True) == 42


def test_a_coroutine_that_suspends_or_needs_the_loop_is_run_again_under_asyncio() -> None:
    assert finish(lambda: _waits(1), no_io=True) == 2
    assert finish(_asks_for_the_loop, no_io=True).endswith("EventLoop")
    assert finish(lambda: _waits(5), no_io=False) == 6
