"""Control flow per function: a statement-level flow graph, basic blocks, and the acyclic block CFG.

The statement graph is what the enhanced estimator walks (line-level precision, loops kept);
the block graph with back edges removed and straight chains merged is the paper's CFG for
Algorithm 3; the blocks themselves are the ``BLOCK n`` elements of block-level localization.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.analysis.graphs import back_edges
from app.analysis.memo import kept_while
from app.analysis.model import Block, Function, Program, Statement, StmtKind

EXIT = -1  # normal return or falling off the end
RAISE = -2  # leaving the function by an exception

_CLAUSE_LEADERS = frozenset(
    {
        StmtKind.ELIF,
        StmtKind.ELSE,
        StmtKind.EXCEPT,
        StmtKind.FINALLY,
        StmtKind.CASE,
        StmtKind.FOR,
        StmtKind.WHILE,
    }
)
_GROUP_FOLLOWERS = {
    StmtKind.IF: (StmtKind.ELIF, StmtKind.ELSE),
    StmtKind.FOR: (StmtKind.ELSE,),
    StmtKind.WHILE: (StmtKind.ELSE,),
    StmtKind.TRY: (StmtKind.EXCEPT, StmtKind.ELSE, StmtKind.FINALLY),
}


@dataclass(frozen=True)
class FlowGraph:
    """Statement-level control flow of one function. Exception edges are kept apart."""

    fid: str
    entry: int | None
    succ: dict[int, tuple[int, ...]]  # normal flow, EXIT/RAISE as sinks
    exc: dict[int, tuple[int, ...]]  # statement -> handler it may jump to

    def all_succ(self, sid: int) -> tuple[int, ...]:
        return self.succ.get(sid, ()) + self.exc.get(sid, ())


@dataclass(frozen=True)
class BlockGraph:
    """The paper's acyclic CFG: nodes are merged chains of blocks, root first."""

    fid: str
    root: int | None  # node index
    nodes: tuple[tuple[int, ...], ...]  # bids per node
    children: tuple[tuple[int, ...], ...]  # node index -> child node indexes


