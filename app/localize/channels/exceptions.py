"""The exception's kind, mapped to the code that should have prevented it; and code smells.

Each rule pairs a property of the failure text (an exception name, errno text or message shape,
searched with plain substring tests) with a property of statements that could have prevented it:
FileNotFoundError -> path construction and existence checks; IndexError -> indexing and emptiness
checks; KeyError -> key access and membership tests; ``'NoneType' object has no attribute`` ->
bindings that can be None; TypeError on arguments -> the callee's definition and call sites;
timeouts -> timeout/wait/retry arguments; ValueError on parsing -> split/int/float conversions;
NameError -> the module-level definitions of the name and the conditions they sit under (a binding
local to another function reaches nothing; a name bound nowhere is likelier a missing import);
UnboundLocalError -> in the functions that bind the name on some paths only, the bindings, the
clauses they sit in and where the function binds its starting values; ImportError -> imports;
AttributeError of a module -> its import; ZeroDivisionError -> zero and empty values, lengths and
counts; UnicodeDecodeError and UnicodeEncodeError -> decoding, encoding, text-mode files and
output, the locale; ``not subscriptable`` -> views and iterators; KeyError 'k' -> the statements
using 'k'. A missing attribute the scripts set somewhere was not set on this path (the setter, the
condition or branch chain around it; read by cleanup code: the start of the initializer); one set
nowhere is a wrong name at its reads.
Statements that ran on the way to the failure count more.

The statements that can raise the reported error (``_raisers``), where the message says enough: an
explicit ``raise`` of its class; a subscript for IndexError; an unpacking into the count the
message expected; the conversion (``int()``/``float()``) it names; a formatting (one whose
template its arguments cannot fill, the %-directive ended by the character it rejects); a raise
only where the message holds its literal text; a loop straight over a container that changed size
during it (one that changes it in its body first); the operator of an operand error; a view
indexed where the message names its type; a None value indexed, iterated or whose attribute is
read (a call's result first); the uses of an undefined name where no enclosing scope defines it;
the missing file's name. A call that did not fit its callee: the calls that cannot fit the
scripts' own ``def`` (``app.localize.channels.calls``), or that pass the count or keyword the
message names, before the other calls. An attribute read off None at a traceback frame's line only
revealed the fault: the guard and the binding (``_none_guard``) are the evidence.

Smells are almost always faults: ``is`` with a literal, a comparison with the string
``'None'``/``'True'``/``'False'``.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable

from app.analysis.logparse.pyerrors import PythonError, python_error
from app.analysis.model import Function, Statement, StmtKind
from app.localize.channels import Context, Scores, Signal, put
from app.localize.channels.calls import (
    DIRECTIVE_HEAD,
    CallShape,
    Signature,
    call_shapes,
    format_misfits,
    misfits,
    passes,
    signature,
)
from app.localize.channels.dataflow import INITIALIZERS, definitions, earlier_conditions, guards
from app.localize.channels.lexical import code_tokens

CONDITIONAL = frozenset(
    {StmtKind.IF, StmtKind.ELIF, StmtKind.ELSE, StmtKind.EXCEPT, StmtKind.FOR, StmtKind.WHILE}
)

CLEANUP_PREFIXES = ("teardown", "cleanup", "clean_up", "finalize", "destroy")
FIRST_SET = 0.75  # the start of an initializer, for an attribute only ever set under a condition
CHAIN = 0.9  # earlier conditions of an if/elif chain one branch of which sets a missing attribute
LOCAL = 0.8  # a statement of the failing function, at or before the failing line
ELSEWHERE = 0.4
RAISER = 0.9  # a construct that raises the reported error, on the way to the failure
FAR = 0.6  # the same elsewhere in the trace
KEY_MENTION = 0.8  # the missing key written elsewhere than in a subscript (a dict built, a .get)
OTHER_CALL = 0.5  # a call of the callee the message names, when others are singled out as not fitting
FOREIGN = 0.3  # a binding local to another function than the one a NameError came from
IMPORT_MISSING = 0.6  # an import, when a NameError's name is bound nowhere in the scripts
INITIALIZE = 0.9  # a kindred name's starting value, for a name bound on some paths only
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
# where text is decoded or encoded: explicitly, by a file opened in text mode, a subprocess's text
# output, or the locale a command runs under
_CODEC = re.compile(
    r"\.(?:de|en)code\(|\bopen\(|universal_newlines|\btext\s*=\s*True|\bencoding\s*=|\bcodecs\.|\bLC_ALL\b|\bLANG\b"
)
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
        _has("UnicodeDecodeError", "UnicodeEncodeError", "codec can't decode", "codec can't encode"),
        _CODEC,
        "decodes or encodes text, or sets the locale",
    ),
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


def exception_scores(ctx: Context, site: int | None, *, framed: bool = False) -> Scores:
    """The exception channel; ``framed``: ``site`` is the innermost traceback frame in the scripts
    (not a site inferred without one), so the statement that raised is known."""
    scores: Scores = {}
    text = ctx.message[:4000]
    if not text.strip():
        return scores
    headline = text.strip().splitlines()[0][:200]
    error = python_error(text)
    _names(ctx, error, headline, scores)
    if not (framed and error.none and error.attribute):
        # a None value's attribute read at the framed line: that line only revealed the fault, made
        # where the value was bound or let through (``_none_guard``)
        _raisers(ctx, error, site, headline, scores)
    if error.key is not None:
        key = error.key
        reads = _key_read(key)
        for sid, body in ctx.facts.text.items():
            if (f"'{key}'" in body or f'"{key}"' in body) and ctx.is_kept(sid):
                if reads.search(body):
                    put(scores, sid, Signal(1.0, f"reads the key {key!r} the error names", headline))
                else:
                    put(scores, sid, Signal(KEY_MENTION, f"uses the key {key!r} the error names", headline))
    if site is not None and error.attribute and error.owner != "module" and not error.none:
        _cleanup_reads(ctx, site, error.attribute, headline, scores)
    if site is not None and error.none:
        _none_guard(ctx, site, headline, scores)
    # the kinds of statement this kind of error comes from
    local = ctx.statements[site].function if site is not None else None
    before = ctx.statements[site].start_line if site is not None else 0
    for applies, code, what in RULES:
        if not applies(text):
            continue
        for sid, body in ctx.facts.text.items():
            if sid in ctx.kept_sids and code.search(body):
                stmt = ctx.statements[sid]
                near = stmt.function == local and stmt.start_line <= before  # ran on the way to the failure
                value = LOCAL if near else ELSEWHERE
                put(scores, sid, Signal(value, f"{what}, what this kind of error comes from", headline))
    return scores


def _key_read(key: str) -> re.Pattern[str]:
    """A subscript reading the key: ``d['k']`` raises KeyError, ``d.get('k')`` and ``'k' in d`` do not."""
    return re.compile(rf"\[\s*[rRbBuU]?(['\"]){re.escape(key)}\1\s*\]")


# Constructs that raise a kind of error, searched in a statement's code (facts.text).
_RAISE = "raise"
_SUBSCRIPT = re.compile(r"[\w)\]]\[\s*-?(?:\d+|[A-Za-z_][\w.]*)\s*\]|\.pop\(")
_FORMAT_CALL = re.compile(r"\.format\(")
_PERCENT = re.compile(r"[\"']\s*%\s*[\w(\[{]")
_TARGET = r"\s*\*?[\w.]+(?:\[[^\],]*\])?\s*"
_UNPACKING = re.compile(
    rf"^\s*(?:for\s+)?[(\[]?(?P<targets>{_TARGET}(?:,{_TARGET})+,?|{_TARGET},)\s*[)\]]?\s*(?:=(?!=)|\bin\b)"
)
_RESULT_INDEXED = re.compile(r"\)\s*\[")
_ITERATES = re.compile(r"\bfor\b.+\bin\b|[\w)\]'\"]\s+(?:not\s+)?in\s+[\w(]")
_RESULT_ITERATED = re.compile(r"\bin\s+[\w.]+\([^()]*\)\s*(?::|$|\))", re.MULTILINE)
_MEMBERSHIP = re.compile(r"\.(?:remove|index)\(")
_DIVISION = re.compile(r"[\w)\]]\s*(?://?|%)=?\s*[\w(]")


def _raisers(ctx: Context, error: PythonError, site: int | None, headline: str, scores: Scores) -> None:
    """The statements that can raise the reported error: an explicit ``raise`` of its class, and the
    constructs Python raises it from (a subscript for IndexError, an unpacking of the count the
    message expected, the conversion it names, a formatting, a division, a read of the missing
    attribute of a None value, a use of the undefined name, the file name it could not open).
    Only statements of the trace; those on the failing function's way to the failure count more."""
    facts, cls = ctx.facts, error.exception
    local = ctx.statements[site].function if site is not None else None
    before = ctx.statements[site].start_line if site is not None else 0
    builtin = cls is not None and isinstance(getattr(builtins, cls, None), type)
    raise_cls = re.compile(rf"\braise\s+(?:[\w.]+\.)?{re.escape(cls)}\b") if cls else None
    attribute = f"attr:{error.attribute}" if error.none and error.attribute else None
    undefined = error.name if error.kind == "undefined-name" and error.name else None
    unscoped = _unscoped_uses(ctx, undefined) if undefined is not None else {}
    path_words = _path_words(error.path) if error.path else ()
    operator = _operator_use(error.operator) if error.operator else None
    view = _VIEW_INDEXED.get(error.value_type or "")
    kept = ctx.kept_sids
    said = _said(ctx.message[:4000], cls)
    for sid, body in facts.text.items():
        if sid not in kept:
            continue
        stmt = ctx.statements[sid]
        near = site is None or (stmt.function == local and stmt.start_line <= before)
        found: list[tuple[float, str]] = []
        if (
            raise_cls is not None
            and sid != site
            and stmt.kind == StmtKind.RAISE
            and raise_cls.search(body)
            and (said is None or _message_fits(body, said) is not False)
        ):
            # a built-in error is far more often the interpreter's than a raise of the scripts
            found.append((FAR * RAISER if builtin else 1.0, f"raises {cls}, the error the log reports"))
        if error.index and _SUBSCRIPT.search(body):
            found.append((RAISER, "indexes a sequence: IndexError comes from here"))
        if error.directive is not None and any(
            _ends_directive(lit, error.directive) for lit in _strings(body)
        ):
            found.append((1.0, f"holds a %-directive ended by {error.directive!r}, which the error rejects"))
        elif (error.index or error.formatting or error.key) and (
            _FORMAT_CALL.search(body) or _PERCENT.search(body)
        ):
            misfit = _format_misfit(body, error)
            if misfit is not None:
                found.append((1.0, misfit))
            elif error.index or error.formatting:
                found.append((RAISER, "formats a string: its placeholders and arguments must agree"))
        if error.unpack is not None and (shape := _UNPACKING.search(body)):
            targets = sum(1 for t in shape.group("targets").split(",") if t.strip())
            exact = error.unpack > 0 and targets == error.unpack
            detail = f"unpacks into {targets} targets: the unpacking that failed"
            found.append((1.0 if exact else RAISER, detail))
        if operator is not None and operator.search(_STRING.sub("''", body)):
            found.append((RAISER, f"applies `{error.operator}` to values the error says do not support it"))
        if error.conversion and re.search(rf"\b{error.conversion}\(", body):
            found.append((RAISER, f"converts text with {error.conversion}(), which the error says failed"))
        if cls == "ValueError" and "not in list" in ctx.message[:4000] and _MEMBERSHIP.search(body):
            found.append((RAISER, "removes or looks up an item a list may not hold"))
        if cls == "ZeroDivisionError" and _DIVISION.search(body):
            found.append((RAISER, "divides: ZeroDivisionError comes from here"))
        if error.resized and stmt.kind == StmtKind.FOR and (loop := _LOOP_OVER.search(body)):
            changed = _changes_in_loop(ctx, stmt, loop.group("obj"))
            detail = f"loops over `{loop.group('obj')}` directly"
            detail += ", and changes it in the loop" if changed else ""
            found.append((1.0 if changed else RAISER, f"{detail}: the error says it changed size meanwhile"))
        if attribute is not None and (
            attribute in facts.uses.get(sid, ())
            or any(c.callee == error.attribute and c.via_attribute for c in facts.calls.get(sid, ()))
        ):
            returned = re.search(rf"\)\s*\.{re.escape(error.attribute or '')}\b", body) is not None
            detail = f"reads `{error.attribute}` of a value that was None"
            found.append((1.0, detail + ", a call's result") if returned else (RAISER, detail))
        if error.none and error.not_indexable and _SUBSCRIPT.search(body):
            returned = _RESULT_INDEXED.search(body) is not None
            detail = "indexes a value that can be None" + (", a call's result" if returned else "")
            found.append((1.0 if returned else RAISER, detail))
        if error.none and error.iterated and (_ITERATES.search(body)):
            returned = _RESULT_ITERATED.search(body) is not None
            detail = "iterates over a value that can be None" + (", a call's result" if returned else "")
            found.append((1.0 if returned else RAISER, detail))
        if view is not None and view.search(body):
            found.append((1.0, f"indexes a {error.value_type}, which cannot be indexed"))
        if sid in unscoped:
            found.append(unscoped[sid])
        if path_words and any(w in lit for lit in _strings(body) for w in path_words):
            found.append((1.0, "names the file the error says is missing"))
        for value, detail in found:  # what the message names is where it is; a kind of construct, nearer
            put(scores, sid, Signal(value if near or value == 1.0 else value * FAR, detail, headline))


