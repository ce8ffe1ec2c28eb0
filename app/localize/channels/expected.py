"""The expected side of a failed comparison: its operand, and the values the failure log printed.

A failed check compares an observed value with an expected one (``assert f() == EXPECTED``,
``self.assertEqual(result, self.expected)``, ``if got != want: raise ...``). The log prints both:
pytest's assertion rewriting (``assert 3 == 4``, ``Differing items:``, ``At index 2 diff:``),
unittest's ``3 != 4`` / ``Lists differ: ... != ...`` / ``First differing element``, and messages
written as "expected X, got Y". Pure helpers on statement text and message text; the check
channel (``app.localize.channels.dataflow``) follows the operands to their definitions.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

_T = TypeVar("_T")
MAX_MESSAGE = 5000  # characters of the error message read
MAX_ATOMS = 24  # values looked for per side
MAX_TEXT = 2000  # characters of a statement parsed
# Names that say which operand holds the expected value, and which the observed one.
EXPECTED_NAME = re.compile(r"expect|want|golden|baseline|reference|\bref_|correct|should", re.IGNORECASE)
OBSERVED_NAME = re.compile(r"actual|observed|\bgot\b|result|output|measured|received", re.IGNORECASE)
NOT_COMPARISONS = frozenset(
    {"assertRaises", "assertRaisesRegex", "assertWarns", "assertWarnsRegex", "assertLogs", "assertNoLogs"}
    | {"assertIsInstance", "assertNotIsInstance", "assertTrue", "assertFalse", "assertIsNone"}
    | {"assertIsNotNone"}
)
WRAPPING = frozenset({"assertTrue", "assertFalse"})  # assertTrue(a == b): the comparison is the argument
_GENERIC = (  # "expected X, got Y" in its usual spellings: (pattern, expected group first?)
    (
        re.compile(
            r"\bexpect(?:ed|ing)?\b[\s:=]*(?P<a>[^,;\n]+?)[\s,;]+(?:but\s+)?"
            r"(?:got|was|is|found|actual|received|observed|instead of)\b[\s:=]*(?P<b>[^\n]+?)[\s.]*$",
            re.IGNORECASE | re.MULTILINE,
        ),
        True,
    ),
    (
        re.compile(
            r"\b(?:got|actual|found|received)\b[\s:=]*(?P<b>[^,;\n]+?)[\s,;]+(?:but\s+|while\s+)?"
            r"expect(?:ed|ing)?\b[\s:=]*(?P<a>[^\n]+?)[\s.]*$",
            re.IGNORECASE | re.MULTILINE,
        ),
        True,
    ),
)
_PYTEST = re.compile(r"^\s*(?:E\s+)?(?:AssertionError:\s*)?assert (?P<rest>.+)$", re.MULTILINE)
_UNITTEST = re.compile(
    r"^\s*(?:E\s+)?(?:\w*(?:Error|Exception|Failure):\s*)?"
    r"(?:(?:Lists|Tuples|Sequences|Sets|Dicts|Items|Strings) differ:\s*)?(?P<a>.+?) != (?P<b>.+)$",
    re.MULTILINE,
)
_DIFFERING_ITEM = re.compile(r"^\s*(?:E\s+)?(?P<a>\{.*\}) != (?P<b>\{.*\})\s*$", re.MULTILINE)
_AT_INDEX = re.compile(r"At index \d+ diff: (?P<a>.+?) != (?P<b>.+)$", re.MULTILINE)
_FIRST_DIFFERING = re.compile(
    r"First differing element \d+:\s*\n(?:E\s+)?(?P<a>[^\n]+)\n(?:E\s+)?(?P<b>[^\n]+)", re.MULTILINE
)
_OPERATORS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_QUOTED = re.compile(r"'([^'\\\n]*)'|\"([^\"\\\n]*)\"")


@dataclass(frozen=True)
class Compared:
    """Two operands a check compares, and the operator pytest prints between their values."""

    left: ast.expr
    right: ast.expr
    operator: str | None  # None for unittest's assertX methods (which print ``a != b``)

    @property
    def operands(self) -> tuple[ast.expr, ast.expr]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Printed:
    """The values a failure log printed for each side of a comparison."""

    sides: tuple[tuple[object, ...], tuple[object, ...]]  # values looked for at definitions, per side
    shown: tuple[str, str]  # as printed, per side ('' when unknown)
    expected: tuple[object, ...] = ()  # the message said which value was expected ("expected X, got Y")
    expected_shown: str = ""
    source: str = ""  # the log text the values were read from


def parse_statement(text: str, *, header: bool = False) -> ast.stmt | None:
    """The first statement of ``text`` (a compound header gets a body), or None."""
    code = textwrap.dedent(text[:MAX_TEXT]).strip()
    if code.startswith("elif "):
        code = code[2:]
    for candidate in (code, code + "\n    pass") if header else (code,):
        try:
            body = _quiet(ast.parse, candidate).body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        return body[0] if body else None
    return None


def _quiet(parse: Callable[[str], _T], text: str) -> _T:
    """Parse scripts' and logs' text without the interpreter's warnings (``'\\w'`` escapes...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return parse(text)


