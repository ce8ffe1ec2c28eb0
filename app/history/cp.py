"""CP: propagation of infected program states on the block graph (docs/design.md §8.2b).

Edges traversed more in failing than in passing runs are suspicious (CP Eq. 1-2); a block is as
suspicious as the infection it passes on to its successors (Eq. 4-5), and a failure's exit
blocks (in our runs: the block of the innermost traceback frame) collect their incoming
edges' suspicion (Eq. 6). The scores are unbounded, so callers fuse CP by rank, not by value.
Cycles are kept; a singular system is solved by least squares and says so.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from app.analysis.model import State
from app.history.spectrum import FAILING, PASSING, StateWeights

ZERO_DENOMINATOR = 1e-10  # CP's own value for a zero denominator (docs/design.md §8.2b)

Node = Hashable
Edge = tuple[Node, Node]


@dataclass(frozen=True)
class CPRun:
    verdict: str
    block_states: Mapping[Node, State]
    weight: float = 1.0
    exits: frozenset[Node] = frozenset()  # where a failing run stopped (innermost frame's block)
    flaky: bool = False


@dataclass(frozen=True)
class CPResult:
    scores: dict[Node, float]  # BR per block; blocks no failing run reached are absent
    edge_delta: dict[Edge, float] = field(default_factory=dict)  # θΔ of traversed edges
    warnings: tuple[str, ...] = ()


def block_states(line_states: Mapping[object, State], members: Mapping[Node, Iterable[object]]) -> dict:
    """A block ran when any of its lines did, did not when all did not, else doubtful."""
    out: dict[Node, State] = {}
    for bid, lines in members.items():
        seen = {line_states[x] for x in lines if x in line_states}
        if not seen:
            continue
        if State.EXE in seen:
            out[bid] = State.EXE
        elif seen == {State.NEXE}:
            out[bid] = State.NEXE
        else:
            out[bid] = State.DBT
    return out


def edge_state(a: State | None, b: State | None) -> State | None:
    """E if both ends ran, N if either did not, else doubtful (docs/design.md §8.1).

    None if either end is absent.
    """
    if a is None or b is None:
        return None
    if State.NEXE in (a, b):
        return State.NEXE
    if a == State.EXE and b == State.EXE:
        return State.EXE
    return State.DBT


def cp_scores(
    blocks: Iterable[Node],
    edges: Iterable[Edge],
    runs: Iterable[CPRun],
    weights: StateWeights | None = None,
) -> CPResult:
    w = weights or StateWeights()
    nodes = list(dict.fromkeys(blocks))
    edge_list = list(dict.fromkeys(edges))
    sum_p = dict.fromkeys(edge_list, 0.0)
    sum_f = dict.fromkeys(edge_list, 0.0)
    u = v = 0
    exits: set[Node] = set()
    reached: set[Node] = set()
    for run in runs:
        if run.verdict in FAILING and not run.flaky:
            v += 1
            table, acc = w.fail, sum_f
            exits.update(run.exits)
            reached.update(b for b, s in run.block_states.items() if s != State.NEXE)
        elif run.verdict in PASSING:
            u += 1
            table, acc = w.passed, sum_p
        else:
            continue
        for a, b in edge_list:
            state = edge_state(run.block_states.get(a), run.block_states.get(b))
            if state is not None:
                acc[(a, b)] += run.weight * table.get(state, 0.0)
    if v == 0:
        return CPResult({}, {}, ("no failing run: CP has nothing to propagate",))
    delta: dict[Edge, float] = {}
    for e in edge_list:
        failed = sum_f[e] / v
        passed = sum_p[e] / u if u else 0.0
        if failed + passed > 0:
            delta[e] = (failed - passed) / (failed + passed)
    incoming: dict[Node, float] = {}
    for (_, b), d in delta.items():
        incoming[b] = incoming.get(b, 0.0) + d
    has_out = {a for a, _ in delta}
    exit_nodes = exits | {n for n in nodes if n in incoming and n not in has_out}
    index = {n: i for i, n in enumerate(nodes)}
    n = len(nodes)
    matrix = np.eye(n)
    rhs = np.zeros(n)
    for node in exit_nodes:
        if node in index:
            rhs[index[node]] = incoming.get(node, 0.0)
    for (a, b), d in delta.items():
        if a in exit_nodes or a not in index or b not in index:
            continue
        denom = incoming[b] if incoming[b] != 0 else ZERO_DENOMINATOR
        matrix[index[a], index[b]] -= d / denom
    warnings: list[str] = []
    try:
        solution = np.linalg.solve(matrix, rhs)
    except np.linalg.LinAlgError:
        solution = np.linalg.lstsq(matrix, rhs, rcond=None)[0]
        warnings.append("CP's equation system is singular; solved by least squares")
    scores = {node: float(solution[index[node]]) for node in nodes if node in reached or node in exit_nodes}
    return CPResult(scores, delta, tuple(warnings))
