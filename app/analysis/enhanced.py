"""The enhanced trace ``tplus``: docs/design.md §5, the paper's future work made real.

Call-site inference to a fixpoint, termination at traceback frames, walk semantics over the
condensation of each function's cyclic flow graph, normal return, and (decided upstream) log
coverage and test selection. Each refinement is switchable through EstimateOptions.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.analysis.callsites import csr, helpers
from app.analysis.cfg import EXIT, RAISE, FlowGraph
from app.analysis.context import EstimateContext, known_evidence
from app.analysis.graphs import back_edges, chain_between, reachable, reverse_topological, strongly_connected
from app.analysis.model import Frame, Function, State, StmtKind, TraceReason
from app.analysis.source import LineIndex, line_index


def _stops(ctx: EstimateContext, frames: Sequence[Frame], index: LineIndex | None = None) -> dict[str, int]:
    """Where each function in a traceback stopped: the innermost frame at the error, others at the call.

    Every traceback counts (a test cancelled in its body and then failing in tearDown leaves two);
    a function met in several keeps its frame from the latest, which is how chained exceptions
    read too.
    """
    stops: dict[str, int] = {}
    if index is None:
        index = line_index(ctx.program)
    for frame in sorted(frames, key=lambda f: f.traceback):
        st = index.get((frame.path, frame.line))
        if st is not None:
            stops[st.function] = st.sid  # later tracebacks and inner frames win
    return stops


def _terminal_stops(
    ctx: EstimateContext, stops: dict[str, int], sites: dict[str, tuple[int, ...]]
) -> dict[str, int]:
    """The stops that really end what ran: only functions that can have run once.

    A helper called in a loop, or from two places, may have run past its frame line on an
    earlier call; so may anything called by such a function. An error on a ``with`` header can
    come from ``__exit__``, after the body ran. Those stops are dropped (the function stays
    "stopped" for the normal-return rule, but nothing after the line is pruned).
    """
    memo: dict[str, bool] = {}

    def once(start: str) -> bool:
        """Follow the single call site up to an entry point (iteratively; cycles and long chains: no)."""
        chain: list[str] = []
        fid = start
        result: bool
        while True:
            if fid in memo:
                result = memo[fid]
                break
            if fid in chain or len(chain) > 50:
                result = False
                break
            chain.append(fid)
            fn = ctx.fn_by_id[fid]
            calls = sites.get(fid, ()) if fn.kind == "function" else ()
            if not calls:
                result = True  # an entry point: the framework runs it once
                break
            if len(calls) > 1:
                result = False
                break
            site = ctx.program.statements[calls[0]]
            if ctx.in_loop(site.sid):
                result = False
                break
            fid = site.function
        for f in chain:
            memo[f] = result
        return result

    return {
        fid: sid
        for fid, sid in stops.items()
        if ctx.program.statements[sid].kind is not StmtKind.WITH and once(fid)
    }


def _walk(
    graph: FlowGraph,
    fn: Function,
    exe: set[int],
    nexe: set[int],
    stop: int | None,
    walk_semantics: bool,
    frame: int | None = None,
) -> tuple[set[int], str]:
    """Statements on some walk entry -> stop that covers every executed one and avoids the rest;
    ``frame``: the function's traceback frame statement, kept whatever else the log says.

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
    if stop is None and not any(s in exe or s in nexe for s in fn.statements):
        # nothing known and no stop: the one-element chain keeps all that is reachable (the walk
        # below would find the same, components and all)
        return _reachable_all(succ, graph.entry, fn), ""
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
    kept = _reachable_all(succ, graph.entry, fn)
    if frame is None or frame in kept or not nexe - exe:
        return kept, note
    # what did not run cuts off the frame's line (a log line missing from a log cut or quoted in
    # part): the frame wins, and the walk is found without what was found not to run
    kept, _ = _walk(graph, fn, exe, set(), stop, walk_semantics)
    return kept, "the frame's line lies past statements found not run: kept the walk, ignoring them"


def _reachable_all(succ: dict[int, list[int]], entry: int, fn: Function) -> set[int]:
    """The conservative answer: every statement reachable from the entry."""
    if entry not in succ:
        return set(fn.statements)
    return {s for s in reachable(succ, entry) if s >= 0}


