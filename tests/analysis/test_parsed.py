"""The script-only half of an analysis, cached per script set: same answers, fewer parses."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.limits import CostLimits, InputTooCostly
from app.analysis.model import Analysis, Script
from app.analysis.parsed import ParseCache, grouped, log_patterns, parse_scripts
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.channels.facts import build_facts
from app.localize.heuristic import rank_heuristic
from tests.analysis.snapshot_cases import cases

CASES = list(cases())

SCRIPT = """\
import logging

log = logging.getLogger(__name__)


def test_ports(dut):
    log.info("checking %s ports", dut.name)
    for port in dut.ports:
        log.info("port %s up", port)
        assert port.up
    log.info("all ports up")
"""

LOG_FAILED_AT_PORT = """\
INFO checking sw1 ports
INFO port eth0 up
INFO port eth1 up
Traceback (most recent call last):
  File "test_ports.py", line 10, in test_ports
    assert port.up
AssertionError
"""

LOG_FAILED_LATE = """\
INFO checking sw1 ports
INFO all ports up
Traceback (most recent call last):
  File "test_ports.py", line 9, in test_ports
    log.info("port %s up", port)
RuntimeError: no such port
"""


def _ranking(analysis) -> list[tuple[object, float, str, tuple[object, ...]]]:
    """The heuristic's block ranking with its evidence: the channels read the cached syntax facts."""
    ranked = rank_heuristic(analysis, render(analysis, "tplus", "block"), 5)
    return [(item.element, item.score, item.reason, item.evidence) for item in ranked]


@pytest.mark.slow
def test_cached_analyses_equal_fresh_ones_over_a_fifth_of_the_cases_in_any_order(
    case_analysis: Callable[[str], Analysis],
) -> None:
    """Every fifth case of tests/data (the quick lane's share of the test below)."""
    _cached_analyses_equal_fresh_ones(CASES[::5], case_analysis)


@pytest.mark.slow  # some 20 s of CPU: three analyses and three rankings of each of 200-odd cases
def test_cached_analyses_equal_fresh_ones_over_every_case_in_any_order(
    case_analysis: Callable[[str], Analysis],
) -> None:
    _cached_analyses_equal_fresh_ones(CASES, case_analysis)


def _cached_analyses_equal_fresh_ones(
    cases: list[tuple[str, list[Script], str, tuple[str, ...]]], case_analysis: Callable[[str], Analysis]
) -> None:
    """One cache over ``cases``, forwards then backwards: each analysis (program, log, matches,
    traces, warnings) and its heuristic ranking equal a fresh analysis'."""
    fresh = {name: case_analysis(name) for name, *_ in cases}  # analyze(scripts, log, log_functions=fns)
    fresh_rankings: dict[str, list[tuple[object, float, str, tuple[object, ...]]]] = {}
    parses = ParseCache(max_entries=len(cases), max_chars=10**9)
    for name, scripts, log, fns in [*cases, *reversed(cases)]:
        cached = analyze(scripts, log, log_functions=fns, parses=parses)
        assert cached == fresh[name], name
        assert cached.parsed is not None
        if name not in fresh_rankings:  # the fresh analysis' ranking, once: the same both ways
            fresh_rankings[name] = _ranking(fresh[name])
        assert _ranking(cached) == fresh_rankings[name], name
    assert parses.hits >= len(cases)


@pytest.mark.slow
def test_each_distinct_script_set_is_parsed_once() -> None:
    parses = ParseCache(max_entries=len(CASES), max_chars=10**9)
    for _, scripts, log, fns in CASES:
        analyze(scripts, log, log_functions=fns, parses=parses, variants=("tplus",), explain=False)
    distinct = {(tuple((s.path, s.content) for s in scripts), fns) for _, scripts, _, fns in CASES}
    assert len(distinct) < len(CASES)  # tests/data holds a few failures of one script
    assert (parses.misses, parses.hits) == (len(distinct), len(CASES) - len(distinct))


def test_a_second_log_of_the_same_script_reuses_its_parse_and_gets_its_own_answer() -> None:
    parses = ParseCache()
    scripts = [Script("test_ports.py", SCRIPT)]
    first = analyze(scripts, LOG_FAILED_AT_PORT, parses=parses)
    second = analyze(scripts, LOG_FAILED_LATE, parses=parses)
    assert (parses.misses, parses.hits) == (1, 1)
    assert second.parsed is first.parsed
    assert second == analyze(scripts, LOG_FAILED_LATE)
    assert first.error_statements != second.error_statements
    assert first.match.exe != second.match.exe


