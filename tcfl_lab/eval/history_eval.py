"""Evaluate history-aware localization on the corpus with CI history (docs/design.md §8.4).

For each case (a failing run f of one test) and history length N: the N runs of the test before
f plus its siblings' runs in those CI rounds (file scope), each run's estimated trace (tplus,
from its own log and its own script version) mapped onto f's version. Rankers: ``static`` (the
heuristic ranker on f alone), ``spectrum`` (Ochiai over estimated traces; ``spectrum_true`` the
same over the true traces; ``dstar`` and ``cp`` too) and ``fused`` (calibrated log-odds of
static, Ochiai, CP and diff). Calibration and test use disjoint halves of the test files;
paired-bootstrap 95 % CIs compare each ranker with static on the same cases.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.analysis.model import Analysis, Loc, Script, State
from app.analysis.mustrun import passing_states
from app.analysis.parsed import ParseCache
from app.analysis.pipeline import analyze
from app.analysis.render import RenderedCode, render
from app.analysis.source import parse_program
from app.history.fusion import BUCKETS, Calibration, Sample, bucket, channel_bins, fit, fuse, pick_calibration
from app.history.rank import (
    FUSED_CHANNELS,
    HistoryRun,
    element_channels,
    final_order,
    line_channels,
    map_runs,
    members_of,
    select_runs,
    target_of,
)
from app.history.signatures import (
    Run,
    err_sig,
    first_bad_version,
    group_key,
    is_flaky,
    pairwise_f1,
    site_sig,
)
from app.history.values import value_tuples
from app.localize.heuristic import rank_heuristic
from tcfl_lab.eval.metrics import rank_scores
from tcfl_lab.eval.runner import faulty_elements

LEVELS = ("line", "block")
KS = (1, 3, 5)
RANKERS = ("static", "spectrum", "spectrum_true", "dstar", "cp", "fused")
# each history channel switched off, the min rule off, and the other run selections
ABLATIONS = (
    *("no_ochiai", "no_cp", "no_diff", "no_values", "no_newlines"),
    *("no_min_rule", "select_fdc", "select_similar"),
)
GROUPING_LENGTH = 10  # history length whose fused ranking names a failure's shared fault site
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
    values: dict[Loc, frozenset[tuple[str, ...]]] = field(default_factory=dict)

    @functools.cached_property
    def truth_states(self) -> dict[Loc, State]:
        """The true trace as line states over the same lines (runs share it, so it is built once)."""
        return {loc: State.EXE if loc.line in self.truth else State.NEXE for loc in self.states}


PASSING_LOGS = ("keep", "drop", "must-run")


@dataclass
class _Group:
    data: dict[str, Any]
    scripts: dict[str, list[Script]]
    files: dict[str, dict[str, str]]  # version -> {path: content}
    cache: dict[tuple[str, str], tuple[Analysis, _RunView]] = field(default_factory=dict)
    # passing runs as CI results files record them: "keep" their logs; "drop" them (no log, no
    # trace: skipped, as the store skipped them); "must-run": no log, the must-run trace instead
    passing_logs: str = "keep"
    must_run: dict[tuple[str, str], dict[Loc, State]] = field(default_factory=dict)
    parses: ParseCache = field(default_factory=ParseCache)  # every run of a version: one parse

    def pass_states(self, run: dict[str, Any]) -> dict[Loc, State]:
        """A log-less pass's trace (``passing_states``), per (version, test)."""
        key = (run["version"], run["test"])
        if key not in self.must_run:
            program = parse_program(self.scripts[run["version"]])
            self.must_run[key] = passing_states(program, run["test"])
        return self.must_run[key]

    def view(self, run: dict[str, Any]) -> tuple[Analysis, _RunView]:
        # version ids and log keys are content hashes: groups of one file share their analyses
        key = (self.data["versions"][run["version"]]["id"], run["log"])
        if key not in self.cache:
            scripts, log = self.scripts[run["version"]], self.data["logs"][run["log"]]
            analysis = analyze(scripts, log, explain=True, parses=self.parses)
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
            truth = frozenset(self.data["traces"][run["trace"]])
            self.cache[key] = (analysis, _RunView(states, truth, sig, value_tuples(analysis)))
        return self.cache[key]


