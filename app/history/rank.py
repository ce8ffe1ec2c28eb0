"""History-aware ranking of one failure: the static ranking fused with its test's CI history.

One path serves the product ranker and the evaluation alike: ``map_runs`` puts every earlier run
(each with its own script version and estimated trace) into the failure's version's lines and
classifies its flaky failures; ``select_runs`` picks the passes to use (all, FDC or similar
runs); ``line_channels`` computes the history channels per line (Ochiai and DStar over the
spectra, CP on the block graph, the diff since the last passing version); ``element_channels``
lifts them to the rendered elements beside the static rank; the fused order is computed with
and without the passing runs and ``final_order`` keeps each element's better rank (docs/design.md §8.2e).
With no usable run the static ranking comes back unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from app.analysis.model import Analysis, Loc, State
from app.analysis.render import RenderedCode
from app.history.cp import CPRun, block_states, cp_scores
from app.history.fusion import Calibration, Fused, fuse
from app.history.graph import block_edges
from app.history.newlines import MAX_PASS_LOGS, newline_scores, statement_messages
from app.history.newlines import printed as masked_messages
from app.history.selection import DEFAULT_K, RunFacts, run_weight, select_fdc, similar_runs
from app.history.signatures import Run, is_flaky
from app.history.spectrum import FAILING, RunTrace, map_states, scores, spectrum
from app.history.values import divergent, value_scores, value_tuples
from app.history.versions import LineMap, changed_lines, map_lines, version_id
from app.localize.evidence import Channel, Evidence

CHANNEL_OF = {
    "ochiai": Channel.SPECTRUM,
    "cp": Channel.CP,
    "diff": Channel.DIFF,
    "values": Channel.HISTORY_VALUE,
    "newlines": Channel.NEW_LINES,
}
FUSED_CHANNELS = ("static", "ochiai", "cp", "diff", "values", "newlines")
MEANING = {  # what a history channel's positive term says, in a reader's words
    "ochiai": "ran in the failing runs more than in the passing ones",
    "cp": "on the failing runs' paths more than on the passing runs'",
    "diff": "changed since the last passing version",
    "values": "printed a value the passing runs printed otherwise",
    "newlines": "printed a line no passing run printed",
}
Values = Mapping[Loc, frozenset[tuple[str, ...]]]  # log statement -> value tuples it printed
SELECTIONS = ("all", "fdc", "similar")


@dataclass(frozen=True)
class HistoryRun:
    """An earlier run of the failing test (or a sibling in its file), oldest first in a sequence."""

    verdict: str
    files: Mapping[str, str]  # its script version: path -> content
    states: Mapping[Loc, State]  # its estimated trace, in its own version's lines
    env: str = ""
    err_sig: str | None = None
    versions_apart: int = 0  # script versions between this run and the failure
    same_test: bool = True  # False: a sibling test's run (file scope)
    values: Values = field(default_factory=dict)  # what its log statements printed (values.value_tuples)
    commit: str | None = None  # the commit and job it ran in, where CI said
    job_url: str | None = None
    log: str | None = None  # a pass's log, where kept: the failure's new lines are those it never printed


@dataclass(frozen=True)
class Target:
    """The failure the history speaks about: its version, its own line states and its block graph."""

    files: Mapping[str, str]
    states: Mapping[Loc, State]
    block_lines: Mapping[int, tuple[Loc, ...]]
    edges: frozenset[tuple[int, int]]
    exits: frozenset[int]  # the innermost frame's block: where the failing run stopped
    values: Values = field(default_factory=dict)
    functions: Mapping[Loc, tuple[int, int]] = field(default_factory=dict)  # log statement -> its function
    test_lines: frozenset[Loc] = frozenset()  # the failing test method's own lines
    # what its log statements printed, masked, with each statement's lines (``newlines``)
    printed: tuple[tuple[str, tuple[Loc, ...], float], ...] = ()
    scope: frozenset[str] | None = None  # the scripts of its version (None: all of them)

    def with_states(self, states: Mapping[Loc, State]) -> Target:
        return replace(self, states=states)


@dataclass(frozen=True)
class MappedRun:
    """An earlier run in the target's lines, weighted, with its flaky classification."""

    verdict: str
    states: Mapping[Loc, State]
    weight: float
    flaky: bool
    same_test: bool
    files: Mapping[str, str]
    env: str
    values: Values = field(default_factory=dict)
    printed: frozenset[str] = frozenset()  # a pass's log messages, masked (``newlines.printed``)


