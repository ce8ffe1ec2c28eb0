"""Fuzz: generated hostile scripts and logs through the service's analysis job (in-process).

Property: whatever the scripts and log, the job either returns a static phase or refuses with a
``ValueError`` that says why (a cost limit, a bad option); never RecursionError, never a crash.
Sizes stay small enough for a test run; ``scripts/hostilebench.py`` runs the large classes.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.analysis.limits import CostLimits, InputTooCostly
from app.analysis.model import Script
from app.localize.result import TriageResult
from app.options import TriageOptions
from app.service import pool_jobs
from app.service.pool_jobs import TriageJob

pytestmark = pytest.mark.slow  # hypothesis over hostile inputs through the analysis: tens of seconds each

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMITS = CostLimits(max_nesting_depth=40, max_syntax_depth=150, max_branches_per_function=400)
HEADERS = ["if x:", "elif y:", "else:", "for i in z:", "while w:", "try:", "except E:", "finally:", "with c:"]
HEADERS += ["def f():", "class C:", "async def g():", "match m:", "case 1:", "lambda: (", "x = [", "f("]
LEAVES = ["pass", "print('a %s' % x)", "log.info('b=%d', b)", "raise E('c')", "return", "x = f(g(h()))"]
LEAVES += ["print(f'{a}{b}')", "assert x == y, 'msg'", "'''doc", ")", "]", "\\", "  # comment", "\t", "\x00"]
ODD_TEXT = st.text(st.characters(min_codepoint=1, max_codepoint=0x2FFF), max_size=40)


@st.composite
def hostile_scripts(draw: st.DrawFn) -> str:
    """Indented lines of random headers and leaves: deep nesting, broken syntax, long chains."""
    lines: list[str] = []
    depth = 0
    for _ in range(draw(st.integers(1, 120))):
        choice = draw(st.integers(0, 9))
        if choice < 4 and depth < 60:
            lines.append("    " * depth + draw(st.sampled_from(HEADERS)))
            depth += 1
        elif choice < 8:
            lines.append("    " * depth + draw(st.sampled_from(LEAVES)))
        elif choice == 8:
            depth = draw(st.integers(0, depth))
            lines.append("    " * depth + draw(ODD_TEXT))
        else:
            lines.append("    " * depth + "elif v == 1:\n" + "    " * (depth + 1) + "pass")
    if draw(st.booleans()):  # a long chain on one line
        lines.append(
            "x = " + draw(st.sampled_from(["f(", "[", "(", "a + ", "not "])) * draw(st.integers(1, 400))
        )
    return "\n".join(lines) + "\n"


@st.composite
def hostile_logs(draw: st.DrawFn) -> str:
    """Log lines built to stress prefix detection, traceback parsing and message matching."""
    pieces = [
        "Traceback (most recent call last):",
        '  File "t.py", line {n}, in test_x',
        '  File "t.py", line {n}',
        "E   AssertionError: {t}",
        "t.py:{n}: in test_x",
        "2024-01-01 00:00:00,000 ERROR root: {t}",
        "[{t}] {t}",
        "a." * 200,
        "(" * 300,
        "{t}" * 20,
        "ZeroDivisionError: {t}",
        "=" * 500,
        "\x1b[31m{t}\x1b[0m",
    ]
    lines = []
    for _ in range(draw(st.integers(0, 60))):
        template = draw(st.sampled_from(pieces))
        lines.append(template.format(n=draw(st.integers(-5, 10**12)), t=draw(ODD_TEXT)))
    return "\n".join(lines)


def _run(script: str, log: str, options: TriageOptions) -> None:
    try:
        data, _ = pool_jobs.triage(TriageJob((Script("t.py", script),), log, options, LIMITS))
    except InputTooCostly as exc:
        assert "max_" in str(exc)  # names the setting
        return
    assert isinstance(data, dict)
    assert len(TriageResult.from_dict(data).ranking) <= options.k


@FUZZ
@given(hostile_scripts(), hostile_logs(), st.sampled_from(["function", "block", "line"]))
def test_hostile_scripts_and_logs_give_a_result_or_a_named_limit(script: str, log: str, level: str) -> None:
    _run(script, log, TriageOptions(level=level, k=3))


@FUZZ
@given(st.integers(1, 400), st.sampled_from(["if x{i}:", "for a{i} in b:", "def f{i}():", "with c{i}:"]))
def test_any_nesting_depth_gives_a_result_or_the_nesting_limit(depth: int, header: str) -> None:
    lines = ["def test_x():"] + ["    " * (i + 1) + header.format(i=i) for i in range(depth)]
    script = "\n".join([*lines, "    " * (depth + 1) + "print('deep')"]) + "\n"
    try:
        pool_jobs.triage(TriageJob((Script("t.py", script),), "", TriageOptions(k=2), LIMITS))
    except InputTooCostly as exc:
        assert depth + 1 > LIMITS.max_nesting_depth and "max_nesting_depth" in str(exc)


@FUZZ
@given(st.lists(ODD_TEXT, min_size=1, max_size=3), st.integers(1, 30))
def test_user_log_functions_never_crash_the_analysis(patterns: list[str], calls: int) -> None:
    script = "def test_x():\n" + "".join(f"    Log.log('step {i} %s', i)\n" for i in range(calls))
    log = "\n".join(f"step {i} {i}" for i in range(calls))
    try:
        options = TriageOptions(log_functions=tuple(patterns))
        data, _ = pool_jobs.triage(TriageJob((Script("t.py", script),), log, options, snapshot=False))
    except ValueError as exc:
        assert "log function pattern" in str(exc)
        return
    assert isinstance(data, dict) and TriageResult.from_dict(data).options is not None
