"""History-aware ranking of one failure: the static ranking fused with its test's CI history.

Given the failure's analysis, the rendered elements, the static ranking and earlier runs (each
with its own script version and estimated trace), this computes the history channels (Ochiai
over estimated traces, CP on the block graph, the diff since the last passing version), fuses
them with the static rank by calibrated log-odds, and returns each element's terms as typed
evidence. With no usable run the static ranking comes back unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.analysis.model import Analysis, Loc, State
from app.analysis.render import RenderedCode
from app.history.cp import CPRun, block_states, cp_scores
from app.history.fusion import Calibration, Fused, fuse
from app.history.graph import block_edges
from app.history.selection import run_weight
from app.history.signatures import Run, is_flaky
from app.history.spectrum import RunTrace, map_states, scores, spectrum
from app.history.versions import changed_lines, map_lines
from app.localize.evidence import Channel, Evidence

CHANNEL_OF = {"ochiai": Channel.SPECTRUM, "cp": Channel.CP, "diff": Channel.DIFF}


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


@dataclass(frozen=True)
class HistoryRanking:
    order: tuple[str, ...]  # element ids, best first
    fused: Mapping[str, Fused] = field(default_factory=dict)
    evidence: Mapping[str, tuple[Evidence, ...]] = field(default_factory=dict)
    runs_used: int = 0


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


def channel_scores(
    analysis: Analysis, rendered: RenderedCode, static_order: Sequence[str], history: Sequence[HistoryRun]
) -> tuple[dict[str, dict[str, float]], int]:
    """Per channel, element -> score (static as minus its rank); and how many runs counted."""
    channels: dict[str, dict[str, float]] = {"static": {e: -float(i) for i, e in enumerate(static_order)}}
    if not history:
        return channels, 0
    target = {f.path: "\n".join(f.lines) for f in analysis.program.files}
    mine = line_states(analysis)
    members = {e.id: [Loc(e.path, n) for n in e.lines] for e in rendered.elements}
    block_lines = {
        b.bid: [Loc(b.path, n) for n in range(b.start_line, b.end_line + 1)] for b in analysis.blocks
    }
    prior: list[Run] = []
    runs, cp_runs = [], []
    for h in history:
        maps = {p: map_lines(h.files[p].splitlines(), target[p].splitlines()) for p in target if p in h.files}
        run = Run(h.verdict, "", h.env, h.err_sig)
        flaky = h.same_test and h.verdict in ("fail", "error") and is_flaky(prior, run)
        if h.same_test:
            prior.append(run)
        states = map_states(h.states, maps)
        weight = run_weight(h.versions_apart)
        runs.append(RunTrace(h.verdict, states, weight, flaky))
        cp_runs.append(CPRun(h.verdict, block_states(states, block_lines), weight, flaky=flaky))
    exits = frozenset()
    if analysis.error_frames:
        last = analysis.error_frames[-1]
        exits = frozenset(
            b.bid for b in analysis.blocks if b.path == last.path and b.start_line <= last.line <= b.end_line
        )
    runs.append(RunTrace("fail", mine))
    cp_runs.append(CPRun("fail", block_states(mine, block_lines), exits=exits))
    ran = [loc for loc, s in mine.items() if s != State.NEXE]
    ochiai = scores(spectrum(runs, ran), "ochiai")
    channels["ochiai"] = _elements(ochiai, members)
    cp = cp_scores(list(block_lines), block_edges(analysis), cp_runs).scores
    if cp:
        channels["cp"] = _elements(
            {loc: cp[b] for b, locs in block_lines.items() if b in cp for loc in locs}, members
        )
    passes = [h for h in history if h.same_test and h.verdict == "pass"]
    if passes and dict(passes[-1].files) != target:
        diff = {
            Loc(p, n): 1.0
            for p, n in changed_lines(passes[-1].files, target)
            if mine.get(Loc(p, n)) != State.NEXE
        }
        if diff:
            channels["diff"] = _elements(diff, members)
    return channels, len(history)


def _elements(line_scores: Mapping[Loc, float], members: Mapping[str, list[Loc]]) -> dict[str, float]:
    out = {}
    for eid, locs in members.items():
        values = [line_scores[loc] for loc in locs if loc in line_scores]
        if values:
            out[eid] = round(max(values), 9)
    return out


def rank_with_history(
    analysis: Analysis,
    rendered: RenderedCode,
    static_order: Sequence[str],
    history: Sequence[HistoryRun],
    calibration: Calibration,
) -> HistoryRanking:
    elements = [e.id for e in rendered.elements]
    order = [
        *[e for e in static_order if e in set(elements)],
        *(e for e in elements if e not in set(static_order)),
    ]
    channels, used = channel_scores(analysis, rendered, order, history)
    if used == 0:
        return HistoryRanking(tuple(order))
    fused = fuse(channels, elements, calibration, order)
    by_id = {e.id: e for e in rendered.elements}
    evidence: dict[str, tuple[Evidence, ...]] = {}
    for f in fused:
        element = by_id[f.element]
        records = [
            Evidence(
                CHANNEL_OF[c],
                round(term, 4),
                element.path,
                element.start_line,
                f"{c}: log-likelihood ratio {term:+.2f} from {used} earlier runs",
            )
            for c, term in sorted(f.terms.items(), key=lambda kv: -kv[1])
            if c in CHANNEL_OF and term > 0
        ]
        evidence[f.element] = tuple(records)
    return HistoryRanking(tuple(f.element for f in fused), {f.element: f for f in fused}, evidence, used)