@dataclass(frozen=True)
class HistoryRanking:
    order: tuple[str, ...]  # element ids, best first
    fused: Mapping[str, Fused] = field(default_factory=dict)
    evidence: Mapping[str, tuple[Evidence, ...]] = field(default_factory=dict)
    runs: tuple[HistoryRun, ...] = ()  # the runs fused (failures and the passes selected), oldest first

    @property
    def runs_used(self) -> int:
        return len(self.runs)


def line_states(analysis: Analysis) -> dict[Loc, State]:
    """The failure's own tplus states per code line (doubtful where kept without a decision)."""
    tplus = analysis.traces["tplus"]
    out: dict[Loc, State] = {}
    for f in analysis.program.files:
        for n in f.code_lines:
            loc = Loc(f.path, n)
            ev = tplus.evidence.get(loc)
            if ev is not None and ev.state in (State.EXE, State.NEXE, State.DBT):
                out[loc] = ev.state
            else:
                out[loc] = State.DBT if loc in tplus.kept else State.NEXE
    return out


def target_of(analysis: Analysis, states: Mapping[Loc, State] | None = None) -> Target:
    blocks = {
        b.bid: tuple(Loc(b.path, n) for n in range(b.start_line, b.end_line + 1)) for b in analysis.blocks
    }
    exits: frozenset[int] = frozenset()
    if analysis.error_frames:
        last = analysis.error_frames[-1]
        exits = frozenset(
            b.bid for b in analysis.blocks if b.path == last.path and b.start_line <= last.line <= b.end_line
        )
    spans = {f.fid: (f.start_line, f.end_line) for f in analysis.program.functions if f.kind != "module"}
    test_lines = frozenset(
        Loc(f.path, n)
        for f in analysis.program.functions
        if f.kind != "module"
        and f.name.startswith("test")
        and any(fr.path == f.path and f.start_line <= fr.line <= f.end_line for fr in analysis.error_frames)
        for n in range(f.start_line, f.end_line + 1)
    )
    functions = {}
    for statement in analysis.log_statements:
        if statement.sid is not None:
            fid = analysis.program.statements[statement.sid].function
            if fid in spans:
                functions[Loc(statement.path, statement.line)] = spans[fid]
    return Target(
        {f.path: "\n".join(f.lines) for f in analysis.program.files},
        line_states(analysis) if states is None else states,
        blocks,
        frozenset(block_edges(analysis)),
        exits,
        value_tuples(analysis),
        functions,
        test_lines,
        printed=statement_messages(analysis),
    )


def map_runs(target: Target, history: Sequence[HistoryRun]) -> list[MappedRun]:
    """Each run through its own version's line map onto the target; flaky failures marked.

    Flakiness compares runs at one (script version, environment): the version is the run's own
    content, so a pass before a faulty edit and the failure after it are not a flip.
    """
    maps: dict[tuple[str, str], LineMap] = {}
    logs: dict[str, frozenset[str]] = {}  # a pass's log -> its masked messages (runs may share one)
    seen: dict[tuple[int, int], tuple[str, dict[Loc, State], Values]] = {}  # runs sharing trace and version
    prior: list[Run] = []
    out = []
    for h in history:
        memo = (id(h.files), id(h.states))
        if memo not in seen:
            lmaps = {}
            for path, new in target.files.items():
                if path not in h.files:
                    continue
                key = (path, h.files[path])
                if key not in maps:
                    maps[key] = map_lines(h.files[path].splitlines(), new.splitlines())
                lmaps[path] = maps[key]
            values = {}
            for loc, tuples in h.values.items():
                lmap = lmaps.get(loc.path)
                line = lmap.forward.get(loc.line) if lmap else None
                if line is not None and line not in lmap.modified:
                    values[Loc(loc.path, line)] = tuples
            seen[memo] = (version_id(h.files), map_states(h.states, lmaps), values)
        version, states, values = seen[memo]
        if not h.same_test and target.test_lines:
            states = _not_in_test(states, target.test_lines)
        run = Run(h.verdict, version, h.env, h.err_sig)
        flaky = h.same_test and h.verdict in FAILING and is_flaky(prior, run)
        if h.same_test:
            prior.append(run)
        said: frozenset[str] = frozenset()
        if h.log and h.verdict == "pass" and h.same_test:
            if h.log not in logs:
                logs[h.log] = masked_messages(h.log)
            said = logs[h.log]
        out.append(
            MappedRun(
                h.verdict,
                states,
                run_weight(h.versions_apart),
                flaky,
                h.same_test,
                h.files,
                h.env,
                values,
                said,
            )
        )
    return out


