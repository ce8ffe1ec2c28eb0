"""One triage: scripts and a failure log in, a ranked list of suspicious elements out.

The shell around the pure steps: analyze -> render -> prompt -> model (or heuristic) ->
post-process. A model that is down, refuses, or answers fewer valid items than asked never
fails the triage: the heuristic ranker answers or fills in, and the result says so. Every item
is labelled with where it came from; heuristic items are never passed off as the model's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from app.analysis.model import Analysis, Loc, Script
from app.analysis.pipeline import analyze
from app.analysis.render import Element, RenderedCode, render
from app.localize.heuristic import rank_heuristic
from app.localize.llm import Completion, ModelClient, ModelError, ModelUnavailable
from app.localize.prompts import build_messages, parse_answer
from app.localize.repair import PostprocessCounts, lines_to_blocks, repair
from app.localize.result import RankedItem, TriageOptions, TriageResult
from app.localize.schema import ranking_schema

if TYPE_CHECKING:
    from app.analysis.snapshot import Snapshot

TWO_PHASE_FUNCTIONS = 3  # functions kept after the first phase of a two-phase ranking


@dataclass
class _ModelRun:
    """What the model calls of one triage produced, summed over phases."""

    input_tokens: int = 0
    output_tokens: int = 0
    counted: bool = False
    model: str | None = None
    model_ms: float = 0.0
    counts: PostprocessCounts = field(default_factory=PostprocessCounts)
    warnings: tuple[str, ...] = ()

    def add(self, completion: Completion, counts: PostprocessCounts) -> None:
        if completion.input_tokens is not None or completion.output_tokens is not None:
            self.counted = True
            self.input_tokens += completion.input_tokens or 0
            self.output_tokens += completion.output_tokens or 0
        self.model = completion.model
        self.model_ms += completion.latency_ms
        self.counts = PostprocessCounts(
            self.counts.invalid + counts.invalid,
            self.counts.duplicates + counts.duplicates,
            self.counts.mismatches + counts.mismatches,
            self.counts.repaired + counts.repaired,
        )
        if completion.finish_reason == "length":
            self.warnings += ("the model's answer was cut off at its output token limit",)


async def triage(
    scripts: Sequence[Script], log: str, options: TriageOptions, *, client: ModelClient | None
) -> TriageResult:
    """Rank the ``options.k`` most suspicious elements; ``ValueError`` for bad options."""
    result, _, _ = await _triage(scripts, log, options, client=client)
    return result


async def triage_with_snapshot(
    scripts: Sequence[Script], log: str, options: TriageOptions, *, client: ModelClient | None
) -> tuple[TriageResult, Snapshot]:
    """``triage`` plus the stored analysis snapshot the dashboard shows (built once, from this analysis)."""
    from app.analysis import snapshot

    result, analysis, rendered = await _triage(scripts, log, options, client=client)
    return result, snapshot.build(analysis, rendered, log)


async def _triage(
    scripts: Sequence[Script], log: str, options: TriageOptions, *, client: ModelClient | None
) -> tuple[TriageResult, Analysis, RenderedCode]:
    opts = options.validated()
    started = time.perf_counter()
    analysis = analyze(scripts, log, log_functions=opts.log_functions, prefix_format=opts.log_format)
    rendered = render(analysis, opts.trace, opts.level)
    prompt_level = "line" if opts.line_to_block and opts.level == "block" else opts.level
    prompt_rendered = render(analysis, opts.trace, "line") if prompt_level != opts.level else rendered
    messages = build_messages(
        prompt_rendered, analysis.log.error_message, opts.k, output_format=opts.output_format
    )
    static_ms = (time.perf_counter() - started) * 1000.0

    warnings = list(analysis.warnings)
    if opts.line_to_block and opts.level != "block":
        warnings.append("line_to_block applies to block-level triage only; ignored")
    if opts.two_phase and opts.level == "function":
        warnings.append("two_phase ranks functions first; at function level it is a single phase")
    heuristic = rank_heuristic(analysis, rendered, 2 * opts.k)  # enough to fill in after k model items
    use_model = opts.ranker == "llm" or (opts.ranker == "auto" and client is not None)
    fallback: str | None = None
    run = _ModelRun()
    items: list[RankedItem] = []
    ranker = "heuristic"

    if use_model and client is None:
        fallback = "no model server is configured (set TCFL_MODEL_URL or --model-url)"
    elif use_model and client is not None and rendered.elements:
        try:
            if opts.two_phase and opts.level != "function":
                chosen = await _two_phase(analysis, rendered, opts, client, run)
            else:
                chosen = await _ask(client, messages, prompt_rendered, opts, run)
                if prompt_level != opts.level:
                    chosen = lines_to_blocks(chosen, rendered)
        except ModelUnavailable as exc:
            fallback = f"model unavailable: {exc}"
        except ModelError as exc:
            fallback = f"model refused the request: {exc}"
        else:
            wanted = min(opts.k, len(rendered.elements))
            items = [_item(i + 1, e, None, f"model rank {i + 1}") for i, e in enumerate(chosen[: opts.k])]
            if items:
                ranker = "llm"
            if len(items) < wanted:
                fallback = f"the model ({run.model}) gave {len(items)} valid item(s) of {wanted}; " + (
                    "the rest come from the heuristic ranker" if items else "the heuristic ranker answered"
                )
    warnings.extend(run.warnings)
    if fallback is not None:
        warnings.append(fallback)
    taken = {item.id for item in items}
    fill_note = "heuristic fill-in: " if ranker == "llm" else ""
    for scored in heuristic:
        if len(items) >= opts.k:
            break
        if scored.element.id not in taken:
            items.append(_item(len(items) + 1, scored.element, scored.score, fill_note + scored.reason))
            taken.add(scored.element.id)

    trace = analysis.traces[opts.trace]
    result = TriageResult(
        error_message=analysis.log.error_message,
        ranker=ranker,
        model=run.model if ranker == "llm" else None,
        fallback_reason=fallback,
        level=opts.level,
        k=opts.k,
        variant=opts.trace,
        pruning_rate=trace.pruning_rate,
        kept_lines=rendered.kept_lines,
        total_lines=rendered.total_lines,
        ranking=tuple(items),
        tokens=(run.input_tokens, run.output_tokens) if run.counted else None,
        static_ms=static_ms,
        model_ms=run.model_ms,
        total_ms=(time.perf_counter() - started) * 1000.0,
        postprocess=run.counts,
        prompt_chars=sum(len(m["content"]) for m in messages),
        prompt_lines=sum(m["content"].count("\n") + 1 for m in messages),
        warnings=tuple(dict.fromkeys(warnings)),
    )
    return result, analysis, rendered


async def _ask(
    client: ModelClient,
    messages: list[dict[str, str]],
    rendered: RenderedCode,
    opts: TriageOptions,
    run: _ModelRun,
) -> tuple[Element, ...]:
    schema = None
    if opts.output_format == "json_schema":
        schema = ranking_schema(rendered.level, [e.id for e in rendered.elements], opts.k)
    completion = await client.complete(messages, schema=schema)
    answers = parse_answer(completion.text, rendered.level, output_format=opts.output_format)
    repaired = repair(answers, rendered)
    run.add(completion, repaired.counts)
    return repaired.elements


async def _two_phase(
    analysis: Analysis, rendered: RenderedCode, opts: TriageOptions, client: ModelClient, run: _ModelRun
) -> tuple[Element, ...]:
    """Rank functions, then ask for the level's elements inside the top functions only."""
    functions = render(analysis, opts.trace, "function")
    top_k = min(TWO_PHASE_FUNCTIONS, len(functions.elements))
    messages = build_messages(functions, analysis.log.error_message, top_k, output_format=opts.output_format)
    top = await _ask(client, messages, functions, replace(opts, k=top_k), run)
    if not top:
        top = tuple(s.element for s in rank_heuristic(analysis, functions, top_k))
        run.warnings += ("phase 1 gave no valid function; the heuristic chose the functions",)
    lines = frozenset(Loc(e.path, line) for e in top for line in e.lines)
    trace = analysis.traces[opts.trace]
    narrowed = replace(
        analysis, traces={**analysis.traces, opts.trace: replace(trace, kept=trace.kept & lines)}
    )
    inner = render(narrowed, opts.trace, opts.level)
    if not inner.elements:
        return ()
    messages = build_messages(inner, analysis.log.error_message, opts.k, output_format=opts.output_format)
    chosen = await _ask(client, messages, inner, opts, run)
    by_id = {e.id: e for e in rendered.elements}
    return tuple(by_id.get(e.id, e) for e in chosen)


def _item(rank: int, element: Element, score: float | None, reason: str) -> RankedItem:
    return RankedItem(
        rank=rank,
        id=element.id,
        path=element.path,
        start_line=element.start_line,
        end_line=element.end_line,
        code=element.code,
        score=score,
        reason=reason,
    )
