"""The built-in ranker: deterministic evidence from the traceback, data flow and the error text.

It is the default when no model server is configured and the baseline every model ranking is
compared with, so it only uses evidence that generalizes across test suites:

1. Traceback frames (FauxPy's stack-trace baseline). The innermost frame of the *last*
   traceback is where the failure surfaced; outer frames are mostly call lines, so they count
   far less; frames of earlier tracebacks (a cancelled test followed by a failing tearDown)
   count less still, so the first traceback is never blamed over the one that failed.
2. Data dependence on the error statement. A static def-use walk over the scripts (tree-sitter):
   names read at the error line -> the statements that assign them, transitively, across calls
   (arguments -> parameters, return values -> call results) and attributes by name (``self.x``).
   A statement that assigns a name only under a condition makes the condition suspicious too
   (control dependence); when the error message quotes the name (``UnboundLocalError``,
   ``has no attribute 'x'``) the condition is as suspicious as the assignment. An attribute
   the error says is missing points at the class's initializers (setUp, __init__...), where it
   should have been set.
3. Lexical similarity: BM25 between the error message and each element's code tokens
   (identifiers split on snake/camel case, words of string literals).
4. Literal text: a string literal of the code (its static pieces, around %s/{} holes) that
   occurs in the error message produced it: a failing command, an assertion or fail() message.
   Pieces near the start of the message (its headline) count more than those in trailing context.
   This is what localizes failures whose log has no traceback at all.
5. Proximity: elements executed shortly before the failure (earlier blocks of the failing
   function, the callees those blocks called) are likelier than distant ones.

Each channel is normalized to [0, 1] and combined with ``WEIGHTS``; hop counts decay by
``DECAY``. Ties keep source order. Every element gets a reason naming its strongest evidence.
"""

from __future__ import annotations

import math
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from tree_sitter import Node, Parser, Tree

from app.analysis.model import Analysis, Loc, Program, Statement, StmtKind
from app.analysis.render import Element, RenderedCode
from app.analysis.source import language

WEIGHTS: dict[str, float] = {"traceback": 4.0, "message": 3.0, "data": 2.0, "bm25": 1.0, "proximity": 0.5}
DECAY = 0.6  # per def-use hop
MAX_HOPS = 4
OUTER_FRAME = 0.25  # an outer frame of the failing traceback, relative to its innermost frame
OUTER_DECAY = 0.8  # each further outer frame
EARLIER_TRACEBACK = 0.25  # the innermost frame of an earlier traceback
IMPORT_FACTOR = 0.15  # a name bound by an import: rarely the fault, often just a module receiver
INITIALIZER_DECAY = 0.85  # successive statements of an initializer, for a missing attribute
COMMENT_FACTOR = 0.25  # line level: a comment line attached to a suspicious statement
CALLEE_PROXIMITY = 0.9  # a callee of a nearby statement ran just before the failure too
MIN_LITERAL = 8  # shortest one-word string-literal piece worth looking for in the error message
HEADLINE_SLOPE = 0.5  # a literal found at the end of the error message counts half as much as at its start
LOGGED_LITERAL = 0.5  # text of a log/context statement: where execution was, not what failed
CONTEXT_CALLS = frozenset({"context", "step", "section"})  # avocado-vt error.context() and the like
BM25_K1 = 1.2
BM25_B = 0.75
INITIALIZERS = frozenset(
    {"__init__", "setUp", "setup", "setup_method", "setUpClass", "setup_class", "asyncSetUp"}
)
MUTATORS = frozenset(
    {"append", "extend", "insert", "remove", "pop", "update", "setdefault", "add", "discard", "clear", "sort"}
)
# Words every error message uses; they say nothing about where the fault is.
QUERY_STOPWORDS = frozenset(
    {
        *("error", "errors", "exception", "failed", "fail", "failure", "test", "tests", "traceback", "line"),
        *("file", "most", "recent", "call", "last", "expected", "got", "assert", "assertion", "object"),
        *("has", "no", "py"),
    }
)
IGNORED_NAMES = frozenset({"self", "cls", "True", "False", "None"})
STOPWORDS = frozenset(
    {
        *("self", "cls", "def", "return", "if", "elif", "else", "for", "while", "in", "not", "and", "or"),
        *("is", "none", "true", "false", "import", "from", "as", "with", "try", "except", "finally", "raise"),
        *("pass", "break", "continue", "class", "lambda", "yield", "assert", "global", "nonlocal", "the"),
        *("to", "of", "a", "an", "on", "at", "by", "be", "it", "this", "that"),
    }
)


