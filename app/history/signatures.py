"""Failure signatures and what the history says about a failure (docs/design.md §8.3).

The one signature scheme of the product. A failure's id is its error signature, ``err_sig``
(40 hex digits): the exception type, its message with run-specific tokens masked (``mask``), and
the innermost script frame (function and line content, not line number, so edits elsewhere keep
it). Every place that names a failure uses it: ``tcfl ci`` groups and its JSON, the stored runs
and ``/v1/signatures``, the dashboard's failure list and test pages. It is computed from the log
and the scripts alone (``log_signature``; ``analysis_signature`` and ``snapshot_signature`` when
an analysis of them was made), never from a ranking, so a failure that was never triaged has the
same id as one that was. ``loc_sig`` refines it by the top fused block's content.

A failure is new, recurring, a regression (passes between) or flaky (both verdicts at one version
and environment); the first bad version brackets when the script changed for the worse.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations, pairwise
from typing import Any

from app.analysis.logparse import parse_log, script_frames
from app.analysis.model import Analysis, Frame, ParsedLog, Script
from app.analysis.source import text_lines

FLAKY_WINDOW = 20
FLAKY_FLIP_RATE = 0.1
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<ts>"),
    (
        re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
        "<uuid>",
    ),
    (re.compile(r"(?<![\w:])(?:[0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}(?![\w:])"), "<mac>"),
    (
        re.compile(
            r"(?<![\w:.])\[?(?:(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}"
            r"|(?:[0-9a-fA-F]{1,4}:){1,7}:(?:[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4}){0,6})?"
            r"|::[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4}){0,6})(?:%\w+)?(?:\](?::\d+)?)?(?![\w:])"
        ),
        "<ip>",
    ),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\btmp[a-z0-9_]{6,10}\b"), "<tmp>"),  # tempfile's names outside a path
    (re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.\-]+){2,}[\\/]?"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b"), "<hex>"),  # short ids
    (
        re.compile(r"\b(?:\d+h)?(?:\d+m(?!s))?\d+(?:\.\d+)?(?:ns|us|µs|ms|s|sec|secs|min|mins|h)\b"),
        "<dur>",
    ),
    (re.compile(r"[-+]?\b\d+(?:\.\d+)?(?:e[-+]?\d+)?\b"), "<n>"),
)
_EXC = re.compile(
    r"^\s*(?:E\s+)?([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fail|Reset))\b:?\s?(.*)$"
)


def mask(text: str) -> str:
    """The message with numbers, hex, uuids, IPs, paths and timestamps replaced by placeholders."""
    for pattern, placeholder in _MASKS:
        text = pattern.sub(placeholder, text)
    return " ".join(text.split())


def split_exception(error_message: str) -> tuple[str, str]:
    """(exception type, message) from a traceback's last line(s); ('', text) when there is no type."""
    lines = [line for line in error_message.strip().splitlines() if line.strip()]
    for i, line in enumerate(lines):
        m = _EXC.match(line)
        if m:
            rest = [m.group(2), *lines[i + 1 :]]
            return m.group(1).rsplit(".", 1)[-1], "\n".join(r for r in rest if r)
    return "", "\n".join(lines)