class _Builder:
    def __init__(self, stmts: dict[int, Statement], lines: Sequence[str]) -> None:
        self.stmts = stmts
        self.lines = lines
        self.succ: dict[int, list[int]] = {}
        self.exc: dict[int, list[int]] = {}

    def edge(self, a: int, b: int) -> None:
        self.succ.setdefault(a, []).append(b)

    def exc_edge(self, a: int, b: int) -> None:
        lst = self.exc.setdefault(a, [])
        if b not in lst:
            lst.append(b)

    # Building is a small stack machine instead of mutual recursion between sequences and groups,
    # so nesting depth is never bounded by Python's recursion limit. It works because a sequence's
    # entry is known before its body is built (its first statement, else ``nxt``); the operations
    # run in exactly the order the recursive form ran them, so edge lists keep their order.

    def seq(self, sids: Sequence[int], nxt: int, loop: tuple[int, int] | None, handler: int | None) -> int:
        """Wire ``sids`` (one statement list) so that it continues to ``nxt``; returns its entry."""
        stack: list[_Op] = [("seq", sids, nxt, loop, handler)]
        while stack:
            op = stack.pop()
            if op[0] == "edge":
                self.edge(op[1], op[2])
            elif op[0] == "exc":
                self.exc_edge(op[1], op[2])
            elif op[0] == "seq":
                stack.extend(reversed(self._seq_ops(op[1], op[2], op[3], op[4])))
            elif op[4] is None and len(op[1]) == 1 and self._plain(op[1][0]):
                self.edge(op[1][0], op[2])  # what _group_ops answers for it, without the op list
            else:
                stack.extend(reversed(self._group_ops(op[1], op[2], op[3], op[4])))
        return _entry(sids, nxt)

    def _plain(self, sid: int) -> bool:
        """A simple statement without a body: it flows to the next one (most statements are)."""
        st = self.stmts[sid]
        return st.kind is StmtKind.SIMPLE and not st.body

    def _seq_ops(
        self, sids: Sequence[int], nxt: int, loop: tuple[int, int] | None, handler: int | None
    ) -> list[_Op]:
        groups: list[list[int]] = []
        for sid in sids:
            kind = self.stmts[sid].kind
            if groups and kind in _GROUP_FOLLOWERS.get(self.stmts[groups[-1][0]].kind, ()):
                groups[-1].append(sid)
            else:
                groups.append([sid])
        ops: list[_Op] = []
        for group in reversed(groups):
            ops.append(("group", group, nxt, loop, handler))
            nxt = group[0]
        return ops

    def _group_ops(
        self, group: list[int], nxt: int, loop: tuple[int, int] | None, handler: int | None
    ) -> list[_Op]:
        ops: list[_Op] = []

        def body_then_edge(
            source: int, body: Sequence[int], after: int, lp: tuple[int, int] | None, hd: int | None
        ) -> None:
            ops.append(("seq", body, after, lp, hd))
            ops.append(("edge", source, _entry(body, after)))

        head = group[0]
        st = self.stmts[head]
        kind = st.kind
        if handler is not None:
            ops.append(("exc", head, handler))
        if kind is StmtKind.IF:
            false_target = nxt
            for clause in reversed(group[1:]):
                body_then_edge(clause, self.stmts[clause].body, nxt, loop, handler)
                if self.stmts[clause].kind is StmtKind.ELIF:
                    ops.append(("edge", clause, false_target))
                false_target = clause
            body_then_edge(head, st.body, nxt, loop, handler)
            ops.append(("edge", head, false_target))
        elif kind in (StmtKind.FOR, StmtKind.WHILE):
            exit_target = nxt
            if len(group) > 1:
                els = group[1]
                body_then_edge(els, self.stmts[els].body, nxt, loop, handler)
                exit_target = els
            body_then_edge(head, st.body, head, (head, nxt), handler)
            if not (kind is StmtKind.WHILE and _is_forever(self.lines[st.start_line - 1])):
                ops.append(("edge", head, exit_target))
        elif kind is StmtKind.TRY:
            clauses = {k: [c for c in group[1:] if self.stmts[c].kind is k] for k in _GROUP_FOLLOWERS[kind]}
            after = nxt
            fin = clauses[StmtKind.FINALLY][0] if clauses[StmtKind.FINALLY] else None
            if fin is not None:
                body_then_edge(fin, self.stmts[fin].body, nxt, loop, handler)
                ops.append(("exc", fin, RAISE if handler is None else handler))
                after = fin
            handlers = clauses[StmtKind.EXCEPT]
            for i, h in enumerate(handlers):
                body_then_edge(h, self.stmts[h].body, after, loop, fin if fin is not None else handler)
                unmatched = handlers[i + 1] if i + 1 < len(handlers) else (fin if fin is not None else RAISE)
                ops.append(("exc", h, unmatched))
            body_next = after
            if clauses[StmtKind.ELSE]:
                els = clauses[StmtKind.ELSE][0]
                body_then_edge(els, self.stmts[els].body, after, loop, fin if fin is not None else handler)
                body_next = els
            inner_handler = handlers[0] if handlers else (fin if fin is not None else handler)
            body_then_edge(head, st.body, body_next, loop, inner_handler)
        elif kind is StmtKind.MATCH:
            fallthrough = nxt
            for case in reversed(st.body):
                body_then_edge(case, self.stmts[case].body, nxt, loop, handler)
                ops.append(("edge", case, fallthrough))
                fallthrough = case
            ops.append(("edge", head, fallthrough))
        elif kind is StmtKind.WITH or st.body:
            body_then_edge(head, st.body, nxt, loop, handler)
        elif kind is StmtKind.RETURN:
            ops.append(("edge", head, EXIT))
        elif kind is StmtKind.RAISE:
            ops.append(("edge", head, RAISE if handler is None else handler))
        elif kind is StmtKind.BREAK and loop is not None:
            ops.append(("edge", head, loop[1]))
        elif kind is StmtKind.CONTINUE and loop is not None:
            ops.append(("edge", head, loop[0]))
        else:
            ops.append(("edge", head, nxt))
        return ops


def _entry(sids: Sequence[int], nxt: int) -> int:
    """Where a statement list starts: its first statement (every group starts at its head)."""
    return sids[0] if sids else nxt


# ("edge" | "exc", from, to) or ("seq" | "group", statements, next, loop, handler): one builder step.
_Op = tuple[Any, ...]


def _is_forever(header: str) -> bool:
    """`while True:` / `while 1:` leave only through break, return or raise."""
    text = header.split("#", 1)[0].strip().replace(" ", "")
    return text in ("whileTrue:", "while1:", "while(True):")


def flow_graph(program: Program, function: Function) -> FlowGraph:
    stmts = {sid: program.statements[sid] for sid in function.statements}
    lines = next(f.lines for f in program.files if f.path == function.path)
    b = _Builder(stmts, lines)
    entry = b.seq(function.top_level, EXIT, None, None) if function.top_level else None
    return FlowGraph(
        fid=function.fid,
        entry=entry if entry is not None and entry >= 0 else None,
        succ={k: tuple(dict.fromkeys(v)) for k, v in b.succ.items()},
        exc={k: tuple(v) for k, v in b.exc.items()},
    )