def _group(
    data: dict[str, Any],
    cache: dict[tuple[str, str], tuple[Analysis, _RunView]] | None = None,
    passing_logs: str = "keep",
) -> _Group:
    scripts = {
        label: [Script(f["path"], f["content"]) for f in v["files"]] for label, v in data["versions"].items()
    }
    files = {label: {f["path"]: f["content"] for f in v["files"]} for label, v in data["versions"].items()}
    return _Group(data, scripts, files, cache if cache is not None else {}, passing_logs)


@dataclass
class CaseOutcome:
    case_id: str
    file: str
    regime: str
    noise: float
    ranks: dict[int, dict[str, dict[str, list[str]]]]  # N -> level -> ranker -> ranking
    faulty: dict[str, frozenset[str]]
    # N -> level -> run selection ("all", "fdc", "similar", "nopass") -> channel -> element scores
    channels: dict[int, dict[str, dict[str, dict[str, dict[str, float]]]]]
    own_runs: dict[int, int]  # N -> earlier runs of the test itself in that history
    elements: dict[str, list[str]]
    block_sites: dict[str, str] = field(default_factory=dict)  # blocks in shared code -> site
    err_sig: str | None = None
    first_bad_ok: bool | None = None

    def samples(self, n: int, level: str) -> list[Sample]:
        """Calibration samples: every element's bins under the history with all runs."""
        bins = channel_bins(self.channels[n][level]["all"], self.elements[level])
        return [Sample(bins[e], e in self.faulty[level]) for e in self.elements[level]]


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


def _as_run(group: _Group, r: dict[str, Any]) -> Run:
    sig = group.view(r)[1].err_sig if r["outcome"] in ("fail", "error") else None
    return Run(r["outcome"], r["version"], r["env"], sig)


def _history_runs(
    group: _Group, history: Sequence[dict[str, Any]], target: dict[str, Any], *, truth: bool
) -> list[HistoryRun]:
    """The corpus's runs as the product's history ranker receives them (own version, own trace)."""
    out = []
    for r in history:
        logless = r["outcome"] == "pass" and group.passing_logs != "keep"
        if logless and group.passing_logs == "drop":
            continue
        _, view = group.view(r)
        states = view.truth_states if truth else view.states
        if logless and not truth:
            states = group.pass_states(r)
        out.append(
            HistoryRun(
                r["outcome"],
                group.files[r["version"]],
                states,
                r["env"],
                view.err_sig,
                VERSION_ORDER.index("V1") - VERSION_ORDER.index(r["version"]),
                r["test"] == target["test"],
                {} if logless else view.values,
                log=group.data["logs"][r["log"]] if r["outcome"] == "pass" and not logless else None,
            )
        )
    return out


