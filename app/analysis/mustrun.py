"""What a passing run surely executed, from its scripts alone (no log).

CI results files (JUnit XML, pytest's report-log) record passing runs without a log. A pass is
evidence by itself: the test reached its normal end, so every statement on every path from the
test function's entry to its normal exit ran (the must-run chain), and so did the must-run chains
of its class's setUp/tearDown, of its module's top level, and of the helpers those chains surely
called. Everything else is unknown. The history store records such a run's trace from this, so
the spectra keep the passes that carry no log.
"""

from __future__ import annotations

import re
import weakref
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, TypeVar

from app.analysis.callsites import call_sites
from app.analysis.cfg import EXIT, RAISE, FlowGraph, program_graph
from app.analysis.estimate import to_lines
from app.analysis.graphs import reachable
from app.analysis.lifecycle import is_setup, is_teardown
from app.analysis.model import Function, Loc, Program, State

MAX_STATEMENTS = 2000  # a function larger than this is left unknown (the cut test is quadratic)
# a call on a line holding one of these may be skipped (conditional expression, short circuit,
# a lambda's body): the callee is not followed
_CONDITIONAL = re.compile(r"\b(if|and|or|lambda)\b")
_YIELD = re.compile(r"\byield\b")


def each_once(todo: list[Function]) -> Iterator[Function]:
    """The functions of a work list, each once, last added first; the caller may add to ``todo``."""
    seen: set[str] = set()
    while todo:
        f = todo.pop()
        if f.fid not in seen:
            seen.add(f.fid)
            yield f


def function_of_test(program: Program, test: str) -> Function | None:
    """The function a CI test id names (``path::Class::test[p]``, ``Class.test``, ``test``); None if
    no function or more than one matches."""
    path, rest = test.split("::", 1) if ".py::" in test else ("", test)
    parts = [p for p in re.split(r"::|\.", rest.split("[", 1)[0]) if p]
    if not parts:
        return None
    qualname = ".".join(parts)
    found = [
        f
        for f in _by_name(program).get(parts[-1], ())
        if f.kind == "function"
        and f.name == parts[-1]
        and (f.qualname == qualname or qualname.endswith("." + f.qualname) or len(parts) == 1)
        and (not path or f.path == path or f.path.endswith("/" + path) or path.endswith("/" + f.path))
    ]
    return found[0] if len(found) == 1 else None


T = TypeVar("T")
_MEMOS: dict[int, dict[Any, Any]] = {}


def _memo(program: Program) -> dict[Any, Any]:
    """What this module derived from ``program`` alone, kept while the program lives: a CI job
    records thousands of passes of the same scripts, each asking about its own test."""
    key = id(program)
    found = _MEMOS.get(key)
    if found is None:
        found = _MEMOS[key] = {}
        weakref.finalize(program, _MEMOS.pop, key, None)
    return found


def _kept(program: Program, key: Hashable, build: Callable[[], T]) -> T:
    """``build()`` once per program and ``key`` (``_memo``)."""
    memo = _memo(program)
    if key not in memo:
        memo[key] = build()
    return memo[key]  # type: ignore[no-any-return]


def _by_name(program: Program) -> dict[str, list[Function]]:
    """The program's functions by name, in program order (module pseudo-functions under theirs),
    once per program: a CI job looks up every pass's test function."""

    def build() -> dict[str, list[Function]]:
        found: dict[str, list[Function]] = {}
        for f in program.functions:
            found.setdefault(f.name, []).append(f)
        return found

    return _kept(program, "by_name", build)


def _modules(program: Program) -> dict[str, list[Function]]:
    """Each file's module pseudo-functions, in program order, once per program."""

    def build() -> dict[str, list[Function]]:
        found: dict[str, list[Function]] = {}
        for f in program.functions:
            if f.kind == "module":
                found.setdefault(f.path, []).append(f)
        return found

    return _kept(program, "modules", build)


def on_every_path(program: Program, fn: Function) -> frozenset[int]:
    """Statements of ``fn`` that every walk from its entry to its normal exit passes (exception
    edges to handlers included as walks); empty when the flow graph has no such walk."""
    return _kept(program, ("every", fn.fid), lambda: _on_every_path(program, fn))


def _on_every_path(program: Program, fn: Function) -> frozenset[int]:
    if len(fn.statements) > MAX_STATEMENTS:
        return frozenset()
    graph = _graph(program, fn)
    if graph.entry is None:
        return frozenset()
    succ: dict[int, list[int]] = {EXIT: [], RAISE: []}
    for s in fn.statements:
        succ[s] = list(graph.all_succ(s))
    for targets in list(succ.values()):
        for t in targets:
            succ.setdefault(t, [])
    reach = reachable(succ, graph.entry)
    if EXIT not in reach:
        return frozenset()
    out = {graph.entry}
    for v in reach - {graph.entry, EXIT, RAISE}:
        if not _reaches_avoiding(succ, graph.entry, EXIT, v):
            out.add(v)
    return frozenset(out)


def _reaches_avoiding(succ: dict[int, list[int]], entry: int, target: int, avoid: int) -> bool:
    """Whether a walk from ``entry`` reaches ``target`` without passing ``avoid``: ``reachable`` on
    the graph with ``avoid`` cut out, without building that graph for each statement."""
    seen = {entry, avoid}
    queue = deque([entry])
    while queue:
        for w in succ[queue.popleft()]:
            if w not in seen:
                if w == target:
                    return True
                seen.add(w)
                queue.append(w)
    return False