def _not_in_test(states: Mapping[Loc, State], test_lines: frozenset[Loc]) -> dict[Loc, State]:
    """A sibling test's run, with the failing test method's doubtful lines as not executed.

    A test runner calls each test method for its own test only, so another test's run did not
    execute this one's body; left doubtful there, those lines counted as half-run passes against
    the fault.
    """
    return {
        loc: State.NEXE if loc in test_lines and s in (State.DBT, State.UNKNOWN) else s
        for loc, s in states.items()
    }


def _ran(states: Mapping[Loc, State]) -> frozenset[Loc]:
    return frozenset(loc for loc, s in states.items() if s != State.NEXE)


def select_runs(
    target: Target, runs: Sequence[MappedRun], mode: str = "all", k: int = DEFAULT_K
) -> list[MappedRun]:
    """Every failing run, and the passes ``mode`` picks: all, FDC or the most similar.

    FDC and similarity are docs/design.md §8.2c and §8.2d.
    """
    if mode == "all":
        return list(runs)
    if mode not in SELECTIONS:
        raise ValueError(f"unknown run selection {mode!r}; choose one of {', '.join(SELECTIONS)}")
    passes = {str(i): r for i, r in enumerate(runs) if r.verdict == "pass"}
    if mode == "fdc":
        failing = _ran(target.states)
        chosen = set(select_fdc({i: _ran(r.states) & failing for i, r in passes.items()}, failing, k))
    else:
        mine = _facts(target, target.states, "")
        facts = {i: _facts(target, r.states, r.env) for i, r in passes.items()}
        env = next((r.env for r in reversed(runs) if r.same_test and r.verdict in FAILING), "")
        mine = RunFacts(mine.decisions, {"env": env})
        chosen = set(similar_runs([mine], facts, k))
    return [r for i, r in enumerate(runs) if r.verdict != "pass" or str(i) in chosen]


def _facts(target: Target, states: Mapping[Loc, State], env: str) -> RunFacts:
    """Decisions as the blocks a run entered or skipped (doubtful blocks unknown), and its env."""
    blocks = block_states(states, target.block_lines)
    decisions = {b: s == State.EXE for b, s in blocks.items() if s in (State.EXE, State.NEXE)}
    return RunFacts(decisions, {"env": env})


def run_traces(runs: Sequence[MappedRun]) -> list[RunTrace]:
    """The runs as the spectrum counts them (weighted, flaky failures marked)."""
    return [RunTrace(r.verdict, r.states, r.weight, r.flaky) for r in runs]


def selection_of(k: int) -> str:
    """The run selection a product window asks for: FDC over the passes when ``k`` > 0, else all."""
    return "fdc" if k > 0 else "all"


def line_channels(
    target: Target, runs: Sequence[MappedRun], *, passes: bool = True
) -> dict[str, dict[Loc, float]]:
    """Per history channel, line -> score, from the runs and the failure itself.

    ``passes=False`` drops the passing runs from the spectrum and CP (the failing-only view the
    min rule compares with); the diff channel reads the last passing version either way.
    """
    used = [r for r in runs if passes or r.verdict != "pass"]
    traces = run_traces(used)
    traces.append(RunTrace("fail", target.states))
    ran = sorted(_ran(target.states))
    counts = spectrum(traces, ran, failure=target.states)
    out: dict[str, dict[Loc, float]] = {"ochiai": scores(counts, "ochiai"), "dstar": scores(counts, "dstar")}
    cp_runs = [
        CPRun(r.verdict, block_states(r.states, target.block_lines), r.weight, flaky=r.flaky) for r in used
    ]
    cp_runs.append(CPRun("fail", block_states(target.states, target.block_lines), exits=target.exits))
    cp = cp_scores(list(target.block_lines), target.edges, cp_runs).scores
    if cp:
        out["cp"] = {loc: cp[b] for b, locs in target.block_lines.items() if b in cp for loc in locs}
    last_pass = next((r for r in reversed(runs) if r.same_test and r.verdict == "pass"), None)
    mine = {p: text for p, text in target.files.items() if target.scope is None or p in target.scope}
    if last_pass is not None and dict(last_pass.files) != mine:
        # a script outside the failure's version (one given along, never reached) changed nothing
        diff = {
            Loc(p, n): 1.0
            for p, n in changed_lines(last_pass.files, mine)
            if target.states.get(Loc(p, n), State.NEXE) != State.NEXE
        }
        if diff:
            out["diff"] = diff
    valued = [r.values for r in used if r.verdict == "pass" and r.values]
    if valued and target.values:
        changed = divergent(target.values, valued)
        if changed:
            out["values"] = value_scores(target.files, changed, target.functions, target.states)
    # the newest passes' logs: what the test prints when it passes (the channel reads runs, not
    # passes' traces, so it is the same with and without the passing runs' spectra)
    said = [r.printed for r in runs if r.verdict == "pass" and r.printed][-MAX_PASS_LOGS:]
    if said and target.printed:
        new = newline_scores(target.printed, frozenset().union(*said))
        if new:
            out["newlines"] = dict(new)
    return out


