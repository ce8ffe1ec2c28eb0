"""Channel ablation: the heuristic ranker with each evidence channel switched off in turn.

One analysis per case; per level, the full ranker, the stack-trace baseline and one ranking per
disabled channel, scored with the paper's Hit@k and MAP@k (equations (1)-(2)). Rows are the
heuristic's channels (``app.localize.evidence.ABLATED``) and the enhanced trace's refinements
(``app.analysis.context.REFINEMENTS``, analysis re-run without each), so switches added to either
show up here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import fmean

from app.analysis.context import REFINEMENTS, EstimateOptions
from app.analysis.model import Analysis
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.channels import Context
from app.localize.evidence import ABLATED
from app.localize.heuristic import rank_heuristic, rank_stacktrace
from tcfl_lab.eval.cases import Case
from tcfl_lab.eval.metrics import rank_scores
from tcfl_lab.eval.runner import faulty_elements

ABLATION_LEVELS: tuple[str, ...] = ("block", "line")
DEPTH = 5  # the deepest k reported
FULL = "all channels"
BASELINE = "stacktrace baseline"


@dataclass(frozen=True)
class Scores:
    hit1: float
    hit3: float
    map5: float
    cases: int

    def to_dict(self) -> dict[str, float | int]:
        return {
            "hit@1": round(self.hit1, 4),
            "hit@3": round(self.hit3, 4),
            "map@5": round(self.map5, 4),
            "cases": self.cases,
        }


def _score(rankings: Sequence[tuple[Sequence[str], frozenset[str]]]) -> Scores:
    if not rankings:
        return Scores(0.0, 0.0, 0.0, 0)
    return Scores(
        hit1=fmean(rank_scores(r, t, 1).hit for r, t in rankings),
        hit3=fmean(rank_scores(r, t, 3).hit for r, t in rankings),
        map5=fmean(rank_scores(r, t, DEPTH).ap for r, t in rankings),
        cases=len(rankings),
    )


def channel_ablation(
    cases: Sequence[Case],
    *,
    variant: str = "tplus",
    levels: Sequence[str] = ABLATION_LEVELS,
    progress: Callable[[int, int, str], None] = lambda *_: None,
) -> dict[str, dict[str, Scores]]:
    """Row (all channels, the baseline, ``-<channel>``) -> level -> scores over cases with a fault there."""
    rows = [FULL, BASELINE, *(f"-{name}" for name in (*ABLATED, *REFINEMENTS))]
    collected: dict[str, dict[str, list[tuple[list[str], frozenset[str]]]]] = {
        row: {level: [] for level in levels} for row in rows
    }
    for number, case in enumerate(cases, start=1):
        progress(number, len(cases), case.id)
        try:
            analysis = analyze(case.scripts, case.log, log_functions=case.log_functions, explain=False)
        except Exception:  # a broken case is reported by the main evaluation, not here
            continue
        truth = faulty_elements(analysis, case.faulty)
        context = Context.build(analysis, variant)  # the static facts, shared by every ranking
        without = {name: _without(case, variant, name) for name in REFINEMENTS}  # the trace's refinements off
        for level in levels:
            if not truth[level]:
                continue
            rendered = render(analysis, variant, level)
            if not rendered.elements:
                collected[FULL][level].append(([], truth[level]))
                continue
            ranked = {
                FULL: rank_heuristic(analysis, rendered, DEPTH, context=context),
                BASELINE: rank_stacktrace(analysis, rendered, DEPTH, context=context),
            }
            for name in ABLATED:
                ranked[f"-{name}"] = rank_heuristic(
                    analysis, rendered, DEPTH, disabled={name}, context=context
                )
            for name, refined in without.items():
                if refined is None:
                    continue
                again = render(refined, variant, level)
                ranked[f"-{name}"] = rank_heuristic(refined, again, DEPTH) if again.elements else []
            for row, items in ranked.items():
                collected[row][level].append(([s.element.id for s in items], truth[level]))
    return {
        row: {level: _score(items) for level, items in by_level.items()}
        for row, by_level in collected.items()
    }


def _without(case: Case, variant: str, refinement: str) -> Analysis | None:
    """The case's analysis with one refinement of the enhanced trace switched off."""
    try:
        return analyze(
            case.scripts,
            case.log,
            log_functions=case.log_functions,
            variants=(variant,),
            explain=False,
            options=EstimateOptions().without([refinement]),
        )
    except Exception:  # reported by the main evaluation
        return None


def ablation_report(table: dict[str, dict[str, Scores]]) -> dict[str, dict[str, dict[str, float | int]]]:
    return {
        row: {level: scores.to_dict() for level, scores in levels.items()} for row, levels in table.items()
    }


def render_ablation(table: dict[str, dict[str, Scores]]) -> str:
    levels = list(next(iter(table.values())).keys()) if table else []
    header = f"{'channel ablation':<24}" + "".join(
        f"{level + ' H@1':>11}{'H@3':>7}{'MAP@5':>7}" for level in levels
    )
    lines = [header, "-" * len(header)]
    for row, by_level in table.items():
        cells = "".join(
            f"{by_level[level].hit1:>11.2f}{by_level[level].hit3:>7.2f}{by_level[level].map5:>7.2f}"
            for level in levels
        )
        lines.append(f"{row:<24}{cells}")
    return "\n".join(lines)
