"""Mutation operators: one fault, one known line, the rest of the file byte for byte."""

from __future__ import annotations

import ast

from tcfl_lab.eval.mutate import OPERATORS, mutations

SOURCE = """import unittest


class T(unittest.TestCase):
    def setUp(self):
        self.items = []
        self.items.append(3)
        self.limit = 2

    def test_it(self):
        total = sum(self.items) + 10
        if total > 12:
            print("big", total)
        for i in range(3):
            self.items.append(i)
        self.assertEqual(total, 13)
        self.assertTrue(len(self.items) == 4)
        divmod(total, self.limit)


def helper(x):
    return x * 7
"""


def _by_op(found):
    out = {}
    for m in found:
        out.setdefault(m.operator, []).append(m)
    return out


def test_every_operator_applies_inside_the_scope_only() -> None:
    found = mutations(SOURCE, ("T.test_it", "T.setUp"))
    ops = _by_op(found)
    assert set(ops) == set(OPERATORS)
    assert all(m.function in ("T.test_it", "T.setUp") for m in found)
    assert not any(m.line == 22 for m in found)  # helper() is out of scope


def test_each_mutant_changes_exactly_its_line() -> None:
    original = SOURCE.splitlines()
    for m in mutations(SOURCE, ("T.test_it", "T.setUp")):
        ast.parse(m.source)
        mutant = m.source.splitlines()
        if m.operator == "removed_setup_call":
            assert len(mutant) == len(original) - 1
            assert mutant[: m.line - 1] == original[: m.line - 1]
            assert mutant[m.line - 1 :] == original[m.line :]
        else:
            changed = [i + 1 for i, (a, b) in enumerate(zip(original, mutant, strict=True)) if a != b]
            assert changed == [m.line] == [m.faulty_line]
        assert m.mutated == mutant[m.faulty_line - 1]
        assert m.original == original[m.line - 1]


def test_specific_mutants() -> None:
    ops = _by_op(mutations(SOURCE, ("T.test_it", "T.setUp")))
    texts = {(m.operator, m.mutated.strip()) for ms in ops.values() for m in ms}
    assert ("flipped_comparison", "self.assertNotEqual(total, 13)") in texts
    assert ("flipped_comparison", "if total <= 12:") in texts
    assert ("off_by_one_threshold", "if total >= 12:") in texts
    assert ("off_by_one_threshold", "for i in range(3 + 1):") in texts
    assert ("wrong_expected_value", "self.assertEqual(total, 14)") in texts
    assert ("wrong_constant", "total = sum(self.items) + 11") in texts
    assert ("wrong_argument", "divmod(self.limit, total)") in texts
    # removing `self.items.append(3)` from setUp blames the statement that now follows it
    removal = next(m for m in ops["removed_setup_call"] if m.line == 7)
    assert removal.faulty_line == 7
    assert removal.mutated.strip() == "self.limit = 2"
    # asserts are never removed, and the last statement of a body is never removed
    assert all("assert" not in m.original for m in ops["removed_setup_call"])
    assert all(m.line != 18 for m in ops["removed_setup_call"])


def test_deterministic_order() -> None:
    first = mutations(SOURCE, ("T.test_it",))
    assert [(m.line, m.operator, m.mutated) for m in first] == [
        (m.line, m.operator, m.mutated) for m in mutations(SOURCE, ("T.test_it",))
    ]
    assert [m.line for m in first] == sorted(m.line for m in first)


def test_non_ascii_line_is_spliced_by_bytes() -> None:
    lines = [
        "import unittest",
        "class T(unittest.TestCase):",
        "    def test_x(self):",
        '        self.assertEqual("é", 1)',
    ]
    source = "\n".join(lines) + "\n"
    mutant = next(m for m in mutations(source, ("T.test_x",)) if m.operator == "wrong_expected_value")
    assert mutant.mutated.strip() in ('self.assertEqual("é", 2)', "self.assertEqual('éé', 1)")
    ast.parse(mutant.source)