@dataclass(frozen=True)
class ScoredElement:
    element: Element
    score: float
    reason: str
    evidence: dict[str, float] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class _Call:
    callee: str  # simple name: ``f`` for ``f(x)`` and ``obj.f(x)``
    via_attribute: bool
    args: tuple[frozenset[str], ...]  # names read by each positional argument
    keywords: tuple[tuple[str, frozenset[str]], ...]


@dataclass
class _LineFacts:
    defs: set[str] = field(default_factory=set)
    imports: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)
    calls: list[_Call] = field(default_factory=list)
    literals: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Facts:
    """Def-use facts per statement, parameters per function, call sites per callee name."""

    defs: dict[int, frozenset[str]]
    imports: dict[int, frozenset[str]]
    uses: dict[int, frozenset[str]]
    calls: dict[int, tuple[_Call, ...]]
    params: dict[str, tuple[str, ...]]  # fid -> parameter names in order
    call_sites: dict[str, tuple[int, ...]]  # callee simple name -> sids
    literals: dict[int, tuple[str, ...]]  # static pieces of string literals


_Credit = Callable[[int, int, str, float], None]  # (sid, hops, reason, factor)


def rank_heuristic(analysis: Analysis, rendered: RenderedCode, k: int) -> list[ScoredElement]:
    """The ``k`` most suspicious elements of ``rendered``, best first, with scores and reasons."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    program = analysis.program
    kept = analysis.traces[rendered.variant].kept
    sid_of_line = _sid_of_line(program)
    facts = _facts(program, analysis.trees)
    quoted = _quoted_names(analysis.log.error_message)

    traceback = _traceback_scores(analysis, sid_of_line)
    data, data_reason = _data_scores(analysis, facts, traceback, quoted)
    proximity = _proximity_scores(analysis, facts, traceback, kept, by_statement=rendered.level == "line")
    bm25 = _bm25_scores(rendered.elements, analysis.log.error_message)
    logging_sids = {ls.sid for ls in analysis.log_statements if ls.sid is not None}
    logging_sids |= {
        sid for sid, calls in facts.calls.items() if any(c.callee in CONTEXT_CALLS for c in calls)
    }
    message = _message_scores(facts, analysis.log.error_message, frozenset(logging_sids))

    scored: list[tuple[float, int, ScoredElement]] = []
    for index, element in enumerate(rendered.elements):
        sids = {
            sid_of_line[loc]
            for loc in (Loc(element.path, line) for line in element.lines)
            if loc in sid_of_line
        }
        evidence = {
            "traceback": max((traceback.get(s, (0.0, ""))[0] for s in sids), default=0.0),
            "message": max((message.get(s, (0.0, ""))[0] for s in sids), default=0.0),
            "data": max((data.get(s, 0.0) for s in sids), default=0.0),
            "proximity": max((proximity.get(s, 0.0) for s in sids), default=0.0),
            "bm25": bm25[index],
        }
        score = sum(WEIGHTS[name] * value for name, value in evidence.items())
        if rendered.level == "line" and element.code.lstrip().startswith("#"):
            score *= COMMENT_FACTOR  # a comment shares its statement's evidence but cannot fail
        reason = _reason(evidence, sids, traceback, message, data, data_reason)
        scored.append((-score, index, ScoredElement(element, round(score, 4), reason, evidence)))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in scored[:k]]


def _reason(
    evidence: dict[str, float],
    sids: set[int],
    traceback: dict[int, tuple[float, str]],
    message: dict[int, tuple[float, str]],
    data: dict[int, float],
    data_reason: dict[int, str],
) -> str:
    parts: list[str] = []
    for channel in (traceback, message):
        best = max(sids, key=lambda s: channel.get(s, (0.0, ""))[0], default=None)
        if best is not None and best in channel:
            parts.append(channel[best][1])
    best_dd = max(sids, key=lambda s: data.get(s, 0.0), default=None)
    if best_dd is not None and best_dd in data_reason:
        parts.append(data_reason[best_dd])
    if evidence["bm25"] > 0:
        parts.append(f"BM25 {evidence['bm25']:.2f}")
    if not parts and evidence["proximity"] > 0:
        parts.append("ran shortly before the failure")
    return "; ".join(parts) if parts else "no specific evidence"


# ------------------------------------------------------------------------------------------
# channel: traceback frames
# ------------------------------------------------------------------------------------------


def _traceback_scores(analysis: Analysis, sid_of_line: dict[Loc, int]) -> dict[int, tuple[float, str]]:
    """Per statement: (score, reason) for the traceback frames that point at it."""
    frames = [
        (frame.traceback, sid_of_line[Loc(frame.path, frame.line)])
        for frame in analysis.error_frames
        if Loc(frame.path, frame.line) in sid_of_line
    ]
    if not frames and analysis.error_statements:
        frames = [(0, sid) for sid in analysis.error_statements]
    if not frames:
        return {}
    last = max(tb for tb, _ in frames)
    scores: dict[int, tuple[float, str]] = {}
    for tb in sorted({tb for tb, _ in frames}):
        sids = [sid for t, sid in frames if t == tb]  # outermost first
        for depth, sid in enumerate(reversed(sids)):
            if tb == last:
                if depth == 0:
                    value, why = 1.0, "traceback frame (innermost)"
                else:
                    value, why = (
                        OUTER_FRAME * OUTER_DECAY ** (depth - 1),
                        f"traceback frame (outer, depth {depth})",
                    )
            else:
                value = EARLIER_TRACEBACK * OUTER_DECAY**depth
                why = "frame of an earlier traceback"
            if value > scores.get(sid, (0.0, ""))[0]:
                scores[sid] = (value, why)
    return scores


def _innermost(traceback: dict[int, tuple[float, str]]) -> int | None:
    best = [sid for sid, (value, _) in traceback.items() if value == 1.0]
    return best[0] if best else None


# ------------------------------------------------------------------------------------------
# channel: data dependence
# ------------------------------------------------------------------------------------------


def _data_scores(
    analysis: Analysis, facts: _Facts, traceback: dict[int, tuple[float, str]], quoted: frozenset[str]
) -> tuple[dict[int, float], dict[int, str]]:
    """Def-use walk from the error statement; a statement's score is DECAY ** (fewest hops)."""
    program = analysis.program
    error = _innermost(traceback)
    scores: dict[int, float] = {}
    reasons: dict[int, str] = {}
    if error is None:
        return scores, reasons
    statements = program.statements
    functions = {f.fid: f for f in program.functions}
    by_name: dict[str, list[str]] = {}
    for function in program.functions:
        by_name.setdefault(function.name, []).append(function.fid)

    def credit(sid: int, hops: int, why: str, factor: float = 1.0) -> None:
        value = DECAY**hops * factor
        if value > scores.get(sid, 0.0):
            scores[sid] = value
            reasons[sid] = why

    queue: deque[tuple[str, int, int]] = deque()
    seen: set[tuple[str, int]] = set()
    for name in facts.uses.get(error, ()):
        queue.append((name, error, 0))
    parent = statements[error].parent
    if parent is not None:
        credit(parent, 1, "guards the error line")
    while queue:
        name, use_sid, hops = queue.popleft()
        if (name, use_sid) in seen or hops >= MAX_HOPS:
            continue
        seen.add((name, use_sid))
        shown = name.removeprefix("attr:")
        use = statements[use_sid]
        for def_sid in _definitions(name, use, facts, program):
            imported = name in facts.imports.get(def_sid, ())
            where = "the error line" if use_sid == error else f"line {use.start_line}"
            credit(
                def_sid, hops + 1, f"defines `{shown}` used at {where}", IMPORT_FACTOR if imported else 1.0
            )
            if imported:
                continue
            guard = statements[def_sid].parent
            if guard is not None:
                credit(guard, hops + (1 if shown in quoted else 2), f"guards the assignment of `{shown}`")
            for used in facts.uses.get(def_sid, ()):
                queue.append((used, def_sid, hops + 1))
            for call in facts.calls.get(def_sid, ()):
                for fid in by_name.get(call.callee, ()):
                    for ret in functions[fid].statements:
                        if statements[ret].kind == StmtKind.RETURN:
                            credit(ret, hops + 1, f"returns the value of `{shown}`")
                            for used in facts.uses.get(ret, ()):
                                queue.append((used, ret, hops + 1))
        if not name.startswith("attr:") and name in facts.params.get(use.function, ()):
            function = functions[use.function]
            index = facts.params[use.function].index(name)
            for site in facts.call_sites.get(function.name, ()):
                for call in facts.calls.get(site, ()):
                    if call.callee != function.name:
                        continue
                    position = index - (
                        1
                        if call.via_attribute and facts.params[use.function][:1] in (("self",), ("cls",))
                        else 0
                    )
                    names = dict(call.keywords).get(name)
                    if names is None and 0 <= position < len(call.args):
                        names = call.args[position]
                    credit(site, hops + 1, f"passes `{name}` to {function.name}()")
                    for used in names or ():
                        queue.append((used, site, hops + 1))
    _missing_attributes(analysis, facts, error, credit)
    return scores, reasons


