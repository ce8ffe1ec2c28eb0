"""Learning the built-in ranker's weights from cases (research harness; numpy is fine here).

Pairwise logistic regression (RankNet): per case and level, every pair (faulty element,
non-faulty element) should score the faulty one higher; each case weighs 1 in total (a pair
weighs 1 / the case's pairs), L2-regularised, fitted by Newton's method (projected onto
non-negative weights when asked). Features come from ``app.localize.features``, computed once
per case and level, so leave-one-repository-out folds, ablations and learning curves only refit.
Rankings are scored exactly as triage scores them (``rank_table``, the safety rule included) and
with the paper's Hit@k and AP@k (``tcfl_lab.eval.metrics``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.channels import Context
from app.localize.evidence import HEURISTIC_CHANNELS
from app.localize.features import CONTEXTS, FEATURES, ChannelTable, channel_table, feature_channel, features
from app.localize.heuristic import rank_stacktrace, rank_table
from app.localize.model_file import WEIGHTS, LevelModel, RankerModel, handset_level
from tcfl_lab.eval.cases import CaseError, parse_case
from tcfl_lab.eval.channels import Scores
from tcfl_lab.eval.metrics import rank_scores
from tcfl_lab.eval.runner import faulty_elements

LEARN_LEVELS: tuple[str, ...] = ("function", "block", "line")
DEPTH = 5  # MAP@5, and the stack-trace ranking kept
DEFAULT_L2 = 0.01
CURVE_SIZES: tuple[int, ...] = (0, 5, 10, 20, 40, 80, 160, 320)
# free-text fault kinds bucketed by the first keyword found (in this order)
KIND_BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("timing", ("timeout", "wait", "sleep", "poll", "retry", "race", "timing")),
    ("none/attribute", ("none", "null", "attribute", "attr")),
    ("import/module", ("import", "module")),
    ("cleanup/setup", ("cleanup", "teardown", "setup", "fixture")),
    ("condition/logic", ("condition", "compar", "branch", "logic", "falsy", "operator", "negat")),
    ("check/expectation", ("assert", "expect", "check", "regex")),
    ("wrong name/value", ("name", "variable", "value", "constant", "literal", "typo", "argument", "key")),
)


@dataclass(frozen=True)
class LevelData:
    table: ChannelTable
    rows: tuple[dict[str, float], ...]  # per element, its non-zero features
    ids: tuple[str, ...]
    faulty: frozenset[str]  # element ids owning a faulty line
    stacktrace: tuple[str, ...]  # the stack-trace baseline's top DEPTH ids


@dataclass(frozen=True)
class LearnCase:
    id: str
    repo: str
    fault_kind: str | None
    levels: dict[str, LevelData]  # levels with a faulty element only


@dataclass(frozen=True)
class Corpus:
    cases: list[LearnCase]
    excluded: list[str]  # hand_check verdict other than "right"
    problems: list[str]  # unreadable or unanalyzable files


def _case_files(sources: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for source in sources:
        if source.is_file():
            files.append(source)
        elif source.is_dir():
            files.extend(sorted(p for p in source.rglob("*.json") if p.name != "index.json"))
        else:
            raise FileNotFoundError(f"{source} is neither a case file nor a folder")
    return files


def load_corpus(
    sources: Iterable[Path],
    *,
    levels: Sequence[str] = LEARN_LEVELS,
    progress: Callable[[int, int, str], None] = lambda *_: None,
    records: Sequence[dict[str, Any]] = (),
) -> Corpus:
    """Every case under ``sources`` (and each case given as decoded JSON in ``records``: failures
    marked on the dashboard) analysed once, its features per level computed once."""
    files: list[Path | dict[str, Any]] = [*_case_files(sources), *records]
    cases: list[LearnCase] = []
    excluded: list[str] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, path in enumerate(files, start=1):
        try:
            data = path if isinstance(path, dict) else json.loads(path.read_text(encoding="utf-8"))
            case = parse_case(data, fallback_id=path.stem if isinstance(path, Path) else "case")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, CaseError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        progress(number, len(files), case.id)
        check = data.get("hand_check")
        if isinstance(check, dict) and check.get("verdict") != "right":
            excluded.append(case.id)
            continue
        if case.id in seen:
            problems.append(f"{path}: duplicate case id {case.id!r}; skipped")
            continue
        seen.add(case.id)
        repo = data.get("repo") if isinstance(data.get("repo"), str) and data.get("repo") else None
        try:
            analysis = analyze(case.scripts, case.log, log_functions=case.log_functions, explain=False)
            truth = faulty_elements(analysis, case.faulty)
            context = Context.build(analysis, "tplus")
            by_level: dict[str, LevelData] = {}
            for level in levels:
                rendered = render(analysis, "tplus", level)
                if not truth[level] or not rendered.elements:
                    continue
                table = channel_table(analysis, rendered, context=context)
                stack = rank_stacktrace(analysis, rendered, DEPTH, context=context)
                by_level[level] = LevelData(
                    table=table,
                    rows=tuple(features(row, table.context) for row in table.elements),
                    ids=tuple(e.id for e in rendered.elements),
                    faulty=truth[level],
                    stacktrace=tuple(s.element.id for s in stack),
                )
        except Exception as exc:  # one broken case must not stop learning
            problems.append(f"{path}: analysis failed: {type(exc).__name__}: {exc}")
            continue
        kind = data.get("fault_kind")
        cases.append(
            LearnCase(
                case.id, repo or case.id.split("-")[0], kind if isinstance(kind, str) else None, by_level
            )
        )
    return Corpus(cases, excluded, problems)


# --- fitting -------------------------------------------------------------------------------------


def _pairs(
    cases: Sequence[LearnCase], level: str, names: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Difference rows (faulty - other) and their weights; identical other rows are merged."""
    column = {n: i for i, n in enumerate(names)}
    diffs: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    used = 0
    for case in cases:
        data = case.levels.get(level)
        if data is None:
            continue
        x = np.zeros((len(data.rows), len(names)))
        for i, row in enumerate(data.rows):
            for name, value in row.items():
                if name in column:
                    x[i, column[name]] = value
        bad = np.array([eid in data.faulty for eid in data.ids])
        if bad.all() or not bad.any():
            continue
        others, counts = np.unique(x[~bad], axis=0, return_counts=True)
        pairs = int(bad.sum()) * int((~bad).sum())
        for row in x[bad]:
            diffs.append(row[None, :] - others)
            weights.append(counts / pairs)
        used += 1
    if not diffs:
        return np.zeros((0, len(names))), np.zeros(0), 0
    return np.vstack(diffs), np.concatenate(weights), used


