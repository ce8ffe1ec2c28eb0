"""The dashboard's launches: CI jobs, one job's tests and failure groups, trends, labels, upload.

Server-rendered like the rest of the dashboard. Trends are SVG drawn here (no script, no inline
style: the CSP allows neither), with the numbers beside them in a table. Labels and uploads are
forms with the CSRF token; an upload goes through ``POST /v1/ingest``'s own code.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import ValidationError

from app.service.dashboard.auth import KeyedRoute, safe_next
from app.service.dashboard.pages import render
from app.service.deps import RuntimeDep
from app.service.routes.launches import TREND_LAUNCHES, LabelIn, add_label, launch_page, trend
from app.service.routes.triage import MAX_ID
from app.store.labels import LabelStore
from app.store.launches import LaunchStore

router = APIRouter(route_class=KeyedRoute, include_in_schema=False)

PAGE_SIZE = 30
KINDS = ("new", "regression", "recurring", "flaky")  # failure kinds, bottom of a stacked bar first
WIDTH, HEIGHT = 720, 200
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 34


def _page_no(page: str) -> int:
    return int(page) if page.isascii() and page.isdigit() and 1 <= len(page) <= 6 and int(page) else 1


def _id(raw: str) -> int | None:
    return (
        int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 10 and 1 <= int(raw) <= MAX_ID else None
    )


@dataclass(frozen=True)
class ChartMark:
    x: float
    y: float
    width: float
    height: float
    kind: str  # the CSS class of its colour
    title: str  # what a pointer or a screen reader is told


@dataclass(frozen=True)
class Tick:
    x: float
    y: float
    text: str


@dataclass(frozen=True)
class Chart:
    """One SVG chart: bars (or a line through points), axis ticks, and its accessible name."""

    id: str
    title: str
    bars: tuple[ChartMark, ...] = ()
    line: str = ""  # polyline points
    points: tuple[ChartMark, ...] = ()  # the line's markers (x, y as the centre)
    x_ticks: tuple[Tick, ...] = ()
    y_ticks: tuple[Tick, ...] = ()
    width: int = WIDTH
    height: int = HEIGHT
    plot_left: int = LEFT
    plot_right: int = WIDTH - RIGHT
    plot_top: int = TOP
    plot_bottom: int = HEIGHT - BOTTOM


def _x(i: int, n: int) -> tuple[float, float]:
    """The centre of slot ``i`` of ``n`` and the slot's width."""
    step = (WIDTH - LEFT - RIGHT) / max(n, 1)
    return LEFT + step * (i + 0.5), step


def _y(value: float, top: float) -> float:
    plot = HEIGHT - TOP - BOTTOM
    return HEIGHT - BOTTOM - (plot * value / top if top > 0 else 0.0)