def _definitions(name: str, use: Statement, facts: _Facts, program: Program) -> list[int]:
    """Statements that may have assigned ``name`` before ``use`` read it."""
    if name.startswith("attr:"):
        return [sid for sid, names in facts.defs.items() if name in names and sid != use.sid]
    function = program.function(use.function)
    local = [sid for sid in function.statements if name in facts.defs.get(sid, ()) and sid != use.sid]
    if local:
        before = [sid for sid in local if program.statements[sid].start_line < use.start_line]
        return before or local
    if name in facts.params.get(use.function, ()):
        return []
    modules = [f for f in program.functions if f.kind == "module"]
    modules.sort(key=lambda f: f.path != use.path)
    for module in modules:
        found = [sid for sid in module.statements if name in facts.defs.get(sid, ())]
        if found:
            return found
    return []


def _missing_attributes(analysis: Analysis, facts: _Facts, error: int, credit: _Credit) -> None:
    """``has no attribute 'x'``: suspect the initializers of the object's class, where x belongs.

    The class is the one the message names (``'Binutils' object has no attribute 'package'``),
    else the class of the failing method. Its initializers' statements that set attributes are
    credited one hop away, earliest first.
    """
    message = analysis.log.error_message
    found = re.search(r"(?:'(\w+)' object )?has no attribute '([A-Za-z_]\w*)'", message)
    if found is None:
        return
    program = analysis.program
    function = program.function(program.statements[error].function)
    owners = {found.group(1)} if found.group(1) else set()
    if "." in function.qualname:
        owners.add(function.qualname.rsplit(".", 1)[0].rsplit(".", 1)[-1])
    for initializer in program.functions:
        if initializer.name not in INITIALIZERS or "." not in initializer.qualname:
            continue
        if initializer.qualname.rsplit(".", 1)[0].rsplit(".", 1)[-1] not in owners:
            continue
        setters = [
            sid
            for sid in initializer.statements
            if any(d.startswith("attr:") for d in facts.defs.get(sid, ()))
        ]
        for rank, sid in enumerate(setters):
            credit(sid, 1, f"{initializer.name} never sets `{found.group(2)}`", INITIALIZER_DECAY**rank)


