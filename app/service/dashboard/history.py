"""The dashboard's CI-history pages: tests, one test's timeline, signature groups; channel bars.

Server-rendered like the rest of the dashboard; the pages read ``HistoryStore``'s public methods
and draw from ``app.history.surface``. Bars are CSS width classes (the CSP forbids inline styles).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response

from app.history.surface import Bar, changed_hunks, channel_bars, timeline
from app.localize.result import history_terms
from app.service.dashboard.auth import KeyedRoute
from app.service.dashboard.pages import render, templates
from app.service.deps import RuntimeDep
from app.store.history import SIGNATURE_PAGE, HistoryStore, version_files

router = APIRouter(route_class=KeyedRoute, include_in_schema=False)

PAGE_SIZE = 25
TIMELINE_RUNS = 200
SUMMARY_RUNS = 20  # runs read per test on the list, for its last verdict and flaky badge


def history_bars(triage: dict[str, Any]) -> dict[int, list[Bar]]:
    """rank -> bars of the history channels for a stored triage, scaled to the page's widest term."""
    per_rank = {
        int(item["rank"]): (item.get("history") or history_terms(item))["channels"]
        for item in triage.get("ranking") or ()
    }
    widest = max((w for channels in per_rank.values() for w in channels.values()), default=0.0)
    bars = {rank: channel_bars(channels, widest) for rank, channels in per_rank.items()}
    return {rank: found for rank, found in bars.items() if found}


templates.env.globals["history_bars"] = history_bars


def _list(runtime: Any, offset: int) -> tuple[list[dict[str, Any]], bool]:
    store = HistoryStore(runtime.store)
    rows = store.tests(limit=PAGE_SIZE + 1, offset=offset)
    for row in rows[:PAGE_SIZE]:
        page = store.history(row["key"], limit=SUMMARY_RUNS) or {"runs": [], "flaky": False}
        row["last_verdict"] = page["runs"][0]["verdict"] if page["runs"] else None
        row["flaky"] = page["flaky"]
        row["classification"] = page.get("classification")
    return rows[:PAGE_SIZE], len(rows) > PAGE_SIZE


def _page_no(page: str) -> int:
    """The ``page`` query parameter, 1 when absent or not a small positive number."""
    return int(page) if page.isascii() and page.isdigit() and 1 <= len(page) <= 6 and int(page) else 1


@router.get("/tests", name="dashboard_tests")
async def tests_page(request: Request, runtime: RuntimeDep, page: str = "") -> Response:
    """Tests with recorded CI runs, most recently run first: last verdict, flaky badge, counts."""
    page_no = _page_no(page)
    rows, more = await asyncio.to_thread(_list, runtime, (page_no - 1) * PAGE_SIZE)
    return render(request, "tests.html", {"title": "Tests", "rows": rows, "page": page_no, "more": more})


def _test(runtime: Any, key: str) -> dict[str, Any] | None:
    page = HistoryStore(runtime.store).history(key, limit=TIMELINE_RUNS)
    if page is None:
        return None
    page["timeline"] = timeline(page["runs"])
    found = page.get("first_bad_version")
    page["diff"] = []
    if found and found.get("last_good") and found.get("first_bad") and found.get("script_changed"):
        files = version_files(runtime.store, [found["last_good"], found["first_bad"]])
        page["diff"] = changed_hunks(files.get(found["last_good"], {}), files.get(found["first_bad"], {}))
    return page


@router.get("/tests/{key:path}", name="dashboard_test")
async def test_page(request: Request, runtime: RuntimeDep, key: str) -> Response:
    """One test's history: the timeline of verdicts with version ticks, flakiness, the first-bad diff."""
    if len(key) > 1100 or "\x00" in key:
        page = None
    else:
        page = await asyncio.to_thread(_test, runtime, key)
    if page is None:
        message = f"No runs are recorded for test {key[:200]!r}."
        return render(request, "message.html", {"title": "Not found", "message": message}, 404)
    return render(request, "test.html", {"title": f"Test {page['key']}", "test": page})


@router.get("/signatures", name="dashboard_signatures")
async def signatures_page(request: Request, runtime: RuntimeDep, page: str = "") -> Response:
    """Failures grouped by error signature across tests, newest failure first, a page at a time."""
    page_no = _page_no(page)
    offset = (page_no - 1) * SIGNATURE_PAGE
    groups = await asyncio.to_thread(
        HistoryStore(runtime.store).signatures, limit=SIGNATURE_PAGE + 1, offset=offset
    )
    context = {"title": "Signatures", "groups": groups[:SIGNATURE_PAGE], "page": page_no}
    return render(request, "signatures.html", {**context, "more": len(groups) > SIGNATURE_PAGE})