def _x_ticks(launches: Sequence[Mapping[str, Any]]) -> tuple[Tick, ...]:
    every = max(1, len(launches) // 15)  # at most about 15 labels under the axis
    return tuple(
        Tick(_x(i, len(launches))[0], HEIGHT - BOTTOM + 16, f"#{launch['id']}")
        for i, launch in enumerate(launches)
        if i % every == 0 or i == len(launches) - 1
    )


def _y_ticks(top: float, percent: bool = False) -> tuple[Tick, ...]:
    values = (0.0, top / 2 if percent else float(round(top / 2)), top)
    return tuple(
        Tick(LEFT - 6, _y(v, top) + 4, f"{v:.0f} %" if percent else f"{v:g}") for v in dict.fromkeys(values)
    )


def trend_charts(launches: Sequence[Mapping[str, Any]]) -> list[Chart]:
    """Pass rate (a line), failures (bars) and the failures' kinds (stacked bars) per launch."""
    n = len(launches)
    rates = [
        (i, launch["pass_rate"]) for i, launch in enumerate(launches) if launch.get("pass_rate") is not None
    ]
    points = tuple(
        ChartMark(
            _x(i, n)[0],
            _y(100 * rate, 100),
            0,
            0,
            "pass",
            f"launch #{launches[i]['id']}: {100 * rate:.0f} % passed",
        )
        for i, rate in rates
    )
    rate_chart = Chart(
        "pass-rate",
        "Pass rate",
        line=" ".join(f"{p.x:.1f},{p.y:.1f}" for p in points),
        points=points,
        x_ticks=_x_ticks(launches),
        y_ticks=_y_ticks(100, percent=True),
    )
    most = max((int(launch.get("failed") or 0) for launch in launches), default=0) or 1
    fail_bars = []
    for i, launch in enumerate(launches):
        x, step = _x(i, n)
        failed = int(launch.get("failed") or 0)
        y = _y(failed, most)
        fail_bars.append(
            ChartMark(
                x - step * 0.3,
                y,
                step * 0.6,
                HEIGHT - BOTTOM - y,
                "fail",
                f"launch #{launch['id']}: {failed} failed",
            )
        )
    fail_chart = Chart(
        "failures", "Failed tests", tuple(fail_bars), x_ticks=_x_ticks(launches), y_ticks=_y_ticks(most)
    )
    tallest = max((sum(int(launch.get(k) or 0) for k in KINDS) for launch in launches), default=0) or 1
    kind_bars = []
    for i, launch in enumerate(launches):
        x, step = _x(i, n)
        base = 0
        for kind in KINDS:
            count = int(launch.get(kind) or 0)
            if count:
                top_y, bottom_y = _y(base + count, tallest), _y(base, tallest)
                title = f"launch #{launch['id']}: {count} {kind}"
                kind_bars.append(ChartMark(x - step * 0.3, top_y, step * 0.6, bottom_y - top_y, kind, title))
                base += count
    kind_chart = Chart(
        "kinds",
        "Failures by kind: new, regression, recurring, flaky",
        tuple(kind_bars),
        x_ticks=_x_ticks(launches),
        y_ticks=_y_ticks(tallest),
    )
    return [rate_chart, fail_chart, kind_chart]


@router.get("/launches", name="dashboard_launches")
async def launches_page(
    request: Request, runtime: RuntimeDep, pipeline: str = "", page: str = ""
) -> Response:
    """CI jobs, newest first: counts, pass rate, duration, commit and job link; a pipeline filter."""
    page_no = _page_no(page)
    store = LaunchStore(runtime.store)
    chosen = pipeline[:1000] or None
    rows = await asyncio.to_thread(
        store.recent, pipeline=chosen, limit=PAGE_SIZE + 1, offset=(page_no - 1) * PAGE_SIZE
    )
    pipelines = await asyncio.to_thread(store.pipelines)
    return render(
        request,
        "launches.html",
        {
            "title": "Launches",
            "rows": rows[:PAGE_SIZE],
            "more": len(rows) > PAGE_SIZE,
            "page": page_no,
            "pipeline": pipeline,
            "pipelines": pipelines,
            "query": urlencode({"pipeline": pipeline}) if pipeline else "",
        },
    )


@router.get("/launches/trend", name="dashboard_trend")
async def trend_page(request: Request, runtime: RuntimeDep, pipeline: str = "", last: str = "") -> Response:
    """The last N launches of a pipeline as charts: pass rate, failures, new / recurring / flaky."""
    count = _page_no(last) if last else TREND_LAUNCHES
    count = min(count, 500)
    data = await asyncio.to_thread(trend, runtime, pipeline[:1000] or None, count)
    pipelines = await asyncio.to_thread(LaunchStore(runtime.store).pipelines)
    return render(
        request,
        "trend.html",
        {
            "title": "Trends",
            "pipeline": pipeline,
            "pipelines": pipelines,
            "last": count,
            "launches": data["launches"],
            "charts": trend_charts(data["launches"]),
            "kinds": KINDS,
        },
    )


def _upload_page(request: Request, error: str | None = None, status: int = 200) -> Response:
    return render(request, "upload.html", {"title": "Upload a CI job", "error": error}, status)


@router.get("/launches/upload", name="dashboard_upload")
async def upload_page(request: Request) -> Response:
    """A form for a results file and a checkout archive: one CI job, recorded as a launch."""
    return _upload_page(request)


@router.post("/launches/upload", name="dashboard_upload_post")
async def upload_post(request: Request, runtime: RuntimeDep) -> Response:
    """The job through ``POST /v1/ingest``'s code; then its launch page."""
    from app.service.routes.ingest import ingest_fields, upload_fields  # it imports the dashboard's pages

    with tempfile.TemporaryDirectory(prefix="tcfl-upload-") as work_dir:
        try:
            fields = await upload_fields(request, Path(work_dir), runtime.settings)
            report, ingest_id = await ingest_fields(runtime, fields, Path(work_dir))
        except HTTPException as exc:
            return _upload_page(request, str(exc.detail), exc.status_code)
    target = f"/launches/{report.launch_id}" if report.launch_id is not None else f"/ingests/{ingest_id}"
    return RedirectResponse(target, status_code=303)


@router.get("/launches/{launch_id}", name="dashboard_launch")
async def launch_view(request: Request, runtime: RuntimeDep, launch_id: str, saved: str = "") -> Response:
    """One CI job: its failures grouped by signature (triage, history verdict, label), then every test."""
    parsed = _id(launch_id)
    found = None if parsed is None else await asyncio.to_thread(launch_page, runtime, parsed)
    if found is None:
        return render(
            request, "message.html", {"title": "Not found", "message": f"No launch {launch_id}."}, 404
        )
    return render(
        request,
        "launch.html",
        {
            "title": f"Launch {parsed}",
            "launch": found,
            "defect_types": runtime.settings.defect_type_list(),
            "saved": saved,
        },
    )


@router.post("/launches/{launch_id}/labels", name="dashboard_label")
async def label_post(request: Request, runtime: RuntimeDep, launch_id: str) -> Response:
    """Label a failure group (its signature) or one failure of this launch."""
    parsed = _id(launch_id)
    if parsed is None:
        return render(
            request, "message.html", {"title": "Not found", "message": f"No launch {launch_id}."}, 404
        )
    form = await request.form(max_files=0, max_fields=20)
    given = {k: v for k, v in form.items() if isinstance(v, str) and v.strip() and k != "csrf_token"}
    if "failure_id" in given:
        given["failure_id"] = _id(given["failure_id"]) or 0  # type: ignore[assignment]
    try:
        body = LabelIn.model_validate(given)
        await asyncio.to_thread(add_label, runtime, body)
    except (ValidationError, ValueError, LookupError) as exc:
        message = (
            "; ".join(str(e["msg"]) for e in exc.errors()) if isinstance(exc, ValidationError) else str(exc)
        )
        return render(request, "message.html", {"title": "Label not saved", "message": message}, 422)
    return RedirectResponse(f"/launches/{parsed}?saved=1#failures", status_code=303)


@router.post("/labels/{label_id}/undo", name="dashboard_label_undo")
async def label_undo(request: Request, runtime: RuntimeDep, label_id: str) -> Response:
    """Take a label off (an automatic one is then never put back on that failure)."""
    parsed = _id(label_id)
    form = await request.form(max_files=0, max_fields=5)
    found = None if parsed is None else await asyncio.to_thread(LabelStore(runtime.store).undo, parsed)
    if found is None:
        return render(
            request, "message.html", {"title": "Not found", "message": f"No label {label_id}."}, 404
        )
    next_url = form.get("next")
    return RedirectResponse(
        safe_next(next_url if isinstance(next_url, str) else "/launches"), status_code=303
    )
