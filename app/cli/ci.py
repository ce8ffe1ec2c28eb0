"""``tcfl ci``: triage every failed test a CI job reported, grouped by failure signature.

Exit status: 0 when every failed test was triaged (or none failed), 1 when some could not be
(each is named on stderr), 2 on usage errors (bad arguments, unreadable results files).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from app.ci import CiReport, Triager, local_triager, triage_results
from app.cli import UsageError
from app.cli.flags import add_option_flags, options_given
from app.cli.io import load_settings
from app.emit import FORMATS
from app.ingest import FORMATS as RESULT_FORMATS
from app.ingest import IngestError, Results, merge, read_folder, read_results
from app.ingest.archive import extract, is_archive
from app.ingest.resolve import Checkout
from app.localize.llm import ModelClient
from app.options import resolve_options
from app.triage import check_options, history_skipped

if TYPE_CHECKING:
    from app.store.store import Store


OPTIONS = ("level", "k", "trace", "ranker", "ranker_model", "log_functions", "log_format", "history")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ci", help="triage every failed test of a CI job's results, grouped by signature")
    p.add_argument(
        "results",
        nargs="+",
        metavar="RESULTS",
        help="JUnit XML, pytest --report-log JSONL, an avocado job folder, a subunit v2 stream, "
        "a job log, or a .tar.gz/.zip holding them",
    )
    p.add_argument(
        "--root", metavar="DIR", help="the checkout the tests ran from (default: the current folder)"
    )
    p.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    p.add_argument("--out", metavar="FILE", help="write the output here instead of standard output")
    p.add_argument("--results-format", choices=RESULT_FORMATS, default="auto", help="default: detect")
    add_option_flags(p, *OPTIONS, k="elements to rank per failed test (default: 5)")
    p.add_argument("--model-url", metavar="URL", help="OpenAI-compatible base URL ending in /v1")
    p.add_argument(
        "--db",
        metavar="URL",
        help="record every test's run (passes too) in this database's CI history "
        "(default TCFL_DATABASE_URL, else the per-user database)",
    )
    p.add_argument(
        "--job-url", metavar="URL", help="the CI job's URL: a run is recorded once per job and test"
    )
    p.add_argument("--commit", metavar="SHA", help="the commit the job tested, kept with each run")
    p.add_argument("--no-store", action="store_true", help="record nothing in the CI history")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    try:
        options = check_options(resolve_options(settings, **options_given(args, *OPTIONS)))
        client = (
            None
            if options.ranker == "heuristic"
            else ModelClient.from_settings(settings, model_url=args.model_url)
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if options.ranker == "llm" and client is None:
        raise UsageError("--ranker llm needs a model server: pass --model-url or set TCFL_MODEL_URL")
    with tempfile.TemporaryDirectory(prefix="tcfl-ci-") as work:
        root = _root(args.root, Path(work) / "root")
        results = _read_all(args.results, args.results_format, Path(work) / "results")
        checkout = Checkout.scan(root)
        url = args.db or settings.database_url
        # the recorded runs are read where they may be fused: with the history ranker, or whenever
        # this job is recorded (the database is opened then anyway)
        store = (
            _history_store(url)
            if history_skipped(options, model_configured=client is not None) is None
            and (not args.no_store or options.ranker == "history")
            else None
        )
        reader = None
        if store is not None:
            from app.store.history import HistoryStore

            history = HistoryStore(store)
            reader = lambda test, window: history.history_runs(test, limit=window)  # noqa: E731
        try:
            triager = local_triager(options, client, history=reader, limits=settings.cost_limits())
            report = asyncio.run(_triage(results, checkout, triager, client, settings.max_files_per_case))
        finally:
            if store is not None:
                store.close()
        if not args.no_store:
            _record(report, checkout, args, args.db or settings.database_url)
    from app.emit import emit

    text = emit(report, args.format)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc.strerror}") from None
    else:
        sys.stdout.write(text)
    for item in report.untriaged:
        print(f"tcfl ci: not triaged: {item.run.test_id}: {item.problem}", file=sys.stderr)
    return 1 if report.untriaged else 0


async def _triage(
    results: Results, checkout: Checkout, triager: Triager, client: ModelClient | None, max_files: int
) -> CiReport:
    try:
        return await triage_results(results, checkout, triager, max_files=max_files)
    finally:
        if client is not None:
            await client.aclose()


def _history_store(url: str) -> Store | None:
    """The CI history's store, or None (with a warning) when it cannot be opened: a job is
    triaged without history rather than not at all."""
    from app.store.store import Store, safe_url

    try:
        return Store.open(url)
    except Exception as exc:
        print(
            f"tcfl ci: warning: CI history not read from {safe_url(url)}: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return None


def _record(report: CiReport, checkout: Checkout, args: argparse.Namespace, url: str) -> None:
    """Every test's run into the CI history, with its scripts from the checkout (passes too), so
    history grows with each CI job; a database problem is a warning, never a lost report."""
    from dataclasses import replace

    from app.store.history import HistoryStore, records_from_ci
    from app.store.store import Store, safe_url

    records = [
        replace(record, job_url=args.job_url or record.job_url, commit=args.commit)
        for record in records_from_ci(
            report, ", ".join(args.results), checkout=checkout, resolve_failures=True
        )
    ]
    try:
        store = Store.open(url)
        try:
            created = HistoryStore(store).add_runs(records)
        finally:
            store.close()
    except Exception as exc:
        print(
            f"tcfl ci: warning: runs not recorded in {safe_url(url)}: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return
    new = sum(not c["duplicate"] for c in created)
    print(
        f"tcfl ci: recorded {new} new run(s) of {len(created)} in the CI history ({safe_url(url)})",
        file=sys.stderr,
    )


def _root(name: str | None, work: Path) -> Path:
    if name is None:
        return Path.cwd()
    path = Path(name)
    if path.is_file() and is_archive(path.name):
        try:
            extract(path.read_bytes(), work, name=name)
        except IngestError as exc:
            raise UsageError(str(exc)) from None
        return work
    if not path.is_dir():
        raise UsageError(f"--root {name}: not a folder (or a .tar.gz/.zip checkout)")
    return path


def _read_all(names: list[str], fmt: str, work: Path) -> Results:
    """Every results file named, archives unpacked into the work folder first."""
    parts: list[Results] = []
    for n, name in enumerate(names):
        path = Path(name)
        try:
            if path.is_file() and is_archive(path.name):
                folder = work / str(n)
                extract(path.read_bytes(), folder, name=name)
                parts.extend(read_folder(folder, fmt, name))
            else:
                parts.append(read_results(path, fmt))
        except IngestError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"{name}: cannot read ({exc.strerror})") from None
    return merge(parts)