# a loop straight over a container or its view (``for k in d:``, ``for k, v in d.items():``): what
# "changed size during iteration" stops; ``list(d)`` and ``sorted(d)`` are copies and never raise it
_LOOP_OVER = re.compile(
    r"^\s*(?:async\s+)?for\b.+?\bin\s+(?P<obj>[A-Za-z_][\w.]*?)"
    r"(?:\.(?:keys|values|items|iterkeys|itervalues|iteritems)\(\))?\s*:"
)
_CHANGES = (
    r"(?:\[[^\]]*\]\s*(?:[-+*/|&]?=(?!=))"
    r"|\.(?:pop|popitem|update|setdefault|add|discard|remove|clear)\()"
)


def _changes_in_loop(ctx: Context, loop: Statement, obj: str) -> bool:
    """Whether a statement in ``loop``'s body adds to, removes from or clears ``obj``."""
    changes = re.compile(rf"(?:\bdel\s+{re.escape(obj)}\[|(?<![\w.]){re.escape(obj)}{_CHANGES})")
    pending = list(loop.body)
    while pending:
        sid = pending.pop()
        if changes.search(ctx.facts.text.get(sid, "")):
            return True
        pending.extend(ctx.statements[sid].body)
    return False


def _ends_directive(literal: str, char: str) -> bool:
    """Whether a %-directive of ``literal`` ends with ``char`` (``%(status) w``: flag ' ', then 'w')."""
    return re.search(DIRECTIVE_HEAD + re.escape(char), literal.replace("%%", "")) is not None


