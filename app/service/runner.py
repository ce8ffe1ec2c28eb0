"""Runs one stored case through the pipeline; shared by ``POST /v1/triage`` and the batch worker."""

from __future__ import annotations

from typing import Any

from app.localize.llm import ModelClient
from app.service.cases import triage_options
from app.service.metrics import Metrics
from app.service.snapshots import SNAPSHOT_KEY
from app.service.store import Case
from app.triage import triage_with_snapshot


class Runner:
    """Holds this process's model client (or None) and counts every result in the metrics."""

    def __init__(self, client: ModelClient | None, metrics: Metrics) -> None:
        self.client = client
        self.metrics = metrics

    async def __call__(self, case: Case) -> dict[str, Any]:
        result, snapshot = await triage_with_snapshot(
            case.scripts, case.log, triage_options(case.options), client=self.client
        )
        data = result.to_dict()
        data.pop("id", None)
        data.pop("status", None)
        self.metrics.observe_result(data, model_configured=self.client is not None)
        data[SNAPSHOT_KEY] = snapshot  # the store keeps it in its own tables, not in the result's JSON
        return data
