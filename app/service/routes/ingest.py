"""``/v1/ingest`` and ``/v1/ingests/{id}``: a CI job's results in, one stored triage per failed test out.

The body is JSON (``results`` as text or base64, ``scripts`` as for ``/v1/triage``) or multipart
(a ``results`` file, an ``archive`` of the checkout, form fields for the rest). Archives are
unpacked into a temporary work folder with the limits of ``app.ingest.archive``; nothing is
written anywhere else. The answer is JSON, or any ``tcfl ci`` format chosen with ``format`` or
``Accept``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from app.analysis.logstatements import compile_patterns
from app.analysis.model import Script
from app.ci import CiReport, history_key, triage_results
from app.emit import FORMATS, emit
from app.history.records import RunRecord
from app.ingest import FORMATS as RESULT_FORMATS
from app.ingest import IngestError, Results, merge, parse_bytes, read_folder
from app.ingest.archive import extract, is_archive, safe_name
from app.ingest.base import TestRun
from app.ingest.job import Job, digest
from app.ingest.resolve import Checkout
from app.launch import run_records
from app.localize.result import TriageResult
from app.options import TriageOptions, resolve_options
from app.service.admission import admit_request
from app.service.dashboard.auth import KeyedRoute
from app.service.dashboard.pages import render
from app.service.deps import Runtime, RuntimeDep
from app.service.pool import PoolUnavailable
from app.service.routes.triage import ERRORS, MAX_ID
from app.service.schemas import OptionsIn
from app.service.views import triage_view
from app.settings import Settings
from app.store.ingests import CiRunStore
from app.store.jobs import Unstorable, job_started, record_ingest
from app.store.record import SNAPSHOT_KEY
from app.store.store import StoreUnavailable, Submission
from app.triage import check_options

log = logging.getLogger(__name__)

router = APIRouter(tags=["ci"])
pages = APIRouter(route_class=KeyedRoute, include_in_schema=False)  # the dashboard's view of a run

MEDIA = {
    "json": "application/json",
    "text": "text/plain; charset=utf-8",
    "markdown": "text/markdown; charset=utf-8",
    "github": "text/plain; charset=utf-8",
    "junit": "application/xml",
    "sarif": "application/sarif+json",
}
_ACCEPT = {
    "text/markdown": "markdown",
    "application/sarif+json": "sarif",
    "application/xml": "junit",
    "text/xml": "junit",
    "text/plain": "text",
}
OPTION_FIELDS = tuple(sorted(OptionsIn.model_fields))  # as POST /v1/triage takes them
JOB_FIELDS = ("job_url", "commit", "pipeline", "job_id", "started_at")  # the CI job (app.ingest.job)
MAX_SCRIPTS = 10_000
MAX_KEY = 255  # characters of an Idempotency-Key header
_JOB_DOC: dict[str, Any] = {  # the CI job the results came from (app.ingest.job); none is required
    "job_url": {"type": "string", "description": "the job's http(s) URL"},
    "commit": {"type": "string"},
    "pipeline": {"type": "string", "description": "with job_id: the job's identity"},
    "job_id": {"type": "string"},
    "started_at": {"type": "string", "format": "date-time"},
}
_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["results"],
                    "properties": {
                        "results": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "content": {"type": "string"},
                                "encoding": {"enum": ["text", "base64"]},
                            },
                            "required": ["content"],
                        },
                        "format": {"enum": list(RESULT_FORMATS)},
                        "scripts": {"type": "array", "items": {"$ref": "#/components/schemas/ScriptIn"}},
                        "root": {
                            "type": "string",
                            "description": "sub-folder of the scripts the tests ran from",
                        },
                        "level": {"type": "string"},
                        "k": {"type": "integer"},
                        "trace": {"type": "string"},
                        "ranker": {"type": "string"},
                        **_JOB_DOC,
                    },
                }
            },
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["results"],
                    "properties": {
                        "results": {
                            "type": "string",
                            "format": "binary",
                            "description": "results file or archive",
                        },
                        "archive": {
                            "type": "string",
                            "format": "binary",
                            "description": "the checkout (tar.gz/zip)",
                        },
                        "root": {"type": "string"},
                        "format": {"type": "string"},
                        **_JOB_DOC,
                    },
                }
            },
        },
    }
}


class _Bad(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@router.post(
    "/v1/ingest",
    responses={**ERRORS, 415: {"description": "Unsupported content type"}},
    openapi_extra=_BODY_DOC,
)
async def ingest(
    request: Request,
    runtime: RuntimeDep,
    format: Annotated[str | None, Query(description=f"answer format: {', '.join(FORMATS)}")] = None,
) -> Response:
    """Triage every failed test of a CI results file; each triage is stored, the run is kept as one.

    Uploads take turns (``app.service.admission``); a results file past ``ingest_async_bytes``, or
    a request with ``Prefer: respond-async``, is answered 202 with its status URL and run then.
    """
    out_format = _answer_format(format, request.headers.get("accept", ""))
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    turns = runtime.upload_turns()
    client = admit_request(turns, request)
    work = Path(tempfile.mkdtemp(prefix="tcfl-ingest-"))
    later = False
    try:
        try:
            if media == "multipart/form-data":
                fields = await _multipart(request, work, runtime.settings)
            elif media in ("application/json", ""):
                fields = await asyncio.to_thread(_json_fields, await request.body(), work, runtime.settings)
            else:
                raise _Bad(415, f"unsupported content type {media!r}: send JSON or multipart")
        except _Bad as exc:
            raise HTTPException(exc.status, str(exc)) from None
        except IngestError as exc:  # an archive that cannot be unpacked safely
            raise HTTPException(422, str(exc)) from None
        fields["idempotency_key"] = _idempotency_key(request)
        limit = runtime.settings.ingest_async_bytes
        asked = "respond-async" in request.headers.get("prefer", "").lower()
        if asked or (limit and len(fields["data"]) > limit):
            token = turns.later(client, lambda: _in_background(runtime, fields, work))
            later = True
            where = f"/v1/ingests/pending/{token}"
            body = {"status": "queued", "token": token, "status_url": where}
            return JSONResponse(body, status_code=202, headers={"Location": where})
        async with turns.turn(client):
            report, run_id = await ingest_fields(runtime, fields, work)
    finally:
        if not later:  # a background upload leaves its turn and its folder when it is done
            turns.leave(client)
            await asyncio.to_thread(shutil.rmtree, work, True)
    content = await asyncio.to_thread(_answer, report, run_id, out_format)
    return Response(content, media_type=MEDIA[out_format], headers={"Location": f"/v1/ingests/{run_id}"})


def _answer(report: CiReport, run_id: int, out_format: str) -> bytes:
    """The answer's body (off the event loop: a report of many tests takes a while to write)."""
    if out_format != "json":
        return emit(report, out_format).encode("utf-8")
    body = report.to_dict()
    body["id"] = run_id
    body["dashboard"] = f"/ingests/{run_id}"
    if report.launch_id is not None:
        body["launch"] = f"/launches/{report.launch_id}"
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


