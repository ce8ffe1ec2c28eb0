"""What a Python error message says, in the wording of every CPython from 2.7 to 3.13.

The ranker's channels want facts, not wording: which name was undefined or unbound, which
attribute was missing and of what (an object, a module, a class), which function a call did not
fit, which key or module was missing, whether a value was None. CPython reworded most of these
messages over the years (``local variable 'x' referenced before assignment`` became ``cannot
access local variable 'x' where it is not associated with a value`` in 3.11; 2.7 said ``global
name 'x' is not defined`` and ``f() takes exactly 2 arguments (3 given)``; 3.10 qualifies
methods as ``X.f()`` and adds ``Did you mean: 'y'?``). Each form is one pattern below; the
patterns are anchored on literal words and read at most the head of the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEAD = 4000  # characters of the message read: the exception line is at its start or end
_ID = r"[A-Za-z_]\w*"
_DOTTED = r"[A-Za-z_][\w.]*"


@dataclass(frozen=True)
class _Form:
    """One wording of an error message, and the facts it tells."""

    kind: str
    pattern: re.Pattern[str]
    groups: tuple[str, ...]  # the fact each group holds; two groups of one fact are alternatives
    owner: str | None = None  # whose attribute is missing
    qualify: bool = False  # the callee's class is read before it (3.10+ ``X.f() takes ...``)


def _form(
    kind: str, pattern: str, groups: tuple[str, ...], owner: str | None = None, *, qualify: bool = False
) -> _Form:
    return _Form(kind, re.compile(pattern), groups, owner, qualify)


# In the order tried, the first found wins: where wordings overlap the narrower comes first
# (2.7's ``'module' object has no attribute`` before any object's).
_FORMS = (
    _form(
        "unbound-local",
        rf"\b(?:local|free) variable '({_ID})' referenced before assignment|"
        rf"\bcannot access (?:local|free) variable '({_ID})' where it is not associated with a value",
        ("name", "name"),
    ),
    _form("undefined-name", rf"\b(?:global )?name '({_ID})' is not defined", ("name",)),
    _form(
        "missing-attribute",
        rf"\bmodule '({_DOTTED})' has no attribute '({_ID})'",
        ("owner_name", "attribute"),
        "module",
    ),
    _form("missing-attribute", rf"'module' object has no attribute '({_ID})'", ("attribute",), "module"),
    _form(
        "missing-attribute",
        rf"\btype object '({_DOTTED})' has no attribute '({_ID})'|\bclass ({_ID}) has no attribute '({_ID})'",
        ("owner_name", "attribute", "owner_name", "attribute"),
        "type",
    ),
    _form(
        "missing-attribute",
        rf"'([^'\s]{{1,100}})' object has no attribute '({_ID})'",  # a type's name: any text (``type()``)
        ("owner_name", "attribute"),
        "object",
    ),
    _form(
        "missing-attribute",
        rf"\b({_ID}) instance has no attribute '({_ID})'",
        ("owner_name", "attribute"),
        "instance",
    ),
    _form(
        "arguments",
        rf"\bunbound method ({_ID})\(\) must be called with ({_ID}) instance",
        ("callee", "qualifier"),
    ),
    _form(
        "arguments",
        rf"\b({_ID})\(\) (?:takes|missing \d+ required|got an unexpected keyword argument|"
        r"got multiple values for|got some positional-only)",
        ("callee",),
        qualify=True,
    ),
    _form("missing-module", rf"\bNo module named '?({_DOTTED})'?", ("module",)),
    _form("cannot-import", rf"\bcannot import name '?({_ID})'?(?: from '({_DOTTED})')?", ("name", "module")),
)

# the exception's class where a line names it: ``KeyError: 'k'``, ``pkg.mod.CustomError``, a bare ``KeyError``
_CLASS = re.compile(
    r"(?<![\w.])(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fail))"
    r"(?=:|[ \t]*$|[ \t]*\()",
    re.MULTILINE,
)
# what a call that did not fit its signature did wrong (2.7 to 3.13 wordings)
_TOO_MANY = re.compile(
    r"\btakes (?:exactly |at most |from \d+ to )?(\d+|no) (?:positional )?arguments?"
    r"(?: but (\d+) (?:was|were) given| \((\d+) given\))"
)
_TOO_FEW = re.compile(
    r"\b(?:missing \d+ required (?:positional )?arguments?|takes (?:exactly |at least )(\d+) "
    r"(?:positional )?arguments? \((\d+) given\))"
)
_KEYWORD = re.compile(
    rf"\b(?:got an unexpected keyword argument|got multiple values for (?:keyword )?argument|"
    rf"missing \d+ required keyword-only arguments?:) [`'\"]?({_ID})"
)
_UNPACK = re.compile(
    r"\b(?:not enough|too many) values to unpack(?: \(expected (\d+))?|\bneed more than \d+ values? to unpack"
)
_CONVERT = re.compile(r"\binvalid literal for (int|float|long)\(\)|\bcould not convert string to (float|int)")
_MISSING_ARGS = re.compile(
    r"\bmissing \d+ required (?:positional |keyword-only )?arguments?: ((?:'\w+'(?:,? and |, )?)+)"
)
_TYPE_OF = re.compile(r"'(\w+)' object (?:is not subscriptable|is unsubscriptable|does not support indexing)")
_OPERATOR = re.compile(
    r"\bunsupported operand type\(s\) for (\*\*|//|<<|>>|[-+*/%|&^@])=?:|"
    r"\bcan only concatenate |\bcannot concatenate |\bcan't multiply sequence|"
    r"'(<=|>=|<|>)' not supported between instances"
)
# Python's ``... directory: 'path'``, and a shell tool's ``cat: /path: No such file or directory``
_PATH_MISSING = re.compile(
    r"\bNo such file or directory: [ub]?(['\"])(.{1,300}?)\1|"
    r"(?:^|[\s'\"])((?:~|\.{1,2})?/[^\s:'\"]{1,300})['\"]?: No such file or directory"
)
# "unsupported format character 'w' (0x77) at index 50": a %-directive ended by that character
_DIRECTIVE = re.compile(r"unsupported format character '(.)' \(0x[0-9a-f]+\)")
_FORMATTING = (
    "arguments for format string",
    "arguments converted during string formatting",
    "incomplete format",
    "unsupported format character",
    "format: a number is required",
    "format: a real number is required",
    "format: an integer is required",
    "Replacement index",
)
_KEY = re.compile(r"\bKeyError: (?:[ub]?(['\"])(.{1,80}?)\1|(-?\d{1,40}))\s*$", re.MULTILINE)
_NONE = ("NoneType", "'None' object")
_OPERAND = (
    "unsupported operand type",
    "can only concatenate",
    "cannot concatenate",
    "Can't convert",
    "can't convert",
    "not supported between instances of",
    "unorderable types",
    "can't multiply sequence",
    "must be str, not",
    "object cannot be interpreted as",
    "bytes-like",
)
_NOT_INDEXABLE = (
    "is not subscriptable",
    "is unsubscriptable",
    "does not support indexing",
    "has no attribute '__getitem__'",
    "object is not an iterator",
)
_INDEX = ("IndexError", "index out of range", "pop from empty")


@dataclass(frozen=True)
class PythonError:
    """The facts of one error message; None or False where the message does not say."""

    kind: str | None = None  # "undefined-name" | "unbound-local" | "missing-attribute" | "arguments" | ...
    name: str | None = None  # the undefined or unbound name, or the name that cannot be imported
    attribute: str | None = None  # the missing attribute
    owner: str | None = None  # whose attribute: "module", "type", "object" or "instance"
    owner_name: str | None = None  # the module, class or type name where the message gives one
    callee: str | None = None  # the function a call did not fit (``__init__``: the class is called)
    qualifier: str | None = None  # its class, where the message names it (3.10+, 2.7's unbound methods)
    module: str | None = None  # the missing module, or the one a name could not be imported from
    key: str | None = None  # the missing key, as its repr's text
    none: bool = False  # a value was None where it was used
    operand: bool = False  # an operation got a value of the wrong type
    not_indexable: bool = False  # indexed a value that cannot be (a view, an iterator, None)
    index: bool = False  # an index past the end, or a pop from an empty sequence
    exception: str | None = None  # the exception's class, without its module (``KeyError``)
    # a call that did not fit: "too-many" or "too-few" positional arguments, or "keyword" (one
    # it does not take, one given twice, a keyword-only one missing: ``keyword`` says which)
    arity: str | None = None
    given: int | None = None  # the positional arguments the message says were given (self included)
    keyword: str | None = None
    unpack: int | None = None  # the targets an unpacking expected (``expected 2``), 0 where unsaid
    conversion: str | None = None  # the built-in whose conversion failed: ``int`` or ``float``
    path: str | None = None  # the missing file or directory
    formatting: bool = False  # a %-format or str.format did not fit its arguments
    operator: str | None = None  # the operator whose operands did not fit (``+`` of ``for +:``)
    iterated: bool = False  # a value that cannot be iterated was looped over or tested with ``in``
    missing: tuple[str, ...] = ()  # the required arguments a call did not pass
    value_type: str | None = None  # the type a value that could not be indexed had (``dict_keys``)
    resized: bool = False  # a dict, set or deque changed size while a loop iterated over it
    directive: str | None = None  # the %-format character the message says is unsupported (``w``)

    @property
    def called(self) -> str | None:
        """The name a call of the callee is written with (a class for its ``__init__``)."""
        if self.callee == "__init__" and self.qualifier:
            return self.qualifier.rsplit(".", 1)[-1]
        return self.callee


def python_error(message: str) -> PythonError:
    """The facts of a Python error message (any CPython 2.7 to 3.13 wording)."""
    text = message[:_HEAD]
    facts: dict[str, object] = {
        "none": any(p in text for p in _NONE),
        "operand": any(p in text for p in _OPERAND),
        "not_indexable": any(p in text for p in _NOT_INDEXABLE),
        "index": any(p in text for p in _INDEX),
    }
    if found := _CLASS.search(text):
        facts["exception"] = found.group(1)
    flat = _unwrapped(text)
    facts.update(_call_facts(flat))
    if found := _UNPACK.search(flat):
        facts["unpack"] = int(found.group(1)) if found.group(1) else 0
    if found := _CONVERT.search(flat):
        facts["conversion"] = "int" if (found.group(1) or found.group(2)) in ("int", "long") else "float"
    facts["iterated"] = "is not iterable" in flat
    facts["resized"] = any(p in flat for p in _RESIZED)
    if found := _MISSING_ARGS.search(flat):
        facts["missing"] = tuple(re.findall(r"'(\w+)'", found.group(1)))
    if found := _TYPE_OF.search(flat):
        facts["value_type"] = found.group(1)
    if found := _OPERATOR.search(flat):
        text_of = found.group(0)
        facts["operator"] = found.group(1) or found.group(2) or ("*" if "multiply" in text_of else "+")
    if found := _PATH_MISSING.search(flat):
        facts["path"] = found.group(2) or found.group(3)
    facts["formatting"] = any(p in flat for p in _FORMATTING)
    if found := _DIRECTIVE.search(flat):
        facts["directive"] = found.group(1)
    key = _KEY.search(text)
    if key:
        facts["key"] = key.group(2) if key.group(2) is not None else key.group(3)
    for form in _FORMS:
        if m := form.pattern.search(flat):
            facts.update(kind=form.kind, owner=form.owner)
            for fact, value in zip(form.groups, m.groups(), strict=True):
                if value is not None:  # of two alternatives, the one that matched
                    facts[fact] = value
            if form.qualify:
                facts["qualifier"] = _qualifier(flat, m.start(1))
            break
    return PythonError(**facts)  # type: ignore[arg-type]


def _qualifier(text: str, at: int) -> str | None:
    """The dotted name before ``.f()`` at ``at`` (``X`` of ``X.f() takes ...``), read backwards."""
    if at == 0 or text[at - 1] != ".":
        return None
    start = at - 1
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
        start -= 1
    return text[start : at - 1].strip(".") or None


# RuntimeError's forms: "dictionary changed size during iteration" (3.x and 2.7), "Set changed size
# ...", "dictionary keys changed during iteration" (3.8+), "deque mutated during iteration",
# "OrderedDict mutated during iteration"
_RESIZED = ("changed size during iteration", "changed during iteration", "mutated during iteration")

_WRAP = re.compile(r"[ \t]*\\?\n[ \t]*(?=\S)")


def _unwrapped(text: str) -> str:
    """The message with its lines joined: one wrapped by a terminal, a pager or a person (a
    trailing backslash, a hanging indent) reads as the one line the interpreter printed."""
    return _WRAP.sub(" ", text) if "\n" in text else text


def _call_facts(text: str) -> dict[str, object]:
    """What a call that did not fit its callee's signature did wrong, as the message says it."""
    if found := _KEYWORD.search(text):
        return {"arity": "keyword", "keyword": found.group(1)}
    if found := _TOO_MANY.search(text):
        takes = 0 if found.group(1) == "no" else int(found.group(1))
        given = int(found.group(2) or found.group(3))
        if given > takes:
            return {"arity": "too-many", "given": given}
        return {"arity": "too-few", "given": given}  # 2.7's ``takes exactly 2 arguments (1 given)``
    if found := _TOO_FEW.search(text):
        given = found.group(2)
        return {"arity": "too-few", "given": int(given) if given else None}
    return {}
