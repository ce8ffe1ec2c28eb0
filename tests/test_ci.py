"""app/ci.py: a job's failed tests triaged with each log parsed once, the answers unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
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


def test_a_recording_triager_keeps_each_failures_facts_as_recording_computes_them(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from app.history.facts import batch_facts
    from app.ingest.job import Job
    from app.launch import run_records

    results = read_results(_junit(tmp_path), "auto")
    options = TriageOptions(ranker="heuristic", k=3)
    recording = local_triager(options, None, record=True)
    checkout = Checkout.scan(SUITE)
    report = asyncio.run(triage_results(results, checkout, recording))
    assert _report(recording, results) == _report(local_triager(options, None), results)  # same answers
    assert recording.facts is not None and set(recording.facts) == set(results.failed)
    when = datetime(2024, 1, 1, tzinfo=UTC)
    kept = run_records(report, Job(), when, checkout=checkout, facts=recording.facts)
    plain = run_records(report, Job(), when, checkout=checkout)
    computed = batch_facts(plain)
    failed = [i for i, r in enumerate(plain) if r.verdict == "fail"]
    assert len(failed) == 6 and all(plain[i].facts is None for i in failed)
    for i in failed:
        assert kept[i].facts == computed[i]  # paths, err_sig, message, packed trace, printed values
        assert kept[i].facts is not None and kept[i].facts.facts[0] == kept[i].err_sig
    assert all(kept[i].facts is None for i in range(len(kept)) if i not in failed)  # passes: recorded later


def test_a_triage_analysed_unlike_recording_keeps_no_facts(tmp_path: Path) -> None:
    results = read_results(_junit(tmp_path), "auto")
    for options in (
        TriageOptions(ranker="heuristic", log_functions=("report",)),
        TriageOptions(ranker="heuristic", trace="t0"),
        TriageOptions(ranker="heuristic", log_format="plain"),
    ):
        triager = local_triager(options, None, record=True)
        asyncio.run(triage_results(results, Checkout.scan(SUITE), triager))
        assert triager.facts == {}
    assert local_triager(TriageOptions(), None).facts is None  # not recording


def test_a_stored_triages_id_keeps_the_failures_signature_and_marks_its_result_when_asked(
    tmp_path: Path,
) -> None:
    results = read_results(_junit(tmp_path), "auto")
    options = TriageOptions(ranker="heuristic", k=3)
    report = asyncio.run(triage_results(results, Checkout.scan(SUITE), local_triager(options, None)))
    item = report.triaged[0]
    assert item.result is not None and item.triage_id is None
    signature = item.signature
    stored = item.with_triage_id(7)
    assert stored.triage_id == 7 and stored.result is not None and stored.result.id is None
    assert stored.signature == signature
    marked = item.with_triage_id(8, on_result=True)
    assert marked.triage_id == 8 and marked.result is not None and marked.result.id == "8"
    # computed afresh (``replace`` keeps no cached value) it is the same id: the kept one is not stale
    assert replace(item, triage_id=9).signature == signature and len(signature) == 40


def test_passes_get_their_facts_beside_a_failure_with_their_scripts_as_recording_computes_them(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime

    from app.history.facts import batch_facts
    from app.ingest.job import Job
    from app.ingest.resolve import find_scripts
    from app.launch import run_records

    results = read_results(_junit(tmp_path), "auto")
    recording = local_triager(TriageOptions(ranker="heuristic", k=3), None, record=True)
    checkout = Checkout.scan(SUITE)
    report = asyncio.run(triage_results(results, checkout, recording))
    passing = [r for r in results.runs if r.verdict == "pass"]
    assert passing and recording.passes is not None and set(recording.passes) == set(passing)
    when = datetime(2024, 1, 1, tzinfo=UTC)
    kept = run_records(report, Job(), when, checkout=checkout, passes=recording.passes)
    plain = run_records(report, Job(), when, checkout=checkout)
    computed = batch_facts(plain)
    for i, record in enumerate(plain):
        if record.verdict != "pass":
            continue
        scripts, facts = recording.passes[results.runs[i]]
        assert scripts == record.scripts == tuple(find_scripts(results.runs[i], checkout)[0])
        assert facts is not None and kept[i].facts == facts == computed[i]  # traced as recorded
        assert facts.packed is not None  # its must-run lines


def test_passes_whose_scripts_no_failure_has_keep_their_scripts_and_get_facts_when_recorded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(
        "<testsuite name='s'><testcase classname='test_links.TestLinks' name='test_ports_known'/></testsuite>"
    )
    results = read_results(path, "auto")
    recording = local_triager(TriageOptions(ranker="heuristic", k=3), None, record=True)
    asyncio.run(triage_results(results, Checkout.scan(SUITE), recording))
    assert recording.passes is not None
    [(scripts, facts)] = recording.passes.values()
    assert scripts[0].path == "test_links.py" and facts is None
