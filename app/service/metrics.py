"""Prometheus metrics, one registry per app instance (tests build many apps in one process)."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_PHASE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # every metric goes in this app's own registry
        counter = partial(Counter, registry=self.registry)
        gauge = partial(Gauge, registry=self.registry)
        histogram = partial(Histogram, registry=self.registry)
        self.requests = counter("tcfl_http_requests", "HTTP requests answered", ["method", "route", "status"])
        self.request_seconds = histogram(
            "tcfl_http_request_duration_seconds", "HTTP request latency", ["method", "route"]
        )
        self.phase_seconds = histogram(
            "tcfl_triage_phase_seconds",
            "Triage pipeline time per phase (static, model, total)",
            ["phase"],
            buckets=_PHASE_BUCKETS,
        )
        self.triages = counter("tcfl_triages", "Triages finished, by ranker used", ["ranker"])
        self.tokens = counter("tcfl_model_tokens", "Model tokens", ["direction"])
        self.model_errors = counter(
            "tcfl_model_errors", "Model calls that failed (the heuristic ranker answered instead)"
        )
        self.fallbacks = counter("tcfl_ranker_fallbacks", "Triages that fell back to the heuristic")
        self.queue_depth = gauge(
            "tcfl_batch_queue_depth",
            "Batch items waiting or running",
            ["status"],
            multiprocess_mode="mostrecent",  # read from the database: one value, whichever process
        )
        self.items = counter("tcfl_batch_items", "Batch items finished", ["outcome"])
        self.circuit_open = gauge(
            "tcfl_model_circuit_open", "1 while model calls are paused after failures (circuit open)"
        )
        self.circuit_opened = gauge(
            "tcfl_model_circuit_opened", "Times the model circuit breaker opened since start"
        )
        self.analysis_workers = gauge("tcfl_analysis_workers", "Analysis worker processes")
        self.analysis_busy = gauge("tcfl_analysis_busy", "Analysis workers running a request")
        self.analysis_recycled = gauge(
            "tcfl_analysis_workers_recycled",
            "Analysis workers replaced (a limit hit, a crash, an abandoned request, or age)",
        )
        self.parse_cache = gauge(
            "tcfl_parse_cache_analyses",
            "Analyses whose scripts' parse an analysis worker had kept (hit) or made (miss), since start",
            ["result"],
        )
        self.write_transactions = gauge(
            "tcfl_store_write_transactions",
            "Transactions that stored finished synchronous triages (several per transaction under load)",
        )
        self.triages_written = gauge(
            "tcfl_store_triages_written", "Finished synchronous triages stored by the writer"
        )
        # labelled children looked up once: ``labels()`` takes a lock and builds its key each call,
        # and every request counts into these (none of them is ever cleared)
        self._answered: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._phases = {phase: self.phase_seconds.labels(phase) for phase in ("static", "model", "total")}
        self._rankers: dict[str, Any] = {}

    def request_answered(self, method: str, route: str, status: int, seconds: float) -> None:
        """One HTTP request answered: counted by method, route and status, its latency observed."""
        children = self._answered.get((method, route, status))
        if children is None:
            children = (
                self.requests.labels(method, route, str(status)),
                self.request_seconds.labels(method, route),
            )
            self._answered[(method, route, status)] = children
        children[0].inc()
        children[1].observe(seconds)

    def observe_result(self, data: dict[str, Any], *, model_configured: bool) -> None:
        timings = data.get("timings") or {}
        for phase, histogram in self._phases.items():
            value = timings.get(f"{phase}_ms")
            if isinstance(value, int | float) and value >= 0:
                histogram.observe(value / 1000)
        ranker = str(data.get("ranker") or "unknown")
        counter = self._rankers.get(ranker)
        if counter is None:
            counter = self._rankers[ranker] = self.triages.labels(ranker)
        counter.inc()
        tokens = data.get("tokens") or {}
        for direction, key in (("in", "input"), ("out", "output")):
            value = tokens.get(key)
            if isinstance(value, int) and value > 0:
                self.tokens.labels(direction).inc(value)
        if data.get("fallback_reason"):
            self.fallbacks.inc()
            if model_configured:
                self.model_errors.inc()

    def set_queue_depth(self, depth: dict[str, int]) -> None:
        for status, n in depth.items():
            self.queue_depth.labels(status).set(n)

    def set_runtime_state(self, client: Any, pool: Any, writer: Any = None) -> None:
        """Read at scrape time from the model client's breaker, the analysis pool and the triage
        writer (any may be None)."""
        if client is not None:
            self.circuit_open.set(1 if client.breaker.state() == "open" else 0)
            self.circuit_opened.set(client.breaker.opened)
        if pool is not None:
            self.analysis_workers.set(pool.size)
            self.analysis_busy.set(pool.busy())
            self.analysis_recycled.set(pool.recycled)
            self.parse_cache.labels("hit").set(pool.parse_hits)
            self.parse_cache.labels("miss").set(pool.parse_misses)
        if writer is not None:
            self.write_transactions.set(writer.batches)
            self.triages_written.set(writer.written)

    def render(self) -> bytes:
        """This process's metrics, or every server process's summed (``tcfl serve --processes``)."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self.registry)
