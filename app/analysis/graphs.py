"""Graph algorithms on plain adjacency dicts (node -> successors), linear time, no recursion.

The flow graphs of long test functions have thousands of nodes; these run without the overhead
of a general graph library and without Python's recursion limit.
"""

from __future__ import annotations

from collections import deque


def strongly_connected(succ: dict[int, list[int]]) -> tuple[dict[int, int], list[list[int]]]:
    """Tarjan's SCCs, iteratively; components are numbered in reverse topological order.

    A node's low link lives in a local while its edges are scanned (it runs once per flow graph
    per estimation round, on every function: the hottest loop of the trace).
    """
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
            n = len(outs)
            lo = low[node]
            recurse = False
            while i < n:
                nxt = outs[i]
                i += 1
                if nxt not in index:
                    low[node] = lo
                    work.append((node, i))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    j = index[nxt]
                    if j < lo:
                        lo = j
            if recurse:
                continue
            low[node] = lo
            if lo == index[node]:
                number = len(members)
                if stack[-1] == node:  # a component of one node: the common case
                    stack.pop()
                    on_stack.discard(node)
                    comp[node] = number
                    members.append([node])
                else:
                    group: list[int] = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp[w] = number
                        group.append(w)
                        if w == node:
                            break
                    members.append(group)
            if work:
                parent = work[-1][0]
                if lo < low[parent]:
                    low[parent] = lo
    return comp, members


def chain_between(
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


def back_edges(succ: dict[int, list[int]], root: int) -> list[tuple[int, int]]:
    """Edges closing a cycle in a depth-first search from ``root``, then from any node it missed.

    Removing them leaves the whole graph acyclic, unreachable parts included.
    """
    back: list[tuple[int, int]] = []
    color: dict[int, int] = {}
    for start in (root, *succ):
        if start in color:
            continue
        color[start] = 1
        stack = [(start, iter(list(succ[start])))]
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


def reverse_topological(succ: dict[int, list[int]]) -> list[int]:
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


def reachable(succ: dict[int, list[int]], entry: int) -> set[int]:
    """Every node reachable from ``entry`` (itself included)."""
    seen = {entry}
    queue = deque([entry])
    while queue:
        for v in succ[queue.popleft()]:
            if v not in seen:
                seen.add(v)
                queue.append(v)
    return seen
