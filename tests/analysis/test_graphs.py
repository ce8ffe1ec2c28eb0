"""Graph algorithms the estimators rely on, checked against networkx."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.graphs import strongly_connected

EDGES = st.integers(1, 25).flatmap(
    lambda n: st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)))
)


@settings(max_examples=200, deadline=None)
@given(EDGES)
def test_tarjan_matches_networkx_and_orders_components_topologically(edges):
    nodes = {u for e in edges for u in e} | {0}
    succ = {n: [] for n in nodes}
    for u, v in edges:
        if v not in succ[u]:
            succ[u].append(v)
    comp, members = strongly_connected(succ)
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    expected = {frozenset(c) for c in nx.strongly_connected_components(g)}
    assert {frozenset(m) for m in members} == expected
    for u, v in edges:  # reverse topological numbering: edges never go to a higher component
        assert comp[u] >= comp[v]


def test_chain_between_keeps_nodes_between_consecutive_chain_elements():
    from app.analysis.graphs import chain_between

    # 0 -> 1 -> 3, 0 -> 2 -> 3, 3 -> 4; chain 0, 1, 4: node 2 lies on no walk through 1
    csucc = [{1, 2}, {3}, {3}, {4}, set()]
    cpred = [set(), {0}, {0}, {1, 2}, {3}]
    assert chain_between(csucc, cpred, [0, 1, 4], open_end=False) == {0, 1, 3, 4}
    assert chain_between(csucc, cpred, [0, 1], open_end=True) == {0, 1, 3, 4}
    assert chain_between(csucc, cpred, [0, 1, 2], open_end=False) is None  # 1 and 2 exclude each other