def _quoted_names(message: str) -> frozenset[str]:
    return frozenset(re.findall(r"['\"`]([A-Za-z_]\w*)['\"`]", message))


# ------------------------------------------------------------------------------------------
# channel: literal text of the code quoted by the error message
# ------------------------------------------------------------------------------------------


def _message_scores(
    facts: _Facts, message: str, logging_sids: frozenset[int]
) -> dict[int, tuple[float, str]]:
    """Statements with a literal piece found in the message; earlier in the message = higher.

    A log or context statement's text in the message says execution passed there, not that it
    failed there, so it counts ``LOGGED_LITERAL`` as much.
    """
    text = re.sub(r"\s+", " ", message)
    if not text.strip():
        return {}
    scores: dict[int, tuple[float, str]] = {}
    for sid, pieces in facts.literals.items():
        for piece in pieces:
            at = text.find(re.sub(r"\s+", " ", piece))
            if at < 0:
                continue
            value = (1.0 - HEADLINE_SLOPE * at / len(text)) * (LOGGED_LITERAL if sid in logging_sids else 1.0)
            if value > scores.get(sid, (0.0, ""))[0]:
                shown = piece if len(piece) <= 40 else piece[:37] + "..."
                what = "its log text" if sid in logging_sids else "its text"
                scores[sid] = (value, f"{what} {shown!r} is in the error message")
    return scores


