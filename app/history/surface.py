"""What users see of a test's CI history: pure functions, no I/O.

A triage that named a test gets a history section (runs read and used, classification, first bad
version with the changed hunks: ``history_section``, called by ``app.triage``), and per ranked
element the posterior and each history channel's term (``app.localize.result.history_terms``);
the spectrum view shows the counts behind the Ochiai channel; the dashboard draws channel bars
from those terms. The shells only read runs from the store and call these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.analysis.model import Analysis, Loc
from app.history.rank import HistoryRun, map_runs, run_traces, target_of
from app.history.records import env_fingerprint
from app.history.signatures import Run, analysis_signature, verdict_of
from app.history.spectrum import FORMULAS, scores, spectrum
from app.history.versions import hunks, version_id

BAR_STEPS = 20  # bar widths in 5 % steps: the page's CSS has one class per step (no inline styles)


def failure_signature(analysis: Analysis) -> str:
    """The id of the failure being triaged, as ingestion gives it to stored runs (one scheme:
    ``app.history.signatures``)."""
    return analysis_signature(analysis)


def history_section(
    test: str,
    history: Sequence[HistoryRun],
    used: Sequence[HistoryRun],
    files: Mapping[str, str],
    signature: str,
    *,
    window: int,
    k: int,
    new_lines: Sequence[int] | None = None,
) -> dict[str, Any]:
    """The result's ``history``: runs read and used, classification, first bad version with hunks.

    ``used`` are the runs the ranker fused (``RankAnswer.history_used``); ``files`` is the failing
    version (its test's own scripts: ``app.history.records.scope_paths``); ``new_lines`` the log
    lines only the failure printed (``app.history.newlines``); the failure's environment
    is taken as that of the newest run of the same version (the request carries none), so
    flakiness compares like with like.
    """
    current_version = version_id(files)
    files_of = {version_id(h.files): h.files for h in history}
    files_of.setdefault(current_version, files)
    same = [h.env for h in history if version_id(h.files) == current_version and h.same_test]
    runs = [
        Run(h.verdict, version_id(h.files), h.env, h.err_sig, h.commit, h.job_url)
        for h in history
        if h.same_test
    ]
    current = Run("fail", current_version, same[-1] if same else env_fingerprint({}), signature)
    verdict = verdict_of(runs, current)
    found = verdict["first_bad_version"]
    changed: list[dict[str, Any]] = []
    if found["last_good"] is not None and found["script_changed"]:
        new = files_of.get(found["first_bad"] or current_version, files)
        changed = changed_hunks(files_of.get(found["last_good"], {}), new)
    return {
        "test": test,
        "runs_read": len(history),
        "runs_used": len(used),
        "window": window,
        "k": k,
        "version": current_version,
        "err_sig": signature,
        **verdict,
        "first_bad_version": {**found, "hunks": changed},
        # the failure's log lines no passing run printed (None: no passing log to compare with)
        "new_lines": None if new_lines is None else list(new_lines),
    }


def changed_hunks(old: Mapping[str, str], new: Mapping[str, str]) -> list[dict[str, Any]]:
    """What changed from one script version to another, hunk by hunk, file by file."""
    out: list[dict[str, Any]] = []
    for path, text in sorted(new.items()):
        out.extend(h.to_dict() for h in hunks(path, old.get(path, "").splitlines(), text.splitlines()))
    return out


def timeline(runs_newest_first: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runs oldest first, each marking whether it starts a new script version (a tick)."""
    out, last = [], None
    for r in reversed(runs_newest_first):
        version = r.get("version_id")
        out.append({**r, "new_version": version is not None and version != last})
        last = version if version is not None else last
    return out


@dataclass(frozen=True)
class Bar:
    channel: str
    weight: float
    step: int  # width in BAR_STEPS-ths of the widest channel of the page, at least 1


def channel_bars(channels: Mapping[str, float], widest: float) -> list[Bar]:
    """Bars scaled to ``widest`` (the largest term shown on the page); zero terms get no bar."""
    if widest <= 0:
        return []
    bars = []
    for channel, weight in sorted(channels.items(), key=lambda kv: -kv[1]):
        if weight > 0:
            bars.append(Bar(channel, weight, max(1, min(BAR_STEPS, round(BAR_STEPS * weight / widest)))))
    return bars


def spectrum_rows(history: Sequence[HistoryRun], analysis: Analysis, level: str) -> list[dict[str, Any]]:
    """Per line (or per block at ``level`` "block") of the analysed version: weighted counts, scores.

    The runs are mapped and weighted as the fused ranking maps them (``app.history.rank.map_runs``:
    each through its version's line map, weighted by versions apart, flaky failures marked).
    A block's counts are its best line's (docs/design.md §8.2: blocks take the max).
    """
    target = target_of(analysis)
    lines = [Loc(f.path, n) for f in analysis.program.files for n in sorted(f.code_lines)]
    counts = spectrum(run_traces(map_runs(target, history)), lines)
    by_formula = {name: scores(counts, name) for name in FORMULAS}

    def row(loc: Loc) -> dict[str, Any]:
        c = counts[loc]
        return {
            "ef": round(c.aef, 4),
            "ep": round(c.aep, 4),
            "nf": round(c.anf, 4),
            "np": round(c.anp, 4),
            "scores": {name: _finite(s[loc]) for name, s in by_formula.items()},
        }

    if level != "block":
        return [{"path": loc.path, "line": loc.line, **row(loc)} for loc in lines]
    out = []
    for b in analysis.blocks:
        members = [Loc(b.path, n) for n in range(b.start_line, b.end_line + 1) if Loc(b.path, n) in counts]
        if members:
            best = max(members, key=lambda loc: (by_formula["ochiai"][loc], -loc.line))
            out.append(
                {
                    "block": b.bid,
                    "path": b.path,
                    "start_line": b.start_line,
                    "end_line": b.end_line,
                    **row(best),
                }
            )
    return out


def _finite(value: float) -> float | None:
    """JSON has no infinity: DStar's unbounded score (no pass, no miss) is given as null."""
    return round(value, 6) if math.isfinite(value) else None


def spectrum_view(history: Sequence[HistoryRun], version: str | None, level: str) -> dict[str, Any] | None:
    """``GET /v1/tests/{key}/spectrum``: counts and scores over ``version`` (default: the newest).

    None when no run with a trace has that version (its text is known only through its runs).
    """
    from app.analysis.model import Script
    from app.analysis.pipeline import analyze

    by_version = {version_id(h.files): h.files for h in history if h.same_test}
    if not by_version:
        return None
    target = version or list(by_version)[-1]
    files = by_version.get(target)
    if files is None:
        return None
    analysis = analyze([Script(p, c) for p, c in files.items()], "")
    verdicts = [h.verdict for h in history if h.same_test]
    return {
        "version": target,
        "level": level,
        "runs": len(verdicts),
        "failing_runs": sum(v in ("fail", "error") for v in verdicts),
        "passing_runs": verdicts.count("pass"),
        "formulas": list(FORMULAS),
        "elements": spectrum_rows(history, analysis, level),
    }
