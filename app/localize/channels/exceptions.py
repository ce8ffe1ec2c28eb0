"""The exception's kind, mapped to the code that should have prevented it; and code smells.

Each rule pairs a property of the failure text (an exception name, errno text or message
shape, searched with plain substring tests) with a property of statements that could have
prevented it: FileNotFoundError -> path construction and existence checks; IndexError ->
indexing and emptiness checks; KeyError -> key access and membership tests; ``'NoneType'
object has no attribute`` -> bindings that can be None; TypeError on arguments -> the callee's
definition and call sites; timeouts -> timeout/wait/retry arguments; ValueError on parsing ->
split/int/float conversions; NameError/UnboundLocalError -> the definitions of the name and the
conditions they sit under; ImportError -> imports; AttributeError of a module -> its import;
ZeroDivisionError -> zero and empty values, lengths and counts; ``not subscriptable`` -> views
and iterators; KeyError 'k' -> the statements using 'k'. A missing attribute the scripts set
somewhere was not set on this path (the setter, the condition or branch chain around it; read by
cleanup code: the start of the initializer); one set nowhere is a wrong name at its reads.
Statements that ran on the way to the failure count more.

Smells are almost always faults: ``is`` with a literal, a comparison with the string
``'None'``/``'True'``/``'False'``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from app.analysis.logparse.pyerrors import PythonError, python_error
from app.analysis.model import Statement, StmtKind
from app.localize.channels import Context, Scores, Signal, put
from app.localize.channels.dataflow import INITIALIZERS, definitions, earlier_conditions, guards

CONDITIONAL = frozenset(
    {StmtKind.IF, StmtKind.ELIF, StmtKind.ELSE, StmtKind.EXCEPT, StmtKind.FOR, StmtKind.WHILE}
)

CLEANUP_PREFIXES = ("teardown", "cleanup", "clean_up", "finalize", "destroy")
CHAIN = 0.9  # earlier conditions of an if/elif chain one branch of which sets a missing attribute
LOCAL = 0.8  # a statement of the failing function, at or before the failing line
ELSEWHERE = 0.4
_PATH = re.compile(
    r"os\.path\.|\bjoin\(|get_data\(|chdir\(|\bopen\(|exists\(|isfile\(|isdir\(|Path\(|[\"'][\w.-]*/"
)
_INDEX = re.compile(r"\w\[-?\d+\]|\blen\(|\[0\]|\.pop\(")
_KEY = re.compile(r"\w\[[\"'\w]|\bif\b[^\n]*\bin\b|\.get\(|\.keys\(|\.pop\(")
_NONE = re.compile(r"\bNone\b|\.get\(|\.search\(|\.match\(|get_\w+\(")
_TIMEOUT = re.compile(r"timeout|wait|retry|retries|sleep|interval|delay|poll", re.IGNORECASE)
_PARSE = re.compile(r"\.split\(|\bint\(|\bfloat\(|\.strip\(|\.partition\(|re\.\w+\(|\bjson\.loads\(")
_ZERO = re.compile(
    r"(?:=|\breturn)\s*(?:\[\]|\{\}|\(\)|set\(\)|dict\(\)|list\(\)|0(?:\.0)?)\s*(?:#|$)|\blen\(|\bcount\(",
    re.MULTILINE,
)
_VIEW = re.compile(r"\.keys\(|\.values\(|\.items\(|\bmap\(|\bfilter\(|\bzip\(|\brange\(|\breversed\(")
_ARITH_TYPE = re.compile(r"\s/\s|\bfloat\(|\bstr\(|\bint\(|\.read\(|\.decode\(|\.encode\(")

Rule = tuple[Callable[[str], bool], re.Pattern[str], str]


def _has(*phrases: str) -> Callable[[str], bool]:
    return lambda text: any(p in text for p in phrases)


RULES: tuple[Rule, ...] = (
    (_has("FileNotFoundError", "No such file", "ENOENT", "does not exist"), _PATH, "builds or checks a path"),
    (
        _has("IndexError", "index out of range", "pop from empty"),
        _INDEX,
        "indexes a sequence or checks its length",
    ),
    (_has("KeyError"), _KEY, "reads a key or tests membership"),
    (_has("NoneType", "'None' object"), _NONE, "binds a value that can be None"),
    (
        _has("ZeroDivisionError", "division by zero", "modulo by zero"),
        _ZERO,
        "produces a zero or empty value",
    ),
    (
        _has(
            "is not subscriptable",
            "is unsubscriptable",
            "does not support indexing",
            "has no attribute '__getitem__'",
            "object is not an iterator",
        ),
        _VIEW,
        "produces a view or iterator, not a list",
    ),
    (_has("Timeout", "timed out", "timeout", "TimeoutError"), _TIMEOUT, "sets a timeout, wait or retry"),
    (
        _has("invalid literal for", "could not convert", "unpack", "ValueError"),
        _PARSE,
        "parses or converts text",
    ),
    (
        _has(
            "object cannot be interpreted as",
            "unsupported operand",
            "can only concatenate",
            "cannot concatenate",
            "Can't convert",
            "not supported between instances of",
            "unorderable types",
            "can't multiply sequence",
            "must be str",
            "bytes-like",
            "not bytes",
            "not str",
        ),
        _ARITH_TYPE,
        "produces a value of the wrong type",
    ),
)


def exception_scores(ctx: Context, site: int | None) -> Scores:
    scores: Scores = {}
    text = ctx.message[:4000]
    if not text.strip():
        return scores
    headline = text.strip().splitlines()[0][:200]
    local = ctx.statements[site].function if site is not None else None
    before = ctx.statements[site].start_line if site is not None else 0
    for applies, code, what in RULES:
        if not applies(text):
            continue
        for sid, body in ctx.facts.text.items():
            if ctx.is_kept(sid) and code.search(body):
                stmt = ctx.statements[sid]
                near = stmt.function == local and stmt.start_line <= before  # ran on the way to the failure
                value = LOCAL if near else ELSEWHERE
                put(scores, sid, Signal(value, f"{what}, what this kind of error comes from", headline))
    error = python_error(text)
    _names(ctx, error, headline, scores)
    if error.key is not None:
        key = error.key
        for sid, body in ctx.facts.text.items():
            if (f"'{key}'" in body or f'"{key}"' in body) and ctx.is_kept(sid):
                put(scores, sid, Signal(1.0, f"uses the key {key!r} the error names", headline))
    if site is not None and error.attribute and error.owner != "module" and not error.none:
        _cleanup_reads(ctx, site, error.attribute, headline, scores)
    if site is not None and error.none:
        _none_guard(ctx, site, headline, scores)
    return scores


def _none_guard(ctx: Context, site: int, headline: str, scores: Scores) -> None:
    """A value was None at the failing line: the condition that let it through, and where it was bound."""
    for guard, value in guards(ctx, site)[:2]:
        put(
            scores,
            guard,
            Signal(value, "lets the failing line run without testing the value for None", headline),
        )
    use = ctx.statements[site]
    for name in ctx.facts.uses.get(site, ()):
        for sid in definitions(ctx, name, use)[:4]:
            if not ctx.facts.imports.get(sid):
                put(
                    scores,
                    sid,
                    Signal(0.9, f"binds `{name.removeprefix('attr:')}`, None at the failing line", headline),
                )


def _names(ctx: Context, error: PythonError, headline: str, scores: Scores) -> None:
    """Errors naming a name: where it is (not) defined, imported or called."""
    facts = ctx.facts
    if error.kind in ("missing-module", "cannot-import"):
        wanted = (error.module if error.kind == "missing-module" else error.name) or ""
        wanted = wanted.split(".")[0]
        for sid, body in facts.text.items():
            if wanted and facts.imports.get(sid) and wanted in body:
                put(
                    scores, sid, Signal(1.0, f"imports `{wanted}`, which the error says is missing", headline)
                )
    if error.kind == "missing-attribute" and error.owner == "module" and error.attribute:
        base, attr = (error.owner_name or "").split(".")[-1], error.attribute
        for sid, body in facts.text.items():
            if f".{attr}" in body and ctx.is_kept(sid):
                put(scores, sid, Signal(0.9, f"uses `{attr}` of a module that lacks it", headline))
            elif base and facts.imports.get(sid) and base in body:
                put(scores, sid, Signal(0.7, f"imports `{base}`, the module without `{attr}`", headline))
    if error.kind == "missing-attribute" and error.owner != "module" and error.attribute and not error.none:
        _missing_attribute(ctx, error.attribute, headline, scores)
    if error.kind in ("undefined-name", "unbound-local") and error.name:
        name = error.name
        for sid, names in facts.defs.items():
            if name not in names:
                continue
            mutation = name in facts.uses.get(sid, ())  # ``x.append(...)``, ``x += 1``: x was bound before
            put(
                scores,
                sid,
                Signal(0.5 if mutation else 0.9, f"defines `{name}`, which did not reach its use", headline),
            )
            guard = ctx.statements[sid].parent
            if not mutation and guard is not None and ctx.statements[guard].kind in CONDITIONAL:
                put(scores, guard, Signal(0.9, f"defines `{name}` only under this condition", headline))
        for sid, names in facts.imports.items():
            if names:
                put(scores, sid, Signal(0.3, f"an import: `{name}` may be missing here", headline))
    if error.kind == "arguments" and error.callee:
        callee, called = error.callee, error.called or error.callee
        for fid in ctx.by_name.get(callee, ()):
            function = ctx.functions[fid]
            owner = function.qualname.rsplit(".", 1)[0] if "." in function.qualname else None
            if error.qualifier and owner and owner.rsplit(".", 1)[-1] != error.qualifier.rsplit(".", 1)[-1]:
                continue  # 3.10+ names the class: another class's method of that name is not it
            if function.statements:
                put(
                    scores,
                    function.statements[0],
                    Signal(0.6, f"in {callee}(), whose signature the call does not fit", headline),
                )
        for sid in facts.call_sites.get(called, ()):
            put(scores, sid, Signal(1.0, f"calls {called}() with arguments it does not accept", headline))


def _cleanup_reads(ctx: Context, site: int, name: str, headline: str, scores: Scores) -> None:
    """Cleanup code (tearDown, cleanups, ``finally``) read an attribute an early exit kept from being
    set: it belongs at the start of the class's initializer, so cleanup can always read it."""
    function = ctx.functions[ctx.statements[site].function]
    in_finally = False
    current = ctx.statements[site].parent
    while current is not None:
        in_finally = in_finally or ctx.statements[current].kind == StmtKind.FINALLY
        current = ctx.statements[current].parent
    if not (in_finally or function.name.lower().startswith(CLEANUP_PREFIXES)) or "." not in function.qualname:
        return
    owner = function.qualname.rsplit(".", 1)[0]
    for initializer in ctx.functions.values():
        if initializer.name in INITIALIZERS and initializer.qualname.rsplit(".", 1)[0] == owner:
            body = [s for s in initializer.top_level or initializer.statements if not _docstring(ctx, s)]
            for rank, sid in enumerate(body[:3]):
                detail = (
                    f"start of {initializer.name}: `{name}` set here would exist for the cleanup that read it"
                )
                put(scores, sid, Signal(0.9**rank, detail, headline))


