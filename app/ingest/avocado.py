"""avocado job results: ``results.json`` plus each test's ``debug.log`` in ``test-results/``.

Paths in results.json are the ones of the machine that ran the job; the folder may have been
copied (a CI artifact), so each test's log is looked up by its folder name under this job's
``test-results`` and never outside the job folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePath
from typing import Any

from app.ingest.base import MAX_RESULTS_BYTES, MAX_TESTS, IngestError, TestRun, split_params

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


def read(path: Path) -> tuple[list[TestRun], list[str]]:
    """A job-results folder (or its results.json): every test with its debug.log."""
    job = path if path.is_dir() else path.parent
    results_file = job / "results.json"
    try:
        raw = results_file.read_bytes()
    except OSError as exc:
        raise IngestError(f"{results_file}: cannot read ({exc.strerror})") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise IngestError(f"{results_file}: not valid JSON ({exc}); is the file truncated?") from None
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, list):
        raise IngestError(f"{results_file}: no 'tests' list; not avocado job results")
    if len(tests) > MAX_TESTS:
        raise IngestError(f"{results_file}: more than {MAX_TESTS} tests")
    warnings: list[str] = []
    runs = []
    for i, test in enumerate(tests):
        if not isinstance(test, dict) or not isinstance(test.get("id") or test.get("name"), str):
            warnings.append(f"{results_file}: tests[{i}] has no id; skipped")
            continue
        runs.append(_run(test, job, warnings))
    return runs, warnings


def _run(test: dict[str, Any], job: Path, warnings: list[str]) -> TestRun:
    name = str(test.get("name") or _SERIAL.sub("", str(test["id"])))
    status = str(test.get("status") or "ERROR").upper()
    verdict = _STATUS.get(status, "error")
    reason = test.get("fail_reason")
    error = "" if verdict in ("pass", "skip") or reason in (None, "<unknown>", "None") else str(reason)
    log = ""
    if verdict != "pass":
        log = _debug_log(test, job, warnings)
    found = _PY_PATH.match(name)
    elapsed = test.get("time_elapsed")
    _, params = split_params(name)
    return TestRun(
        test_id=name,
        verdict=verdict,
        log=log,
        error=error,
        duration_s=float(elapsed) if isinstance(elapsed, int | float) else None,
        script_paths=(found.group("path"),) if found else (),
        suite="avocado",
        params=params,
    )


def _debug_log(test: dict[str, Any], job: Path, warnings: list[str]) -> str:
    logdir = test.get("logdir")
    candidates = []
    if isinstance(logdir, str) and logdir:
        candidates.append(job / "test-results" / PurePath(logdir.replace("\\", "/")).name / "debug.log")
    candidates.append(job / "test-results" / _folder_name(str(test["id"])) / "debug.log")
    root = job.resolve()
    for candidate in candidates:
        try:
            resolved = candidate.resolve()
        except OSError:
            continue
        if not resolved.is_relative_to(root) or not resolved.is_file():
            continue
        if resolved.stat().st_size > MAX_RESULTS_BYTES:
            warnings.append(f"{candidate}: larger than {MAX_RESULTS_BYTES} bytes; not read")
            return ""
        return resolved.read_bytes().decode("utf-8", "replace")
    warnings.append(f"{test['id']}: no debug.log under {job / 'test-results'}")
    reason = test.get("fail_reason")
    return "" if reason in (None, "<unknown>") else str(reason)


def _folder_name(test_id: str) -> str:
    """avocado's test folder name: the id with path separators and colons replaced."""
    return test_id.replace("/", "_").replace(":", "_")