async def _in_background(runtime: Runtime, fields: dict[str, Any], work: Path) -> dict[str, Any]:
    """An upload answered 202: recorded in its turn; what its status URL says once it is done."""
    try:
        report, run_id = await ingest_fields(runtime, fields, work)
    finally:
        await asyncio.to_thread(shutil.rmtree, work, True)
    out: dict[str, Any] = {
        "id": run_id,
        "ingest": f"/v1/ingests/{run_id}",
        "dashboard": f"/ingests/{run_id}",
        "summary": report.to_dict()["summary"],
        "warnings": list(report.warnings)[:50],
    }
    if report.launch_id is not None:
        out["launch"] = f"/launches/{report.launch_id}"
    return out


@router.get("/v1/ingests/pending/{token}", responses=ERRORS)
async def pending_ingest(
    token: Annotated[str, PathParam(max_length=64)], runtime: RuntimeDep
) -> dict[str, Any]:
    """An upload answered 202: ``status`` queued, running, done (with its ``id`` and ``ingest``
    URL) or failed (with the ``error_status`` and ``detail`` it would have been answered with)."""
    found = runtime.upload_turns().pending.get(token)
    if found is None:
        raise HTTPException(404, "no upload with this token in this server process (tokens end with it)")
    return found.view(token)


async def upload_fields(request: Request, work: Path, settings: Settings) -> dict[str, Any]:
    """A multipart upload's fields (the results file, the checkout archive unpacked under ``work``,
    the options and job fields), as ``POST /v1/ingest`` reads them; ``HTTPException`` when bad."""
    try:
        return await _multipart(request, work, settings)
    except _Bad as exc:
        raise HTTPException(exc.status, str(exc)) from None
    except IngestError as exc:
        raise HTTPException(422, str(exc)) from None


