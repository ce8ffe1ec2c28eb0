"""The dashboard's pages: the list, one failure, the submit form, feedback and the key form."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, HTTPException, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.analysis.model import TRACE_ALIASES, VARIANTS, Loc
from app.analysis.render import LEVELS
from app.analysis.snapshot import SnapshotError
from app.localize.result import RANKERS
from app.service.dashboard.accuracy import ACCURACY_KS
from app.service.dashboard.auth import (
    COOKIE,
    KEY_ROUTE,
    KeyedRoute,
    key_form,
    key_matches,
    safe_next,
    set_key_cookie,
)
from app.service.dashboard.backfill import snapshot_for
from app.service.dashboard.feedback import FeedbackStore
from app.service.dashboard.forms import (
    SCRIPT_SLOTS,
    SubmitForm,
    Upload,
    field_label,
    parse_submit,
    validation_errors,
)
from app.service.dashboard.pages import render
from app.service.dashboard.queries import Filters, extras, groups, search
from app.service.dashboard.view import (
    LOAD_STEP,
    LOG_LEAD,
    FailureView,
    LogGap,
    LogRow,
    failure_view,
    log_rows,
    log_windows,
)
from app.service.deps import Runtime, RuntimeDep
from app.service.routes import batches as batch_routes
from app.service.routes import triage as triage_routes
from app.service.routes.triage import MAX_ID
from app.service.schemas import RUNNING_EXAMPLE, TriageRequest
from app.service.views import triage_view
from app.store import snapshots
from app.store.store import STATUSES

router = APIRouter(route_class=KeyedRoute, include_in_schema=False)

PAGE_SIZE = 25
USED_RANKERS = ("llm", "heuristic")
RECENT_BATCHES = 5
FORM_OVERHEAD_BYTES = 64_000


def _int_id(raw: str) -> int | None:
    return (
        int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 10 and 1 <= int(raw) <= MAX_ID else None
    )


def _not_found(request: Request, message: str) -> Response:
    return render(request, "message.html", {"title": "Not found", "message": message}, 404)


def _poll_url(runtime: Runtime, batch_id: int) -> str:
    """The API's own route, unless keys are on: it reads X-API-Key only, which a page cannot send."""
    if runtime.settings.service_keys():
        return f"/batches/{batch_id}/progress"
    return f"/v1/batches/{batch_id}"


