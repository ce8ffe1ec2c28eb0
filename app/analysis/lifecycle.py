"""A test's lifecycle against its log: what ran before the log's window, what runs after the failure.

Three properties of Python test code make the enhanced trace sound where Algorithm 1 alone is not:

- A log holds a window of the run. A message that is missing says its statement did not run
  only inside that window: after the first message the log matched and before the failure.
  Statements that run before the first matched message (earlier in its function, in ``setUp``,
  in helpers called only from there) may have logged into a part of the log that was never
  pasted; statements that run after the failure may have logged after where the log ends.
- After a failure, ``finally:`` blocks around the failing line, ``tearDown`` hooks, cleanups
  (``addCleanup``, ``request.addfinalizer``) and fixtures' code after ``yield`` still run: they
  are executed, not cut away by termination.
- An exception in ``setUp`` (or a fixture before its ``yield``) means the test body never ran,
  and unittest runs no ``tearDown`` after a failed ``setUp``.

Everything here is decided from the parsed program, the matches and the traceback frames (no
I/O); ``enhanced.py`` applies it, each rule behind its own switch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.analysis.memo import kept_while
from app.analysis.model import Frame, Function, MatchResult, Program, StmtKind
from app.analysis.source import LineIndex

_SETUP = re.compile(r"(?:setUp|asyncSetUp|setup)(?:Class|Module|_method|_class|_module|_function)?")
_TEARDOWN = re.compile(
    r"(?:tearDown|asyncTearDown|teardown)(?:Class|Module|_method|_class|_module|_function)?"
)
# registrations of code that runs when the test ends, whatever its outcome
_CLEANUP_CALL = re.compile(
    r"\b(?:addCleanup|addClassCleanup|addModuleCleanup|addAsyncCleanup|addfinalizer|enterContext)\("
    r"\s*(?:self\.|cls\.)?(?P<name>[A-Za-z_]\w*)"
)
_YIELD = re.compile(r"^\s*(?:\w[\w.,\s]*=\s*)?yield\b")
_PARAMS = re.compile(r"\(([^)]*)\)")


@dataclass(frozen=True)
class Lifecycle:
    """What the lifecycle rules add to Algorithm 1's evidence (statement ids, function ids)."""

    before_window: frozenset[int]  # unmatched log statements that run before the first matched message
    after_failure: frozenset[int]  # statements that run after the failure: finally, teardown, cleanups
    after_failure_log: frozenset[int]  # unmatched log statements among those (no evidence either way)
    ran_after_failure: frozenset[int]  # statements known to run after the failure (finally headers, ...)
    not_run_tests: frozenset[str]  # test functions whose setUp/fixture failed before they started
    setup_failed: str | None  # fid of the setUp/fixture the failure happened in


def is_setup(fn: Function) -> bool:
    return fn.is_hook and _SETUP.fullmatch(fn.name) is not None


def is_teardown(fn: Function) -> bool:
    return fn.is_hook and _TEARDOWN.fullmatch(fn.name) is not None


def _is_fixture(fn: Function, lines: dict[str, tuple[str, ...]]) -> bool:
    """A pytest fixture: a hook whose decorators name ``fixture``."""
    if not fn.is_hook or fn.kind != "function" or is_setup(fn) or is_teardown(fn):
        return False
    text = lines[fn.path]
    return any("fixture" in text[ln - 1] for ln in fn.header_lines if 0 < ln <= len(text))


def _file_lines(program: Program) -> dict[str, tuple[str, ...]]:
    return {f.path: f.lines for f in program.files}


def _class_of(fn: Function) -> str:
    return fn.qualname.rpartition(".")[0]


