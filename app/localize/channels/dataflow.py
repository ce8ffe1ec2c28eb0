"""Data dependence on the failing statement, and deliberate checks with what they check.

Def-use walk (tree-sitter facts): names read at a statement -> the statements that assign
them, transitively, across calls (arguments -> parameters, return values -> call results),
attributes by name (``self.x``), bounded by ``MAX_HOPS`` and a visit budget. A statement that
assigns a name only under a condition makes the condition suspicious too.

A deliberate check is a failure the script raises itself (``assert``, ``self.assertX``,
``self.fail/error/cancel/skip``, ``pytest.fail``, ``raise TestFail(...)``). The fault is most
often in the condition that guards it or in the code that produced the checked values, so the
check channel credits those, and the raise itself counts less. When the check compares two values,
the definitions of the expected one (``app.localize.channels.expected``: the operand named so, or
the one built from a literal holding the value the log printed for it) count more: a wrong
expected value is the commonest fault of test code.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Callable, Iterable
from typing import cast

from app.analysis.model import Function, Statement, StmtKind
from app.localize.channels import Context, Scores, Signal, put
from app.localize.channels import expected as exp

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
EXPECTED_MATCH = 0.7  # a definition of the expected side that holds the value the log printed for it
EXPECTED_SIDE = 0.4  # a definition of the expected side, with no printed value to confirm it
MATCH_DECAY = 0.9  # per hop, for a matching definition: the value itself says it produced the expected one
# Clause headers the def-use walk credits as guards: they bind nothing, so hold no expected value.
NOT_DEFINITIONS = frozenset(
    {StmtKind.IF, StmtKind.ELIF, StmtKind.ELSE, StmtKind.WHILE, StmtKind.TRY, StmtKind.EXCEPT}
    | {StmtKind.FINALLY, StmtKind.MATCH, StmtKind.CASE}
)

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
    """Statements that may have assigned ``name`` before ``use`` read it; found once per parse
    (``Context.found_definitions``): each failure's walk of the same scripts asks again."""
    memo = ctx.found_definitions
    key = (name, use.sid)
    found = memo.get(key)
    if found is None:
        found = memo[key] = tuple(_definitions(ctx, name, use))
    return list(found)


def _definitions(ctx: Context, name: str, use: Statement) -> list[int]:
    facts = ctx.facts
    if name.startswith("attr:"):
        found = [sid for sid in ctx.definers.get(name, ()) if sid != use.sid]
        return found + class_attributes(ctx, name.removeprefix("attr:"))
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
    modules = sorted(ctx.modules, key=lambda f: f.path != use.path)
    binders = ctx.definers.get(name, ())
    for module in modules:  # a module's statements are ascending sids, as ``binders`` are
        found = [sid for sid in binders if ctx.statements[sid].function == module.fid]
        if found:
            return found
    return []


def class_attributes(ctx: Context, name: str) -> list[int]:
    """Statements of a class body that bind ``name``: ``self.name`` reads them when no instance sets it."""
    found: list[int] = []
    for source in ctx.analysis.program.files:
        if not source.container_headers:
            continue
        module = next((f for f in ctx.modules if f.path == source.path), None)
        if module is None:
            continue
        for sid in ctx.definers.get(name, ()):  # ascending, as the module's statements are
            if ctx.statements[sid].function != module.fid:
                continue
            line = ctx.statements[sid].start_line
            if any(start < line <= end for start, end, _ in source.container_headers):
                found.append(sid)
    return found


def walk(ctx: Context, start: int, names: Iterable[str], credit: Credit, quoted: frozenset[str]) -> None:
    """Follow ``names`` read at ``start`` back to their definitions, breadth first.

    The credits a walk gives depend on the scripts and on which of the names it visits the message
    quotes, so they are kept per parse (``Context.walk_memo``): each failure of the same scripts
    that walks from the same statement replays them instead of walking again."""
    order = tuple(sorted(names))
    memo = ctx.walk_memo
    key = ("walk", start, order)
    known = cast("tuple[frozenset[str], dict[frozenset[str], Steps]] | None", memo.get(key))
    if known is None:
        steps, visited = _walk_steps(ctx, start, order, quoted)
        known = memo[key] = (visited, {quoted & visited: steps})
    visited, by_quoted = known
    relevant = quoted & visited
    steps = by_quoted.get(relevant)
    if steps is None:
        steps = by_quoted[relevant] = _walk_steps(ctx, start, order, quoted)[0]
    for sid, hops, detail, factor in steps:
        credit(sid, hops, detail, factor)


Steps = tuple[tuple[int, int, str, float], ...]  # (sid, hops, detail, factor), in the walk's order


