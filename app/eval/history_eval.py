"""Evaluate history-aware localization on the corpus with CI history (DESIGN 8.4).

For each case (a failing run f of one test) and history length N: the N runs of the test before
f plus its siblings' runs in those CI rounds (file scope), each run's estimated trace (tplus,
from its own log and its own script version) mapped onto f's version. Rankers: ``static`` (the
heuristic ranker on f alone), ``spectrum`` (Ochiai over estimated traces; ``spectrum_true`` the
same over the true traces; ``dstar`` and ``cp`` too) and ``fused`` (calibrated log-odds of
static, Ochiai, CP and diff). Calibration and test use disjoint halves of the test files;
paired-bootstrap 95 % CIs compare each ranker with static on the same cases.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.analysis.model import Analysis, Loc, Script, State
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.eval.metrics import rank_scores
from app.eval.runner import faulty_elements
from app.history.cp import CPRun, block_states, cp_scores
from app.history.fusion import Sample, channel_bins, fit, fuse
from app.history.graph import block_edges
from app.history.selection import run_weight
from app.history.signatures import Run, err_sig, first_bad_version, is_flaky, pairwise_f1
from app.history.spectrum import RunTrace, map_states, scores, spectrum
from app.history.versions import LineMap, changed_lines, map_lines
from app.localize.heuristic import rank_heuristic

LEVELS = ("line", "block")
KS = (1, 3, 5)
RANKERS = ("static", "spectrum", "spectrum_true", "dstar", "cp", "fused")
CHANNELS = ("static", "ochiai", "cp", "diff")
VERSION_ORDER = ("V0", "V0'", "V1")


def load_groups(root: Path) -> list[dict[str, Any]]:
    folder = root / "groups"
    if not folder.is_dir():
        raise FileNotFoundError(f"{root} holds no corpus with history (no groups/ folder)")
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


@dataclass
class _RunView:
    """A run's estimated line states in its own version, its true trace, and its signature."""

    states: dict[Loc, State]
    truth: frozenset[int]
    err_sig: str | None


@dataclass
class _Group:
    data: dict[str, Any]
    scripts: dict[str, list[Script]]
    maps: dict[str, dict[str, LineMap]]  # version -> {path: map onto V1}
    cache: dict[tuple[str, str], tuple[Analysis, _RunView]] = field(default_factory=dict)

    def view(self, run: dict[str, Any]) -> tuple[Analysis, _RunView]:
        # version ids and log keys are content hashes: groups of one file share their analyses
        key = (self.data["versions"][run["version"]]["id"], run["log"])
        if key not in self.cache:
            analysis = analyze(self.scripts[run["version"]], self.data["logs"][run["log"]], explain=True)
            tplus = analysis.traces["tplus"]
            states: dict[Loc, State] = {}
            for f in analysis.program.files:
                for n in f.code_lines:
                    loc = Loc(f.path, n)
                    ev = tplus.evidence.get(loc)
                    if ev is not None and ev.state in (State.EXE, State.NEXE, State.DBT):
                        states[loc] = ev.state
                    else:
                        states[loc] = State.DBT if loc in tplus.kept else State.NEXE
            sig = None
            if run["outcome"] in ("fail", "error"):
                frame = analysis.error_frames[-1] if analysis.error_frames else None
                code = None
                if frame is not None:
                    lines = analysis.program.files[0].lines
                    code = lines[frame.line - 1] if 0 < frame.line <= len(lines) else None
                sig = err_sig(analysis.log.error_message, frame.function if frame else None, code)
            self.cache[key] = (analysis, _RunView(states, frozenset(self.data["traces"][run["trace"]]), sig))
        return self.cache[key]


def _group(
    data: dict[str, Any], cache: dict[tuple[str, str], tuple[Analysis, _RunView]] | None = None
) -> _Group:
    scripts = {
        label: [Script(f["path"], f["content"]) for f in v["files"]] for label, v in data["versions"].items()
    }
    target = {f["path"]: f["content"] for f in data["versions"]["V1"]["files"]}
    maps = {}
    for label, v in data["versions"].items():
        maps[label] = {
            f["path"]: map_lines(f["content"].splitlines(), target[f["path"]].splitlines())
            for f in v["files"]
            if f["path"] in target
        }
    return _Group(data, scripts, maps, cache if cache is not None else {})


@dataclass
class CaseOutcome:
    case_id: str
    file: str
    regime: str
    noise: float
    ranks: dict[int, dict[str, dict[str, list[str]]]]  # N -> level -> ranker -> ranking
    faulty: dict[str, frozenset[str]]
    samples: dict[int, dict[str, list[Sample]]]  # N -> level -> calibration samples (fused channels)
    channel_scores: dict[int, dict[str, dict[str, dict[str, float]]]]  # N -> level -> channel -> scores
    elements: dict[str, list[str]]
    first_bad_ok: bool | None = None


