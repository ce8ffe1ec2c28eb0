"""pytest ``--report-log`` JSON lines (pytest-reportlog): one TestReport per phase of each test.

A test's verdict joins its setup, call and teardown reports the way pytest's terminal does: a
failed call is a failure, a failed setup or teardown an error. The failure text is rebuilt from
the serialized ``longrepr`` in pytest's long format (``file:line: Exception``), which the log
parser already reads. A line that is not a record, or a record with odd types, is a warning
naming its line; the other lines are still read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from app.ingest.base import MAX_TESTS, IngestError, TestRun, first_line, split_params
from app.ingest.clean import duration, json_int, shown, unreadable

FORMAT = "reportlog"


SNIFF_LINES = 20  # a damaged first line is a warning when a later one is a report record


def sniff(head: bytes) -> bool:
    # a line that is a JSON object ('{"') with a report type, not a stestr console's
    # "{0} test ... ok" that prints a report log
    lines = head.splitlines()[:SNIFF_LINES]
    return any(line.lstrip().startswith(b'{"') and b'"$report_type"' in line for line in lines)


@dataclass
class _Test:
    nodeid: str
    path: str | None = None
    verdict: str = "pass"
    error: str = ""
    duration: float = 0.0
    reports: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse(data: bytes, name: str = "report.jsonl", warnings: list[str] | None = None) -> list[TestRun]:
    """Every test of the log; a line that is not a readable record is a warning naming it."""
    warnings = warnings if warnings is not None else []
    text = data.decode("utf-8", "replace")
    bad = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")
    if bad > 0:
        warnings.append(f"{name}: not valid UTF-8: {bad} undecodable byte sequence(s) replaced")
    tests: dict[str, _Test] = {}
    seen_report = False
    problems: list[str] = []
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, parse_int=json_int)
        except (ValueError, RecursionError) as exc:  # RecursionError: arrays nested thousands deep
            reason = str(exc)[:120] if isinstance(exc, ValueError) else "nested too deeply"
            if n == len(lines):  # a job killed mid-write leaves half a last line
                problems.append(f"{name}: line {n}, the last, is cut off or not JSON ({reason}); ignored")
            else:
                problems.append(f"{name}: line {n} is not JSON ({reason}); skipped")
            continue
        if not isinstance(record, dict) or "$report_type" not in record:
            problems.append(f"{name}: line {n} is not a pytest report-log record; skipped")
            continue
        seen_report = True
        if record["$report_type"] != "TestReport":
            continue
        nodeid = record.get("nodeid")
        if not isinstance(nodeid, str):
            problems.append(f"{name}: line {n}: nodeid {shown(nodeid)} is not a string; skipped")
            continue
        test = tests.get(nodeid)
        if test is None:
            if len(tests) >= MAX_TESTS:
                raise IngestError(f"{name}: more than {MAX_TESTS} tests")
            test = tests[nodeid] = _Test(nodeid)
        try:
            _add(test, record, f"line {n}")
        except Exception as exc:  # one odd record must not lose the others: say which and go on
            problems.append(unreadable(f"{name}: line {n}", nodeid, exc))
    if not seen_report:
        detail = f" ({problems[0].removeprefix(f'{name}: ')})" if problems else ""
        raise IngestError(f"{name}: no pytest report-log records{detail}")
    warnings.extend(problems)
    return [_run(t) for t in tests.values()]


def _add(test: _Test, record: dict[str, Any], where: str) -> None:
    when = record.get("when")
    outcome = record.get("outcome")
    location = record.get("location")
    if isinstance(location, list) and location and isinstance(location[0], str):
        test.path = location[0]
    seconds, problem = duration(record.get("duration"))
    if problem:
        test.warnings.append(f"{test.nodeid[:120]}: {where}: {problem}; left out")
    test.duration += seconds or 0.0
    sections = record.get("sections")
    for section in sections if isinstance(sections, list) else ():
        if isinstance(section, list) and len(section) == 2 and str(section[1]).strip():
            text = f"{'-' * 20} {section[0]} {'-' * 20}\n{str(section[1]).rstrip()}"
            if text not in test.sections:  # a later phase's report repeats the earlier phases' sections
                test.sections.append(text)
    if outcome == "failed":
        verdict = "fail" if when == "call" else "error"
        if test.verdict != "error":
            test.verdict = verdict
        longrepr = record.get("longrepr")
        test.reports.append(longrepr_text(longrepr))
        test.error = test.error or _crash_message(longrepr)
    elif outcome == "skipped" and test.verdict == "pass":
        test.verdict = "skip"
    elif outcome not in ("passed", "failed", "skipped"):
        what = f"outcome {shown(outcome)} is not passed, failed or skipped"
        test.warnings.append(f"{test.nodeid[:120]}: {where}: {what}; ignored")


def longrepr_text(longrepr: Any) -> str:
    """pytest's long report text from its JSON form (``TestReport._to_json``); odd shapes are skipped."""
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
    for element in chain if isinstance(chain, list) else ():
        if not isinstance(element, list) or len(element) != 3:
            continue
        traceback, _crash, description = element
        entries = traceback.get("reprentries") if isinstance(traceback, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            data = entry.get("data") if isinstance(entry, dict) else None
            if not isinstance(data, dict):
                continue
            lines = data.get("lines")
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
            return first_line(str(crash["message"]))
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
    # a pass keeps what it printed: the history tells a failure's new lines from those (README)
    log = "\n".join([*test.sections, *test.reports])
    return TestRun(
        test_id=test.nodeid,
        verdict=test.verdict,
        log=log,
        error=test.error,
        duration_s=round(test.duration, 6),
        script_paths=tuple(dict.fromkeys(paths)),
        suite="pytest",
        params=params,
        warnings=tuple(test.warnings),
    )
