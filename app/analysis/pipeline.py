"""The static phase end to end: scripts + one log -> Analysis (no I/O).

parse, log statements, CFG (``parsed``: the scripts alone, cacheable) -> log parsing -> error
statements -> Algorithm 1 -> estimators.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from app.analysis.coverage import StaticLevels, log_coverage, static_levels
from app.analysis.echo import echo_frames, echo_table, find_echoes
from app.analysis.estimate import EstimateOptions, estimate
from app.analysis.gcpause import gc_paused
from app.analysis.lifecycle import lifecycle
from app.analysis.limits import CostLimits, check_text
from app.analysis.logparse import parse_log, script_frames
from app.analysis.matching import Matcher
from app.analysis.model import Analysis, ParsedLog, Script
from app.analysis.parsed import ParseCache, ParsedScripts, log_patterns, parse_scripts
from app.analysis.selection import is_test_function, select_tests


def analyze(
    scripts: Sequence[Script],
    log: str,
    *,
    log_functions: Sequence[str] = (),
    options: EstimateOptions | None = None,
    prefix_format: str | None = None,
    explain: bool = True,
    variants: Collection[str] | None = None,
    limits: CostLimits | None = None,
    parses: ParseCache | None = None,
    parsed_log: ParsedLog | None = None,
) -> Analysis:
    """Run the whole static phase. Raises ValueError only for invalid options (patterns, format).

    ``variants`` (canonical names) are the traces to estimate, None for all of them; ``explain``
    adds each line's evidence (for `tcfl trace` and the dashboard), which triage does not need.
    With ``limits`` the case's cost is checked first, on the trees the analysis then uses
    (``InputTooCostly``, a ValueError). ``parses`` reuses the script-only half of an analysis of
    the same scripts (``app.analysis.parsed``); ``parsed_log`` is ``log`` already parsed with
    ``prefix_format`` (a caller that read its frames first), so that it is parsed once.
    """
    with gc_paused():
        return _analyze(
            scripts, log, log_functions, options, prefix_format, explain, variants, limits, parses, parsed_log
        )


def _matcher(parse: ParsedScripts) -> Matcher:
    """The static log statements' matcher, built once per parse of the scripts."""
    return Matcher([s for s in parse.log_statements if s.is_static])


def _static_levels(parse: ParsedScripts) -> StaticLevels:
    """The static log statements' levels, once per parse: each failure's coverage and lifecycle read them."""
    return static_levels(parse.log_statements)


def _analyze(
    scripts: Sequence[Script],
    log: str,
    log_functions: Sequence[str],
    options: EstimateOptions | None,
    prefix_format: str | None,
    explain: bool,
    variants: Collection[str] | None,
    limits: CostLimits | None = None,
    parses: ParseCache | None = None,
    parsed_log: ParsedLog | None = None,
) -> Analysis:
    if not scripts:
        raise ValueError("no test scripts given")
    paths = [s.path for s in scripts]
    if len(set(paths)) != len(paths):
        raise ValueError("two scripts share a path; each submitted file needs its own path")
    if limits is not None:
        check_text(scripts, log, limits)
    patterns = log_patterns(log_functions)
    parse = (
        parse_scripts(scripts, patterns, limits) if parses is None else parses.get(scripts, patterns, limits)
    )
    program, index, log_statements = parse.program, parse.index, parse.log_statements
    parsed = parse_log(log, prefix_format=prefix_format) if parsed_log is None else parsed_log
    warnings: list[str] = [*program.warnings, *parsed.warnings]

    frames, frame_warnings = script_frames(parsed.frames, {f.path: f.lines for f in program.files})
    warnings.extend(frame_warnings)
    echoes = find_echoes(parse.derived(echo_table), index, log)
    if not frames:
        frames = echo_frames(echoes, program)
        if frames:
            where = frames[-1]
            warnings.append(
                f"no traceback frame names a script: the log repeats {where.path}:{where.line} as the failing"
                f" line (log line {where.log_line}), taken as where the failure surfaced"
            )
    error_sids: list[int] = []
    for frame in frames:
        st = index.get((frame.path, frame.line))
        if st is not None and st.sid not in error_sids:
            error_sids.append(st.sid)
    if parsed.frames and not frames:
        warnings.append("the log's traceback has no frame in the submitted scripts")
    match = parse.kept(_matcher).match(parsed.messages, error_sids)

    graphs, blocks, sites = parse.graphs, parse.blocks, parse.sites
    levels = parse.kept(_static_levels)
    coverage = log_coverage(log_statements, match, parsed, levels)
    selection = select_tests(
        program,
        log,
        frames,
        (program.statements[s].function for s in error_sids),
        match.exe,
        sites,
    )
    if options is None or options.log_coverage:
        warnings.extend(coverage.reasons)
    life = lifecycle(
        program,
        index,
        match,
        frames,
        (sid for sid, _ in levels),
        sites,
        (f.fid for f in program.functions if f.kind == "function" and is_test_function(f.name)),
    )
    estimation = estimate(
        program,
        match,
        blocks,
        frames,
        options,
        explain=explain,
        graphs=graphs,
        silent=coverage.silent,
        other_tests=selection.others,
        variants=variants,
        sites=sites,
        life=life,
        index=index,
    )
    warnings.extend(estimation.warnings)
    return Analysis(
        program=program,
        log=parsed,
        log_statements=log_statements,
        error_statements=tuple(error_sids),
        error_frames=tuple(frames),
        match=match,
        blocks=blocks,
        traces=estimation.traces,
        warnings=tuple(dict.fromkeys(warnings)),
        trees=parse.trees,
        line_index=index,
        parsed=parse,
        echoes=echoes,
    )
