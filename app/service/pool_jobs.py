"""The jobs the analysis pool runs: pure functions with picklable arguments and results.

Imported once by the pool's fork server, so a fresh worker starts with the analysis loaded.
"""

from __future__ import annotations

import gc
import multiprocessing
import time
from dataclasses import dataclass, field, replace
from typing import Any

from app.analysis import snapshot
from app.analysis.limits import CostLimits
from app.analysis.model import Script
from app.analysis.parsed import ParseCache
from app.history.facts import RunFacts, batch_facts
from app.history.records import RunRecord
from app.localize.result import TriageResult
from app.options import TriageOptions
from app.rankers import choose
from app.rankers.base import RankRequest
from app.rankers.heuristic import HeuristicRanker
from app.store.rows import Submission, handed
from app.triage import finish, prepare, rank, with_history

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


@dataclass(frozen=True)
class TriageJob:
    """One triage as the pool runs it (picklable): the case, its options, and what the shell read."""

    scripts: tuple[Script, ...]
    log: str
    options: TriageOptions
    limits: CostLimits | None = None
    model_configured: bool = False  # a model client waits in the server: ``auto`` means the model
    snapshot: bool = True  # build the analysis snapshot the dashboard shows (each line's reason kept)
    test: str | None = None  # the failing test's key in the CI history, when the caller named one
    history: tuple[Any, ...] = field(default=(), repr=False)  # its recorded runs (HistoryRun), oldest first
    note: str | None = None  # why no runs were read, when a test was named


def triage(job: TriageJob) -> tuple[dict[str, Any] | RankRequest, snapshot.PackedSnapshot | None]:
    """Everything of one triage that needs no model (``app.triage``'s one path).

    Returns the finished result as the store keeps it (``stored_data``) when no model will be
    asked, else the prepared request (with the heuristic's picks computed here) for the server to
    rank with the model; and the snapshot, packed, when asked for. With ``job.limits`` the case's
    cost is checked first (``InputTooCostly``, a ValueError naming the limit). The server process
    then only writes: it is the one process every request crosses, so its work per request
    bounds the throughput.
    """
    started = time.perf_counter()
    worker = multiprocessing.parent_process() is not None  # not the server's (or tcfl batch's) own process
    if worker:
        _freeze_new_parses()
    try:
        request = prepare(
            job.scripts, job.log, job.options, explain=job.snapshot, limits=job.limits, parses=PARSES
        )
        request = with_history(request, job.test, job.history)
        packed = (
            snapshot.build(request.analysis, request.rendered, job.log).packed() if job.snapshot else None
        )
        model = job.model_configured and choose(request.options.ranker, model_configured=True) == "llm"
        if not model:
            done = finish(lambda: rank(request, client=None, started=started, note=job.note))
            # the failure's id computed here, for the store: in the server process it costs the
            # one process every request crosses
            case = Submission(job.scripts, job.log, {})
            return handed(stored_data(done), case, packed, job.options.log_format), packed
        picks = HeuristicRanker.picks(request, 2 * request.options.k)  # enough to fill in after k
        analysis = replace(request.analysis, trees=(), parsed=None)  # parse trees do not cross processes
        return replace(request, analysis=analysis, heuristic=(request.rendered, picks)), packed
    finally:
        if worker:  # a worker's heap holds only this job's objects: collect them now, between jobs
            gc.collect()


def facts(records: tuple[RunRecord, ...], limits: CostLimits | None) -> list[RunFacts]:
    """The CI history's facts of many runs (``app.history.facts.batch_facts``), parses kept."""
    worker = multiprocessing.parent_process() is not None
    if worker:
        _freeze_new_parses()
    try:
        return batch_facts(records, limits, PARSES)
    finally:
        if worker:
            gc.collect()


def stored_data(result: TriageResult) -> dict[str, Any]:
    """A result's data as stored and served (the stored row gives the id and status)."""
    data = result.to_dict()
    data.pop("id", None)
    data.pop("status", None)
    return data


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
    triage(TriageJob((script,), log, options, CostLimits()))
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