# values that cannot be indexed, by the type name a message gives, and how code makes and indexes them
_VIEW_INDEXED = {
    "dict_keys": re.compile(r"\.keys\(\)\s*\["),
    "dict_values": re.compile(r"\.values\(\)\s*\["),
    "dict_items": re.compile(r"\.items\(\)\s*\["),
    "filter": re.compile(r"\bfilter\(.*\)\s*\["),
    "map": re.compile(r"\bmap\(.*\)\s*\["),
    "zip": re.compile(r"\bzip\(.*\)\s*\["),
    "generator": re.compile(r"\bfor\b.*\)\s*\["),
}


def _operator_use(operator: str) -> re.Pattern[str]:
    """A binary use of the operator (its augmented form too); orderings also come from sorting."""
    use = rf"[\w)\]'\"}}]\s*{re.escape(operator)}=?\s*[\w(\['\"{{-]"
    if operator in ("<", ">", "<=", ">="):
        use += r"|\bsorted\(|\.sort\(|\bmax\(|\bmin\("
    return re.compile(use)


def _unscoped_uses(ctx: Context, name: str) -> dict[int, tuple[float, str]]:
    """The statements using ``name`` where it is not defined: not in their function (nor an enclosing
    one, as a parameter or a binding), not at their file's module level. Where it is defined
    elsewhere, such a use is the wrong one; where it is defined nowhere, every use is."""
    facts = ctx.facts
    defining = {ctx.statements[sid].function for sid, names in facts.defs.items() if name in names}
    defining |= {fid for fid, params in facts.params.items() if name in params}
    global_in = {f.path for f in ctx.modules if f.fid in defining}
    found: dict[int, tuple[float, str]] = {}
    for sid, names in facts.uses.items():
        stmt = ctx.statements[sid]
        if name not in names or stmt.path in global_in:
            continue
        function: Function | None = ctx.functions.get(stmt.function)
        while function is not None and function.fid not in defining:
            function = ctx.functions.get(function.parent) if function.parent else None
        if function is not None:
            continue
        if defining:
            found[sid] = (1.0, f"uses `{name}`, which its function never defines")
        else:
            found[sid] = (RAISER, f"uses `{name}`, which nothing in the scripts defines")
    return found


