"""Metrics: one registry per app, fed from real triage results."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.analysis.model import Script
from app.localize.result import TriageOptions
from app.service.api import create_app
from app.service.metrics import Metrics
from app.settings import Settings
from app.triage import triage
from tests.service.helpers import EXAMPLE


def _value(metrics: Metrics, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return 0.0


def test_each_app_has_its_own_registry(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'a.db'}")
    first, second = create_app(settings), create_app(settings)
    assert first.state.runtime.metrics.registry is not second.state.runtime.metrics.registry
    first.state.runtime.metrics.items.labels("done").inc()
    assert _value(first.state.runtime.metrics, "tcfl_batch_items_total", outcome="done") == 1
    assert _value(second.state.runtime.metrics, "tcfl_batch_items_total", outcome="done") == 0


def test_a_heuristic_result_counts_phases_but_no_tokens() -> None:
    script = Script("test_example.py", (EXAMPLE / "test_example.py").read_text())
    options = TriageOptions(ranker="heuristic", log_functions=("Log.log",))
    result = asyncio.run(triage([script], (EXAMPLE / "failure.log").read_text(), options, client=None))
    metrics = Metrics()
    metrics.observe_result(result.to_dict(), model_configured=False)
    assert _value(metrics, "tcfl_triage_phase_seconds_count", phase="total") == 1
    static_s = result.to_dict()["timings"]["static_ms"] / 1000
    assert _value(metrics, "tcfl_triage_phase_seconds_sum", phase="static") == pytest.approx(static_s)
    assert _value(metrics, "tcfl_triages_total", ranker="heuristic") == 1
    assert _value(metrics, "tcfl_model_tokens_total", direction="in") == 0
    assert _value(metrics, "tcfl_ranker_fallbacks_total") == 0
