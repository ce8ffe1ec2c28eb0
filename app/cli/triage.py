"""`tcfl triage`: rank the most suspicious functions, blocks or lines of a failing test script."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from app.analysis.limits import CostLimits, InputTooCostly
from app.analysis.model import Script
from app.analysis.render import LEVELS
from app.cli import EXIT_NO_EVIDENCE, EXIT_OK, UsageError
from app.cli.io import check_log_format, load_settings, printable, read_log, read_scripts
from app.localize.prompts import OUTPUT_FORMATS
from app.localize.result import TriageResult
from app.options import PROMPT_STYLES, RANKER_MODEL_HELP, TriageOptions, resolve_options
from app.rankers import AUTO, ranker_names
from app.settings import Settings
from app.triage import triage

if TYPE_CHECKING:
    from app.localize.llm import ModelClient

CODE_PREVIEW_LINES = 4
EVIDENCE_LINES = 3  # evidence records shown under each ranked element
GUESS_EXIT = EXIT_NO_EVIDENCE  # ranked, but nothing in the failure pointed anywhere: the ranking is a guess


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("triage", help="rank the most suspicious elements of a failing test script")
    p.add_argument("scripts", nargs="+", metavar="SCRIPT", help="test script(s) of the failing test")
    p.add_argument("--log", required=True, metavar="FILE", help="the failure log ('-' for standard input)")
    p.add_argument("--level", choices=LEVELS, help="granularity of the ranking (default: block)")
    p.add_argument("-k", type=int, metavar="N", help="how many elements to rank (default: 5)")
    p.add_argument(
        "--trace", metavar="VARIANT", help="t0, tmin, tmid, tmax, tplus (default) or a variant name"
    )
    p.add_argument(
        "--ranker", choices=(AUTO, *ranker_names()), help="auto (default) = the model when one is configured"
    )
    p.add_argument(
        "--model-url",
        metavar="URL",
        help="OpenAI-compatible base URL ending in /v1 (overrides TCFL_MODEL_URL)",
    )
    p.add_argument(
        "--model", metavar="NAME", help="model name (default: TCFL_MODEL, else the server's first model)"
    )
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, help="json_schema (default) or paper")
    p.add_argument(
        "--prompt-style",
        choices=PROMPT_STYLES,
        help="full (default: error, script frames, log window) or paper (the error message alone)",
    )
    p.add_argument("--ranker-model", metavar="FILE", help=RANKER_MODEL_HELP)
    p.add_argument(
        "--prompt-budget",
        type=int,
        metavar="TOKENS",
        help="tokens of log context in the prompt (default 400)",
    )
    p.add_argument(
        "--two-phase", action="store_true", help="rank functions first, then elements inside the top ones"
    )
    p.add_argument(
        "--line-to-block", action="store_true", help="block level: ask for lines, map them to blocks"
    )
    p.add_argument(
        "--log-function",
        action="append",
        default=[],
        metavar="PATTERN",
        help="extra log-function callee pattern, e.g. Log.log (repeatable)",
    )
    p.add_argument(
        "--json", action="store_true", help="machine-readable triage result (JSON; keys are only ever added)"
    )
    p.add_argument(
        "--no-store",
        action="store_true",
        help="do not record the result in the database",
    )
    p.add_argument(
        "--db",
        metavar="URL",
        help="database to record the result in (default: TCFL_DATABASE_URL, else tcfl.db in the "
        "per-user data folder)",
    )
    p.add_argument(
        "--log-format",
        metavar="NAME_OR_REGEX",
        help="log prefix format: a known name (avocado, python, ...) or a regex with (?P<msg>...)",
    )
    p.add_argument("--test-id", help="label stored with the result (the dashboard filters on it)")
    p.add_argument(
        "--test",
        metavar="KEY",
        help="the failing test's key in the CI history (tcfl ingest); with --history auto, its runs"
        " are fused into the ranking",
    )
    p.add_argument(
        "--history",
        choices=("auto", "off"),
        default="auto",
        help="use the test's recorded CI history when --test is given (default auto)",
    )
    p.add_argument(
        "--history-window",
        type=int,
        metavar="N",
        help="newest recorded runs of the test to read (default 30)",
    )
    p.add_argument(
        "--history-k",
        type=int,
        metavar="N",
        help="runs kept of those, chosen to cover and split what the failure ran (default 0: all)",
    )
    p.set_defaults(func=run)


def _several_failures(log: str) -> list[str]:
    """A job log with several failed tests: one triage would merge them, so say so and how to split."""
    from app.ingest.joblog import failed_tests

    failed = failed_tests(log)
    if len(failed) < 2:
        return []
    shown = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
    return [
        f"the log holds {len(failed)} failed tests ({shown}); this triage ranks them as one failure: "
        "run `tcfl ci LOG --root CHECKOUT` for one triage per failed test"
    ]


def run(args: argparse.Namespace) -> int:
    scripts, warnings = read_scripts(args.scripts)
    log, log_warnings = read_log(args.log)
    log_warnings = [*log_warnings, *_several_failures(log)]
    settings = load_settings()
    if args.db:
        settings = settings.model_copy(update={"database_url": args.db})
    check_log_format(args.log_format)
    if not args.log_format:
        check_log_format(settings.log_format, "TCFL_LOG_FORMAT")
    model_flags = _model_only_flags(args)
    try:
        options = resolve_options(
            settings,
            level=args.level,
            k=args.k,
            trace=args.trace,
            ranker=args.ranker,
            log_functions=args.log_function,
            output_format=args.output_format,
            two_phase=args.two_phase or None,
            line_to_block=args.line_to_block or None,
            log_format=args.log_format,
            prompt_style=args.prompt_style,
            history_window=args.history_window,
            history_k=args.history_k,
            prompt_budget=args.prompt_budget,
            ranker_model=args.ranker_model,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    try:
        if args.model:
            settings = settings.model_copy(update={"model": args.model})
        client = _client(settings, options, args.model_url)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if options.ranker == "llm" and client is None:
        raise UsageError("--ranker llm needs a model server: pass --model-url or set TCFL_MODEL_URL")
    if model_flags and client is None:
        why = "with --ranker heuristic" if options.ranker == "heuristic" else "without a model server"
        warnings.append(f"{', '.join(model_flags)} only affect(s) the model ranker; ignored {why}")
    history, history_warnings = _history(settings, args, options, client)
    if history:
        options = replace(options, ranker="history")
    try:
        limits = settings.cost_limits()
        result, section = run_coroutine(
            lambda: _triage(scripts, log, options, client, history, limits), client is None and not history
        )
    except InputTooCostly as exc:
        raise UsageError(f"{exc} (set TCFL_{exc.setting.upper()} to raise the limit)") from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    result_warnings = [*warnings, *log_warnings, *history_warnings]
    body = result.to_dict()
    if section is not None:
        from app.history.surface import element_channels

        body["history"] = {"test": args.test, **section}
        for item in body["ranking"]:
            item["history"] = element_channels(item)
    body["warnings"] = [*result_warnings, *body["warnings"]]
    saved = (
        None
        if args.no_store
        else _store(settings, scripts, log, options, args.test_id, body, result_warnings)
    )
    if args.json:
        if saved is not None:
            body["id"] = saved
        json.dump(body, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_result(result))
        if saved is not None:
            from app.service.engine import safe_url

            sys.stdout.write(
                f"\nSaved as triage {saved} in {safe_url(settings.database_url)}"
                f" (see it with `tcfl serve`: /triage/{saved})\n"
            )
    # warnings (the model fallback among them) once each, on stderr, in both output modes
    for warning in dict.fromkeys([*result_warnings, *result.warnings]):
        print(f"tcfl: warning: {printable(warning)}", file=sys.stderr)
    return EXIT_OK if result.evidence_found or not result.ranking else GUESS_EXIT


_MODEL_FLAGS = (
    ("model_url", "--model-url"),
    ("model", "--model"),
    ("output_format", "--output-format"),
    ("two_phase", "--two-phase"),
    ("line_to_block", "--line-to-block"),
    ("prompt_style", "--prompt-style"),
    ("prompt_budget", "--prompt-budget"),
)


def _model_only_flags(args: argparse.Namespace) -> list[str]:
    """The flags given on this command line that only the model ranker reads."""
    return [flag for attr, flag in _MODEL_FLAGS if getattr(args, attr, None) not in (None, False)]


def _client(settings: Settings, options: TriageOptions, model_url: str | None) -> ModelClient | None:
    """A model client when the ranker may use one and a server is configured (httpx loads only then)."""
    if options.ranker == "heuristic" or not (model_url or settings.model_url or "").strip():
        return None
    from app.localize.llm import ModelClient

    return ModelClient.from_settings(settings, model_url=model_url)


def _store(
    settings: Settings,
    scripts: list[Script],
    log: str,
    options: TriageOptions,
    test_id: str | None,
    body: dict[str, Any],
    warnings: list[str],
) -> int | None:
    """Record the triage like the API does; a database problem is a warning, never a lost result.

    Through ``record.record_to``: the same rows as ``Store.record_triage``, written with SQLAlchemy
    Core, so a cold start loads neither the ORM nor (at the current schema) Alembic.
    """
    from app.service.engine import safe_url
    from app.service.record import Submission, record_to

    case = Submission(scripts=tuple(scripts), log=log, options=options.to_dict(), test_id=test_id)
    try:
        return record_to(settings.database_url, case, body).id
    except Exception as exc:  # the ranking is printed either way
        warnings.append(
            f"result not stored in {safe_url(settings.database_url)}: {type(exc).__name__}: {exc}"
        )
        return None


def _history(
    settings: Settings, args: argparse.Namespace, options: TriageOptions, client: ModelClient | None
) -> tuple[tuple[Any, ...], list[str]]:
    """The test's recorded runs, when asked for and the ranker may fuse them (not the model's)."""
    key = args.test
    if not key or args.history == "off":
        return (), []
    if options.ranker not in ("auto", "heuristic", "history") or (options.ranker == "auto" and client):
        return (), [f"--history applies to the heuristic ranker; the {options.ranker} ranker ranked alone"]
    from app.service.history_store import HistoryStore
    from app.service.store import Store, safe_url

    try:
        store = Store.open(settings.database_url)
        try:
            runs = tuple(HistoryStore(store).history_runs(key, limit=options.history_window))
        finally:
            store.close()
    except Exception as exc:  # no history is a warning, never a failed triage
        return (), [
            f"CI history not read from {safe_url(settings.database_url)}: {type(exc).__name__}: {exc}"
        ]
    if not runs:
        return (), [f"no CI history with traces recorded for test {key!r} (tcfl ingest): ranked without it"]
    return runs, []


def run_coroutine(make: Callable[[], Coroutine[Any, Any, Any]], no_io: bool) -> Any:
    """The result of ``make()``'s coroutine; with ``no_io`` first tried without an event loop.

    Without a model client a triage awaits nothing that suspends, so its coroutine finishes on
    its first step and importing asyncio (~20 ms of a ~0.5 s cold start) buys nothing. One that
    does suspend or needs a running loop is closed and run again under asyncio: the static
    phase is pure, so running it twice changes nothing but the time.
    """
    if no_io:
        coroutine = make()
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        except RuntimeError:  # asked for the running loop
            pass
        coroutine.close()
    import asyncio

    return asyncio.run(make())


async def _triage(
    scripts: list[Script],
    log: str,
    options: TriageOptions,
    client: ModelClient | None,
    history: tuple[Any, ...] = (),
    limits: CostLimits | None = None,
) -> tuple[TriageResult, dict[str, Any] | None]:
    """The result, and the history section when the test's runs were fused in."""
    try:
        if history:
            import asyncio

            from app.history.surface import HistoryChoice, triage_with_history

            choice = HistoryChoice("auto", options.history_window, options.history_k)
            result, _, section = await asyncio.to_thread(
                triage_with_history, scripts, log, options, history, choice, limits
            )
            return result, section
        return await triage(scripts, log, options, client=client, limits=limits), None
    finally:
        if client is not None:
            await client.aclose()