def _history(group: _Group, target: dict[str, Any], n: int) -> list[dict[str, Any]]:
    runs = group.data["runs"]
    own = [r for r in runs if r["test"] == target["test"] and r["id"] < target["id"]][-n:] if n else []
    if not own:
        return []
    first_round = own[0]["round"]
    siblings = [
        r
        for r in runs
        if r["test"] != target["test"]
        and first_round <= r["round"] <= target["round"]
        and r["id"] < target["id"]
    ]
    return sorted([*own, *siblings], key=lambda r: r["id"])


def _flaky_ids(group: _Group, runs: Sequence[dict[str, Any]]) -> set[int]:
    """Failing runs the history itself classifies as flaky (not the corpus's ground truth)."""
    out: set[int] = set()
    by_test: dict[str, list[Run]] = {}
    for r in runs:
        prior = by_test.setdefault(r["test"], [])
        run = _as_run(group, r)
        if run.verdict in ("fail", "error") and is_flaky(prior, run):
            out.add(r["id"])
        prior.append(run)
    return out


def _as_run(group: _Group, r: dict[str, Any]) -> Run:
    sig = group.view(r)[1].err_sig if r["outcome"] in ("fail", "error") else None
    return Run(r["outcome"], r["version"], r["env"], sig)


def evaluate_case(group: _Group, case: dict[str, Any], lengths: Sequence[int]) -> CaseOutcome:
    runs = group.data["runs"]
    target = runs[case["target_run"]]
    analysis, fview = group.view(target)
    faulty = faulty_elements(analysis, frozenset(Loc(f["path"], f["line"]) for f in case["faulty_lines"]))
    edges = block_edges(analysis)
    rendered = {level: render(analysis, "tplus", level) for level in LEVELS}
    members = {
        level: {e.id: [Loc(e.path, n) for n in e.lines] for e in rendered[level].elements} for level in LEVELS
    }
    static = {}
    for level in LEVELS:
        elements = [e.id for e in rendered[level].elements]
        ranked = [s.element.id for s in rank_heuristic(analysis, rendered[level], max(1, len(elements)))]
        static[level] = [*ranked, *(e for e in elements if e not in ranked)]
    block_lines = {
        b.bid: [Loc(b.path, n) for n in range(b.start_line, b.end_line + 1)] for b in analysis.blocks
    }
    v1_files = {f["path"]: f["content"] for f in group.data["versions"]["V1"]["files"]}
    out = CaseOutcome(
        case["id"],
        group.data["file"],
        case["regime"],
        group.data["noise"],
        {},
        {lv: faulty[lv] for lv in LEVELS},
        {},
        {},
        {lv: list(static[lv]) for lv in LEVELS},
    )
    for n in lengths:
        history = _history(group, target, n)
        flaky = _flaky_ids(group, [*history, target]) if history else set()
        est_runs, true_runs, cp_runs = [], [], []
        for r in [*history, target]:
            _, view = group.view(r)
            weight = run_weight(VERSION_ORDER.index("V1") - VERSION_ORDER.index(r["version"]))
            lmap = group.maps[r["version"]]
            states = map_states(view.states, lmap)
            truth_states = map_states(
                {loc: (State.EXE if loc.line in view.truth else State.NEXE) for loc in view.states}, lmap
            )
            is_flaky_run = r["id"] in flaky and r["id"] != target["id"]
            est_runs.append(RunTrace(r["outcome"], states, weight, is_flaky_run))
            true_runs.append(RunTrace(r["outcome"], truth_states, weight, is_flaky_run))
            exits = frozenset()
            if r["id"] == target["id"] and analysis.error_frames:
                last = analysis.error_frames[-1]
                exits = frozenset(b.bid for b in analysis.blocks if b.start_line <= last.line <= b.end_line)
            cp_runs.append(
                CPRun(r["outcome"], block_states(states, block_lines), weight, exits, is_flaky_run)
            )
        ran = [loc for loc, s in fview.states.items() if s != State.NEXE]
        est = spectrum(est_runs, ran)
        tru = spectrum(true_runs, [loc for loc in fview.states if loc.line in fview.truth])
        line_scores = {
            "spectrum": scores(est, "ochiai"),
            "spectrum_true": scores(tru, "ochiai"),
            "dstar": scores(est, "dstar"),
        }
        cp = cp_scores(list(block_lines), edges, cp_runs).scores
        cp_line = {loc: cp[bid] for bid, locs in block_lines.items() if bid in cp for loc in locs}
        diff: dict[Loc, float] = {}
        passes = [r for r in history if r["test"] == target["test"] and r["outcome"] == "pass"]
        if passes and passes[-1]["version"] != "V1":
            old = {f["path"]: f["content"] for f in group.data["versions"][passes[-1]["version"]]["files"]}
            diff = {
                Loc(p, line): 1.0 for p, line in changed_lines(old, v1_files) if Loc(p, line) in fview.states
            }
        out.ranks[n] = {}
        out.samples[n] = {}
        out.channel_scores[n] = {}
        for level in LEVELS:
            order = {e: i for i, e in enumerate(static[level])}
            elem = lambda ls, lv=level: _element_scores(ls, members[lv])  # noqa: E731
            ranked = {"static": static[level]}
            for name, ls in (*line_scores.items(), ("cp", cp_line)):
                ranked[name] = _ranking(elem(ls), order, static[level])
            channels: dict[str, dict[str, float]] = {
                "static": {e: -float(i) for i, e in enumerate(static[level])}
            }
            if history:
                channels["ochiai"] = elem(line_scores["spectrum"])
                if cp_line:
                    channels["cp"] = elem(cp_line)
                if diff:
                    channels["diff"] = elem(diff)
            ranked["fused"] = static[level]  # replaced once calibrated
            out.ranks[n][level] = ranked
            out.channel_scores[n][level] = channels
            bins = channel_bins(channels, static[level])
            out.samples[n][level] = [Sample(bins[e], e in faulty[level]) for e in static[level]]
    if case["regime"] == "R1":
        hist = [_as_run(group, r) for r in runs if r["test"] == target["test"] and r["id"] < target["id"]]
        found = first_bad_version(hist, _as_run(group, target), list(VERSION_ORDER))
        out.first_bad_ok = found.first_bad == "V1" and found.last_good == "V0'"
    return out


