"""``tcfl ci``: triage every failed test a CI job reported, grouped by failure signature.

The job is recorded (``--no-store``: not) as a launch: every test's run in the CI history, each
triage, and which failures are known issues. Exit status (``--fail-on untriaged``, the default):
0 when every failed test was triaged (or none failed), 1 when some could not be (each is named
on stderr); ``--fail-on new``: 1 when a failure is not a known issue; 2 on usage errors (bad
arguments, unreadable results files).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.analysis.gcpause import freeze_large_pauses
from app.ci import CiReport, HistoryReader, LocalTriager, Triager, history_key, local_triager, triage_results
from app.cli import UsageError
from app.cli.flags import add_job_flags, add_option_flags, job_given, options_given
from app.cli.io import load_settings
from app.emit import FORMATS
from app.ingest import FORMATS as RESULT_FORMATS
from app.ingest import IngestError, Results, merge, read_folder, read_results
from app.ingest.archive import extract, is_archive
from app.ingest.job import Job, digest, start_of
from app.ingest.resolve import Checkout
from app.localize.llm import ModelClient
from app.options import TriageOptions, resolve_options
from app.triage import check_options, history_skipped

if TYPE_CHECKING:
    from app.store.history import HistoryStore
    from app.store.store import Store


OPTIONS = ("level", "k", "trace", "ranker", "ranker_model", "log_functions", "log_format", "history")
# the job's start bounds the history read (``history_before``): not a flag of its own here
FAIL_ON = ("untriaged", "new", "any", "never")


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
    add_job_flags(p)
    p.add_argument("--no-store", action="store_true", help="record nothing in the CI history")
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="untriaged",
        help="exit 1 when: a failed test could not be triaged (default); a failure is not a known "
        "issue (new); any test failed (any); never",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with _no_full_collections():  # the report's output too: the job's parses are still alive then
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    settings = load_settings()
    try:
        options = check_options(resolve_options(settings, **options_given(args, *OPTIONS)))
        client = (
            None
            if options.ranker == "heuristic"
            else ModelClient.from_settings(settings, model_url=args.model_url)
        )
        job = job_given(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if options.ranker == "llm" and client is None:
        raise UsageError("--ranker llm needs a model server: pass --model-url or set TCFL_MODEL_URL")
    url = args.db or settings.database_url
    with tempfile.TemporaryDirectory(prefix="tcfl-ci-") as work:
        root = _root(args.root, Path(work) / "root")
        results, files = _read_all(args.results, args.results_format, Path(work) / "results")
        job = job.given(digest=digest(*files), source=", ".join(Path(n).name for n in args.results)[:255])
        checkout = Checkout.scan(root)
        # the database is opened to record this job, or to read the history the ranker asks for
        store = _open_store(url) if not args.no_store or options.ranker == "history" else None
        try:
            if store is None:  # no database: nothing recorded its start (and no SQLAlchemy to import)
                started = start_of(job, None, results.started_at)
            else:
                from app.store.jobs import job_started

                started = job_started(store, job, results.started_at)
            # only runs recorded before this job: a failure is ranked with its past
            options = replace(options, history_before=options.history_before or started.isoformat())
            reader = None
            if store is not None and history_skipped(options, model_configured=client is not None) is None:
                from app.store.history import HistoryStore

                reader = _history_reader(HistoryStore(store), results)
            recording = store is not None and not args.no_store
            # the runs' facts are kept from the triages, unless the job was recorded before: then
            # its runs are stored already and no facts are computed for them at all
            triager = local_triager(
                options,
                client,
                history=reader,
                limits=settings.cost_limits(),
                record=recording and store is not None and not _recorded_before(store, job),
            )
            report = _triaged(results, checkout, triager, client, settings.max_files_per_case)
            if store is not None and recording:
                report = _record(store, report, job, started, checkout, options, triager)
        finally:
            if store is not None:
                store.close()
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
    return exit_status(report, args.fail_on)


# young objects still alive when an analysis' or a ranking's pause of the collector ends, over
# which they are frozen: a new set of scripts' parse and facts (tens of thousands), not one
# failure's answer (a few thousand)
FREEZE_AFTER = 20_000


@contextmanager
def _no_full_collections() -> Iterator[None]:
    """No automatic full collection while the job is triaged, recorded and reported: its parses stay
    alive (many objects each), and every full collection walks all of them for nothing (a third of
    a large job's CPU). Young collections still free the cyclic garbage each test leaves. What a
    new set of scripts keeps for the rest of the job (its parse and facts, built while the
    collector is paused) is frozen at once (``freeze_large_pauses``): the young and then the
    middle collection would each walk it again (about 7 % of the job's CPU on the generated
    10,000-test job, for 8 MiB more at the peak)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 1_000_000)
    freeze_large_pauses(FREEZE_AFTER)
    try:
        yield
    finally:
        freeze_large_pauses(0)
        gc.set_threshold(*thresholds)


