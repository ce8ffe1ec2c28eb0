"""Tracer lines -> trace units: headers, clause lines, multi-line statements, comments, docstrings."""

from __future__ import annotations

import sys

from tcfl_lab.eval.units import normalize_trace

SOURCE = '''import os

# about f
@staticmethod
def f(x):
    """Docstring: never reported by a tracer."""
    # why
    if x:
        return [
            1,
        ]
    else:
        return 2


class A:
    y = 1

    def g(self):
        pass


try:
    f(1)
except ValueError:
    pass
finally:
    z = 3
'''


def _traced(source: str) -> set[int]:
    """What sys.settrace reports for the module run as a script."""
    seen: set[int] = set()
    code = compile(source, "<units>", "exec")

    def local(frame, event, arg):
        if event == "line":
            seen.add(frame.f_lineno)
        return local

    def glob(frame, event, arg):
        return local if frame.f_code.co_filename == "<units>" else None

    sys.settrace(glob)
    try:
        exec(code, {"__name__": "units"})
    finally:
        sys.settrace(None)
    return seen


def test_real_tracer_output_is_normalised() -> None:
    kept = normalize_trace(SOURCE, _traced(SOURCE))
    # f ran its if-branch: decorator and def lines, the docstring, the comment, the whole return
    # class A: header and the attribute; g never ran, so its def is out
    # try: header, body, finally clause line and body; except not taken
    assert sorted(kept) == [1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 23, 24, 27, 28]


def test_else_branch_and_handler() -> None:
    raw = {1, 4, 5, 8, 12, 13, 23, 24, 25, 26, 28}  # f took its else branch; the handler ran
    kept = normalize_trace(SOURCE, raw)
    assert {12, 13} <= kept and 9 not in kept
    assert {25, 26, 27, 28} <= kept


def test_nothing_ran() -> None:
    assert normalize_trace("x = 1\n\ndef f():\n    return 2\n", set()) == frozenset()
