"""The service's one triage driver: ``POST /v1/triage``, batch items and ``POST /v1/ingest`` all run here.

The static phase (and the heuristic, and the history fusion) runs as one ``pool_jobs.triage`` job
in the analysis pool, bounded in CPU time and memory and off the event loop; only a model call,
when one is made, runs here, async. Without a pool (``tcfl batch``, tests) the same job runs in
a thread, so it overlaps the model calls of the other items in flight. When the submission names
a test and history applies, the test's recorded runs are read from the store first and handed in.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from app.analysis.limits import CostLimits
from app.history.facts import batch_facts, log_only
from app.history.records import RunFacts, RunRecord
from app.localize.llm import ModelClient
from app.options import before_of
from app.rankers.base import RankRequest
from app.service.cases import TEST_KEY, triage_options
from app.service.metrics import Metrics
from app.service.pool import LARGE_LOG_BYTES, LARGE_SCRIPT_LINES, AnalysisPool, AnalysisRejected
from app.service.pool_jobs import TriageJob, stored_data
from app.service.pool_jobs import triage as triage_job
from app.store.snapshots import SNAPSHOT_KEY
from app.store.store import Submission
from app.triage import history_skipped, rank

FACTS_CHUNK = 2_000  # runs per analysis job when an upload's runs are recorded
# (test key, newest runs to read, only those before this time) -> the runs, oldest first; reads
# the store (a thread calls it)
HistoryReader = Callable[[str, int, datetime | None], Sequence[Any]]


class Runner:
    """Holds this process's model client (or None), the pool and limits; counts every result."""

    def __init__(
        self,
        client: ModelClient | None,
        metrics: Metrics,
        pool: AnalysisPool | None = None,
        limits: CostLimits | None = None,
        history: HistoryReader | None = None,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self.pool = pool
        self.limits = limits
        self.history = history

    async def __call__(self, case: Submission, *, snapshot: bool = True) -> dict[str, Any]:
        """The result's data as stored (with the packed snapshot under ``SNAPSHOT_KEY`` when asked);
        ``ValueError`` for a case over the cost limits or with bad options."""
        options = triage_options(case.options)
        if case.test is None and case.options.get(TEST_KEY) is not None:
            case = replace(case, test=case.options[TEST_KEY])
        runs, note = await self._history(case, options)
        job = TriageJob(
            case.scripts,
            case.log,
            options,
            self.limits,
            self.client is not None,
            snapshot=snapshot,
            test=case.test,
            history=tuple(runs),
            note=note,
        )
        started = time.perf_counter()
        if self.pool is None:
            done, packed = await asyncio.to_thread(triage_job, job)
        else:
            lines = sum(s.content.count("\n") for s in case.scripts)
            large = lines > LARGE_SCRIPT_LINES or len(case.log) > LARGE_LOG_BYTES
            done, packed = await self.pool.run("triage", job, large=large)
        if isinstance(done, RankRequest):  # the model ranks, here
            data = stored_data(await rank(done, client=self.client, started=started, note=note))
        else:  # finished in the worker, as stored
            data = done
        self.metrics.observe_result(data, model_configured=self.client is not None)
        if packed is not None:
            data[SNAPSHOT_KEY] = packed  # the store keeps it in its own tables, not in the result's JSON
        return data

    async def with_facts(self, records: Sequence[RunRecord]) -> list[RunRecord]:
        """The records with their CI-history facts, computed in the pool's large lane under the
        cost limits, ``FACTS_CHUNK`` records a job: a large upload's jobs queue beside other
        uploads' and never hold a worker long, and small requests keep the small lane."""
        identities = await asyncio.to_thread(lambda: [r.identity() for r in records])
        unique = list(dict(zip(identities, records, strict=True)).items())
        found: dict[str, RunFacts] = {}
        for start in range(0, len(unique), FACTS_CHUNK):
            chunk = unique[start : start + FACTS_CHUNK]
            batch = tuple(r for _, r in chunk)
            if self.pool is None:
                facts = await asyncio.to_thread(batch_facts, batch, self.limits)
            else:
                try:
                    facts = await self.pool.run("facts", batch, self.limits, large=True)
                except AnalysisRejected as exc:  # the whole job ran past a deadline: no traces
                    facts = [RunFacts(tuple(s.path for s in r.scripts), log_only(r), str(exc)) for r in batch]
            found.update(zip((i for i, _ in chunk), facts, strict=True))
        return await asyncio.to_thread(
            lambda: [replace(r, facts=found[i]) for r, i in zip(records, identities, strict=True)]
        )

    async def _history(self, case: Submission, options: Any) -> tuple[Sequence[Any], str | None]:
        """The named test's recorded runs (oldest first), or why none were read."""
        if case.test is None or options.history == "off":
            return (), None
        skipped = history_skipped(options, model_configured=self.client is not None)
        if skipped is not None:
            return (), skipped
        if self.history is None:
            return (), "no CI history store here: ranked without the test's history"
        window, before = options.history_window, before_of(options)
        runs = await asyncio.to_thread(self.history, case.test, window, before)
        return runs, None
