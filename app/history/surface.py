"""What users see of a test's CI history (DESIGN 8.5): pure functions, no I/O.

The history-aware triage adds a history section to its result (runs used, classification, first
bad version with the changed hunks) and, per ranked element, the posterior and what each history
channel contributed; the spectrum view shows the counts behind the Ochiai channel; the dashboard
draws channel bars from those contributions. The service and the CLI only fetch runs and call
these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.analysis.model import Analysis, Loc
from app.history.rank import HistoryRun, map_runs, run_traces, selection_of, target_of
from app.history.rank import select_runs as rank_select
from app.history.records import env_fingerprint
from app.history.signatures import Run, classify, err_sig, first_bad_version, is_flaky
from app.history.spectrum import FORMULAS, scores, spectrum
from app.history.versions import hunks, version_id
from app.options import check_window

HISTORY_CHANNELS: tuple[str, ...] = ("spectrum", "cp", "diff", "history_value")
BAR_STEPS = 20  # bar widths in 5 % steps: the page's CSS has one class per step (no inline styles)


@dataclass(frozen=True)
class HistoryChoice:
    """What a request asked of the history: ``auto`` or ``off``, how many runs, how many to keep."""

    mode: str = "auto"
    window: int = 30  # the newest runs read from the store
    k: int = 0  # runs kept by FDC selection (002); 0 keeps every run of the window


def parse_history(value: Any, *, window: int, k: int) -> HistoryChoice:
    """``auto`` | ``off`` | ``{"window": n, "k": n}`` (defaults from the options); ``ValueError`` if bad."""
    if value is None or value == "auto":
        return HistoryChoice("auto", window, k)
    if value == "off":
        return HistoryChoice("off", window, k)
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"window", "k"})
        if unknown:
            raise ValueError(f"history: unknown field(s) {', '.join(unknown)}; use window and k")
        w, kk = value.get("window", window), value.get("k", k)
        check_window(w, kk)
        return HistoryChoice("auto", int(w), int(kk))
    raise ValueError('history must be "auto", "off" or {"window": n, "k": n}')


def select_runs(history: Sequence[HistoryRun], analysis: Analysis, k: int) -> tuple[HistoryRun, ...]:
    """The runs the history ranker fuses, oldest first: every failure and the ``k`` passes FDC
    picks (002), as ``app.history.rank.select_runs`` picks them for the ranker and the evaluation.

    ``k`` <= 0 keeps every run of the window.
    """
    if k <= 0:
        return tuple(history)
    target = target_of(analysis)
    mapped = map_runs(target, history)
    kept = {id(r) for r in rank_select(target, mapped, selection_of(k), k)}
    return tuple(h for h, r in zip(history, mapped, strict=True) if id(r) in kept)


def failure_signature(analysis: Analysis) -> str:
    """err_sig of the failure being triaged, computed as ingestion computes it for stored runs."""
    frame = analysis.error_frames[-1] if analysis.error_frames else None
    code = None
    if frame is not None:
        lines = next((f.lines for f in analysis.program.files if f.path == frame.path), ())
        code = lines[frame.line - 1] if 0 < frame.line <= len(lines) else None
    return err_sig(analysis.log.error_message, frame.function if frame else None, code)


def history_section(
    history: Sequence[HistoryRun],
    used: Sequence[HistoryRun],
    files: Mapping[str, str],
    signature: str,
    choice: HistoryChoice,
) -> dict[str, Any]:
    """The result's ``history``: runs read and used, classification, first bad version with hunks.

    ``files`` is the failing version; the failure's environment is taken as that of the newest
    run of the same version (the request carries none), so flakiness compares like with like.
    """
    current_version = version_id(files)
    files_of = {version_id(h.files): h.files for h in history}
    files_of.setdefault(current_version, files)
    same = [h.env for h in history if version_id(h.files) == current_version and h.same_test]
    runs = [Run(h.verdict, version_id(h.files), h.env, h.err_sig) for h in history if h.same_test]
    current = Run("fail", current_version, same[-1] if same else env_fingerprint({}), signature)
    order = list(dict.fromkeys([*(r.version for r in runs), current_version]))
    found = first_bad_version(runs, current, order)
    changed: list[dict[str, Any]] = []
    if found.last_good is not None and found.script_changed:
        new = files_of.get(found.first_bad or current_version, files)
        changed = changed_hunks(files_of.get(found.last_good, {}), new)
    return {
        "runs_read": len(history),
        "runs_used": len(used),
        "window": choice.window,
        "k": choice.k,
        "version": current_version,
        "err_sig": signature,
        "classification": classify(runs, current),
        "flaky": is_flaky(runs, current),
        "first_bad_version": {
            "last_good": found.last_good,
            "first_bad": found.first_bad,
            "between": list(found.between),
            "script_changed": found.script_changed,
            "note": found.note,
            "hunks": changed,
        },
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


def element_channels(item: Mapping[str, Any]) -> dict[str, Any]:
    """A ranked element's posterior and each history channel's log-likelihood term.

    The history ranker scores an element by its fused logit and records every positive channel
    term as evidence, so both come from the stored result alone (older results included).
    """
    channels: dict[str, float] = {}
    for ev in item.get("evidence") or ():
        channel, weight = ev.get("channel"), ev.get("weight")
        if channel in HISTORY_CHANNELS and isinstance(weight, int | float) and weight > 0:
            channels[channel] = round(channels.get(channel, 0.0) + float(weight), 4)
    score = item.get("score")
    posterior = None
    if isinstance(score, int | float) and channels:
        posterior = round(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, float(score))))), 4)
    return {"posterior": posterior, "channels": channels}


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
    A block's counts are its best line's (DESIGN 8.2: blocks take the max).
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


def triage_with_history(
    scripts: Sequence[Any],
    log: str,
    options: Any,
    history: Sequence[HistoryRun],
    choice: HistoryChoice,
    limits: Any = None,
    parses: Any = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """The history ranker's triage of one failure: (TriageResult, its RankRequest, history section).

    No model is asked: the history ranker maps every run of the window and picks the passes
    (``choice.k``) itself, as the evaluation does, so flaky failures are judged on the whole window.
    ``limits`` (CostLimits) are checked on the trees the analysis parses, as in any triage;
    ``parses`` (ParseCache) shares the scripts' parse with earlier triages of the same scripts.
    """
    import asyncio
    import time
    from dataclasses import replace

    from app.triage import prepare, rank

    started = time.perf_counter()
    options = replace(options, ranker="history", history_k=choice.k)
    request = prepare(scripts, log, options, explain=True, limits=limits, parses=parses)
    used = select_runs(history, request.analysis, choice.k)
    result = asyncio.run(rank(replace(request, history=tuple(history)), client=None, started=started))
    files = {s.path: s.content for s in scripts}
    section = history_section(history, used, files, failure_signature(request.analysis), choice)
    return result, request, section


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
