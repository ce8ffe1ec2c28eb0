"""Execution trace estimation: the paper's Algorithms 2-4, their 12 variants, and ``tplus``.

All algorithms work on statement ids; a trace becomes a set of source lines only at the end
(``to_lines``), where def/class header lines join exactly when a line of their body did.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from app.analysis.cfg import EXIT, RAISE, BlockGraph, FlowGraph, block_graph, flow_graph
from app.analysis.model import (
    BASE_VARIANTS,
    Block,
    Evidence,
    Frame,
    Function,
    Loc,
    MatchResult,
    Program,
    State,
    StmtKind,
    Trace,
)
from app.analysis.source import statement_at


@dataclass(frozen=True)
class EstimateOptions:
    """Switches for the enhanced trace; faithful variants ignore all but ``path_budget``."""

    call_site_inference: bool = True
    termination: bool = True
    walk_semantics: bool = True
    normal_return: bool = True
    log_coverage: bool = True  # missing messages count only where the log could show them
    test_selection: bool = True  # other tests of the script are not in the failing test's trace
    path_budget: int = 100_000  # Algorithm 3 stack pops per function before the conservative fallback


@dataclass(frozen=True)
class Estimation:
    traces: dict[str, Trace]
    warnings: tuple[str, ...] = ()
    inferred_exe: frozenset[int] = frozenset()  # tplus: call sites proven executed
    inferred_nexe: frozenset[int] = frozenset()


_NO_EVIDENCE = Evidence(State.EXE, "no-evidence", "no known statement in this function: kept whole")


@dataclass
class _Ctx:
    program: Program
    graphs: dict[str, FlowGraph]
    exe: frozenset[int]
    nexe: frozenset[int]
    options: EstimateOptions
    errors: frozenset[int] = frozenset()
    warnings: list[str] = field(default_factory=list)
    fn_by_id: dict[str, Function] = field(default_factory=dict)

    looping: set[int] | None = None

    def __post_init__(self) -> None:
        self.fn_by_id = {f.fid: f for f in self.program.functions}

    def in_loop(self, sid: int) -> bool:
        """Whether a statement can run more than once per call of its function (it lies on a cycle)."""
        if self.looping is None:
            self.looping = set()
            for fn in self.program.functions:
                graph = self.graphs[fn.fid]
                succ = {s: [t for t in graph.all_succ(s) if t >= 0] for s in fn.statements}
                _comp, members = strongly_connected(succ)
                for group in members:
                    if len(group) > 1 or group[0] in succ.get(group[0], ()):
                        self.looping.update(group)
        return sid in self.looping

    def functions(self) -> Iterable[Function]:
        return (f for f in self.program.functions if f.statements)


# ---------------------------------------------------------------------------------------------
# Algorithm 2: fill in the gaps


def fill_gaps(ctx: _Ctx, dbt_exe: bool) -> tuple[set[int], dict[int, Evidence]]:
    kept: set[int] = set()
    why: dict[int, Evidence] = {}
    exe, nexe = ctx.exe, ctx.nexe
    doubtful = State.EXE if dbt_exe else State.NEXE
    for fn in ctx.functions():
        stmts = fn.statements
        if len(stmts) == 1:
            s = stmts[0]
            if s in nexe:
                why[s] = Evidence(
                    State.NEXE, "log-match", "single-statement function, its log statement unmatched"
                )
            else:
                kept.add(s)
                why[s] = _known(ctx, s) if s in exe else _NO_EVIDENCE
            continue
        known = [s for s in stmts if s in exe or s in nexe]
        if not known:
            kept.update(stmts)
            why.update(dict.fromkeys(stmts, _NO_EVIDENCE))
            continue
        i = 0
        n = len(stmts)
        while i < n:
            s = stmts[i]
            if s in exe or s in nexe:
                if s in exe:
                    kept.add(s)
                why[s] = _known(ctx, s)
                i += 1
                continue
            j = i
            while j < n and not (stmts[j] in exe or stmts[j] in nexe):
                j += 1
            b = stmts[i - 1] if i > 0 else None
            e = stmts[j] if j < n else None
            if (b is None or b in exe) and e is not None and e in exe:
                state, rule = State.EXE, "gap: ends at an executed statement"
            elif b is not None and b in nexe and (e is None or e in nexe):
                state, rule = State.NEXE, "gap: starts at a not-executed statement"
            else:
                state, rule = State.DBT, "gap: bounds disagree (doubtful)"
            detail = f"{rule}; bounds {_describe(ctx, b)} .. {_describe(ctx, e)}"
            final = doubtful if state is State.DBT else state
            for s2 in stmts[i:j]:
                why[s2] = Evidence(state, "gap", detail)
                if final is State.EXE:
                    kept.add(s2)
            i = j
    return kept, why


def _describe(ctx: _Ctx, sid: int | None) -> str:
    if sid is None:
        return "function boundary"
    st = ctx.program.statements[sid]
    state = "executed" if sid in ctx.exe else "not executed"
    return f"line {st.start_line} ({state})"


def _known(ctx: _Ctx, sid: int) -> Evidence:
    if sid in ctx.errors:
        return Evidence(State.EXE, "traceback", "a frame of the failure's traceback: it ran")
    if sid in ctx.exe:
        return Evidence(State.EXE, "log-match", "its message is in the log, matched to no other statement")
    return Evidence(State.NEXE, "log-match", "static log statement whose message is not in the log")


# ---------------------------------------------------------------------------------------------
# Algorithm 3: CFG paths


def cfg_paths(ctx: _Ctx, blocks: Sequence[Block]) -> tuple[set[int], dict[int, Evidence]]:
    kept: set[int] = set()
    why: dict[int, Evidence] = {}
    exe, nexe = ctx.exe, ctx.nexe
    by_fn: dict[str, list[Block]] = {}
    for b in blocks:
        by_fn.setdefault(b.function, []).append(b)
    block_sids = {b.bid: b.sids for b in blocks}
    for fn in ctx.functions():
        stmts = fn.statements
        if not any(s in exe or s in nexe for s in stmts):
            kept.update(stmts)
            why.update(dict.fromkeys(stmts, _NO_EVIDENCE))
            continue
        bg = block_graph(ctx.graphs[fn.fid], by_fn.get(fn.fid, ()))
        node_sids = [tuple(s for bid in node for s in block_sids[bid]) for node in bg.nodes]
        states = _algorithm3(bg, node_sids, exe, nexe, ctx.options.path_budget)
        if states is None:
            ctx.warnings.append(
                f"{fn.path}: {fn.qualname}: CFG path search stopped after {ctx.options.path_budget} steps;"
                " the whole function is kept"
            )
            kept.update(stmts)
            why.update(dict.fromkeys(stmts, Evidence(State.EXE, "cfg-fallback", "path search bound hit")))
            continue
        for i, sids in enumerate(node_sids):
            if states[i]:
                kept.update(sids)
                ev = Evidence(
                    State.EXE,
                    "cfg-path",
                    "on a CFG path through every executed node, avoiding not-executed ones",
                )
            else:
                ev = Evidence(State.NEXE, "cfg-path", "on no CFG path that covers every executed node")
            why.update(dict.fromkeys(sids, ev))
        unreachable = set(stmts) - {s for sids in node_sids for s in sids}
        why.update(dict.fromkeys(unreachable, Evidence(State.NEXE, "cfg-path", "unreachable")))
    return kept, why


def _algorithm3(
    bg: BlockGraph, node_sids: list[tuple[int, ...]], exe: frozenset[int], nexe: frozenset[int], budget: int
) -> list[bool] | None:
    """The paper's DFS with pexe-path reuse; None when the step budget runs out."""
    n = len(bg.nodes)
    if bg.root is None:
        return [False] * n
    v_exe = {i for i in range(n) if any(s in exe for s in node_sids[i])}
    v_nexe = {i for i in range(n) if i not in v_exe and any(s in nexe for s in node_sids[i])}
    EXE, NEXE = 1, 2
    state = [0] * n
    pexe: list[list[int] | None] = [None] * n
    for i in v_nexe:
        state[i] = NEXE

    def set_state(path: list[int]) -> None:
        on = set(path)
        if v_exe <= on and not (on & v_nexe):
            for m in path:
                state[m] = EXE
                pexe[m] = path
        else:
            last = max((k for k, m in enumerate(path) if state[m] == EXE), default=None)
            if last is not None:
                for m in path[last + 1 :]:
                    state[m] = NEXE

    stack: list[tuple[int, list[int]]] = [(bg.root, [bg.root])]
    steps = 0
    while stack:
        steps += 1
        if steps > budget:
            return None
        node, path = stack.pop()
        children = bg.children[node]
        if not children or state[node] == NEXE:
            if node in v_nexe:
                path = path[:-1]
            set_state(path)
        else:
            for c in children:
                if state[c] == EXE and pexe[c] is not None:
                    cp = pexe[c]
                    set_state(path + cp[cp.index(c) :])
                else:
                    stack.append((c, [*path, c]))
    return [s == EXE for s in state]


