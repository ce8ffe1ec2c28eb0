"""Which test of a multi-test script failed, from what the log names.

A script often holds many tests while the log is about one that failed. Runners say which:
pytest node ids (``path.py::Class::test_x[param]``), unittest ids (``FAIL: test_x (mod.Class)``),
avocado ids (``path.py:Class.test``), and the traceback's frames. The trace of the failing test
does not include the other tests' bodies, however many of them ran and passed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.analysis.model import Frame, Program

_PYTEST_ID = re.compile(r"\.py::(?:[A-Za-z_]\w*::){0,8}([A-Za-z_]\w*)")
_UNITTEST_ID = re.compile(r"\b(test\w*) \((?:[A-Za-z_][\w.]*)\)")
_AVOCADO_ID = re.compile(r"\.py:(?:[A-Za-z_]\w*\.){0,8}([A-Za-z_]\w*)")
MAX_LINE = 2_000  # a longer line is no test id line; skipping it keeps this linear and cheap


@dataclass(frozen=True)
class Selection:
    failing: frozenset[str]  # fids of test functions the log points at
    others: frozenset[str]  # fids of test functions it does not: not in the failing test's trace


def is_test_function(name: str) -> bool:
    return name.startswith("test") or name == "runTest"


def named_tests(log: str) -> frozenset[str]:
    """Function names that appear in test ids anywhere in the log."""
    names: set[str] = set()
    for line in log.splitlines():
        if len(line) > MAX_LINE or (".py:" not in line and " (" not in line):
            continue
        for pattern in (_PYTEST_ID, _UNITTEST_ID, _AVOCADO_ID):
            names.update(m.group(1) for m in pattern.finditer(line))
    return frozenset(names)


def select_tests(
    program: Program,
    log: str,
    frames: Sequence[Frame],
    frame_functions: Iterable[str],
    executed: Iterable[int],
    sites: dict[str, tuple[int, ...]],
) -> Selection:
    """Test entry points the log points at, and the others (empty when it points at none)."""
    tests = [
        f
        for f in program.functions
        if f.kind == "function" and not f.is_hook and not sites.get(f.fid) and is_test_function(f.name)
    ]
    if len(tests) < 2:
        return Selection(frozenset(), frozenset())
    named = named_tests(log) | {f.function for f in frames if f.function}
    framed = set(frame_functions)
    ran = {program.statements[s].function for s in executed}
    failing = {f.fid for f in tests if f.name in named or f.fid in framed or f.fid in ran}
    if not failing:
        return Selection(frozenset(), frozenset())
    return Selection(frozenset(failing), frozenset(f.fid for f in tests if f.fid not in failing))