def element_channels(
    lines: Mapping[str, Mapping[Loc, float]],
    members: Mapping[str, Sequence[Loc]],
    static_order: Sequence[str],
    channels: Sequence[str] = FUSED_CHANNELS,
) -> dict[str, dict[str, float]]:
    """The fused channels per element (its best line's score); static as minus its rank."""
    out: dict[str, dict[str, float]] = {}
    if "static" in channels:
        out["static"] = {e: -float(i) for i, e in enumerate(static_order)}
    for name, line_scores in lines.items():
        if name not in channels:
            continue
        per = {}
        for eid, locs in members.items():
            values = [line_scores[loc] for loc in locs if loc in line_scores]
            if values:
                per[eid] = round(max(values), 9)
        if per:
            out[name] = per
    return out


def final_order(with_passes: Sequence[str], without_passes: Sequence[str]) -> list[str]:
    """min(rank with passes, rank without), ties to the former: passes that also ran the fault
    cannot bury it (docs/design.md §8.2e)."""
    a = {e: i for i, e in enumerate(with_passes)}
    b = {e: i for i, e in enumerate(without_passes)}
    return sorted(with_passes, key=lambda e: (min(a[e], b.get(e, a[e])), a[e]))


def members_of(rendered: RenderedCode) -> dict[str, list[Loc]]:
    return {e.id: [Loc(e.path, n) for n in e.lines] for e in rendered.elements}


def rank_with_history(
    analysis: Analysis,
    rendered: RenderedCode,
    static_order: Sequence[str],
    history: Sequence[HistoryRun],
    calibration: Calibration,
    *,
    selection: str = "all",
    k: int = DEFAULT_K,
    scope: frozenset[str] | None = None,
) -> HistoryRanking:
    """The fused order; ``selection`` and ``k`` pick the passes as ``select_runs`` does; ``scope``
    names the scripts of the failure's version (``app.history.records.scope_paths``)."""
    elements = [e.id for e in rendered.elements]
    known = set(elements)
    order = [*[e for e in static_order if e in known], *(e for e in elements if e not in set(static_order))]
    if not history:
        return HistoryRanking(tuple(order))
    target = replace(target_of(analysis), scope=scope)
    mapped = map_runs(target, history)
    runs = select_runs(target, mapped, selection, k)
    kept = {id(r) for r in runs}
    used_runs = tuple(h for h, r in zip(history, mapped, strict=True) if id(r) in kept)
    members = members_of(rendered)
    with_p = element_channels(line_channels(target, runs), members, order)
    without_p = element_channels(line_channels(target, runs, passes=False), members, order)
    fused = fuse(with_p, elements, calibration, order)
    alone = fuse(without_p, elements, calibration, order)
    final = final_order([f.element for f in fused], [f.element for f in alone])
    used = len(runs)
    by_id = {e.id: e for e in rendered.elements}
    evidence: dict[str, tuple[Evidence, ...]] = {}
    for f in fused:
        element = by_id[f.element]
        evidence[f.element] = tuple(
            Evidence(
                CHANNEL_OF[c],
                round(term, 4),
                element.path,
                element.start_line,
                f"{MEANING[c]} ({used} earlier runs)",
            )
            for c, term in sorted(f.terms.items(), key=lambda kv: -kv[1])
            if c in CHANNEL_OF and term > 0
        )
    return HistoryRanking(tuple(final), {f.element: f for f in fused}, evidence, used_runs)
