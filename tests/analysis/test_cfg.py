"""Flow graphs and basic blocks for every compound statement, on real code through tree-sitter."""

from __future__ import annotations

import textwrap

from app.analysis.cfg import EXIT, RAISE, block_graph, build_blocks, flow_graph
from app.analysis.model import Script
from app.analysis.source import parse_program, statement_at


def setup(code: str):
    prog = parse_program([Script("t.py", textwrap.dedent(code))])
    graphs = {f.fid: flow_graph(prog, f) for f in prog.functions}
    blocks = build_blocks(prog, graphs)
    return prog, graphs, blocks


def sid(prog, line: int) -> int:
    st = statement_at(prog, "t.py", line)
    assert st is not None
    return st.sid


def spans(blocks) -> list[tuple[int, int]]:
    return [(b.start_line, b.end_line) for b in blocks]


def test_if_elif_else_blocks_and_edges():
    prog, graphs, blocks = setup(
        """\
        def f(x):
            a = 1
            if x == 1:
                b = 2
            elif x == 2:
                c = 3
            else:
                d = 4
            return a
        """
    )
    assert spans(blocks) == [(1, 3), (4, 4), (5, 5), (6, 6), (7, 8), (9, 9)]
    g = graphs["f"]
    assert set(g.succ[sid(prog, 3)]) == {sid(prog, 4), sid(prog, 5)}
    assert set(g.succ[sid(prog, 5)]) == {sid(prog, 6), sid(prog, 7)}
    assert g.succ[sid(prog, 9)] == (EXIT,)


def test_loops_break_continue_else_and_back_edges_removed_for_algorithm_3():
    prog, graphs, blocks = setup(
        """\
        def f(items):
            for x in items:
                if x:
                    continue
                if x is None:
                    break
                y = x
            else:
                z = 0
            while True:
                poll()
            done()
        """
    )
    g = graphs["f"]
    assert g.succ[sid(prog, 4)] == (sid(prog, 2),)  # continue -> loop header
    assert g.succ[sid(prog, 6)] == (sid(prog, 10),)  # break skips the loop's else
    assert g.succ[sid(prog, 7)] == (sid(prog, 2),)  # back edge
    assert set(g.succ[sid(prog, 2)]) == {sid(prog, 3), sid(prog, 8)}
    assert g.succ[sid(prog, 10)] == (sid(prog, 11),)  # `while True` leaves only by break
    bg = block_graph(g, blocks)
    # acyclic: no node reaches itself
    seen_cycle = False
    for start in range(len(bg.nodes)):
        stack, seen = list(bg.children[start]), set()
        while stack:
            n = stack.pop()
            if n == start:
                seen_cycle = True
            if n not in seen:
                seen.add(n)
                stack.extend(bg.children[n])
    assert not seen_cycle


def test_try_except_else_finally_and_exception_edges():
    prog, graphs, blocks = setup(
        """\
        def f():
            try:
                a = run()
                b = more()
            except KeyError:
                raise
            except Exception as exc:
                log(exc)
            else:
                ok()
            finally:
                cleanup()
            after()
        """
    )
    g = graphs["f"]
    handler = sid(prog, 5)
    assert handler in g.exc[sid(prog, 3)] and handler in g.exc[sid(prog, 4)]
    assert g.exc[handler] == (sid(prog, 7),)  # an unmatched exception tries the next handler
    assert g.succ[sid(prog, 6)] == (sid(prog, 11),)  # re-raise goes through finally
    assert RAISE in g.exc[sid(prog, 11)]
    assert g.succ[sid(prog, 12)] == (sid(prog, 13),)
    # the try body stays one block despite its exception edges
    assert spans(blocks) == [(1, 4), (5, 6), (7, 8), (9, 10), (11, 13)]


def test_match_with_and_nested_defs_split_blocks():
    prog, graphs, blocks = setup(
        """\
        def f(cmd):
            with lock:
                first = 1
            def helper():
                return 2
            match cmd:
                case "a":
                    x = 1
                case _:
                    x = 2
            return x
        """
    )
    assert (1, 3) in spans(blocks)  # `with` does not branch
    assert (4, 5) in spans(blocks)  # the nested function has its own block
    g = graphs["f"]
    assert set(g.succ[sid(prog, 7)]) == {sid(prog, 8), sid(prog, 9)}
    ids = [b.bid for b in blocks]
    assert ids == list(range(1, len(blocks) + 1))
    assert [b.start_line for b in blocks] == sorted(b.start_line for b in blocks)


def test_blocks_are_numbered_across_files_in_order():
    prog = parse_program([Script("a.py", "def f():\n    x = 1\n"), Script("b.py", "def g():\n    y = 2\n")])
    graphs = {f.fid: flow_graph(prog, f) for f in prog.functions}
    blocks = build_blocks(prog, graphs)
    assert [(b.bid, b.path) for b in blocks] == [(1, "a.py"), (2, "b.py")]
