"""Turning submitted bodies (JSON, JSONL, benchmark case files) into validated, self-contained cases.

Pure functions: the routes and ``tcfl batch`` read the bytes, this module decides what they mean.
Defaults are resolved here, at submission, so a stored case runs the same way whenever a worker
picks it up.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from app.analysis.limits import InputTooCostly, check_text
from app.analysis.logstatements import compile_patterns
from app.analysis.model import Script
from app.options import TriageOptions, resolve_options
from app.service.schemas import OPTION_FIELDS, BatchRequest, HistoryWindow, TriageRequest
from app.settings import Settings
from app.store.store import Submission
from app.triage import check_options

_REQUEST = TypeAdapter(TriageRequest)
TEST_KEY = "test"  # the failing test's CI-history key among a stored request's options


class LimitExceeded(Exception):
    """Input over a configured size limit (HTTP 413); the message names the setting."""


class InvalidInput(Exception):
    """Input that can never be triaged as sent (HTTP 422)."""


def check_limits(request: TriageRequest, settings: Settings, *, where: str = "") -> None:
    if len(request.scripts) > settings.max_files_per_case:
        raise LimitExceeded(
            f"{where}{len(request.scripts)} scripts exceed max_files_per_case={settings.max_files_per_case}"
        )
    for i, script in enumerate(request.scripts):
        size = len(script.content.encode("utf-8"))
        if size > settings.max_script_bytes:
            raise LimitExceeded(
                f"{where}scripts[{i}] ({script.path}) is {size} bytes; "
                f"max_script_bytes={settings.max_script_bytes}"
            )
    size = len(request.log.encode("utf-8"))
    if size > settings.max_log_bytes:
        raise LimitExceeded(f"{where}log is {size} bytes; max_log_bytes={settings.max_log_bytes}")
    scripts = [Script(path=s.path, content=s.content) for s in request.scripts]
    try:
        check_text(scripts, request.log, settings.cost_limits())
    except InputTooCostly as exc:
        raise LimitExceeded(f"{where}{exc}") from None


def check_batch_size(count: int, settings: Settings) -> None:
    if count > settings.max_cases_per_batch:
        raise LimitExceeded(f"{count} cases exceed max_cases_per_batch={settings.max_cases_per_batch}")


def to_case(request: TriageRequest, settings: Settings, *, where: str = "") -> Submission:
    """Check limits, resolve defaults from settings, and check the options the pipeline will get."""
    check_limits(request, settings, where=where)
    history = request.history
    window = history if isinstance(history, HistoryWindow) else None
    try:
        resolved = check_options(
            resolve_options(
                settings,
                **request.model_dump(include=OPTION_FIELDS),
                history=history if isinstance(history, str) else None,
                history_window=window.window if window is not None else None,
                history_k=window.k if window is not None else None,
            )
        )
        compile_patterns(resolved.log_functions)  # a bad pattern is a 422 before anything is stored
    except ValueError as exc:
        raise InvalidInput(f"{where}{exc}") from None
    options = resolved.to_dict()
    if request.test is not None:
        # the test key travels with the stored options: a queued batch item reads its history too
        options[TEST_KEY] = request.test
    if options["ranker"] == "llm" and not settings.model_url:
        raise InvalidInput(f"{where}ranker 'llm' needs a model server, and TCFL_MODEL_URL is not set")
    scripts = tuple(Script(path=s.path, content=s.content) for s in request.scripts)
    return Submission(
        scripts=scripts, log=request.log, options=options, test_id=request.test_id, test=request.test
    )


def triage_options(options: dict[str, Any]) -> TriageOptions:
    """Stored options as the record; options stored before some field existed take its default."""
    return TriageOptions.from_dict(options)


def parse_batch_json(body: bytes, settings: Settings) -> list[TriageRequest]:
    """``{"cases": [...]}``; the case count is checked before the cases are validated."""
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput("body is JSON nested too deeply to read") from None
    if isinstance(raw, dict) and isinstance(raw.get("cases"), list):
        check_batch_size(len(raw["cases"]), settings)
    try:
        return BatchRequest.model_validate(raw).cases
    except ValidationError as exc:
        raise InvalidInput(_first_errors(exc)) from None


def parse_jsonl(body: bytes, settings: Settings) -> list[TriageRequest]:
    """One triage request body per line; blank lines are skipped; errors name the line."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"JSONL upload is not UTF-8 (byte {exc.start})") from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise InvalidInput("JSONL upload holds no cases")
    check_batch_size(len(lines), settings)
    requests = []
    for n, line in lines:
        try:
            requests.append(_REQUEST.validate_json(line))
        except ValidationError as exc:
            raise InvalidInput(f"line {n}: {_first_errors(exc)}") from None
    return requests


def request_from_benchmark(case: dict[str, Any]) -> TriageRequest:
    """A benchmark case file (docs/design.md §3) as a triage request; its ``id`` becomes the test_id."""
    if not isinstance(case, dict):
        raise InvalidInput("a benchmark case must be a JSON object")
    missing = [key for key in ("test_files", "failure_log") if key not in case]
    if missing:
        raise InvalidInput(f"benchmark case lacks {', '.join(missing)}")
    body = {
        "scripts": case["test_files"],
        "log": case["failure_log"],
        "log_functions": case.get("log_functions") or [],
        "test_id": None if case.get("id") is None else str(case["id"])[:200],
    }
    try:
        return TriageRequest.model_validate(body)
    except ValidationError as exc:
        raise InvalidInput(_first_errors(exc)) from None


def input_hash(cases: Sequence[Submission]) -> str:
    """Identifies a batch input by content, so ``--resume`` finds the run it continues."""
    digest = hashlib.sha256()
    for case in cases:
        record = {
            "scripts": [[s.path, s.content] for s in case.scripts],
            "log": case.log,
            "options": case.options,
            "test_id": case.test_id,
        }
        digest.update(json.dumps(record, sort_keys=True).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def _first_errors(exc: ValidationError, limit: int = 5) -> str:
    parts = []
    for e in exc.errors(include_url=False, include_input=False, include_context=False)[:limit]:
        loc = ".".join(str(p) for p in e.get("loc", ()))
        parts.append(f"{loc}: {e.get('msg', '')}" if loc else str(e.get("msg", "")))
    more = exc.error_count() - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