# ------------------------------------------------------------------------------------------
# channel: proximity in (estimated) execution order
# ------------------------------------------------------------------------------------------


def _proximity_scores(
    analysis: Analysis,
    facts: _Facts,
    traceback: dict[int, tuple[float, str]],
    kept: frozenset[Loc],
    *,
    by_statement: bool,
) -> dict[int, float]:
    """1 / (1 + blocks, or statements at line level, between) for kept code that ran just before the failure.

    With traceback frames, "just before" is backwards from each frame in its function (outer
    frames at half weight). Without any, the failure came after the last log message that
    matched exactly one statement: code after that statement in its function is suspected.
    """
    program = analysis.program
    statements = program.statements
    block_of = {} if by_statement else {sid: block.bid for block in analysis.blocks for sid in block.sids}
    functions = {f.fid: f for f in program.functions}
    by_name: dict[str, list[str]] = {}
    for function in program.functions:
        by_name.setdefault(function.name, []).append(function.fid)
    innermost = _innermost(traceback)
    frames = [sid for sid, (_, why) in traceback.items() if why.startswith("traceback frame")]
    frame_functions = {statements[sid].function for sid in frames}
    scores: dict[int, float] = {}

    def credit(sid: int, value: float) -> None:
        if value > scores.get(sid, 0.0):
            scores[sid] = value

    def spread(origin: int, scale: float, forward: bool) -> None:
        stop = statements[origin]
        ran = sorted(
            (
                s
                for s in functions[stop.function].statements
                if Loc(stop.path, statements[s].start_line) in kept
                and (
                    statements[s].start_line >= stop.start_line
                    if forward
                    else statements[s].start_line <= stop.start_line
                )
            ),
            key=lambda s: statements[s].start_line,
        )
        position: dict[int, int] = {}
        for s in ran:
            position.setdefault(block_of.get(s, -1 - s), len(position))
        here = position.get(block_of.get(origin, -1 - origin), 0 if forward else len(position) - 1)
        for s in ran:
            value = scale / (1 + abs(position[block_of.get(s, -1 - s)] - here))
            if not forward or s != origin:  # the anchor is a log statement: it ran, it did not fail
                credit(s, value)
            for call in facts.calls.get(s, ()) if s != origin or forward else ():
                for fid in by_name.get(call.callee, ()):
                    if fid not in frame_functions:
                        for callee in functions[fid].statements:
                            credit(callee, value * CALLEE_PROXIMITY)

    for sid in frames:
        spread(sid, 1.0 if sid == innermost else 0.5, forward=False)
    if innermost is None:
        anchor = _last_logged(analysis)
        if anchor is not None:
            spread(anchor, 1.0, forward=True)
    return scores


def _last_logged(analysis: Analysis) -> int | None:
    """The statement that printed the last log message matching exactly one statement."""
    unique = [(index, sids[0]) for index, sids in analysis.match.matches if len(sids) == 1]
    return max(unique)[1] if unique else None


# ------------------------------------------------------------------------------------------
# channel: BM25
# ------------------------------------------------------------------------------------------


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|\d{2,}")
_WORD_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def code_tokens(text: str) -> list[str]:
    """Lower-cased words of code or prose: identifiers split on snake_case and camelCase."""
    tokens: list[str] = []
    for word in _WORD.findall(text):
        for part in _WORD_PART.findall(word) or [word]:
            token = part.lower()
            if len(token) >= 2 and token not in STOPWORDS:
                tokens.append(token)
    return tokens