def _docstring(ctx: Context, sid: int) -> bool:
    text = ctx.facts.text.get(sid, "").lstrip()
    return text[:1] in ("'", '"') or text[:2].lower() in ('r"', "r'")


def chain_conditions(ctx: Context, clause: Statement) -> list[int]:
    return earlier_conditions(ctx, clause) if clause.kind in (StmtKind.ELIF, StmtKind.ELSE) else []


def _missing_attribute(ctx: Context, name: str, headline: str, scores: Scores) -> None:
    """An object lacks ``name``: set only under a condition (the condition and the setter), or set
    nowhere (its reads are the fault: a wrong name)."""
    facts = ctx.facts
    setters = [sid for sid, names in facts.defs.items() if f"attr:{name}" in names]
    for sid in setters:
        put(scores, sid, Signal(0.8, f"sets `{name}`, which the object lacked when it was read", headline))
        guard = ctx.statements[sid].parent
        if guard is not None and ctx.statements[guard].kind in CONDITIONAL:
            put(scores, guard, Signal(1.0, f"sets `{name}` only under this condition", headline))
            for head in chain_conditions(
                ctx, ctx.statements[guard]
            ):  # before the branching, it would always be set
                put(
                    scores,
                    head,
                    Signal(CHAIN, f"starts the branching that sets `{name}` in one branch only", headline),
                )
    if not setters:
        for sid, names in facts.uses.items():
            if f"attr:{name}" in names and ctx.is_kept(sid):
                put(scores, sid, Signal(1.0, f"reads `{name}`, which nothing in the scripts sets", headline))


def smell_scores(ctx: Context) -> Scores:
    scores: Scores = {}
    for sid, smells in ctx.facts.smells.items():
        if smells and ctx.is_kept(sid):
            put(scores, sid, Signal(1.0, smells[0]))
    return scores
