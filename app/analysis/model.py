"""Plain records that flow between the pipeline steps.

Every step takes some of these and returns new ones; nothing here does I/O. Line numbers are
1-based in the file as given; a statement id (``sid``) indexes ``Program.statements``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # echo.py builds on these records
    from app.analysis.echo import Echo


class Loc(NamedTuple):
    """A source line: the unit every trace is made of.

    A named tuple, not a frozen dataclass: traces are sets of thousands of these, and tuple
    hashing, comparison and creation run in C (set building, lookups and sorting are much faster).
    It orders by (path, line) and equals the plain tuple ``(path, line)``.
    """

    path: str
    line: int


@dataclass(frozen=True)
class Script:
    """One submitted test file, as the user gave it."""

    path: str
    content: str


# --------------------------------------------------------------------------------------------
# source.py
# --------------------------------------------------------------------------------------------


class StmtKind(StrEnum):
    """What a flattened statement is; the CFG builder branches on it."""

    SIMPLE = "simple"
    RETURN = "return"
    RAISE = "raise"
    BREAK = "break"
    CONTINUE = "continue"
    ASSERT = "assert"
    IF = "if"  # the `if cond:` header line(s)
    ELIF = "elif"
    ELSE = "else"  # `else:` of if, for, while or try
    FOR = "for"
    WHILE = "while"
    TRY = "try"
    EXCEPT = "except"
    FINALLY = "finally"
    WITH = "with"
    MATCH = "match"
    CASE = "case"
    DEF = "def"  # a nested def/class statement seen from its enclosing function (its header lines)
    CLASS = "class"


@dataclass(frozen=True)
class Statement:
    """One statement of the flattened sequence of a function body.

    ``lines`` are the statement's non-blank lines plus the comment lines attached to it (the
    comments right above it). ``header_of`` is set on clause statements (if/for/try/... headers)
    and lists the sids of the statements directly in the clause's body.
    """

    sid: int
    path: str
    function: str  # Function.fid
    kind: StmtKind
    start_line: int  # first code line (attached comments excluded)
    end_line: int
    lines: tuple[int, ...]
    calls: tuple[
        str, ...
    ] = ()  # calls and callbacks: `f`, `obj.f` (plain-name object) or `.f` (headers: header only)
    parent: int | None = None  # sid of the enclosing clause header, None at function level
    body: tuple[int, ...] = ()  # sids directly inside this clause (compound headers only)
    depth: int = 0


@dataclass(frozen=True)
class Function:
    """A function, method, nested function, or a file's ``module`` pseudo-function."""

    fid: str  # unique across all files: qualified name, path-prefixed only when needed
    name: str  # simple name as in the source (`module` for the pseudo-function)
    qualname: str  # Class.method / outer.inner
    path: str
    kind: str  # "function" | "module"
    header_lines: tuple[int, ...]  # decorator and def lines (and their comments); () for module
    start_line: int
    end_line: int
    statements: tuple[int, ...]  # sids of the body in source order, nested defs excluded
    top_level: tuple[int, ...] = ()  # sids directly at the body level (not inside clauses)
    is_hook: bool = False  # setUp/tearDown family, pytest fixtures: run by the framework
    is_async: bool = False
    parent: str | None = None  # enclosing Function.fid for nested defs
    is_method: bool = False  # defined in a class body: called as `obj.name(...)`, never as `name(...)`


@dataclass(frozen=True)
class SourceFile:
    path: str
    lines: tuple[str, ...]  # the file's text lines, without newlines
    code_lines: frozenset[int]  # non-blank lines (comments included)
    container_headers: tuple[tuple[int, int, tuple[int, ...]], ...] = ()
    # (start, end, header lines) of each `class` statement: header in a trace when any line in range is
    has_errors: bool = False


@dataclass(frozen=True)
class Program:
    """The parsed test scripts of one case."""

    files: tuple[SourceFile, ...]
    statements: tuple[Statement, ...]
    functions: tuple[Function, ...]
    warnings: tuple[str, ...] = ()

    def function(self, fid: str) -> Function:
        for f in self.functions:
            if f.fid == fid:
                return f
        raise KeyError(fid)


# --------------------------------------------------------------------------------------------
# logstatements.py
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogStatement:
    """A call to a log function. ``parts`` are its static parts in output order; empty = not static."""

    path: str
    line: int  # line of the call's start
    end_line: int
    callee: str  # e.g. "logging.info", "Log.log", "print"
    parts: tuple[str, ...]
    sid: int | None = None  # filled in by the pipeline

    @property
    def is_static(self) -> bool:
        return bool(self.parts)


# --------------------------------------------------------------------------------------------
# logparse.py
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogMessage:
    """One message of the log, its prefix (timestamp, level, logger) stripped."""

    index: int  # 0-based position among messages
    line: int  # 1-based line in the log where the message starts
    end_line: int  # last log line of the message (messages may span lines)
    text: str
    level: str | None = None  # INFO, ERROR, ... where the prefix said


