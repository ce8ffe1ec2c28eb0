"""Execution trace estimation: the paper's Algorithms 2 and 3, the 12 variants, and ``tplus``.

All algorithms work on statement ids; a trace becomes a set of source lines only at the end
(``to_lines``), where def/class header lines join exactly when a line of their body did.
Algorithm 4 lives in callsites.py, the enhanced trace in enhanced.py.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from app.analysis.callsites import call_sites, csr
from app.analysis.cfg import BlockGraph, FlowGraph, block_graph, flow_graph
from app.analysis.context import NO_EVIDENCE, EstimateContext, EstimateOptions, known_evidence
from app.analysis.enhanced import tplus
from app.analysis.lifecycle import Lifecycle
from app.analysis.memo import kept_while
from app.analysis.model import (
    BASE_VARIANTS,
    VARIANTS,
    Block,
    Frame,
    Function,
    Loc,
    MatchResult,
    Program,
    State,
    Trace,
    TraceReason,
)
from app.analysis.source import LineIndex

__all__ = ["EstimateOptions", "Estimation", "estimate", "estimate_all", "to_lines"]


@dataclass(frozen=True)
class Estimation:
    traces: dict[str, Trace]
    warnings: tuple[str, ...] = ()
    inferred_exe: frozenset[int] = frozenset()  # tplus: call sites proven executed
    inferred_nexe: frozenset[int] = frozenset()


def fill_gaps(ctx: EstimateContext, dbt_exe: bool) -> tuple[set[int], dict[int, TraceReason]]:
    kept: set[int] = set()
    why: dict[int, TraceReason] = {}
    exe, nexe = ctx.exe, ctx.nexe
    doubtful = State.EXE if dbt_exe else State.NEXE
    for fn in ctx.functions():
        stmts = fn.statements
        if len(stmts) == 1:
            s = stmts[0]
            if s in nexe:
                why[s] = TraceReason(
                    State.NEXE, "log-match", "single-statement function, its log statement unmatched"
                )
            else:
                kept.add(s)
                why[s] = known_evidence(ctx, s) if s in exe else NO_EVIDENCE
            continue
        known = [s for s in stmts if s in exe or s in nexe]
        if not known:
            kept.update(stmts)
            why.update(dict.fromkeys(stmts, NO_EVIDENCE))
            continue
        i = 0
        n = len(stmts)
        while i < n:
            s = stmts[i]
            if s in exe or s in nexe:
                if s in exe:
                    kept.add(s)
                why[s] = known_evidence(ctx, s)
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
                why[s2] = TraceReason(state, "gap", detail)
                if final is State.EXE:
                    kept.add(s2)
            i = j
    return kept, why


def _describe(ctx: EstimateContext, sid: int | None) -> str:
    if sid is None:
        return "function boundary"
    st = ctx.program.statements[sid]
    state = "executed" if sid in ctx.exe else "not executed"
    return f"line {st.start_line} ({state})"


def cfg_paths(ctx: EstimateContext, blocks: Sequence[Block]) -> tuple[set[int], dict[int, TraceReason]]:
    kept: set[int] = set()
    why: dict[int, TraceReason] = {}
    exe, nexe = ctx.exe, ctx.nexe
    by_fn: dict[str, list[Block]] = {}
    for b in blocks:
        by_fn.setdefault(b.function, []).append(b)
    block_sids = {b.bid: b.sids for b in blocks}
    for fn in ctx.functions():
        stmts = fn.statements
        if not any(s in exe or s in nexe for s in stmts):
            kept.update(stmts)
            why.update(dict.fromkeys(stmts, NO_EVIDENCE))
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
            why.update(dict.fromkeys(stmts, TraceReason(State.EXE, "cfg-fallback", "path search bound hit")))
            continue
        for i, sids in enumerate(node_sids):
            if states[i]:
                kept.update(sids)
                ev = TraceReason(
                    State.EXE,
                    "cfg-path",
                    "on a CFG path through every executed node, avoiding not-executed ones",
                )
            else:
                ev = TraceReason(State.NEXE, "cfg-path", "on no CFG path that covers every executed node")
            why.update(dict.fromkeys(sids, ev))
        unreachable = set(stmts) - {s for sids in node_sids for s in sids}
        why.update(dict.fromkeys(unreachable, TraceReason(State.NEXE, "cfg-path", "unreachable")))
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
    inner_first, owners, fids, containers = _line_orders(program)
    entered = {fid for s in chosen for fid in owners.get(s, ())}  # functions holding a chosen statement
    has_child: set[str] = set()
    for fn in inner_first:
        if fn.fid in has_child or fn.fid in entered:
            lines_by_path.setdefault(fn.path, set()).update(fn.header_lines)
            if fn.parent is not None and fn.parent in fids:
                has_child.add(fn.parent)
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


LineOrders = tuple[
    list[Function], dict[int, list[str]], frozenset[str], list[tuple[str, int, int, tuple[int, ...]]]
]
# a function's header: its first line, its lines, and their evidence when the header is not kept
Header = tuple[Function, Loc, tuple[Loc, ...], dict[Loc, TraceReason]]
LineEvidence = tuple[tuple[tuple[Loc, ...], ...], tuple[Header, ...]]
_ORDERS: dict[int, LineOrders] = {}
_LINE_EVIDENCE: dict[int, LineEvidence] = {}


def _line_orders(program: Program) -> LineOrders:
    """What ``to_lines`` reads of the program alone, once per program (a CI job asks it for every
    pass of a test file): its functions innermost first, the functions holding each statement, the
    function ids, and the class bodies innermost first."""

    def build() -> LineOrders:
        inner_first = sorted(
            (f for f in program.functions if f.kind == "function"), key=lambda f: f.end_line - f.start_line
        )
        owners: dict[int, list[str]] = {}
        for fn in inner_first:
            for s in fn.statements:
                owners.setdefault(s, []).append(fn.fid)
        containers = sorted(
            ((sf.path, s, e, rows) for sf in program.files for s, e, rows in sf.container_headers),
            key=lambda c: c[2] - c[1],
        )
        return inner_first, owners, frozenset(f.fid for f in program.functions), containers

    return kept_while(_ORDERS, program, build)


def _line_evidence(program: Program) -> LineEvidence:
    """What ``_evidence_by_line`` reads of the program alone, once per program (every failure of a
    CI job's test file is explained): each statement's lines, and each function's header with the
    evidence of a header not kept (most of a file's functions, for any one failure)."""

    def build() -> LineEvidence:
        lines = tuple(tuple(Loc(st.path, ln) for ln in st.lines) for st in program.statements)
        headers: list[Header] = []
        for f in program.functions:
            if f.kind != "function":
                continue
            locs = tuple(Loc(f.path, ln) for ln in f.header_lines)
            reason = TraceReason(State.NEXE, "header", f"header of `{f.qualname}`")
            headers.append((f, locs[0] if locs else Loc(f.path, 0), locs, dict.fromkeys(locs, reason)))
        return lines, tuple(headers)

    return kept_while(_LINE_EVIDENCE, program, build)


def _evidence_by_line(
    program: Program, why: dict[int, TraceReason], kept: frozenset[Loc], *, proven_headers: bool = False
) -> dict[Loc, TraceReason]:
    """Per-line evidence; ``proven_headers``: a kept def header is executed only when a line of its
    body is, else doubtful (tplus's three states; the paper's variants keep two)."""
    lines, headers = _line_evidence(program)
    out = {loc: ev for s, ev in why.items() for loc in lines[s]}
    for f, first, locs, not_kept in headers:
        if not locs or first not in kept:
            out.update(not_kept)  # every line NEXE, in the lines' order
            continue
        state = State.EXE
        if proven_headers and not any(
            (ev := why.get(s)) is not None and ev.state is State.EXE for s in f.statements
        ):
            state = State.DBT
        detail = f"header of `{f.qualname}`"
        for loc in locs:
            out[loc] = TraceReason(state if loc in kept else State.NEXE, "header", detail)
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
    variants: Collection[str] | None = None,
    sites: dict[str, tuple[int, ...]] | None = None,
    life: Lifecycle | None = None,
    index: LineIndex | None = None,
) -> Estimation:
    """The faithful variants of the paper plus ``tplus``, from Algorithm 1's output.

    ``variants`` (canonical names) limits the work to what is asked: triage needs one trace,
    only `tcfl trace` and evaluation need all of them (None). ``silent``, ``other_tests`` and
    ``life`` feed only ``tplus``; the paper's variants never read them.
    """
    opts = options or EstimateOptions()
    wanted = set(VARIANTS if variants is None else variants)
    if graphs is None:
        graphs = {f.fid: flow_graph(program, f) for f in program.functions}
    ctx = EstimateContext(program, graphs, match.exe, match.nexe - match.exe, opts, match.error_sids)
    if sites is None:
        sites = call_sites(program)
    total = sum(len(f.code_lines) for f in program.files)
    steps: dict[str, tuple[set[int], dict[int, TraceReason]]] = {}

    def step(name: str) -> tuple[set[int], dict[int, TraceReason]]:
        if name not in steps:
            if name == "T1_dbt_exe":
                steps[name] = fill_gaps(ctx, dbt_exe=True)
            elif name == "T1_dbt_nexe":
                steps[name] = fill_gaps(ctx, dbt_exe=False)
            elif name == "T2":
                steps[name] = cfg_paths(ctx, blocks)
            elif name == "T0":
                steps[name] = ({s.sid for s in program.statements}, {})
            else:  # an intersection with T2
                t1, why1 = step(name.removesuffix("&T2"))
                t2, why2 = step("T2")
                steps[name] = (t1 & t2, {**why1, **{s: why2[s] for s in why2 if s not in t2}})
        return steps[name]

    traces: dict[str, Trace] = {}
    code_locs: frozenset[Loc] | None = None
    for name in BASE_VARIANTS:
        csr_name = f"CSR({name})"
        if name not in wanted and csr_name not in wanted:
            continue
        sids, why = step(name)
        if name in wanted:
            if name == "T0":
                code_locs = code_locs or _code_locs(program)
                kept = code_locs
            else:
                kept = to_lines(program, sids)
            traces[name] = Trace(name, kept, total, _evidence_by_line(program, why, kept) if explain else {})
        if csr_name in wanted:
            refined, why_csr = csr(program, sids, sites)
            if name == "T0" and refined == sids:
                code_locs = code_locs or _code_locs(program)
                kept_csr = code_locs
            else:
                kept_csr = to_lines(program, refined)
            traces[csr_name] = Trace(
                csr_name,
                kept_csr,
                total,
                _evidence_by_line(program, {**why, **why_csr}, kept_csr) if explain else {},
            )
    inf_exe: set[int] | frozenset[int] = frozenset()
    inf_nexe: set[int] | frozenset[int] = frozenset()
    if "tplus" in wanted:
        quiet = set(silent) if opts.log_coverage else set()
        excluded = set(other_tests) if opts.test_selection else set()
        after: frozenset[int] = frozenset()
        if life is not None:
            if opts.log_window:
                quiet |= life.before_window
            if opts.after_failure:
                quiet |= life.after_failure_log
                after = life.after_failure | life.ran_after_failure
            if opts.setup_failure:
                excluded |= life.not_run_tests
        plus_ctx = ctx
        if quiet:
            plus_ctx = EstimateContext(
                program, graphs, match.exe, match.nexe - match.exe - frozenset(quiet), opts, match.error_sids
            )
        kept_plus, why_plus, inf_exe, inf_nexe = tplus(
            plus_ctx,
            error_frames,
            sites,
            frozenset(excluded),
            after_failure=after,
            ran_after_failure=life.ran_after_failure
            if life is not None and opts.after_failure
            else frozenset(),
            not_run=life.not_run_tests if life is not None and opts.setup_failure else frozenset(),
            quiet=frozenset(quiet),
            explain=explain,
            index=index,
        )
        ctx.warnings.extend(w for w in plus_ctx.warnings if w not in ctx.warnings)
        kept_lines = to_lines(program, kept_plus)
        traces["tplus"] = Trace(
            "tplus",
            kept_lines,
            total,
            _evidence_by_line(program, why_plus, kept_lines, proven_headers=opts.proven_states)
            if explain
            else {},
        )
    ordered = {name: traces[name] for name in VARIANTS if name in traces}
    return Estimation(ordered, tuple(ctx.warnings), frozenset(inf_exe), frozenset(inf_nexe))


def _code_locs(program: Program) -> frozenset[Loc]:
    return frozenset(Loc(f.path, ln) for f in program.files for ln in f.code_lines)


def estimate_all(
    program: Program,
    match: MatchResult,
    blocks: Sequence[Block],
    error_frames: Sequence[Frame],
    options: EstimateOptions | None = None,
) -> dict[str, Trace]:
    """Traces only, without per-line evidence: the fast path for evaluation (masking, ablation)."""
    return estimate(program, match, blocks, error_frames, options, explain=False).traces