def compared(statement: ast.stmt | None) -> Compared | None:
    """The two operands of the comparison a check statement (or a condition) makes."""
    test: ast.expr | None = None
    if isinstance(statement, ast.Assert | ast.If | ast.While):
        test = statement.test
    elif isinstance(statement, ast.Expr):
        test = statement.value
    elif isinstance(statement, ast.Raise):
        return None
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return Compared(test.left, test.comparators[0], _OPERATORS.get(type(test.ops[0])))
    if isinstance(test, ast.Call):
        return _assert_call(test)
    return None


def _assert_call(call: ast.Call) -> Compared | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in WRAPPING and call.args:
        return compared(ast.Expr(call.args[0]))
    if not name.startswith("assert") or name in NOT_COMPARISONS:
        return None
    args: list[ast.expr] = [a for a in call.args if not isinstance(a, ast.Starred)]
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    for key in ("first", "second"):
        if key in keywords:
            args.append(keywords[key])
    return Compared(args[0], args[1], None) if len(args) >= 2 else None


def is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def operand_names(node: ast.expr) -> tuple[frozenset[str], frozenset[str]]:
    """Names an operand reads (``x``, ``attr:x``) and the functions it calls (simple names)."""
    names: set[str] = set()
    callees: set[str] = set()
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Call):
            func = current.func
            if isinstance(func, ast.Name):
                callees.add(func.id)
            elif isinstance(func, ast.Attribute):
                callees.add(func.attr)
                stack.append(func.value)
            else:
                stack.append(func)
            stack.extend(current.args)
            stack.extend(k.value for k in current.keywords)
        elif isinstance(current, ast.Name):
            names.add(current.id)
        elif isinstance(current, ast.Attribute):
            names.add("attr:" + current.attr)
            stack.append(current.value)
        else:
            stack.extend(ast.iter_child_nodes(current))
    return frozenset(names - {"self", "cls", "True", "False", "None"}), frozenset(callees)


def names_expected(node: ast.expr) -> bool | None:
    """True when the operand's names say it is the expected value, False the observed one, else None."""
    text = ast.unparse(node)
    if EXPECTED_NAME.search(text):
        return True
    if OBSERVED_NAME.search(text):
        return False
    return None


def named_side(compared: Compared) -> int | None:
    """The operand whose names say it is the expected one (``want``, ``self.expected``), if only one does."""
    named = [names_expected(operand) for operand in compared.operands]
    for side in (0, 1):
        mine, other = named[side], named[1 - side]
        if (mine is True and other is not True) or (other is False and mine is not False):
            return side
    return None


def parameter_default(header: str, name: str) -> ast.expr | None:
    """The default of parameter ``name`` in a ``def`` header's text, if it has one."""
    lines = header.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"\s*(?:async\s+)?def\b", line)), None)
    if start is None:
        return None
    statement = parse_statement("\n".join(lines[start:]), header=True)
    if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    args = statement.args
    positional = [*args.posonlyargs, *args.args]
    for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
        if arg.arg == name:
            return default
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.arg == name and kw_default is not None:
            return kw_default
    return None


