"""``POST /v1/triage`` with ``test``: the failure ranked with its test's recorded CI history.

The route hands every triage here; without ``test`` (or with ``history: off``) the ordinary
runner triages it. Otherwise the test's newest runs are read from the store, and the analysis,
selection and fusion run as one job in the analysis pool (``static_with_history``), so history
costs the event loop nothing. The result gains a ``history`` section and, per ranked element,
the posterior and each history channel's contribution (``app.history.surface``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

from app.history.surface import HistoryChoice, element_channels, parse_history
from app.service import pool_jobs
from app.service.cases import triage_options
from app.service.deps import Runtime
from app.service.history_store import HistoryStore
from app.service.pool import LARGE_LOG_BYTES, LARGE_SCRIPT_LINES
from app.service.schemas import TriageRequest
from app.service.snapshots import SNAPSHOT_KEY
from app.service.store import Submission

HISTORY_RANKERS = ("auto", "heuristic", "history")


def choice_of(body: TriageRequest, case: Submission) -> HistoryChoice:
    """The request's ``history`` over the options' window and k; ``ValueError`` if out of range."""
    options = triage_options(case.options)
    raw = body.history.model_dump(exclude_none=True) if hasattr(body.history, "model_dump") else body.history
    return parse_history(raw, window=options.history_window, k=options.history_k)


async def run(runtime: Runtime, case: Submission, body: TriageRequest) -> dict[str, Any]:
    """The triage's result data: with history when the request names a test and allows it."""
    choice = choice_of(body, case)
    if body.test is None or choice.mode == "off":
        return await runtime.runner(case)
    options = triage_options(case.options)
    skipped = None
    if options.ranker not in HISTORY_RANKERS or (options.ranker == "auto" and runtime.client is not None):
        skipped = f"history applies to the heuristic ranker; the {options.ranker} ranker ranked alone"
    history = []
    if skipped is None:
        store = HistoryStore(runtime.store)
        history = await asyncio.to_thread(store.history_runs, body.test, limit=choice.window)
        if not history:
            skipped = f"no CI history with traces recorded for test {body.test!r}: ranked without it"
    if skipped is not None:
        data = await runtime.runner(case)
        data["history"] = {"test": body.test, "runs_read": 0, "runs_used": 0, "note": skipped}
        data["warnings"] = [*data.get("warnings", []), skipped]
        return data
    options = replace(options, history_window=choice.window, history_k=choice.k)
    done, snapshot, section = await _job(runtime, case, options, history, choice)
    data = pool_jobs.stored_data(done)
    data["history"] = {"test": body.test, **section}
    for item in data["ranking"]:
        item["history"] = element_channels(item)
    runtime.metrics.observe_result(data, model_configured=runtime.client is not None)
    data[SNAPSHOT_KEY] = snapshot
    return data


async def _job(
    runtime: Runtime, case: Submission, options: Any, history: list[Any], choice: HistoryChoice
) -> tuple[Any, Any, dict[str, Any]]:
    runner = runtime.runner
    args = (case.scripts, case.log, options, runner.limits, history, choice)
    if runner.pool is None:  # no pool (tests, tcfl batch): a thread keeps the event loop free
        return await asyncio.to_thread(pool_jobs.static_with_history, *args)
    lines = sum(s.content.count("\n") for s in case.scripts)
    large = lines > LARGE_SCRIPT_LINES or len(case.log) > LARGE_LOG_BYTES
    started = time.perf_counter()
    done, snapshot, section = await runner.pool.run("static_with_history", *args, large=large)
    section["pool_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
    return done, snapshot, section