def _sha1(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()


def err_sig(error_message: str, frame_function: str | None, frame_code: str | None) -> str:
    """The id: exception type, masked message, the frame's function and its code's hash."""
    exc, message = split_exception(error_message)
    code = _sha1(" ".join((frame_code or "").split()))
    return _sha1(exc, mask(message), frame_function or "", code)


def normalise_error(message: str | None) -> str:
    """The error as a group shows it: the exception type and its first line, masked."""
    exc, text = split_exception(message or "")
    first = mask(next((line for line in text.splitlines() if line.strip()), ""))
    return (f"{exc}: {first}" if exc and first else exc or first)[:500]


def log_signature(log: str, scripts: Sequence[Script] = ()) -> str:
    """The id of the failure a log reports (its ``err_sig``), with the scripts when they are known."""
    return parsed_signature(parse_log(log), {s.path: _lines(s.content) for s in scripts})


@lru_cache(maxsize=8)
def _lines(content: str) -> tuple[str, ...]:
    """A script's ``text_lines``, kept for the next failures of the same test files (a CI job's
    failures come a test module at a time)."""
    return tuple(text_lines(content))


def analysis_signature(analysis: Analysis) -> str:
    """The id of an analysed failure: ``log_signature`` of the log and scripts it analysed."""
    return parsed_signature(analysis.log, {f.path: f.lines for f in analysis.program.files})


def snapshot_signature(summary: Mapping[str, Any]) -> str:
    """The id of the failure a stored analysis snapshot (``app.analysis.snapshot``) records: its
    error message and frames in the scripts, with the scripts' lines, are the analysis' own."""
    error = summary.get("error") or {}
    frames = error.get("frames") or ()
    files = {f["path"]: f["lines"] for f in summary.get("files") or ()}
    last = frames[-1] if frames else None
    frame = None if last is None else Frame(last["path"], int(last["line"]), last.get("function"))
    return _signature(str(error.get("message") or ""), frame, files.get(frame.path, ()) if frame else ())


def parsed_signature(parsed: ParsedLog, scripts: Mapping[str, Sequence[str]]) -> str:
    """``err_sig`` of a parsed log: with scripts (path -> lines), the innermost frame in them and
    the code on its line; without, the innermost frame as the log printed it."""
    if not scripts:
        frame = parsed.frames[-1] if parsed.frames else None
        return err_sig(parsed.error_message, frame.function if frame else None, frame.code if frame else None)
    frames, _ = script_frames(parsed.frames, scripts)
    frame = frames[-1] if frames else None
    return _signature(parsed.error_message, frame, scripts[frame.path] if frame else ())


def _signature(message: str, frame: Frame | None, lines: Sequence[str]) -> str:
    """``err_sig`` of a frame in a script (``lines``: the script's) or of no frame."""
    code = lines[frame.line - 1] if frame is not None and 0 < frame.line <= len(lines) else None
    return err_sig(message, frame.function if frame else None, code)


def loc_sig(error_sig: str, block_code: str) -> str:
    return _sha1(error_sig, " ".join(block_code.split()))


def site_sig(code: str) -> str:
    """A fault site's content hash (whitespace-insensitive): a block of shared code."""
    return _sha1("site", " ".join(code.split()))


def group_key(error_sig: str, site: str | None = None) -> str:
    """What a failure groups by across tests: its shared fault site when the ranking puts the
    fault in shared code (a helper's fault fails different tests at different assertions, so
    their error signatures differ), else its error signature."""
    return f"site:{site}" if site else error_sig


@dataclass(frozen=True)
class Run:
    """One run as classification sees it; runs are given oldest first."""

    verdict: str  # pass | fail | error | skip
    version: str
    env: str = ""  # environment fingerprint
    err_sig: str | None = None
    commit: str | None = None  # the commit and job it ran in, where CI said (the verdict names them)
    job_url: str | None = None
    launch_id: int | None = None


def _failed(run: Run) -> bool:
    return run.verdict in ("fail", "error")


def is_flaky(history: Sequence[Run], current: Run, window: int = FLAKY_WINDOW) -> bool:
    """Both verdicts at the current (version, env) in the last runs, flipping often enough."""
    same = [r for r in history[-(window - 1) :] if (r.version, r.env) == (current.version, current.env)]
    same = [r for r in (*same, current) if r.verdict != "skip"]
    verdicts = [_failed(r) for r in same]
    if len(set(verdicts)) < 2:
        return False
    flips = sum(a != b for a, b in pairwise(verdicts))
    return flips / max(1, len(verdicts) - 1) >= FLAKY_FLIP_RATE


def classify(history: Sequence[Run], current: Run, window: int = FLAKY_WINDOW) -> str:
    """new | recurring | regression | flaky for the failing ``current`` run given earlier runs."""
    if is_flaky(history, current, window):
        return "flaky"
    seen = [i for i, r in enumerate(history) if _failed(r) and r.err_sig == current.err_sig]
    if not seen:
        return "new"
    if any(r.verdict == "pass" for r in history[seen[-1] + 1 :]):
        return "regression"
    return "recurring"


@dataclass(frozen=True)
class FirstBad:
    last_good: str | None  # version of the last pass before the failure
    first_bad: str | None  # version of the earliest failure with this signature after it
    between: tuple[str, ...] = ()  # versions seen between them with no run of their own: a range
    script_changed: bool = True
    note: str = ""


def first_bad_version(
    history: Sequence[Run], current: Run, version_order: Sequence[str] = (), *, window: int | None = None
) -> FirstBad:
    """V_p = the last pass, V_f = the first failure with ``current``'s signature after it."""
    runs = [*history, current]
    if window is not None:
        runs = runs[-window:]
    passes = [i for i, r in enumerate(runs) if r.verdict == "pass"]
    if not passes:
        return FirstBad(None, _first_failing(runs, 0, current), note="no passing run in the history")
    last_pass = passes[-1]
    good = runs[last_pass].version
    bad = _first_failing(runs, last_pass + 1, current) or current.version
    between: tuple[str, ...] = ()
    if version_order and good in version_order and bad in version_order:
        i, j = version_order.index(good), version_order.index(bad)
        between = tuple(version_order[i + 1 : j])
    if good == current.version:
        return FirstBad(
            good, bad, between, False, "script unchanged since last pass: suspect SUT/env or flakiness"
        )
    return FirstBad(good, bad, between)


def _first_failing(runs: Sequence[Run], start: int, current: Run) -> str | None:
    for r in runs[start:]:
        if _failed(r) and r.err_sig == current.err_sig:
            return r.version
    return None


@dataclass(frozen=True)
class Failure:
    id: Hashable
    err_sig: str
    loc_sig: str | None = None


@dataclass(frozen=True)
class SignatureGroup:
    """Failures across tests with one err_sig (and, refined, one loc_sig): the evaluation's grouping."""

    err_sig: str
    loc_sig: str | None
    members: tuple[Hashable, ...] = field(default_factory=tuple)


def group(failures: Iterable[Failure], *, refine: bool = True) -> list[SignatureGroup]:
    """Failures by err_sig across tests, refined by loc_sig; largest groups first."""
    found: dict[tuple[str, str | None], list[Hashable]] = {}
    for f in failures:
        found.setdefault((f.err_sig, f.loc_sig if refine else None), []).append(f.id)
    groups = [SignatureGroup(e, loc, tuple(m)) for (e, loc), m in found.items()]
    return sorted(groups, key=lambda g: (-len(g.members), g.err_sig, g.loc_sig or ""))


def pairwise_f1(predicted: Mapping[Hashable, Hashable], truth: Mapping[Hashable, Hashable]) -> float:
    """Pairwise F1 of a clustering: pairs put together that truly belong together."""
    ids = sorted(predicted.keys() & truth.keys(), key=repr)
    tp = fp = fn = 0
    for a, b in combinations(ids, 2):
        same_p, same_t = predicted[a] == predicted[b], truth[a] == truth[b]
        tp += same_p and same_t
        fp += same_p and not same_t
        fn += same_t and not same_p
    if tp == 0:
        return 1.0 if fp == fn == 0 else 0.0
    return 2 * tp / (2 * tp + fp + fn)


def verdict_of(history: Sequence[Run], current: Run) -> dict[str, Any]:
    """What the history says about the failing ``current`` run, given the runs before it (oldest
    first): new / recurring / regression / flaky, and the first bad version as a script version
    and as the commit and job of the run that failed first (the last good one likewise)."""
    runs = list(history)
    order = list(dict.fromkeys([*(r.version for r in runs), current.version]))
    found = first_bad_version(runs, current, order)
    every = [*runs, current]
    passes = [i for i, r in enumerate(every) if r.verdict == "pass"]
    good = every[passes[-1]] if passes else None
    start = passes[-1] + 1 if passes else 0
    bad = next((r for r in every[start:] if _failed(r) and r.err_sig == current.err_sig), current)
    return {
        "classification": classify(runs, current),
        "flaky": is_flaky(runs, current),
        "first_bad_version": {
            "last_good": found.last_good,
            "first_bad": found.first_bad,
            "between": list(found.between),
            "script_changed": found.script_changed,
            "note": found.note,
            "first_bad_commit": bad.commit,
            "first_bad_job": bad.job_url,
            "first_bad_launch": bad.launch_id,
            "last_good_commit": good.commit if good else None,
            "last_good_job": good.job_url if good else None,
        },
    }
