"""Learners and features tried beside the shipped linear ranker, on the same LORO folds.

Reproduces the "Other learners and features" figures of the README (block level, leave one
repository out over the mined corpus's right cases, scored as ``tcfl learn --loro`` scores: ties
in source order, the stack trace's first element held in the top 3). Each variant refits on the
other repositories' cases and ranks the held-out one's; none is shipped, as none beats the linear
model (``python scripts/learner_alternatives.py [--only NAME ...]``; the trees take ~40 min; the
LambdaRank variants run where LightGBM is installed, ``pip install lightgbm``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.localize.features import CHANNEL_FEATURES, CONTEXTS, FEATURES  # noqa: E402
from app.localize.heuristic import SAFETY_RANK  # noqa: E402
from app.localize.model_file import handset_level  # noqa: E402
from tcfl_lab.eval.learn import LearnCase, LevelData, fit_weights, load_corpus  # noqa: E402

Row = dict[str, float]
Extra = Callable[[LearnCase, LevelData], list[Row]]
# per case: repository, features (elements x columns), faulty mask, the stack trace's element
Case = tuple[str, np.ndarray, np.ndarray, int | None]
Model = Any
Fit = Callable[[list[Case]], Model]
Score = Callable[[Model, np.ndarray], np.ndarray]
L2 = 0.003  # the shipped configuration: L2 towards the hand-set weights, weights >= 0


def matrices(cases: Sequence[LearnCase], names: Sequence[str], extra: Extra | None = None) -> list[Case]:
    column = {n: i for i, n in enumerate(names)}
    out: list[Case] = []
    for case in cases:
        data = case.levels["block"]
        rows = data.rows if extra is None else extra(case, data)
        x = np.zeros((len(rows), len(names)))
        for i, row in enumerate(rows):
            for name, value in row.items():
                if name in column:
                    x[i, column[name]] = value
        bad = np.array([e in data.faulty for e in data.ids])
        out.append((case.repo, x, bad, data.table.innermost))
    return out


def case_pairs(case: Case) -> tuple[np.ndarray, np.ndarray] | None:
    """Difference rows (faulty - other, identical others merged) and weights summing to 1."""
    _, x, bad, _ = case
    if bad.all() or not bad.any():
        return None
    others, counts = np.unique(x[~bad], axis=0, return_counts=True)
    n = int(bad.sum()) * int((~bad).sum())
    return np.vstack([row[None, :] - others for row in x[bad]]), np.concatenate([counts / n for _ in x[bad]])


def linear(names: Sequence[str], reweight: float = 0.0, scale: dict[str, float] | None = None) -> Fit:
    """The shipped objective; ``reweight``: refit twice with the wrongly ordered pairs weighing
    1 + reweight; ``scale``: a column's L2 multiplied by it (new columns regularised apart)."""
    start = handset_level().weights
    s = np.array([1.0 / np.sqrt((scale or {}).get(n, 1.0)) for n in names])
    w0 = np.array([start.get(n, 0.0) for n in names]) / s

    def fit(train: list[Case]) -> np.ndarray:
        got = [p for p in map(case_pairs, train) if p is not None]
        d = np.vstack([g[0] for g in got]) * s
        wt = np.concatenate([g[1] for g in got])
        w = fit_weights(d, wt, len(got), l2=L2, nonneg=True, prior=w0)
        for _ in range(2 if reweight else 0):
            w = fit_weights(d, wt * (1 + reweight * (d @ w <= 0)), len(got), l2=L2, nonneg=True, prior=w0)
        return w * s

    return fit


def rank(scores: np.ndarray, innermost: int | None) -> list[int]:
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    if innermost is not None and order.index(innermost) >= SAFETY_RANK:
        order.remove(innermost)
        order.insert(SAFETY_RANK - 1, innermost)
    return order


def loro(cases: list[Case], fit: Fit, score: Score = lambda w, x: x @ w) -> tuple[float, float]:
    hits: list[tuple[bool, bool]] = []
    for repo in sorted({c[0] for c in cases}):
        model = fit([c for c in cases if c[0] != repo])
        for _, x, bad, innermost in (c for c in cases if c[0] == repo):
            order = rank(score(model, x), innermost)
            hits.append((bool(bad[order[0]]), bool(bad[order[:3]].any())))
    return 100 * float(np.mean([h[0] for h in hits])), 100 * float(np.mean([h[1] for h in hits]))


# --- listwise: softmax cross-entropy of the faulty elements (ListNet) -----------------------------