def format_result(result: TriageResult, extra_warnings: Sequence[str] | None = None) -> str:
    """The report: the ranking with code previews, then where it came from and what it cost.

    ``tcfl triage`` passes no warnings (it prints them on stderr, once each); a report that stands
    alone (``tcfl ci``'s text) passes them and gets them at the end, the result's own included.
    """
    out: list[str] = []
    out.append(f"Error: {printable(result.error_message) or '(no error message found in the log)'}")
    ranker = result.ranker if result.model is None else f"{result.ranker} ({result.model})"
    if result.fallback_reason:
        ranker += " (fallback: the model did not answer; see the warning)"
    shown = len(result.ranking)
    asked = "" if shown == result.k else f" (of {result.k} asked: the trace holds no more)"
    out.append(
        f"Top {shown} {result.level}s{asked} by {ranker}; trace {result.variant}: "
        f"{result.kept_lines}/{result.total_lines} lines kept ({result.pruning_rate:.0%} pruned)"
    )
    if not result.evidence_found:
        out.append("No evidence in the log: this ranking is a guess (see the warning)")
    out.append("")
    for item in result.ranking:
        span = (
            f"{item.start_line}" if item.start_line == item.end_line else f"{item.start_line}-{item.end_line}"
        )
        score = "" if item.score is None else f"  score {item.score:.2f}"
        out.append(f"{item.rank:>2}. {item.id}  {item.path}:{span}{score}")
        out.append(f"    why: {item.reason}")
        for ev in item.evidence[:EVIDENCE_LINES]:
            origin = f"  <- log line {ev.source_line}" if ev.source_line else ""
            detail = printable(ev.detail)
            out.append(f"      [{ev.channel}] {ev.path}:{ev.line} {detail} (+{ev.weight:.2f}){origin}")
        code = item.code.splitlines()
        for line in code[:CODE_PREVIEW_LINES]:
            out.append(f"    | {line}")
        if len(code) > CODE_PREVIEW_LINES:
            out.append(f"    | ... ({len(code) - CODE_PREVIEW_LINES} more lines)")
    if not result.ranking:
        out.append("(nothing to rank: no code is left in the trace)")
    out.append("")
    if result.tokens is not None:
        out.append(f"Tokens: {result.tokens[0]} in, {result.tokens[1]} out")
    timings = f"static {result.static_ms:.1f} ms, model {result.model_ms:.1f} ms"
    out.append(f"Time: {timings}, total {result.total_ms:.1f} ms")
    counts = result.postprocess
    if counts.invalid or counts.duplicates or counts.mismatches:
        out.append(
            f"Post-processing: {counts.invalid} invalid, {counts.duplicates} duplicate, "
            f"{counts.mismatches} mismatched ({counts.repaired} repaired)"
        )
    if extra_warnings is not None:
        for warning in dict.fromkeys([*extra_warnings, *result.warnings]):
            out.append(f"warning: {printable(warning)}")
    return "\n".join(out) + "\n"
