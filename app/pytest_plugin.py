"""The tcfl pytest plugin: triage every failed test at the end of the session.

Installed with tcfl (entry point ``pytest11``) but off until ``--tcfl`` or ``-p tcfl``. It
collects each failed test's captured output and report, finds its scripts under the rootdir,
runs ``app.triage.triage``, prints a short summary and, with ``--tcfl-out DIR``, writes every
``tcfl ci`` output format there. It never changes the session's outcome or exit status: any
problem of its own is printed as one line. Loading the plugin imports nothing else of tcfl, so
sessions that leave it off pay nothing for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

SUMMARY_ITEMS = 3
# the options that name the CI job (``app.ingest.job``; kept here: loading the plugin imports no
# other module of tcfl): field, metavar, help
JOB_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("job_url", "URL", "the CI job's URL (default: from the CI's environment)"),
    ("commit", "SHA", "the commit tested (default: from the CI's environment)"),
    ("pipeline", "NAME", "the pipeline the job belongs to"),
    ("job_id", "ID", "the job's id in its pipeline"),
    ("started_at", "TIME", "when the job started, ISO 8601 (default: the session's start)"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tcfl", "tcfl: fault localization of the failed tests' code")
    group.addoption("--tcfl", action="store_true", default=False, help="triage every failed test at the end")
    group.addoption(
        "--tcfl-out", metavar="DIR", help="also write the text/json/markdown/github/junit/sarif outputs here"
    )
    group.addoption(
        "--tcfl-ranker",
        default="auto",
        choices=("auto", "llm", "heuristic", "history"),
        help="default: auto (model if set)",
    )
    group.addoption("--tcfl-root", metavar="DIR", help="where the scripts are (default: the rootdir)")
    group.addoption(
        "--tcfl-db",
        metavar="URL",
        help="record the session as a CI job (every test's run, passes too) in this database, and "
        "rank each failure with its test's runs recorded before",
    )
    for name, metavar, text in JOB_OPTIONS:
        group.addoption(f"--tcfl-{name.replace('_', '-')}", metavar=metavar, help=text)
    group.addoption(
        "--tcfl-no-ci-env",
        action="store_true",
        default=False,
        help="do not read the CI's environment variables",
    )


def enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("tcfl", False)) or "tcfl" in (config.getoption("plugins", None) or [])


def pytest_configure(config: pytest.Config) -> None:
    if enabled(config) and not config.pluginmanager.has_plugin("tcfl-session"):
        config.pluginmanager.register(TriageAtEnd(config), "tcfl-session")


class TriageAtEnd:
    """Collects the reports of failed tests; triages them when the terminal summary is written."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tests: dict[str, dict[str, Any]] = {}
        self.recorded: Any = None  # app.launch.Recorded, when the session was recorded (--tcfl-db)
        self.started = datetime.now(UTC)  # the session's start: its job's time when the CI gives none

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = self.tests.setdefault(
            report.nodeid, {"verdict": "pass", "sections": [], "reports": [], "error": "", "duration": 0.0}
        )
        test["duration"] += float(getattr(report, "duration", 0.0) or 0.0)
        test["path"] = report.location[0] if report.location else None
        if report.failed:
            if test["verdict"] != "error":
                test["verdict"] = "fail" if report.when == "call" else "error"
            test["reports"].append(report.longreprtext)
            crash = getattr(report.longrepr, "reprcrash", None)
            test["error"] = test["error"] or (
                crash.message.splitlines()[0] if crash and crash.message else ""
            )
            for title, content in report.sections:
                if content.strip():
                    test["sections"].append(f"{'-' * 20} {title} {'-' * 20}\n{content.rstrip()}")
        elif report.skipped and test["verdict"] == "pass":
            test["verdict"] = "skip"

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        failed = {k: v for k, v in self.tests.items() if v["verdict"] in ("fail", "error")}
        if not failed and not config.getoption("tcfl_db"):
            return
        terminalreporter.write_sep("=", f"tcfl triage of {len(failed)} failed test(s)")
        try:
            report = self._triage()
            for line in summary_lines(report):
                terminalreporter.write_line(line)
            if self.recorded is not None:
                terminalreporter.write_line(
                    f"tcfl: recorded {self.recorded.new_runs} new run(s) of {len(self.recorded.runs)}; "
                    f"launch {self.recorded.launch_id}"
                )
            out = config.getoption("tcfl_out")
            if out:
                written = write_outputs(report, Path(out))
                terminalreporter.write_line(f"tcfl: wrote {', '.join(str(p) for p in written)}")
        except Exception as exc:  # the session's outcome is the tests', never ours
            terminalreporter.write_line(f"tcfl: triage failed: {type(exc).__name__}: {exc}")

    def _job(self, runs: list[Any]) -> Any:
        """The CI job this session is: the flags, else the CI's environment, else the session's
        own results (their digest names it)."""
        import json
        import os

        from app.ingest.job import Job, digest, from_env

        opt = self.config.getoption
        base = Job() if opt("tcfl_no_ci_env") else from_env(os.environ)
        body = json.dumps([[r.test_id, r.verdict, r.log] for r in runs]).encode("utf-8")
        given = {name: opt(f"tcfl_{name}") for name, _, _ in JOB_OPTIONS}
        return base.given(**given, digest=digest(body), source="pytest session")

    def _triage(self) -> Any:
        from dataclasses import replace

        from app.ci import local_triager, triage_results
        from app.ingest.base import Results, TestRun, split_params
        from app.ingest.resolve import Checkout
        from app.localize.llm import ModelClient
        from app.options import resolve_options
        from app.settings import get_settings

        runs = []
        for nodeid, test in self.tests.items():
            _, params = split_params(nodeid)
            runs.append(
                TestRun(
                    test_id=nodeid,
                    verdict=test["verdict"],
                    log="\n".join([*test["sections"], *test["reports"]]),
                    error=test["error"],
                    duration_s=round(test["duration"], 6),
                    script_paths=(test["path"],) if test.get("path") else (),
                    suite="pytest",
                    params=params,
                )
            )
        ranker = self.config.getoption("tcfl_ranker")
        settings = get_settings()
        options = resolve_options(settings, ranker=ranker)
        root = Path(self.config.getoption("tcfl_root") or self.config.rootpath)
        checkout = Checkout.scan(root)
        results = Results("pytest", tuple(runs))
        job = self._job(runs)
        db = self.config.getoption("tcfl_db")
        store = reader = None
        if db:
            from app.store.history import HistoryStore
            from app.store.jobs import job_started
            from app.store.store import Store

            store = Store.open(db)
            started = job_started(store, job, self.started)
            options = replace(options, history_before=started.isoformat())  # ranked with its past only
            history = HistoryStore(store)
            reader = lambda test, window, before: history.history_runs(test, limit=window, before=before)  # noqa: E731

        async def work() -> Any:
            client = None if ranker in ("heuristic", "history") else ModelClient.from_settings(settings)
            try:
                triager = local_triager(options, client, history=reader, limits=settings.cost_limits())
                return await triage_results(results, checkout, triager)
            finally:
                if client is not None:
                    await client.aclose()

        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a test loop may still be running here
                report = pool.submit(asyncio.run, work()).result()
            if store is not None:
                from app.store.jobs import record_job

                report, recorded = record_job(store, report, job, started, checkout, options)
                self.recorded = recorded
            return report
        finally:
            if store is not None:
                store.close()


def summary_lines(report: Any) -> list[str]:
    from app.emit import status

    lines = []
    for item in report.triaged:
        said = status(report, item)
        lines.append(
            f"{item.run.test_id}: {item.error or '(no error message)'}" + (f" [{said}]" if said else "")
        )
        if item.result is None:
            lines.append(f"    not triaged: {item.problem}")
            continue
        for ranked in item.result.ranking[:SUMMARY_ITEMS]:
            where = f"{ranked.path}:{ranked.start_line}"
            if ranked.end_line != ranked.start_line:
                where += f"-{ranked.end_line}"
            lines.append(f"    {ranked.rank}. {where}  {ranked.id}  ({ranked.reason})")
    done = len(report.triaged) - len(report.untriaged)
    lines.append(
        f"tcfl: {done} of {len(report.triaged)} failed test(s) triaged, {len(report.groups)} failure group(s)"
    )
    return lines


def write_outputs(report: Any, folder: Path) -> list[Path]:
    from app.emit import FORMATS, SUFFIXES, emit

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in FORMATS:
        path = folder / f"tcfl{SUFFIXES[fmt]}"
        path.write_text(emit(report, fmt), encoding="utf-8")
        written.append(path)
    return written