def test_log_functions_are_part_of_the_key() -> None:
    script = Script("t.py", "def test_a(dut):\n    dut.say('hello')\n    assert dut.ok\n")
    parses = ParseCache()
    plain = analyze([script], "hello\n", parses=parses)
    told = analyze([script], "hello\n", log_functions=("*.say",), parses=parses)
    assert parses.misses == 2
    assert not plain.log_statements
    assert [ls.callee for ls in told.log_statements] == ["dut.say"]


def test_a_changed_byte_is_a_new_parse() -> None:
    parses = ParseCache()
    analyze([Script("test_ports.py", SCRIPT)], LOG_FAILED_AT_PORT, parses=parses)
    edited = SCRIPT.replace("all ports up", "every port up")
    analysis = analyze([Script("test_ports.py", edited)], LOG_FAILED_AT_PORT, parses=parses)
    assert parses.misses == 2
    assert "every port up" in analysis.program.files[0].lines[10]


def test_stricter_limits_check_a_cached_parse_again() -> None:
    nested = "".join("    " * (i + 1) + "if x:\n" for i in range(12))
    deep = "def test_a():\n" + nested + "    " * 13 + "pass\n"
    scripts = [Script("t.py", deep)]
    parses = ParseCache()
    analyze(scripts, "", parses=parses)  # parsed with no limits: never checked
    with pytest.raises(InputTooCostly, match="max_nesting_depth=8"):
        analyze(scripts, "", parses=parses, limits=CostLimits(max_nesting_depth=8))
    analyze(scripts, "", parses=parses, limits=CostLimits(max_nesting_depth=20))
    assert parses.misses == 1  # the failed check kept the parse; the looser limits passed on it


def test_looser_limits_trust_an_earlier_check() -> None:
    parsed = parse_scripts([Script("t.py", SCRIPT)], log_patterns(()), CostLimits(max_nesting_depth=3))
    assert parsed.checked == CostLimits(max_nesting_depth=3)
    parsed.check([Script("t.py", SCRIPT)], CostLimits())  # defaults are looser: nothing to redo
    with pytest.raises(InputTooCostly, match="max_nesting_depth=1"):
        parsed.check([Script("t.py", SCRIPT)], CostLimits(max_nesting_depth=1))


def test_least_recently_used_goes_first_and_size_bounds_the_cache() -> None:
    parses = ParseCache(max_entries=2, max_chars=3 * len(SCRIPT))
    a, b, c = ([Script(f"test_{n}.py", SCRIPT)] for n in "abc")
    for scripts in (a, b, a, c):  # a used again before c arrives: b is the oldest
        analyze(scripts, LOG_FAILED_AT_PORT, parses=parses)
    assert len(parses) == 2
    analyze(a, LOG_FAILED_AT_PORT, parses=parses)
    analyze(b, LOG_FAILED_AT_PORT, parses=parses)
    assert (parses.hits, parses.misses) == (2, 4)
    big = [Script("test_big.py", SCRIPT * 4)]  # over max_chars: parsed, answered, not kept
    analyze(big, LOG_FAILED_AT_PORT, parses=parses)
    analyze(big, LOG_FAILED_AT_PORT, parses=parses)
    assert parses.misses == 6


def test_an_evicted_parse_is_freed_by_reference_counting_alone() -> None:
    """Analysis workers freeze cached parses out of the collector's sight: an evicted one must
    then need no cycle collection to be freed (no reference cycles in it)."""
    parses = ParseCache(max_entries=1)
    first = [Script("test_a.py", SCRIPT)]
    analysis = analyze(first, LOG_FAILED_AT_PORT, parses=parses)
    analysis.parsed.derived(build_facts)
    gone = weakref.ref(analysis.parsed)
    gc.disable()
    try:
        del analysis
        analyze([Script("test_b.py", SCRIPT)], LOG_FAILED_AT_PORT, parses=parses)  # evicts the first
        assert gone() is None
    finally:
        gc.enable()


def test_derived_facts_are_built_once_per_parse() -> None:
    calls: list[int] = []

    def build(program, trees):
        calls.append(1)
        return build_facts(program, trees)

    parsed = parse_scripts([Script("test_ports.py", SCRIPT)], log_patterns(()))
    assert parsed.derived(build) is parsed.derived(build)
    assert len(calls) == 1


