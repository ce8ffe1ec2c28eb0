"""Every value a reader yields made safe to show and to store, whatever the results file held.

CI uploads are hostile input: a ``time="NaN"`` becomes invalid JSON in the answer, a NUL is
refused by PostgreSQL text columns, a lone surrogate cannot be written as UTF-8, a test id
longer than the history's limit or an empty one makes the history refuse the whole job. Each
run passes through ``clean_run`` once, in ``app.ingest.read_results``/``parse_bytes``, so
nothing downstream sees such a value; what had to change is said in a warning naming the test.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from app.ingest.base import VERDICTS, Results, TestRun, split_params

MAX_TEST_ID = 1000  # the CI history's limit: its parse_test_id refuses a longer id
MAX_SUITE = 200  # the history's tests.suite column
MAX_PATH = 1024  # a printed script path (the history's path columns)
MAX_PATHS = 50  # printed script paths kept per test
MAX_DURATION_S = 366 * 86_400.0  # a test "running" longer than a year is a broken clock, not a duration
MAX_WARNINGS = 100  # a file of 100,000 bad records says so once per record up to here, then counts
MAX_SHOWN = 120  # characters of a bad value quoted in a warning
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x01-\x1f\x7f]")  # in a name: an escape code, a tab; never in a file name or id


def text(value: Any) -> str:
    """``value`` as text that UTF-8 and PostgreSQL accept: NULs dropped, lone surrogates replaced."""
    out = value if isinstance(value, str) else str(value)
    if "\x00" in out:
        out = out.replace("\x00", "")
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: JSON "\ud800" escapes, surrogateescape'd bytes
        out = _SURROGATE.sub("\ufffd", out)
    return out


def name(value: Any) -> str:
    """A test id, suite or path: ``text`` with control characters replaced (XML and terminals refuse them)."""
    return _CONTROL.sub("\ufffd", text(value))


def shown(value: Any) -> str:
    """A bad value quoted in a warning: cleaned and cut, so the warning itself is safe."""
    quoted = repr(value) if not isinstance(value, str) else repr(text(value))
    return quoted if len(quoted) <= MAX_SHOWN else quoted[: MAX_SHOWN - 3] + "..."


def json_int(digits: str) -> float | int:
    """``json.loads(parse_int=...)``: past Python's 4,300-digit limit a number is infinite, not an error."""
    return int(digits) if len(digits) <= 4000 else math.inf


def unreadable(where: str, label: Any, exc: BaseException) -> str:
    """The warning for one record a reader had to skip: which one, and the kind of failure."""
    return f"{where} ({shown(label)}) unreadable ({type(exc).__name__}); skipped"


def bad_time(test_id: str, field: str, problem: str) -> str:
    """The warning for a test whose duration was left out."""
    return f"{test_id[:120]}: {field} {problem.removeprefix('duration ')}; left out"


def duration(value: Any) -> tuple[float | None, str | None]:
    """(seconds, problem): a finite, non-negative, plausible number of seconds, else None and why."""
    if value is None or value == "":
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None, f"duration {shown(value)} is not a number"
    try:
        seconds = float(value.strip()) if isinstance(value, str) else float(value)
    except (ValueError, OverflowError):
        return None, f"duration {shown(value)} is not a number"
    if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_DURATION_S:
        return None, f"duration {shown(value)} is not a plausible number of seconds"
    return seconds, None


def clean_run(run: TestRun, where: str) -> tuple[TestRun | None, list[str]]:
    """(the run with every value safe, problems), or (None, why) for a run without an id.

    ``where`` names the record in the file for a run that has no usable id of its own.
    """
    problems: list[str] = []
    raw_id = run.test_id if isinstance(run.test_id, str) else ""
    test_id = name(text(raw_id).strip())
    if not test_id:
        return None, [f"{where}: the test has no id (empty name); not read"]
    params = run.params if run.params is None else name(run.params)
    if len(test_id) > MAX_TEST_ID:
        problems.append(f"{test_id[:80]}...: test id of {len(test_id)} characters cut to {MAX_TEST_ID}")
        test_id = test_id[:MAX_TEST_ID].rstrip()
        params = split_params(test_id)[1]
    elif test_id != raw_id.strip():
        problems.append(f"{test_id[:MAX_SHOWN]}: test id held NUL, control or invalid characters; replaced")
    verdict = run.verdict if run.verdict in VERDICTS else "error"
    seconds: float | None = None
    if run.duration_s is not None:
        seconds, problem = duration(run.duration_s)
        if problem:
            problems.append(f"{test_id[:MAX_SHOWN]}: {problem}; left out")
    paths = [name(p).strip()[:MAX_PATH] for p in run.script_paths if isinstance(p, str)]
    cleaned = replace(
        run,
        test_id=test_id,
        verdict=verdict,
        log=text(run.log),
        error=text(run.error),
        duration_s=seconds,
        script_paths=tuple(dict.fromkeys(p for p in paths if p))[:MAX_PATHS],
        suite=name(run.suite)[:MAX_SUITE],
        params=params if params is None else params[:MAX_TEST_ID],
        warnings=tuple(text(w) for w in run.warnings),
    )
    return cleaned, problems


def clean_results(results: Results) -> Results:
    """Every run cleaned; problems of a failed run go with it, the rest to the file's warnings."""
    runs: list[TestRun] = []
    warnings = [text(w) for w in results.warnings]
    for n, run in enumerate(results.runs, 1):
        cleaned, problems = clean_run(run, f"test #{n}")
        if cleaned is None:
            warnings.extend(problems)
            continue
        if problems and cleaned.failed:
            cleaned = replace(cleaned, warnings=(*cleaned.warnings, *problems))
        else:
            warnings.extend(problems)
        runs.append(cleaned)
    return replace(results, runs=tuple(runs), warnings=tuple(capped(warnings)))


def capped(warnings: list[str]) -> list[str]:
    """The first MAX_WARNINGS distinct warnings and a count of the rest."""
    unique = list(dict.fromkeys(warnings))
    if len(unique) <= MAX_WARNINGS:
        return unique
    return [*unique[:MAX_WARNINGS], f"{len(unique) - MAX_WARNINGS} more warnings like these left out"]