_GRAPHS: dict[int, dict[str, FlowGraph]] = {}


def program_graph(program: Program, function: Function) -> FlowGraph:
    """``flow_graph`` once per program and function (``kept_while``): a parse's graphs of every
    function and the must-run lines of the passes a CI job records of its tests read the same."""
    graphs = kept_while(_GRAPHS, program, dict)
    found = graphs.get(function.fid)
    if found is None:
        found = graphs[function.fid] = flow_graph(program, function)
    return found


def build_blocks(program: Program, graphs: dict[str, FlowGraph]) -> tuple[Block, ...]:
    """Basic blocks of every function, numbered in source order across files (``BLOCK 1`` first)."""
    starts_by_path: dict[str, list[int]] = {}
    for fn in program.functions:
        if fn.kind == "function":
            starts_by_path.setdefault(fn.path, []).append(fn.start_line)
    for starts in starts_by_path.values():
        starts.sort()
    raw: list[tuple[int, int, str, str, int, int, tuple[int, ...]]] = []
    file_order = {f.path: i for i, f in enumerate(program.files)}
    for fn in program.functions:
        if not fn.statements:
            continue
        g = graphs[fn.fid]
        preds: dict[int, int] = {}
        for outs in g.succ.values():
            for t in outs:
                preds[t] = preds.get(t, 0) + 1
        starts = starts_by_path.get(fn.path, [])
        current: list[int] = []
        blocks: list[list[int]] = []
        prev: Statement | None = None
        for sid in fn.statements:
            st = program.statements[sid]
            leader = prev is None or st.kind in _CLAUSE_LEADERS
            if not leader and prev is not None:
                single = g.succ.get(prev.sid, ()) == (sid,) and preds.get(sid, 0) == 1
                i = bisect.bisect_right(starts, prev.end_line)
                nested_between = i < len(starts) and starts[i] < st.start_line
                leader = not single or nested_between
            if leader and current:
                blocks.append(current)
                current = []
            current.append(sid)
            prev = st
        if current:
            blocks.append(current)
        for i, sids in enumerate(blocks):
            lines = [ln for s in sids for ln in program.statements[s].lines]
            if i == 0:
                lines.extend(fn.header_lines)
            if not lines:
                lines = [program.statements[sids[0]].start_line]
            start, end = min(lines), max(lines)
            raw.append((file_order[fn.path], start, fn.path, fn.fid, start, end, tuple(sids)))
    raw.sort(key=lambda r: (r[0], r[1], r[5]))
    return tuple(
        Block(bid=i + 1, path=path, function=fid, start_line=s, end_line=e, sids=sids)
        for i, (_o, _k, path, fid, s, e, sids) in enumerate(raw)
    )


def block_graph(graph: FlowGraph, blocks: Iterable[Block]) -> BlockGraph:
    """The acyclic, chain-merged block CFG of one function (Algorithm 3's input)."""
    import networkx as nx  # only the faithful T2 variants need it: imported on first use

    fblocks = [b for b in blocks if b.function == graph.fid]
    if not fblocks or graph.entry is None:
        return BlockGraph(graph.fid, None, (), ())
    of_sid = {sid: b.bid for b in fblocks for sid in b.sids}
    leaders = {b.sids[0] for b in fblocks}
    g = nx.DiGraph()
    g.add_nodes_from(b.bid for b in fblocks)
    for b in fblocks:
        for sid in b.sids:
            for t in graph.all_succ(sid):
                if t >= 0 and t in of_sid and (of_sid[t] != b.bid or t in leaders):
                    g.add_edge(b.bid, of_sid[t])
    root = of_sid[graph.entry]
    # drop back edges found by a depth-first search from the entry
    g.remove_edges_from(back_edges({n: sorted(g.successors(n)) for n in sorted(g.nodes)}, root))
    # merge straight chains
    merged: dict[int, int] = {}
    nodes: list[list[int]] = []
    for bid in nx.topological_sort(g):
        preds = list(g.predecessors(bid))
        if len(preds) == 1 and g.out_degree(preds[0]) == 1 and preds[0] in merged:
            idx = merged[preds[0]]
            nodes[idx].append(bid)
        else:
            idx = len(nodes)
            nodes.append([bid])
        merged[bid] = idx
    children: list[set[int]] = [set() for _ in nodes]
    for u, v in g.edges():
        if merged[u] != merged[v]:
            children[merged[u]].add(merged[v])
    return BlockGraph(
        fid=graph.fid,
        root=merged[root],
        nodes=tuple(tuple(n) for n in nodes),
        children=tuple(tuple(sorted(c, key=lambda i: nodes[i][0])) for c in children),
    )