@router.get("/", name="dashboard_list")
async def list_page(
    request: Request,
    runtime: RuntimeDep,
    q: str = "",
    test_id: str = "",
    status: str = "",
    ranker: str = "",
    since: str = "",
    until: str = "",
    sig: str = "",
    group: str = "",
    cursor: str = "",
    page: str = "",
) -> Response:
    """Triaged failures, newest first, or grouped by signature; search, filters, pages; recent batches."""
    notices: list[str] = []
    query = (q or test_id).strip()
    if len(query) > 200 or "\x00" in query:
        notices.append("the search text must be at most 200 characters; it was ignored")
        query = ""
    if status and status not in STATUSES:
        notices.append(f"unknown status {status!r}; showing every status")
        status = ""
    if ranker and ranker not in USED_RANKERS:
        notices.append(f"unknown ranker {ranker!r}; showing every ranker")
        ranker = ""
    days: dict[str, date | None] = {}
    for name, raw in (("since", since), ("until", until)):
        try:
            days[name] = date.fromisoformat(raw) if raw else None
        except ValueError:
            notices.append(f"{name} must be a date like 2026-11-23; it was ignored")
            days[name] = None
    if sig and not (len(sig) == 40 and all(c in "0123456789abcdef" for c in sig)):
        notices.append("that signature is not valid; showing every failure")
        sig = ""
    filters = Filters(
        q=query, status=status, ranker=ranker, since=days["since"], until=days["until"], signature=sig
    )
    after = _int_id(cursor) if cursor else None
    if cursor and after is None:
        notices.append("that page link is not valid; showing the newest failures")
    page_no = int(page) if page.isascii() and page.isdigit() and 1 <= len(page) <= 6 else 1
    grouped = group == "1" and not sig
    engine = runtime.store.engine
    rows: list[Any] = []
    group_rows: list[Any] = []
    next_cursor = None
    more_groups = False
    if grouped:
        group_rows, more_groups = await asyncio.to_thread(
            groups, engine, filters, limit=PAGE_SIZE, offset=(page_no - 1) * PAGE_SIZE
        )
    else:
        found = await asyncio.to_thread(search, engine, filters, limit=PAGE_SIZE, cursor=after)
        more = await asyncio.to_thread(extras, engine, [item["id"] for item in found.items])
        rows = [(item, more[item["id"]]) for item in found.items]
        next_cursor = found.next_cursor
    recent = await asyncio.to_thread(runtime.store.list_batches, limit=RECENT_BATCHES)
    accuracy = await asyncio.to_thread(FeedbackStore(engine).accuracy)
    for batch in recent:
        batch["poll_url"] = _poll_url(runtime, batch["id"])
    base = {
        "q": query,
        "status": status,
        "ranker": ranker,
        "since": days["since"].isoformat() if days["since"] else "",
        "until": days["until"].isoformat() if days["until"] else "",
        "sig": sig,
    }
    return render(
        request,
        "list.html",
        {
            "title": "Triaged failures",
            "rows": rows,
            "groups": group_rows,
            "grouped": grouped,
            "next_cursor": next_cursor,
            "paged": after is not None,
            "page_no": page_no,
            "more_groups": more_groups,
            "filters": filters,
            "base": base,
            "base_query": urlencode({k: v for k, v in base.items() if v}),
            "nosig_query": urlencode({k: v for k, v in base.items() if v and k != "sig"}),
            "statuses": STATUSES,
            "rankers": USED_RANKERS,
            "batches": recent,
            "accuracy": accuracy,
            "ks": ACCURACY_KS,
            "notices": notices,
        },
    )


@router.get("/batches/{batch_id}/progress", name="dashboard_batch_progress")
async def batch_progress(batch_id: str, runtime: RuntimeDep) -> Any:
    """GET /v1/batches/{id}'s answer, for pages whose key travels in the cookie."""
    parsed = _int_id(batch_id)
    if parsed is None:
        raise HTTPException(404, f"no batch with id {batch_id}")
    return await batch_routes.get_batch(parsed, runtime)


@router.get("/triage/{triage_id}", name="dashboard_triage")
async def triage_page(
    request: Request, runtime: RuntimeDep, triage_id: str, log: str = "", saved: str = ""
) -> Response:
    """One failure from its stored analysis: the code beside the log, the ranking, its evidence, feedback."""
    parsed = _int_id(triage_id)
    stored = None if parsed is None else await asyncio.to_thread(runtime.store.get_triage, parsed)
    if parsed is None or stored is None:
        return _not_found(request, f"There is no triage with id {triage_id}.")
    found = triage_view(stored)
    notices: list[str] = []
    focus = _int_id(log) if log else None
    if log and focus is None:
        notices.append(f"log line {log[:20]!r} is not a line number; showing the failure")
    engine = runtime.store.engine
    feedback = FeedbackStore(engine)
    marked = await asyncio.to_thread(feedback.lines, parsed)
    view = None
    if found.get("status") == "done":
        try:
            view = await asyncio.to_thread(_stored_view, runtime, parsed, found, focus, marked)
        except (SnapshotError, ValueError) as exc:
            notices.append(f"the stored analysis cannot be shown: {exc}")
    accuracy = await asyncio.to_thread(feedback.accuracy)
    return render(
        request,
        "triage.html",
        {
            "title": f"Triage {parsed}",
            "triage": found,
            "options": found.get("options") or {},
            "view": view,
            "marked": marked,
            "saved": saved,
            "focus": focus,
            "accuracy": accuracy,
            "ks": ACCURACY_KS,
            "load_step": LOAD_STEP,
            "notices": notices,
        },
    )


