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
from pathlib import Path
from typing import Any

import pytest

SUMMARY_ITEMS = 3


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tcfl", "tcfl: fault localization of the failed tests' code")
    group.addoption("--tcfl", action="store_true", default=False, help="triage every failed test at the end")
    group.addoption(
        "--tcfl-out", metavar="DIR", help="also write the text/json/markdown/github/junit/sarif outputs here"
    )
    group.addoption(
        "--tcfl-ranker",
        default="auto",
        choices=("auto", "llm", "heuristic"),
        help="default: auto (model if set)",
    )
    group.addoption("--tcfl-root", metavar="DIR", help="where the scripts are (default: the rootdir)")


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
        if not failed:
            return
        terminalreporter.write_sep("=", f"tcfl triage of {len(failed)} failed test(s)")
        try:
            report = self._triage()
            for line in summary_lines(report):
                terminalreporter.write_line(line)
            out = config.getoption("tcfl_out")
            if out:
                written = write_outputs(report, Path(out))
                terminalreporter.write_line(f"tcfl: wrote {', '.join(str(p) for p in written)}")
        except Exception as exc:  # the session's outcome is the tests', never ours
            terminalreporter.write_line(f"tcfl: triage failed: {type(exc).__name__}: {exc}")

    def _triage(self) -> Any:
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

        async def work() -> Any:
            client = None if ranker == "heuristic" else ModelClient.from_settings(settings)
            try:
                triager = local_triager(options, client, limits=settings.cost_limits())
                return await triage_results(results, checkout, triager)
            finally:
                if client is not None:
                    await client.aclose()

        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a test loop may still be running here
            return pool.submit(asyncio.run, work()).result()


def summary_lines(report: Any) -> list[str]:
    lines = []
    for item in report.triaged:
        lines.append(f"{item.run.test_id}: {item.error or '(no error message)'}")
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