def value_of(text: str) -> object | None:
    """A printed value as Python data: a literal's value, else the bare text (None when cut short)."""
    text = text.strip().rstrip(".,;")
    if not text or "..." in text:  # pytest and unittest shorten long values: no longer comparable whole
        return None
    try:
        return _quiet(ast.literal_eval, text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text


def atoms(mine: object | None, other: object | None) -> tuple[object, ...]:
    """What to look for at the definitions of one side: its whole value and the parts that differ."""
    if mine is None:
        return ()
    found: list[object] = [mine]
    if isinstance(mine, dict) and isinstance(other, dict):
        for key, value in mine.items():
            if key not in other:
                found.extend((key, value))
            elif other[key] != value:
                found.append(value)
    elif isinstance(mine, list | tuple) and isinstance(other, list | tuple):
        found.extend(a for a, b in zip(mine, other, strict=False) if a != b)
        found.extend(mine[len(other) :])
    elif isinstance(mine, set | frozenset) and isinstance(other, set | frozenset):
        found.extend(mine - other)
    return tuple(found[:MAX_ATOMS])


def _split(rest: str, operator: str) -> tuple[str, str] | None:
    """``L op R`` as pytest printed it: the split where both sides read back as values, else the first."""
    token = f" {operator} "
    positions = [m.start() for m in re.finditer(re.escape(token), rest)]
    if not positions:
        return None
    for at in positions:
        left, right = rest[:at], rest[at + len(token) :]
        if _parses(left) and _parses(right):
            return left, right
    at = positions[0]
    return rest[:at], rest[at + len(token) :]


def _parses(text: str) -> bool:
    try:
        _quiet(ast.literal_eval, text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def printed(message: str, operator: str | None) -> Printed | None:
    """The values the failure message shows for the two sides of a comparison, left and right."""
    text = message[:MAX_MESSAGE]
    pair: tuple[str, str] | None = None
    source = ""
    if operator is not None:
        for found in _PYTEST.finditer(text):
            pair = _split(found.group("rest").strip(), operator)
            if pair is not None:
                source = found.group(0).strip()
                break
    if pair is None:
        found = _UNITTEST.search(text)
        if found is not None:
            pair, source = (found.group("a"), found.group("b")), found.group(0).strip()
    left_value, right_value = (value_of(pair[0]), value_of(pair[1])) if pair else (None, None)
    sides: list[list[object]] = [list(atoms(left_value, right_value)), list(atoms(right_value, left_value))]
    for pattern in (_DIFFERING_ITEM, _AT_INDEX, _FIRST_DIFFERING):
        for found in pattern.finditer(text):
            a, b = value_of(found.group("a")), value_of(found.group("b"))
            sides[0].extend(atoms(a, b))
            sides[1].extend(atoms(b, a))
            source = source or found.group(0).strip()
    expected: tuple[object, ...] = ()
    expected_shown = ""
    for pattern, _ in _GENERIC:
        found = pattern.search(text)
        if found is not None:
            a, b = value_of(found.group("a")), value_of(found.group("b"))
            expected, expected_shown = atoms(a, b), found.group("a").strip()
            source = source or found.group(0).strip()
            break
    if not any(sides) and not expected:
        return None
    shown = (pair[0].strip(), pair[1].strip()) if pair else ("", "")
    return Printed(
        (tuple(sides[0][:MAX_ATOMS]), tuple(sides[1][:MAX_ATOMS])),
        shown,
        expected,
        expected_shown,
        source[:200],
    )


def literals(text: str) -> tuple[object, ...]:
    """The literal values a statement's code holds: constants and whole literal containers."""
    statement = parse_statement(text, header=True)
    if statement is None:
        return _literals_by_text(text)
    found: list[object] = []
    for node in _nodes(statement):
        if isinstance(node, ast.Constant | ast.List | ast.Tuple | ast.Set | ast.Dict | ast.UnaryOp):
            try:
                found.append(ast.literal_eval(node))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return tuple(found)


def _nodes(root: ast.AST) -> Iterator[ast.AST]:
    stack = [root]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(ast.iter_child_nodes(current))


def _literals_by_text(text: str) -> tuple[object, ...]:
    found: list[object] = [float(n) if "." in n else int(n) for n in _NUMBER.findall(text)]
    found.extend(a or b for a, b in _QUOTED.findall(text))
    return tuple(found)


def same(a: object, b: object) -> bool:
    """Equal values of the same kind (``True`` is no ``1``; ``4`` is ``4.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # comparing arbitrary literal values must never fail the ranking
        return False


def matching(wanted: tuple[object, ...], present: tuple[object, ...]) -> object | None:
    """The first value of ``wanted`` (most specific first: the whole value) found among ``present``."""
    for value in wanted:
        if any(same(value, p) for p in present):
            return value
    return None


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
