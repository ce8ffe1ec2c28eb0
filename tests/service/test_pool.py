"""The analysis pool: real worker processes, real limits (RLIMIT_CPU, RLIMIT_AS), real analyses."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from app.analysis.model import Script
from app.localize.result import TriageResult
from app.options import TriageOptions
from app.rankers.base import RankRequest
from app.rankers.heuristic import HeuristicRanker
from app.service import pool_jobs
from app.service.pool import INLINE_BYTES, AnalysisPool, AnalysisRejected, PoolLimits
from app.service.pool_jobs import TriageJob
from app.store.rows import split_handed
from app.triage import prepare, triage

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "running-example"
OPTIONS = TriageOptions(log_functions=("Log.log",), k=3)


def _example() -> tuple[tuple[Script, ...], str]:
    script = Script("test_example.py", (EXAMPLE / "test_example.py").read_text())
    return (script,), (EXAMPLE / "failure.log").read_text()


def _job(scripts: tuple[Script, ...], log: str, options: TriageOptions = OPTIONS, **more: Any) -> TriageJob:
    return TriageJob(scripts, log, options, snapshot=False, **more)


def _result(done: Any) -> TriageResult:
    """A finished job's stored data read back as the result."""
    data, packed = done
    assert isinstance(data, dict) and packed is None
    return TriageResult.from_dict(data)


def _with_pool(limits: PoolLimits, body: Callable[[AnalysisPool], Awaitable[Any]], size: int = 1) -> Any:
    async def main() -> Any:
        pool = AnalysisPool(size, limits)
        await pool.start()
        try:
            return await body(pool)
        finally:
            await pool.close()

    return asyncio.run(main())


def test_without_a_model_the_worker_returns_the_result_the_process_would() -> None:
    scripts, log = _example()
    here = asyncio.run(triage(scripts, log, OPTIONS, client=None))
    there = _result(_with_pool(PoolLimits(), lambda pool: pool.run("triage", _job(scripts, log))))
    assert there.to_dict()["ranking"] == here.to_dict()["ranking"]
    assert (there.error_message, there.warnings) == (here.error_message, here.warnings)


def test_a_job_over_the_inline_size_and_one_under_it_give_the_analysis_of_the_process() -> None:
    """Small job messages are written on the event loop, big ones from a thread: same answers."""
    scripts, log = _example()
    padded = log + "".join(f"[DEBUG] poll {i}: status ok\n" for i in range(2_000))
    assert len(padded.encode()) > INLINE_BYTES > len(log.encode()) + 4_000

    async def both(pool: AnalysisPool) -> list[Any]:
        return [_result(await pool.run("triage", _job(scripts, text))) for text in (log, padded, log)]

    small, big, again = _with_pool(PoolLimits(), both, size=2)
    for there, text in ((small, log), (big, padded), (again, log)):
        here = asyncio.run(triage(scripts, text, OPTIONS, client=None))
        assert there.to_dict()["ranking"] == here.to_dict()["ranking"]
        assert there.error_message == here.error_message


def test_with_a_model_the_worker_returns_the_prepared_request_and_heuristic_picks() -> None:
    scripts, log = _example()
    here = prepare(scripts, log, OPTIONS)
    there, _ = _with_pool(
        PoolLimits(), lambda pool: pool.run("triage", _job(scripts, log, model_configured=True))
    )
    assert isinstance(there, RankRequest)
    assert there.rendered == here.rendered and there.prompt == here.prompt
    assert there.heuristic is not None and there.heuristic[0] is there.rendered
    expected = HeuristicRanker.picks(here, 2 * OPTIONS.k)
    assert [p.element.id for p in there.heuristic[1]] == [p.element.id for p in expected]
    assert HeuristicRanker.picks(there, OPTIONS.k) == there.heuristic[1][: OPTIONS.k]


def test_workers_warm_up_and_freeze_their_heap_before_the_first_job() -> None:
    async def frozen(warm: bool) -> int:
        pool = AnalysisPool(1, PoolLimits(), warm=warm)
        await pool.start()
        try:
            return int(await pool.run("frozen_objects"))
        finally:
            await pool.close()

    assert asyncio.run(frozen(False)) == 0
    # the analysis modules, compiled patterns and the example's leftovers: tens of thousands
    assert asyncio.run(frozen(True)) > 10_000


def test_a_worker_parses_a_script_once_and_answers_each_log_of_it_as_the_process_would() -> None:
    """The second failure of the same script reuses the worker's parse; both answers are the
    in-process ones (the finished result comes back as stored data, the snapshot packed)."""
    scripts, log = _example()
    other = log.replace("Test 1 executed!", "Test 1 skipped")
    assert other != log

    async def body(pool: AnalysisPool) -> tuple[list[Any], tuple[int, int, int], tuple[int, int, int]]:
        before = await pool.run("parse_cache_stats")
        done = [await pool.run("triage", TriageJob(scripts, text, OPTIONS)) for text in (log, other)]
        return done, before, await pool.run("parse_cache_stats")

    done, before, after = _with_pool(PoolLimits(), body)
    assert (after[0] - before[0], after[1] - before[1]) == (2, 0)  # hits, misses: the warm-up parsed it
    for (data, packed), text in zip(done, (log, other), strict=True):
        here = asyncio.run(triage(scripts, text, OPTIONS, client=None))
        # the failure's id comes beside the data, for the store (``rows.handed``)
        rest, _, signature = split_handed(data)
        assert rest == pool_jobs.stored_data(here) | {"timings": data["timings"]} and signature
        assert packed.log_lines == len(text.splitlines())


