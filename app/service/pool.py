"""Worker processes for the static analysis, each bounded in CPU time and memory.

Why processes: the analysis is CPU-bound Python; on the event loop one large request stalls every
other (``/healthz`` included), and one hostile input can grow the server until the kernel kills it.
Each worker runs one job at a time under ``RLIMIT_AS`` (the memory ceiling) and a per-job
``RLIMIT_CPU`` soft limit (the CPU deadline); the parent also keeps a wall-clock deadline as a
backstop. A worker that exceeds a limit, dies or is abandoned is killed and replaced; nothing else
in the server notices. Jobs are named functions of ``app.service.pool_jobs`` with picklable
arguments and results.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import multiprocessing
import os
import resource
import signal
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import ForkingPickler
from typing import Any

log = logging.getLogger(__name__)

JOBS_MODULE = "app.service.pool_jobs"
MAX_JOBS_PER_WORKER = 500  # recycle now and then, so slow leaks in a worker never add up
KILL_GRACE_S = 2.0
LARGE_LANE_NICENESS = 10
LARGE_SCRIPT_LINES = 2_000  # a case with more script lines, or a bigger log, takes the large lane
LARGE_LOG_BYTES = 1_000_000
INLINE_BYTES = 32 * 1024  # a job message this small is written on the event loop (the pipe holds 64 KiB)


@dataclass(frozen=True)
class PoolLimits:
    """What one job may use; ``wall_s`` is the parent's backstop when the CPU limit cannot fire."""

    cpu_s: float = 60.0
    memory_bytes: int = 2 * 1024**3
    wall_s: float = 150.0


class JobClock:
    """Whether a request's job is still waiting for a worker; ``started`` is set once it has one.

    Set in ``JOB_CLOCK`` around a request's work: ``jobs.triage_now`` counts its running threshold
    from the start of the analysis, not from the request's arrival, so that under load queued
    requests are not each written twice (as running, then done) exactly when writes cost most.
    """

    def __init__(self) -> None:
        self.waiting = False
        self.started = asyncio.Event()


JOB_CLOCK: contextvars.ContextVar[JobClock | None] = contextvars.ContextVar("tcfl_job_clock", default=None)


class AnalysisRejected(ValueError):
    """The input cost more than a limit allows (HTTP 422); the message names the limit."""


class PoolUnavailable(RuntimeError):
    """No worker could run the job (it died for a reason of its own, or the pool is closing): HTTP 503."""


class _CpuDeadline(BaseException):
    """Raised in a worker by SIGXCPU; a BaseException so that no ``except Exception`` swallows it."""


# --------------------------------------------------------------------------------------------
# In the worker process
# --------------------------------------------------------------------------------------------


def _on_sigxcpu(_signum: int, _frame: object) -> None:
    raise _CpuDeadline


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _worker_main(
    conn: Connection,
    memory_bytes: int,
    niceness: int = 0,
    warm: bool = True,
    parse_cache_chars: int | None = None,
) -> None:
    """Serve jobs from ``conn`` until it closes or a limit was hit (then exit, to be replaced)."""
    import importlib

    if niceness:
        os.nice(niceness)  # the large lane yields the CPU to small requests when both want it
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's Ctrl-C is the parent's business
    signal.signal(signal.SIGXCPU, _on_sigxcpu)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if memory_bytes > 0:
        ceiling = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    jobs = importlib.import_module(JOBS_MODULE)
    if parse_cache_chars is not None:
        jobs.PARSES.max_chars = parse_cache_chars
    if warm:
        # before any job's CPU limit applies: the cost is the worker's, not a job's; a worker that
        # could not warm up still serves (its first job pays the imports)
        with contextlib.suppress(Exception):
            jobs.warm_up()
    cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    parses = getattr(jobs, "PARSES", None)  # the worker's parse cache: each reply says hit or miss
    while True:
        try:
            name, args, cpu_s = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        soft = int(_cpu_used() + cpu_s) + 1
        if cpu_hard != resource.RLIM_INFINITY:
            soft = min(soft, cpu_hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, cpu_hard))
        counts = (parses.hits, parses.misses) if parses is not None else (0, 0)
        exit_after = False
        try:
            reply: tuple[Any, ...] = ("ok", getattr(jobs, name)(*args))
        except _CpuDeadline:
            reply, exit_after = ("limit", f"the analysis exceeded its CPU-time deadline of {cpu_s:g} s"), True
        except MemoryError:
            reply = ("limit", f"the analysis exceeded the memory ceiling of {_mb(memory_bytes)}")
            exit_after = True
        except RecursionError:
            reply = ("limit", "the input is nested too deeply to analyse (a recursion limit was reached)")
            exit_after = True
        except ValueError as exc:
            reply = ("invalid", str(exc))
        except Exception as exc:  # a bug: report it; the parent logs it and answers 503
            reply, exit_after = ("error", f"{type(exc).__name__}: {exc}"), True
        finally:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_hard, cpu_hard))
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        parse = ""
        if parses is not None:
            parse = "hit" if parses.hits > counts[0] else "miss" if parses.misses > counts[1] else ""
        try:
            conn.send((*reply, peak_kb, parse))
            reply = ()  # the result is not kept alive into the next job (whose heap is frozen)
        except MemoryError:
            conn.send(
                ("limit", f"the result exceeded the memory ceiling of {_mb(memory_bytes)}", peak_kb, "")
            )
            exit_after = True
        except (OSError, EOFError):
            return
        if exit_after:
            return


