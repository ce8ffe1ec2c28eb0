"""One test key for every tool's ids: properties of the parser, and the ids real tools wrote."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.ingest import read_results
from app.ingest.base import TestRun, split_params
from app.ingest.testkey import MAX_TEST_ID, TestKey, canonical_key, parse_test_id
from tests.ci_tools import BIN, FAILED_TESTS, PytestRun

KEYS = {f"test_links.py::TestLinks::{name}" for name in (*FAILED_TESTS, "test_ports_known")}

# -- the forms each tool writes, built from one test's parts ------------------------------------

_lower = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
_classes = st.lists(st.from_regex(r"[A-Z][A-Za-z0-9_]{0,8}", fullmatch=True), max_size=2)
_test = st.from_regex(r"test_[a-z0-9_]{0,8}", fullmatch=True)
_params = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda p: p.strip() == p
)
_plain_params = st.from_regex(r"[A-Za-z0-9_.,:/ -]{1,12}", fullmatch=True).filter(lambda p: p.strip() == p)


@st.composite
def python_tests(draw: st.DrawFn) -> tuple[list[str], list[str], str]:
    """(module parts, classes, test name) of one Python test."""
    return draw(st.lists(_lower, min_size=1, max_size=3)), draw(_classes), draw(_test)


def node_id(module: list[str], classes: list[str], name: str) -> str:
    return "::".join(["/".join(module) + ".py", *classes, name])


def dotted(module: list[str], classes: list[str], name: str) -> str:
    return ".".join([*module, *classes, name])


def avocado(module: list[str], classes: list[str], name: str) -> str:
    return "/".join(module) + ".py:" + ".".join([*classes, name])


@given(python_tests(), st.sampled_from([node_id, dotted, avocado]))
def test_every_form_of_a_test_has_the_node_id_as_its_key(test: tuple, form) -> None:
    key, params = parse_test_id(form(*test))
    assert (key.key, params) == (node_id(*test), "")


@given(python_tests(), _params)
def test_pytest_parameters_leave_the_key_whatever_they_hold(test: tuple, params: str) -> None:
    for text in (f"{node_id(*test)}[{params}]", f"{dotted(*test)}[{params}]"):
        key, got = parse_test_id(text)
        assert (key.key, got) == (node_id(*test), params), text


@given(python_tests(), st.integers(1, 999), _plain_params)
def test_avocado_serial_and_variant_leave_the_key(test: tuple, serial: int, variant: str) -> None:
    key, params = parse_test_id(f"{serial}-{avocado(*test)};{variant}")
    assert (key.key, params) == (node_id(*test), variant)


@given(python_tests().filter(lambda t: bool(t[1])))
def test_avocado_xunit_class_before_the_id_is_dropped(test: tuple) -> None:
    """avocado's xUnit: classname InterfaceTest, name tests/x.py:InterfaceTest.test_y, joined."""
    assert parse_test_id(f"{test[1][0]}.{avocado(*test)}")[0].key == node_id(*test)


@given(python_tests(), st.from_regex(r"[a-z][a-z0-9_ -]{0,10}", fullmatch=True))
def test_subunit_scenarios_leave_the_key(test: tuple, scenario: str) -> None:
    key, params = parse_test_id(f"{dotted(*test)}({scenario})")
    assert (key.key, params) == (node_id(*test), scenario)


_ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60).filter(str.strip)


@given(_ids)
def test_a_key_is_its_own_key(text: str) -> None:
    key = parse_test_id(text)[0]
    assert key.key and parse_test_id(key.key)[0].key == key.key
    assert canonical_key(key) == canonical_key(key.key) == key.key


@given(_ids)
def test_readers_params_come_from_the_same_parser(text: str) -> None:
    assert split_params(text) == (text, parse_test_id(text)[1] or None)
    assert TestRun(text, "fail").base_id == parse_test_id(text)[0].key


