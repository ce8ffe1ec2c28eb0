"""app/ci.py: a job's failed tests triaged with each log parsed once, the answers unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from app.analysis.model import Script
from app.ci import LocalTriager, local_triager, triage_results
from app.ingest import read_results
from app.ingest.base import TestRun
from app.ingest.resolve import Checkout
from app.localize.result import TriageResult
from app.options import TriageOptions

SUITE = Path(__file__).parent / "data" / "ci" / "suite"
TRACEBACKS = {
    "test_link_speed": 'Traceback (most recent call last):\n  File "/ci/build/test_links.py", line 20, in '
    'test_link_speed\n    self.assertEqual(speed, 10000, "eth0 must run at 10G")\n'
    "AssertionError: 1000 != 10000 : eth0 must run at 10G",
    "test_jumbo_mtu": 'Traceback (most recent call last):\n  File "/ci/build/test_links.py", line 24, in '
    'test_jumbo_mtu\n    mtu = port_mtu("eth1")\n  File "/ci/build/helpers/inventory.py", line 22, in '
    "port_mtu\n    return port[\"mtu\"]\nKeyError: 'mtu'",
}


def _junit(tmp_path: Path) -> Path:
    cases = []
    for i in range(6):
        name = list(TRACEBACKS)[i % 2]
        text = TRACEBACKS[name].replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
        cases.append(
            f'<testcase classname="test_links.TestLinks" name="{name}"><failure message="x">{text}'
            f"</failure><system-out>INFO checking link speed on eth{i % 2}\n</system-out></testcase>"
        )
    cases.append('<testcase classname="test_links.TestLinks" name="test_ports_known"/>')
    path = tmp_path / "junit.xml"
    path.write_text(f"<testsuite name='s'>{''.join(cases)}</testsuite>")
    return path


def _report(triager: object, results: object) -> list[dict[str, object]]:
    report = asyncio.run(triage_results(results, Checkout.scan(SUITE), triager))  # type: ignore[arg-type]
    tests = report.to_dict()["tests"]
    for test in tests:
        test["result"].pop("timings")
        test["result"].pop("options")
    return tests


def test_a_log_parsed_once_for_scripts_and_triage_gives_the_answers_of_two_parses(tmp_path: Path) -> None:
    results = read_results(_junit(tmp_path), "auto")
    options = TriageOptions(ranker="heuristic", k=3)
    local = local_triager(options, None)
    assert isinstance(local, LocalTriager)

    async def plain(run: TestRun, scripts: Sequence[Script]) -> TriageResult:
        return await local(run, scripts)  # another triager: the log is parsed where it always was

    shared = _report(local, results)
    assert shared == _report(plain, results)
    assert [t["scripts"] for t in shared[:2]] == [["test_links.py", "helpers/inventory.py"]] * 2
    assert shared[0]["result"]["ranking"] != shared[1]["result"]["ranking"]  # each its own log
    assert all(t["triaged"] for t in shared)


def test_a_configured_log_format_parses_the_log_for_the_analysis_apart(tmp_path: Path) -> None:
    results = read_results(_junit(tmp_path), "auto")
    local = local_triager(TriageOptions(ranker="heuristic", log_format="plain"), None)
    assert all(local.parse(run) is None for run in results.failed)
    assert all(t["triaged"] for t in _report(local, results))
