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


def _named_line_by_line(log: str) -> frozenset[str]:
    """The reference: each line of the log on its own, with the id patterns as first written."""
    import re

    from app.analysis.selection import MAX_LINE

    patterns = (
        re.compile(r"\.py::(?:[A-Za-z_]\w*::){0,8}([A-Za-z_]\w*)"),
        re.compile(r"\b(test\w*) \((?:[A-Za-z_][\w.]*)\)"),
        re.compile(r"\.py:(?:[A-Za-z_]\w*\.){0,8}([A-Za-z_]\w*)"),
    )
    names: set[str] = set()
    for line in log.splitlines():
        if len(line) <= MAX_LINE:
            for pattern in patterns:
                names.update(m.group(1) for m in pattern.finditer(line))
    return frozenset(names)


ID_PIECES = [
    "FAILED tests/t.py::Case::test_{w} - x",
    "test_{w} (mod.Case) ... FAIL",
    "x{w}test_{w} (mod.Case) and test_b (m)",
    "é{w}test_{w} (mod.Case)",
    "(1/2) t.py:Case.test_{w}: ERROR",
    "{w}",
    "x" * 2_001 + " t.py::test_long",
    "",
]
BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x1c", "\x85", "\u2028"]


@given(
    st.lists(
        st.tuples(st.sampled_from(ID_PIECES), st.text(alphabet="ab_1", max_size=6), st.sampled_from(BREAKS)),
        max_size=20,
    )
)
def test_named_tests_over_the_whole_text_equal_line_by_line(pieces: list[tuple[str, str, str]]) -> None:
    log = "".join(piece.format(w=w) + brk for piece, w, brk in pieces)
    assert named_tests(log) == _named_line_by_line(log)
