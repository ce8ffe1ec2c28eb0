"""One triage: scripts and a failure log in, a ranked list of suspicious elements out.

The one path every entry point takes (``tcfl triage``, ``tcfl ci``, the pytest plugin,
``/v1/triage``, batches, ``/v1/ingest``, the evaluation), going down once: options checked
(``check_options``) -> ``prepare``, the static phase (analysis of only the trace variant asked
for, under the cost limits, reusing kept parses; render; prompt), synchronous and pure -> ``rank``
with the chosen ranker, given the test's recorded CI runs when the shell read them -> the result,
with its history section when a test was named. A ranker that answers fewer than ``k`` items is
filled in by the heuristic ranker and the result says so; heuristic items are never passed off
as the model's. ``finish`` is the one driver of a ranking's coroutine outside an event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from app.analysis.context import REFINEMENTS, EstimateOptions
from app.analysis.grounding import missing_evidence
from app.analysis.limits import CostLimits
from app.analysis.model import Analysis, ParsedLog, Script
from app.analysis.parsed import ParseCache
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.heuristic import has_evidence
from app.localize.prompts import build_messages, failure_text
from app.localize.result import RankedItem, TriageResult, relevance
from app.options import TriageOptions
from app.rankers import choose, make_ranker, ranker_names
from app.rankers.base import Pick, Prompt, RankAnswer, RankRequest
from app.rankers.heuristic import HandsetRanker, HeuristicRanker, model_label

if TYPE_CHECKING:
    from app.history.rank import HistoryRun

T = TypeVar("T")
HISTORY_RANKERS = ("auto", "heuristic", "history")  # the rankers the test's CI history is fused into


def check_options(options: TriageOptions) -> TriageOptions:
    """The options validated, names that registries hold included (rankers, evidence channels,
    the ranker's model file, the log format); ``ValueError`` naming the bad option."""
    opts = options.validated()
    rankers = ("auto", *ranker_names())
    if opts.ranker not in rankers:
        raise ValueError(f"ranker must be one of {', '.join(rankers)}, got {opts.ranker!r}")
    if opts.ranker_model is not None:
        from app.localize.model_file import load_model

        load_model(opts.ranker_model)  # ModelFileError (a ValueError) says what is wrong with it
    if opts.log_format:
        from app.analysis.logparse import check_prefix_format

        check_prefix_format(opts.log_format)
    from app.localize.evidence import SWITCHES

    # ranking channels, and the enhanced trace's refinements (the analysis reads those)
    known = SWITCHES | frozenset(REFINEMENTS)
    unknown = sorted(set(opts.disabled_channels) - known)
    if unknown:
        raise ValueError(f"unknown channel(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}")
    return opts


def history_skipped(options: TriageOptions, *, model_configured: bool) -> str | None:
    """Why the test's recorded runs are not read for this triage (None: read them).

    History is fused into the built-in ranking only: the model ranks from the prompt alone.
    """
    if options.history == "off":
        return "history off: ranked without the test's CI history"
    if options.ranker not in HISTORY_RANKERS or (options.ranker == "auto" and model_configured):
        ranker = "llm" if options.ranker == "auto" else options.ranker
        return f"history applies to the built-in rankers; the {ranker} ranker ranked alone"
    return None


def prepare(
    scripts: Sequence[Script],
    log: str,
    options: TriageOptions,
    *,
    explain: bool = False,
    limits: CostLimits | None = None,
    parses: ParseCache | None = None,
    parsed_log: ParsedLog | None = None,
) -> RankRequest:
    """The static phase (no I/O): analysis, rendered code and prompt; ``ValueError`` for bad options.

    ``explain`` keeps each line's reason (for the stored snapshot the dashboard shows); ``limits``
    refuses a case over them (``InputTooCostly``) before the analysis runs; ``parses`` reuses what
    an earlier analysis of the same scripts derived from them alone; ``parsed_log`` is the log
    already parsed with the options' log format."""
    opts = check_options(options)
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
        parsed_log=parsed_log,
    )
    rendered = render(analysis, opts.trace, opts.level)
    prompt_rendered = rendered
    if opts.line_to_block and opts.level == "block":
        prompt_rendered = render(analysis, opts.trace, "line")
    messages = build_messages(
        prompt_rendered, failure_text(analysis, opts), opts.k, output_format=opts.output_format
    )
    return RankRequest(
        analysis, rendered, Prompt(prompt_rendered, tuple(messages)), opts, scripts=tuple(scripts), log=log
    )


