"""One triage: scripts and a failure log in, a ranked list of suspicious elements out.

The shell around the pure steps: analyze -> render -> prompt -> model (or heuristic) ->
post-process. A model that is down, refuses, or answers fewer valid items than asked never
fails the triage: the heuristic ranker answers or fills in, and the result says so. Every item
is labelled with where it came from; heuristic items are never passed off as the model's.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from app.analysis.model import Analysis, Loc, Script
from app.analysis.pipeline import analyze
from app.analysis.render import Element, RenderedCode, render
from app.localize.heuristic import ScoredElement, rank_heuristic
from app.localize.llm import Completion, ModelClient, ModelError, ModelUnavailable
from app.localize.prompts import build_messages, parse_answer
from app.localize.repair import PostprocessCounts, lines_to_blocks, repair
from app.localize.result import RankedItem, TriageOptions, TriageResult
from app.localize.schema import ranking_schema

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


@dataclass(frozen=True)
class StaticPhase:
    """Everything a triage needs after the static analysis; plain data, so it crosses process lines.

    The service computes it in a worker process with bounded time and memory, then runs the model
    call in its own event loop (``finish``).
    """

    opts: TriageOptions
    rendered: RenderedCode
    prompt_rendered: RenderedCode
    messages: list[dict[str, str]]
    heuristic: list[ScoredElement]
    warnings: tuple[str, ...]
    error_message: str
    pruning_rate: float
    static_ms: float
    functions: RenderedCode | None = None  # two-phase: the function-level rendering
    function_heuristic: tuple[Element, ...] = ()  # two-phase: phase 1's heuristic fallback


# Renders the trace narrowed to the given lines (phase 2 of a two-phase ranking).
Narrow = Callable[[frozenset[Loc]], Awaitable[RenderedCode]]


def static_phase(scripts: Sequence[Script], log: str, options: TriageOptions) -> tuple[StaticPhase, Analysis]:
    """Analyze, render, build the prompt and rank heuristically; ``ValueError`` for bad options."""
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
    heuristic = rank_heuristic(analysis, rendered, 2 * opts.k)  # enough to fill in after k model items
    functions: RenderedCode | None = None
    function_heuristic: tuple[Element, ...] = ()
    if opts.two_phase and opts.level != "function" and opts.ranker != "heuristic":
        functions = render(analysis, opts.trace, "function")
        top_k = min(TWO_PHASE_FUNCTIONS, len(functions.elements))
        function_heuristic = tuple(s.element for s in rank_heuristic(analysis, functions, top_k))
    phase = StaticPhase(
        opts=opts,
        rendered=rendered,
        prompt_rendered=prompt_rendered,
        messages=messages,
        heuristic=heuristic,
        warnings=tuple(analysis.warnings),
        error_message=analysis.log.error_message,
        pruning_rate=analysis.traces[opts.trace].pruning_rate,
        static_ms=static_ms,
        functions=functions,
        function_heuristic=function_heuristic,
    )
    return phase, analysis


def narrowed_render(analysis: Analysis, opts: TriageOptions, lines: frozenset[Loc]) -> RenderedCode:
    """The trace ``opts.trace`` cut down to ``lines``, rendered at ``opts.level``."""
    trace = analysis.traces[opts.trace]
    narrowed = replace(
        analysis, traces={**analysis.traces, opts.trace: replace(trace, kept=trace.kept & lines)}
    )
    return render(narrowed, opts.trace, opts.level)


async def triage(
    scripts: Sequence[Script], log: str, options: TriageOptions, *, client: ModelClient | None
) -> TriageResult:
    """Rank the ``options.k`` most suspicious elements; ``ValueError`` for bad options."""
    started = time.perf_counter()
    phase, analysis = static_phase(scripts, log, options)

    async def narrow(lines: frozenset[Loc]) -> RenderedCode:
        return narrowed_render(analysis, phase.opts, lines)

    return await finish(phase, client=client, narrow=narrow, started=started)


async def finish(
    phase: StaticPhase, *, client: ModelClient | None, narrow: Narrow, started: float | None = None
) -> TriageResult:
    """The model call (or the heuristic's answer) and the result, from a finished static phase."""
    if started is None:
        started = time.perf_counter() - phase.static_ms / 1000.0
    opts = phase.opts
    rendered = phase.rendered
    prompt_rendered = phase.prompt_rendered
    warnings = list(phase.warnings)
    if opts.line_to_block and opts.level != "block":
        warnings.append("line_to_block applies to block-level triage only; ignored")
    if opts.two_phase and opts.level == "function":
        warnings.append("two_phase ranks functions first; at function level it is a single phase")
    heuristic = phase.heuristic
    use_model = opts.ranker == "llm" or (opts.ranker == "auto" and client is not None)
    fallback: str | None = None
    run = _ModelRun()
    items: list[RankedItem] = []
    ranker = "heuristic"

    if use_model and client is None:
        fallback = "no model server is configured (set TCFL_MODEL_URL or --model-url)"
    elif use_model and client is not None and rendered.elements:
        try:
            if opts.two_phase and opts.level != "function" and phase.functions is not None:
                chosen = await _two_phase(phase, phase.functions, client, run, narrow)
            else:
                chosen = await _ask(client, phase.messages, prompt_rendered, opts, run)
                if prompt_rendered.level != opts.level:
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

    messages = phase.messages
    return TriageResult(
        error_message=phase.error_message,
        ranker=ranker,
        model=run.model if ranker == "llm" else None,
        fallback_reason=fallback,
        level=opts.level,
        k=opts.k,
        variant=opts.trace,
        pruning_rate=phase.pruning_rate,
        kept_lines=rendered.kept_lines,
        total_lines=rendered.total_lines,
        ranking=tuple(items),
        tokens=(run.input_tokens, run.output_tokens) if run.counted else None,
        static_ms=phase.static_ms,
        model_ms=run.model_ms,
        total_ms=(time.perf_counter() - started) * 1000.0,
        postprocess=run.counts,
        prompt_chars=sum(len(m["content"]) for m in messages),
        prompt_lines=sum(m["content"].count("\n") + 1 for m in messages),
        warnings=tuple(dict.fromkeys(warnings)),
    )


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
    phase: StaticPhase, functions: RenderedCode, client: ModelClient, run: _ModelRun, narrow: Narrow
) -> tuple[Element, ...]:
    """Rank functions, then ask for the level's elements inside the top functions only."""
    opts = phase.opts
    top_k = min(TWO_PHASE_FUNCTIONS, len(functions.elements))
    messages = build_messages(functions, phase.error_message, top_k, output_format=opts.output_format)
    top = await _ask(client, messages, functions, replace(opts, k=top_k), run)
    if not top:
        top = phase.function_heuristic
        run.warnings += ("phase 1 gave no valid function; the heuristic chose the functions",)
    lines = frozenset(Loc(e.path, line) for e in top for line in e.lines)
    inner = await narrow(lines)
    if not inner.elements:
        return ()
    messages = build_messages(inner, phase.error_message, opts.k, output_format=opts.output_format)
    chosen = await _ask(client, messages, inner, opts, run)
    by_id = {e.id: e for e in phase.rendered.elements}
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