def must_run(program: Program, test: str) -> frozenset[int]:
    """Statements a passing run of ``test`` surely executed (sids); empty if the test is not found.

    A helper is followed from a must-run statement that calls it directly by its name, when the
    call resolves to that one function, no handler of the caller could catch a raise from it, the
    line holds no conditional or lambda, and the helper is neither a generator nor async (calling
    those runs nothing yet).
    """
    fn = function_of_test(program, test)
    if fn is None:
        return frozenset()
    callees = _callees(program)
    lines = {f.path: f.lines for f in program.files}
    cls = fn.qualname.rpartition(".")[0]
    hooks = (
        [
            f
            for f in program.functions
            if f.path == fn.path and f.qualname.rpartition(".")[0] == cls and (is_setup(f) or is_teardown(f))
        ]
        if cls
        else []
    )
    module = _modules(program).get(fn.path, [])
    out: set[int] = set()
    todo = [fn, *hooks, *module]
    for f in each_once(todo):
        chain = on_every_path(program, f)
        out |= chain
        exc = _graph(program, f).exc if chain else {}
        for sid in chain:
            found = callees.get(sid, [])
            if len(found) != 1 or exc.get(sid):
                continue
            callee = found[0]
            st = program.statements[sid]
            text = lines[st.path][st.start_line - 1] if 0 < st.start_line <= len(lines[st.path]) else ""
            direct = re.search(rf"\b{re.escape(callee.name)}\s*\(", text)
            if direct and not _CONDITIONAL.search(text) and _plain(program, callee, lines):
                todo.append(callee)
    return frozenset(out)


def _graph(program: Program, fn: Function) -> FlowGraph:
    return program_graph(program, fn)


def _callees(program: Program) -> dict[int, list[Function]]:
    """sid -> the functions its calls may reach (``call_sites``), once per program."""

    def build() -> dict[int, list[Function]]:
        by_fid = {f.fid: f for f in program.functions}
        found: dict[int, list[Function]] = {}
        for fid, sites in call_sites(program).items():
            for s in sites:
                found.setdefault(s, []).append(by_fid[fid])
        return found

    return _kept(program, "callees", build)


def _plain(program: Program, fn: Function, lines: dict[str, tuple[str, ...]]) -> bool:
    """A helper whose call runs its body now: not async, no ``yield`` in it."""
    if fn.is_async or fn.is_hook:
        return False
    text = lines[fn.path]
    return not any(
        _YIELD.search(text[n - 1])
        for s in fn.statements
        for n in program.statements[s].lines
        if n <= len(text)
    )


def must_run_lines(program: Program, test: str) -> frozenset[Loc]:
    """The code lines a passing run of ``test`` surely executed (def headers of entered functions
    included, as the estimator counts them)."""
    return _code(program, to_lines(program, must_run(program, test)))


def _code(program: Program, locs: Iterable[Loc]) -> frozenset[Loc]:
    code = {f.path: f.code_lines for f in program.files}
    return frozenset(loc for loc in locs if loc.line in code.get(loc.path, ()))


def passing_states(program: Program, test: str) -> dict[Loc, State]:
    """A log-less pass's estimated trace: its must-run lines executed, every other code line
    doubtful (it may have run; nothing says). Empty when the test is not found: then the run
    says nothing line by line."""
    ran = must_run_lines(program, test)
    if not ran:
        return {}
    code = _kept(
        program, "code", lambda: [Loc(f.path, n) for f in program.files for n in sorted(f.code_lines)]
    )
    return {loc: State.EXE if loc in ran else State.DBT for loc in code}


def reached_files(program: Program, test: str) -> frozenset[str] | None:
    """The files a run of ``test`` can reach from its scripts alone: the test's own file and those
    of every function its code may call, transitively (calls resolved as ``call_sites`` resolves
    them), of its class's setUp/tearDown family and of the fixtures its header names. None when
    no function of the scripts is the test. A script the test never calls (a conftest.py passed
    along, an unrelated helper) is not reached, so it is no part of the test's script version."""
    fn = function_of_test(program, test)
    if fn is None:
        return None
    callees = _callees(program)
    by_fid, lines, hooks, children = _reach_index(program)
    header = " ".join(lines[fn.path][n - 1] for n in fn.header_lines if 0 < n <= len(lines[fn.path]))
    named = set(re.findall(r"\w+", header))
    cls = fn.qualname.rpartition(".")[0]
    todo = [
        fn,
        *(
            f
            for f in hooks
            if f.name in named or (cls and f.path == fn.path and f.qualname.rpartition(".")[0] == cls)
        ),
    ]
    reached: list[str] = []
    for f in each_once(todo):
        reached.append(f.fid)
        todo.extend(c for sid in f.statements for c in callees.get(sid, ()))
        todo.extend(children.get(f.fid, ()))
    return frozenset({fn.path, *(by_fid[fid].path for fid in reached)})


ReachIndex = tuple[dict[str, Function], dict[str, tuple[str, ...]], list[Function], dict[str, list[Function]]]


def _reach_index(program: Program) -> ReachIndex:
    """What ``reached_files`` reads of the program alone, once per program (a CI job asks it for
    every run): functions by id, files' lines, the hook functions and each function's nested
    functions, both in program order."""

    def build() -> ReachIndex:
        children: dict[str, list[Function]] = {}
        for g in program.functions:
            if g.parent is not None:
                children.setdefault(g.parent, []).append(g)
        return (
            {f.fid: f for f in program.functions},
            {f.path: f.lines for f in program.files},
            [f for f in program.functions if f.kind == "function" and f.is_hook],
            children,
        )

    return _kept(program, "reach", build)
