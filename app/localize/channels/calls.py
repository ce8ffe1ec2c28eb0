"""Calls checked against the scripts' own ``def`` signatures: which call a TypeError's message is about;
and string formattings checked against their templates.

A call that does not fit its callee's signature raises ``TypeError`` with one of a few messages
(too many or too few positional arguments, an unexpected or repeated keyword, a missing
keyword-only argument). Where the callee is defined in the scripts, its signature says which of
its call sites cannot fit; where it is not, the count of arguments the message says were given
still singles out the calls that passed that many. Both are read with ``ast`` from the source
text of the ``def`` header and of the calling statement: a statement that does not parse alone
(a clause header) is read with a body added, and one that still does not parse is left out.
"""

from __future__ import annotations

import ast
import re
import string
import textwrap
import warnings
from dataclasses import dataclass

from app.analysis.model import Function

_BINDERS = frozenset({"staticmethod"})  # decorators after which a method takes no ``self``


@dataclass(frozen=True)
class Signature:
    """What a ``def`` accepts."""

    positional: tuple[str, ...]  # positional parameters in order (``self`` of a method included)
    required: int  # how many of them have no default
    keyword_only: tuple[str, ...]
    required_keywords: frozenset[str]  # keyword-only parameters without a default
    varargs: bool
    varkw: bool
    method: bool  # an instance or class method: a call through an object passes the first parameter

    def accepts(self, name: str) -> bool:
        return self.varkw or name in self.positional or name in self.keyword_only


@dataclass(frozen=True)
class CallShape:
    """The arguments one call passes."""

    positional: int  # plain positional arguments
    keywords: tuple[str, ...]  # keyword names, in order
    star: bool  # a ``*args`` makes the positional count unknown
    double_star: bool  # a ``**kwargs`` makes the keywords unknown
    via_attribute: bool  # ``obj.f(...)``


def _parse(text: str) -> ast.Module | None:
    """A statement's text as a module, with a body added where it is a clause header."""
    code = textwrap.dedent(text).strip("\n")
    if code.startswith("elif "):
        code = code[2:]
    with warnings.catch_warnings():  # the scripts' own invalid escapes (``"\w"``) are no concern here
        warnings.simplefilter("ignore")
        for attempt in (code, code + "\n    pass", "try:\n    pass\n" + code + "\n    pass"):
            try:
                return ast.parse(attempt)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                continue
    return None


def signature(function: Function, lines: tuple[str, ...]) -> Signature | None:
    """The signature of a ``def`` from its header lines (``lines``: its file's lines), or None."""
    header = [lines[n - 1] for n in function.header_lines if 0 < n <= len(lines)]
    starts = (i for i, line in enumerate(header) if line.lstrip().startswith(("def ", "async def ")))
    start = next(starts, None)
    if start is None:
        return None
    tree = _parse("\n".join(header[start:]))
    node = tree.body[0] if tree is not None and tree.body else None
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    decorators = {line.strip().lstrip("@").split("(")[0].split(".")[-1] for line in header[:start]}
    args = node.args
    positional = tuple(a.arg for a in (*args.posonlyargs, *args.args))
    keyword_only = tuple(a.arg for a in args.kwonlyargs)
    required_keywords = frozenset(
        a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default is None
    )
    return Signature(
        positional=positional,
        required=len(positional) - len(args.defaults),
        keyword_only=keyword_only,
        required_keywords=required_keywords,
        varargs=args.vararg is not None,
        varkw=args.kwarg is not None,
        method=function.is_method and not (decorators & _BINDERS),
    )


def call_shapes(text: str, called: str) -> list[CallShape]:
    """The calls of ``called`` (``called(...)`` or ``x.called(...)``) in a statement's text."""
    tree = _parse(text)
    if tree is None:
        return []
    shapes: list[CallShape] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name != called:
            continue
        shapes.append(
            CallShape(
                positional=sum(not isinstance(a, ast.Starred) for a in node.args),
                keywords=tuple(k.arg for k in node.keywords if k.arg is not None),
                star=any(isinstance(a, ast.Starred) for a in node.args),
                double_star=any(k.arg is None for k in node.keywords),
                via_attribute=isinstance(func, ast.Attribute),
            )
        )
    return shapes