def evaluate_case(group: _Group, case: dict[str, Any], lengths: Sequence[int]) -> CaseOutcome:
    runs = group.data["runs"]
    target_run = runs[case["target_run"]]
    analysis, fview = group.view(target_run)
    faulty = faulty_elements(analysis, frozenset(Loc(f["path"], f["line"]) for f in case["faulty_lines"]))
    rendered = {level: render(analysis, "tplus", level) for level in LEVELS}
    members = {level: members_of(rendered[level]) for level in LEVELS}
    static = {}
    for level in LEVELS:
        elements = [e.id for e in rendered[level].elements]
        ranked = [s.element.id for s in rank_heuristic(analysis, rendered[level], max(1, len(elements)))]
        static[level] = [*ranked, *(e for e in elements if e not in ranked)]
    target = target_of(analysis, fview.states)
    target_true = target.with_states(fview.truth_states)
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
        err_sig=fview.err_sig,
    )
    for n in lengths:
        history = _history(group, target_run, n)
        mapped = map_runs(target, _history_runs(group, history, target_run, truth=False))
        mapped_true = map_runs(target_true, _history_runs(group, history, target_run, truth=True))
        out.own_runs[n] = sum(r.same_test for r in mapped)
        lines = {
            "all": line_channels(target, mapped),
            "nopass": line_channels(target, mapped, passes=False),
            "fdc": line_channels(target, select_runs(target, mapped, "fdc")),
            "similar": line_channels(target, select_runs(target, mapped, "similar")),
        }
        true_lines = line_channels(target_true, mapped_true)
        out.ranks[n] = {}
        out.channels[n] = {}
        for level in LEVELS:
            order = {e: i for i, e in enumerate(static[level])}
            ranked = {"static": static[level]}
            every = element_channels(lines["all"], members[level], static[level], ("ochiai", "dstar", "cp"))
            truth_scores = element_channels(true_lines, members[level], static[level], ("ochiai",))
            for name, scores_ in (
                ("spectrum", every.get("ochiai", {})),
                ("spectrum_true", truth_scores.get("ochiai", {})),
                ("dstar", every.get("dstar", {})),
                ("cp", every.get("cp", {})),
            ):
                ranked[name] = _ranking(scores_, order, static[level])
            out.ranks[n][level] = ranked
            out.channels[n][level] = {
                name: (
                    element_channels(ls, members[level], static[level])
                    if history
                    else {"static": {e: -float(i) for i, e in enumerate(static[level])}}
                )
                for name, ls in lines.items()
            }
    if case["regime"] == "R1":
        hist = [
            _as_run(group, r) for r in runs if r["test"] == target_run["test"] and r["id"] < target_run["id"]
        ]
        found = first_bad_version(hist, _as_run(group, target_run), list(VERSION_ORDER))
        out.first_bad_ok = found.first_bad == "V1" and found.last_good == "V0'"
    out.block_sites = _block_sites(analysis, rendered["block"])
    return out


def _block_sites(analysis: Analysis, rendered: RenderedCode) -> dict[str, str]:
    """Block elements inside shared code (a helper or ``setUp``, not a test method): their sites."""
    names = {f.fid: f.name for f in analysis.program.functions}
    out = {}
    for e in rendered.elements:
        fids = {
            b.function
            for b in analysis.blocks
            if b.path == e.path and b.start_line <= e.start_line <= b.end_line
        }
        if fids and not any(
            names.get(f, "test").startswith("test") or names.get(f) == "module" for f in fids
        ):
            out[e.id] = site_sig(e.code)
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


def _bootstrap(diffs: Sequence[float], rng: np.random.Generator, rounds: int = 1000) -> tuple[float, float]:
    if not diffs:
        return (0.0, 0.0)
    values = np.asarray(diffs, dtype=float)
    means = np.sort(rng.choice(values, size=(rounds, len(values))).mean(axis=1))
    return (round(float(means[int(0.025 * rounds)]), 4), round(float(means[int(0.975 * rounds) - 1]), 4))


def evaluate_history(
    root: Path,
    lengths: Sequence[int] = (0, 1, 3, 10, 30),
    *,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _: None,
    passing_logs: str = "keep",
) -> dict[str, Any]:
    """``passing_logs`` (PASSING_LOGS) simulates CI results files, whose passes carry no log."""
    if passing_logs not in PASSING_LOGS:
        raise ValueError(f"passing_logs must be one of {', '.join(PASSING_LOGS)}")
    shared: dict[tuple[str, str], tuple[Analysis, _RunView]] = {}
    groups = [_group(g, shared, passing_logs) for g in load_groups(root)]
    outcomes: list[CaseOutcome] = []
    for g in groups:
        for case in g.data["cases"]:
            outcomes.append(evaluate_case(g, case, lengths))
            progress(f"{len(outcomes)} {case['id']}")
    return summarize(groups, outcomes, lengths, seed=seed)


def state_weights(groups: Sequence[_Group]) -> dict[str, dict[str, float]]:
    """P(truly ran | estimated state, verdict) over the distinct runs the evaluation analysed."""
    counts: dict[tuple[str, str], list[int]] = {}
    for g in groups:
        seen = set()
        for r in g.data["runs"]:
            key = (g.data["versions"][r["version"]]["id"], r["log"])
            if key in seen or key not in g.cache:
                continue
            seen.add(key)
            view = g.cache[key][1]
            verdict = "pass" if r["outcome"] == "pass" else "fail"
            for loc, state in view.states.items():
                row = counts.setdefault((verdict, state.name), [0, 0])
                row[0] += loc.line in view.truth
                row[1] += 1
    out: dict[str, dict[str, float]] = {}
    for (verdict, state), (ran, total) in sorted(counts.items()):
        out.setdefault(verdict, {})[state] = round(ran / total, 4)
    return out