def test_a_pool_told_to_keep_no_parse_parses_every_case() -> None:
    scripts, log = _example()

    async def main() -> tuple[int, int, int]:
        pool = AnalysisPool(1, PoolLimits(), parse_cache_chars=0)
        await pool.start()
        try:
            for _ in range(2):
                await pool.run("triage", _job(scripts, log))
            return await pool.run("parse_cache_stats")
        finally:
            await pool.close()

    hits, misses, entries = asyncio.run(main())
    assert (hits, misses, entries) == (0, 3, 0)  # the warm-up's parse, then each case's


def test_a_new_parse_is_frozen_before_the_next_job_so_collections_stay_cheap() -> None:
    scripts, log = _example()
    other = (Script("test_other.py", scripts[0].content + "\n# another file\n"),)

    async def body(pool: AnalysisPool) -> list[int]:
        counts = [await pool.run("frozen_objects")]
        for case in (other, scripts, scripts):
            await pool.run("triage", _job(case, log))
            counts.append(await pool.run("frozen_objects"))
        return counts

    warm, after_new, after_next, after_hit = _with_pool(PoolLimits(), body)
    assert after_new == warm  # the new parse is frozen when the next analysis starts
    assert after_next > warm  # that parse: its statements, records, facts
    assert after_hit == after_next  # a parse seen before adds nothing


def test_bad_options_are_a_value_error_and_the_worker_stays() -> None:
    scripts, log = _example()

    async def body(pool: AnalysisPool) -> int:
        with pytest.raises(ValueError, match="level must be one of"):
            await pool.run("triage", _job(scripts, log, TriageOptions(level="everything")))
        await pool.run("ping")
        return pool.recycled

    assert _with_pool(PoolLimits(), body) == 0


@pytest.mark.slow
def test_a_job_over_its_cpu_deadline_is_rejected_naming_it_and_the_worker_replaced() -> None:
    async def body(pool: AnalysisPool) -> tuple[str, int, int]:
        with pytest.raises(AnalysisRejected) as caught:
            await pool.run("burn", 30.0)
        return str(caught.value), await pool.run("ping"), pool.recycled

    message, ping, recycled = _with_pool(PoolLimits(cpu_s=1, wall_s=60), body)
    assert "CPU-time deadline of 1 s" in message
    assert (ping, recycled) == (0, 1)


def test_a_job_over_the_memory_ceiling_is_rejected_naming_it() -> None:
    async def body(pool: AnalysisPool) -> tuple[str, int]:
        with pytest.raises(AnalysisRejected) as caught:
            await pool.run("hog", 2048)
        small = await pool.run("hog", 16)
        return str(caught.value), small

    message, small = _with_pool(PoolLimits(memory_bytes=512 * 1024**2), body)
    assert "memory ceiling of 512 MB" in message
    assert small == 16 * 1024 * 1024


def test_the_wall_clock_backstop_kills_a_worker_that_does_not_finish() -> None:
    async def body(pool: AnalysisPool) -> tuple[str, float]:
        started = time.monotonic()
        with pytest.raises(AnalysisRejected) as caught:
            await pool.run("burn", 60.0)
        return str(caught.value), time.monotonic() - started

    message, took = _with_pool(PoolLimits(cpu_s=120, wall_s=1.0), body)
    assert "wall-clock deadline of 1 s" in message
    assert took < 30


def test_a_cancelled_request_frees_its_worker_for_the_next() -> None:
    async def body(pool: AnalysisPool) -> int:
        hung = asyncio.create_task(pool.run("burn", 60.0))
        await asyncio.sleep(0.5)
        hung.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hung
        return await asyncio.wait_for(pool.run("ping"), 30)

    assert _with_pool(PoolLimits(cpu_s=120, wall_s=120), body) == 0


@pytest.mark.slow
def test_small_jobs_never_queue_behind_large_ones() -> None:
    """Two workers: large jobs get one lane, so a second large job waits and small ones pass."""

    async def body(pool: AnalysisPool) -> list[str]:
        order: list[str] = []

        async def job(name: str, *args: Any, large: bool) -> None:
            await pool.run(*args, large=large)
            order.append(name)

        first = asyncio.create_task(job("large-1", "burn", 2.0, large=True))
        await asyncio.sleep(0.3)
        second = asyncio.create_task(job("large-2", "burn", 0.1, large=True))
        await asyncio.sleep(0.3)
        for i in range(5):
            await asyncio.wait_for(job(f"small-{i}", "ping", large=False), 30)
        await asyncio.gather(first, second)
        return order

    order = _with_pool(PoolLimits(cpu_s=30, wall_s=60), body, size=2)
    assert order == [*(f"small-{i}" for i in range(5)), "large-1", "large-2"]