def tplus(
    ctx: EstimateContext,
    frames: Sequence[Frame],
    sites: dict[str, tuple[int, ...]],
    other_tests: frozenset[str] = frozenset(),
    *,
    after_failure: frozenset[int] = frozenset(),
    ran_after_failure: frozenset[int] = frozenset(),
    not_run: frozenset[str] = frozenset(),
    quiet: frozenset[int] = frozenset(),
    explain: bool = True,
    index: LineIndex | None = None,
) -> tuple[set[int], dict[int, TraceReason], set[int], set[int]]:
    """The enhanced trace: kept statements, per-statement evidence, call sites inferred exe/nexe.

    ``index``: the program's ``line_index`` when the caller has it. Without ``explain`` the
    evidence is left empty: the proven-state dominators and one record
    per statement are a good part of the trace's cost, and triage reads only the kept set.

    ``after_failure``: statements that run after the failure (finally blocks, teardown, cleanups),
    kept whatever termination says; ``ran_after_failure`` among them are known to run. ``not_run``:
    tests whose setUp or fixture failed (a subset of ``other_tests``). ``quiet``: log statements whose
    missing message is no evidence (only for the explanation).
    """
    opts = ctx.options
    program = ctx.program
    exe = set(ctx.exe)
    nexe = set(ctx.nexe) - exe
    stops = _stops(ctx, frames, index)
    hard_stops = _terminal_stops(ctx, stops, sites) if opts.termination else {}
    helper_fids = {f.fid for f in helpers(program, sites)}
    funcs = list(ctx.functions())
    inferred_exe: set[int] = set()
    inferred_nexe: set[int] = set()
    kept_by_fn: dict[str, set[int]] = {}
    notes: dict[str, str] = {}
    removed: dict[str, str] = {}
    stop_used: dict[str, int | None] = {}
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
            stop_used[fn.fid] = stop
            # what runs after the failure (a finally around the stop) is no evidence against the stop
            walk_exe = exe - after_failure if stop is not None and after_failure else exe
            key = (fn.fid, stop, frozenset(x for x in fn.statements if x in walk_exe or x in nexe))
            if key not in walks:
                walks[key] = _walk(
                    ctx.graphs[fn.fid], fn, walk_exe, nexe, stop, opts.walk_semantics, stops.get(fn.fid)
                )
            kept, note = walks[key]
            new_kept[fn.fid] = set(kept)
            if note:
                notes[fn.fid] = note
        removed = {}
        if opts.call_site_inference:
            alive = set().union(*new_kept.values()) if new_kept else set()
            # finally blocks and cleanups of a function that ran are revived below: their calls count
            alive |= {s for s in after_failure if new_kept.get(program.statements[s].function)}
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
    revived: set[int] = set()
    if after_failure:
        for s in after_failure:
            fid = program.statements[s].function
            if s not in kept and fid not in other_tests and fid not in removed:
                kept.add(s)
                revived.add(s)
    if not explain:
        return kept, {}, inferred_exe, inferred_nexe
    proven: set[int] | None = None
    if opts.proven_states:
        proven = set(exe) | (set(ran_after_failure) & kept)
        # a file any of whose code ran was imported: its top-level statements on every path ran
        imported = {program.function(program.statements[s].function).path for s in exe}
        for fn in funcs:
            if kept_by_fn.get(fn.fid) and fn.fid not in notes:
                stop = stop_used.get(fn.fid)
                if stop is None and fn.kind == "module" and fn.path in imported:
                    stop = EXIT
                proven |= _proven(ctx.graphs[fn.fid], fn, kept_by_fn[fn.fid], exe, stop)
    why: dict[int, TraceReason] = {}
    other = TraceReason(
        State.NEXE, "test-selection", "another test of the script; the log names the failing one"
    )
    skipped = TraceReason(
        State.NEXE, "setup-failure", "a test whose setUp or fixture failed: its body never started"
    )
    for fn in funcs:
        for s in fn.statements:
            if fn.fid in other_tests:
                why[s] = skipped if fn.fid in not_run else other
                continue
            if (s in revived or (s in ran_after_failure and s in kept)) and s not in exe:
                why[s] = _after_failure_evidence(s, ran_after_failure, proven)
                continue
            ev = _tplus_evidence(
                ctx, s, fn, kept, exe, nexe, hard_stops, removed, inferred_exe, inferred_nexe
            )
            if proven is not None and ev.state is State.EXE and s not in proven:
                ev = _doubtful(ev, s in quiet)
            why[s] = ev
    return kept, why, inferred_exe, inferred_nexe