HELPER = """\
import logging

log = logging.getLogger(__name__)


def port_state(dut, port):
    log.info("reading %s", port)
    return dut.ports[port]
"""


def test_a_file_in_another_set_of_scripts_gives_the_answers_a_fresh_parse_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CI job names a test module with its helpers in one order, and (for a traceback through a
    helper) in another: the second set reuses the files' trees, checks, log calls and syntax-fact
    walks, and its analysis and ranking equal those of a parse with nothing kept."""
    from app.analysis import parsed
    from app.localize.channels import facts

    test, helper = Script("test_ports.py", SCRIPT), Script("helpers.py", HELPER)
    analyze([test, helper], LOG_FAILED_AT_PORT, limits=CostLimits())
    warm = analyze([helper, test], LOG_FAILED_AT_PORT, limits=CostLimits())
    ranked = _ranking(warm)
    monkeypatch.setattr(parsed, "_FILES", parsed._FileCache())  # nothing kept: every file parsed anew
    monkeypatch.setattr(facts, "_WALKS", facts._Walks(8))
    cold = analyze([helper, test], LOG_FAILED_AT_PORT, limits=CostLimits())
    assert warm == cold
    assert _ranking(cold) == ranked
    assert [s.path for s in warm.program.files] == ["helpers.py", "test_ports.py"]


def test_a_kept_file_is_checked_again_under_stricter_limits() -> None:
    nested = "".join("    " * (i + 1) + "if x:\n" for i in range(12))
    deep = Script("t_kept.py", "def test_a():\n" + nested + "    " * 13 + "pass\n")
    analyze([deep, Script("other.py", "x = 1\n")], "", limits=CostLimits())
    with pytest.raises(InputTooCostly, match="max_nesting_depth=8"):
        analyze([Script("other.py", "x = 1\n"), deep], "", limits=CostLimits(max_nesting_depth=8))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=30))
def test_grouped_puts_equal_keys_together_in_order_of_first_sight(keys: list[str]) -> None:
    order = grouped(keys, lambda k: k)
    assert sorted(order) == list(range(len(keys)))
    seen = list(dict.fromkeys(keys))
    assert [keys[i] for i in order] == sorted(keys, key=seen.index)
    for key in seen:  # within a group, the items' own order
        positions = [i for i in order if keys[i] == key]
        assert positions == sorted(positions)


QUOTED_SCRIPT = """\
import logging

log = logging.getLogger(__name__)


def read_speed(dut, port):
    log.debug("reading %s", port)
    return dut.speed(port)


def test_speed(dut):
    log.info("checking speeds")
    port = dut.ports[0]
    if dut.fast:
        limit = 100
    speed = read_speed(dut, port)
    log.info("speed %s", speed)
    assert speed == limit, f"speed {speed} below limit"
"""


def _speed_log(error: str) -> str:
    return (
        "INFO checking speeds\n"
        "INFO speed 10\n"
        "Traceback (most recent call last):\n"
        '  File "test_speed.py", line 18, in test_speed\n'
        '    assert speed == limit, f"speed {speed} below limit"\n'
        f"{error}\n"
    )


@pytest.mark.parametrize("reverse", [False, True])
def test_failures_of_one_parse_get_the_answers_of_fresh_parses_whatever_their_messages_quote(
    reverse: bool,
) -> None:
    """The per-parse memos of the channels (the def-use walks, whose guards count a hop less when
    the message quotes the guarded name; the literal pieces; the blocks) and of the analysis (the
    log statements' levels) give each failure of the same scripts the answer a fresh parse gives,
    in either order."""
    scripts = [Script("test_speed.py", QUOTED_SCRIPT)]
    logs = [
        _speed_log("AssertionError: speed 10 below limit"),
        _speed_log("UnboundLocalError: cannot access local variable 'limit'"),
        _speed_log("AssertionError: speed 10 below limit"),
    ]
    parses = ParseCache()
    for log in reversed(logs) if reverse else logs:
        shared = analyze(scripts, log, parses=parses)
        fresh = analyze(scripts, log)
        assert shared.parsed is not None and fresh.parsed is not shared.parsed
        assert shared == fresh
        assert _ranking(shared) == _ranking(fresh)
        lines = rank_heuristic(shared, render(shared, "tplus", "line"), 8)
        assert lines == rank_heuristic(fresh, render(fresh, "tplus", "line"), 8)
    assert (parses.misses, parses.hits) == (1, 2)
