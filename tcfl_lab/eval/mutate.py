"""Single-fault mutation of Python test code, for the executed corpus (``tcfl corpus build``).

Each operator rewrites one single-line expression or removes one single-line call statement,
found with ``ast``; the rest of the file is left byte for byte, so the faulty line is exactly
known. Operators mirror common test-code faults: a wrong constant, a wrong expected value in an
assertion, a flipped comparison or assertion, swapped arguments, an off-by-one threshold and a
forgotten setup call.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS: tuple[str, ...] = (
    "wrong_constant",
    "wrong_expected_value",
    "flipped_comparison",
    "wrong_argument",
    "off_by_one_threshold",
    "removed_setup_call",
)

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_OFF_BY_ONE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}
_ASSERT_FLIP: dict[str, str] = {
    "assertEqual": "assertNotEqual",
    "assertNotEqual": "assertEqual",
    "assertTrue": "assertFalse",
    "assertFalse": "assertTrue",
    "assertIn": "assertNotIn",
    "assertNotIn": "assertIn",
    "assertIs": "assertIsNot",
    "assertIsNot": "assertIs",
    "assertIsNone": "assertIsNotNone",
    "assertIsNotNone": "assertIsNone",
    "assertGreater": "assertLessEqual",
    "assertLessEqual": "assertGreater",
    "assertLess": "assertGreaterEqual",
    "assertGreaterEqual": "assertLess",
    "assertIsInstance": "assertNotIsInstance",
    "assertNotIsInstance": "assertIsInstance",
}
_EXPECTING = frozenset(
    {
        "assertEqual",
        "assertNotEqual",
        "assertIn",
        "assertNotIn",
        "assertIs",
        "assertIsNot",
        "assertGreater",
        "assertGreaterEqual",
        "assertLess",
        "assertLessEqual",
        "assertAlmostEqual",
        "assertCountEqual",
        "assertListEqual",
        "assertTupleEqual",
        "assertDictEqual",
        "assertSetEqual",
        "assertSequenceEqual",
        "assertMultiLineEqual",
        "assertRegex",
        "assertStartsWith",
    }
)
_SETUP_NAMES = frozenset({"setUp", "setUpClass", "asyncSetUp"})


@dataclass(frozen=True)
class Mutation:
    """One mutant: where, what, and the mutated file."""

    operator: str
    line: int  # the mutated line in the original file
    faulty_line: int  # the line to blame in the mutant (the line after a removed statement)
    original: str  # the original line's text
    mutated: str  # the mutant's text at faulty_line
    source: str  # the whole mutated file
    function: str  # Class.method the mutation sits in


def mutations(source: str, scope: tuple[str, ...]) -> list[Mutation]:
    """Every mutant of ``source`` inside the named functions (``Class.method``), in source order."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found: list[Mutation] = []
    for qualname, func in _functions(tree):
        if qualname not in scope:
            continue
        for operator, node, new_text in _candidates(func):
            mutant = _splice(lines, node, new_text)
            if mutant is not None and mutant != source:
                line = node.lineno
                original, mutated = lines[line - 1].rstrip("\n"), mutant.splitlines()[line - 1]
                found.append(Mutation(operator, line, line, original, mutated, mutant, qualname))
        if func.name in _SETUP_NAMES or func.name.startswith("test"):
            found.extend(_removals(lines, func, qualname))
    found.sort(key=lambda m: (m.line, OPERATORS.index(m.operator), m.mutated))
    return found


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{node.name}.{item.name}", item
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node


def _single_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", None) is not None and node.lineno == node.end_lineno


def _assert_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr
    return None


def _bumped(value: ast.expr) -> ast.expr | None:
    """A plausible wrong literal in place of ``value``."""
    if isinstance(value, ast.Constant):
        v = value.value
        if isinstance(v, bool):
            return ast.Constant(not v)
        if isinstance(v, int):
            return ast.Constant(v + 1)
        if isinstance(v, float):
            return ast.Constant(v * 2 if v else 1.0)
        if isinstance(v, str) and v and "\n" not in v:
            return ast.Constant(v[:-1] if len(v) > 1 else v + v)
        if isinstance(v, bytes) and v:
            return ast.Constant(v[:-1] if len(v) > 1 else v + v)
        if v is None:
            return ast.Constant(0)
    if isinstance(value, ast.List | ast.Tuple) and value.elts:
        first = _bumped(value.elts[0])
        if first is not None:
            return type(value)(elts=[first, *value.elts[1:]], ctx=ast.Load())
    return None