# ---------------------------------------------------------------------------------------------
# Algorithm 4: call-site refinement


def call_sites(program: Program) -> dict[str, tuple[int, ...]]:
    """Statements calling (or passing on) each function.

    A method is called through an attribute (`self.m(...)`, `obj.m(...)`: the object's type is
    unknown, so any attribute call of that name counts); a plain function by its bare name, or
    qualified by its file's module name from another script (`helpers.f(...)`). So
    `process.run(...)` is no call site of a test's own `run`.
    """
    bare: dict[str, list[int]] = {}
    qualified: dict[str, list[int]] = {}
    attribute: dict[str, list[int]] = {}
    for st in program.statements:
        for call in st.calls:
            obj, dot, name = call.rpartition(".")
            if not dot:
                bare.setdefault(name, []).append(st.sid)
            else:
                attribute.setdefault(name, []).append(st.sid)
                if obj:
                    qualified.setdefault(call, []).append(st.sid)
    out: dict[str, tuple[int, ...]] = {}
    for fn in program.functions:
        if fn.kind != "function":
            continue
        if fn.is_method:
            found = attribute.get(fn.name, [])
        else:
            stem = PurePosixPath(fn.path.replace("\\", "/")).stem
            found = bare.get(fn.name, []) + qualified.get(f"{stem}.{fn.name}", [])
        out[fn.fid] = tuple(sorted(set(found)))
    return out


