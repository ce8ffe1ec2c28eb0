"""The block graph CP walks: flow between blocks plus call and return edges, from the real parser."""

from __future__ import annotations

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.history.graph import block_edges

SCRIPT = """def helper(x):
    y = x + 1
    return y


def test_main():
    a = helper(1)
    if a > 1:
        print("big")
    else:
        print("small")
    assert a == 2
"""


def test_flow_call_and_return_edges() -> None:
    analysis = analyze([Script("t.py", SCRIPT)], "")
    block_at = {n: b.bid for b in analysis.blocks for n in range(b.start_line, b.end_line + 1)}
    edges = block_edges(analysis)
    assert (block_at[7], block_at[2]) in edges  # call site -> callee entry
    assert (block_at[3], block_at[7]) in edges  # callee exit -> call site
    assert (block_at[8], block_at[9]) in edges and (block_at[8], block_at[11]) in edges
    assert (block_at[9], block_at[12]) in edges and (block_at[11], block_at[12]) in edges
    assert all(a != b for a, b in edges)
