"""Data dependence on the failing statement, and deliberate checks with what they check.

Def-use walk (tree-sitter facts): names read at a statement -> the statements that assign
them, transitively, across calls (arguments -> parameters, return values -> call results),
attributes by name (``self.x``), bounded by ``MAX_HOPS`` and a visit budget. A statement that
assigns a name only under a condition makes the condition suspicious too.

A deliberate check is a failure the script raises itself (``assert``, ``self.assertX``,
``self.fail/error/cancel/skip``, ``pytest.fail``, ``raise TestFail(...)``). The fault is most
often in the condition that guards it or in the code that produced the checked values, so the
check channel credits those, and the raise itself counts less.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable

from app.analysis.model import Statement, StmtKind
from app.localize.channels import Context, Scores, Signal, put

DECAY = 0.6  # per def-use hop
MAX_HOPS = 4
MAX_VISITS = 5000  # def-use edges followed per walk: bounded whatever the script
IMPORT_FACTOR = 0.15  # a name bound by an import: rarely the fault, often just a module receiver
GUARD_DECAY = 0.8  # each enclosing condition further out
HANDLED = 0.8  # a call of the try body whose exception the failing handler reports
INITIALIZER_DECAY = 0.85  # successive statements of an initializer, for a missing attribute
INITIALIZERS = frozenset(
    {"__init__", "setUp", "setup", "setup_method", "setUpClass", "setup_class", "asyncSetUp"}
)
CHECK_CALLS = frozenset({"fail", "cancel", "skip", "skipTest", "fail_json", "xfail"})
SELF_CHECK_CALLS = frozenset({"error"})  # only as ``self.error``/``test.error``: else it is a log call
CHECK_PREFIXES = ("assert", "check_", "verify_", "validate_", "ensure_", "expect_")
CHECK_RECEIVERS = frozenset({"self", "test", "pytest", "cls"})
IN_PLACE = 0.5  # definitions of values an assert checks: the assert itself is as likely
CRASH = re.compile(
    r"\b(?:AttributeError|TypeError|NameError|UnboundLocalError|KeyError|IndexError|ZeroDivisionError"
    r"|ImportError|ModuleNotFoundError|RecursionError|OverflowError|UnicodeDecodeError|UnicodeEncodeError)\b"
)
CONDITIONS = (StmtKind.IF, StmtKind.ELIF, StmtKind.WHILE)

_YIELD = re.compile(r"^\s*(?:\w+\s*=\s*)?yield\b")
Credit = Callable[[int, int, str, float], None]  # (sid, hops, detail, factor)


def crashed(ctx: Context, sid: int) -> bool:
    """The error is a Python runtime error the statement did not raise itself (it crashed evaluating)."""
    found = CRASH.search(ctx.message[:2000])
    return found is not None and found.group(0) not in ctx.facts.text.get(sid, "")


def is_check(ctx: Context, sid: int) -> bool:
    """The statement is a failure the script raises deliberately (not a crash inside a call)."""
    stmt = ctx.statements[sid]
    if crashed(ctx, sid):
        return False
    if stmt.kind == StmtKind.ASSERT:
        return True
    if stmt.kind == StmtKind.RAISE:
        return re.fullmatch(r"\s*raise\s*", ctx.facts.text.get(sid, "")) is None  # not a bare re-raise
    for call in ctx.facts.calls.get(sid, ()):
        if call.callee in CHECK_CALLS or _checking(call.callee):
            return True
        if call.callee in SELF_CHECK_CALLS and call.receiver in CHECK_RECEIVERS:
            return True
    return False


def checks_in_place(ctx: Context, sid: int) -> bool:
    """The check's condition is the statement itself (``assert x``, ``assertEqual(a, b)``)."""
    if ctx.statements[sid].kind == StmtKind.ASSERT:
        return True
    return any(_checking(call.callee) for call in ctx.facts.calls.get(sid, ()))


def _checking(callee: str) -> bool:
    """A function whose job is to fail the test when its arguments are wrong (assertX, check_status...)."""
    return callee.startswith(CHECK_PREFIXES) or callee.endswith("_assert")


def guards(ctx: Context, sid: int) -> list[tuple[int, float]]:
    """The conditions deciding that ``sid`` runs: enclosing if/elif/while headers, and for an
    ``else`` or ``elif`` branch every earlier condition of its chain (all of them were false)."""
    statements = ctx.statements
    found: list[tuple[int, float]] = []
    value = 1.0
    current = statements[sid].parent
    while current is not None and len(found) < 12:
        header = statements[current]
        if header.kind in CONDITIONS:
            found.append((current, value))
        if header.kind == StmtKind.EXCEPT:  # the handler re-reports what a call in the try body raised
            found.extend((s, value * HANDLED) for s in _tried_calls(ctx, header))
        if header.kind in (StmtKind.ELSE, StmtKind.ELIF):
            found.extend((s, value) for s in earlier_conditions(ctx, header))
        value *= GUARD_DECAY
        current = header.parent
    return found