def _path_words(path: str) -> tuple[str, ...]:
    """The distinctive parts of a path: its file name, its stem, and its longer folder names."""
    parts = [p for p in re.split(r"[\\/]", path) if p]
    words = {parts[-1]} if parts else set()
    if parts and "." in parts[-1].strip("."):
        words.add(parts[-1].rsplit(".", 1)[0])
    words.update(p for p in parts[:-1] if len(p) >= 6)
    return tuple(sorted(w for w in words if len(w) >= 4))


_STRING = re.compile(r"[rRbBuUfF]{0,2}(['\"])(.*?)(?<!\\)\1")


# the fixed text between an f-string's holes, %-directives and format fields
_HOLES = re.compile(r"\{[^{}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdrfigxXeEoc%]")
_WRAP = re.compile(r"\\?\s+")


def _folded(text: str) -> str:
    """``text`` with its whitespace runs (and a wrapping backslash before them) made one space."""
    return _WRAP.sub(" ", text).casefold()


def _format_misfit(body: str, error: PythonError) -> str | None:
    """Why a formatting of this statement raised the error: a template that indexes past its
    positional arguments or takes other than the values given (IndexError, TypeError), or that
    names the missing key as a field no argument fills (KeyError)."""
    for misfit in format_misfits(body):
        if error.key is not None and error.key in misfit.names:
            return f"formats a template whose field {{{error.key}}} no argument fills"
        if (
            (error.index or error.formatting)
            and error.key is None
            and (misfit.positional or not misfit.names)
        ):
            return "formats a template with other than the arguments its fields take"
    return None


