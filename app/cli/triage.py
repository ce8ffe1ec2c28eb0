"""`tcfl triage`: rank the most suspicious functions, blocks or lines of a failing test script."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from app.analysis.limits import CostLimits, InputTooCostly
from app.analysis.model import Script
from app.cli import EXIT_NO_EVIDENCE, EXIT_OK, UsageError
from app.cli.flags import MODEL_ONLY, add_option_flags, flag_of, options_given
from app.cli.io import check_log_format, load_settings, read_log, read_scripts
from app.emit.text import format_result, printable
from app.localize.result import TriageResult
from app.options import TriageOptions, before_of, resolve_options
from app.settings import Settings
from app.triage import check_options, finish, history_skipped, triage

if TYPE_CHECKING:
    from app.localize.llm import ModelClient

GUESS_EXIT = EXIT_NO_EVIDENCE  # ranked, but nothing in the failure pointed anywhere: the ranking is a guess


OPTIONS = (
    "level",
    "k",
    "trace",
    "ranker",
    "output_format",
    "prompt_style",
    "ranker_model",
    "prompt_budget",
    "two_phase",
    "line_to_block",
    "log_functions",
    "log_format",
    "history",
    "history_window",
    "history_k",
    "history_before",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("triage", help="rank the most suspicious elements of a failing test script")
    p.add_argument("scripts", nargs="+", metavar="SCRIPT", help="test script(s) of the failing test")
    p.add_argument("--log", required=True, metavar="FILE", help="the failure log ('-' for standard input)")
    add_option_flags(
        p, *OPTIONS, history="use the test's recorded CI history when --test is given (default auto)"
    )
    p.add_argument(
        "--model-url",
        metavar="URL",
        help="OpenAI-compatible base URL ending in /v1 (overrides TCFL_MODEL_URL)",
    )
    p.add_argument(
        "--model", metavar="NAME", help="model name (default: TCFL_MODEL, else the server's first model)"
    )
    p.add_argument(
        "--json", action="store_true", help="machine-readable triage result (JSON; keys are only ever added)"
    )
    p.add_argument("--no-store", action="store_true", help="do not record the result in the database")
    p.add_argument(
        "--db",
        metavar="URL",
        help="database to record the result in (default: TCFL_DATABASE_URL, else tcfl.db in the "
        "per-user data folder)",
    )
    p.add_argument("--test-id", help="label stored with the result (the dashboard filters on it)")
    p.add_argument(
        "--test",
        metavar="KEY",
        help="the failing test's key in the CI history (tcfl ingest); with --history auto, its runs"
        " are fused into the ranking",
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
        options = resolve_options(settings, **options_given(args, *OPTIONS))
        options = check_options(options)
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
    runs, note = _history(settings, args, options, client)
    try:
        limits = settings.cost_limits()
        result = finish(
            lambda: _triage(scripts, log, options, client, limits, args.test, runs, note),
            no_io=client is None,
        )
    except InputTooCostly as exc:
        raise UsageError(f"{exc} (set TCFL_{exc.setting.upper()} to raise the limit)") from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    result_warnings = [*warnings, *log_warnings]
    body = result.to_dict()
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
            from app.store.sqlite_plain import safe_url

            sys.stdout.write(
                f"\nSaved as triage {saved} in {safe_url(settings.database_url)}"
                f" (see it with `tcfl serve`: /triage/{saved})\n"
            )
    # warnings (the model fallback among them) once each, on stderr, in both output modes
    for warning in dict.fromkeys([*result_warnings, *result.warnings]):
        print(f"tcfl: warning: {printable(warning)}", file=sys.stderr)
    return EXIT_OK if result.evidence_found or not result.ranking else GUESS_EXIT


def _model_only_flags(args: argparse.Namespace) -> list[str]:
    """The flags given on this command line that only the model ranker reads."""
    given = [("model_url", "--model-url"), ("model", "--model"), *((n, flag_of(n)) for n in MODEL_ONLY)]
    return [flag for attr, flag in given if getattr(args, attr, None) not in (None, False)]


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

    Through ``sqlite_plain.record``: the same rows as ``Store.record_triage``; a SQLite file at the
    current schema is written with the ``sqlite3`` module, so a cold start loads no SQLAlchemy
    (any other database, or a file to create or migrate, goes through SQLAlchemy Core).
    """
    from app.store.rows import Submission
    from app.store.sqlite_plain import record, safe_url

    case = Submission(scripts=tuple(scripts), log=log, options=options.to_dict(), test_id=test_id)
    try:
        return record(settings.database_url, case, body).id
    except Exception as exc:  # the ranking is printed either way
        warnings.append(
            f"result not stored in {safe_url(settings.database_url)}: {type(exc).__name__}: {exc}"
        )
        return None


def _history(
    settings: Settings, args: argparse.Namespace, options: TriageOptions, client: ModelClient | None
) -> tuple[tuple[Any, ...], str | None]:
    """The test's recorded runs when a test is named and history applies; else why not (the
    result's note: a history that could not be read among the reasons)."""
    key = args.test
    if not key:
        return (), None
    skipped = history_skipped(options, model_configured=client is not None)
    if skipped is not None:
        return (), skipped
    from app.store.history import HistoryStore
    from app.store.store import Store, safe_url

    try:
        store = Store.open(settings.database_url)
        try:
            history = HistoryStore(store)
            runs = tuple(history.history_runs(key, limit=options.history_window, before=before_of(options)))
        finally:
            store.close()
    except Exception as exc:  # no history is a warning, never a failed triage
        why = f"CI history not read from {safe_url(settings.database_url)}: {type(exc).__name__}: {exc}"
        return (), why
    return runs, None


async def _triage(
    scripts: list[Script],
    log: str,
    options: TriageOptions,
    client: ModelClient | None,
    limits: CostLimits,
    test: str | None,
    runs: tuple[Any, ...],
    note: str | None,
) -> TriageResult:
    """The one triage path, the model client closed afterwards."""
    try:
        return await triage(
            scripts, log, options, client=client, limits=limits, test=test, history=runs, note=note
        )
    finally:
        if client is not None:
            await client.aclose()
