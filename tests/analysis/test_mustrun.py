"""Must-run lines of a passing test, from real scripts parsed by the real pipeline.

Each script marks with ``# ran`` exactly the lines a pass of the named test surely executed.
"""

from __future__ import annotations

import pytest

from app.analysis.model import Script
from app.analysis.mustrun import function_of_test, must_run_lines
from app.analysis.pipeline import analyze

STRAIGHT = """\
import os  # ran


def test_straight():  # ran
    a = 1  # ran
    b = a + 1  # ran
    assert b == 2  # ran


def test_other():
    c = 3
    assert c
"""

BRANCHES = """\
def test_branches(flag=True):  # ran
    x = 0  # ran
    if flag:  # ran
        x = 1
    else:
        x = 2
    if x:  # ran
        x += 1
    elif x < 0:
        x = 5
    assert x  # ran
"""

LOOPS = """\
def test_loops():  # ran
    total = 0  # ran
    for i in range(3):  # ran
        total += i
    while total > 10:  # ran
        total -= 1
    while True:  # ran
        total += 1  # ran
        if total > 5:  # ran
            break  # ran: the only way out of the loop
    assert total  # ran
"""

TRY = """\
def test_try():  # ran
    value = None  # ran
    try:  # ran
        value = int("3")  # ran
        value += 1
    except ValueError:
        value = 0
    finally:  # ran
        value = value or 1  # ran
    assert value  # ran
"""

EARLY_RETURN = """\
def test_early(skip=False):  # ran
    data = [1]  # ran
    if skip:  # ran
        return
    data.append(2)
    assert data
"""

WITH_BLOCK = """\
import io  # ran


def test_with():  # ran
    with io.StringIO() as buf:  # ran
        buf.write("x")  # ran
        if buf.tell():  # ran
            buf.write("y")
    assert buf.closed  # ran
"""

HELPERS = """\
def make(n):  # ran
    doubled = n * 2  # ran
    if doubled > 10:  # ran
        doubled = 10
    return doubled  # ran


def unused(n):
    return n


def guarded(n):
    return n + 1


def lazy(n):
    yield n


def test_helpers(flag=False):  # ran
    a = make(3)  # ran
    b = guarded(a) if flag else 0  # ran
    try:  # ran
        c = unused(a)  # ran
    except ValueError:
        c = 0
    gen = lazy(a)  # ran
    assert a and c is not None and gen  # ran
"""

UNITTEST = """\
import unittest  # ran


class TestThing(unittest.TestCase):  # ran
    def setUp(self):  # ran
        self.value = 2  # ran

    def tearDown(self):  # ran
        self.value = None  # ran

    def test_value(self):  # ran
        self.assertEqual(self.value, 2)  # ran

    def test_other(self):
        self.assertTrue(self.value)
"""


def marked(script: str) -> set[int]:
    return {n for n, line in enumerate(script.splitlines(), 1) if "# ran" in line}


@pytest.mark.parametrize(
    ("script", "test"),
    [
        (STRAIGHT, "test_straight"),
        (BRANCHES, "tests/test_x.py::test_branches"),
        (LOOPS, "test_loops"),
        (TRY, "test_try"),
        (EARLY_RETURN, "test_early"),
        (WITH_BLOCK, "test_with"),
        (HELPERS, "test_helpers"),
        (UNITTEST, "tests/test_x.py::TestThing::test_value"),
    ],
)
def test_a_pass_ran_exactly_its_must_run_chain(script: str, test: str) -> None:
    program = analyze([Script("tests/test_x.py", script)], "").program
    lines = {loc.line for loc in must_run_lines(program, test)}
    assert lines == marked(script)


def test_the_test_is_named_as_ci_names_it() -> None:
    program = analyze([Script("tests/test_x.py", UNITTEST)], "").program
    for name in (
        "TestThing.test_value",
        "TestThing::test_value[p1]",
        "tests/test_x.py::TestThing::test_value",
    ):
        found = function_of_test(program, name)
        assert found is not None and found.qualname == "TestThing.test_value"
    assert function_of_test(program, "other.py::TestThing::test_value") is None
    assert must_run_lines(program, "test_missing") == frozenset()


def test_passes_of_many_tests_of_one_program_get_the_answers_of_fresh_programs() -> None:
    """A job records thousands of passes of one script: what the program gives every test is
    kept with it, and each test still gets its own states."""
    from app.analysis.mustrun import passing_states

    scripts = [Script("tests/test_x.py", STRAIGHT + "\n\n" + HELPERS.replace("import os  # ran\n", ""))]
    shared = analyze(scripts, "").program
    tests = ["test_straight", "test_other", "test_helpers", "test_straight"]
    answers = [passing_states(shared, test) for test in tests]
    assert answers == [passing_states(analyze(scripts, "").program, test) for test in tests]
    assert answers[0] == answers[3] and answers[0] != answers[2]


def test_reaching_around_a_node_is_reachability_with_the_node_cut_out() -> None:
    import random

    from app.analysis.graphs import reachable
    from app.analysis.mustrun import _reaches_avoiding

    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(2, 9)
        succ = {u: rng.sample(range(n), rng.randint(0, min(3, n))) for u in range(n)}
        for v in range(1, n):
            cut = {u: [t for t in ts if t != v] for u, ts in succ.items() if u != v}
            for target in range(1, n):
                if target != v:
                    assert _reaches_avoiding(succ, 0, target, v) == (target in reachable(cut, 0))