def bm25(documents: Sequence[Sequence[str]], query: Iterable[str]) -> list[float]:
    """Okapi BM25 of each document for ``query`` (query term repeats count once)."""
    count = len(documents)
    if count == 0:
        return []
    lengths = [len(doc) for doc in documents]
    average = sum(lengths) / count or 1.0
    frequencies = [Counter(doc) for doc in documents]
    document_frequency = Counter(term for freq in frequencies for term in freq)
    scores = []
    terms = set(query)
    for freq, length in zip(frequencies, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = freq.get(term, 0)
            if tf == 0:
                continue
            df = document_frequency[term]
            idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
            score += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
        scores.append(score)
    return scores


def query_tokens(message: str) -> list[str]:
    """Error-message words worth searching for: no exception class names, no generic words."""
    text = re.sub(
        r"\b[\w.]*(?:Error|Exception|Failure|Warning|Exit|Interrupt|Cancel|Fail|Skip)\b", " ", message
    )
    return [token for token in code_tokens(text) if token not in QUERY_STOPWORDS]


def _bm25_scores(elements: Sequence[Element], message: str) -> list[float]:
    raw = bm25([code_tokens(e.code) for e in elements], query_tokens(message))
    top = max(raw, default=0.0)
    return [value / top if top > 0 else 0.0 for value in raw]


# ------------------------------------------------------------------------------------------
# facts: a small def-use extraction over the tree-sitter syntax tree
# ------------------------------------------------------------------------------------------


_FORMAT_HOLE = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[a-zA-Z%]|\{[^{}]*\}|\\[ntr]")


def _distinctive(piece: str) -> bool:
    """Several words, or one long non-identifier token: not a dict key such as 'status'."""
    if len(re.findall(r"[A-Za-z]{2,}", piece)) >= 2 and " " in piece:
        return len(piece) >= 6
    return (
        len(piece) >= MIN_LITERAL
        and re.search(r"[A-Za-z]{3}", piece) is not None
        and not piece.isidentifier()
    )


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(language())


def _sid_of_line(program: Program) -> dict[Loc, int]:
    mapping: dict[Loc, int] = {}
    for stmt in program.statements:
        for line in stmt.lines:
            mapping.setdefault(Loc(stmt.path, line), stmt.sid)
    return mapping


def _facts(program: Program, trees: Sequence[Tree] = ()) -> _Facts:
    lines: dict[Loc, _LineFacts] = {}
    params: dict[str, tuple[str, ...]] = {}
    def_lines = {
        (f.path, line, f.name): f.fid
        for f in program.functions
        for line in f.header_lines
        if f.kind != "module"
    }
    parsed = len(trees) == len(program.files)  # the analysis' own parse, one tree per file
    for i, source in enumerate(program.files):
        tree = trees[i] if parsed else _parser().parse("\n".join(source.lines).encode("utf-8", "replace"))
        try:
            _Walker(source.path, lines, params, def_lines).visit(tree.root_node, "use")
        except RecursionError:
            continue  # absurdly deep nesting of calls/attributes: keep the facts gathered so far
    defs: dict[int, frozenset[str]] = {}
    imports: dict[int, frozenset[str]] = {}
    uses: dict[int, frozenset[str]] = {}
    calls: dict[int, tuple[_Call, ...]] = {}
    call_sites: dict[str, list[int]] = {}
    literals: dict[int, tuple[str, ...]] = {}
    for stmt in program.statements:
        code = [
            lines[loc]
            for loc in (Loc(stmt.path, n) for n in range(stmt.start_line, stmt.end_line + 1))
            if loc in lines
        ]
        defs[stmt.sid] = frozenset(d for f in code for d in f.defs)
        imports[stmt.sid] = frozenset(d for f in code for d in f.imports)
        uses[stmt.sid] = frozenset(u for f in code for u in f.uses if u not in IGNORED_NAMES)
        calls[stmt.sid] = tuple(c for f in code for c in f.calls)
        literals[stmt.sid] = tuple(piece for f in code for piece in f.literals)
        for call in calls[stmt.sid]:
            call_sites.setdefault(call.callee, []).append(stmt.sid)
    sites = {k: tuple(v) for k, v in call_sites.items()}
    return _Facts(defs, imports, uses, calls, params, sites, literals)


class _Walker:
    """Classifies every name occurrence as a definition or a use, per source line."""

    def __init__(
        self,
        path: str,
        lines: dict[Loc, _LineFacts],
        params: dict[str, tuple[str, ...]],
        def_lines: dict[tuple[str, int, str], str],
    ) -> None:
        self.path = path
        self.lines = lines
        self.params = params
        self.def_lines = def_lines

    def facts(self, node: Node) -> _LineFacts:
        loc = Loc(self.path, node.start_point[0] + 1)
        if loc not in self.lines:
            self.lines[loc] = _LineFacts()
        return self.lines[loc]

    def visit(self, node: Node, role: str) -> None:
        """Dispatch on node type; plain nesting (long ``a + b + ...`` chains) is walked without recursion."""
        stack = [node]
        while stack:
            current = stack.pop()
            handler = getattr(self, f"_{current.type}", None)
            if handler is not None:
                handler(current, role)
            else:
                stack.extend(reversed(current.named_children))

    def _identifier(self, node: Node, role: str) -> None:
        name = node.text.decode("utf-8", "replace")
        (self.facts(node).defs if role == "def" else self.facts(node).uses).add(name)

    def _attribute(self, node: Node, role: str) -> None:
        attr = node.child_by_field_name("attribute")
        obj = node.child_by_field_name("object")
        if attr is not None:
            name = "attr:" + attr.text.decode("utf-8", "replace")
            (self.facts(attr).defs if role == "def" else self.facts(attr).uses).add(name)
        if obj is not None:
            self.visit(obj, "use")

    def _subscript(self, node: Node, role: str) -> None:
        value = node.child_by_field_name("value")
        if value is not None:
            self.visit(value, role)
            if role == "def":
                self.visit(value, "use")
        for child in node.children_by_field_name("subscript"):
            self.visit(child, "use")

    def _assignment(self, node: Node, role: str) -> None:
        left, right, kind = (node.child_by_field_name(f) for f in ("left", "right", "type"))
        if left is not None:
            self.visit(left, "def")
        if right is not None:
            self.visit(right, "use")
        if kind is not None:
            self.visit(kind, "use")

    def _augmented_assignment(self, node: Node, role: str) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is not None:
            self.visit(left, "def")
            self.visit(left, "use")
        if right is not None:
            self.visit(right, "use")

    def _for_statement(self, node: Node, role: str) -> None:
        for child in node.named_children:
            self.visit(child, "def" if child == node.child_by_field_name("left") else "use")

    _for_in_clause = _for_statement

    def _as_pattern_target(self, node: Node, role: str) -> None:
        for child in node.named_children:
            self.visit(child, "def")

    def _as_pattern(self, node: Node, role: str) -> None:
        for child in node.named_children:
            self.visit(
                child,
                "def"
                if child.type in ("as_pattern_target", "identifier") and child != node.named_children[0]
                else "use",
            )

    def _string(self, node: Node, role: str) -> None:
        for child in node.named_children:
            if child.type == "string_content":
                text = child.text.decode("utf-8", "replace")
                for piece in _FORMAT_HOLE.split(text):
                    if _distinctive(piece.strip()):
                        self.facts(node).literals.append(piece.strip())
            elif child.type == "interpolation":
                self.visit(child, "use")

    def _keyword_argument(self, node: Node, role: str) -> None:
        value = node.child_by_field_name("value")
        if value is not None:
            self.visit(value, "use")

    def _import_statement(self, node: Node, role: str) -> None:
        for child in node.named_children:
            self._import_name(child)

    def _import_from_statement(self, node: Node, role: str) -> None:
        module = node.child_by_field_name("module_name")
        for child in node.named_children:
            if child != module:
                self._import_name(child)

    def _import_name(self, node: Node) -> None:
        if node.type == "aliased_import":
            alias = node.child_by_field_name("alias")
            target = alias if alias is not None else node
        else:
            target = node
        name = target.text.decode("utf-8", "replace").split(".")[0].strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name):
            facts = self.facts(node)
            facts.defs.add(name)
            facts.imports.add(name)

    def _function_definition(self, node: Node, role: str) -> None:
        name_node = node.child_by_field_name("name")
        parameters = node.child_by_field_name("parameters")
        if name_node is not None:
            key = (self.path, name_node.start_point[0] + 1, name_node.text.decode("utf-8", "replace"))
            fid = self.def_lines.get(key)
            if fid is not None and parameters is not None:
                self.params[fid] = tuple(self._parameter_names(parameters))
        if parameters is not None:
            for param in parameters.named_children:
                default = param.child_by_field_name("value")
                if default is not None:
                    self.visit(default, "use")
        for field_name in ("return_type", "body"):
            child = node.child_by_field_name(field_name)
            if child is not None:
                self.visit(child, "use")

    def _parameter_names(self, parameters: Node) -> Iterable[str]:
        for param in parameters.named_children:
            target = param.child_by_field_name("name") if param.type != "identifier" else param
            if target is None:
                target = next((c for c in param.named_children if c.type == "identifier"), None)
            if target is not None:
                yield target.text.decode("utf-8", "replace")

    def _class_definition(self, node: Node, role: str) -> None:
        for field_name in ("superclasses", "body"):
            child = node.child_by_field_name(field_name)
            if child is not None:
                self.visit(child, "use")

    def _lambda(self, node: Node, role: str) -> None:
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit(body, "use")

    def _expression_statement(self, node: Node, role: str) -> None:
        for child in node.named_children:
            self.visit(child, role)
            if child.type == "call":
                function = child.child_by_field_name("function")
                if function is not None and function.type == "attribute":
                    obj, attr = (
                        function.child_by_field_name("object"),
                        function.child_by_field_name("attribute"),
                    )
                    if (
                        obj is not None
                        and attr is not None
                        and attr.text.decode() in MUTATORS
                        and obj.type == "identifier"
                    ):
                        self.facts(obj).defs.add(obj.text.decode("utf-8", "replace"))

    def _call(self, node: Node, role: str) -> None:
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        callee, via_attribute = "", False
        if function is not None:
            if function.type == "identifier":
                callee = function.text.decode("utf-8", "replace")
            elif function.type == "attribute":
                attr, obj = function.child_by_field_name("attribute"), function.child_by_field_name("object")
                callee = attr.text.decode("utf-8", "replace") if attr is not None else ""
                via_attribute = True
                if obj is not None:
                    self.visit(obj, "use")
            else:
                self.visit(function, "use")
        args: list[frozenset[str]] = []
        keywords: list[tuple[str, frozenset[str]]] = []
        if arguments is not None:
            for arg in arguments.named_children:
                probe = _LineFacts()
                _Collector(probe).visit(arg)
                if arg.type == "keyword_argument":
                    name = arg.child_by_field_name("name")
                    if name is not None:
                        keywords.append((name.text.decode("utf-8", "replace"), frozenset(probe.uses)))
                elif arg.type != "comment":
                    args.append(frozenset(probe.uses))
                self.visit(arg, "use")
        if callee:
            self.facts(node).calls.append(_Call(callee, via_attribute, tuple(args), tuple(keywords)))


class _Collector:
    """Names read by one expression (for argument -> parameter flow)."""

    def __init__(self, facts: _LineFacts) -> None:
        self.facts = facts

    def visit(self, node: Node) -> None:
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "identifier":
                self.facts.uses.add(current.text.decode("utf-8", "replace"))
            elif current.type == "attribute":
                attr, obj = current.child_by_field_name("attribute"), current.child_by_field_name("object")
                if attr is not None:
                    self.facts.uses.add("attr:" + attr.text.decode("utf-8", "replace"))
                if obj is not None:
                    stack.append(obj)
            elif current.type == "keyword_argument":
                value = current.child_by_field_name("value")
                if value is not None:
                    stack.append(value)
            else:
                stack.extend(current.named_children)