def _element_scores(line_scores: Mapping[Loc, float], members: Mapping[str, list[Loc]]) -> dict[str, float]:
    out = {}
    for eid, locs in members.items():
        values = [line_scores[loc] for loc in locs if loc in line_scores]
        if values:
            out[eid] = max(values)
    return out


def _ranking(element_scores: Mapping[str, float], order: Mapping[str, int], elements: list[str]) -> list[str]:
    # rounded: a solver's last bits must not break ties the static order should break
    ranked = sorted(element_scores, key=lambda e: (-round(element_scores[e], 9), order.get(e, 10**9)))
    return [*ranked, *(e for e in elements if e not in element_scores)]


def split_files(files: Iterable[str]) -> tuple[set[str], set[str]]:
    """Calibration and test halves of the test files, fixed by a hash (no file in both)."""
    ordered = sorted(set(files), key=lambda f: hashlib.sha1(f.encode()).hexdigest())
    return set(ordered[0::2]), set(ordered[1::2])


def _scores(
    outcomes: Sequence[CaseOutcome], n: int, ranker: str, level: str, k: int
) -> list[tuple[float, ...]]:
    rows = []
    for o in outcomes:
        if not o.faulty[level]:
            continue
        s = rank_scores(o.ranks[n][level][ranker], o.faulty[level], k)
        rows.append((s.hit, s.ap, s.rr))
    return rows


def _bootstrap(diffs: Sequence[float], rng: random.Random, rounds: int = 1000) -> tuple[float, float]:
    if not diffs:
        return (0.0, 0.0)
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(rounds))
    return (round(means[int(0.025 * rounds)], 4), round(means[int(0.975 * rounds) - 1], 4))