def fit_weights(
    diffs: np.ndarray,
    weights: np.ndarray,
    cases: int,
    *,
    l2: float,
    nonneg: bool,
    prior: np.ndarray | None = None,
    iterations: int = 50,
) -> np.ndarray:
    """Minimise mean-over-cases pairwise logistic loss + l2/2 |w - prior|^2 by (projected) Newton steps."""
    dims = diffs.shape[1]
    w0 = np.zeros(dims) if prior is None else prior
    w = w0.copy() if not nonneg else np.maximum(w0, 0.0)
    if cases == 0:
        return w
    scale = 1.0 / cases

    def loss(v: np.ndarray) -> float:
        return float(scale * weights @ np.logaddexp(0.0, -(diffs @ v)) + 0.5 * l2 * (v - w0) @ (v - w0))

    current = loss(w)
    for _ in range(iterations):
        margin = diffs @ w
        p = 1.0 / (1.0 + np.exp(np.clip(margin, -50, 50)))  # sigma(-margin)
        grad = -scale * diffs.T @ (weights * p) + l2 * (w - w0)
        free = np.ones(dims, dtype=bool) if not nonneg else ~((w <= 0) & (grad > 0))
        if not free.any():
            break
        h = scale * (diffs[:, free].T * (weights * p * (1 - p))) @ diffs[:, free] + l2 * np.eye(free.sum())
        step = np.zeros(dims)
        step[free] = np.linalg.solve(h, -grad[free])
        t = 1.0
        while t > 1e-6:
            trial = w + t * step
            if nonneg:
                trial = np.maximum(trial, 0.0)
            value = loss(trial)
            if value <= current - 1e-12 or t < 2e-6:
                break
            t *= 0.5
        if value > current - 1e-10:
            break
        w, current = trial, value
    return w


