"""`tcfl learn CASES_DIR...`: fit the built-in ranker's model file, or measure it leave-one-repository-out.

The fitting is the harness's (``tcfl_lab.eval.learn``), loaded when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli import UsageError

LEVEL_CHOICES = ("block", "function", "line", "all")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "learn",
        help="learn the built-in ranker's weights from benchmark cases (pairwise logistic regression)",
    )
    parser.add_argument(
        "cases", nargs="*", metavar="CASES_DIR", help="folders (searched recursively) or case files"
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="also learn from the failures whose faulty lines were marked on this database's dashboard",
    )
    parser.add_argument(
        "--out", type=Path, metavar="MODEL.json", help="fit on every case and write the model file"
    )
    parser.add_argument(
        "--level", choices=LEVEL_CHOICES, default="block", help="level(s) to fit (default block)"
    )
    parser.add_argument("--l2", type=float, help="L2 regularisation (default 0.01)")
    parser.add_argument(
        "--prior",
        choices=("zero", "handset"),
        default="zero",
        help="what L2 pulls the weights towards: 0 (default) or the hand-set weights",
    )
    parser.add_argument("--nonneg", action="store_true", help="keep every weight >= 0 (every fit)")
    parser.add_argument(
        "--loro", action="store_true", help="leave-one-repository-out evaluation at block level"
    )
    parser.add_argument(
        "--ablate", action="store_true", help="with --loro: retrain without each channel in turn"
    )
    parser.add_argument("--curve", metavar="REPO", help="learning curve: REPO's cases added n at a time")
    parser.add_argument("--draws", type=int, default=5, help="random draws per curve point (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the curve's draws (default 0)")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of tables")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.cli.harness import load_harness

    load_harness()
    from app.localize.model_file import write_model
    from tcfl_lab.eval.learn import (
        DEFAULT_L2,
        LEARN_LEVELS,
        channel_ablation,
        fit_model,
        learning_curve,
        load_corpus,
        loro,
        render_ablation,
        render_curve,
        render_loro,
    )

    if not args.cases and args.db is None:
        raise UsageError("give case folders or files, --db URL, or both")
    if args.out is None and not args.loro and args.curve is None:
        raise UsageError("say what to do: --out MODEL.json, --loro or --curve REPO")
    if args.ablate and not args.loro:
        raise UsageError("--ablate goes with --loro")
    if args.draws < 1:
        raise UsageError("--draws must be at least 1")
    l2 = DEFAULT_L2 if args.l2 is None else args.l2
    if l2 < 0:
        raise UsageError("--l2 must be >= 0")
    levels = LEARN_LEVELS if args.level == "all" else (args.level,)
    needed = levels if args.out is not None else ("block",)

    def progress(index: int, total: int, case_id: str) -> None:
        if not args.quiet:
            print(f"[{index}/{total}] {case_id}", file=sys.stderr, flush=True)

    records = _marked_cases(args.db) if args.db is not None else []
    try:
        corpus = load_corpus(
            [Path(c) for c in args.cases],
            levels=tuple(dict.fromkeys((*needed, "block"))),
            progress=progress,
            records=records,
        )
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    if not corpus.cases:
        raise UsageError("no usable case in " + ", ".join([*args.cases, *([args.db] if args.db else [])]))
    for problem in corpus.problems:
        print(f"tcfl: warning: {problem}", file=sys.stderr)
    report: dict[str, object] = {
        "cases": len(corpus.cases),
        "excluded_by_hand_check": len(corpus.excluded),
        "repos": len({c.repo for c in corpus.cases}),
    }
    text: list[str] = [
        f"{len(corpus.cases)} cases from {report['repos']} repositories; "
        f'{len(corpus.excluded)} excluded by their hand check (verdict other than "right")'
    ]
    if args.out is not None:
        model = fit_model(corpus.cases, levels, l2=l2, nonneg=args.nonneg, prior=args.prior)
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            write_model(model, args.out)
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc}") from exc
        report["model"] = model.to_dict()
        text.append(f"wrote {args.out} ({', '.join(levels)} fitted)")
    if args.loro:
        folds = loro(corpus.cases, l2=l2, prior=args.prior, nonneg=args.nonneg)
        report["loro"] = folds
        text.append(render_loro(folds))
        if args.ablate:
            table = channel_ablation(corpus.cases, l2=l2, prior=args.prior, nonneg=args.nonneg)
            report["ablation"] = table
            text.append(render_ablation(table))
    if args.curve is not None:
        try:
            points = learning_curve(
                corpus.cases,
                args.curve,
                l2=l2,
                draws=args.draws,
                seed=args.seed,
                prior=args.prior,
                nonneg=args.nonneg,
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        report["curve"] = {"repo": args.curve, "points": points}
        text.append(render_curve(args.curve, points))
    sys.stdout.write((json.dumps(report, indent=1) if args.json else "\n\n".join(text)) + "\n")
    return 0


def _marked_cases(url: str) -> list[dict[str, object]]:
    """The dashboard's failures with marked faulty lines, as cases (the database is only read)."""
    from app.service.dashboard.feedback import FeedbackStore
    from app.store.store import Store

    try:
        store = Store.open(url, run_migrations=False)
    except Exception as exc:
        raise UsageError(f"cannot open the database {url}: {exc}") from exc
    try:
        return FeedbackStore(store.engine).marked_cases(store)
    finally:
        store.close()
