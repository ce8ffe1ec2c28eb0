"""The jobs the analysis pool runs: pure functions with picklable arguments and results.

Imported once by the pool's fork server, so a fresh worker starts with the analysis loaded.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Coroutine, Sequence
from dataclasses import replace
from typing import Any

from app.analysis import snapshot
from app.analysis.limits import CostLimits
from app.analysis.model import Script
from app.analysis.parsed import ParseCache
from app.localize.result import TriageResult
from app.options import TriageOptions
from app.rankers import choose
from app.rankers.base import RankRequest
from app.rankers.heuristic import HeuristicRanker
from app.triage import prepare, rank

# This worker's parses of recently seen scripts: the service sees the same test files again and
# again with new logs, and only the log's half of an analysis differs.
PARSES = ParseCache()
_frozen_at = {"misses": 0}  # PARSES.misses when the heap was last frozen


def _freeze_new_parses() -> None:
    """Move parses kept since the last job out of the collector's sight, before this job starts.

    The ``gc.collect`` after every job walks every object not frozen: with a full cache of
    parses that walk cost more than the analysis it followed. Done at the start of the next job,
    when the last one's objects are gone (only the cache holds new ones); evicted parses are
    acyclic and freed by reference counting, frozen or not.
    """
    if PARSES.misses != _frozen_at["misses"]:
        gc.collect()
        gc.freeze()
        _frozen_at["misses"] = PARSES.misses


def static(
    scripts: Sequence[Script],
    log: str,
    options: TriageOptions,
    limits: CostLimits | None = None,
    model_configured: bool = False,
) -> TriageResult | RankRequest:
    """Everything of one triage that needs no model: the finished result when no model will be
    asked, else the prepared request (with the heuristic's picks computed here) for the server to
    rank with the model. With ``limits``, the case's cost is checked first (``InputTooCostly``,
    a ValueError naming the limit).
    """
    return _static(scripts, log, options, limits, model_configured, explain=False)[0]


def static_with_snapshot(
    scripts: Sequence[Script],
    log: str,
    options: TriageOptions,
    limits: CostLimits | None = None,
    model_configured: bool = False,
) -> tuple[dict[str, Any] | RankRequest, snapshot.PackedSnapshot]:
    """``static`` plus the snapshot of its analysis (each line's reason kept) that the service
    stores with the result, so that the dashboard never analyses a stored failure again.

    Both as the store keeps them: a finished result as its data (``stored_data``), the snapshot
    packed; the server process then only writes them (it is the one process every request
    crosses, so its work per request bounds the throughput).
    """
    done, request = _static(scripts, log, options, limits, model_configured, explain=True)
    packed = snapshot.build(request.analysis, request.rendered, log).packed()
    return (stored_data(done) if isinstance(done, TriageResult) else done), packed


def stored_data(result: TriageResult) -> dict[str, Any]:
    """A result's data as stored and served (the stored row gives the id and status)."""
    data = result.to_dict()
    data.pop("id", None)
    data.pop("status", None)
    return data


def static_with_history(
    scripts: Sequence[Script],
    log: str,
    options: TriageOptions,
    limits: CostLimits | None,
    history: Sequence[Any],
    choice: Any,
) -> tuple[TriageResult, snapshot.PackedSnapshot, dict[str, Any]]:
    """The history-aware triage (``app.history.surface``) with its snapshot (packed); no model is asked."""
    from app.history.surface import triage_with_history

    _freeze_new_parses()
    try:
        result, request, section = triage_with_history(
            scripts, log, options, history, choice, limits, parses=PARSES
        )
        return result, snapshot.build(request.analysis, request.rendered, log).packed(), section
    finally:
        gc.collect()


def _static(
    scripts: Sequence[Script],
    log: str,
    options: TriageOptions,
    limits: CostLimits | None,
    model_configured: bool,
    *,
    explain: bool,
) -> tuple[TriageResult | RankRequest, RankRequest]:
    started = time.perf_counter()
    _freeze_new_parses()
    try:
        request = prepare(scripts, log, options, explain=explain, limits=limits, parses=PARSES)
        if choose(request.options.ranker, model_configured=model_configured) != "llm" or not model_configured:
            return _without_loop(rank(request, client=None, started=started)), request
        picks = HeuristicRanker.picks(request, 2 * request.options.k)  # enough to fill in after k
        analysis = replace(request.analysis, trees=(), parsed=None)  # parse trees do not cross processes
        return replace(request, analysis=analysis, heuristic=(request.rendered, picks)), request
    finally:
        gc.collect()


def _without_loop(work: Coroutine[Any, Any, TriageResult]) -> TriageResult:
    """Run a ranking that does no I/O (no model client) to its end without an event loop.

    ``asyncio.run`` builds and closes a loop per job, a fixed cost as large as a small case's
    ranking; a coroutine that never waits finishes on its first step. One that does wait (a
    ranker added later with I/O of its own) is a bug the error names.
    """
    try:
        work.send(None)
    except StopIteration as finished:
        return finished.value
    work.close()
    raise RuntimeError("a ranking without a model client waited on I/O; rank it on an event loop")


def warm_up() -> None:
    """Triage the embedded running example once, then freeze what that left on the heap.

    A worker runs this before its first job: the lazy imports, compiled regexes and tree-sitter
    queries are loaded then, and ``gc.freeze`` moves them (and the forkserver's modules) out of
    the collector's sight, so the ``gc.collect`` after every job walks only that job's objects.
    """
    from importlib import resources

    examples = resources.files("app.service").joinpath("examples")
    script = Script("test_example.py", examples.joinpath("running_example_script.txt").read_text("utf-8"))
    log = examples.joinpath("running_example_log.txt").read_text("utf-8")
    options = TriageOptions(level="block", k=3, ranker="heuristic", log_functions=("Log.log",))
    static_with_snapshot([script], log, options, CostLimits())
    gc.collect()
    gc.freeze()
    _frozen_at["misses"] = PARSES.misses


def ping() -> int:
    """Nothing: lets tests and the benchmark see a worker answer."""
    return 0


def parse_cache_stats() -> tuple[int, int, int]:
    """This worker's parse cache: hits, misses, entries (for tests)."""
    return PARSES.hits, PARSES.misses, len(PARSES)


def frozen_objects() -> int:
    """How many objects ``gc.freeze`` put out of the collector's sight in this worker (for tests)."""
    return gc.get_freeze_count()


def burn(seconds: float) -> int:
    """Spin on the CPU (for tests of the CPU deadline)."""
    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += 1
    return n


def hog(megabytes: int) -> int:
    """Hold ``megabytes`` of memory (for tests of the memory ceiling)."""
    block = bytearray(megabytes * 1024 * 1024)
    return len(block)