def fit_level(
    cases: Sequence[LearnCase],
    level: str,
    *,
    l2: float = DEFAULT_L2,
    nonneg: bool = False,
    names: Sequence[str] = FEATURES,
    prior: str = "zero",
) -> LevelModel:
    """A level's model fitted on ``cases`` (features outside ``names`` weigh 0); L2 pulls the weights
    towards 0 (``prior`` "zero") or towards the hand-set weights ("handset": few cases change little)."""
    diffs, weights, used = _pairs(cases, level, names)
    start = handset_level().weights if prior == "handset" else {}
    w0 = np.array([start.get(n, 0.0) for n in names])
    w = fit_weights(diffs, weights, used, l2=l2, nonneg=nonneg, prior=w0)
    return LevelModel({n: float(v) for n, v in zip(names, w, strict=True) if v != 0})


def fit_model(
    cases: Sequence[LearnCase],
    levels: Sequence[str],
    *,
    l2: float = DEFAULT_L2,
    nonneg: bool = False,
    prior: str = "zero",
) -> RankerModel:
    """A model file: ``levels`` fitted on ``cases``, the other levels with the hand-set weights."""
    fitted = {
        level: fit_level(cases, level, l2=l2, nonneg=nonneg, prior=prior)
        if level in levels
        else handset_level()
        for level in LEARN_LEVELS
    }
    return RankerModel(
        fitted,
        trained_on={
            "repos": sorted({c.repo for c in cases}),
            "cases": len(cases),
            "date": date.today().isoformat(),
            "levels": list(levels),
            "l2": l2,
            "nonneg": nonneg,
            "prior": prior,
        },
        objective=(
            f"pairwise logistic (RankNet) over (faulty, other) element pairs, each case weighted equally,"
            f" L2 {l2} towards {prior}{', weights >= 0' if nonneg else ''}"
        ),
        source="learned",
    )


# --- scoring -------------------------------------------------------------------------------------

Scorer = Callable[[LevelData], Sequence[str]]


def learned_scorer(model: LevelModel) -> Scorer:
    def ranking(data: LevelData) -> list[str]:
        ranked = rank_table(
            data.table, model.channel_weights(data.table.context), safety=True, priors=model.prior_weights()
        )
        return [s.element.id for s in ranked[:DEPTH]]

    return ranking


def handset_ranking(data: LevelData) -> list[str]:
    return [s.element.id for s in rank_table(data.table, WEIGHTS, safety=False)[:DEPTH]]


def stacktrace_ranking(data: LevelData) -> list[str]:
    return list(data.stacktrace)


def case_scores(cases: Sequence[LearnCase], level: str, scorer: Scorer) -> list[tuple[float, float, float]]:
    """Per case with a fault at ``level``: (Hit@1, Hit@3, AP@5)."""
    out = []
    for case in cases:
        data = case.levels.get(level)
        if data is None:
            continue
        ranking = scorer(data)
        out.append(
            (
                rank_scores(ranking, data.faulty, 1).hit,
                rank_scores(ranking, data.faulty, 3).hit,
                rank_scores(ranking, data.faulty, DEPTH).ap,
            )
        )
    return out


def summarize(items: Sequence[tuple[float, float, float]]) -> Scores:
    if not items:
        return Scores(0.0, 0.0, 0.0, 0)
    return Scores(
        fmean(i[0] for i in items), fmean(i[1] for i in items), fmean(i[2] for i in items), len(items)
    )


def macro(scores: Iterable[Scores]) -> Scores:
    items = [s for s in scores if s.cases]
    if not items:
        return Scores(0.0, 0.0, 0.0, 0)
    return Scores(
        fmean(s.hit1 for s in items),
        fmean(s.hit3 for s in items),
        fmean(s.map5 for s in items),
        sum(s.cases for s in items),
    )


# --- leave one repository out --------------------------------------------------------------------

RANKINGS = ("learned", "handset", "stacktrace")


def fault_bucket(kind: str | None) -> str:
    """A free-text fault kind's bucket (first keyword matched), ``unknown`` without one."""
    if not kind:
        return "unknown"
    text = kind.lower()
    for bucket, words in KIND_BUCKETS:
        if any(w in text for w in words):
            return bucket
    return "other"