def _tried_calls(ctx: Context, handler: Statement) -> list[int]:
    """Statements with calls in the body of the ``try`` an ``except`` clause belongs to."""
    siblings = [
        s
        for s in ctx.functions[handler.function].statements
        if ctx.statements[s].parent == handler.parent and ctx.statements[s].start_line < handler.start_line
    ]
    tried = next((s for s in reversed(siblings) if ctx.statements[s].kind == StmtKind.TRY), None)
    if tried is None:
        return []
    return [s for s in ctx.statements[tried].body if ctx.facts.calls.get(s)][-4:]


def earlier_conditions(ctx: Context, clause: Statement) -> list[int]:
    siblings = [
        s
        for s in ctx.functions[clause.function].statements
        if ctx.statements[s].parent == clause.parent and ctx.statements[s].start_line < clause.start_line
    ]
    chain: list[int] = []
    for s in reversed(siblings):
        kind = ctx.statements[s].kind
        if kind in (StmtKind.IF, StmtKind.ELIF):
            chain.append(s)
            if kind == StmtKind.IF:
                break
        elif kind != StmtKind.ELSE or chain:
            break
    return chain


def definitions(ctx: Context, name: str, use: Statement) -> list[int]:
    """Statements that may have assigned ``name`` before ``use`` read it."""
    facts = ctx.facts
    if name.startswith("attr:"):
        return [sid for sid, names in facts.defs.items() if name in names and sid != use.sid]
    function = ctx.functions[use.function]
    local = [sid for sid in function.statements if name in facts.defs.get(sid, ()) and sid != use.sid]
    if local:
        before = [sid for sid in local if ctx.statements[sid].start_line < use.start_line]
        return before or local
    if name in facts.params.get(use.function, ()):
        return []
    enclosing = ctx.functions.get(function.parent) if function.parent else None
    while enclosing is not None:  # a closure reads its enclosing function's names
        found = [sid for sid in enclosing.statements if name in facts.defs.get(sid, ())]
        if found:
            return found
        enclosing = ctx.functions.get(enclosing.parent) if enclosing.parent else None
    modules = sorted(
        (f for f in ctx.functions.values() if f.kind == "module"), key=lambda f: f.path != use.path
    )
    for module in modules:
        found = [sid for sid in module.statements if name in facts.defs.get(sid, ())]
        if found:
            return found
    return []


def walk(ctx: Context, start: int, names: Iterable[str], credit: Credit, quoted: frozenset[str]) -> None:
    """Follow ``names`` read at ``start`` back to their definitions, breadth first."""
    facts, statements = ctx.facts, ctx.statements
    queue: deque[tuple[str, int, int]] = deque((name, start, 0) for name in sorted(names))
    seen: set[tuple[str, int]] = set()
    while queue and len(seen) < MAX_VISITS:
        name, use_sid, hops = queue.popleft()
        if (name, use_sid) in seen or hops >= MAX_HOPS:
            continue
        seen.add((name, use_sid))
        shown = name.removeprefix("attr:")
        use = statements[use_sid]
        where = "the failing line" if use_sid == start else f"line {use.start_line}"
        for def_sid in definitions(ctx, name, use):
            imported = name in facts.imports.get(def_sid, ())
            credit(
                def_sid, hops + 1, f"defines `{shown}` used at {where}", IMPORT_FACTOR if imported else 1.0
            )
            if imported:
                continue
            guard = statements[def_sid].parent
            if guard is not None:
                credit(
                    guard, hops + (1 if shown in quoted else 2), f"guards the assignment of `{shown}`", 1.0
                )
            for used in facts.uses.get(def_sid, ()):
                queue.append((used, def_sid, hops + 1))
            for call in facts.calls.get(def_sid, ()):
                for fid in ctx.by_name.get(call.callee, ()):
                    for ret in ctx.functions[fid].statements:
                        if statements[ret].kind == StmtKind.RETURN:
                            credit(ret, hops + 1, f"returns the value of `{shown}`", 1.0)
                            for used in facts.uses.get(ret, ()):
                                queue.append((used, ret, hops + 1))
        params = facts.params.get(use.function, ())
        if not name.startswith("attr:") and name in params:
            for fid in ctx.by_name.get(name, ()):  # a pytest fixture: the parameter is what it returns
                for out in _results(ctx, fid):
                    credit(out, hops + 1, f"fixture {name}() produces `{name}`", 1.0)
                    for used in facts.uses.get(out, ()):
                        queue.append((used, out, hops + 1))
            function = ctx.functions[use.function]
            index = params.index(name)
            for site in facts.call_sites.get(function.name, ()):
                for call in facts.calls.get(site, ()):
                    if call.callee != function.name:
                        continue
                    bound = 1 if call.via_attribute and params[:1] in (("self",), ("cls",)) else 0
                    position = index - bound
                    passed = dict(call.keywords).get(name)
                    if passed is None and 0 <= position < len(call.args):
                        passed = call.args[position]
                    credit(site, hops + 1, f"passes `{name}` to {function.name}()", 1.0)
                    for used in passed or ():
                        queue.append((used, site, hops + 1))