def _said(message: str, cls: str | None) -> str | None:
    """What the error says after its class name, folded; None where that is too short to judge."""
    folded = _folded(message)
    at = folded.find(cls.casefold()) if cls else -1
    if at < 0:
        return None
    tail = folded[at + len(cls or "") :]
    return tail if sum(ch.isalpha() for ch in tail) >= 12 else None


def _message_fits(body: str, said: str) -> bool | None:
    """Can this ``raise`` have printed the message ``said`` (folded)? False when its literal text
    has words the message lacks in every fixed piece; None when it holds no such text."""
    folded = (_folded(piece).strip() for literal in _strings(body) for piece in _HOLES.split(literal))
    pieces = [piece for piece in folded if sum(ch.isalpha() for ch in piece) >= 4]
    if not pieces:
        return None
    return any(piece in said for piece in pieces)


def _strings(body: str) -> list[str]:
    """The string literals' texts of a statement (an f-string's holes kept as written)."""
    return [m.group(2) for m in _STRING.finditer(body)]


def _none_guard(ctx: Context, site: int, headline: str, scores: Scores) -> None:
    """A value was None at the failing line: the condition that let it through, and where it was bound."""
    for guard, value in guards(ctx, site)[:2]:
        put(
            scores,
            guard,
            Signal(value, "lets the failing line run without testing the value for None", headline),
        )
    use = ctx.statements[site]
    for name in sorted(ctx.facts.uses.get(site, ())):  # sorted: the same evidence whatever the hash seed
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
        _missing_attribute(ctx, error.attribute, headline, scores, error.owner_name)
    if error.kind in ("undefined-name", "unbound-local") and error.name:
        name = error.name
        unbound = _unbound_in(ctx, name) if error.kind == "unbound-local" else None
        if unbound:
            _unbound_local(ctx, name, unbound, headline, scores)
        else:
            _definitions(ctx, name, error.kind == "undefined-name", headline, scores)
    if error.kind == "arguments" and error.callee:
        _arguments(ctx, error, headline, scores)