def loro(
    cases: Sequence[LearnCase],
    *,
    level: str = "block",
    l2: float = DEFAULT_L2,
    names: Sequence[str] = FEATURES,
    prior: str = "zero",
    nonneg: bool = False,
) -> dict[str, Any]:
    """Leave one repository out: per repository, models fitted on the others' cases, scored on its own."""
    repos = sorted({c.repo for c in cases})
    folds = []
    per_case: dict[str, dict[str, list[tuple[str, tuple[float, float, float]]]]] = {r: {} for r in RANKINGS}
    for repo in repos:
        test = [c for c in cases if c.repo == repo]
        train = [c for c in cases if c.repo != repo]
        scorers: dict[str, Scorer] = {
            "learned": learned_scorer(
                fit_level(train, level, l2=l2, nonneg=nonneg, names=names, prior=prior)
            ),
            "handset": handset_ranking,
            "stacktrace": stacktrace_ranking,
        }
        fold: dict[str, Any] = {
            "repo": repo,
            "train_repos": sorted({c.repo for c in train}),
            "train_cases": [c.id for c in train],
            "test_cases": [c.id for c in test],
        }
        for name, scorer in scorers.items():
            scored = [(c.fault_kind or "", s) for c in test for s in case_scores([c], level, scorer)]
            per_case[name][repo] = scored
            fold[name] = summarize([s for _, s in scored]).to_dict()
        fold["cases"] = fold["handset"]["cases"]
        folds.append(fold)
    overall = {}
    for name in RANKINGS:
        every = [s for repo in repos for _, s in per_case[name][repo]]
        overall[name] = {
            "micro": summarize(every).to_dict(),
            "macro": macro(summarize([s for _, s in per_case[name][r]]) for r in repos).to_dict(),
        }
    kinds: dict[str, dict[str, Any]] = {}
    for name in RANKINGS:
        buckets: dict[str, list[tuple[float, float, float]]] = {}
        for repo in repos:
            for kind, s in per_case[name][repo]:
                buckets.setdefault(fault_bucket(kind), []).append(s)
        for bucket, items in buckets.items():
            kinds.setdefault(bucket, {})[name] = summarize(items).to_dict()
    return {
        "level": level,
        "l2": l2,
        "prior": prior,
        "nonneg": nonneg,
        "folds": folds,
        "overall": overall,
        "fault_kinds": kinds,
    }


def channel_ablation(
    cases: Sequence[LearnCase],
    *,
    level: str = "block",
    l2: float = DEFAULT_L2,
    prior: str = "zero",
    nonneg: bool = False,
) -> dict[str, dict[str, Any]]:
    """LORO micro scores of the learned model with each channel's columns removed in turn."""
    fit = {"level": level, "l2": l2, "prior": prior, "nonneg": nonneg}
    out = {"all channels": loro(cases, **fit)["overall"]["learned"]["micro"]}  # type: ignore[arg-type]
    for channel in HEURISTIC_CHANNELS:
        name = str(channel)
        kept = [f for f in FEATURES if feature_channel(f) != name]
        out[f"-{name}"] = loro(cases, names=kept, **fit)["overall"]["learned"]["micro"]  # type: ignore[arg-type]
    return out


