"""The enhanced trace ``tplus``: DESIGN section 5, the paper's future work made real.

Call-site inference to a fixpoint, termination at traceback frames, walk semantics over the
condensation of each function's cyclic flow graph, normal return, and (decided upstream) log
coverage and test selection. Each refinement is switchable through EstimateOptions.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.analysis.callsites import csr, helpers
from app.analysis.cfg import EXIT, RAISE, FlowGraph
from app.analysis.context import Context, known_evidence
from app.analysis.graphs import back_edges, chain_between, reachable, reverse_topological, strongly_connected
from app.analysis.model import Evidence, Frame, Function, State, StmtKind
from app.analysis.source import line_index


def _stops(ctx: Context, frames: Sequence[Frame]) -> dict[str, int]:
    """Where each function in a traceback stopped: the innermost frame at the error, others at the call.

    Every traceback counts (a test cancelled in its body and then failing in tearDown leaves two);
    a function met in several keeps its frame from the latest, which is how chained exceptions
    read too.
    """
    stops: dict[str, int] = {}
    index = line_index(ctx.program)
    for frame in sorted(frames, key=lambda f: f.traceback):
        st = index.get((frame.path, frame.line))
        if st is not None:
            stops[st.function] = st.sid  # later tracebacks and inner frames win
    return stops


def _terminal_stops(ctx: Context, stops: dict[str, int], sites: dict[str, tuple[int, ...]]) -> dict[str, int]:
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
        for u, v in back_edges(succ, graph.entry):
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
        qualifying = chain_between(csucc, cpred, full, open_end=stop_node is None)
        if qualifying is not None:
            return {s for c in qualifying for s in members[c] if s >= 0}, note
    note = "executed statements do not lie on one walk: kept all reachable"
    return _reachable_all(succ, graph.entry, fn), note


def _reachable_all(succ: dict[int, list[int]], entry: int, fn: Function) -> set[int]:
    """The conservative answer: every statement reachable from the entry."""
    if entry not in succ:
        return set(fn.statements)
    return {s for s in reachable(succ, entry) if s >= 0}


def tplus(
    ctx: Context,
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
    other = Evidence(
        State.NEXE, "test-selection", "another test of the script; the log names the failing one"
    )
    for fn in funcs:
        for s in fn.statements:
            if fn.fid in other_tests:
                why[s] = other
                continue
            why[s] = _tplus_evidence(
                ctx, s, fn, kept, exe, nexe, hard_stops, removed, inferred_exe, inferred_nexe
            )
    return kept, why, inferred_exe, inferred_nexe


def _tplus_evidence(
    ctx: Context,
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
        return known_evidence(ctx, s)
    if s in nexe:
        return known_evidence(ctx, s)
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
    ctx: Context,
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


def _latest_known_ahead(ctx: Context, fid: str, exe: set[int], stop: int | None) -> dict[int, int]:
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
    for u, v in back_edges(succ, graph.entry):
        succ[u].remove(v)
    known = {s for s in fn.statements if s in exe or s == stop}
    best: dict[int, int] = {}
    for s in reverse_topological(succ):
        value = 0
        for t in succ[s]:
            if t in known:
                value = max(value, stmts[t].start_line)
            value = max(value, best.get(t, 0))
        best[s] = value
    return best
