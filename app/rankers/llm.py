"""The model ranker (docs/design.md §6): the paper's prompt to an OpenAI-compatible server.

A server that is down, refuses, or answers fewer valid items than asked never fails the
triage: the answer says why, and triage fills in from the heuristic ranker.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from app.analysis.model import Loc
from app.analysis.render import Element, RenderedCode, render
from app.localize.llm import Completion, ModelClient, ModelError, ModelUnavailable
from app.localize.prompts import build_messages, failure_text, parse_answer
from app.localize.repair import PostprocessCounts, lines_to_blocks, repair
from app.localize.schema import ranking_schema
from app.rankers.base import Pick, RankAnswer, RankRequest
from app.rankers.heuristic import HeuristicRanker

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


class LlmRanker:
    name = "llm"

    def __init__(self, client: ModelClient | None) -> None:
        self.client = client

    async def rank(self, request: RankRequest, k: int) -> RankAnswer:
        opts = request.options
        rendered = request.rendered
        run = _ModelRun()
        fallback: str | None = None
        picks: tuple[Pick, ...] = ()
        if self.client is None:
            fallback = "no model server is configured (set TCFL_MODEL_URL or --model-url)"
        elif rendered.elements:
            try:
                if opts.two_phase and opts.level != "function":
                    chosen = await _two_phase(request, k, self.client, run)
                else:
                    chosen = await _ask(
                        self.client, request.prompt.messages, request.prompt.rendered, k, opts, run
                    )
                    if request.prompt.rendered.level != rendered.level:
                        chosen = lines_to_blocks(chosen, rendered)
            except ModelUnavailable as exc:
                fallback = f"model unavailable: {exc}"
            except ModelError as exc:
                fallback = f"model refused the request: {exc}"
            else:
                wanted = min(k, len(rendered.elements))
                picks = tuple(Pick(e, None, f"model rank {i + 1}") for i, e in enumerate(chosen[:k]))
                if len(picks) < wanted:
                    fallback = f"the model ({run.model}) gave {len(picks)} valid item(s) of {wanted}; " + (
                        "the rest come from the heuristic ranker"
                        if picks
                        else "the heuristic ranker answered"
                    )
        return RankAnswer(
            name=self.name if picks else HeuristicRanker.name,
            picks=picks,
            model=run.model if picks else None,
            tokens=(run.input_tokens, run.output_tokens) if run.counted else None,
            model_ms=run.model_ms,
            counts=run.counts,
            warnings=run.warnings,
            fallback=fallback,
        )


async def _ask(
    client: ModelClient,
    messages: tuple[dict[str, str], ...] | list[dict[str, str]],
    rendered: RenderedCode,
    k: int,
    opts: object,
    run: _ModelRun,
) -> tuple[Element, ...]:
    output_format = getattr(opts, "output_format", "json_schema")
    schema = None
    if output_format == "json_schema":
        schema = ranking_schema(rendered.level, [e.id for e in rendered.elements], k)
    completion = await client.complete(list(messages), schema=schema)
    answers = parse_answer(completion.text, rendered.level, output_format=output_format)
    repaired = repair(answers, rendered)
    run.add(completion, repaired.counts)
    return repaired.elements


async def _two_phase(
    request: RankRequest, k: int, client: ModelClient, run: _ModelRun
) -> tuple[Element, ...]:
    """Rank functions, then ask for the level's elements inside the top functions only."""
    analysis, opts = request.analysis, request.options
    functions = render(analysis, opts.trace, "function")
    top_k = min(TWO_PHASE_FUNCTIONS, len(functions.elements))
    messages = build_messages(
        functions, failure_text(analysis, opts), top_k, output_format=opts.output_format
    )
    top = await _ask(client, messages, functions, top_k, opts, run)
    if not top:
        phase_one = replace(request, rendered=functions)
        top = tuple(p.element for p in HeuristicRanker.picks(phase_one, top_k))
        run.warnings += ("phase 1 gave no valid function; the heuristic chose the functions",)
    lines = frozenset(Loc(e.path, line) for e in top for line in e.lines)
    trace = analysis.traces[opts.trace]
    narrowed = replace(
        analysis, traces={**analysis.traces, opts.trace: replace(trace, kept=trace.kept & lines)}
    )
    inner = render(narrowed, opts.trace, opts.level)
    if not inner.elements:
        return ()
    messages = build_messages(inner, failure_text(analysis, opts), k, output_format=opts.output_format)
    chosen = await _ask(client, messages, inner, k, opts, run)
    by_id = {e.id: e for e in request.rendered.elements}
    return tuple(by_id.get(e.id, e) for e in chosen)
