"""avocado job results: ``results.json`` plus each test's ``debug.log`` in ``test-results/``.

Paths in results.json are the ones of the machine that ran the job; the folder may have been
copied (a CI artifact), so each test's log is looked up by its folder name under this job's
``test-results`` and never outside the job folder, and only when it is a regular file. A test
entry that cannot be read is a warning naming it; the other tests are still read.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

from app.ingest.base import MAX_RESULTS_BYTES, MAX_TESTS, IngestError, TestRun, split_params
from app.ingest.clean import bad_time, duration, json_int, unreadable
from app.ingest.filetime import iso_time

FORMAT = "avocado"
_STATUS = {
    "PASS": "pass",
    "WARN": "pass",
    "FAIL": "fail",
    "ERROR": "error",
    "INTERRUPTED": "error",
    "SKIP": "skip",
    "CANCEL": "skip",
}
_SERIAL = re.compile(r"^\d+-")
_PY_PATH = re.compile(r"^(?P<path>[^:;]+\.py):")


def sniff_dir(path: Path) -> bool:
    return (path / "results.json").is_file()


def read(path: Path) -> tuple[list[TestRun], list[str], datetime | None]:
    """A job-results folder (or its results.json): every test with its debug.log, and when the job
    started (its ``start``)."""
    job = path if path.is_dir() else path.parent
    results_file = job / "results.json"
    if results_file.exists() and not results_file.is_file():
        raise IngestError(f"{results_file}: not a regular file")  # a FIFO would block the read
    try:
        raw = results_file.read_bytes()
    except OSError as exc:
        raise IngestError(f"{results_file}: cannot read ({exc.strerror})") from None
    if len(raw) > MAX_RESULTS_BYTES:
        raise IngestError(f"{results_file}: larger than {MAX_RESULTS_BYTES} bytes")
    try:
        data = json.loads(raw, parse_int=json_int)
    except ValueError as exc:
        reason = str(exc)[:200]
        raise IngestError(f"{results_file}: not valid JSON ({reason}); is the file truncated?") from None
    except RecursionError:
        raise IngestError(f"{results_file}: not avocado results (JSON nested too deeply)") from None
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, list):
        raise IngestError(f"{results_file}: no 'tests' list; not avocado job results")
    if len(tests) > MAX_TESTS:
        raise IngestError(f"{results_file}: more than {MAX_TESTS} tests")
    warnings: list[str] = []
    runs = []
    for i, test in enumerate(tests):
        ident = _text(test, "id") or _text(test, "name")
        if not ident:
            warnings.append(f"{results_file}: tests[{i}] has no id; skipped")
            continue
        try:
            runs.append(_run(test, ident, job, warnings))
        except Exception as exc:  # one odd entry must not lose the others: say which and go on
            warnings.append(unreadable(f"{results_file}: tests[{i}]", ident, exc))
    start = data.get("start")
    return runs, warnings, iso_time(start) if isinstance(start, str) else None


def _text(test: Any, key: str) -> str:
    value = test.get(key) if isinstance(test, dict) else None
    return value if isinstance(value, str) else ""


def _run(test: dict[str, Any], ident: str, job: Path, warnings: list[str]) -> TestRun:
    name = _text(test, "name") or _SERIAL.sub("", ident)
    status = str(test.get("status") or "ERROR").upper()
    verdict = _STATUS.get(status, "error")
    reason = test.get("fail_reason")
    error = "" if verdict in ("pass", "skip") or reason in (None, "<unknown>", "None") else str(reason)
    log = ""
    if verdict != "pass":
        log = _debug_log(test, ident, job, warnings)
    found = _PY_PATH.match(name)
    seconds, problem = duration(test.get("time_elapsed"))
    _, params = split_params(name)
    return TestRun(
        test_id=name,
        verdict=verdict,
        log=log,
        error=error,
        duration_s=seconds,
        script_paths=(found.group("path"),) if found else (),
        suite="avocado",
        params=params,
        warnings=(bad_time(name, "time_elapsed", problem),) if problem else (),
    )


def _debug_log(test: dict[str, Any], ident: str, job: Path, warnings: list[str]) -> str:
    logdir = test.get("logdir")
    candidates = []
    if isinstance(logdir, str) and logdir and "\x00" not in logdir:
        candidates.append(job / "test-results" / PurePath(logdir.replace("\\", "/")).name / "debug.log")
    if "\x00" not in ident:
        candidates.append(job / "test-results" / _folder_name(ident) / "debug.log")
    root = job.resolve()
    for candidate in candidates:
        try:
            resolved = candidate.resolve()
            if not resolved.is_relative_to(root) or not resolved.is_file():  # is_file: never a FIFO
                continue
            if resolved.stat().st_size > MAX_RESULTS_BYTES:
                warnings.append(f"{candidate}: larger than {MAX_RESULTS_BYTES} bytes; not read")
                return ""
            return resolved.read_bytes().decode("utf-8", "replace")
        except (OSError, RuntimeError, ValueError):  # a name too long, a link loop
            continue
    warnings.append(f"{ident[:200]}: no debug.log under {job / 'test-results'}")
    reason = test.get("fail_reason")
    return "" if reason in (None, "<unknown>") else str(reason)


def _folder_name(test_id: str) -> str:
    """avocado's test folder name: the id with path separators and colons replaced."""
    return test_id.replace("/", "_").replace(":", "_")
