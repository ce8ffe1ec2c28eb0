"""The block graph CP propagates on: intraprocedural flow plus call and return edges (cycles kept)."""

from __future__ import annotations

from app.analysis.callsites import call_sites
from app.analysis.cfg import EXIT, flow_graph
from app.analysis.model import Analysis


def block_edges(analysis: Analysis) -> set[tuple[int, int]]:
    """(bid, bid) edges: statement flow between blocks, call site -> callee entry, callee exit -> site."""
    program = analysis.program
    block_of = {sid: b.bid for b in analysis.blocks for sid in b.sids}
    edges: set[tuple[int, int]] = set()
    entries: dict[str, int] = {}
    exits: dict[str, set[int]] = {}
    for function in program.functions:
        graph = flow_graph(program, function)
        if graph.entry is not None and graph.entry in block_of:
            entries[function.fid] = block_of[graph.entry]
        for sid in function.statements:
            if sid not in block_of:
                continue
            for nxt in graph.all_succ(sid):
                if nxt == EXIT:
                    exits.setdefault(function.fid, set()).add(block_of[sid])
                elif nxt >= 0 and nxt in block_of and block_of[nxt] != block_of[sid]:
                    edges.add((block_of[sid], block_of[nxt]))
    for fid, sites in call_sites(program).items():
        if fid not in entries:
            continue
        for site in sites:
            if site in block_of:
                edges.add((block_of[site], entries[fid]))
                edges.update((b, block_of[site]) for b in exits.get(fid, ()))
    return edges