def _results(ctx: Context, fid: str) -> list[int]:
    """The statements a function hands its value out with: returns and yields."""
    return [
        sid
        for sid in ctx.functions[fid].statements
        if ctx.statements[sid].kind == StmtKind.RETURN or _YIELD.search(ctx.facts.text.get(sid, ""))
    ][:8]


def _collector(scores: Scores) -> Credit:
    def credit(sid: int, hops: int, detail: str, factor: float) -> None:
        put(scores, sid, Signal(DECAY**hops * factor, detail))

    return credit


def quoted_names(message: str) -> frozenset[str]:
    return frozenset(re.findall(r"['\"`]([A-Za-z_]\w*)['\"`]", message[:5000]))


def data_scores(ctx: Context, error: int | None) -> Scores:
    """Def-use walk from the failing statement; a statement's score is DECAY ** (fewest hops)."""
    scores: Scores = {}
    if error is None:
        return scores
    credit = _collector(scores)
    parent = ctx.statements[error].parent
    if parent is not None:
        credit(parent, 1, "guards the failing line", 1.0)
    walk(ctx, error, ctx.facts.uses.get(error, ()), credit, quoted_names(ctx.message))
    _missing_attributes(ctx, error, credit)
    return scores


def check_scores(ctx: Context, site: int | None) -> Scores:
    """A deliberate check failed: its guarding conditions, then the definitions of the checked values."""
    scores: Scores = {}
    if site is None or not is_check(ctx, site):
        return scores
    quoted = quoted_names(ctx.message)
    if checks_in_place(ctx, site):

        def weaker(sid: int, hops: int, detail: str, factor: float) -> None:
            put(scores, sid, Signal(IN_PLACE * DECAY**hops * factor, f"{detail} (checked by the assert)"))

        walk(ctx, site, ctx.facts.uses.get(site, ()), weaker, quoted)
    scale = IN_PLACE if checks_in_place(ctx, site) else 1.0  # an assert's own condition is the check
    for guard, value in ((g, v * scale) for g, v in guards(ctx, site)):
        if ctx.statements[guard].kind in CONDITIONS:
            detail = "condition deciding the failing check"
        else:
            detail = "a call of the try body whose error the failing check reports"
        put(scores, guard, Signal(value, detail))

        def scaled(sid: int, hops: int, detail: str, factor: float, value: float = value) -> None:
            put(scores, sid, Signal(value * DECAY**hops * factor, f"{detail} (checked by the condition)"))

        walk(ctx, guard, ctx.facts.uses.get(guard, ()), scaled, quoted)
    return scores


def _missing_attributes(ctx: Context, error: int, credit: Credit) -> None:
    """``has no attribute 'x'``: suspect the initializers of the object's class, where x belongs."""
    found = re.search(r"(?:'(\w+)' object )?has no attribute '([A-Za-z_]\w*)'", ctx.message[:5000])
    if found is None:
        return
    function = ctx.functions[ctx.statements[error].function]
    owners = {found.group(1)} if found.group(1) else set()
    if "." in function.qualname:
        owners.add(function.qualname.rsplit(".", 1)[0].rsplit(".", 1)[-1])
    for initializer in ctx.functions.values():
        if initializer.name not in INITIALIZERS or "." not in initializer.qualname:
            continue
        if initializer.qualname.rsplit(".", 1)[0].rsplit(".", 1)[-1] not in owners:
            continue
        setters = [
            sid
            for sid in initializer.statements
            if any(d.startswith("attr:") for d in ctx.facts.defs.get(sid, ()))
        ]
        for rank, sid in enumerate(setters):
            credit(sid, 1, f"{initializer.name} never sets `{found.group(2)}`", INITIALIZER_DECAY**rank)