def learning_curve(
    cases: Sequence[LearnCase],
    repo: str,
    *,
    level: str = "block",
    l2: float = DEFAULT_L2,
    sizes: Sequence[int] = CURVE_SIZES,
    draws: int = 5,
    seed: int = 0,
    prior: str = "zero",
    nonneg: bool = False,
) -> list[dict[str, Any]]:
    """Hit@1 on the rest of ``repo`` with n of its cases added to the other repositories' training set."""
    own = [c for c in cases if c.repo == repo and level in c.levels]
    if not own:
        raise ValueError(f"no case of repository {repo!r} has a fault at {level} level")
    others = [c for c in cases if c.repo != repo]
    rng = random.Random(seed)
    points = []
    for n in sizes:
        if n >= len(own):
            break
        mixed, alone = [], []
        for _ in range(draws if n else 1):
            chosen = set(rng.sample(range(len(own)), n))
            added = [c for i, c in enumerate(own) if i in chosen]
            rest = [c for i, c in enumerate(own) if i not in chosen]
            model = fit_level([*others, *added], level, l2=l2, prior=prior, nonneg=nonneg)
            mixed.append(summarize(case_scores(rest, level, learned_scorer(model))).hit1)
            if n:
                alone.append(
                    summarize(
                        case_scores(
                            rest,
                            level,
                            learned_scorer(fit_level(added, level, l2=l2, prior=prior, nonneg=nonneg)),
                        )
                    ).hit1
                )
        points.append(
            {
                "n": n,
                "draws": len(mixed),
                "hit@1": round(fmean(mixed), 4),
                "hit@1_min": round(min(mixed), 4),
                "hit@1_max": round(max(mixed), 4),
                "hit@1_repo_only": round(fmean(alone), 4) if alone else None,
                "handset_hit@1": round(summarize(case_scores(own, level, handset_ranking)).hit1, 4),
            }
        )
    return points


# --- text ----------------------------------------------------------------------------------------


def _cells(s: dict[str, Any]) -> str:
    return f"{100 * s['hit@1']:>6.1f}{100 * s['hit@3']:>6.1f}{100 * s['map@5']:>6.1f}"


def render_loro(report: dict[str, Any]) -> str:
    names = ("learned", "handset", "stacktrace")
    head = f"{'repository':<36}{'cases':>6}" + "".join(f" |{name:^18}  " for name in names)
    sub = f"{'':<42}" + f" |{'H@1':>6}{'H@3':>6}{'MAP@5':>6}  " * len(names)
    lines = [
        f"leave-one-repository-out, {report['level']} level, L2 {report['l2']} towards {report['prior']}"
        + (", weights >= 0" if report.get("nonneg") else ""),
        head,
        sub,
        "-" * len(sub),
    ]
    for fold in report["folds"]:
        row = f"{fold['repo'][:36]:<36}{fold['cases']:>6}"
        for name in ("learned", "handset", "stacktrace"):
            row += " |" + _cells(fold[name]) + "  "
        lines.append(row)
    lines.append("-" * len(sub))
    overall = report["overall"]
    for avg in ("micro", "macro"):
        row = f"{'overall (' + avg + ')':<36}{overall['handset'][avg]['cases']:>6}"
        for name in ("learned", "handset", "stacktrace"):
            row += " |" + _cells(overall[name][avg]) + "  "
        lines.append(row)
    if report.get("fault_kinds"):
        lines += ["", f"{'fault kind':<36}{'cases':>6}"]
        for bucket, by in sorted(report["fault_kinds"].items(), key=lambda kv: -kv[1]["handset"]["cases"]):
            row = f"{bucket:<36}{by['handset']['cases']:>6}"
            for name in ("learned", "handset", "stacktrace"):
                row += " |" + _cells(by[name]) + "  "
            lines.append(row)
    return "\n".join(lines)


def render_ablation(table: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'LORO ablation (learned)':<28}{'H@1':>6}{'H@3':>6}{'MAP@5':>6}"]
    lines += [f"{row:<28}{_cells(s)}" for row, s in table.items()]
    return "\n".join(lines)


def render_curve(repo: str, points: Sequence[dict[str, Any]]) -> str:
    lines = [
        f"learning curve for {repo}: Hit@1 on its other cases",
        f"{'n':>5}{'draws':>6}{'mixed':>8}{'min':>7}{'max':>7}{'alone':>8}{'handset':>9}",
    ]
    for p in points:
        alone = "-" if p["hit@1_repo_only"] is None else f"{100 * p['hit@1_repo_only']:.1f}"
        lines.append(
            f"{p['n']:>5}{p['draws']:>6}{100 * p['hit@1']:>8.1f}{100 * p['hit@1_min']:>7.1f}"
            f"{100 * p['hit@1_max']:>7.1f}{alone:>8}{100 * p['handset_hit@1']:>9.1f}"
        )
    return "\n".join(lines)


__all__ = [
    "CONTEXTS",
    "Corpus",
    "LearnCase",
    "channel_ablation",
    "fit_level",
    "fit_model",
    "fit_weights",
    "learning_curve",
    "load_corpus",
    "loro",
]