def calibrate(outcomes: Sequence[CaseOutcome], lengths: Sequence[int]) -> dict[str, Calibration]:
    """``level@bucket`` -> calibration from the cases' histories of that length bucket."""
    out = {}
    for level in LEVELS:
        for b in BUCKETS:
            samples = [
                s
                for o in outcomes
                for n in lengths
                if n > 0 and bucket(o.own_runs[n]) == b
                for s in o.samples(n, level)
            ]
            out[f"{level}@{b}"] = fit(samples, FUSED_CHANNELS, cases=len(outcomes))
    return out


def _fused(
    channels: Mapping[str, Mapping[str, Mapping[str, float]]],
    elements: list[str],
    calibration: Calibration,
    *,
    selection: str = "all",
    drop: str | None = None,
    min_rule: bool = True,
) -> list[str]:
    """The fused order the product ranker gives (with the min rule), or one of its ablations."""

    def order(view: str) -> list[str]:
        kept = {c: v for c, v in channels[view].items() if c != drop}
        return [f.element for f in fuse(kept, elements, calibration, elements)]

    with_passes = order(selection)
    return final_order(with_passes, order("nopass")) if min_rule else with_passes


def _fuse_all(
    outcomes: Sequence[CaseOutcome], lengths: Sequence[int], calibrations: Mapping[str, Calibration]
) -> None:
    variants: dict[str, dict[str, Any]] = {
        "fused": {},
        "no_ochiai": {"drop": "ochiai"},
        "no_cp": {"drop": "cp"},
        "no_diff": {"drop": "diff"},
        "no_values": {"drop": "values"},
        "no_newlines": {"drop": "newlines"},
        "no_min_rule": {"min_rule": False},
        "select_fdc": {"selection": "fdc"},
        "select_similar": {"selection": "similar"},
    }
    for o in outcomes:
        for n in lengths:
            for level in LEVELS:
                calibration = pick_calibration(calibrations, level, o.own_runs[n])
                for name, kw in variants.items():
                    o.ranks[n][level][name] = _fused(
                        o.channels[n][level], o.elements[level], calibration, **kw
                    )