async def ingest_fields(runtime: Runtime, fields: dict[str, Any], work: Path) -> tuple[CiReport, int]:
    """One CI job's upload, read (``fields``; its scripts under ``work``/checkout): every failed test
    triaged, the job recorded. The report and the ingest's id; ``HTTPException`` for bad input."""
    try:
        options = _options(fields, runtime.settings)
        job = _job(fields)
        results = await asyncio.to_thread(_results, fields, work)
        root = _root(work / "checkout", fields.get("root"))
        checkout = await asyncio.to_thread(Checkout.scan, root)
    except _Bad as exc:
        raise HTTPException(exc.status, str(exc)) from None
    except IngestError as exc:
        raise HTTPException(422, str(exc)) from None
    started = await asyncio.to_thread(job_started, runtime.store, job, results.started_at)
    # each failure is ranked with the runs recorded before this job, never with later ones
    options = replace(options, history_before=options.history_before or started.isoformat())
    triager = _Triager(runtime, options)
    try:
        report = await triage_results(
            results,
            checkout,
            triager,
            max_files=runtime.settings.max_files_per_case,
            max_log_bytes=runtime.settings.max_log_bytes,
        )
    except PoolUnavailable as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from None
    source = str(fields.get("name") or "")
    # passes take their scripts from the checkout, which lives only as long as the work folder
    records = await asyncio.to_thread(_records, report, job, started, checkout)
    report = _count_unresolved(report, records)
    try:  # every run's history facts, passes' too: in the analysis pool, many runs a job
        records = await runtime.runner.with_facts(records)
    except PoolUnavailable as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from None
    report = _with_warnings(report, facts_warnings(records))
    key = fields.get("idempotency_key")
    return await asyncio.to_thread(_store, runtime, report, source, job, started, records, triager.made, key)


@router.get("/v1/ingests/{run_id}", responses=ERRORS)
async def get_ingest(
    run_id: Annotated[int, PathParam(ge=1, le=MAX_ID)], runtime: RuntimeDep
) -> dict[str, Any]:
    """A stored ingest (one CI job's results): summary, groups, each failed test with its triage.

    Until this version it was ``GET /v1/runs/{id}``, which now reads one recorded run of the CI
    history (``POST /v1/runs``); README's CI history section says so.
    """
    found = await asyncio.to_thread(CiRunStore(runtime.store.engine).get, run_id)
    if found is None:
        raise HTTPException(404, f"no CI ingest with id {run_id}")
    for test in found["tests"]:
        if test.get("triage_id"):
            stored = await asyncio.to_thread(runtime.store.get_triage, test["triage_id"])
            # the stored triage view: the result plus id, status, test_id
            test["result"] = None if stored is None else triage_view(stored)
    return found