@pytest.mark.parametrize(
    ("test_id", "key", "params"),
    [
        ("tests/test_cart.py::TestX::test_y[1-foo]", "tests/test_cart.py::TestX::test_y", "1-foo"),
        ("tests.test_cart.test_many_items", "tests/test_cart.py::test_many_items", ""),
        ("./tests/test_cart.py::test_many_items", "tests/test_cart.py::test_many_items", ""),
        (
            "1-tests/netcheck.py:InterfaceTest.test_all_up;run-a1",
            "tests/netcheck.py::InterfaceTest::test_all_up",
            "run-a1",
        ),
        (
            "InterfaceTest.tests/netcheck.py:InterfaceTest.test_all_up",
            "tests/netcheck.py::InterfaceTest::test_all_up",
            "",
        ),
        (  # avocado 113's xUnit, as a CI's test page joins its classname and name
            "<unknown>.tests/netcheck.py:InterfaceTest.test_all_up",
            "tests/netcheck.py::InterfaceTest::test_all_up",
            "",
        ),
        ("pkg.module.Class.test_x(scenario)", "pkg/module.py::Class::test_x", "scenario"),
        (
            "tempest.api.test_x.TestC.test_y[id-12ab,smoke]",
            "tempest/api/test_x.py::TestC::test_y",
            "id-12ab,smoke",
        ),
        ("tests.test_a.test_x[http://a:b/c.py:d]", "tests/test_a.py::test_x", "http://a:b/c.py:d"),
        ("TestLinks.test_x", "TestLinks.test_x", ""),  # no module: nothing to say which file
        ("1-/bin/true", "/bin/true", ""),  # an avocado exec-test: its own key, without the serial
        ("free text name", "free text name", ""),
    ],
)
def test_ids_of_each_tool(test_id: str, key: str, params: str) -> None:
    parsed, got = parse_test_id(test_id)
    assert (parsed.key, got) == (key, params)


def test_the_key_says_where_the_test_is() -> None:
    key = parse_test_id("tests.test_cart.TestX.test_y[1]", "junit")[0]
    assert (key.path, key.name, key.suite, str(key)) == (
        "tests/test_cart.py",
        "TestX::test_y",
        "junit",
        "tests/test_cart.py::TestX::test_y",
    )
    assert key == TestKey("tests/test_cart.py", "TestX::test_y")  # the tool is not the test's identity


@pytest.mark.parametrize("bad", ["", "   ", "x" * (MAX_TEST_ID + 1)])
def test_no_key_for_an_empty_or_overlong_id(bad: str) -> None:
    with pytest.raises(ValueError, match=r"empty|longer"):
        parse_test_id(bad)


# -- what the real tools wrote for the same suite ---------------------------------------------


def _keys(path: Path, fmt: str = "auto") -> set[str]:
    return {run.key.key for run in read_results(path, fmt).runs}


def test_pytest_junit_report_log_and_console_name_a_test_alike(py_results: PytestRun) -> None:
    assert _keys(py_results.junit) == _keys(py_results.reportlog) == KEYS
    assert _keys(py_results.console, "joblog") == {k for k in KEYS if not k.endswith("ports_known")}


def test_stestr_subunit_and_console_name_it_as_pytest_does(stestr_run: tuple[Path, Path]) -> None:
    stream, console = stestr_run
    assert _keys(stream) == _keys(console, "joblog") == KEYS


def test_unittest_console_names_it_as_pytest_does(unittest_console: Path) -> None:
    assert _keys(unittest_console, "joblog") == {k for k in KEYS if not k.endswith("ports_known")}


def test_avocado_results_and_its_xunit_name_it_as_pytest_does(avocado_job: Path) -> None:
    assert _keys(avocado_job) == _keys(avocado_job / "results.xml") == KEYS


INSTRUMENTED = """from avocado import Test


class InterfaceTest(Test):
    def test_all_up(self):
        self.log.info("checking eth0")
        assert 1 == 2, "eth0 is down"

    def test_known(self):
        pass
"""


@pytest.fixture(scope="module")
def instrumented_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real avocado job of an avocado-instrumented test (its xUnit puts the class before the id)."""
    root = tmp_path_factory.mktemp("avocado-instrumented")
    (root / "tests").mkdir()
    (root / "tests" / "netcheck.py").write_text(INSTRUMENTED)
    results = root / "results"
    proc = subprocess.run(
        [
            str(BIN / "avocado"),
            "run",
            "--disable-sysinfo",
            "--job-results-dir",
            str(results),
            "tests/netcheck.py",
        ],
        cwd=root,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr  # one test fails, by design
    (job,) = (p for p in results.iterdir() if p.is_dir() and p.name.startswith("job-"))
    return job


def test_avocado_instrumented_xunit_ids_are_not_mangled_into_the_key(instrumented_job: Path) -> None:
    xunit = read_results(instrumented_job / "results.xml")
    assert any(run.test_id.startswith("InterfaceTest.tests/") for run in xunit.runs)  # as junit.py joins it
    want = {"tests/netcheck.py::InterfaceTest::test_all_up", "tests/netcheck.py::InterfaceTest::test_known"}
    assert _keys(instrumented_job / "results.xml") == _keys(instrumented_job) == want