def listwise(names: Sequence[str]) -> Fit:
    """Per case, -log of the softmax mass on its faulty elements (the top-1 probability ListNet
    maximises), each case weighing the same, L2 towards the hand-set weights, weights >= 0;
    projected Gauss-Newton steps with a backtracking line search."""
    start = handset_level().weights
    w0 = np.array([start.get(n, 0.0) for n in names])

    def fit(train: list[Case]) -> np.ndarray:
        data = [(x, bad) for _, x, bad, _ in train if bad.any() and not bad.all()]

        def loss(w: np.ndarray) -> float:
            total = 0.0
            for x, bad in data:
                s = x @ w
                p = np.exp(s - s.max())
                total += -float(np.log(p[bad].sum() / p.sum()))
            d = w - w0
            return total / len(data) + 0.5 * L2 * d @ d

        def derivatives(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """Gradient and Hessian, at the points the line search accepts only."""
            grad, hess = np.zeros_like(w), np.zeros((len(w), len(w)))
            for x, bad in data:
                s = x @ w
                p = np.exp(s - s.max())
                p /= p.sum()
                q = np.where(bad, p, 0.0) / p[bad].sum()
                grad += x.T @ (p - q)
                hess += (x.T * p) @ x - np.outer(x.T @ p, x.T @ p)
            n = len(data)
            return grad / n + L2 * (w - w0), hess / n + L2 * np.eye(len(w))

        w = np.maximum(w0, 0.0)
        current = loss(w)
        for _ in range(30):
            grad, hess = derivatives(w)
            free = ~((w <= 0) & (grad > 0))
            step = np.zeros_like(w)
            step[free] = np.linalg.solve(hess[np.ix_(free, free)], -grad[free])
            t = 1.0
            while t > 1e-4:
                trial = np.maximum(w + t * step, 0.0)
                value = loss(trial)
                if value < current - 1e-10:
                    break
                t *= 0.5
            else:
                break
            w, current = trial, value
        return w

    return fit


# --- LambdaRank trees (LightGBM, when it is installed) ----------------------------------------------


def lambdarank_trees(leaves: int, rate: float, rounds: int, min_leaf: int) -> tuple[Fit, Score]:
    """LightGBM's lambdarank objective (NDCG truncated at 5) on the channel columns and the
    failure's context as plain columns (trees find their interactions themselves)."""
    import lightgbm  # optional: only this variant needs it

    params = {
        "objective": "lambdarank",
        "num_leaves": leaves,
        "learning_rate": rate,
        "min_data_in_leaf": min_leaf,
        "lambdarank_truncation_level": 5,
        "num_threads": 1,
        "verbose": -1,
    }

    def fit(train: list[Case]) -> Any:
        kept = [c for c in train if c[2].any() and not c[2].all()]
        x = np.vstack([c[1] for c in kept])
        y = np.concatenate([c[2].astype(int) for c in kept])
        return lightgbm.train(params, lightgbm.Dataset(x, y, group=[len(c[2]) for c in kept]), rounds)

    return fit, lambda model, x: model.predict(x)


# --- gradient-boosted trees on the pairwise objective ---------------------------------------------

BINS = 16


def _edges(x: np.ndarray) -> list[np.ndarray]:
    out = []
    for j in range(x.shape[1]):
        v = np.unique(x[:, j])
        out.append(
            (v[:-1] + v[1:]) / 2
            if len(v) <= BINS
            else np.unique(np.quantile(x[:, j], np.linspace(0, 1, BINS + 1)[1:-1]))
        )
    return out


def _binned(x: np.ndarray, edges: list[np.ndarray]) -> np.ndarray:
    return np.stack([np.searchsorted(e, x[:, j], side="right") for j, e in enumerate(edges)], axis=1)


def _tree(
    b: np.ndarray, g: np.ndarray, h: np.ndarray, depth: int, lam: float = 1.0, min_h: float = 0.05
) -> list[Any]:
    nodes: list[Any] = []

    def grow(idx: np.ndarray, level: int) -> int:
        G, H = g[idx].sum(), h[idx].sum()
        best: tuple[float, int, int] | None = None
        if level < depth and 2 * min_h <= H:
            parent = G * G / (H + lam)
            for j in range(b.shape[1]):
                col = b[idx, j]
                top = int(col.max())
                if top == 0:
                    continue
                gl = np.bincount(col, g[idx], minlength=top + 1).cumsum()[:-1]
                hl = np.bincount(col, h[idx], minlength=top + 1).cumsum()[:-1]
                ok = (hl >= min_h) & (H - hl >= min_h)
                gain = np.where(ok, gl**2 / (hl + lam) + (G - gl) ** 2 / (H - hl + lam) - parent, -1.0)
                k = int(gain.argmax())
                if gain[k] > (best[0] if best else 0.0):
                    best = (float(gain[k]), j, k)
        if best is None:
            nodes.append(("leaf", -G / (H + lam)))
            return len(nodes) - 1
        _, j, k = best
        at = len(nodes)
        nodes.append(None)
        left = b[idx, j] <= k
        nodes[at] = ("split", j, k, grow(idx[left], level + 1), grow(idx[~left], level + 1))
        return at

    grow(np.arange(len(g)), 0)
    return nodes


def _predict(nodes: list[Any], b: np.ndarray) -> np.ndarray:
    out = np.zeros(len(b))
    stack = [(0, np.arange(len(b)))]
    while stack:
        n, idx = stack.pop()
        node = nodes[n]
        if node[0] == "leaf":
            out[idx] = node[1]
            continue
        _, j, k, left, right = node
        go = b[idx, j] <= k
        stack += [(left, idx[go]), (right, idx[~go])]
    return out


def boosted(
    edges: list[np.ndarray], rounds: int = 100, depth: int = 3, rate: float = 0.1
) -> tuple[Fit, Score]:
    def fit(train: list[Case]) -> list[list[Any]]:
        b = _binned(np.vstack([c[1] for c in train]), edges)
        spans, at = [], 0
        for c in train:
            spans.append((at, at + len(c[1]), c[2]))
            at += len(c[1])
        f = np.zeros(len(b))
        trees = []
        for _ in range(rounds):
            g, h = np.zeros(len(b)), np.zeros(len(b))
            for a, z, bad in spans:
                if bad.all() or not bad.any():
                    continue
                fb, fo = f[a:z][bad], f[a:z][~bad]
                p = 1 / (1 + np.exp(np.clip(fb[:, None] - fo[None, :], -50, 50)))
                w = 1.0 / p.size
                gs, hs = g[a:z], h[a:z]
                gs[bad] -= p.sum(1) * w
                gs[~bad] += p.sum(0) * w
                hs[bad] += (p * (1 - p)).sum(1) * w
                hs[~bad] += (p * (1 - p)).sum(0) * w
            tree = _tree(b, g, h, depth)
            f += rate * _predict(tree, b)
            trees.append(tree)
        return trees

    def score(trees: list[list[Any]], x: np.ndarray) -> np.ndarray:
        b = _binned(x, edges)
        return sum((rate * _predict(t, b) for t in trees), np.zeros(len(x)))

    return fit, score


# --- features ------------------------------------------------------------------------------------


def within_failure(case: LearnCase, data: LevelData) -> list[Row]:
    best: dict[str, float] = {}
    for row in data.rows:
        for n, v in row.items():
            if n in CHANNEL_FEATURES:
                best[n] = max(best.get(n, 0.0), v)
    out = []
    for row in data.rows:
        new = dict(row)
        for n, v in row.items():
            if n in CHANNEL_FEATURES and best[n] > 0:
                new[f"{n}#rel"] = v / best[n]
                new[f"{n}#top"] = float(v >= best[n])
        out.append(new)
    return out


FAMILIES = {
    "import": r"ImportError|ModuleNotFound|No module named",
    "attribute": r"AttributeError|has no attribute",
    "key": r"KeyError",
    "index": r"IndexError|out of range",
    "type": r"TypeError",
    "name": r"NameError|UnboundLocal|is not defined",
    "assert": r"AssertionError|assert",
    "timeout": r"[Tt]ime[d ]?out|took too long",
    "process": r"CalledProcessError|exit status|non-zero|exit code",
    "file": r"FileNotFound|No such file|PermissionError|OSError|IOError",
    "value": r"ValueError",
}
KINDS = {
    "import": r"^\s*(?:from\s+\S+\s+)?import\s",
    "strkey": r"\w[\])]?\[\s*['\"]",
    "numindex": r"\[\s*-?\d+\s*\]",
    "shell": r"\.(?:run|execute|sudo|sh|check_output|call|Popen)\(|subprocess",
    "assert": r"\bassert|\.assert\w+\(",
    "compare": r"==|!=|<=|>=|\bis not\b|\bnot in\b",
    "wait": r"(?i)sleep|wait|timeout|retry|retries|poll|until",
    "none": r"\bNone\b",
    "format": r"\bf['\"]|%\s*\(|\.format\(|%s|%d",
    "number": r"(?<![\w.])\d{2,}(?![\w.])",
    "selfset": r"self\.\w+\s*=[^=]",
    "convert": r"\b(?:int|str|float|bytes|list|dict)\(|\.decode\(|\.encode\(",
    "getattr": r"getattr\(|hasattr\(|setattr\(",
    "path": r"os\.path|Path\(|open\(|['\"]/\w+",
    "raise": r"\braise\b",
    "try": r"\btry:|\bexcept\b",
    "loop": r"\bfor\b.*\bin\b|\bwhile\b",
    "return": r"\breturn\b",
}


def crossed(logs: dict[str, str]) -> Extra:
    kinds = {k: re.compile(p, re.MULTILINE) for k, p in KINDS.items()}

    def extra(case: LearnCase, data: LevelData) -> list[Row]:
        tail = logs[case.id][-3000:]
        families = [f for f, p in FAMILIES.items() if re.search(p, tail)] or ["other"]
        out = []
        for row, element in zip(data.rows, data.table.elements, strict=True):
            new = dict(row)
            for k, pattern in kinds.items():
                if pattern.search(element.element.code):
                    new[f"k:{k}"] = 1.0
                    new.update({f"x:{f}:{k}": 1.0 for f in families})
            out.append(new)
        return out

    return extra


_STRING = re.compile(r"""[rbuRBUfF]{0,2}("[^"\n]*"|'[^'\n]*')""")
_PLACE = re.compile(r"\{[^}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdifrxg]")


def literal_in_log(logs: dict[str, str]) -> Extra:
    def extra(case: LearnCase, data: LevelData) -> list[Row]:
        log = " ".join(logs[case.id].split())
        out = []
        for row, element in zip(data.rows, data.table.elements, strict=True):
            new = dict(row)
            at = -1
            for m in _STRING.finditer(element.element.code):
                for part in _PLACE.split(m.group(1)[1:-1]):
                    part = " ".join(part.split())
                    if len(part) >= 10 and re.search(r"[A-Za-z]{3}", part):
                        at = max(at, log.rfind(part))
            if at >= 0:
                new["literal"], new["literal_pos"] = 1.0, at / max(len(log), 1)
            out.append(new)
        return out

    return extra


def with_context(case: LearnCase, data: LevelData) -> list[Row]:
    """Each element's columns plus the failure's context values as columns of their own."""
    context = {f"context:{c}": v for c, v in data.table.context.items()}
    return [{**row, **context} for row in data.rows]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(ROOT / "corpus" / "mined"))
    parser.add_argument("--only", nargs="*", help="variants to run (default: all)")
    args = parser.parse_args(argv)
    corpus = load_corpus([Path(args.corpus)], levels=("block",))
    cases = [c for c in corpus.cases if "block" in c.levels]
    logs: dict[str, str] = {}
    for path in Path(args.corpus).rglob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "id" in data:
            logs[data["id"]] = data.get("failure_log") or ""
    base = list(FEATURES)
    plain = matrices(cases, base)
    columns = [n for n in base if "*" not in n] + [f"context:{c}" for c in CONTEXTS]
    context_plain = matrices(cases, columns, with_context)
    within = [f"{c}#{s}" for c in CHANNEL_FEATURES for s in ("rel", "top")]
    kinds = [f"k:{k}" for k in KINDS] + [f"x:{f}:{k}" for f in [*FAMILIES, "other"] for k in KINDS]
    variants: dict[str, Callable[[], tuple[float, float]]] = {
        "linear (shipped)": lambda: loro(plain, linear(base)),
        "linear, wrong pairs x2": lambda: loro(plain, linear(base, reweight=1.0)),
        "linear, wrong pairs x4": lambda: loro(plain, linear(base, reweight=3.0)),
        "within-failure features": lambda: loro(
            matrices(cases, base + within, within_failure), linear(base + within)
        ),
        **{
            f"exception family x code kind, L2 x{m:g}": (
                lambda m=m: loro(
                    matrices(cases, base + kinds, crossed(logs)),
                    linear(base + kinds, scale=dict.fromkeys(kinds, m)),
                )
            )
            for m in (1, 3.33, 10, 33.3)
        },
        "literal in the log": lambda: loro(
            matrices(cases, [*base, "literal", "literal_pos"], literal_in_log(logs)),
            linear([*base, "literal", "literal_pos"]),
        ),
        "boosted trees": lambda: loro(plain, *boosted(_edges(np.vstack([c[1] for c in plain])))),
        "listwise softmax (ListNet)": lambda: loro(plain, listwise(base)),
        **{
            f"lambdarank trees, {leaves} leaves x {rounds} (LightGBM)": (
                lambda leaves=leaves, rate=rate, rounds=rounds, least=least: loro(
                    context_plain, *lambdarank_trees(leaves, rate, rounds, least)
                )
            )
            for leaves, rate, rounds, least in ((4, 0.1, 50, 40), (4, 0.05, 100, 20), (8, 0.05, 200, 20))
        },
    }
    for name, run in variants.items():
        if args.only and not any(o in name for o in args.only):
            continue
        hit1, hit3 = run()
        print(f"{name:<44} Hit@1 {hit1:5.1f}  Hit@3 {hit3:5.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