def helpers(program: Program, sites: dict[str, tuple[int, ...]]) -> list[Function]:
    """Functions with a call site in the scripts that the framework does not run by itself."""
    return [f for f in program.functions if f.kind == "function" and not f.is_hook and sites.get(f.fid)]


def csr(
    program: Program, trace: set[int], sites: dict[str, tuple[int, ...]]
) -> tuple[set[int], dict[int, Evidence]]:
    out = set(trace)
    why: dict[int, Evidence] = {}
    for fn in helpers(program, sites):
        if any(s in out for s in fn.statements) and not any(c in out for c in sites[fn.fid]):
            lines = ", ".join(str(program.statements[c].start_line) for c in sites[fn.fid][:5])
            ev = Evidence(
                State.NEXE, "call-site", f"helper `{fn.name}`: no call site ({lines}) left in the trace"
            )
            for s in fn.statements:
                if s in out:
                    out.discard(s)
                    why[s] = ev
    return out, why


# ---------------------------------------------------------------------------------------------
# tplus: walks over the condensation, call-site inference, termination, normal return


def _stops(ctx: _Ctx, frames: Sequence[Frame]) -> dict[str, int]:
    """Where each function in a traceback stopped: the innermost frame at the error, others at the call.

    Every traceback counts (a test cancelled in its body and then failing in tearDown leaves two);
    a function met in several keeps its frame from the latest, which is how chained exceptions
    read too.
    """
    stops: dict[str, int] = {}
    for frame in sorted(frames, key=lambda f: f.traceback):
        st = statement_at(ctx.program, frame.path, frame.line)
        if st is not None:
            stops[st.function] = st.sid  # later tracebacks and inner frames win
    return stops


