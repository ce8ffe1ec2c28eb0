"""One triage: scripts and a failure log in, a ranked list of suspicious elements out.

The shell around the pure steps, going down once: options (resolved at the edge) -> analyze
(only the trace variant asked for) -> render (the code and the prompt) -> rank (the chosen
ranker) -> result. A ranker that answers fewer than ``k`` items is filled in by the heuristic
ranker and the result says so; heuristic items are never passed off as the model's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from app.analysis.context import REFINEMENTS, EstimateOptions
from app.analysis.grounding import missing_evidence
from app.analysis.limits import CostLimits
from app.analysis.model import Script
from app.analysis.parsed import ParseCache
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.heuristic import has_evidence
from app.localize.prompts import build_messages, failure_text
from app.localize.result import RankedItem, TriageResult
from app.options import TriageOptions
from app.rankers import choose, make_ranker
from app.rankers.base import Pick, Prompt, RankRequest
from app.rankers.heuristic import HandsetRanker, HeuristicRanker, model_label

if TYPE_CHECKING:
    from app.analysis.snapshot import Snapshot


def prepare(
    scripts: Sequence[Script],
    log: str,
    options: TriageOptions,
    *,
    explain: bool = False,
    limits: CostLimits | None = None,
    parses: ParseCache | None = None,
) -> RankRequest:
    """The static phase (no I/O): analysis, rendered code and prompt; ``ValueError`` for bad options.

    ``explain`` keeps each line's reason (for the stored snapshot the dashboard shows); ``limits``
    refuses a case over them (``InputTooCostly``) before the analysis runs; ``parses`` reuses what
    an earlier analysis of the same scripts derived from them alone."""
    opts = options.validated()
    refinements_off = [name for name in opts.disabled_channels if name in REFINEMENTS]
    analysis = analyze(
        scripts,
        log,
        log_functions=opts.log_functions,
        prefix_format=opts.log_format,
        variants=(opts.trace,),
        explain=explain,
        options=EstimateOptions().without(refinements_off) if refinements_off else None,
        limits=limits,
        parses=parses,
    )
    rendered = render(analysis, opts.trace, opts.level)
    prompt_rendered = rendered
    if opts.line_to_block and opts.level == "block":
        prompt_rendered = render(analysis, opts.trace, "line")
    messages = build_messages(
        prompt_rendered, failure_text(analysis, opts), opts.k, output_format=opts.output_format
    )
    return RankRequest(analysis, rendered, Prompt(prompt_rendered, tuple(messages)), opts)


async def triage(
    scripts: Sequence[Script],
    log: str,
    options: TriageOptions,
    *,
    client: Any | None,
    limits: CostLimits | None = None,
    parses: ParseCache | None = None,
) -> TriageResult:
    """Rank the ``options.k`` most suspicious elements; ``ValueError`` for bad options or a case
    over ``limits``. ``parses`` shares the scripts' parse between failures of the same scripts."""
    started = time.perf_counter()
    request = prepare(scripts, log, options, limits=limits, parses=parses)
    return await rank(request, client=client, started=started)


async def triage_with_snapshot(
    scripts: Sequence[Script], log: str, options: TriageOptions, *, client: Any | None
) -> tuple[TriageResult, Snapshot]:
    """``triage`` plus the snapshot of the analysis that ranked it, which the dashboard stores and shows."""
    from app.analysis import snapshot

    started = time.perf_counter()
    request = prepare(scripts, log, options, explain=True)
    result = await rank(request, client=client, started=started)
    return result, snapshot.build(request.analysis, request.rendered, log)


async def rank(request: RankRequest, *, client: Any | None, started: float | None = None) -> TriageResult:
    """Rank a prepared request with the ranker its options name (``auto``: the model when configured)."""
    if started is None:
        started = time.perf_counter()
    static_ms = (time.perf_counter() - started) * 1000.0
    opts, analysis, rendered = request.options, request.analysis, request.rendered
    warnings = list(analysis.warnings)
    if opts.line_to_block and opts.level != "block":
        warnings.append("line_to_block applies to block-level triage only; ignored")
    if opts.two_phase and opts.level == "function":
        warnings.append("two_phase ranks functions first; at function level it is a single phase")

    name = choose(opts.ranker, model_configured=client is not None)
    answer = await make_ranker(name, client=client).rank(request, opts.k)
    warnings.extend(answer.warnings)
    if answer.fallback is not None:
        warnings.append(answer.fallback)
    items = [_item(i + 1, pick) for i, pick in enumerate(answer.picks[: opts.k])]
    if len(items) < opts.k and (answer.name != HeuristicRanker.name or not answer.picks):
        items = _fill_in(items, request, answer.name)

    built_in = answer.name in (HeuristicRanker.name, HandsetRanker.name)
    evidence_found = not built_in or any(has_evidence(item.evidence) for item in items)
    ranker_model = answer.ranker_model
    if ranker_model is None and (answer.name == HeuristicRanker.name or any(item.filled for item in items)):
        ranker_model = model_label(opts)  # the heuristic answered after a fallback, or filled in
    if not evidence_found and items:
        warnings.append(
            "no evidence in the failure points at any element (no frame, check, value or quoted text): "
            "the ranking is a guess from the code's structure"
        )
        # what the log lacked, and which option may fix it (--log-function, --log-format)
        warnings.extend(missing_evidence(analysis))
    trace = analysis.traces[opts.trace]
    return TriageResult(
        error_message=analysis.log.error_message,
        ranker=answer.name,
        model=answer.model,
        fallback_reason=answer.fallback,
        level=opts.level,
        k=opts.k,
        variant=opts.trace,
        pruning_rate=trace.pruning_rate,
        kept_lines=rendered.kept_lines,
        total_lines=rendered.total_lines,
        ranking=tuple(items),
        tokens=answer.tokens,
        static_ms=static_ms,
        model_ms=answer.model_ms,
        total_ms=(time.perf_counter() - started) * 1000.0,
        postprocess=answer.counts,
        prompt_chars=request.prompt.chars,
        prompt_lines=request.prompt.lines,
        warnings=tuple(dict.fromkeys(warnings)),
        options=opts,
        evidence_found=evidence_found,
        ranker_model=ranker_model,
    )


def _fill_in(items: list[RankedItem], request: RankRequest, ranker: str) -> list[RankedItem]:
    """Up to ``k`` items: the heuristic's best ones the ranker did not already name."""
    k = request.options.k
    taken = {item.id for item in items}
    note = "heuristic fill-in: " if ranker != HeuristicRanker.name else ""
    for pick in HeuristicRanker.picks(request, 2 * k):  # enough to fill in after k items
        if len(items) >= k:
            break
        if pick.element.id not in taken:
            filled = Pick(pick.element, pick.score, note + pick.reason, pick.evidence)
            items.append(_item(len(items) + 1, filled, filled=ranker != HeuristicRanker.name))
            taken.add(pick.element.id)
    return items


def _item(rank: int, pick: Pick, *, filled: bool = False) -> RankedItem:
    element = pick.element
    return RankedItem(
        rank=rank,
        id=element.id,
        path=element.path,
        start_line=element.start_line,
        end_line=element.end_line,
        code=element.code,
        score=pick.score,
        reason=pick.reason,
        evidence=pick.evidence,
        filled=filled,
    )