def lifecycle(
    program: Program,
    index: LineIndex,
    match: MatchResult,
    frames: Sequence[Frame],
    static_log_sids: Iterable[int],
    sites: dict[str, tuple[int, ...]],
    tests: Iterable[str],
) -> Lifecycle:
    """The lifecycle evidence of one failure (see the module docstring for the rules)."""
    stmts = program.statements
    parts = _program_parts(program)
    by_id, lines = parts.by_id, parts.lines
    unmatched = frozenset(s for s in static_log_sids if s in match.nexe)
    frame_sids = [st.sid for fr in frames if (st := index.get((fr.path, fr.line))) is not None]

    # -- setUp / fixture failed: the test body never ran -----------------------------------
    setup_failed: str | None = None
    not_run: set[str] = set()
    if frame_sids:
        outer = by_id[stmts[frame_sids[0]].function]
        fixture = _is_fixture(outer, lines)
        if is_setup(outer) or fixture:
            setup_failed = outer.fid
            for fid in tests:
                fn = by_id[fid]
                if fixture:
                    header = " ".join(lines[fn.path][ln - 1] for ln in fn.header_lines)
                    params = _PARAMS.search(header)
                    if params is None or not re.search(rf"\b{re.escape(outer.name)}\b", params.group(1)):
                        continue
                elif _class_of(fn) != _class_of(outer) and not outer.name.endswith(("Module", "_module")):
                    continue
                if not any(s in match.exe for s in fn.statements):
                    not_run.add(fid)

    # -- what runs after the failure -------------------------------------------------------
    after: set[int] = set()
    ran: set[int] = set()
    for sid in frame_sids:
        fin = _enclosing_finally(program, by_id[stmts[sid].function], sid)
        for f in fin:
            ran.add(f)
            after.update(_clause_body(program, by_id[stmts[f].function], f))
    if setup_failed is None or not is_setup(by_id[setup_failed]):
        after.update(parts.teardown)
    after.update(parts.cleanup)
    for fid, teardown in parts.fixtures:
        if fid != setup_failed:
            after.update(teardown)
    after -= set(frame_sids)

    # -- the log's window: statements that ran before the first matched message ------------
    before: set[int] = set()
    first = _first_matched(match)
    if first is not None:
        before = _before(program, by_id, first, unmatched, sites)
    return Lifecycle(
        before_window=frozenset(before),
        after_failure=frozenset(after),
        after_failure_log=frozenset(s for s in unmatched if s in after),
        ran_after_failure=frozenset(ran),
        not_run_tests=frozenset(not_run),
        setup_failed=setup_failed,
    )


@dataclass(frozen=True)
class _Parts:
    """What ``lifecycle`` reads of the program alone, derived once per program (``kept_while``):
    a CI job asks it for every failure of the same scripts."""

    by_id: dict[str, Function]
    lines: dict[str, tuple[str, ...]]
    teardown: tuple[int, ...]  # the statements of the tearDown hooks
    cleanup: tuple[int, ...]  # the statements of the functions registered as cleanups
    fixtures: tuple[tuple[str, tuple[int, ...]], ...]  # each fixture's statements after its yield


_PARTS: dict[int, _Parts] = {}


def _program_parts(program: Program) -> _Parts:
    return kept_while(_PARTS, program, lambda: _find_parts(program))


def _find_parts(program: Program) -> _Parts:
    lines = _file_lines(program)
    cleanup_names = _cleanup_names(program)
    functions = program.functions
    return _Parts(
        by_id={f.fid: f for f in functions},
        lines=lines,
        teardown=tuple(s for fn in functions if is_teardown(fn) for s in fn.statements),
        cleanup=tuple(
            s for fn in functions if fn.kind == "function" and fn.name in cleanup_names for s in fn.statements
        ),
        fixtures=tuple(
            (fn.fid, tuple(_after_yield(program, fn, lines[fn.path])))
            for fn in functions
            if _is_fixture(fn, lines)
        ),
    )


def _first_matched(match: MatchResult) -> int | None:
    """The statement of the log's first uniquely matched message (the window's start)."""
    for _index, sids in match.matches:  # in log order
        if len(sids) == 1:
            return sids[0]
    return None


def _before(
    program: Program,
    by_id: dict[str, Function],
    first: int,
    unmatched: frozenset[int],
    sites: dict[str, tuple[int, ...]],
) -> set[int]:
    """Unmatched log statements that run before ``first`` does: earlier in its function (not in a
    loop with it), in the setUp hooks of its class when it is in a test, and in helpers whose every
    call site is such a statement's position. A few rounds reach helpers of helpers."""
    stmts = program.statements
    home = by_id[stmts[first].function]
    first_line = stmts[first].start_line
    loop_lines = _loop_ranges(program, home)

    def earlier(sid: int) -> bool:
        st = stmts[sid]
        if st.function != home.fid or st.start_line >= first_line:
            return False
        return not any(a <= st.start_line <= b and a <= first_line <= b for a, b in loop_lines)

    early_fns: set[str] = set()
    if not home.is_hook:
        cls = _class_of(home)
        early_fns.update(
            f.fid for f in program.functions if is_setup(f) and f.path == home.path and _class_of(f) == cls
        )
    for _round in range(4):
        grew = False
        for fid, calls in sites.items():
            if fid in early_fns or fid == home.fid or not calls:
                continue
            if all(earlier(c) or stmts[c].function in early_fns for c in calls):
                early_fns.add(fid)
                grew = True
        if not grew:
            break
    return {s for s in unmatched if earlier(s) or stmts[s].function in early_fns}