def _table(
    test: Sequence[CaseOutcome],
    lengths: Sequence[int],
    rankers: Sequence[str],
    rng: np.random.Generator | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    history: dict[str, Any] = {}
    ci: dict[str, Any] = {}
    for n in lengths:
        history[str(n)] = {}
        ci[str(n)] = {}
        for ranker in rankers:
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
                    if rng is None:
                        continue
                    ci[str(n)][ranker][level][str(k)] = {
                        "hit": _bootstrap([r[0] for r in rows], rng),
                        "hit_minus_static": _bootstrap(
                            [a[0] - b[0] for a, b in zip(rows, base, strict=True)], rng
                        ),
                    }
    return history, ci


def summarize(
    groups: Sequence[_Group], outcomes: list[CaseOutcome], lengths: Sequence[int], *, seed: int = 0
) -> dict[str, Any]:
    """Calibrate on one half of the files, score every ranker on the other half."""
    calib_files, test_files = split_files(o.file for o in outcomes)
    calib = [o for o in outcomes if o.file in calib_files]
    test = [o for o in outcomes if o.file in test_files]
    calibrations = calibrate(calib, lengths)
    _fuse_all(outcomes, lengths, calibrations)
    history, ci = _table(test, lengths, RANKERS, np.random.default_rng(seed))
    ablations, _ = _table(test, lengths, ("fused", *ABLATIONS), None)
    by_regime = {
        regime: _table([o for o in test if o.regime == regime], lengths, ("static", "fused"), None)[0]
        for regime in sorted({o.regime for o in test})
    }
    return {
        "cases": len(outcomes),
        "history": history,
        "history_split": {"calibration": len(calib), "test": len(test)},
        "history_ci": ci,
        "history_ablations": ablations,
        "history_by_regime": by_regime,
        "history_regimes": _regimes(test),
        "history_features": _features(groups, outcomes, lengths),
        "state_weights": state_weights([g for g in groups if g.data["file"] in calib_files]),
        "calibration": {key: c.to_dict() for key, c in calibrations.items()},
    }


def _regimes(test: Sequence[CaseOutcome]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in test:
        out[o.regime] = out.get(o.regime, 0) + 1
    return out


def _features(
    groups: Sequence[_Group], outcomes: Sequence[CaseOutcome], lengths: Sequence[int]
) -> dict[str, Any]:
    """Flaky F1 at 15 % noise, first-bad-version accuracy (R1), signature grouping pairwise F1.

    Grouping keys a failure by its shared fault site where the fused ranking (at 10 runs) of the
    case with its error signature puts the fault in shared code, else by the error signature.
    """
    n_group = max((n for n in lengths if n <= GROUPING_LENGTH), default=max(lengths))
    sites: dict[tuple[str, str | None], str] = {}
    for o in outcomes:
        top = o.ranks[n_group]["block"]["fused"][:1]
        if top and top[0] in o.block_sites:
            sites[(o.case_id.split("--")[0], o.err_sig)] = o.block_sites[top[0]]
    tp = fp = fn = 0
    predicted: dict[tuple[str, int], str] = {}
    by_sig: dict[tuple[str, int], str] = {}
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
                    by_sig[key] = run.err_sig or ""
                    predicted[key] = group_key(run.err_sig or "", sites.get((g.data["id"], run.err_sig)))
                    truth[key] = f"noise:{r['log']}" if r["noise"] else f"fault:{g.data['id']}"
            prior.append(run)
    flaky_f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    r1 = [o.first_bad_ok for o in outcomes if o.first_bad_ok is not None]
    return {
        "flaky_f1_at_0.15": round(flaky_f1, 4),
        "flaky_counts": {"tp": tp, "fp": fp, "fn": fn},
        "first_bad_version_accuracy_r1": round(sum(r1) / len(r1), 4) if r1 else None,
        "first_bad_version_cases": len(r1),
        "grouping_pairwise_f1": round(pairwise_f1(predicted, truth), 4),
        "grouping_pairwise_f1_err_sig_only": round(pairwise_f1(by_sig, truth), 4),
        "grouping_failures": len(predicted),
    }


def render_history_table(report: Mapping[str, Any]) -> str:
    """Block Hit@1 / line Hit@3 per ranker and history length, the fused-minus-static CI, the
    ablations (each history channel off, the min rule off, other run selections), the features."""
    history = report["history"]
    rankers = list(next(iter(history.values())))
    lines = [
        f"history corpus: {report['cases']} cases, calibration {report['history_split']['calibration']},"
        f" test {report['history_split']['test']} ({json.dumps(report.get('history_regimes', {}))})",
        "N     " + "".join(f"{r:>15}" for r in rankers) + "   fused-static block Hit@1 (95% CI)",
    ]
    for n, per in history.items():
        cells = "".join(
            f"{per[r]['block']['1']['hit']:>7.2f}/{per[r]['line']['3']['hit']:<7.2f}" for r in rankers
        )
        lo, hi = report["history_ci"][n]["fused"]["block"]["1"]["hit_minus_static"]
        lines.append(f"{n:<6}{cells}   [{lo:+.2f}, {hi:+.2f}]")
    lines.append("cells: block Hit@1 / line Hit@3")
    ablations = report.get("history_ablations")
    if ablations:
        names = list(next(iter(ablations.values())))
        lines.append("ablations (block Hit@1 / line Hit@3):")
        lines.append("N     " + "".join(f"{r:>15}" for r in names))
        for n, per in ablations.items():
            lines.append(
                f"{n:<6}"
                + "".join(
                    f"{per[r]['block']['1']['hit']:>7.2f}/{per[r]['line']['3']['hit']:<7.2f}" for r in names
                )
            )
    for regime, per in report.get("history_by_regime", {}).items():
        cells = "  ".join(
            f"N={n} {v['static']['block']['1']['hit']:.2f}->{v['fused']['block']['1']['hit']:.2f}"
            for n, v in per.items()
        )
        lines.append(f"{regime} block Hit@1 static->fused: {cells}")
    lines.append("features: " + json.dumps(report["history_features"]))
    return "\n".join(lines)