def with_history(request: RankRequest, test: str | None, runs: Sequence[HistoryRun]) -> RankRequest:
    """The request with the test's recorded runs (oldest first) the shell read for it; with runs the
    history ranker ranks (the caller checked ``history_skipped`` before reading them)."""
    if not runs:
        return replace(request, test=test)
    options = replace(request.options, ranker="history")
    return replace(request, options=options, history=tuple(runs), test=test)


async def triage(
    scripts: Sequence[Script],
    log: str,
    options: TriageOptions,
    *,
    client: Any | None,
    limits: CostLimits | None = None,
    parses: ParseCache | None = None,
    test: str | None = None,
    history: Sequence[HistoryRun] = (),
    note: str | None = None,
    parsed_log: ParsedLog | None = None,
    explain: bool = False,
    analysed: Callable[[Analysis], None] | None = None,
) -> TriageResult:
    """Rank the ``options.k`` most suspicious elements; ``ValueError`` for bad options or a case
    over ``limits``. ``parses`` shares the scripts' parse between failures of the same scripts;
    ``test`` and ``history`` are the failing test's key and its recorded runs, ``note`` why none
    were read; ``parsed_log`` the log already parsed with the options' log format. ``explain``
    keeps each line's reason in the analysis, and ``analysed`` is handed the analysis once the
    ranking is done (``tcfl ci`` records a failure's facts from it instead of analysing it again);
    neither changes the result."""
    started = time.perf_counter()
    prepared = prepare(
        scripts, log, options, explain=explain, limits=limits, parses=parses, parsed_log=parsed_log
    )
    request = with_history(prepared, test, history)
    result = await rank(request, client=client, started=started, note=note)
    if analysed is not None:
        analysed(prepared.analysis)
    return result


def finish(make: Callable[[], Coroutine[Any, Any, T]], *, no_io: bool = True) -> T:
    """The value of ``make()``'s coroutine, from code that runs no event loop.

    A ranking without a model client awaits nothing that suspends, so its coroutine finishes on
    its first step: building and closing an event loop (and importing asyncio, on the CLI's cold
    start) would cost as much as a small case's ranking. One that does suspend, or asks for the
    running loop, is closed and run again under ``asyncio.run``: the static phase is pure, so
    running it twice changes nothing but the time.
    """
    if no_io:
        coroutine = make()
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        except RuntimeError:  # asked for the running loop
            pass
        coroutine.close()
    import asyncio

    return asyncio.run(make())


async def rank(
    request: RankRequest, *, client: Any | None, started: float | None = None, note: str | None = None
) -> TriageResult:
    """Rank a prepared request with the ranker its options name (``auto``: the model when configured).

    ``note`` says why the test's history was not read, where a test was named."""
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

    items = [
        replace(item, relevance=value)
        for item, value in zip(items, relevance([i.score for i in items], answer.name), strict=True)
    ]
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
    history = None
    if request.test is not None and opts.history != "off":  # "off": as if no test were named
        history, history_note = _history(request, answer, note)
        if history_note is not None:
            warnings.append(history_note)
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
        history=history,
    )


def _history(request: RankRequest, answer: RankAnswer, note: str | None) -> tuple[dict[str, Any], str | None]:
    """The result's history section for the named test, and the note when no run was fused."""
    test, opts = str(request.test), request.options
    if not request.history:
        note = note or f"no CI history with traces recorded for test {test!r}: ranked without it"
        return {"test": test, "runs_read": 0, "runs_used": 0, "note": note}, note
    from app.history.newlines import new_lines
    from app.history.records import scope_paths
    from app.history.surface import failure_signature, history_section

    # the failure's script version: its test's own file and the files it reaches, not every script given
    scope = scope_paths(request.analysis.program, test, (f.path for f in request.analysis.error_frames))
    files = {s.path: s.content for s in request.scripts if scope is None or s.path in scope}
    passes = [h.log for h in request.history if h.same_test and h.verdict == "pass" and h.log]
    section = history_section(
        test,
        request.history,
        answer.history_used,
        files,
        failure_signature(request.analysis),
        window=opts.history_window,
        k=opts.history_k,
        new_lines=new_lines(request.log, passes),
    )
    return section, None


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
