"""Runs one stored case through the pipeline; shared by ``POST /v1/triage`` and the batch worker."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from app.localize.llm import ModelClient
from app.rankers.base import RankRequest
from app.service.cases import triage_options
from app.service.metrics import Metrics
from app.service.store import Submission
from app.triage import prepare, rank


class Runner:
    """Holds this process's model client (or None) and counts every result in the metrics."""

    def __init__(self, client: ModelClient | None, metrics: Metrics) -> None:
        self.client = client
        self.metrics = metrics

    async def __call__(self, case: Submission) -> dict[str, Any]:
        # the static phase runs off the event loop, so it overlaps the model calls of other items
        request, started = await asyncio.to_thread(_prepare, case)
        result = await rank(request, client=self.client, started=started)
        data = result.to_dict()
        data.pop("id", None)
        data.pop("status", None)
        self.metrics.observe_result(data, model_configured=self.client is not None)
        return data


def _prepare(case: Submission) -> tuple[RankRequest, float]:
    started = time.perf_counter()
    return prepare(case.scripts, case.log, triage_options(case.options)), started