def exit_status(report: CiReport, fail_on: str) -> int:
    """1 when the job should fail by ``--fail-on``: an untriaged test, a new failure, any failure."""
    if fail_on == "new":
        return 1 if report.new_failures else 0
    if fail_on == "any":
        return 1 if report.triaged else 0
    if fail_on == "never":
        return 0
    return 1 if report.untriaged else 0


def _triaged(
    results: Results, checkout: Checkout, triager: Triager, client: ModelClient | None, max_files: int
) -> CiReport:
    """``_triage`` run to its end. The report is handed out beside the event loop's main task, not
    as its result: on its way out ``asyncio.run`` (Python 3.11) looks the SIGINT handler up, which
    holds that task, and the lookup formats the task with its result, every triage of the job."""
    found: list[CiReport] = []

    async def main() -> None:
        found.append(await _triage(results, checkout, triager, client, max_files))

    asyncio.run(main())
    return found[0]


async def _triage(
    results: Results, checkout: Checkout, triager: Triager, client: ModelClient | None, max_files: int
) -> CiReport:
    try:
        return await triage_results(results, checkout, triager, max_files=max_files)
    finally:
        if client is not None:
            await client.aclose()


def _history_reader(history: HistoryStore, results: Results) -> HistoryReader:
    """Each failed test's recorded runs (``HistoryStore.history_runs``); the tests the history
    holds are looked up once for the whole job, so a test it does not hold costs no query. Nothing
    is recorded until every failure is triaged: the answers are the ones asked one by one (as the
    history stood when the job's triage began)."""
    keys: list[str] = []
    for run in results.failed:
        try:
            keys.append(history_key(run))
        except ValueError:  # no key: its triage reads no history either
            continue
    held = history.held(keys)

    def read(test: str, window: int, before: datetime | None) -> list[Any]:
        if test not in held:
            return []
        return history.history_runs(test, limit=window, before=before)

    return read


def _recorded_before(store: Store, job: Job) -> bool:
    """Whether the store holds this job's launch (an unreadable one counts as not)."""
    from app.store.launches import LaunchStore

    try:
        return LaunchStore(store).find(job.identity) is not None
    except Exception:  # the recording reports a database problem; here it only costs time
        return False


def _open_store(url: str) -> Store | None:
    """The database, or None (with a warning) when it cannot be opened: a job is triaged without
    history, and not recorded, rather than not triaged at all."""
    from app.store.store import Store, safe_url

    try:
        return Store.open(url)
    except Exception as exc:
        print(
            f"tcfl ci: warning: CI history not read from {safe_url(url)}: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return None


def _record(
    store: Store,
    report: CiReport,
    job: Job,
    started: datetime,
    checkout: Checkout,
    options: TriageOptions,
    triager: LocalTriager,
) -> CiReport:
    """The job into the store (``app.store.jobs.record_job``); a database problem is a warning,
    never a lost report."""
    from app.store.jobs import record_job
    from app.store.store import safe_url

    url = safe_url(str(store.engine.url))
    try:
        report, recorded = record_job(
            store, report, job, started, checkout, options, triager.parses, triager.facts, triager.passes
        )
    except Exception as exc:
        print(f"tcfl ci: warning: runs not recorded in {url}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return report
    launch = "" if recorded.new else " (this job was recorded before)"
    print(
        f"tcfl ci: recorded {recorded.new_runs} new run(s) of {len(recorded.runs)} "
        f"in the CI history ({url}); launch {recorded.launch_id}{launch}",
        file=sys.stderr,
    )
    return report


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


def _read_all(names: list[str], fmt: str, work: Path) -> tuple[Results, list[bytes]]:
    """Every results file named, archives unpacked into the work folder first; and the bytes of
    each (an avocado job folder's ``results.json``), whose digest names the job when CI does not."""
    parts: list[Results] = []
    files: list[bytes] = []
    for n, name in enumerate(names):
        path = Path(name)
        try:
            if path.is_file() and is_archive(path.name):
                folder = work / str(n)
                data = path.read_bytes()
                files.append(data)
                extract(data, folder, name=name)
                parts.extend(read_folder(folder, fmt, name))
            else:
                parts.append(read_results(path, fmt))
                inside = path / "results.json" if path.is_dir() else path
                files.append(inside.read_bytes() if inside.is_file() else name.encode("utf-8"))
        except IngestError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"{name}: cannot read ({exc.strerror})") from None
    return merge(parts), files
