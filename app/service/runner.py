"""Runs one stored case through the pipeline; shared by ``POST /v1/triage`` and the batch worker.

In the service the static phase (and the heuristic) runs in the analysis pool, bounded in CPU
time and memory and off the event loop; only a model call, when one is made, runs here, async.
Without a pool (``tcfl batch``) everything runs in-process, the static phase in a thread so it
overlaps the model calls of the other items in flight.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from app.analysis.limits import CostLimits
from app.analysis.parsed import ParseCache
from app.analysis.snapshot import PackedSnapshot, Snapshot
from app.analysis.snapshot import build as build_snapshot
from app.localize.llm import ModelClient
from app.options import TriageOptions
from app.rankers.base import RankRequest
from app.service.cases import triage_options
from app.service.metrics import Metrics
from app.service.pool import LARGE_LOG_BYTES, LARGE_SCRIPT_LINES, AnalysisPool
from app.service.pool_jobs import stored_data
from app.service.snapshots import SNAPSHOT_KEY
from app.service.store import Submission
from app.triage import prepare, rank


class Runner:
    """Holds this process's model client (or None) and counts every result in the metrics."""

    def __init__(
        self,
        client: ModelClient | None,
        metrics: Metrics,
        pool: AnalysisPool | None = None,
        limits: CostLimits | None = None,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self.pool = pool
        self.limits = limits
        self.parses = ParseCache()  # without a pool: the scripts' parses this process has seen

    async def __call__(self, case: Submission) -> dict[str, Any]:
        options = triage_options(case.options)
        snapshot: Snapshot | PackedSnapshot
        if self.pool is None:
            # the static phase runs off the event loop, so it overlaps the model calls of other items
            request, started = await asyncio.to_thread(_prepare, case, options, self.parses)
            result = await rank(request, client=self.client, started=started)
            snapshot = await asyncio.to_thread(build_snapshot, request.analysis, request.rendered, case.log)
            data = stored_data(result)
        else:
            started = time.perf_counter()
            lines = sum(s.content.count("\n") for s in case.scripts)
            large = lines > LARGE_SCRIPT_LINES or len(case.log) > LARGE_LOG_BYTES
            done, snapshot = await self.pool.run(
                "static_with_snapshot",
                case.scripts,
                case.log,
                options,
                self.limits,
                self.client is not None,
                large=large,
            )
            if isinstance(done, dict):  # finished in the worker, as stored
                data = done
            else:
                data = stored_data(await rank(done, client=self.client, started=started))
        self.metrics.observe_result(data, model_configured=self.client is not None)
        data[SNAPSHOT_KEY] = snapshot  # the store keeps it in its own tables, not in the result's JSON
        return data


def _prepare(case: Submission, options: TriageOptions, parses: ParseCache) -> tuple[RankRequest, float]:
    started = time.perf_counter()
    # each line's reason is kept for the snapshot the dashboard shows
    return prepare(case.scripts, case.log, options, explain=True, parses=parses), started