@pages.get("/ingests/{run_id}")
async def ingest_page(run_id: int, request: Request, runtime: RuntimeDep) -> Response:
    """One ingested CI job on the dashboard: its failure groups, each failed test linked to its triage."""
    found = None
    if 1 <= run_id <= MAX_ID:
        found = await asyncio.to_thread(CiRunStore(runtime.store.engine).get, run_id)
    if found is None:
        message = f"no CI ingest {run_id}"
        return render(request, "message.html", {"title": "Not found", "message": message}, 404)
    return render(request, "ci_run.html", {"run": found})


@pages.get("/runs/{run_id}")
async def old_ingest_page(run_id: int) -> Response:
    """The ingest page's address before ingests were named apart from history runs: kept, moved."""
    return RedirectResponse(f"/ingests/{run_id}", status_code=308)


def _idempotency_key(request: Request) -> str | None:
    """The ``Idempotency-Key`` header: a retry with it answers the upload stored first."""
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY or not key.isprintable():
        raise HTTPException(422, f"Idempotency-Key must be 1-{MAX_KEY} printable characters")
    return key


def _answer_format(query: str | None, accept: str) -> str:
    if query is not None:
        if query not in FORMATS:
            raise HTTPException(422, f"format must be one of {', '.join(FORMATS)}, got {query!r}")
        return query
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        if media in _ACCEPT:
            return _ACCEPT[media]
        if media in ("application/json", "*/*", ""):
            return "json"
    return "json"


