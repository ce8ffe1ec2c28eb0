"""What every estimator reads: the options, the known states from Algorithm 1, and the flow graphs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from app.analysis.cfg import FlowGraph
from app.analysis.graphs import strongly_connected
from app.analysis.model import Function, Program, State, TraceReason


@dataclass(frozen=True)
class EstimateOptions:
    """Switches for the enhanced trace; faithful variants ignore all but ``path_budget``."""

    call_site_inference: bool = True
    termination: bool = True
    walk_semantics: bool = True
    normal_return: bool = True
    log_coverage: bool = True  # missing messages count only where the log could show them
    test_selection: bool = True  # other tests of the script are not in the failing test's trace
    log_window: bool = True  # missing messages count only after the log's first matched message
    after_failure: bool = True  # finally blocks, tearDown, cleanups, fixture teardown run after the failure
    setup_failure: bool = True  # a failure in setUp or a fixture: the test body did not run
    proven_states: bool = True  # "executed" only where proven; other kept lines are "doubtful"
    path_budget: int = 100_000  # Algorithm 3 stack pops per function before the conservative fallback

    def without(self, names: Iterable[str]) -> EstimateOptions:
        """A copy with the named refinements switched off (names as in ``REFINEMENTS``).

        Unknown names raise ValueError, so a typo in a disabled-channel list is not silently ignored.
        """
        changes: dict[str, bool] = {}
        for name in names:
            field_name = REFINEMENTS.get(name)
            if field_name is None:
                raise ValueError(f"unknown trace refinement {name!r}; one of {', '.join(REFINEMENTS)}")
            changes[field_name] = False
        return replace(self, **changes)


REFINEMENTS: dict[str, str] = {
    "call-site": "call_site_inference",
    "termination": "termination",
    "walk": "walk_semantics",
    "normal-return": "normal_return",
    "log-coverage": "log_coverage",
    "test-selection": "test_selection",
    "log-window": "log_window",
    "after-failure": "after_failure",
    "setup-failure": "setup_failure",
    "proven-states": "proven_states",
}
"""Names of the enhanced trace's switchable refinements (for disabled-channel lists) -> option field."""


NO_EVIDENCE = TraceReason(State.EXE, "no-evidence", "no known statement in this function: kept whole")


@dataclass
class EstimateContext:
    program: Program
    graphs: dict[str, FlowGraph]
    exe: frozenset[int]
    nexe: frozenset[int]
    options: EstimateOptions
    errors: frozenset[int] = frozenset()
    warnings: list[str] = field(default_factory=list)
    fn_by_id: dict[str, Function] = field(default_factory=dict)

    looping: dict[str, set[int]] = field(default_factory=dict)  # fid -> its statements on a cycle

    def __post_init__(self) -> None:
        self.fn_by_id = {f.fid: f for f in self.program.functions}

    def in_loop(self, sid: int) -> bool:
        """Whether a statement can run more than once per call of its function (it lies on a cycle).

        Decided per function on first use: few functions are ever asked about."""
        fid = self.program.statements[sid].function
        looping = self.looping.get(fid)
        if looping is None:
            looping = self.looping[fid] = set()
            graph = self.graphs[fid]
            succ = {s: [t for t in graph.all_succ(s) if t >= 0] for s in self.fn_by_id[fid].statements}
            _comp, members = strongly_connected(succ)
            for group in members:
                if len(group) > 1 or group[0] in succ.get(group[0], ()):
                    looping.update(group)
        return sid in looping

    def functions(self) -> Iterable[Function]:
        return (f for f in self.program.functions if f.statements)


# ---------------------------------------------------------------------------------------------
# Algorithm 2: fill in the gaps


def known_evidence(ctx: EstimateContext, sid: int) -> TraceReason:
    if sid in ctx.errors:
        return TraceReason(State.EXE, "traceback", "a frame of the failure's traceback: it ran")
    if sid in ctx.exe:
        return TraceReason(State.EXE, "log-match", "its message is in the log, matched to no other statement")
    return TraceReason(State.NEXE, "log-match", "static log statement whose message is not in the log")


# ---------------------------------------------------------------------------------------------
# Algorithm 3: CFG paths