def misfits(sig: Signature, call: CallShape, *, constructor: bool = False) -> tuple[str, ...]:
    """How the call does not fit the signature: ``too-many``, ``too-few`` and ``keyword:NAME``
    entries; empty where it fits or where splatted arguments leave it unknown.

    ``constructor``: the call is a class's, ``Class(...)``, checked against its ``__init__``.
    """
    bound = 1 if (constructor or (sig.method and call.via_attribute)) else 0
    params = sig.positional[bound:]
    required = max(0, sig.required - bound)
    found: list[str] = []
    if not call.star and not sig.varargs and call.positional > len(params):
        found.append("too-many")
    filled = set(params[: call.positional])
    for name in call.keywords:
        if not sig.accepts(name) or name in filled or name in sig.positional[:bound]:
            found.append(f"keyword:{name}")  # unexpected, or given positionally too
    if not call.star and not call.double_star:
        named = set(call.keywords)
        if any(p not in named for p in params[call.positional : required]):
            found.append("too-few")
        found.extend(f"keyword:{k}" for k in sorted(sig.required_keywords - named))
    return tuple(found)


def passes(call: CallShape, given: int, *, method: bool | None, constructor: bool = False) -> bool:
    """The call passed the ``given`` positional arguments a message counts: ``self`` counts for a
    constructor and for a method called through an object (``method`` None: not known whether the
    callee is one)."""
    if call.star:
        return False
    if constructor:
        return call.positional + 1 == given
    if not call.via_attribute or method is False:
        return call.positional == given
    return call.positional + 1 == given or (method is None and call.positional == given)


# a %-directive up to its conversion character: mapping key, flags, width, precision, length
DIRECTIVE_HEAD = r"%(?:\([^)]*\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?"
_PERCENT_DIRECTIVE = re.compile(rf"%%|{DIRECTIVE_HEAD}[a-zA-Z]")


@dataclass(frozen=True)
class FormatMisfit:
    """A formatting whose arguments cannot fill its template: ``positional`` when a field indexes
    past the positional arguments (IndexError), ``names`` the named fields no argument fills
    (KeyError)."""

    positional: bool
    names: tuple[str, ...]


def _fields(template: str) -> tuple[int, tuple[str, ...]] | None:
    """How many positional arguments a ``str.format`` template needs, and its named fields (those
    nested in a format spec too); None where the template does not parse."""
    needed, auto, names = 0, 0, []
    pending = [template]
    try:
        while pending:
            for _, field, spec, _ in string.Formatter().parse(pending.pop()):
                if spec and "{" in spec:
                    pending.append(spec)
                if field is None:
                    continue
                head = field.split(".", 1)[0].split("[", 1)[0]
                if head == "":
                    auto += 1
                    needed = max(needed, auto)
                elif head.isdigit():
                    needed = max(needed, int(head) + 1)
                else:
                    names.append(head)
    except ValueError:
        return None
    return needed, tuple(names)


def _directives(template: str) -> int | None:
    """The values a %-template takes (``%%`` none, ``%*d`` two); None where it takes a mapping."""
    count = 0
    for match in _PERCENT_DIRECTIVE.finditer(template):
        directive = match.group(0)
        if directive == "%%":
            continue
        if "(" in directive:
            return None
        count += 1 + directive.count("*")
    return count


def format_misfits(text: str) -> list[FormatMisfit]:
    """The formattings in a statement's text that cannot fit their templates: a literal's
    ``.format(...)`` with fewer positional arguments than its fields index, or without a keyword a
    named field needs; a literal ``% (a, b)`` with more or fewer values than its directives take."""
    tree = _parse(text)
    if tree is None:
        return []
    found: list[FormatMisfit] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)
        ):
            fields = _fields(node.func.value.value)
            if fields is None:
                continue
            needed, names = fields
            star = any(isinstance(a, ast.Starred) for a in node.args)
            double_star = any(k.arg is None for k in node.keywords)
            given = {k.arg for k in node.keywords if k.arg is not None}
            short = not star and needed > len(node.args)
            unfilled = () if double_star else tuple(n for n in names if n not in given)
            if short or unfilled:
                found.append(FormatMisfit(short, unfilled))
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and isinstance(node.right, ast.Tuple)
            and not any(isinstance(e, ast.Starred) for e in node.right.elts)
        ):
            takes = _directives(node.left.value)
            if takes is not None and takes != len(node.right.elts):
                found.append(FormatMisfit(takes > len(node.right.elts), ()))
    return found
