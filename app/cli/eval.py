"""`tcfl eval CASES_DIR`: trace quality and localization metrics over benchmark cases.

The work is the harness's (``tcfl_lab.eval``), loaded when the command runs (``app.cli.harness``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.analysis.model import resolve_variant
from app.analysis.render import LEVELS
from app.cli import UsageError
from app.cli.progress import ProgressBar
from app.localize.llm import ModelClient
from app.localize.result import TriageResult
from app.options import RANKER_MODEL_HELP, TriageOptions, resolve_options
from app.rankers import AUTO, ranker_names
from app.settings import get_settings

if TYPE_CHECKING:  # the harness loads when the command runs, never for --help or other commands
    from tcfl_lab.eval.cases import Case
    from tcfl_lab.eval.runner import CaseResult, EvalOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate trace estimation and localization over a folder of benchmark cases"
    )
    parser.add_argument("cases", metavar="CASES_DIR", help="folder of case JSON files (or one case file)")
    parser.add_argument(
        "--level", action="append", choices=LEVELS, help="localization level (repeatable; default all)"
    )
    parser.add_argument("-k", action="append", type=int, help="k to report (repeatable; default the paper's)")
    parser.add_argument(
        "--trace",
        action="append",
        help="trace variant(s) the ranker sees (repeatable or comma-separated; default tplus)",
    )
    parser.add_argument(
        "--ranker",
        choices=(AUTO, *ranker_names()),
        default="heuristic",
        help="ranker to evaluate (default heuristic; stacktrace = the stack-trace baseline)",
    )
    parser.add_argument("--model-url", help="OpenAI-compatible base URL for --ranker llm/auto")
    parser.add_argument("--ranker-model", metavar="FILE", help=RANKER_MODEL_HELP)
    parser.add_argument("--seed", type=int, default=0, help="seed for masking and ablation (default 0)")
    parser.add_argument("--repetitions", type=int, default=5, help="masking repetitions per rate (default 5)")
    parser.add_argument(
        "--ablation", action="store_true", help="also remove 0/20/50/80/100%% of static log statements"
    )
    parser.add_argument("--no-localize", action="store_true", help="trace quality only, no ranking")
    parser.add_argument(
        "--ablate",
        action="store_true",
        help="only the heuristic ranker's channel ablation: each evidence channel off in turn, "
        "beside the stack-trace baseline (block and line Hit@1/3, MAP@5)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    parser.add_argument("--out", type=Path, help="also write the JSON report to this file")
    parser.add_argument("--plot", type=Path, metavar="DIR", help="write PNG plots here (needs matplotlib)")
    parser.add_argument(
        "--concurrency",
        type=int,
        help="cases in flight at once with a model (default TCFL_MODEL_CONCURRENCY)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--history-lengths",
        metavar="N,N,...",
        help="CASES_DIR is a corpus with CI history: score static, spectrum and fused rankings at these"
        " history lengths (e.g. 0,1,3,10,30)",
    )
    parser.add_argument(
        "--write-calibration",
        type=Path,
        metavar="FILE",
        help="with --history-lengths: write the fusion calibration learned on the calibration half",
    )
    parser.add_argument(
        "--passing-logs",
        choices=("keep", "drop", "must-run"),
        default="keep",
        help="with --history-lengths: passes keep their logs (default), or lose them as in CI results files,"
        " counting for nothing (drop) or by their test's must-run lines (must-run)",
    )
    parser.set_defaults(func=run)


def _lengths(text: str) -> tuple[int, ...]:
    try:
        values = tuple(dict.fromkeys(int(v) for v in text.split(",") if v.strip()))
    except ValueError:
        raise UsageError(f"--history-lengths takes comma-separated integers, got {text!r}") from None
    if not values or any(v < 0 for v in values):
        raise UsageError("--history-lengths needs at least one length, none negative")
    return values


def _write(target: Path | None, text: str) -> None:
    """Write ``text`` and a newline to ``target``, making its folder; nothing when there is no target."""
    if target is None:
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc}") from exc


def run_history(args: argparse.Namespace) -> int:
    from tcfl_lab.eval.history_eval import evaluate_history, render_history_table

    lengths = _lengths(args.history_lengths)

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    started = time.perf_counter()
    try:
        report = evaluate_history(
            Path(args.cases), lengths, seed=args.seed, progress=progress, passing_logs=args.passing_logs
        )
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    if report["cases"] == 0:
        raise UsageError(f"no case in the history corpus {args.cases}")
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["passing_logs"] = args.passing_logs
    calibration = report.pop("calibration")
    text = json.dumps(report, indent=1)
    _write(args.out, text)
    _write(args.write_calibration, json.dumps(calibration, indent=1))
    sys.stdout.write((text if args.json else render_history_table(report)) + "\n")
    return 0


def _options(args: argparse.Namespace) -> EvalOptions:
    from tcfl_lab.eval.masking import MaskingPlan
    from tcfl_lab.eval.runner import EvalOptions

    names = [n.strip() for item in (args.trace or ["tplus"]) for n in item.split(",") if n.strip()]
    try:
        traces = tuple(dict.fromkeys(resolve_variant(n) for n in names))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.k is not None and any(k < 1 for k in args.k):
        raise UsageError("-k must be at least 1")
    if args.repetitions < 1:
        raise UsageError("--repetitions must be at least 1")
    try:
        triage = resolve_options(get_settings(), ranker=args.ranker, ranker_model=args.ranker_model)
    except ValueError as exc:  # SettingsError too: a bad TCFL_* setting
        raise UsageError(str(exc)) from exc
    return EvalOptions(
        levels=tuple(dict.fromkeys(args.level)) if args.level else LEVELS,
        ks=tuple(args.k) if args.k else None,
        rank_traces=traces,
        ranker=args.ranker,
        masking=MaskingPlan(repetitions=args.repetitions, seed=args.seed),
        ablation=args.ablation,
        localize=not args.no_localize,
        triage=triage,
    )


def _ablate(args: argparse.Namespace, cases: list[Case], options: EvalOptions) -> int:
    from tcfl_lab.eval.channels import ABLATION_LEVELS, ablation_report, channel_ablation, render_ablation

    def progress(index: int, total: int, case_id: str) -> None:
        if not args.quiet:
            print(f"[{index}/{total}] {case_id}", file=sys.stderr, flush=True)

    levels = tuple(level for level in ABLATION_LEVELS if args.level is None or level in args.level)
    if not levels:
        raise UsageError("--ablate reports block and line levels; pick one of them with --level")
    table = channel_ablation(cases, variant=options.rank_traces[0], levels=levels, progress=progress)
    report = {
        "cases": len(cases),
        "trace": options.rank_traces[0],
        "channel_ablation": ablation_report(table),
    }
    text = json.dumps(report, indent=1)
    _write(args.out, text)
    sys.stdout.write((text if args.json else render_ablation(table)) + "\n")
    return 0


async def _run(
    cases: list[Case], options: EvalOptions, client: ModelClient | None, quiet: bool, concurrency: int
) -> list[CaseResult]:
    from app.triage import triage
    from tcfl_lab.eval.runner import evaluate

    async def run_triage(case: Case, topts: TriageOptions) -> TriageResult:
        return await triage(list(case.scripts), case.log, topts, client=client)

    bar = ProgressBar("eval", len(cases))
    failed = 0

    def progress(index: int, total: int, result: CaseResult) -> None:
        nonlocal failed
        failed += 1 if result.error else 0
        if quiet:
            return
        if bar.active:  # a terminal: one bar, errors above it
            if result.error:
                bar.console.print(f"{result.case_id}: error: {result.error}", markup=False)
            bar.update(index, failed)
            return
        status = f"error: {result.error}" if result.error else f"{result.eval_ms:.0f} ms"
        print(f"[{index}/{total}] {result.case_id}: {status}", file=sys.stderr, flush=True)

    try:
        if quiet or not bar.active:
            return await evaluate(cases, options, run_triage, progress=progress, concurrency=concurrency)
        with bar:
            return await evaluate(cases, options, run_triage, progress=progress, concurrency=concurrency)
    finally:
        if client is not None:
            await client.aclose()


def run(args: argparse.Namespace) -> int:
    from app.cli.harness import load_harness

    load_harness()
    from tcfl_lab.eval.cases import load_cases

    if args.history_lengths is not None:
        return run_history(args)
    if args.write_calibration is not None:
        raise UsageError("--write-calibration needs --history-lengths")
    options = _options(args)
    try:
        cases, problems = load_cases(Path(args.cases))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    if not cases:
        raise UsageError(f"no readable case in {args.cases}" + (f" ({problems[0]})" if problems else ""))
    if args.ablate:
        return _ablate(args, cases, options)
    client = None
    if options.localize and args.ranker in (AUTO, "llm"):
        try:
            client = ModelClient.from_settings(get_settings(), model_url=args.model_url)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        if args.ranker == "llm" and client is None:
            raise UsageError("--ranker llm needs a model server: pass --model-url or set TCFL_MODEL_URL")
    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    concurrency = 1 if client is None else (args.concurrency or get_settings().model_concurrency)
    started = time.perf_counter()
    results = asyncio.run(_run(cases, options, client, args.quiet, concurrency))
    from tcfl_lab.eval.report import build_report, render_table

    report = build_report(results, options, problems=problems, seconds=time.perf_counter() - started)
    text = json.dumps(report, indent=1)
    _write(args.out, text)
    if args.plot:
        from tcfl_lab.eval.plots import PlotUnavailable, write_plots

        try:
            written = write_plots(report, args.plot)
        except PlotUnavailable as exc:
            print(f"tcfl: warning: {exc}", file=sys.stderr)
        else:
            for path in written:
                print(f"wrote {path}", file=sys.stderr)
    sys.stdout.write((text if args.json else render_table(report)) + "\n")
    return 0
