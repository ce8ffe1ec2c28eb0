"""Evaluate cases: trace quality per variant (paper V-B) and localization per level (V-C, VI-D).

Per case: one analysis (all trace variants), MPF1 by masking, optional log-statement ablation,
the true-trace scores where the case was really run, then one triage per level and ranked
trace at the level's largest k; smaller k are prefixes of that ranking (as the paper does for
its baselines in V-D). Line-to-block mapping (LM) maps the line ranking to blocks. Faulty
blocks and functions are those owning a faulty line, by the analysis' own line ownership.
A case that fails is reported with its error; it never stops the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from app.analysis.estimate import estimate_all
from app.analysis.model import Analysis, Frame, Loc, MatchResult, Trace
from app.analysis.pipeline import analyze
from app.analysis.render import LEVELS, analysis_owners, line_id_offsets
from app.localize.result import TriageResult
from app.options import TriageOptions
from tcfl_lab.eval.ablation import ABLATION_RATES, AblationPoint, ablate
from tcfl_lab.eval.cases import Case
from tcfl_lab.eval.masking import Estimator, MaskingPlan, known_truth, mpf1, predicted_states
from tcfl_lab.eval.metrics import RankScores, SetScores, preservation, rank_scores, set_scores

PAPER_KS: dict[str, tuple[int, ...]] = {"function": (1, 3, 5), "block": (1, 3, 5, 10), "line": (1, 3, 5, 10)}

Triage = Callable[[Case, TriageOptions], Awaitable[TriageResult]]


@dataclass(frozen=True)
class EvalOptions:
    levels: tuple[str, ...] = LEVELS
    ks: tuple[int, ...] | None = None  # None: the paper's k per level
    rank_traces: tuple[str, ...] = ("tplus",)  # trace variants the ranker sees
    ranker: str = "heuristic"
    masking: MaskingPlan = field(default_factory=MaskingPlan)
    ablation: bool = False
    ablation_rates: tuple[float, ...] = ABLATION_RATES
    localize: bool = True
    triage: TriageOptions = field(default_factory=TriageOptions)  # resolved base (settings, flags)

    def ks_for(self, level: str) -> tuple[int, ...]:
        if self.ks is None:
            return PAPER_KS[level]
        return tuple(sorted(set(self.ks)))


@dataclass(frozen=True)
class VariantQuality:
    pruning_rate: float
    kept_lines: int
    partial: bool | None  # None: the case has no faulty code line
    full: bool | None
    mpf1: dict[float, float | None]
    true: SetScores | None  # None: the case has no actual trace
    contradicted: tuple[Loc, ...] = ()  # known statements (first line) whose state the trace denies
    missed: tuple[Loc, ...] = ()  # executed lines (actual trace) the trace pruned


@dataclass(frozen=True)
class LevelOutcome:
    variant: str
    level: str  # function | block | line | block_lm (line ranking mapped to blocks)
    ranker: str
    scores: dict[int, RankScores] | None  # None: no faulty element at this level
    asked: int
    invalid: int
    duplicates: int
    mismatches: int
    input_tokens: int | None
    output_tokens: int | None
    static_ms: float
    model_ms: float
    total_ms: float
    fallback: bool = False  # the model was asked but the heuristic answered or filled in
    filled: int = 0  # heuristic items filling a short model answer


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    error: str | None = None
    total_lines: int = 0
    log_statements: int = 0
    static_log_statements: int = 0
    exe: int = 0
    nexe: int = 0
    multi: int = 0
    error_statements: int = 0
    faulty: dict[str, int] = field(default_factory=dict)  # level -> faulty elements
    quality: dict[str, VariantQuality] = field(default_factory=dict)
    ablation: dict[str, dict[float, AblationPoint]] | None = None
    localization: tuple[LevelOutcome, ...] = ()
    analysis_ms: float = 0.0
    eval_ms: float = 0.0
    warnings: tuple[str, ...] = ()


def faulty_elements(analysis: Analysis, faulty: frozenset[Loc]) -> dict[str, frozenset[str]]:
    """Element IDs (as rendered for the ranker) of the functions, blocks and lines holding a fault."""
    owners = analysis_owners(analysis)
    offsets = line_id_offsets(analysis.program)
    code = {Loc(f.path, n) for f in analysis.program.files for n in f.code_lines}
    lines = sorted(loc for loc in faulty if loc in code)
    blocks = {
        f"BLOCK {owners[loc].block}" for loc in lines if loc in owners and owners[loc].block is not None
    }
    return {
        "function": frozenset(owners[loc].function for loc in lines if loc in owners),
        "block": frozenset(blocks),
        "line": frozenset(str(offsets[loc.path] + loc.line) for loc in lines),
    }


def trace_quality(
    case: Case,
    analysis: Analysis,
    plan: MaskingPlan,
    estimate: Estimator,
) -> dict[str, VariantQuality]:
    code = frozenset(Loc(f.path, n) for f in analysis.program.files for n in f.code_lines)
    faulty = case.faulty & code
    actual = case.actual & code if case.actual is not None else None
    masked = mpf1(
        case.id, analysis.program, analysis.match, analysis.error_frames, analysis.traces, estimate, plan
    )
    truth = known_truth(analysis.match)
    out: dict[str, VariantQuality] = {}
    for name, trace in analysis.traces.items():
        kept = preservation(trace.kept, faulty) if faulty else None
        states = predicted_states(analysis.program, trace, frozenset(truth))
        first_line = {s.sid: Loc(s.path, s.start_line) for s in analysis.program.statements}
        out[name] = VariantQuality(
            pruning_rate=trace.pruning_rate,
            kept_lines=len(trace.kept),
            partial=kept.partial if kept else None,
            full=kept.full if kept else None,
            mpf1=masked[name],
            true=set_scores(trace.kept, actual) if actual is not None else None,
            contradicted=tuple(sorted(first_line[sid] for sid, ran in truth.items() if states[sid] != ran)),
            missed=tuple(sorted(actual - trace.kept)) if actual is not None else (),
        )
    return out


def _outcome(
    variant: str,
    level: str,
    result: TriageResult,
    ranking: Sequence[str],
    truth: frozenset[str],
    ks: Sequence[int],
) -> LevelOutcome:
    counts = result.postprocess
    return LevelOutcome(
        variant=variant,
        level=level,
        ranker=result.ranker,
        scores={k: rank_scores(ranking, truth, k) for k in ks} if truth else None,
        asked=result.k,
        invalid=counts.invalid,
        duplicates=counts.duplicates,
        mismatches=counts.mismatches,
        input_tokens=result.tokens[0] if result.tokens else None,
        output_tokens=result.tokens[1] if result.tokens else None,
        static_ms=result.static_ms,
        model_ms=result.model_ms,
        total_ms=result.total_ms,
        fallback=result.fallback_reason is not None,
        filled=sum(1 for item in result.ranking if item.filled),
    )


async def localize_case(
    case: Case, analysis: Analysis, options: EvalOptions, triage: Triage
) -> tuple[LevelOutcome, ...]:
    truth = faulty_elements(analysis, case.faulty)
    owners = analysis_owners(analysis)
    outcomes: list[LevelOutcome] = []
    for variant in options.rank_traces:
        for level in options.levels:
            ks = options.ks_for(level)
            base = options.triage
            functions = (*case.log_functions, *(p for p in base.log_functions if p not in case.log_functions))
            topts = replace(
                base, level=level, k=max(ks), trace=variant, ranker=options.ranker, log_functions=functions
            )
            result = await triage(case, topts)
            ranking = [item.id for item in result.ranking]
            outcomes.append(_outcome(variant, level, result, ranking, truth[level], ks))
            if level == "line":
                mapped = []
                for item in result.ranking:
                    owner = owners.get(Loc(item.path, item.start_line))
                    mapped.append(
                        f"BLOCK {owner.block}" if owner and owner.block is not None else f"unmapped {item.id}"
                    )
                outcomes.append(_outcome(variant, "block_lm", result, mapped, truth["block"], ks))
    return tuple(outcomes)


async def evaluate_case(case: Case, options: EvalOptions, triage: Triage | None) -> CaseResult:
    """Everything measured on one case; an exception becomes the result's ``error``."""
    started = time.perf_counter()
    try:
        base = options.triage
        functions = (*case.log_functions, *(p for p in base.log_functions if p not in case.log_functions))
        analysis = analyze(
            case.scripts, case.log, log_functions=functions, prefix_format=base.log_format, explain=False
        )
    except Exception as exc:  # a broken case must not end the evaluation
        return CaseResult(case.id, error=f"analysis failed: {type(exc).__name__}: {exc}")
    analysis_ms = (time.perf_counter() - started) * 1000.0
    program = analysis.program

    def estimate(match: MatchResult, frames: tuple[Frame, ...]) -> dict[str, Trace]:
        return estimate_all(program, match, analysis.blocks, frames)

    try:
        quality = trace_quality(case, analysis, options.masking, estimate)
        ablation = None
        if options.ablation:
            code = frozenset(Loc(f.path, n) for f in program.files for n in f.code_lines)
            ablation = ablate(
                case.id,
                program,
                analysis.match,
                analysis.log_statements,
                analysis.error_frames,
                analysis.traces,
                estimate,
                case.faulty & code,
                rates=options.ablation_rates,
                repetitions=options.masking.repetitions,
                seed=options.masking.seed,
            )
        localization: tuple[LevelOutcome, ...] = ()
        if options.localize and triage is not None:
            localization = await localize_case(case, analysis, options, triage)
    except Exception as exc:  # report the case, keep going
        return CaseResult(case.id, error=f"evaluation failed: {type(exc).__name__}: {exc}")
    match = analysis.match
    faulty = faulty_elements(analysis, case.faulty)
    return CaseResult(
        case_id=case.id,
        total_lines=sum(len(f.code_lines) for f in program.files),
        log_statements=len(analysis.log_statements),
        static_log_statements=sum(1 for s in analysis.log_statements if s.is_static),
        exe=len(match.exe),
        nexe=len(match.nexe - match.exe),
        multi=len(match.multi),
        error_statements=len(analysis.error_statements),
        faulty={level: len(ids) for level, ids in faulty.items()},
        quality=quality,
        ablation=ablation,
        localization=localization,
        analysis_ms=analysis_ms,
        eval_ms=(time.perf_counter() - started) * 1000.0,
        warnings=analysis.warnings,
    )


async def evaluate(
    cases: Sequence[Case],
    options: EvalOptions,
    triage: Triage | None,
    *,
    progress: Callable[[int, int, CaseResult], None] = lambda *_: None,
    concurrency: int = 1,
) -> list[CaseResult]:
    """Results in case order; up to ``concurrency`` cases wait on the model at once."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    gate = asyncio.Semaphore(concurrency)
    done = 0

    async def one(case: Case) -> CaseResult:
        nonlocal done
        async with gate:
            result = await evaluate_case(case, options, triage)
        done += 1
        progress(done, len(cases), result)
        return result

    return list(await asyncio.gather(*(one(case) for case in cases)))