def _walk_steps(
    ctx: Context, start: int, names: tuple[str, ...], quoted: frozenset[str]
) -> tuple[Steps, frozenset[str]]:
    """The credits of ``walk``, in order, less each credit that an earlier one for the same
    statement dominates (as few hops or fewer, a factor as large or larger): no credit function
    lets such a one change a score, as the value falls with hops and rises with the factor. Also
    the names visited, as the message would quote them: those decide a guard's hops."""
    queue: deque[tuple[str, int, int]] = deque((name, start, 0) for name in names)
    seen: set[tuple[str, int]] = set()
    memo = ctx.walk_memo
    steps: list[tuple[int, int, str, float]] = []
    best: dict[int, list[tuple[int, float]]] = {}  # sid -> its undominated (hops, factor) so far
    while queue and len(seen) < MAX_VISITS:
        name, use_sid, hops = queue.popleft()
        if (name, use_sid) in seen or hops >= MAX_HOPS:
            continue
        seen.add((name, use_sid))
        key = ("visit", name, use_sid, use_sid == start, name.removeprefix("attr:") in quoted)
        found = cast("Visit | None", memo.get(key))
        if found is None:
            found = memo[key] = _visit(ctx, name, use_sid, key[3], key[4])
        credits, following = found
        for sid, more, detail, factor in credits:
            total = hops + more
            kept = best.get(sid)
            if kept is None:
                kept = best[sid] = []
            for h, f in kept:  # a plain loop: this runs for every credit of a first walk
                if h <= total and f >= factor:
                    break
            else:
                kept.append((total, factor))
                steps.append((sid, total, detail, factor))
        queue.extend((used, sid, hops + 1) for used, sid in following)
    return tuple(steps), frozenset(name.removeprefix("attr:") for name, _ in seen)


Visit = tuple[tuple[tuple[int, int, str, float], ...], tuple[tuple[str, int], ...]]


def _visit(ctx: Context, name: str, use_sid: int, failing: bool, quoted: bool) -> Visit:
    """One step of ``walk`` from ``name`` read at ``use_sid``, once per parse (``Context.walk_memo``):
    the credits it gives, as (sid, hops added, detail, factor) in order, and the (name, sid) reads
    it queues one hop further. ``failing``: ``use_sid`` is the walk's start; ``quoted``: the error
    message quotes the name (its guard is one hop nearer)."""
    facts, statements = ctx.facts, ctx.statements
    credits: list[tuple[int, int, str, float]] = []
    following: list[tuple[str, int]] = []
    shown = name.removeprefix("attr:")
    use = statements[use_sid]
    where = "the failing line" if failing else f"line {use.start_line}"
    found = definitions(ctx, name, use)
    if found:  # the texts once per visit, not per definition or call site
        defines, guards = f"defines `{shown}` used at {where}", f"guards the assignment of `{shown}`"
        returns = f"returns the value of `{shown}`"
    for def_sid in found:
        imported = name in facts.imports.get(def_sid, ())
        credits.append((def_sid, 1, defines, IMPORT_FACTOR if imported else 1.0))
        if imported:
            continue
        guard = statements[def_sid].parent
        if guard is not None:
            credits.append((guard, 1 if quoted else 2, guards, 1.0))
        following.extend((used, def_sid) for used in _uses(ctx, def_sid))
        for call in facts.calls.get(def_sid, ()):
            for fid in ctx.by_name.get(call.callee, ()):
                for ret in ctx.functions[fid].statements:
                    if statements[ret].kind == StmtKind.RETURN:
                        credits.append((ret, 1, returns, 1.0))
                        following.extend((used, ret) for used in _uses(ctx, ret))
    params = facts.params.get(use.function, ())
    if not name.startswith("attr:") and name in params:
        for fid in ctx.by_name.get(name, ()):  # a pytest fixture: the parameter is what it returns
            for out in _results(ctx, fid):
                credits.append((out, 1, f"fixture {name}() produces `{name}`", 1.0))
                following.extend((used, out) for used in _uses(ctx, out))
        passes = f"passes `{name}` to {ctx.functions[use.function].name}()"
        for site, used_names in _passed(ctx, use.function, name):
            credits.append((site, 1, passes, 1.0))
            following.extend((used, site) for used in used_names)
    return tuple(credits), tuple(following)


