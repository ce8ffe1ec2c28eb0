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
# ``\b(test\w*) ...`` with the word boundary checked by hand: a pattern that starts with the
# literal ``test`` is found by a fast scan instead of a try at every position of the log.
_UNITTEST_ID = re.compile(r"(test\w*) \((?:[A-Za-z_][\w.]*)\)")
_AVOCADO_ID = re.compile(r"\.py:(?:[A-Za-z_]\w*\.){0,8}([A-Za-z_]\w*)")
MAX_LINE = 2_000  # a longer line is no test id line; skipping it keeps this linear and cheap


@dataclass(frozen=True)
class Selection:
    failing: frozenset[str]  # fids of test functions the log points at
    others: frozenset[str]  # fids of test functions it does not: not in the failing test's trace


def is_test_function(name: str) -> bool:
    return name.startswith("test") or name == "runTest"


def named_tests(log: str) -> frozenset[str]:
    """Function names that appear in test ids anywhere in the log.

    The ids are found over the whole text (none spans a line break); a match is kept unless its
    line is longer than ``MAX_LINE``, which is measured only for lines that hold a match.
    """
    names: set[str] = set()
    start, end = 0, -1  # the last line measured
    for pattern in (_PYTEST_ID, _UNITTEST_ID, _AVOCADO_ID):
        for m in pattern.finditer(log):
            pos = m.start()
            if not start <= pos < end:
                start, end = _line_span(log, pos)
            if end - start <= MAX_LINE and (pattern is not _UNITTEST_ID or _starts_word(log, pos)):
                names.add(m.group(1))
    return frozenset(names)


# what str.splitlines breaks lines at
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK = re.compile(f"[{_BREAKS}]")


def _starts_word(log: str, pos: int) -> bool:
    if pos == 0:
        return True
    before = log[pos - 1]
    return not (before.isalnum() or before == "_")


def _line_span(log: str, pos: int) -> tuple[int, int]:
    start = max(log.rfind(c, 0, pos) for c in _BREAKS) + 1
    found = _BREAK.search(log, pos)
    return start, len(log) if found is None else found.start()


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