def _after_failure_evidence(s: int, ran: frozenset[int], proven: set[int] | None) -> TraceReason:
    if s in ran or proven is None:
        return TraceReason(State.EXE, "after-failure", "a finally block around the failing line: it ran")
    return TraceReason(
        State.DBT, "after-failure", "runs after the failure (finally, tearDown, cleanup, fixture teardown)"
    )


def _doubtful(ev: TraceReason, quiet: bool) -> TraceReason:
    """A kept statement no evidence proves: on some walk through what ran, not on every one."""
    if ev.rule == "no-evidence":
        return TraceReason(State.DBT, "no-evidence", "nothing in the log reaches this function: kept whole")
    detail = "on a walk through every executed statement, but not on all of them: may not have run"
    if quiet:
        detail += "; its message could lie outside the part of the run the log holds"
    return TraceReason(State.DBT, ev.rule, detail)


def _proven(graph: FlowGraph, fn: Function, kept: set[int], exe: set[int], stop: int | None) -> set[int]:
    """Kept statements every walk to an executed statement (or to where the function stopped) passes.

    Dominators on the kept part of the flow graph (Cooper, Harvey and Kennedy's iteration; explicit
    stacks, so nesting depth does not matter).
    """
    if graph.entry is None or graph.entry not in kept:
        return set()
    nodes = kept | {EXIT, RAISE}
    succ = {s: [t for t in graph.all_succ(s) if t in nodes] for s in kept}
    targets = [s for s in fn.statements if s in exe and s in kept]
    if stop is not None and (stop in kept or stop == EXIT):
        targets.append(stop)
    if not targets:
        return set()
    idom = _dominator_tree(succ, graph.entry)
    out: set[int] = set()
    for t in targets:
        node: int | None = t
        while node is not None and node in idom and node not in out:
            out.add(node)
            parent = idom[node]
            node = None if parent == node else parent
    return {s for s in out if s >= 0}


def _dominator_tree(succ: dict[int, list[int]], entry: int) -> dict[int, int]:
    """Immediate dominators (the entry maps to itself) of the nodes reachable from ``entry``."""
    order: list[int] = []
    seen = {entry}
    stack: list[tuple[int, int]] = [(entry, 0)]
    while stack:
        node, i = stack[-1]
        outs = succ.get(node, ())
        if i < len(outs):
            stack[-1] = (node, i + 1)
            nxt = outs[i]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, 0))
        else:
            stack.pop()
            order.append(node)
    rpo = order[::-1]
    num = {n: i for i, n in enumerate(rpo)}
    preds: dict[int, list[int]] = {n: [] for n in rpo}
    for u in rpo:
        for v in succ.get(u, ()):
            if v in num:
                preds[v].append(u)
    idom = {entry: entry}
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            new: int | None = None
            for p in preds[b]:
                if p not in idom:
                    continue
                if new is None:
                    new = p
                    continue
                a, c = p, new
                while a != c:
                    while num[a] > num[c]:
                        a = idom[a]
                    while num[c] > num[a]:
                        c = idom[c]
                new = a
            if new is not None and idom.get(b) != new:
                idom[b] = new
                changed = True
    return idom


def _tplus_evidence(
    ctx: EstimateContext,
    s: int,
    fn: Function,
    kept: set[int],
    exe: set[int],
    nexe: set[int],
    stops: dict[str, int],
    removed: dict[str, str],
    inf_exe: set[int],
    inf_nexe: set[int],
) -> TraceReason:
    if s in inf_exe:
        return TraceReason(State.EXE, "call-site", "the only call site of a function that ran")
    if s in inf_nexe:
        return TraceReason(State.NEXE, "call-site", "calls a function whose first statement did not run")
    if s in exe:
        return known_evidence(ctx, s)
    if s in nexe:
        return known_evidence(ctx, s)
    if fn.fid in removed:
        return TraceReason(State.NEXE, "call-site", f"helper `{fn.name}`: {removed[fn.fid]}")
    if s in kept:
        return TraceReason(State.EXE, "walk", "on a walk from the entry through every executed statement")
    stop = stops.get(fn.fid)
    if stop is not None and ctx.program.statements[s].start_line > ctx.program.statements[stop].start_line:
        return TraceReason(
            State.NEXE,
            "termination",
            f"after line {ctx.program.statements[stop].start_line}, where execution stopped",
        )
    return TraceReason(State.NEXE, "walk", "on no walk that covers every executed statement")


def _normal_returns(
    ctx: EstimateContext,
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


def _latest_known_ahead(ctx: EstimateContext, fid: str, exe: set[int], stop: int | None) -> dict[int, int]:
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