def _stored_view(
    runtime: Runtime, triage_id: int, found: dict[str, Any], focus: int | None, marked: list[Loc]
) -> FailureView:
    """The page's content from the stored snapshot; one stored before snapshots (or by another
    snapshot version) is computed once, from the triage's own stored options, and stored."""
    ranking = found.get("ranking") or []
    new = new_lines_of(found)
    engine = runtime.store.engine
    try:
        loaded = snapshots.load(engine, triage_id, lambda summary: log_windows(summary, focus, new))
    except SnapshotError:
        loaded = None  # written by another version of tcfl: computed again below, once
    if loaded is None:
        snap = snapshot_for(runtime.store.load_case(triage_id))
        snapshots.save(engine, triage_id, snap, found)
        loaded = snapshots.load(engine, triage_id, lambda summary: log_windows(summary, focus, new))
        if loaded is None:
            raise SnapshotError("the analysis was computed but could not be stored")
    summary, lines = loaded
    return failure_view(summary, ranking, lines, marked, new)


def new_lines_of(triage: dict[str, Any]) -> list[int]:
    """The log lines only the failure printed, as its history section recorded them."""
    found = (triage.get("history") or {}).get("new_lines") or []
    return [int(n) for n in found if isinstance(n, int)]


@router.get("/triage/{triage_id}/log", name="dashboard_log")
async def log_fragment(
    request: Request, runtime: RuntimeDep, triage_id: str, first: int = 1, last: int = 0, at: int = 0
) -> Response:
    """Log pane rows: up to LOAD_STEP stored lines of the gap ``first``..``last``, from near ``at``."""
    parsed = _int_id(triage_id)
    if parsed is None:
        return _not_found(request, f"There is no triage with id {triage_id}.")
    first = min(max(first, 1), MAX_ID)
    last = min(max(last, first), MAX_ID)
    at = min(max(at, first), last)
    start = max(first, at - LOG_LEAD)
    end = min(last, start + LOAD_STEP - 1)
    try:
        loaded = await asyncio.to_thread(
            snapshots.load, runtime.store.engine, parsed, lambda summary: [(start, end)]
        )
    except SnapshotError as exc:
        return render(request, "message.html", {"title": "Log unavailable", "message": str(exc)}, 409)
    if loaded is None:
        return _not_found(request, f"Triage {triage_id} has no stored log yet; open its page first.")
    summary, lines = loaded
    last = min(last, int(summary["log"]["lines"]))
    stored = await asyncio.to_thread(runtime.store.get_triage, parsed)
    new = new_lines_of(triage_view(stored)) if stored is not None else []
    items: list[LogRow | LogGap] = []
    if start > first:
        items.append(LogGap(first, start - 1))
    items.extend(log_rows(summary, lines, new))
    shown_end = lines[-1].number if lines else start - 1
    if shown_end < last:
        items.append(LogGap(shown_end + 1, last))
    return render(request, "_log_rows.html", {"rows": items, "triage_id": parsed, "load_step": LOAD_STEP})


@router.post("/triage/{triage_id}/feedback", name="dashboard_feedback")
async def feedback_post(request: Request, runtime: RuntimeDep, triage_id: str) -> Response:
    """Replace the lines marked as the real fault of this triage."""
    parsed = _int_id(triage_id)
    found = None if parsed is None else await asyncio.to_thread(runtime.store.get_triage, parsed)
    if parsed is None or found is None:
        return _not_found(request, f"There is no triage with id {triage_id}.")
    form = await request.form(max_files=0, max_fields=100_000)
    case = await asyncio.to_thread(runtime.store.load_case, parsed)
    sizes = {s.path: _line_count(s.content) for s in case.scripts}
    locs: list[Loc] = []
    bad: list[str] = []
    for value in form.getlist("line"):
        number, _, path = str(value).partition("@")
        if number.isdigit() and path in sizes and 1 <= int(number) <= sizes[path]:
            locs.append(Loc(path, int(number)))
        else:
            bad.append(str(value)[:100])
    if bad:
        message = f"These marks do not name a line of this case's scripts: {', '.join(bad[:5])}"
        return render(request, "message.html", {"title": "Invalid feedback", "message": message}, 422)
    await asyncio.to_thread(FeedbackStore(runtime.store.engine).set_lines, parsed, locs)
    return RedirectResponse(f"/triage/{parsed}?saved=1#feedback", status_code=303)