def _mb(n: int) -> str:
    return f"{n / 1024**2:.0f} MB"


# --------------------------------------------------------------------------------------------
# In the server process
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    lane: str = "small"
    jobs: int = 0


class AnalysisPool:
    """``size`` worker processes; ``await run(job, *args)`` runs one job in an idle one.

    Two lanes, so that large requests cannot starve small ones: with two workers or more, half
    (rounded down) form the large lane, run at a lower CPU priority, and are the only ones large
    jobs may use; small jobs take a small-lane worker first, else any idle one.
    Use from one event loop: ``await start()``, then ``run``, then ``await close()``.
    """

    def __init__(
        self, size: int, limits: PoolLimits, *, warm: bool = True, parse_cache_chars: int | None = None
    ) -> None:
        if size < 1:
            raise ValueError(f"the pool needs at least one worker, got {size}")
        self.size = size
        self.limits = limits
        self.warm = warm  # each worker triages the running example and freezes the heap first
        self.parse_cache_chars = parse_cache_chars  # None: the jobs module's default
        self.large_lane = size // 2
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload([JOBS_MODULE])
        self._free: dict[str, list[_Worker]] = {"small": [], "large": []}
        # requests waiting for a worker, oldest first, each with the lanes it may use: a freed
        # worker goes straight to the first that may take it (waking every waiter to re-check,
        # as a condition's notify_all did, cost the event loop a wake-up per waiter per job)
        self._waiters: deque[tuple[tuple[str, ...], asyncio.Future[_Worker]]] = deque()
        self._busy: set[_Worker] = set()
        self._closing = False
        self.recycled = 0
        self.last_peak_kb = 0
        self.parse_hits = 0  # jobs whose scripts' parse a worker had kept
        self.parse_misses = 0

    async def start(self) -> None:
        lanes = ["large"] * self.large_lane + ["small"] * (self.size - self.large_lane)
        workers = await asyncio.gather(*(asyncio.to_thread(self._spawn, lane) for lane in lanes))
        for worker in workers:
            self._free[worker.lane].append(worker)

    def busy(self) -> int:
        return len(self._busy)

    def _spawn(self, lane: str) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        niceness = LARGE_LANE_NICENESS if lane == "large" else 0
        process = self._ctx.Process(
            target=_worker_main,
            args=(child, self.limits.memory_bytes, niceness, self.warm, self.parse_cache_chars),
            name=f"tcfl-analysis-{lane}",
            daemon=True,
        )
        process.start()
        child.close()
        return _Worker(process, parent, lane)

    async def _acquire(self, large: bool) -> _Worker:
        lanes = ("large",) if large and self.large_lane else ("small", "large")
        if self._closing:
            raise PoolUnavailable("the server is shutting down")
        for lane in lanes:
            if self._free[lane]:
                return self._free[lane].pop()
        entry = (lanes, asyncio.get_running_loop().create_future())
        self._waiters.append(entry)
        waiter = entry[1]
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release(waiter.result())  # handed over just as the request went: the next one's
            raise
        finally:
            # still queued when cancelled; handed a worker or the pool closed, it is gone already
            # (and ``remove`` must not fail: its error's message would format the worker's process)
            if entry in self._waiters:
                self._waiters.remove(entry)

    def _release(self, worker: _Worker) -> None:
        """Hand ``worker`` to the oldest request waiting that may use its lane, else keep it free."""
        for i, (lanes, waiter) in enumerate(self._waiters):
            if worker.lane in lanes and not waiter.done():
                del self._waiters[i]
                waiter.set_result(worker)
                return
        self._free[worker.lane].append(worker)

    async def run(self, job: str, *args: Any, large: bool = False) -> Any:
        """The job's result; ``AnalysisRejected`` (limit or bad input), ``PoolUnavailable`` otherwise.

        ``large`` jobs (big inputs) wait for the large lane; small ones never queue behind them.
        """
        if self._closing:
            raise PoolUnavailable("the server is shutting down")
        clock = JOB_CLOCK.get()
        if clock is not None:
            clock.waiting = True
        try:
            worker = await self._acquire(large)
        finally:
            if clock is not None:
                clock.waiting = False
                clock.started.set()
        self._busy.add(worker)
        healthy = False
        try:
            kind, payload = await self._run_on(worker, job, args, large=large)
            healthy = kind in ("ok", "invalid")
        finally:
            self._busy.discard(worker)
            if healthy and worker.jobs < MAX_JOBS_PER_WORKER and not self._closing:
                self._release(worker)
            else:
                await asyncio.shield(self._replace(worker))
        if kind == "ok":
            return payload
        if kind == "invalid":
            raise ValueError(payload)
        if kind == "limit":
            raise AnalysisRejected(payload)
        log.error("analysis worker failed", extra={"error": payload})
        raise PoolUnavailable(f"the analysis failed: {payload}")

    async def _run_on(
        self, worker: _Worker, job: str, args: tuple[Any, ...], *, large: bool = False
    ) -> tuple[str, Any]:
        """Hand the job over and wait for its reply on the event loop.

        A small job is written and its reply read on the loop itself: the worker is idle (its pipe
        empty, the message fits the pipe's buffer) and answers in one write, so neither blocks; a
        thread hop each way cost more than the I/O. Big messages and large jobs' replies go through
        a thread, so that the loop never waits on a long transfer.
        """
        worker.jobs += 1
        loop = asyncio.get_running_loop()
        fd = worker.conn.fileno()
        try:
            os.set_blocking(fd, True)
            if large:  # a large job's arguments may take a while to pickle: not on the loop
                message = await asyncio.to_thread(_pickled, job, args, self.limits.cpu_s)
            else:
                message = _pickled(job, args, self.limits.cpu_s)
            if len(message) <= INLINE_BYTES:
                worker.conn.send_bytes(message)
            else:
                await asyncio.to_thread(worker.conn.send_bytes, message)
        except (OSError, EOFError, ValueError) as exc:
            raise PoolUnavailable(f"could not hand the job to an analysis worker: {exc}") from None
        ready = loop.create_future()
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await asyncio.wait_for(ready, self.limits.wall_s)
        except TimeoutError:
            raise AnalysisRejected(
                f"the analysis exceeded its wall-clock deadline of {self.limits.wall_s:g} s"
            ) from None
        finally:
            loop.remove_reader(fd)
        try:
            os.set_blocking(fd, True)  # some loops (uvloop) leave a watched fd non-blocking
            if not large:
                reply = worker.conn.recv()
            else:
                reply = await asyncio.to_thread(worker.conn.recv)
        except (EOFError, OSError):
            raise self._death(worker) from None
        kind, payload, peak_kb, parse = reply
        self.last_peak_kb = peak_kb
        if parse == "hit":
            self.parse_hits += 1
        elif parse == "miss":
            self.parse_misses += 1
        return kind, payload

    def _death(self, worker: _Worker) -> Exception:
        worker.process.join(KILL_GRACE_S)
        code = worker.process.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            if -code == signal.SIGXCPU:
                return AnalysisRejected(
                    f"the analysis exceeded its CPU-time deadline of {self.limits.cpu_s:g} s"
                )
            if -code in (signal.SIGKILL, signal.SIGABRT, signal.SIGSEGV):
                return AnalysisRejected(
                    f"the analysis worker was stopped by {name}, most likely at the memory ceiling of "
                    f"{_mb(self.limits.memory_bytes)}"
                )
            return PoolUnavailable(f"the analysis worker died ({name})")
        return PoolUnavailable(f"the analysis worker exited unexpectedly (status {code})")

    async def _replace(self, worker: _Worker) -> None:
        self.recycled += 1
        await asyncio.to_thread(_stop, worker)
        if self._closing:
            return
        try:
            fresh = await asyncio.to_thread(self._spawn, worker.lane)
        except Exception:
            log.exception("could not start an analysis worker; the pool shrinks by one")
            return
        self._release(fresh)

    async def close(self) -> None:
        """Stop every worker now; jobs in flight end with ``PoolUnavailable``."""
        self._closing = True
        workers = [*self._busy, *self._free["small"], *self._free["large"]]
        self._free = {"small": [], "large": []}
        waiting, self._waiters = self._waiters, deque()
        for _, waiter in waiting:
            if not waiter.done():
                waiter.set_exception(PoolUnavailable("the server is shutting down"))
        await asyncio.gather(*(asyncio.to_thread(_stop, w) for w in workers))


def _pickled(job: str, args: tuple[Any, ...], cpu_s: float) -> bytes:
    return bytes(ForkingPickler.dumps((job, args, cpu_s)))


def _stop(worker: _Worker) -> None:
    """Close the pipe (an idle worker exits on EOF) and make sure the process is gone."""
    with contextlib.suppress(OSError):
        worker.conn.close()
    process = worker.process
    if process.is_alive():
        process.join(0.2)
    if process.is_alive():
        process.kill()
    process.join(KILL_GRACE_S)


def default_size(configured: int) -> int:
    """``configured`` workers, or one per CPU this process may use when it is 0."""
    if configured > 0:
        return configured
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