def evaluate_history(
    root: Path,
    lengths: Sequence[int] = (0, 1, 3, 10, 30),
    *,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    shared: dict[tuple[str, str], tuple[Analysis, _RunView]] = {}
    groups = [_group(g, shared) for g in load_groups(root)]
    outcomes: list[CaseOutcome] = []
    for g in groups:
        for case in g.data["cases"]:
            outcomes.append(evaluate_case(g, case, lengths))
            progress(f"{len(outcomes)} {case['id']}")
    return summarize(groups, outcomes, lengths, seed=seed)


def summarize(
    groups: Sequence[_Group], outcomes: list[CaseOutcome], lengths: Sequence[int], *, seed: int = 0
) -> dict[str, Any]:
    """Calibrate on one half of the files, score every ranker on the other half."""
    calib_files, test_files = split_files(o.file for o in outcomes)
    calib = [o for o in outcomes if o.file in calib_files]
    test = [o for o in outcomes if o.file in test_files]
    calibrations = {
        level: fit(
            [s for o in calib for n in lengths for s in o.samples[n][level]],
            CHANNELS,
            cases=len(calib),
        )
        for level in LEVELS
    }
    for o in outcomes:
        for n in lengths:
            for level in LEVELS:
                fused = fuse(
                    o.channel_scores[n][level], o.elements[level], calibrations[level], o.elements[level]
                )
                o.ranks[n][level]["fused"] = [f.element for f in fused]
    rng = random.Random(seed)
    history: dict[str, Any] = {}
    ci: dict[str, Any] = {}
    for n in lengths:
        history[str(n)] = {}
        ci[str(n)] = {}
        for ranker in RANKERS:
            history[str(n)][ranker] = {}
            ci[str(n)][ranker] = {}
            for level in LEVELS:
                history[str(n)][ranker][level] = {}
                ci[str(n)][ranker][level] = {}
                for k in KS:
                    rows = _scores(test, n, ranker, level, k)
                    base = _scores(test, n, "static", level, k)
                    count = max(1, len(rows))
                    history[str(n)][ranker][level][str(k)] = {
                        "hit": round(sum(r[0] for r in rows) / count, 4),
                        "map": round(sum(r[1] for r in rows) / count, 4),
                        "mrr": round(sum(r[2] for r in rows) / count, 4),
                    }
                    ci[str(n)][ranker][level][str(k)] = {
                        "hit": _bootstrap([r[0] for r in rows], rng),
                        "hit_minus_static": _bootstrap(
                            [a[0] - b[0] for a, b in zip(rows, base, strict=True)], rng
                        ),
                    }
    return {
        "cases": len(outcomes),
        "history": history,
        "history_split": {"calibration": len(calib), "test": len(test)},
        "history_ci": ci,
        "history_regimes": _regimes(test),
        "history_features": _features(groups, outcomes),
        "calibration": {level: c.to_dict() for level, c in calibrations.items()},
    }


def _regimes(test: Sequence[CaseOutcome]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in test:
        out[o.regime] = out.get(o.regime, 0) + 1
    return out


def _features(groups: Sequence[_Group], outcomes: Sequence[CaseOutcome]) -> dict[str, Any]:
    """Flaky F1 at 15 % noise, first-bad-version accuracy (R1), signature grouping pairwise F1."""
    tp = fp = fn = 0
    predicted: dict[tuple[str, int], str] = {}
    truth: dict[tuple[str, int], str] = {}
    for g in groups:
        runs = g.data["runs"]
        by_test: dict[str, list[Run]] = {}
        for r in runs:
            prior = by_test.setdefault(r["test"], [])
            run = _as_run(g, r)
            if run.verdict in ("fail", "error"):
                if g.data["noise"] == 0.15:
                    guess = is_flaky(prior, run)
                    tp += guess and r["noise"]
                    fp += guess and not r["noise"]
                    fn += (not guess) and r["noise"]
                if r["version"] == "V1":
                    key = (g.data["id"], r["id"])
                    predicted[key] = run.err_sig or ""
                    cause = f"noise:{r['log']}" if r["noise"] else f"fault:{g.data['id']}"
                    truth[key] = cause
            prior.append(run)
    groups_f1 = pairwise_f1(predicted, truth)
    flaky_f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    r1 = [o.first_bad_ok for o in outcomes if o.first_bad_ok is not None]
    return {
        "flaky_f1_at_0.15": round(flaky_f1, 4),
        "flaky_counts": {"tp": tp, "fp": fp, "fn": fn},
        "first_bad_version_accuracy_r1": round(sum(r1) / len(r1), 4) if r1 else None,
        "first_bad_version_cases": len(r1),
        "grouping_pairwise_f1": round(groups_f1, 4),
        "grouping_failures": len(predicted),
    }


def render_history_table(report: Mapping[str, Any]) -> str:
    """Block Hit@1 and line Hit@3 per ranker and history length, with the fused-minus-static CI."""
    history = report["history"]
    rankers = list(next(iter(history.values())))
    lines = [
        f"history corpus: {report['cases']} cases, calibration {report['history_split']['calibration']},"
        f" test {report['history_split']['test']}",
        "N     " + "".join(f"{r:>15}" for r in rankers) + "   fused-static block Hit@1 (95% CI)",
    ]
    for n, per in history.items():
        cells = "".join(
            f"{per[r]['block']['1']['hit']:>7.2f}/{per[r]['line']['3']['hit']:<7.2f}" for r in rankers
        )
        lo, hi = report["history_ci"][n]["fused"]["block"]["1"]["hit_minus_static"]
        lines.append(f"{n:<6}{cells}   [{lo:+.2f}, {hi:+.2f}]")
    lines.append("cells: block Hit@1 / line Hit@3")
    lines.append("features: " + json.dumps(report["history_features"]))
    return "\n".join(lines)