def _candidates(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[str, ast.AST, str]]:
    in_assert: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and (_assert_name(node) or "").startswith("assert"):
            for arg in node.args:
                in_assert.update(id(n) for n in ast.walk(arg))
    for node in ast.walk(func):
        if node is func or not _single_line(node):
            continue
        if isinstance(node, ast.Call):
            name = _assert_name(node)
            if name in _ASSERT_FLIP and isinstance(node.func, ast.Attribute) and _single_line(node.func):
                yield "flipped_comparison", node.func, f"self.{_ASSERT_FLIP[name]}"
            if name in _EXPECTING and len(node.args) >= 2:
                for arg in node.args[:2]:
                    wrong = _bumped(arg)
                    if wrong is not None and _single_line(arg):
                        yield "wrong_expected_value", arg, ast.unparse(wrong)
            if name is None or not name.startswith("assert"):
                args = node.args
                plain = len(args) >= 2 and not any(isinstance(a, ast.Starred) for a in args[:2])
                if plain and ast.dump(args[0]) != ast.dump(args[1]):
                    swapped = ast.Call(node.func, [args[1], args[0], *args[2:]], node.keywords)
                    yield "wrong_argument", node, ast.unparse(swapped)
                if isinstance(node.func, ast.Name) and node.func.id == "range" and len(args) == 1:
                    bigger = ast.BinOp(left=args[0], op=ast.Add(), right=ast.Constant(1))
                    yield "off_by_one_threshold", node, ast.unparse(ast.Call(node.func, [bigger], []))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0])
            if op in _FLIP:
                flipped = ast.Compare(node.left, [_FLIP[op]()], node.comparators)
                yield "flipped_comparison", node, ast.unparse(flipped)
            if op in _OFF_BY_ONE:
                yield (
                    "off_by_one_threshold",
                    node,
                    ast.unparse(ast.Compare(node.left, [_OFF_BY_ONE[op]()], node.comparators)),
                )
        elif (
            isinstance(node, ast.Constant)
            and id(node) not in in_assert
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        ):
            wrong = _bumped(node)
            if wrong is not None:
                yield "wrong_constant", node, ast.unparse(wrong)


def _splice(lines: list[str], node: ast.AST, text: str) -> str | None:
    """Replace the node's source span (one line; offsets are UTF-8 bytes) by ``text``."""
    index = node.lineno - 1
    raw = lines[index].encode("utf-8")
    start, end = node.col_offset, node.end_col_offset
    if end is None or end > len(raw):
        return None
    new_line = raw[:start] + text.encode("utf-8") + raw[end:]
    try:
        candidate = "".join([*lines[:index], new_line.decode("utf-8"), *lines[index + 1 :]])
        ast.parse(candidate)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return candidate


def _removals(
    lines: list[str], func: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str
) -> Iterator[Mutation]:
    """Remove one single-line call statement that is not the body's last statement."""
    for stmt, following in itertools.pairwise(func.body):
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _single_line(stmt)):
            continue
        if (_assert_name(stmt.value) or "").startswith("assert"):
            continue
        index = stmt.lineno - 1
        if lines[index].strip() != ast.get_source_segment("".join(lines), stmt):
            continue  # shares its line with other code
        mutant_lines = [*lines[:index], *lines[index + 1 :]]
        faulty = following.lineno - 1  # the statement after the removed one, shifted up a line
        decorators = getattr(following, "decorator_list", [])
        if decorators:
            faulty = decorators[0].lineno - 1
        candidate = "".join(mutant_lines)
        yield Mutation(
            "removed_setup_call",
            stmt.lineno,
            faulty,
            lines[index].rstrip("\n"),
            mutant_lines[faulty - 1].rstrip("\n"),
            candidate,
            qualname,
        )
