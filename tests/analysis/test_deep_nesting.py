"""Deep nesting: the source walk and the flow-graph builder use explicit stacks, not recursion.

Each test runs under a recursion limit far below the nesting depth, so a recursive walk would fail.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator

import pytest

from app.analysis.cfg import build_blocks, flow_graph
from app.analysis.model import Script
from app.analysis.source import parse_program

LOW_LIMIT = 150


@pytest.fixture
def low_recursion_limit() -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(LOW_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def nested(header: str, depth: int, leaf: str = "print('deep')") -> str:
    """``def test_x():`` holding ``depth`` nested ``header`` blocks ({i} is the level)."""
    lines = ["def test_x():"]
    for i in range(depth):
        lines.append("    " * (i + 1) + header.format(i=i))
    lines.append("    " * (depth + 1) + leaf)
    return "\n".join(lines) + "\n"


def nested_defs(depth: int) -> str:
    lines = ["    " * i + f"def f{i}():" for i in range(depth)]
    lines.append("    " * depth + "print('deep')")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("header", "depth"),
    [("if x{i}:", 330), ("for i{i} in y:", 330), ("while z{i}:", 300), ("with c{i}:", 300)],
)
def test_deep_blocks_parse_to_a_chain_of_bodies(low_recursion_limit: None, header: str, depth: int) -> None:
    program = parse_program([Script("t.py", nested(header, depth))])
    statements = program.statements
    assert len(statements) == depth + 1
    # preorder ids, each statement the only body statement of the one before it
    for outer, inner in itertools.pairwise(statements):
        assert inner.parent == outer.sid
        assert outer.body == (inner.sid,)
        assert inner.depth == outer.depth + 1


def test_deep_blocks_give_a_flow_graph_through_every_level(low_recursion_limit: None) -> None:
    depth = 330
    program = parse_program([Script("t.py", nested("if x{i}:", depth))])
    function = next(f for f in program.functions if f.name == "test_x")
    graph = flow_graph(program, function)
    sids = [s.sid for s in program.statements]
    assert graph.entry == sids[0]
    for outer, inner in itertools.pairwise(sids):
        assert inner in graph.succ[outer]
    blocks = build_blocks(program, {function.fid: graph})
    assert blocks


def test_deep_defs_are_each_a_function(low_recursion_limit: None) -> None:
    depth = 400
    program = parse_program([Script("t.py", nested_defs(depth))])
    names = [f.name for f in program.functions if f.kind == "function"]
    assert names == [f"f{i}" for i in range(depth)]
    innermost = next(f for f in program.functions if f.name == f"f{depth - 1}")
    assert len(innermost.statements) == 1
    assert innermost.parent == next(f.fid for f in program.functions if f.name == f"f{depth - 2}")


def test_try_chains_nested_deeply_keep_their_handlers(low_recursion_limit: None) -> None:
    depth = 200
    lines = ["def test_x():"]
    for i in range(depth):
        pad = "    " * (2 * i + 1)
        lines += [pad + "try:", pad + "    pass"]
    # close the innermost first: each try gets its handler after its body
    for i in reversed(range(depth)):
        pad = "    " * (2 * i + 1)
        lines += [pad + "except E:", pad + f"    h{i}()"]
    code = "\n".join(lines) + "\n"
    program = parse_program([Script("t.py", code)])
    function = next(f for f in program.functions if f.name == "test_x")
    graph = flow_graph(program, function)
    handlers = [s.sid for s in program.statements if s.kind.name == "EXCEPT"]
    assert len(handlers) == depth
    assert all(h in graph.succ for h in handlers)
