"""`tcfl corpus build`: an executed corpus of mutated real test files with true traces.

``build`` is the harness's (``tcfl_lab.eval``), loaded when it runs; ``mine`` is the product's
(``app.mining``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("corpus", help="build an executed benchmark corpus with true traces")
    actions = parser.add_subparsers(dest="corpus_command", required=True)
    build = actions.add_parser(
        "build", help="mutate CPython's own unittest files, run them traced, write failing mutants as cases"
    )
    build.add_argument("--out", type=Path, help="folder for the case JSON files")
    build.add_argument(
        "--history",
        type=Path,
        metavar="OUT",
        help="build the corpus with CI history instead (versions, passing and failing runs) into OUT",
    )
    build.add_argument(
        "--size", choices=("small", "full"), default="small", help="history corpus size (small: minutes)"
    )
    build.add_argument("--max-cases", type=int, default=200, help="stop after this many cases (default 200)")
    build.add_argument("--seed", type=int, default=0, help="seed for file, test and mutant choice")
    build.add_argument("--per-file", type=int, default=10, help="at most this many cases per test file")
    build.add_argument("--timeout", type=float, default=20.0, help="seconds before a child run is killed")
    build.add_argument(
        "--jobs", type=int, default=2, help="history corpus: files built in parallel (default 2)"
    )
    build.add_argument("--quiet", action="store_true", help="no progress lines")
    build.set_defaults(func=_build)
    mine = actions.add_parser(
        "mine",
        help="read a local git clone and write one case per fix of test code whose message holds the log",
    )
    mine.add_argument("repo", type=Path, metavar="REPO_DIR", help="a git clone (work tree or bare)")
    mine.add_argument("--out", type=Path, required=True, help="folder for the case JSON files")
    mine.add_argument("--since", help="only commits after this date (anything `git log --since` takes)")
    mine.add_argument(
        "--paths",
        nargs="+",
        metavar="GLOB",
        help="what counts as test code (fnmatch, `*` crosses folders; default: paths naming a test folder "
        "or file)",
    )
    mine.add_argument("--rev", action="append", help="revisions to walk (default: every branch and tag)")
    mine.add_argument("--repo-name", help="owner/name recorded in each case (default: from the clone)")
    mine.add_argument("--max-cases", type=int, help="stop after keeping this many cases")
    mine.add_argument("--json", action="store_true", help="print the summary as JSON")
    mine.set_defaults(func=_mine)


def _build(args: argparse.Namespace) -> int:
    from app.cli.harness import load_harness

    load_harness()
    if args.history is not None:
        return _build_history(args)
    from tcfl_lab.eval.corpus import CorpusOptions, build_corpus

    if args.out is None:
        raise UsageError("give --out DIR (or --history OUT for the corpus with CI history)")

    if args.max_cases < 1 or args.per_file < 1:
        raise UsageError("--max-cases and --per-file must be at least 1")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} exists and is not a folder")
    options = CorpusOptions(
        max_cases=args.max_cases, seed=args.seed, per_file=args.per_file, timeout_s=args.timeout
    )

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        summary = build_corpus(args.out, options, progress=progress)
    except (FileNotFoundError, FileExistsError) as exc:
        raise UsageError(str(exc)) from exc
    print(json.dumps(summary.as_dict(), indent=1))
    if summary.cases < args.max_cases:
        print(f"tcfl: warning: only {summary.cases} failing mutants found", file=sys.stderr)
    return 0


def _mine(args: argparse.Namespace) -> int:
    from app.cli.progress import ProgressBar
    from app.mining.extract import DEFAULT_TEST_GLOBS
    from app.mining.mine import MineError, MineOptions, mine, summary_lines

    if not args.repo.is_dir():
        raise UsageError(f"{args.repo} is not a folder")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} exists and is not a folder")
    if args.max_cases is not None and args.max_cases < 1:
        raise UsageError("--max-cases must be at least 1")
    options = MineOptions(
        since=args.since,
        paths=tuple(args.paths) if args.paths else DEFAULT_TEST_GLOBS,
        revs=tuple(args.rev) if args.rev else ("--all",),
        repo_name=args.repo_name,
        max_cases=args.max_cases,
    )
    try:
        with ProgressBar("mining", 0) as bar:
            report = mine(
                args.repo,
                args.out,
                options,
                progress=lambda done, total, r: bar.update(done, sum(r.dropped.values()), total),
            )
    except MineError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print("\n".join(summary_lines(report)))
    return 0


def _build_history(args: argparse.Namespace) -> int:
    from tcfl_lab.eval.history_corpus import HistoryOptions, build_history_corpus

    if args.history.exists() and not args.history.is_dir():
        raise UsageError(f"--history {args.history} exists and is not a folder")
    options = HistoryOptions.for_size(args.size, seed=args.seed)
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        summary = build_history_corpus(args.history, options, jobs=args.jobs, progress=progress)
    except (FileNotFoundError, FileExistsError) as exc:
        raise UsageError(str(exc)) from exc
    print(json.dumps(summary.as_dict(), indent=1))
    return 0
