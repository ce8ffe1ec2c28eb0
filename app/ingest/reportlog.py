"""pytest ``--report-log`` JSON lines (pytest-reportlog): one TestReport per phase of each test.

A test's verdict joins its setup, call and teardown reports the way pytest's terminal does: a
failed call is a failure, a failed setup or teardown an error. The failure text is rebuilt from
the serialized ``longrepr`` in pytest's long format (``file:line: Exception``), which the log
parser already reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from app.ingest.base import MAX_TESTS, IngestError, TestRun, split_params

FORMAT = "reportlog"


def sniff(head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and b'"$report_type"' in head


@dataclass
class _Test:
    nodeid: str
    path: str | None = None
    verdict: str = "pass"
    error: str = ""
    duration: float = 0.0
    reports: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)


def parse(data: bytes, name: str = "report.jsonl") -> list[TestRun]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{name}: not UTF-8 (byte {exc.start})") from None
    tests: dict[str, _Test] = {}
    seen_report = False
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            if n == len(lines):  # a job killed mid-write leaves half a last line
                break
            raise IngestError(f"{name}: line {n} is not JSON ({exc})") from None
        if not isinstance(record, dict) or "$report_type" not in record:
            raise IngestError(f"{name}: line {n} is not a pytest report-log record")
        seen_report = True
        if record["$report_type"] != "TestReport":
            continue
        nodeid = str(record.get("nodeid", ""))
        test = tests.get(nodeid)
        if test is None:
            if len(tests) >= MAX_TESTS:
                raise IngestError(f"{name}: more than {MAX_TESTS} tests")
            test = tests[nodeid] = _Test(nodeid)
        _add(test, record)
    if not seen_report:
        raise IngestError(f"{name}: no pytest report-log records")
    return [_run(t) for t in tests.values()]


def _add(test: _Test, record: dict[str, Any]) -> None:
    when = record.get("when")
    outcome = record.get("outcome")
    location = record.get("location")
    if isinstance(location, list) and location and isinstance(location[0], str):
        test.path = location[0]
    if isinstance(record.get("duration"), int | float):
        test.duration += float(record["duration"])
    for section in record.get("sections") or []:
        if isinstance(section, list) and len(section) == 2 and str(section[1]).strip():
            test.sections.append(f"{'-' * 20} {section[0]} {'-' * 20}\n{str(section[1]).rstrip()}")
    if outcome == "failed":
        verdict = "fail" if when == "call" else "error"
        if test.verdict != "error":
            test.verdict = verdict
        longrepr = record.get("longrepr")
        test.reports.append(longrepr_text(longrepr))
        test.error = test.error or _crash_message(longrepr)
    elif outcome == "skipped" and test.verdict == "pass":
        test.verdict = "skip"


def longrepr_text(longrepr: Any) -> str:
    """pytest's long report text from its JSON form (``TestReport._to_json``)."""
    if longrepr is None:
        return ""
    if isinstance(longrepr, str):
        return longrepr
    if isinstance(longrepr, list):  # skips: [path, line, reason]
        return " ".join(str(x) for x in longrepr)
    if not isinstance(longrepr, dict):
        return str(longrepr)
    chain = longrepr.get("chain") or [[longrepr.get("reprtraceback"), longrepr.get("reprcrash"), None]]
    out: list[str] = []
    for element in chain:
        if not isinstance(element, list) or len(element) != 3:
            continue
        traceback, _crash, description = element
        for entry in (traceback or {}).get("reprentries") or []:
            data = entry.get("data") or {}
            lines = data.get("lines") or []
            if isinstance(lines, list):
                out.extend(str(x) for x in lines)
            loc = data.get("reprfileloc")
            if isinstance(loc, dict):
                out.append(f"{loc.get('path')}:{loc.get('lineno')}: {loc.get('message', '')}".rstrip())
            out.append("")
        if description:
            out.append(str(description))
            out.append("")
    return "\n".join(out).rstrip()


def _crash_message(longrepr: Any) -> str:
    if isinstance(longrepr, dict):
        crash = longrepr.get("reprcrash")
        if isinstance(crash, dict) and crash.get("message"):
            return str(crash["message"]).splitlines()[0]
    if isinstance(longrepr, str):
        for line in reversed(longrepr.splitlines()):
            if line.startswith("E "):
                return line[1:].strip()
    return ""


def _run(test: _Test) -> TestRun:
    paths = [test.path] if test.path else []
    if "::" in test.nodeid:
        paths.append(test.nodeid.split("::", 1)[0])
    _, params = split_params(test.nodeid)
    log = "\n".join([*test.sections, *test.reports]) if test.verdict != "pass" else ""
    return TestRun(
        test_id=test.nodeid,
        verdict=test.verdict,
        log=log,
        error=test.error,
        duration_s=round(test.duration, 6),
        script_paths=tuple(dict.fromkeys(paths)),
        suite="pytest",
        params=params,
    )
