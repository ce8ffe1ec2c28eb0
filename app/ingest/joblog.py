"""A plain job log holding several tests, split into one section per test.

Console logs are what Jenkins and most CI keep. A log with several failures must never be
triaged as one: each failed test gets its own section, found by the markers of the runner that
wrote it (tried in this order, the first that finds tests wins):

- avocado: ``START <id>`` ... ``PASS|FAIL|ERROR <id>`` (and the newer ``<id>: STARTED`` / ``<id>: FAIL``);
- stestr/tempest: ``{0} <id> [0.1s] ... FAILED`` result lines, each followed by its output;
- unittest: ``FAIL: test_x (module.Class)`` blocks between ``====`` rules;
- pytest: ``____ test_x ____`` sections under FAILURES/ERRORS (node ids from the short summary).

Every pattern is anchored and linear; nothing here raises on a ``str``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from app.analysis.logparse import parse_log
from app.ingest.base import MAX_TESTS, TestRun, first_line, split_params
from app.ingest.clean import duration as clean_duration

FORMAT = "joblog"

_AV_STATUS = "PASS|FAIL|ERROR|SKIP|CANCEL|WARN|INTERRUPTED"
_AV_VERDICT = {"PASS": "pass", "WARN": "pass", "FAIL": "fail", "ERROR": "error", "INTERRUPTED": "error"}
_AV_START = re.compile(r"(?:^|\| ?)START (?P<id>\S+)\s*$")
_AV_END = re.compile(rf"(?:^|\| ?)(?P<status>{_AV_STATUS}) (?P<id>\S+)\s*$")
_AV_START_NEW = re.compile(r"(?:^|\| ?)(?P<id>\S+): STARTED\s*$")
_AV_END_NEW = re.compile(rf"(?:^|\| ?)(?P<id>\S+): (?P<status>{_AV_STATUS})\s*$")

_ST_RESULT = re.compile(
    r"^\{\d+\} (?P<id>\S+)(?: \[(?P<time>[\d.]+)s\])? \.\.\. (?P<status>ok|FAILED|SKIPPED|ERROR)\b"
)
_ST_END = re.compile(r"^(?:={5,}|Totals|Failed \d+ tests? - output below:|Sum of execute time)")

_RULE_EQ = re.compile(r"^={20,}$")
_RULE_DASH = re.compile(r"^-{20,}$")
_UT_HEAD = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<name>\w+) \((?P<cls>[\w.]+)\)")
_UT_RAN = re.compile(r"^Ran \d+ tests? in ")

_PY_SECTION = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$")
_PY_BANNER = re.compile(r"^={3,} ?(?P<title>.*?) ?={3,}$")
_PY_SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<nodeid>\S+::\S+)(?: - (?P<msg>.*))?$")
_PY_VERBOSE = re.compile(r"^(?P<nodeid>\S+::\S+) (?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_PY_ERROR_AT = re.compile(r"^ERROR at (?:setup|teardown) of (?P<name>.+)$")


def split(text: str) -> tuple[str, list[TestRun]]:
    """(runner name, runs) for the first runner whose markers are in the log; ("", []) when none."""
    lines = text.splitlines()
    splitters: Sequence[tuple[str, Callable[[list[str]], list[TestRun]]]] = (
        ("avocado", _avocado),
        ("stestr", _stestr),
        ("unittest", _unittest),
        ("pytest", _pytest),
    )
    for name, splitter in splitters:
        runs = splitter(lines)
        if runs:
            return name, runs[:MAX_TESTS]
    return "", []


# Text every runner's markers above contain: a log with none of them holds no test sections.
_MARKER_TEXT = ("START", ": STARTED", " ... ", "FAIL: ", "ERROR: ", "____ ")


def failed_tests(text: str) -> list[str]:
    """Ids of the failed tests a log holds, in log order (a single-test log gives at most one).

    For ``tcfl triage``, which ranks one failure: a log with several failed tests must not be
    merged silently. The substring test keeps an ordinary log from paying for the split.
    """
    if not any(marker in text for marker in _MARKER_TEXT):
        return []
    _, runs = split(text)
    return [run.test_id for run in runs if run.failed]


def _strip(line: str) -> str:
    return line.rstrip("\r\n").rstrip()


# -- avocado -----------------------------------------------------------------------------------


def _avocado(lines: list[str]) -> list[TestRun]:
    open_at: dict[str, int] = {}
    runs: list[TestRun] = []
    for i, raw in enumerate(lines):
        line = _strip(raw)
        start = _AV_START.search(line) or _AV_START_NEW.search(line)
        if start:
            open_at[start.group("id")] = i
            continue
        end = _AV_END.search(line) or _AV_END_NEW.search(line)
        if end and end.group("id") in open_at:
            test_id = end.group("id")
            begin = open_at.pop(test_id)
            verdict = _AV_VERDICT.get(end.group("status"), "skip")
            section = "\n".join(lines[begin : i + 1])
            runs.append(_run(re.sub(r"^\d+-", "", test_id), verdict, section, "avocado"))
    return runs


# -- stestr / tempest --------------------------------------------------------------------------


def _stestr(lines: list[str]) -> list[TestRun]:
    found: list[tuple[int, re.Match[str]]] = []
    for i, raw in enumerate(lines):
        m = _ST_RESULT.match(_strip(raw))
        if m:
            found.append((i, m))
    runs = []
    for n, (i, m) in enumerate(found):
        stop = found[n + 1][0] if n + 1 < len(found) else len(lines)
        body: list[str] = []
        for raw in lines[i + 1 : stop]:
            if _ST_END.match(_strip(raw)):
                break
            body.append(raw)
        body = _stestr_details(body)
        status = m.group("status")
        verdict = {"ok": "pass", "SKIPPED": "skip", "ERROR": "error"}.get(status, "fail")
        duration, _ = clean_duration(m.group("time"))  # "1.2.3s" or 400 digits: no duration, not a crash
        runs.append(_run(m.group("id"), verdict, "\n".join([lines[i], *body]), "subunit", duration))
    return runs


_CARETS = re.compile(r"^[\^~ ]+$")


def _stestr_details(body: list[str]) -> list[str]:
    """subunit-trace re-indents a traceback attachment and spaces its frames out; put it back.

    Under ``Captured traceback:`` it prints every line indented, frames with blank lines between,
    and code lines at the frame's indent. Python's own layout is restored (frame lines at 2,
    code at 4, caret lines dropped) so the log parser reads the frames.
    """
    out: list[str] = []
    in_traceback = False
    for raw in body:
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("Captured ") and stripped.endswith(":"):
            in_traceback = stripped == "Captured traceback:"
            out.append(stripped)
            continue
        if not in_traceback or set(stripped) == {"~"}:
            out.append(line)
            continue
        if not stripped or _CARETS.match(stripped):
            continue
        if stripped.startswith("Traceback (most recent call last)") or stripped.startswith("During handling"):
            out.append(stripped)
        elif stripped.startswith('File "'):
            out.append("  " + stripped)
        elif out and out[-1].startswith('  File "'):
            out.append("    " + stripped)  # the frame's code line
        else:
            out.append(stripped)
    return out


# -- unittest ----------------------------------------------------------------------------------


def _unittest(lines: list[str]) -> list[TestRun]:
    runs = []
    i = 0
    while i < len(lines):
        head = _UT_HEAD.match(_strip(lines[i]))
        if head is None or i == 0 or not _RULE_EQ.match(_strip(lines[i - 1])):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not _RULE_EQ.match(_strip(lines[j])):
            if _RULE_DASH.match(_strip(lines[j])) and j + 1 < len(lines) and _UT_RAN.match(lines[j + 1]):
                break
            j += 1
        cls, name = head.group("cls"), head.group("name")
        test_id = cls if cls.endswith("." + name) else f"{cls}.{name}"
        verdict = "fail" if head.group("kind") == "FAIL" else "error"
        runs.append(_run(test_id, verdict, "\n".join(lines[i - 1 : j]), "unittest"))
        i = j
    return runs


# -- pytest ------------------------------------------------------------------------------------


def _pytest(lines: list[str]) -> list[TestRun]:
    nodeids: dict[str, str] = {}
    messages: dict[str, str] = {}
    verbose: dict[str, str] = {}
    for raw in lines:
        line = _strip(raw)
        summary = _PY_SUMMARY.match(line)
        if summary:
            nodeid = summary.group("nodeid")
            nodeids.setdefault(_short_name(nodeid), nodeid)
            messages[nodeid] = summary.group("msg") or ""
            continue
        progress = _PY_VERBOSE.match(line)
        if progress:
            verbose.setdefault(progress.group("nodeid"), progress.group("status"))
    runs: list[TestRun] = []
    area = ""
    current: tuple[str, int] | None = None

    def close(stop: int) -> None:
        if current is None:
            return
        name, begin = current
        setup = _PY_ERROR_AT.match(name)
        short = setup.group("name") if setup else name
        nodeid = nodeids.get(short, short)
        verdict = "error" if area == "ERRORS" or setup else "fail"
        run = _run(nodeid, verdict, "\n".join(lines[begin:stop]), "pytest")
        if messages.get(nodeid) and not run.error:
            run = _with_error(run, messages[nodeid])
        runs.append(run)

    for i, raw in enumerate(lines):
        line = _strip(raw)
        banner = _PY_BANNER.match(line)
        if banner:
            close(i)
            current = None
            area = banner.group("title").strip()
            continue
        section = _PY_SECTION.match(line)
        if section and area in ("FAILURES", "ERRORS"):
            close(i)
            current = (section.group("name"), i)
    close(len(lines))
    if not runs:
        return []
    failed = {r.test_id for r in runs}
    for nodeid, status in verbose.items():
        if nodeid not in failed and status in ("PASSED", "SKIPPED", "XFAIL", "XPASS"):
            runs.append(TestRun(nodeid, "skip" if status == "SKIPPED" else "pass", suite="pytest"))
    return runs


def _short_name(nodeid: str) -> str:
    """The section title pytest prints for a node id: ``Class.test_x[param]``."""
    return ".".join(nodeid.split("::")[1:])


# -- shared ------------------------------------------------------------------------------------

_EXC_LINE = re.compile(r"^(?:E\s+)?(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Failure|Exit|Interrupt)\b.*)$")


def _run(test_id: str, verdict: str, section: str, suite: str, duration: float | None = None) -> TestRun:
    error = ""
    if verdict in ("fail", "error"):
        error = first_line(parse_log(section).error_message)
    if verdict in ("fail", "error") and not error:
        for line in reversed(section.splitlines()):
            m = _EXC_LINE.match(line.strip())
            if m:
                error = m.group("exc")
                break
        error = error or first_line(section)
    path = test_id.split("::", 1)[0] if "::" in test_id else None
    _, params = split_params(test_id)
    return TestRun(
        test_id=test_id,
        verdict=verdict,
        log=section if verdict != "pass" else "",
        error=error,
        duration_s=duration,
        script_paths=(path,) if path else (),
        suite=suite,
        params=params,
    )


def _with_error(run: TestRun, error: str) -> TestRun:
    from dataclasses import replace

    return replace(run, error=error)