def _line_count(content: str) -> int:
    """Lines as the analysis numbers them (any newline convention; no line after a final newline)."""
    text = content.replace("\r\n", "\n").replace("\r", "\n")
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _submit_page(request: Request, form: SubmitForm, status: int = 200) -> Response:
    while len(form.scripts) < SCRIPT_SLOTS:
        form.scripts.append(("", ""))
    settings = request.app.state.runtime.settings
    return render(
        request,
        "submit.html",
        {
            "title": "Submit a failure",
            "form": form,
            "field_label": field_label,
            "levels": LEVELS,
            "rankers": RANKERS,
            "variants": [*VARIANTS, *TRACE_ALIASES],
            "defaults": {
                "level": settings.default_level,
                "k": settings.default_k,
                "trace": settings.default_trace,
            },
            "model_configured": bool(settings.model_url),
        },
        status,
    )


@router.get("/submit", name="dashboard_submit")
async def submit_page(request: Request, example: str = "") -> Response:
    """The submit form, empty or holding the paper's running example."""
    form = SubmitForm()
    if example == "running":
        script = RUNNING_EXAMPLE["scripts"][0]
        form.scripts.append((script["path"], script["content"]))
        form.values = {
            "log": RUNNING_EXAMPLE["log"],
            "log_functions": ", ".join(RUNNING_EXAMPLE["log_functions"]),
            "test_id": str(RUNNING_EXAMPLE["test_id"]),
            "level": str(RUNNING_EXAMPLE["level"]),
            "k": str(RUNNING_EXAMPLE["k"]),
            "trace": str(RUNNING_EXAMPLE["trace"]),
            "ranker": "auto",
        }
    return _submit_page(request, form)


@router.post("/submit", name="dashboard_submit_post")
async def submit_post(request: Request, runtime: RuntimeDep) -> Response:
    """Triage through the same code as POST /v1/triage, then show the result."""
    settings = runtime.settings
    try:
        raw = await request.form(
            max_files=settings.max_files_per_case + 2,
            max_fields=1_000,
            max_part_size=max(settings.max_log_bytes, settings.max_script_bytes) + FORM_OVERHEAD_BYTES,
        )
    except StarletteHTTPException as exc:
        form = SubmitForm()
        form.error("", f"the form could not be read: {exc.detail}")
        return _submit_page(request, form, exc.status_code if exc.status_code >= 400 else 400)
    fields: dict[str, str] = {}
    uploads: dict[str, list[Upload]] = {}
    for name, value in raw.multi_items():
        if isinstance(value, UploadFile):
            data = await value.read()
            uploads.setdefault(name, []).append(Upload(value.filename or "", data))
        elif name not in fields:
            fields[name] = value
    await raw.close()
    form, body = parse_submit(fields, uploads)
    if body is None:
        return _submit_page(request, form, 422)
    try:
        triage_request = TriageRequest.model_validate(body)
    except ValidationError as exc:
        validation_errors(form, exc)
        return _submit_page(request, form, 422)
    try:
        result = await triage_routes.triage_one(triage_request, runtime)
    except HTTPException as exc:
        form.error("", str(exc.detail))
        return _submit_page(request, form, exc.status_code)
    return RedirectResponse(f"/triage/{result['id']}", status_code=303)


@router.post("/key", name=KEY_ROUTE)
async def key_post(
    request: Request,
    runtime: RuntimeDep,
    api_key: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",
) -> Response:
    """Store a valid key in an HttpOnly, SameSite=Strict cookie and go where the engineer was going."""
    keys = runtime.settings.service_keys()
    if not keys:
        return RedirectResponse(safe_next(next), status_code=303)
    if not key_matches(api_key.strip(), keys):
        return key_form(request, next_url=next, error="that key is not valid; check it and try again")
    response = RedirectResponse(safe_next(next), status_code=303)
    set_key_cookie(response, request, api_key.strip())
    return response


@router.post("/key/forget", name="dashboard_key_forget")
async def key_forget() -> Response:
    """Drop the stored key; the next page asks again."""
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response