def _json_fields(body: bytes, work: Path, settings: Settings) -> dict[str, Any]:
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Bad(422, f"body is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise _Bad(422, "body must be a JSON object")
    unknown = set(raw) - {"results", "format", "scripts", "root", *OPTION_FIELDS, *JOB_FIELDS}
    if unknown:
        raise _Bad(422, f"unknown field(s): {', '.join(sorted(unknown))}")
    results = raw.get("results")
    if not isinstance(results, dict) or not isinstance(results.get("content"), str):
        raise _Bad(
            422, "results: an object with 'content' (text, or base64 with encoding 'base64') is required"
        )
    name = file_name(results.get("name"))
    if results.get("encoding") == "base64":
        try:
            data = base64.b64decode(results["content"], validate=True)
        except (binascii.Error, ValueError):
            raise _Bad(422, "results.content is not valid base64") from None
    else:
        data = results["content"].encode("utf-8")
    scripts = raw.get("scripts") or []
    if not isinstance(scripts, list) or not all(
        isinstance(s, dict) and isinstance(s.get("path"), str) and isinstance(s.get("content"), str)
        for s in scripts
    ):
        raise _Bad(422, "scripts: a list of {path, content} objects")
    if len(scripts) > MAX_SCRIPTS:
        raise _Bad(413, f"{len(scripts)} scripts exceed the limit of {MAX_SCRIPTS}")
    checkout = work / "checkout"
    for i, script in enumerate(scripts):
        size = len(script["content"].encode("utf-8"))
        if size > settings.max_script_bytes:
            raise _Bad(
                413,
                f"scripts[{i}] ({script['path']}) is {size} bytes; "
                f"max_script_bytes={settings.max_script_bytes}",
            )
        _write_script(checkout, script["path"], script["content"])
    checkout.mkdir(exist_ok=True)
    fields = {k: raw[k] for k in (*OPTION_FIELDS, *JOB_FIELDS, "format", "root") if raw.get(k) is not None}
    fields.update(name=name, data=data)
    return fields


def file_name(raw: object) -> str:
    """An uploaded file's name as stored and shown: no control characters (PostgreSQL refuses
    NUL), at most 255 characters, "results" when none is left."""
    text = "".join(ch for ch in str(raw or "") if ch >= " " and ch != "\x7f")
    return text.strip()[:255] or "results"


def _write_script(checkout: Path, path: str, content: str) -> None:
    try:
        rel = safe_name(path, "scripts")
    except IngestError as exc:
        raise _Bad(422, str(exc)) from None
    if not rel:
        raise _Bad(422, f"scripts: empty path {path!r}")
    target = checkout / rel
    try:  # "a" and "a/b.py" in one upload: a file where a folder must be, or the reverse
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise _Bad(422, f"scripts: {path!r} cannot be written ({exc.strerror})") from None


async def _multipart(request: Request, work: Path, settings: Settings) -> dict[str, Any]:
    form = await request.form(max_files=2, max_fields=20)
    upload = form.get("results")
    if not isinstance(upload, UploadFile):
        raise _Bad(422, "multipart upload needs the results in a file field named 'results'")
    fields: dict[str, Any] = {"name": file_name(upload.filename), "data": await upload.read()}
    archive = form.get("archive")
    checkout = work / "checkout"
    checkout.mkdir()
    if isinstance(archive, UploadFile):
        data = await archive.read()
        limit = _checkout_limit(settings)
        await asyncio.to_thread(extract, data, checkout, name=archive.filename or "archive", max_bytes=limit)
    for key in (*OPTION_FIELDS, *JOB_FIELDS, "format", "root"):
        value = form.get(key)
        if isinstance(value, str) and value:
            fields[key] = (
                [v for v in form.getlist(key) if isinstance(v, str)] if key == "log_functions" else value
            )
    if "k" in fields:
        try:
            fields["k"] = int(fields["k"])
        except ValueError:
            raise _Bad(422, f"k must be an integer, got {fields['k']!r}") from None
    return fields


def _checkout_limit(settings: Settings) -> int:
    """An uploaded checkout may hold many tests' files: 50 cases' worth of the per-case limits,
    never more than the app's own ``max_unpacked_bytes``."""
    return min(50 * settings.max_files_per_case * settings.max_script_bytes, settings.max_unpacked_bytes)


def _options(fields: dict[str, Any], settings: Settings) -> TriageOptions:
    """The option fields checked as ``POST /v1/triage`` checks them (the same request model)."""
    given = {k: fields[k] for k in OPTION_FIELDS if k in fields}
    try:
        asked = OptionsIn.model_validate(given)
    except ValidationError as exc:
        raise _Bad(422, "; ".join(_error_text(e) for e in exc.errors()[:5])) from None
    try:
        options = check_options(resolve_options(settings, **asked.model_dump()))
        compile_patterns(options.log_functions)
    except (ValueError, TypeError) as exc:
        raise _Bad(422, str(exc)) from None
    if options.ranker == "llm" and not settings.model_url:
        raise _Bad(422, "ranker 'llm' needs a model server, and TCFL_MODEL_URL is not set")
    return options


def _error_text(error: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in error.get("loc", ()))
    return f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg", "invalid"))


def _results(fields: dict[str, Any], work: Path) -> Results:
    name, data, fmt = fields["name"], fields["data"], str(fields.get("format") or "auto")
    if fmt not in RESULT_FORMATS:
        raise _Bad(422, f"format must be one of {', '.join(RESULT_FORMATS)}, got {fmt!r}")
    if is_archive(name) or data[:2] == b"\x1f\x8b" or data[:4] == b"PK\x03\x04":
        folder = work / "results"
        extract(data, folder, name=name)
        return merge(read_folder(folder, fmt, name))
    return parse_bytes(data, name, fmt)


def _root(checkout: Path, root: Any) -> Path:
    if not root:
        return checkout
    try:
        rel = safe_name(str(root), "root")
    except IngestError as exc:
        raise _Bad(422, str(exc)) from None
    folder = checkout / rel
    if not folder.is_dir():
        raise _Bad(422, f"root {root!r} is not a folder of the uploaded scripts")
    return folder


def _job(fields: Mapping[str, Any]) -> Job:
    """The CI job the upload names (``job_url``, ``commit``, ``pipeline``, ``job_id``, ``started_at``),
    known by the digest of its results file when it names no job URL nor job id."""
    given = {k: fields[k] for k in JOB_FIELDS if fields.get(k) not in (None, "")}
    bad = [k for k, v in given.items() if not isinstance(v, str)]
    if bad:
        raise _Bad(422, f"{', '.join(bad)} must be a string")
    try:
        job = Job().given(**given)
    except ValueError as exc:
        raise _Bad(422, str(exc)) from None
    return job.given(digest=digest(fields["data"]), source=str(fields.get("name") or ""))


def _records(report: CiReport, job: Job, started: datetime, checkout: Checkout) -> list[RunRecord]:
    """The history records, passes with their scripts; a resolution error never fails the ingest."""
    try:
        return run_records(report, job, started, checkout=checkout)
    except Exception:
        log.exception("passing runs' scripts not resolved; recorded without them")
        return run_records(report, job, started)


def _count_unresolved(report: CiReport, records: list[RunRecord]) -> CiReport:
    """A pass whose script is not found is stored without a trace, never counted in spectra: say so."""
    missing = sum(1 for r in records if r.verdict == "pass" and not r.scripts)
    if not missing:
        return report
    warning = (
        f"{missing} passing test(s) had no script found in the checkout; "
        "recorded in the CI history without a trace"
    )
    return replace(report, warnings=(*report.warnings, warning))


def facts_warnings(records: Sequence[RunRecord], shown: int = 20) -> list[str]:
    """The runs recorded without their facts (a cost limit), each once, the first ``shown`` of them."""
    warnings = list(dict.fromkeys(r.facts.warning for r in records if r.facts and r.facts.warning))
    if len(warnings) > shown:
        warnings = [
            *warnings[:shown],
            f"... and {len(warnings) - shown} more run(s) recorded without a trace",
        ]
    return warnings


def _with_warnings(report: CiReport, warnings: Sequence[str]) -> CiReport:
    return replace(report, warnings=(*report.warnings, *warnings)) if warnings else report


class _Triager:
    """Each failed test through the service's one triage driver (the analysis pool, its cost limits,
    the test's recorded history). Nothing is stored yet: ``_store`` writes every triage with the
    rest of the upload, in one transaction."""

    def __init__(self, runtime: Runtime, options: TriageOptions) -> None:
        self.runtime = runtime
        self.opts = options.to_dict()  # stored whole, like every other triage's options
        self.made: dict[TestRun, tuple[Submission, dict[str, Any]]] = {}

    async def __call__(self, run: TestRun, scripts: Sequence[Script]) -> TriageResult:
        case = Submission(
            scripts=tuple(scripts),
            log=run.log,
            options=self.opts,
            test_id=run.test_id[:200],
            test=history_key(run),
        )
        data = await self.runtime.runner(case)
        self.made[run] = (case, data)
        return TriageResult.from_dict({k: v for k, v in data.items() if k != SNAPSHOT_KEY})


def _store(
    runtime: Runtime,
    report: CiReport,
    source: str,
    job: Job,
    started: datetime,
    records: list[RunRecord],
    made: Mapping[TestRun, tuple[Submission, dict[str, Any]]],
    key: str | None = None,
) -> tuple[CiReport, int]:
    """The upload in one transaction (``app.store.jobs.record_ingest``): the failed tests' triages,
    the ingest that lists them, every test's run in the CI history, its launch and the known
    issues among its failures. A job stored before answers as it did then and stores nothing."""
    triages = {i: made[t.run] for i, t in enumerate(report.triaged) if t.result is not None and t.run in made}
    try:
        return record_ingest(
            runtime.store, report, triages, source=source, job=job, started=started, records=records, key=key
        )
    except Unstorable as exc:
        raise HTTPException(422, str(exc)) from None
    except StoreUnavailable as exc:
        raise HTTPException(507 if exc.disk_full else 503, str(exc), headers={"Retry-After": "30"}) from None