def _loop_ranges(program: Program, fn: Function) -> list[tuple[int, int]]:
    stmts = program.statements
    out = []
    for s in fn.statements:
        st = stmts[s]
        if st.kind in (StmtKind.FOR, StmtKind.WHILE):
            last = max((stmts[b].end_line for b in _descendants(program, fn, s)), default=st.end_line)
            out.append((st.start_line, last))
    return out


def _descendants(program: Program, fn: Function, header: int) -> list[int]:
    """Statements nested (at any depth) in the clause ``header``, iteratively."""
    stmts = program.statements
    out: list[int] = []
    stack = list(stmts[header].body)
    while stack:
        s = stack.pop()
        out.append(s)
        stack.extend(stmts[s].body)
    return out


def _clause_body(program: Program, fn: Function, header: int) -> list[int]:
    return [header, *_descendants(program, fn, header)]


def _enclosing_finally(program: Program, fn: Function, sid: int) -> list[int]:
    """``finally:`` clauses of the try statements whose body, handler or else holds ``sid``."""
    stmts = program.statements
    order = {s: i for i, s in enumerate(fn.statements)}
    out: list[int] = []
    child = sid
    parent = stmts[sid].parent
    while parent is not None:
        kind = stmts[parent].kind
        if kind in (StmtKind.TRY, StmtKind.EXCEPT, StmtKind.ELSE):
            try_sid = parent if kind is StmtKind.TRY else _try_of(program, fn, parent, order)
            if try_sid is not None:
                fin = _finally_of(program, fn, try_sid, order)
                if fin is not None and fin != child and fin not in out:
                    out.append(fin)
        child = parent
        parent = stmts[parent].parent
    return out


def _siblings_after(program: Program, fn: Function, sid: int, order: dict[int, int]) -> list[int]:
    stmts = program.statements
    parent = stmts[sid].parent
    out = []
    for s in fn.statements[order[sid] + 1 :]:
        if stmts[s].parent == parent and stmts[s].depth == stmts[sid].depth:
            out.append(s)
    return out


def _try_of(program: Program, fn: Function, clause: int, order: dict[int, int]) -> int | None:
    """The ``try`` a clause (except/else) belongs to: the nearest earlier sibling ``try``."""
    stmts = program.statements
    parent = stmts[clause].parent
    for s in reversed(fn.statements[: order[clause]]):
        st = stmts[s]
        if st.parent == parent and st.depth == stmts[clause].depth:
            if st.kind is StmtKind.TRY:
                return s
            if st.kind not in (StmtKind.EXCEPT, StmtKind.ELSE):
                return None
    return None


def _finally_of(program: Program, fn: Function, try_sid: int, order: dict[int, int]) -> int | None:
    stmts = program.statements
    for s in _siblings_after(program, fn, try_sid, order):
        kind = stmts[s].kind
        if kind is StmtKind.FINALLY:
            return s
        if kind not in (StmtKind.EXCEPT, StmtKind.ELSE):
            return None
    return None


def _cleanup_names(program: Program) -> set[str]:
    """Names of functions registered to run when the test ends (``addCleanup(self.f)``, ...)."""
    names: set[str] = set()
    for sf in program.files:
        for text in sf.lines:
            if "(" in text and ("leanup" in text or "finalizer" in text or "enterContext" in text):
                names.update(m.group("name") for m in _CLEANUP_CALL.finditer(text))
    return names


def _after_yield(program: Program, fn: Function, lines: tuple[str, ...]) -> list[int]:
    """Statements of a fixture after its (first top-level) ``yield``: its teardown."""
    stmts = program.statements
    top = fn.top_level or fn.statements
    for i, s in enumerate(top):
        st = stmts[s]
        if st.kind is StmtKind.SIMPLE and _YIELD.match(lines[st.start_line - 1]):
            out: list[int] = []
            for t in top[i + 1 :]:
                out.extend(_clause_body(program, fn, t))
            return out
    return []
