"""A wrong expected value: the check channel follows the expected operand of a failed comparison.

Real pytest (``--tb=long`` and ``--tb=short``) and ``python -m unittest`` run the scripts of
tests/data/expected (a copy) and print the failure logs; the built-in ranker, through the public
``triage``, must put the definition that wrote the expected value in its top 3 with its evidence.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.analysis.model import Script
from app.ci import local_triager, triage_results
from app.ingest import read_results
from app.ingest.resolve import Checkout
from app.localize.channels.expected import compared, parse_statement, printed
from app.localize.evidence import Channel
from app.localize.result import TriageOptions, TriageResult
from app.triage import triage

DATA = Path(__file__).parents[1] / "data" / "expected"
# (script, the test's name in pytest's section header, the line that wrote the expected value,
# a word of the evidence's sentence)
CASES = [
    ("test_helper_constant.py", "test_count", 10, "writes 4"),
    ("test_fixture_dict.py", "test_config", 14, "writes 8081"),
    ("test_module_constant.py", "test_attempts", 4, "writes 5"),
    ("test_param_default.py", "test_total", 4, "defaults to 10"),
    ("test_unittest_setup.py", "OrderTest.test_order", 13, "writes [1, 2, 4]"),
    ("test_class_attribute.py", "TestStatus.test_status", 9, "writes 'missing'"),
    ("test_expected_got.py", "test_version", 5, "writes '2.4.1'"),
]
HEURISTIC = TriageOptions(ranker="heuristic", k=3)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("expected") / "expected"
    shutil.copytree(DATA, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _run(root: Path, *args: str) -> str:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q", *args]
    done = subprocess.run(command, cwd=root, env=_env(), capture_output=True, text=True, timeout=120)
    return done.stdout


@pytest.fixture(scope="module")
def pytest_logs(copy: Path) -> dict[tuple[str, str], str]:
    """Each failed test's section of pytest's report, per traceback style: its own failure log."""
    logs: dict[tuple[str, str], str] = {}
    for style in ("long", "short"):
        report = _run(copy, f"--tb={style}", *(script for script, *_ in CASES))
        sections = re.split(r"^_{3,} (\S+) _{3,}$", report, flags=re.MULTILINE)
        for name, body in zip(sections[1::2], sections[2::2], strict=True):
            logs[(name, style)] = body.split("=" * 10, 1)[0]
    return logs


def _triage(root: Path, script: str, log: str, options: TriageOptions = HEURISTIC) -> TriageResult:
    scripts = [Script(script, (root / script).read_text())]
    return asyncio.run(triage(scripts, log, options, client=None))


def _expected_evidence(result: TriageResult, path: str, line: int, words: str) -> bool:
    """An item of the ranking holds ``line`` and carries the check channel's expected-value evidence."""
    return any(
        item.path == path
        and item.start_line <= line <= item.end_line
        and any(
            e.channel == Channel.CHECK and words in e.detail and "expected" in e.detail for e in item.evidence
        )
        for item in result.ranking
    )


@pytest.mark.parametrize("style", ["long", "short"])
@pytest.mark.parametrize(("script", "test", "line", "words"), CASES)
def test_the_definition_of_the_expected_value_is_in_the_top_3(
    copy: Path,
    pytest_logs: dict[tuple[str, str], str],
    script: str,
    test: str,
    line: int,
    words: str,
    style: str,
) -> None:
    log = pytest_logs[(test, style)]
    result = _triage(copy, script, log)
    assert len(result.ranking) == 3
    assert _expected_evidence(result, script, line, words), [(i.start_line, i.reason) for i in result.ranking]


def test_unittest_console_output_ranks_the_setup_that_wrote_the_expected_list(copy: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "test_unittest_setup"],
        cwd=copy,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "First differing element 2" in done.stderr
    result = _triage(copy, "test_unittest_setup.py", done.stderr)
    assert _expected_evidence(result, "test_unittest_setup.py", 13, "[1, 2, 4]")


def test_at_line_level_the_literal_itself_is_named(
    copy: Path, pytest_logs: dict[tuple[str, str], str]
) -> None:
    log = pytest_logs[("test_attempts", "long")]
    result = _triage(
        copy, "test_module_constant.py", log, TriageOptions(ranker="heuristic", k=3, level="line")
    )
    top = {item.start_line: item for item in result.ranking}
    assert 4 in top and 16 in top  # MAX_ATTEMPTS = 5, and the failing assert
    evidence = next(e for e in top[4].evidence if e.channel == Channel.CHECK)
    assert evidence.detail.startswith("writes 5") and evidence.source == "assert 4 == 5"


def test_the_observed_side_gets_no_expected_value_evidence(
    copy: Path, pytest_logs: dict[tuple[str, str], str]
) -> None:
    result = _triage(copy, "test_helper_constant.py", pytest_logs[("test_count", "long")])
    for item in result.ranking:
        if item.start_line <= 5 <= item.end_line:  # count_items(): the observed value's helper
            assert not any("expected" in e.detail for e in item.evidence)


def test_an_expected_value_written_in_the_check_leaves_nothing_to_follow() -> None:
    code = "def count():\n    return 3\n\n\ndef test_a():\n    assert count() == 4\n"
    log = (
        "    def test_a():\n>       assert count() == 4\nE       assert 3 == 4\n"
        "E        +  where 3 = count()\n\nt.py:6: AssertionError\n"
    )
    result = asyncio.run(triage([Script("t.py", code)], log, HEURISTIC, client=None))
    assert not any("expected" in e.detail for item in result.ranking for e in item.evidence)


def test_a_fixture_of_a_parent_conftest_is_triaged_by_tcfl_ci(copy: Path) -> None:
    junit = copy.parent / "junit.xml"
    _run(copy, "--tb=long", f"--junitxml={junit}", "suite/net/test_ports.py")
    results = read_results(junit)
    report = asyncio.run(triage_results(results, Checkout.scan(copy), local_triager(HEURISTIC, None)))
    (run,) = report.triaged
    assert run.scripts[:2] == ("suite/net/test_ports.py", "suite/conftest.py")
    assert "suite/net/conftest.py" not in run.scripts  # its fixture is not used by the test
    assert run.result is not None
    assert _expected_evidence(run.result, "suite/conftest.py", 15, "writes 4")


def test_printed_values_are_read_from_each_tools_wording() -> None:
    unittest_log = (
        "AssertionError: Lists differ: [1, 2, 3] != [1, 2, 4]\n\nFirst differing element 2:\n3\n4\n"
    )
    found = printed(unittest_log, None)
    assert found is not None and found.sides[1][:2] == ([1, 2, 4], 4)
    found = printed("AssertionError: expected 2.4.1, got 2.4.0", "!=")
    assert found is not None and found.expected == ("2.4.1",)
    found = printed("assert {'a': 1, 'b': 2} == {'a': 1, 'b': 3}", "==")
    assert found is not None and 3 in found.sides[1] and 2 in found.sides[0]


def test_comparisons_are_read_from_asserts_assert_methods_and_conditions() -> None:
    for text, header in (
        ("assert made == MAX", False),
        ("self.assertEqual(made, self.MAX)", False),
        ("self.assertTrue(made == MAX)", False),
        ("if made != MAX:", True),
        ("elif not made == MAX:", True),
    ):
        found = compared(parse_statement(text, header=header))
        assert found is not None, text
        assert ast.unparse(found.left) == "made", text
    assert compared(parse_statement("self.assertRaises(KeyError, f)")) is None
    assert compared(parse_statement("assert ready")) is None
