"""The adaptive in-flight limit: bounded, halving on refusals, shrinking on queueing, growing when healthy."""

from __future__ import annotations

import asyncio

import pytest

from app.localize.inflight import AdaptiveLimit
from app.localize.llm import ModelClient
from tests.support.openai_standin import OpenAIStandin, Reply

MESSAGES = [{"role": "system", "content": "rank"}, {"role": "user", "content": "code"}]


def test_never_more_holders_than_the_limit() -> None:
    async def go() -> int:
        limit = AdaptiveLimit(4)
        running = 0
        most = 0

        async def hold() -> None:
            nonlocal running, most
            async with limit:
                running += 1
                most = max(most, running)
                await asyncio.sleep(0.01)
                running -= 1

        await asyncio.gather(*(hold() for _ in range(20)))
        assert limit.in_flight == 0 and limit.peak == 4
        return most

    assert asyncio.run(go()) == 4


def test_refusals_halve_down_to_the_floor() -> None:
    limit = AdaptiveLimit(64, floor=2)
    limit.overloaded()
    assert limit.limit == 32
    for _ in range(10):
        limit.overloaded()
    assert limit.limit == 2


def test_rising_latency_shrinks_and_a_healthy_run_grows_back() -> None:
    limit = AdaptiveLimit(10, rise=3.0, grow_after=4)
    limit.observed(0.1)
    limit.observed(0.5)  # five times the best: the server is queueing
    assert limit.limit == 9
    for _ in range(4):
        limit.observed(0.12)
    assert limit.limit == 10
    for _ in range(40):
        limit.observed(0.1)
    assert limit.limit == 10  # never above the ceiling


@pytest.mark.parametrize(("ceiling", "floor"), [(0, 1), (4, 0), (4, 5)])
def test_bad_bounds_are_refused(ceiling: int, floor: int) -> None:
    with pytest.raises(ValueError, match="floor"):
        AdaptiveLimit(ceiling, floor=floor)


def test_the_client_backs_off_when_the_server_says_too_many_requests() -> None:
    with OpenAIStandin(default=Reply(rank=True)) as server:
        server.enqueue(Reply(status=429), Reply(status=503))

        async def go() -> tuple[int, int]:
            async with ModelClient(server.url, concurrency=64, backoff_s=0.001, timeout_s=5) as client:
                await client.complete(MESSAGES)
                return client._slots.limit, client._slots.ceiling

        limit, ceiling = asyncio.run(go())
    assert ceiling == 64 and limit == 16  # halved twice, then one healthy answer


def test_the_client_keeps_many_requests_in_flight() -> None:
    with OpenAIStandin(default=Reply(rank=True, delay_s=1.0)) as server:

        async def go() -> int:
            async with ModelClient(server.url, concurrency=32, backoff_s=0.001, timeout_s=30) as client:
                await asyncio.gather(*(client.complete(MESSAGES) for _ in range(32)))
                return client._slots.peak

        assert asyncio.run(go()) == 32  # every request was let through at once
        assert server.max_in_flight >= 8  # and the server held many of them together
