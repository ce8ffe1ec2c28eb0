"""Which test of a multi-test script failed, from the ids runners print and the traceback."""

from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st

from app.analysis.model import Loc, Script
from app.analysis.pipeline import analyze
from app.analysis.selection import named_tests

SUITE = textwrap.dedent(
    """\
    import logging
    log = logging.getLogger(__name__)

    def make_bridge(name):
        log.info("creating bridge %s", name)
        return name

    def test_mtu():
        bridge = make_bridge("br0")
        assert bridge == "br1"

    def test_vlan():
        log.info("vlan test")
        assert True

    def helper_for_vlan_only():
        return 1

    def test_bond():
        assert True
    """
)


def test_ids_of_pytest_unittest_and_avocado_are_recognised():
    log = "\n".join(
        [
            "tests/net/test_suite.py::TestNet::test_mtu[ipv4-9000] FAILED",
            "FAILED tests/net/test_suite.py::test_vlan - AssertionError",
            "FAIL: test_bond (net.test_suite.TestNet.test_bond)",
            " (1/1) net/test_suite.py:TestNet.test_lacp: CANCEL: no switch",
            '  File "x.py", line 3, in helper',  # a traceback line is no test id
            "x.py:123: AssertionError",  # nor is pytest's file:line form
        ]
    )
    assert named_tests(log) == {"test_mtu", "test_vlan", "test_bond", "test_lacp"}


@given(st.text(max_size=400))
def test_named_tests_never_raises(text: str):
    assert isinstance(named_tests(text), frozenset)


def test_other_tests_leave_the_failing_tests_trace():
    log = "FAILED tests/test_suite.py::test_mtu - AssertionError: assert 'br0' == 'br1'\n"
    a = analyze([Script("tests/test_suite.py", SUITE)], log)
    kept = a.traces["tplus"].kept
    assert Loc("tests/test_suite.py", 9) in kept and Loc("tests/test_suite.py", 5) in kept
    assert Loc("tests/test_suite.py", 13) not in kept  # test_vlan is another test
    assert Loc("tests/test_suite.py", 20) not in kept  # so is test_bond
    ev = a.traces["tplus"].evidence[Loc("tests/test_suite.py", 13)]
    assert ev.rule == "test-selection"
    # faithful variants know nothing of this
    assert Loc("tests/test_suite.py", 20) in a.traces["CSR(T1_dbt_exe&T2)"].kept


def test_a_test_whose_messages_are_in_the_log_stays():
    log = "2024-01-01 10:00:00,000 INFO t: vlan test\nFAILED tests/test_suite.py::test_mtu - AssertionError\n"
    kept = analyze([Script("tests/test_suite.py", SUITE)], log).traces["tplus"].kept
    assert Loc("tests/test_suite.py", 13) in kept  # it logged: it ran, whatever the ids say


def test_without_any_test_id_nothing_is_dropped():
    kept = analyze([Script("tests/test_suite.py", SUITE)], "something went wrong\n").traces["tplus"].kept
    assert Loc("tests/test_suite.py", 20) in kept