@dataclass(frozen=True)
class Frame:
    """One traceback frame (or pytest `file:line:` location) as printed in the log."""

    path: str  # as printed
    line: int
    function: str | None
    code: str | None = None  # the source line printed under it, if any
    log_line: int = 0  # 1-based line in the log
    traceback: int = 0  # which traceback of the log (0-based, in log order)


@dataclass(frozen=True)
class ParsedLog:
    messages: Sequence[LogMessage]  # logparse.LogMessages: columns over the log's text
    frames: tuple[Frame, ...]  # every frame of every traceback, outermost first within each
    error_message: str
    warnings: tuple[str, ...] = ()
    format: str = "unknown"  # name of the detected prefix format


# --------------------------------------------------------------------------------------------
# matching.py
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatchResult:
    """Algorithm 1's output plus the evidence for each decision (sids throughout)."""

    exe: frozenset[int]  # L_exe: uniquely matched static log statements and error statements
    nexe: frozenset[int]  # L_nexe
    multi: frozenset[int]  # L_mm: matched only by messages that matched several statements
    matches: tuple[tuple[int, tuple[int, ...]], ...]  # (message index, sids it matched), matched ones only
    error_sids: frozenset[int] = frozenset()


# --------------------------------------------------------------------------------------------
# cfg.py
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """A basic block: ``BLOCK n`` in prompts, numbered in source order across all files."""

    bid: int
    path: str
    function: str
    start_line: int
    end_line: int
    sids: tuple[int, ...]


# --------------------------------------------------------------------------------------------
# estimate.py
# --------------------------------------------------------------------------------------------


class State(StrEnum):
    EXE = "executed"
    NEXE = "not_executed"
    DBT = "doubtful"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class TraceReason:
    """Why a line got its state in one variant, for `tcfl trace` and the dashboard."""

    state: State
    rule: str  # e.g. "log-match", "traceback", "gap", "cfg-path", "call-site", "no-evidence"
    detail: str = ""


@dataclass(frozen=True)
class Trace:
    """One estimated trace: a set of source lines, with the pruning it achieves."""

    name: str
    kept: frozenset[Loc]
    total: int  # non-blank lines of all files
    evidence: dict[Loc, TraceReason] = field(default_factory=dict, compare=False, hash=False)

    @property
    def pruning_rate(self) -> float:
        return 0.0 if self.total == 0 else 1.0 - len(self.kept) / self.total


TRACE_ALIASES: dict[str, str] = {
    "t0": "T0",
    "tmin": "T2",
    "tmid": "CSR(T1_dbt_exe&T2)",
    "tmax": "CSR(T1_dbt_nexe&T2)",
}

BASE_VARIANTS: tuple[str, ...] = ("T0", "T1_dbt_exe", "T1_dbt_nexe", "T2", "T1_dbt_exe&T2", "T1_dbt_nexe&T2")
VARIANTS: tuple[str, ...] = (*BASE_VARIANTS, *(f"CSR({v})" for v in BASE_VARIANTS), "tplus")


def resolve_variant(name: str) -> str:
    """Accept canonical names and the t0/tmin/tmid/tmax shortcuts; raise ValueError otherwise."""
    key = name.strip()
    if key in VARIANTS:
        return key
    if key.lower() in TRACE_ALIASES:
        return TRACE_ALIASES[key.lower()]
    if key.lower() == "tplus":
        return "tplus"
    raise ValueError(
        f"unknown trace variant {name!r}; choose one of {', '.join((*TRACE_ALIASES, *VARIANTS))}"
    )


@dataclass(frozen=True)
class Analysis:
    """Everything the static phase knows about one case; input to rendering and ranking."""

    program: Program
    log: ParsedLog
    log_statements: tuple[LogStatement, ...]
    error_statements: tuple[int, ...]  # sids, innermost frame last
    error_frames: tuple[Frame, ...]  # frames that map to submitted scripts (path rewritten), outermost first
    match: MatchResult
    blocks: tuple[Block, ...]
    traces: dict[str, Trace]
    warnings: tuple[str, ...] = ()
    # the parse the analysis made, for the steps after it (rankers, renderer): never parse twice
    trees: tuple[Any, ...] = field(default=(), compare=False, repr=False)  # tree_sitter.Tree per file
    line_index: dict[tuple[str, int], Statement] = field(default_factory=dict, compare=False, repr=False)
    # app.analysis.parsed.ParsedScripts: the script-only half, shared by analyses of the same scripts
    parsed: Any = field(default=None, compare=False, repr=False)
    # log lines repeating a script line, in log order
    echoes: tuple[Echo, ...] = field(default=(), compare=False, repr=False)