def _definitions(ctx: Context, name: str, global_name: bool, headline: str, scores: Scores) -> None:
    """The bindings of a name that did not reach its use, the conditions they sit under, and the
    imports. ``global_name`` (NameError): a binding local to a function reaches no other function
    (an enclosing one's reaches its nested ones), so those count little; where nothing binds the
    name, the missing import is likelier."""
    facts = ctx.facts
    enclosing = _enclosing_uses(ctx, name) if global_name else set()
    bound = False
    for sid, names in facts.defs.items():
        if name not in names:
            continue
        bound = True
        stmt = ctx.statements[sid]
        function = ctx.functions.get(stmt.function)
        local = function is not None and function.kind != "module"
        if global_name and local and stmt.function not in enclosing:
            detail = f"binds `{name}` only inside the function {stmt.function}"
            put(scores, sid, Signal(FOREIGN, detail, headline))
            continue
        mutation = name in facts.uses.get(sid, ())  # ``x.append(...)``, ``x += 1``: x was bound before
        put(
            scores,
            sid,
            Signal(0.5 if mutation else 0.9, f"defines `{name}`, which did not reach its use", headline),
        )
        guard = stmt.parent
        if not mutation and guard is not None and ctx.statements[guard].kind in CONDITIONAL:
            put(scores, guard, Signal(0.9, f"defines `{name}` only under this condition", headline))
    # bound nowhere in the scripts: likelier a missing import than a misspelt local variable
    value = IMPORT_MISSING if global_name and not bound else 0.3
    for sid, names in facts.imports.items():
        if names:
            put(scores, sid, Signal(value, f"an import: `{name}` may be missing here", headline))


def _enclosing_uses(ctx: Context, name: str) -> set[str]:
    """The functions that enclose a use of ``name`` no scope binds (its own function and the ones
    it is nested in): the bindings that could have reached it."""
    found: set[str] = set()
    for sid in _unscoped_uses(ctx, name):
        fid: str | None = ctx.statements[sid].function
        while fid is not None and fid not in found:
            found.add(fid)
            function = ctx.functions.get(fid)
            fid = function.parent if function is not None else None
    return found


def _unbound_in(ctx: Context, name: str) -> dict[str, list[int]]:
    """The functions that can raise UnboundLocalError for ``name``, with their bindings of it: they
    bind it (which makes it local to them) and use it, and no binding at their body's level comes
    before the first use (where one does, every path binds it first)."""
    facts = ctx.facts
    bindings: dict[str, list[int]] = {}
    for sid, names in facts.defs.items():
        if name in names:
            bindings.setdefault(ctx.statements[sid].function, []).append(sid)
    found: dict[str, list[int]] = {}
    for fid, sids in bindings.items():
        function = ctx.functions.get(fid)
        if function is None or function.kind == "module":
            continue
        uses = [
            ctx.statements[s].start_line
            for s in function.statements
            if name in facts.uses.get(s, ()) and s not in sids
        ]
        if not uses:
            continue
        first = min(uses)
        if any(ctx.statements[s].parent is None and ctx.statements[s].start_line < first for s in sids):
            continue
        found[fid] = sorted(sids)
    return found