def _terminal_stops(ctx: _Ctx, stops: dict[str, int], sites: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """The stops that really end what ran: only functions that can have run once.

    A helper called in a loop, or from two places, may have run past its frame line on an
    earlier call; so may anything called by such a function. An error on a ``with`` header can
    come from ``__exit__``, after the body ran. Those stops are dropped (the function stays
    "stopped" for the normal-return rule, but nothing after the line is pruned).
    """
    memo: dict[str, bool] = {}

    def once(fid: str, depth: int = 0) -> bool:
        if fid in memo:
            return memo[fid]
        memo[fid] = False  # recursion guard
        fn = ctx.fn_by_id[fid]
        calls = sites.get(fid, ()) if fn.kind == "function" else ()
        if not calls:
            result = True  # an entry point: the framework runs it once
        elif len(calls) > 1 or depth > 50:
            result = False
        else:
            site = ctx.program.statements[calls[0]]
            result = not ctx.in_loop(site.sid) and once(site.function, depth + 1)
        memo[fid] = result
        return result

    return {
        fid: sid
        for fid, sid in stops.items()
        if ctx.program.statements[sid].kind is not StmtKind.WITH and once(fid)
    }


def _walk(
    graph: FlowGraph, fn: Function, exe: set[int], nexe: set[int], stop: int | None, walk_semantics: bool
) -> tuple[set[int], str]:
    """Statements on some walk entry -> stop that covers every executed one and avoids the rest.

    Returns the kept set and a note: "" normally, else which fallback was needed.
    """
    if graph.entry is None:
        return set(), ""
    allowed = {s for s in (*fn.statements, EXIT, RAISE) if s not in nexe or s in exe}
    succ: dict[int, list[int]] = {s: [] for s in allowed}
    for s in fn.statements:
        if s in allowed:
            succ[s] = [t for t in graph.all_succ(s) if t in allowed]
    if graph.entry not in allowed:
        if not any(s in exe for s in fn.statements):
            return set(), ""  # never entered: its first statement did not run
        note = "its first statement did not run, yet others did: kept whole"
        return set(fn.statements), note
    if not walk_semantics:
        for u, v in _dfs_back_edges(succ, graph.entry):
            succ[u].remove(v)
    comp, members = strongly_connected(succ)
    csucc: list[set[int]] = [set() for _ in members]
    cpred: list[set[int]] = [set() for _ in members]
    for u, outs in succ.items():
        for v in outs:
            if comp[u] != comp[v]:
                csucc[comp[u]].add(comp[v])
                cpred[comp[v]].add(comp[u])
    # Tarjan numbers components in reverse topological order
    exe_nodes = sorted({comp[s] for s in fn.statements if s in exe and s in comp}, reverse=True)
    chain = [comp[graph.entry]]
    for c in exe_nodes:
        if c != chain[-1]:
            chain.append(c)
    attempts: list[tuple[int | None, str]] = []
    if stop is not None and stop in comp:
        attempts.append((comp[stop], ""))
        attempts.append((None, "evidence after the stop point: termination ignored"))
    else:
        attempts.append((None, ""))
    for stop_node, note in attempts:
        full = chain + ([stop_node] if stop_node is not None and stop_node != chain[-1] else [])
        qualifying = _between(csucc, cpred, full, open_end=stop_node is None)
        if qualifying is not None:
            return {s for c in qualifying for s in members[c] if s >= 0}, note
    note = "executed statements do not lie on one walk: kept all reachable"
    return _reachable_all(succ, graph.entry, fn), note


def strongly_connected(succ: dict[int, list[int]]) -> tuple[dict[int, int], list[list[int]]]:
    """Tarjan's SCCs, iteratively; components are numbered in reverse topological order."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    comp: dict[int, int] = {}
    members: list[list[int]] = []
    counter = 0
    for root in succ:
        if root in index:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            outs = succ[node]
            recurse = False
            while i < len(outs):
                nxt = outs[i]
                i += 1
                if nxt not in index:
                    work.append((node, i))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                group: list[int] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp[w] = len(members)
                    group.append(w)
                    if w == node:
                        break
                members.append(group)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return comp, members


def _between(
    csucc: list[set[int]], cpred: list[set[int]], chain: list[int], open_end: bool
) -> set[int] | None:
    """Condensation nodes between consecutive chain elements (linear time); None if not a chain."""
    m = len(chain) - 1
    fwd: dict[int, int] = {}
    for i in range(m, -1, -1):
        start = chain[i]
        if start in fwd:  # reachable from a later chain element: not a chain
            return None
        fwd[start] = i
        queue = deque([start])
        reached_next = i == m
        while queue:
            u = queue.popleft()
            for v in csucc[u]:
                if v in fwd:
                    if i < m and v == chain[i + 1]:
                        reached_next = True
                    continue
                fwd[v] = i
                queue.append(v)
        if not reached_next:
            return None
    bwd: dict[int, int] = {}
    for j in range(m + 1):
        start = chain[j]
        if start in bwd:
            return None
        bwd[start] = j
        queue = deque([start])
        while queue:
            u = queue.popleft()
            for v in cpred[u]:
                if v not in bwd:
                    bwd[v] = j
                    queue.append(v)
    chain_set = set(chain)
    out = set(chain_set)
    for v, i in fwd.items():
        if v in chain_set:
            continue
        if bwd.get(v) == i + 1 or (open_end and i == m):
            out.add(v)
    return out


def _reachable_all(succ: dict[int, list[int]], entry: int, fn: Function) -> set[int]:
    if entry not in succ:
        return set(fn.statements)
    seen = {entry}
    queue = deque([entry])
    while queue:
        for v in succ[queue.popleft()]:
            if v not in seen:
                seen.add(v)
                queue.append(v)
    return {s for s in seen if s >= 0}


def _dfs_back_edges(succ: dict[int, list[int]], root: int) -> list[tuple[int, int]]:
    back: list[tuple[int, int]] = []
    color: dict[int, int] = {root: 1}
    stack = [(root, iter(list(succ[root])))]
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            color[node] = 2
            stack.pop()
        elif color.get(nxt, 0) == 1:
            back.append((node, nxt))
        elif nxt not in color:
            color[nxt] = 1
            stack.append((nxt, iter(list(succ[nxt]))))
    return back


def tplus(
    ctx: _Ctx,
    frames: Sequence[Frame],
    sites: dict[str, tuple[int, ...]],
    other_tests: frozenset[str] = frozenset(),
) -> tuple[set[int], dict[int, Evidence], set[int], set[int]]:
    opts = ctx.options
    program = ctx.program
    exe = set(ctx.exe)
    nexe = set(ctx.nexe) - exe
    stops = _stops(ctx, frames)
    hard_stops = _terminal_stops(ctx, stops, sites) if opts.termination else {}
    helper_fids = {f.fid for f in helpers(program, sites)}
    funcs = list(ctx.functions())
    inferred_exe: set[int] = set()
    inferred_nexe: set[int] = set()
    kept_by_fn: dict[str, set[int]] = {}
    notes: dict[str, str] = {}
    removed: dict[str, str] = {}
    walks: dict[tuple[str, int | None, frozenset[int]], tuple[set[int], str]] = {}  # a function's walk
    # depends only on its own known statements and stop: recompute it only when those change
    for _round in range(50):
        changed = False
        if opts.call_site_inference:
            for fn in funcs:
                cs = sites.get(fn.fid, ())
                if fn.kind != "function" or not cs:
                    continue
                if (
                    len(cs) == 1
                    and cs[0] not in exe
                    and cs[0] not in nexe
                    and any(s in exe for s in fn.statements)
                ):
                    exe.add(cs[0])
                    inferred_exe.add(cs[0])
                    changed = True
                if fn.statements[0] in nexe:
                    for c in cs:
                        if c not in exe and c not in nexe:
                            nexe.add(c)
                            inferred_nexe.add(c)
                            changed = True
        alive = set().union(*kept_by_fn.values()) if kept_by_fn else set()
        normal = _normal_returns(ctx, funcs, sites, exe, alive, stops) if opts.normal_return else set()
        new_kept: dict[str, set[int]] = {}
        for fn in funcs:
            if fn.fid in other_tests:
                new_kept[fn.fid] = set()
                continue
            stop = hard_stops.get(fn.fid)
            if stop is None and fn.fid in normal:
                stop = EXIT
            key = (fn.fid, stop, frozenset(x for x in fn.statements if x in exe or x in nexe))
            if key not in walks:
                walks[key] = _walk(ctx.graphs[fn.fid], fn, exe, nexe, stop, opts.walk_semantics)
            kept, note = walks[key]
            new_kept[fn.fid] = set(kept)
            if note:
                notes[fn.fid] = note
        removed = {}
        if opts.call_site_inference:
            alive = set().union(*new_kept.values()) if new_kept else set()
            again = True
            while again:
                again = False
                for fn in funcs:
                    if fn.fid not in helper_fids or fn.fid in removed or not new_kept.get(fn.fid):
                        continue
                    if any(s in exe for s in fn.statements):
                        continue
                    if not any(c in alive for c in sites[fn.fid]):
                        removed[fn.fid] = "no call site left in the trace"
                        alive -= new_kept[fn.fid]
                        new_kept[fn.fid] = set()
                        again = True
        if new_kept != kept_by_fn:
            changed = True
        kept_by_fn = new_kept
        if not changed:
            break
    if not opts.call_site_inference:
        kept_all = set().union(*kept_by_fn.values()) if kept_by_fn else set()
        kept_all, _ = csr(program, kept_all, sites)
        kept_by_fn = {fid: k & kept_all for fid, k in kept_by_fn.items()}
    for fid, note in notes.items():
        fn = program.function(fid)
        ctx.warnings.append(f"{fn.path}: {fn.qualname}: {note}")
    kept: set[int] = set().union(*kept_by_fn.values()) if kept_by_fn else set()
    why: dict[int, Evidence] = {}
    for fn in funcs:
        for s in fn.statements:
            why[s] = _tplus_evidence(
                ctx, s, fn, kept, exe, nexe, hard_stops, removed, inferred_exe, inferred_nexe
            )
    return kept, why, inferred_exe, inferred_nexe


def _tplus_evidence(
    ctx: _Ctx,
    s: int,
    fn: Function,
    kept: set[int],
    exe: set[int],
    nexe: set[int],
    stops: dict[str, int],
    removed: dict[str, str],
    inf_exe: set[int],
    inf_nexe: set[int],
) -> Evidence:
    if s in inf_exe:
        return Evidence(State.EXE, "call-site", "the only call site of a function that ran")
    if s in inf_nexe:
        return Evidence(State.NEXE, "call-site", "calls a function whose first statement did not run")
    if s in exe:
        return _known(ctx, s)
    if s in nexe:
        return _known(ctx, s)
    if fn.fid in removed:
        return Evidence(State.NEXE, "call-site", f"helper `{fn.name}`: {removed[fn.fid]}")
    if s in kept:
        return Evidence(State.EXE, "walk", "on a walk from the entry through every executed statement")
    stop = stops.get(fn.fid)
    if stop is not None and ctx.program.statements[s].start_line > ctx.program.statements[stop].start_line:
        return Evidence(
            State.NEXE,
            "termination",
            f"after line {ctx.program.statements[stop].start_line}, where execution stopped",
        )
    return Evidence(State.NEXE, "walk", "on no walk that covers every executed statement")


def _normal_returns(
    ctx: _Ctx,
    funcs: list[Function],
    sites: dict[str, tuple[int, ...]],
    exe: set[int],
    alive: set[int],
    stops: dict[str, int],
) -> set[str]:
    """Functions that returned normally wherever they were called.

    A call site that may have run (``alive``) counts as returned when its caller went on to an
    executed statement (or its own stop) after it; a function returned normally when every such
    call site did and at least one exists.
    """
    latest: dict[str, dict[int, int]] = {}
    stmts = ctx.program.statements
    out: set[str] = set()
    for fn in funcs:
        if fn.kind != "function" or fn.fid in stops:
            continue
        live = [c for c in sites.get(fn.fid, ()) if c in alive or c in exe]
        if not live:
            continue
        went_on = True
        for c in live:
            caller = stmts[c].function
            if caller not in latest:
                latest[caller] = _latest_known_ahead(ctx, caller, exe, stops.get(caller))
            if latest[caller].get(c, 0) <= stmts[c].end_line:
                went_on = False
                break
        if went_on:
            out.add(fn.fid)
    return out


def _latest_known_ahead(ctx: _Ctx, fid: str, exe: set[int], stop: int | None) -> dict[int, int]:
    """Per statement, the last line of an executed statement (or the stop) reachable after it.

    One pass in reverse topological order of the function's flow graph with back edges dropped:
    linear in the function's size.
    """
    fn = ctx.fn_by_id[fid]
    graph = ctx.graphs[fid]
    if graph.entry is None:
        return {}
    stmts = ctx.program.statements
    succ = {s: [t for t in graph.all_succ(s) if t >= 0] for s in fn.statements}
    for u, v in _dfs_back_edges(succ, graph.entry):
        succ[u].remove(v)
    known = {s for s in fn.statements if s in exe or s == stop}
    best: dict[int, int] = {}
    for s in _reverse_topological(succ):
        value = 0
        for t in succ[s]:
            if t in known:
                value = max(value, stmts[t].start_line)
            value = max(value, best.get(t, 0))
        best[s] = value
    return best


def _reverse_topological(succ: dict[int, list[int]]) -> list[int]:
    """Nodes of an acyclic graph, every node after all of its successors."""
    order: list[int] = []
    done: set[int] = set()
    for root in succ:
        if root in done:
            continue
        stack = [(root, iter(succ[root]))]
        done.add(root)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                order.append(node)
                stack.pop()
            elif nxt not in done and nxt in succ:
                done.add(nxt)
                stack.append((nxt, iter(succ[nxt])))
    return order


def to_lines(program: Program, sids: Iterable[int]) -> frozenset[Loc]:
    """Statement set -> line set; a def/class header joins when a line of its body is in.

    A def's body is its statements and its nested defs (decided by statement, so a one-line
    `def f(): return 1` under a decorator keeps the decorator too); a class's body is any line in
    its range.
    """
    chosen = set(sids)
    lines_by_path: dict[str, set[int]] = {}
    for s in chosen:
        st = program.statements[s]
        lines_by_path.setdefault(st.path, set()).update(st.lines)
    by_id = {f.fid: f for f in program.functions}
    inner_first = sorted(
        (f for f in program.functions if f.kind == "function"), key=lambda f: f.end_line - f.start_line
    )
    has_child: set[str] = set()
    for fn in inner_first:
        if fn.fid in has_child or any(s in chosen for s in fn.statements):
            lines_by_path.setdefault(fn.path, set()).update(fn.header_lines)
            if fn.parent is not None and fn.parent in by_id:
                has_child.add(fn.parent)
    containers = sorted(
        ((sf.path, s, e, rows) for sf in program.files for s, e, rows in sf.container_headers),
        key=lambda c: c[2] - c[1],
    )
    ordered = {p: sorted(v) for p, v in lines_by_path.items()}
    for path, start, end, rows in containers:
        srt = ordered.get(path)
        if not srt:
            continue
        i = bisect.bisect_left(srt, start)
        while i < len(srt) and srt[i] <= end:
            if srt[i] not in rows:
                lines_by_path[path].update(rows)
                for r in rows:
                    bisect.insort(srt, r)
                break
            i += 1
    return frozenset(Loc(p, ln) for p, lines in lines_by_path.items() for ln in lines)


def _evidence_by_line(
    program: Program, why: dict[int, Evidence], kept: frozenset[Loc]
) -> dict[Loc, Evidence]:
    out: dict[Loc, Evidence] = {}
    for s, ev in why.items():
        st = program.statements[s]
        for ln in st.lines:
            out[Loc(st.path, ln)] = ev
    for f in program.functions:
        if f.kind != "function":
            continue
        for ln in f.header_lines:
            loc = Loc(f.path, ln)
            out[loc] = Evidence(
                State.EXE if loc in kept else State.NEXE, "header", f"header of `{f.qualname}`"
            )
    return out


def estimate(
    program: Program,
    match: MatchResult,
    blocks: Sequence[Block],
    error_frames: Sequence[Frame],
    options: EstimateOptions | None = None,
    *,
    explain: bool = True,
    graphs: dict[str, FlowGraph] | None = None,
    silent: frozenset[int] = frozenset(),
    other_tests: frozenset[str] = frozenset(),
) -> Estimation:
    """Every faithful variant of the paper plus ``tplus``, from Algorithm 1's output."""
    opts = options or EstimateOptions()
    if graphs is None:
        graphs = {f.fid: flow_graph(program, f) for f in program.functions}
    ctx = _Ctx(program, graphs, match.exe, match.nexe - match.exe, opts, match.error_sids)
    sites = call_sites(program)
    total = sum(len(f.code_lines) for f in program.files)
    all_sids = {s.sid for s in program.statements}

    t1e, why1e = fill_gaps(ctx, dbt_exe=True)
    t1n, why1n = fill_gaps(ctx, dbt_exe=False)
    t2, why2 = cfg_paths(ctx, blocks)
    base: dict[str, tuple[set[int], dict[int, Evidence]]] = {
        "T0": (all_sids, {}),
        "T1_dbt_exe": (t1e, why1e),
        "T1_dbt_nexe": (t1n, why1n),
        "T2": (t2, why2),
        "T1_dbt_exe&T2": (t1e & t2, {**why1e, **{s: why2[s] for s in why2 if s not in t2}}),
        "T1_dbt_nexe&T2": (t1n & t2, {**why1n, **{s: why2[s] for s in why2 if s not in t2}}),
    }
    traces: dict[str, Trace] = {}
    code_locs = frozenset(Loc(f.path, ln) for f in program.files for ln in f.code_lines)
    for name in BASE_VARIANTS:
        sids, why = base[name]
        kept = code_locs if name == "T0" else to_lines(program, sids)
        traces[name] = Trace(name, kept, total, _evidence_by_line(program, why, kept) if explain else {})
        refined, why_csr = csr(program, sids, sites)
        csr_name = f"CSR({name})"
        kept_csr = code_locs if name == "T0" and refined == sids else to_lines(program, refined)
        traces[csr_name] = Trace(
            csr_name,
            kept_csr,
            total,
            _evidence_by_line(program, {**why, **why_csr}, kept_csr) if explain else {},
        )
    plus_ctx = ctx
    if opts.log_coverage and silent:
        plus_ctx = _Ctx(program, graphs, match.exe, match.nexe - match.exe - silent, opts, match.error_sids)
    excluded = other_tests if opts.test_selection else frozenset()
    kept_plus, why_plus, inf_exe, inf_nexe = tplus(plus_ctx, error_frames, sites, excluded)
    ctx.warnings.extend(w for w in plus_ctx.warnings if w not in ctx.warnings)
    kept_lines = to_lines(program, kept_plus)
    traces["tplus"] = Trace(
        "tplus", kept_lines, total, _evidence_by_line(program, why_plus, kept_lines) if explain else {}
    )
    return Estimation(traces, tuple(ctx.warnings), frozenset(inf_exe), frozenset(inf_nexe))


def estimate_all(
    program: Program,
    match: MatchResult,
    blocks: Sequence[Block],
    error_frames: Sequence[Frame],
    options: EstimateOptions | None = None,
) -> dict[str, Trace]:
    """Traces only, without per-line evidence: the fast path for evaluation (masking, ablation)."""
    return estimate(program, match, blocks, error_frames, options, explain=False).traces