def _passed(ctx: Context, fid: str, name: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """Each call of function ``fid`` (by its name), with the names the argument bound to its
    parameter ``name`` reads, sorted: the walk's steps from a parameter to the call sites, found
    once per parse (``Context.walk_memo``)."""
    memo = ctx.walk_memo
    key = ("passed", fid, name)
    found = memo.get(key)
    if found is None:
        facts = ctx.facts
        params = facts.params.get(fid, ())
        function = ctx.functions[fid]
        index = params.index(name)
        out = []
        for site in facts.call_sites.get(function.name, ()):
            for call in facts.calls.get(site, ()):
                if call.callee != function.name:
                    continue
                bound = 1 if call.via_attribute and params[:1] in (("self",), ("cls",)) else 0
                position = index - bound
                passed = dict(call.keywords).get(name)
                if passed is None and 0 <= position < len(call.args):
                    passed = call.args[position]
                out.append((site, tuple(sorted(passed or ()))))
        found = memo[key] = tuple(out)
    return found  # type: ignore[no-any-return]


def _uses(ctx: Context, sid: int) -> tuple[str, ...]:
    """The names ``sid`` reads, sorted (the walk's order), once per parse (``Context.sorted_uses``)."""
    memo = ctx.sorted_uses
    found = memo.get(sid)
    if found is None:
        found = memo[sid] = tuple(sorted(ctx.facts.uses.get(sid, ())))
    return found


def _results(ctx: Context, fid: str) -> list[int]:
    """The statements a function hands its value out with: returns and yields (once per parse)."""
    memo = ctx.walk_memo
    key = ("results", fid)
    found = memo.get(key)
    if found is None:
        found = memo[key] = tuple(_find_results(ctx, fid))
    return list(found)


def _find_results(ctx: Context, fid: str) -> list[int]:
    return [
        sid
        for sid in ctx.functions[fid].statements
        if ctx.statements[sid].kind == StmtKind.RETURN or _YIELD.search(ctx.facts.text.get(sid, ""))
    ][:8]


def _collector(scores: Scores) -> Credit:
    def credit(sid: int, hops: int, detail: str, factor: float) -> None:
        value = DECAY**hops * factor
        if _beats(scores, sid, value):
            scores[sid] = Signal(value, detail)

    return credit


def _beats(scores: Scores, sid: int, value: float) -> bool:
    """``put``'s test, before the Signal (and its text) is made: most credits of a walk do not
    beat the statement's best."""
    return value > 0 and (sid not in scores or value > scores[sid].value)


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
            value = IN_PLACE * DECAY**hops * factor
            if _beats(scores, sid, value):
                scores[sid] = Signal(value, f"{detail} (checked by the assert)")

        walk(ctx, site, ctx.facts.uses.get(site, ()), weaker, quoted)
    scale = IN_PLACE if checks_in_place(ctx, site) else 1.0  # an assert's own condition is the check
    for guard, value in ((g, v * scale) for g, v in guards(ctx, site)):
        if ctx.statements[guard].kind in CONDITIONS:
            detail = "condition deciding the failing check"
        else:
            detail = "a call of the try body whose error the failing check reports"
        put(scores, guard, Signal(value, detail))

        def scaled(sid: int, hops: int, detail: str, factor: float, value: float = value) -> None:
            credited = value * DECAY**hops * factor
            if _beats(scores, sid, credited):
                scores[sid] = Signal(credited, f"{detail} (checked by the condition)")

        walk(ctx, guard, ctx.facts.uses.get(guard, ()), scaled, quoted)
    _expected_side(ctx, site, scores, quoted)
    return scores


def _comparison(ctx: Context, site: int) -> tuple[int, exp.Compared] | None:
    """The comparison a failed check made: the check itself, or the condition guarding a raise."""
    found = exp.compared(exp.parse_statement(ctx.facts.text.get(site, "")))
    if found is not None:
        return site, found
    if checks_in_place(ctx, site):
        return None
    for guard, _ in guards(ctx, site):
        if ctx.statements[guard].kind in CONDITIONS:
            found = exp.compared(exp.parse_statement(ctx.facts.text.get(guard, ""), header=True))
            if found is not None:
                return guard, found
    return None


Definitions = dict[int, tuple[int, str]]  # sid -> (fewest hops, how it produces the value)


def _operand_definitions(
    ctx: Context, sid: int, operand: ast.expr, quoted: frozenset[str], own: dict[int, tuple[object, ...]]
) -> Definitions:
    """Where one operand's value comes from: local, module and class definitions, helpers' returns,
    fixtures, callers' arguments and parameter defaults (``own``: literals of a default's text)."""
    names, callees = exp.operand_names(operand)
    found: Definitions = {}

    def credit(def_sid: int, hops: int, detail: str, factor: float) -> None:
        if factor < 1.0 or ctx.statements[def_sid].kind in NOT_DEFINITIONS:
            return  # an import or a guard: not where the value is written
        if def_sid not in found or hops < found[def_sid][0]:
            found[def_sid] = (hops, detail)

    def further(def_sid: int, hops: int, detail: str, factor: float) -> None:
        credit(def_sid, hops + 1, detail, factor)

    walk(ctx, sid, names, credit, quoted)
    for callee in sorted(callees):
        for fid in ctx.by_name.get(callee, ()):
            for out in _results(ctx, fid):
                credit(out, 1, f"{callee}() returns it", 1.0)
                walk(ctx, out, ctx.facts.uses.get(out, ()), further, quoted)
    use = ctx.statements[sid]
    function = ctx.functions[use.function]
    for name in sorted(names & set(ctx.facts.params.get(use.function, ()))):
        default = _parameter_default(ctx, function, name)
        if default is None or not function.statements:
            continue
        line, expression = default
        proxy = ctx.sid_at(function.path, line)
        target = proxy if proxy is not None else function.statements[0]  # a header line is no statement
        text = ast.unparse(expression)
        own[target] = exp.literals(text)
        credit(
            target,
            1,
            f"`{name}` defaults to {text[:40]} in the header of {function.name}() (line {line})",
            1.0,
        )
        default_names, _ = exp.operand_names(expression)
        walk(ctx, target, default_names, further, quoted)
    return found


def _parameter_default(ctx: Context, function: Function, name: str) -> tuple[int, ast.expr] | None:
    """The ``def`` line of ``function`` and the default its header gives parameter ``name``."""
    if not function.header_lines:
        return None
    lines = next(f.lines for f in ctx.analysis.program.files if f.path == function.path)
    first, last = function.header_lines[0], function.header_lines[-1]
    header = lines[first - 1 : last]
    default = exp.parameter_default("\n".join(header), name)
    if default is None:
        return None
    at = next((i for i, text in enumerate(header) if re.match(r"\s*(?:async\s+)?def\b", text)), 0)
    return first + at, default


def _expected_side(ctx: Context, site: int, scores: Scores, quoted: frozenset[str]) -> None:
    """Credit the definitions of the expected operand of the failed comparison, most when one holds
    the value the log printed for that side (``assert 3 == 4``, ``[1, 2] != [1, 3]``, "expected 4")."""
    found = _comparison(ctx, site)
    if found is None:
        return
    sid, compared = found
    if any(exp.is_literal(operand) for operand in compared.operands):
        return  # the expected value is written in the check itself, which ranks on its own
    printed = exp.printed(ctx.message, compared.operator)
    own: dict[int, tuple[object, ...]] = {}  # literals per definition, read once
    sides = [_operand_definitions(ctx, sid, operand, quoted, own) for operand in compared.operands]

    def matches(side: int, wanted: tuple[object, ...]) -> dict[int, object]:
        out: dict[int, object] = {}
        for def_sid in sides[side]:
            present = own.get(def_sid)
            if present is None:
                present = own[def_sid] = exp.literals(ctx.facts.text.get(def_sid, ""))
            value = exp.matching(wanted, present)
            if value is not None:
                out[def_sid] = value
        return out

    side = exp.named_side(compared)
    wanted: list[tuple[object, ...]] = [(), ()]
    if printed is not None:
        wanted = [printed.sides[0], printed.sides[1]]
        if printed.expected:  # the message says which value was expected
            if side is None:
                hits = [bool(matches(i, printed.expected)) for i in (0, 1)]
                side = hits.index(True) if hits.count(True) == 1 else None
            if side is not None:
                wanted[side] = printed.expected + wanted[side]
    found_matches = [matches(0, wanted[0]), matches(1, wanted[1])]
    hits = [bool(m) for m in found_matches]
    if side is None and hits.count(True) == 1:
        side = hits.index(True)  # the literals that produced a printed value: the side built from constants
    known = side is not None
    if side is None:
        side = 1  # the usual spelling, `assert f() == 4`: credited only where a literal matches
    operand = ast.unparse(compared.operands[side])
    operand = operand if len(operand) <= 40 else operand[:37] + "..."
    source = printed.source if printed is not None else None
    for def_sid, (hops, detail) in sides[side].items():
        if def_sid in found_matches[side]:
            value = exp.shown(found_matches[side][def_sid])
            put(
                scores,
                def_sid,
                Signal(
                    EXPECTED_MATCH * MATCH_DECAY ** (hops - 1),
                    f"writes {value}, the expected value `{operand}` the log printed for the failing check"
                    f" ({detail})",
                    source,
                ),
            )
        elif known:
            put(
                scores,
                def_sid,
                Signal(
                    EXPECTED_SIDE * DECAY ** (hops - 1),
                    f"defines the expected value `{operand}` of the failing check ({detail})",
                    source,
                ),
            )


def _missing_attributes(ctx: Context, error: int, credit: Credit) -> None:
    """``has no attribute 'x'``: suspect the initializers of the object's class, where x belongs."""
    found = re.search(r"(?:'(\w+)' object )?has no attribute '([A-Za-z_]\w*)'", ctx.message[:5000])
    if found is None:
        return
    function = ctx.functions[ctx.statements[error].function]
    owners = {found.group(1)} if found.group(1) else set()
    if "." in function.qualname:
        owners.add(function.qualname.rsplit(".", 1)[0].rsplit(".", 1)[-1])
    owners = ctx.ancestors(owners)  # an initializer a class inherits sets its objects' attributes too
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