# a binding of a plain starting value (``x = []``, ``x = None``, ``x = 0``): a function's initializations
_INITIAL = re.compile(
    r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*(?:\[\]|\{\}|\(\)|None|False|True|0|''|\"\"|(?:set|dict|list)\(\))\s*(?:#.*)?$"
)


def _unbound_local(
    ctx: Context, name: str, functions: dict[str, list[int]], headline: str, scores: Scores
) -> None:
    """UnboundLocalError: in each function that can raise it, the bindings (on some paths only),
    the clauses they sit in, nearest first (a use after one finds the name unbound when it did not
    bind), and where the function binds the starting values of kindred names (``aws_vms = []``
    for ``azure_vms``): the fix binds this one there, on every path."""
    for fid, sids in functions.items():
        function = ctx.functions[fid]
        outer: set[int] = set()
        for sid in sids:
            put(scores, sid, Signal(0.9, f"binds `{name}` on some paths to its use only", headline))
            parent, value = ctx.statements[sid].parent, 0.9
            while parent is not None:  # the clauses it sits in, out to the body's level, nearest first
                detail = f"binds `{name}` only inside this statement: a use after it can find it unbound"
                put(scores, parent, Signal(value, detail, headline))
                outer.add(parent)
                parent, value = ctx.statements[parent].parent, max(value - 0.1, 0.5)
        first = min(outer | set(sids), key=lambda s: ctx.statements[s].start_line)
        line, words = ctx.statements[first].start_line, set(code_tokens(name))
        for sid in function.top_level:
            bound = _INITIAL.match(ctx.facts.text.get(sid, ""))
            if ctx.statements[sid].start_line < line and bound and words & set(code_tokens(bound.group(1))):
                detail = (
                    f"starts `{bound.group(1)}`, kin to `{name}`: bound here too, it would be on every path"
                )
                put(scores, sid, Signal(INITIALIZE, detail, headline))


def _arguments(ctx: Context, error: PythonError, headline: str, scores: Scores) -> None:
    """A call did not fit its callee's signature: the calls that cannot fit (checked against the
    scripts' own ``def``, or passing the count or keyword the message names) before the others,
    and the callee's definition."""
    callee, called = error.callee or "", error.called or error.callee or ""
    signatures: list[Signature] = []
    for fid in ctx.by_name.get(callee, ()):
        function = ctx.functions[fid]
        owner = function.qualname.rsplit(".", 1)[0] if "." in function.qualname else None
        if error.qualifier and owner and owner.rsplit(".", 1)[-1] != error.qualifier.rsplit(".", 1)[-1]:
            continue  # 3.10+ names the class: another class's method of that name is not it
        sig = signature(function, _file_lines(ctx, function.path))
        if sig is not None:
            signatures.append(sig)
        if function.statements:
            put(
                scores,
                function.statements[0],
                Signal(0.6, f"in {callee}(), whose signature the call does not fit", headline),
            )
    constructor = callee == "__init__"
    sites = ctx.facts.call_sites.get(called, ())
    singled: dict[int, str] = {}
    shapes = {sid: call_shapes(ctx.facts.text.get(sid, ""), called) for sid in sites}
    for sid, calls in shapes.items():
        for call in calls:
            reason = _misfit(error, call, signatures, constructor=constructor)
            if reason is not None:
                singled.setdefault(sid, reason)
    if not singled and not signatures and error.arity == "too-few":
        # no def to check against: the calls passing the fewest arguments, and not the missing ones
        counts = [c.positional for calls in shapes.values() for c in calls if not c.star]
        fewest = min(counts, default=0)
        for sid, calls in shapes.items():
            if fewest < max(counts, default=0) and any(
                not c.star and c.positional == fewest and not set(error.missing) & set(c.keywords)
                for c in calls
            ):
                singled[sid] = "with fewer arguments than its other calls pass"
    for sid in sites:
        if sid in singled:
            put(scores, sid, Signal(1.0, f"calls {called}() {singled[sid]}", headline))
        else:
            value = OTHER_CALL if singled else 1.0
            put(scores, sid, Signal(value, f"calls {called}() with arguments it may not accept", headline))


def _file_lines(ctx: Context, path: str) -> tuple[str, ...]:
    return next((f.lines for f in ctx.analysis.program.files if f.path == path), ())


def _misfit(
    error: PythonError, call: CallShape, signatures: list[Signature], *, constructor: bool
) -> str | None:
    """Why this call is the one the message reports, or None when nothing says it is."""
    for sig in signatures:
        wrong = misfits(sig, call, constructor=constructor)
        if error.arity == "keyword" and f"keyword:{error.keyword}" in wrong:
            return f"with the keyword `{error.keyword}`, which its signature does not take"
        if error.arity in ("too-many", "too-few") and error.arity in wrong:
            many = "more" if error.arity == "too-many" else "fewer"
            return f"with {many} positional arguments than its signature takes"
    if error.arity == "keyword" and error.keyword in call.keywords:
        return f"with the keyword `{error.keyword}` the error names"
    method = True if error.qualifier else any(s.method for s in signatures) if signatures else None
    if error.given is not None and passes(call, error.given, method=method, constructor=constructor):
        return f"with the {error.given} arguments the error says were given"
    return None


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
    inherited = ctx.ancestors({owner.rsplit(".", 1)[-1]}) - {owner.rsplit(".", 1)[-1]}
    _initializer_starts(
        ctx,
        lambda holder: holder == owner or holder.rsplit(".", 1)[-1] in inherited,
        1.0,
        f"`{name}` set here would exist for the cleanup that read it",
        headline,
        scores,
    )


def _docstring(ctx: Context, sid: int) -> bool:
    text = ctx.facts.text.get(sid, "").lstrip()
    return text[:1] in ("'", '"') or text[:2].lower() in ('r"', "r'")


def chain_conditions(ctx: Context, clause: Statement) -> list[int]:
    return earlier_conditions(ctx, clause) if clause.kind in (StmtKind.ELIF, StmtKind.ELSE) else []


def _missing_attribute(
    ctx: Context, name: str, headline: str, scores: Scores, owner: str | None = None
) -> None:
    """An object lacks ``name``: set only under a condition (the condition and the setter, and the
    start of the object's class initializer, where setting it first would make it always exist), or
    set nowhere (its reads are the fault: a wrong name)."""
    facts = ctx.facts
    setters = [sid for sid, names in facts.defs.items() if f"attr:{name}" in names]
    guarded = [sid for sid in setters if _under_condition(ctx, sid)]
    if owner and guarded and len(guarded) == len(setters):
        classes = ctx.ancestors({owner.rsplit(".", 1)[-1]})
        _initializer_starts(
            ctx,
            lambda holder: holder.rsplit(".", 1)[-1] in classes,
            FIRST_SET,
            f"`{name}` set here first would always exist",
            headline,
            scores,
        )
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


def _under_condition(ctx: Context, sid: int) -> bool:
    """The statement runs only under a condition, a loop or a handler within its function."""
    current = ctx.statements[sid].parent
    while current is not None:
        if ctx.statements[current].kind in CONDITIONAL:
            return True
        current = ctx.statements[current].parent
    return False


def _initializer_starts(
    ctx: Context,
    holds: Callable[[str], bool],
    strength: float,
    detail: str,
    headline: str,
    scores: Scores,
) -> None:
    """The first statements (docstrings aside) of each initializer whose class (its qualified
    name) ``holds`` accepts: where an attribute set first would always exist."""
    for initializer in ctx.functions.values():
        if initializer.name not in INITIALIZERS or "." not in initializer.qualname:
            continue
        if not holds(initializer.qualname.rsplit(".", 1)[0]):
            continue
        body = [s for s in initializer.top_level or initializer.statements if not _docstring(ctx, s)]
        for rank, sid in enumerate(body[:3]):
            value = strength * 0.9**rank
            put(scores, sid, Signal(value, f"start of {initializer.name}: {detail}", headline))


def smell_scores(ctx: Context) -> Scores:
    scores: Scores = {}
    for sid, smells in ctx.facts.smells.items():
        if smells and ctx.is_kept(sid):
            put(scores, sid, Signal(1.0, smells[0]))
    return scores
